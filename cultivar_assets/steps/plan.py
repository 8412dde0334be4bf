"""Planning the pipeline's steps from the asset graph: which assets each step materialises,
which steps' outputs it reads, what else its outputs depend on (its *inputs*) and which files it
writes.

A step is one Dagster run of :func:`cultivar_assets.runner.pipeline.run_pipeline`, and the same
set of assets (one partition) materialised by a Dagster run launched from the UI, a sensor or a
schedule (:mod:`cultivar_assets.steps.launched_runs`). Nothing here lists the steps: the Dagster
layer derives a :class:`StepGraph` from the asset graph (its assets' dependencies and
partitions) and from what each asset declares next to its definition
(:mod:`cultivar_assets.steps.declarations`), and hands it down as plain data. The steps in order,
their assets and what they read: ``docs/pipeline.md`` (:func:`step_table`, held to the graph by
a test).

A step's inputs (``PlannedStep.inputs``, JSON) are the union of its assets' declarations,
grouped so that a changed one can be named (:mod:`cultivar_assets.steps.changes`): ``code`` and
``environment``, the package's code and the installed distributions
(:mod:`cultivar_assets.steps.digests`); ``settings``, the declared settings sections by their
place in the settings file (``metrics``, ``construction.localisation``, ...; the database's path
always); ``files``, the digests of the declared files, each under its label; ``entry``, a model's
registry entry; ``other``, what else (the output folders the settings resolve to, the models
registered in the Dagster instance, ...). Its upstream steps are those holding the assets its
assets depend on, when the settings' pipeline has them (the same partition of a step partitioned
alike; every key of another), or every other step (``Step.reads_every_other_step``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cultivar_assets.config_files import ConfigFileError
from cultivar_assets.models import ModelRegistryError
from cultivar_assets.registry import UnknownEntryError
from cultivar_assets.settings import Settings
from cultivar_assets.specs import ModelSpec
from cultivar_assets.steps.declarations import StepContext, StepNode, settings_value
from cultivar_assets.steps.digests import (
    code_digest,
    content_digest,
    environment_digest,
    listing_digest,
)

# Every settings field that names a file or folder, and what the steps make of it (a test holds
# this list to the settings models): "input": its content is among the inputs of the steps that
# read it; "output": among the files of the step that writes it; "cache": not an input (see the
# module docstring; for the web cache, whether it holds DuckDB-Wasm is); "database": the file
# that holds the outputs and the step records.
PATH_FIELDS = {
    "database": "database",
    "models_file": "input",
    "data.cultivar_path": "input",
    "data.flores_path": "input",
    "data.hub_cache_dir": "cache",
    "metrics.spm_model_path": "input",
    "engine.cache_dir": "cache",
    "site.output_dir": "output",
    "site.charts_dir": "output",
    "site.web_cache_dir": "cache",
    "publish.folder": "output",
    "construction.source.path": "input",
    "construction.source.hub_cache_dir": "cache",
    "construction.selection.corrections_file": "input",
    "construction.selection.selection_file": "input",
    "construction.selection.review_dir": "output",
    "construction.localisation.prompts_file": "input",
    "construction.localisation.cache_dir": "cache",
    "construction.annotation.folder": "input",
    "construction.annotation.tools_dir": "output",
    "construction.dataset.folder": "output",
    "error_analysis.annotations_dir": "input",
    "error_analysis.tool_dir": "output",
}


class StepPlanError(ValueError):
    """No step of the settings' pipeline has this key (or asset)."""


@dataclass(frozen=True)
class PlannedStep:
    """One step, as a run is about to run it (its inputs read now)."""

    key: str  # selection, build:<locale>, dataset, test_sets, model:<id>, results
    assets: tuple[str, ...]
    partition: str | None
    upstream: tuple[str, ...]  # keys of the steps whose outputs it reads
    inputs: dict[str, Any]  # what else its outputs depend on (JSON, grouped: module docstring)
    outputs: tuple[Path, ...] = ()  # the files and folders it writes besides the database
    always_runs: str | None = None  # why it is never reused (None: it can be)

    def outputs_digest(self) -> str:
        return listing_digest(self.outputs)

    def fingerprint(self, upstream_tokens: dict[str, str | None]) -> str:
        """sha256 of the step's identity, its inputs and the tokens of the recorded runs of the
        steps it reads (a step that ran again gives its readers other fingerprints)."""
        payload = {"step": self.key, "assets": list(self.assets), "partition": self.partition,
                   "inputs": self.inputs, "upstream": upstream_tokens}
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_CACHE_FIELDS = {path.rsplit(".", 1)[-1] for path, kind in PATH_FIELDS.items() if kind == "cache"}


def _dump(model) -> dict[str, Any]:
    """A settings section as JSON, without the folders of caches (not inputs)."""
    return model.model_dump(mode="json", exclude=_CACHE_FIELDS & set(type(model).model_fields))


def _section(value: Any) -> Any:
    """A settings section (or value) as the inputs hold it."""
    if isinstance(value, BaseModel):
        return _dump(value)
    return list(value) if isinstance(value, list | tuple) else value


@dataclass(frozen=True)
class StepGraph:
    """The pipeline's steps in order (each after the steps it reads), as derived from the asset
    graph and its assets' declarations (:func:`cultivar_assets.assets.graph.step_graph`)."""

    nodes: tuple[StepNode, ...]

    def node(self, name: str) -> StepNode:
        for node in self.nodes:
            if node.step.name == name:
                return node
        raise StepPlanError(f"the pipeline has no step {name}")

    def step_of(self, asset: str) -> StepNode | None:
        return next((node for node in self.nodes if asset in node.assets), None)

    def pipeline(self, settings: Settings) -> list[tuple[StepNode, list[str]]]:
        """The steps of the settings' pipeline, in order, each with its keys (module
        docstring); steps with no keys for these settings are left out."""
        found = [(node, node.step.keys(settings)) for node in self.nodes]
        return [(node, keys) for node, keys in found if keys]


def step_key(graph: StepGraph, asset: str, partition: str | None) -> str:
    """The key of the step that materialises ``asset`` (of ``partition``)."""
    node = graph.step_of(asset)
    if node is None:
        raise StepPlanError(f"the asset {asset} belongs to no step")
    if node.step.partitions is not None:
        if not partition:
            raise StepPlanError(f"the asset {asset} belongs to a step only with its partition")
        return f"{node.step.name}:{partition}"
    return node.step.name


def _upstream(graph: StepGraph, node: StepNode, partition: str | None,
              pipeline: list[tuple[StepNode, list[str]]]) -> tuple[str, ...]:
    """The keys of the steps ``node`` reads in the settings' pipeline: of the steps its assets
    depend on (the same partition of a step partitioned alike, every key of another), or of
    every other step."""
    if node.step.reads_every_other_step:
        return tuple(key for other, keys in pipeline if other is not node for key in keys)
    keys: list[str] = []
    for other, other_keys in pipeline:
        if other.step.name not in node.upstream:
            continue
        same = (partition is not None and other.step.partitions is node.step.partitions)
        keys.extend([f"{other.step.name}:{partition}"] if same else other_keys)
    return tuple(keys)


def step_inputs(node: StepNode, context: StepContext
                ) -> tuple[dict[str, Any], tuple[Path, ...], str | None]:
    """A step's inputs (grouped: module docstring), output files and why it always runs, from
    its assets' declarations."""
    settings = context.settings
    sections: dict[str, Any] = {"database": str(settings.database_path)}
    files: dict[str, Any] = {}
    other: dict[str, Any] = {}
    outputs: list[Path] = []
    entry, always = None, None
    for declared in node.declarations:
        for section in declared.settings:
            sections[section] = _section(settings_value(settings, section))
        for label, source in declared.files.items():
            files[label] = (content_digest(settings_value(settings, source))
                            if isinstance(source, str) else source(context))
        for group in declared.file_groups:
            files.update(group(context))
        for label, fact in declared.other.items():
            other[label] = fact(context)
        if declared.entry:
            entry = _dump(context.model)
        outputs.extend(output(context) for output in declared.outputs)
        if always is None and declared.always_runs is not None:
            always = declared.always_runs(context)
    if node.step.lists_outputs_as:
        other[node.step.lists_outputs_as] = [str(path) for path in outputs]
    inputs = {"code": code_digest(), "environment": environment_digest(),
              "settings": sections, "files": files, "other": other}
    if entry is not None:
        inputs["entry"] = entry
    return inputs, tuple(outputs), always


def planned_step(graph: StepGraph, settings: Settings, key: str,
                 registered_models: list[str] | tuple[str, ...] = (),
                 specs: Mapping[str, ModelSpec] | None = None) -> PlannedStep:
    """The step ``key`` of the settings' pipeline (:meth:`StepGraph.pipeline`), its inputs read now
    (``specs``: registry entries to plan with instead of the models file's);
    :class:`StepPlanError` when the pipeline has no such step (a locale that is not configured,
    a model that is not selected) or cannot be planned (the model registry cannot be read, or
    lacks a selected model)."""
    try:
        pipeline = graph.pipeline(settings)
    except (ModelRegistryError, UnknownEntryError, ConfigFileError) as error:
        raise StepPlanError(f"the settings' pipeline cannot be planned: {error}") from error
    node = next((node for node, keys in pipeline if key in keys), None)
    if node is None:
        raise StepPlanError(f"the step {key} is not a step of the pipeline these settings run")
    partition = key.split(":", 1)[1] if node.step.partitions is not None else None
    context = StepContext(settings, partition, tuple(registered_models), specs)
    inputs, outputs, always = step_inputs(node, context)
    return PlannedStep(key, node.assets, partition, _upstream(graph, node, partition, pipeline),
                       inputs, outputs, always)


def step_table(graph: StepGraph) -> str:
    """The steps as a Markdown table: key, assets, the steps read, and the inputs declared
    besides the code, the environment and the database (``docs/pipeline.md`` holds it; a test
    compares)."""
    names = {node.step.name: (f"`{node.step.name}:<{node.step.kind or 'partition'}>`"
                              if node.step.partitions else f"`{node.step.name}`")
             for node in graph.nodes}
    rows = ["| step | assets | reads the outputs of | inputs besides code, environment, database |",
            "|---|---|---|---|"]
    for node in graph.nodes:
        reads = ("every other step" if node.step.reads_every_other_step else
                 ", ".join(names[name] for name in node.upstream) or "–")
        rows.append(f"| {names[node.step.name]} | {', '.join(f'`{a}`' for a in node.assets)} "
                    f"| {reads} | {'; '.join(_declared(node))} |")
    return "\n".join(rows) + "\n"


def _declared(node: StepNode) -> list[str]:
    """What a step's assets declare, in words (settings sections, files, other, entry)."""
    sections = list(dict.fromkeys(s for d in node.declarations for s in d.settings))
    files = list(dict.fromkeys([*(label for d in node.declarations for label in d.files),
                                *(_said(group) for d in node.declarations
                                  for group in d.file_groups)]))
    other = list(dict.fromkeys(label for d in node.declarations for label in d.other))
    if node.step.lists_outputs_as:
        other.append(node.step.lists_outputs_as)
    said = [f"settings {', '.join(f'`{s}`' for s in sections)}"] if sections else []
    said += [f"files: {', '.join(files)}"] if files else []
    said += ["the model's registry entry"] if any(d.entry for d in node.declarations) else []
    said += [f"other: {', '.join(other)}"] if other else []
    said += ["always runs when " + ", ".join(_said(d.always_runs) for d in node.declarations
                                             if d.always_runs)] if any(
        d.always_runs for d in node.declarations) else []
    return said


def _said(function: Any) -> str:
    """A declared function in words: its docstring's first line, else its name."""
    doc = (function.__doc__ or "").strip().splitlines()
    return doc[0].rstrip(".") if doc else function.__name__.replace("_", " ")
