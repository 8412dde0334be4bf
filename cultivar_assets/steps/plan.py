"""The pipeline's steps: which assets each one materialises, which steps' outputs it reads, what
else its outputs depend on (its *inputs*) and which files it writes.

A step is one Dagster run of :func:`cultivar_assets.runner.pipeline.run_pipeline`, and the same
set of assets (one partition) materialised by a Dagster run launched from the UI, a sensor or a
schedule (:mod:`cultivar_assets.steps.launched_runs`):

==================  ===============================================  ==========================
step                assets (partition)                               reads the outputs of
==================  ===============================================  ==========================
``selection``       ``selected_instances``                           -
``build:<locale>``  ``localised_drafts``, ``postedit_tools``,         ``selection``
                    ``annotations`` (the locale)
``dataset``         ``cultivar_dataset``                             every ``build:<locale>``
``test_sets``       ``test_sets``                                    ``dataset`` (data kind
                                                                     ``built``)
``model:<id>``      ``translations``, ``scores`` (the model)         ``test_sets``
``results``         ``leaderboard`` ... ``site`` (:data:`RESULTS`)   every other step
==================  ===============================================  ==========================

A step's inputs (``PlannedStep.inputs``, JSON) are grouped so that a changed one can be named
(:mod:`cultivar_assets.steps.changes`): ``code`` and ``environment``, the package's code and the
installed distributions (:mod:`cultivar_assets.steps.digests`); ``settings``, the settings
sections that its assets' resources are made from, by their place in the settings file
(``metrics``, ``construction.localisation``, ...; the database's path among them); ``files``,
the digests of the files these name, each under a label that says which file; ``entry``, a
model's registry entry; ``other``, what else (the output folders the settings resolve to, the
models registered in the Dagster instance, ...). Besides the code, environment and database:

- ``selection``: the corrections and manual-selection files, the source benchmark's files (a
  local FLORES release or table; the demo's are part of the package; FLORES+ on the Hub is
  read at a required revision);
- ``build:<locale>``: the locale's own returned annotation files (``<locale>-*.json`` in the
  annotation folder, each by name: another locale's file is not an input), the prompts file,
  the localiser's recorded answers (engine ``replay``) or local weights folder;
- ``dataset``: the localisation and dataset settings;
- ``test_sets``: the data files (a local or built dataset folder, a local FLORES release); data
  from the Hub at no pinned revision is read again every time (the step always runs);
- ``model:<id>``: the model's registry entry, its local weights folder or recorded answers, the
  engine and metric settings, the SentencePiece model file of spBLEU;
- ``results``: the model registry file, the models registered in the Dagster instance, the
  error-annotation folder's files, whether the site gets its Query page (DuckDB-Wasm cached, or
  npm there to fetch it); a configured push to the Hub always runs (the Hub's state is not
  known here).

Caches (translations, drafts, converted weights) are not inputs: a step's outputs are what it
computes from its inputs whether the cache holds them or not.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cultivar_assets.config_files import ConfigFileError
from cultivar_assets.construction.annotation.file import locale_annotation_files
from cultivar_assets.construction.selection.page import default_review_dir
from cultivar_assets.metrics.sacrebleu_metrics import SPM_TOKENIZERS, spm_model_location
from cultivar_assets.models import ModelRegistryError, load_models
from cultivar_assets.registry import UnknownEntryError
from cultivar_assets.settings import Settings
from cultivar_assets.site.query_engine import cached_query_engine, npm_executable
from cultivar_assets.specs import ModelSpec
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
SELECTION_ASSETS = ("selected_instances",)
BUILD_ASSETS = ("localised_drafts", "postedit_tools", "annotations")
DATASET_ASSETS = ("cultivar_dataset",)
TEST_SET_ASSETS = ("test_sets",)
MODEL_ASSETS = ("translations", "scores")
RESULTS = ("leaderboard", "reported_results", "error_annotation_tool", "error_analysis",
           "charts", "hf_dataset_folder", "hf_dataset_push", "site")
# the step of each asset: its key, or the prefix of its key before the partition
STEP_OF_ASSET = {
    **dict.fromkeys(SELECTION_ASSETS, "selection"), **dict.fromkeys(BUILD_ASSETS, "build:"),
    **dict.fromkeys(DATASET_ASSETS, "dataset"), **dict.fromkeys(TEST_SET_ASSETS, "test_sets"),
    **dict.fromkeys(MODEL_ASSETS, "model:"), **dict.fromkeys(RESULTS, "results"),
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


def _inputs(settings: Settings, sections: dict[str, Any], files: dict[str, Any],
            other: dict[str, Any], entry: dict[str, Any] | None = None) -> dict[str, Any]:
    """A step's inputs, grouped (module docstring)."""
    inputs = {"code": code_digest(), "environment": environment_digest(),
              "settings": {"database": str(settings.database_path), **sections},
              "files": files, "other": other}
    if entry is not None:
        inputs["entry"] = entry
    return inputs


_CACHE_FIELDS = {path.rsplit(".", 1)[-1] for path, kind in PATH_FIELDS.items() if kind == "cache"}


def _dump(model) -> dict[str, Any]:
    """A settings section as JSON, without the folders of caches (not inputs)."""
    return model.model_dump(mode="json", exclude=_CACHE_FIELDS & set(type(model).model_fields))


def _engine_files(engine: str, location: str | None, options: dict[str, Any],
                  whose: str) -> dict[str, Any]:
    """What an engine reads from disk besides caches: recorded answers (``replay``), a local
    weights folder (listed, not read: as the translation cache keys it, by its path); labelled
    with ``whose`` engine it is."""
    files: dict[str, Any] = {}
    if engine == "replay" and options.get("answers"):
        from cultivar_assets.engines.replay import recording_path

        files[f"{whose}'s recorded answers"] = content_digest(recording_path(options["answers"]))
    if location and Path(location).expanduser().is_dir():
        files[f"{whose}'s weights folder (listing)"] = listing_digest([location])
    return files


def selection_step(settings: Settings) -> PlannedStep:
    source, selection = settings.construction.source, settings.construction.selection
    review = Path(selection.review_dir) if selection.review_dir else default_review_dir()
    files = {"source benchmark files": content_digest(source.path)
             if source.kind != "demo" else None,
             "corrections file": content_digest(selection.corrections_file),
             "selection file": content_digest(selection.selection_file)}
    inputs = _inputs(settings, {"construction.source": _dump(source),
                                "construction.selection": _dump(selection)},
                     files, {"review folder": str(review)})
    return PlannedStep("selection", SELECTION_ASSETS, None, (), inputs, (review,))


def annotation_files(folder: Path, locale: str) -> dict[str, str]:
    """The digests of ``locale``'s own returned files in ``folder``, labelled ``annotation file
    <name>``; ``annotation files of <locale>: none`` when it has none (yet)."""
    found = locale_annotation_files(folder, locale)
    if not found:
        return {f"annotation files of {locale}": "none"}
    return {f"annotation file {path.name}": content_digest(path) for path in found}


def build_step(settings: Settings, locale: str) -> PlannedStep:
    localisation = settings.construction.localisation
    annotation = settings.construction.annotation
    tools = annotation.tools_path() / locale
    files = {**annotation_files(annotation.folder_path(), locale),
             "prompts file": content_digest(localisation.prompts_file),
             **_engine_files(localisation.engine, localisation.model,
                             localisation.engine_options, "the localiser")}
    inputs = _inputs(settings, {"construction.localisation": _dump(localisation),
                                "construction.annotation": _dump(annotation)}, files,
                     {"annotation folder": str(annotation.folder_path()),
                      "tool pages folder": str(tools)})
    return PlannedStep(f"build:{locale}", BUILD_ASSETS, locale, ("selection",), inputs, (tools,))


def dataset_step(settings: Settings, locales: list[str]) -> PlannedStep:
    folder = settings.construction.dataset.folder_path()
    inputs = _inputs(settings, {"construction.localisation": _dump(
        settings.construction.localisation), "construction.dataset": _dump(
        settings.construction.dataset)}, {}, {"dataset folder": str(folder)})
    return PlannedStep("dataset", DATASET_ASSETS, None,
                       tuple(f"build:{locale}" for locale in locales), inputs, (folder,))


def test_sets_step(settings: Settings) -> PlannedStep:
    data = settings.data
    files = {"FLORES files": content_digest(data.flores_path) if data.flores == "local"
             else None}
    if data.kind in ("local", "built"):
        files["Cultivar data files"] = content_digest(
            data.built_folder() if data.kind == "built" else data.cultivar_path)
    unpinned = [repo for repo, uses, revision in (
        (data.cultivar_repo, data.kind == "hub", data.cultivar_revision),
        (data.flores_repo, data.flores == "hub", data.flores_revision)) if uses and not revision]
    always = (f"it reads {', '.join(unpinned)} from the Hub at no pinned revision (its main "
              "branch may have changed)") if unpinned else None
    inputs = _inputs(settings, {"data": _dump(data)}, files, {})
    upstream = ("dataset",) if data.kind == "built" else ()
    return PlannedStep("test_sets", TEST_SET_ASSETS, None, upstream, inputs, always_runs=always)


def model_step(settings: Settings, spec: ModelSpec) -> PlannedStep:
    metrics = settings.metrics
    location = spec.hf_id if spec.weights == "hub" else None
    files = {"SentencePiece model of spBLEU": content_digest(spm_model_location(metrics))
             if metrics.bleu_tokenize in SPM_TOKENIZERS else None,
             **_engine_files(spec.engine, location, spec.engine_options, "the model")}
    inputs = _inputs(settings, {"engine": _dump(settings.engine), "models_file":
                                settings.models_file, "metrics": _dump(metrics)},
                     files, {}, entry=_dump(spec))
    return PlannedStep(f"model:{spec.id}", MODEL_ASSETS, spec.id, ("test_sets",), inputs)


def results_step(settings: Settings, upstream: list[str],
                 registered_models: list[str]) -> PlannedStep:
    site, publish, errors = settings.site, settings.publish, settings.error_analysis
    cache = site.web_cache_path()
    query_page = site.query_page != "off" and (
        cached_query_engine(cache) is not None
        or (site.query_page != "cached" and npm_executable() is not None))
    outputs = (site.site_path(), site.charts_path(), errors.tool_path(), publish.folder_path)
    files = {"model registry file": content_digest(settings.models_file),
             "error-annotation files": content_digest(errors.annotations_dir)}
    inputs = _inputs(settings, {
        "metrics": _dump(settings.metrics), "engine": _dump(settings.engine),
        "models": list(settings.models), "site": _dump(site), "publish": _dump(publish),
        "error_analysis": _dump(errors)}, files, {
        "models registered in the Dagster instance": sorted(registered_models),
        "whether the site gets its Query page": query_page,
        "output folders": [str(path) for path in outputs]})
    pushes = publish.repo_id is not None and publish.token() is not None
    always = f"it pushes the dataset to {publish.repo_id} on the Hub" if pushes else None
    return PlannedStep("results", RESULTS, None, tuple(upstream), inputs, outputs, always)


# --- the steps of the settings' pipeline, by key (shared by the runner and Dagster runs) -------

def build_locales(settings: Settings) -> list[str]:
    """The locales with a build step: the configured ones, when the data kind is ``built``."""
    return settings.construction.localisation.locale_keys() if (
        settings.data.kind == "built") else []


def selected_models(settings: Settings) -> list[ModelSpec]:
    from cultivar_assets.models import select_models

    return select_models(load_models(settings.models_file), settings.models)


def pipeline_keys(settings: Settings) -> list[str]:
    """The keys of the steps that :func:`cultivar_assets.runner.pipeline.run_pipeline` runs for
    ``settings``, in order: what the ``results`` step reads, and then ``results``."""
    locales = build_locales(settings)
    keys = ["selection", *(f"build:{locale}" for locale in locales)]
    if locales:
        keys.append("dataset")
    keys.append("test_sets")
    keys.extend(f"model:{spec.id}" for spec in selected_models(settings))
    return [*keys, "results"]


def step_key(asset: str, partition: str | None) -> str:
    """The key of the step that materialises ``asset`` (of ``partition``)."""
    prefix = STEP_OF_ASSET.get(asset)
    if prefix is None:
        raise StepPlanError(f"the asset {asset} belongs to no step")
    if prefix.endswith(":"):
        if not partition:
            raise StepPlanError(f"the asset {asset} belongs to a step only with its partition")
        return prefix + partition
    return prefix


def planned_step(settings: Settings, key: str, registered_models: list[str]) -> PlannedStep:
    """The step ``key`` of the settings' pipeline (:func:`pipeline_keys`), its inputs read now;
    :class:`StepPlanError` when the pipeline has no such step (a locale that is not configured,
    a model that is not selected) or cannot be planned (the model registry cannot be read, or
    lacks a selected model)."""
    try:
        keys = pipeline_keys(settings)
    except (ModelRegistryError, UnknownEntryError, ConfigFileError) as error:
        raise StepPlanError(f"the settings' pipeline cannot be planned: {error}") from error
    if key not in keys:
        raise StepPlanError(f"the step {key} is not a step of the pipeline these settings run")
    if key == "selection":
        return selection_step(settings)
    if key.startswith("build:"):
        return build_step(settings, key.removeprefix("build:"))
    if key == "dataset":
        return dataset_step(settings, build_locales(settings))
    if key == "test_sets":
        return test_sets_step(settings)
    if key.startswith("model:"):
        return model_step(settings, load_models(settings.models_file).get(
            key.removeprefix("model:")))
    return results_step(settings, keys[:-1], registered_models)
