"""The runner's steps: which assets each one materialises, which steps' outputs it reads, what
else its outputs depend on (its *inputs*) and which files it writes.

A step is one Dagster run of :func:`cultivar_assets.runner.pipeline.run_pipeline`:

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

Every step's inputs hold the package's code and the installed distributions
(:mod:`cultivar_assets.runner.digests`), the database's path and the settings sections that its
assets' resources are made from (with the output folders they resolve to). Besides these:

- ``selection``: the corrections and manual-selection files, the source benchmark's files (a
  local FLORES release or table; the demo's are part of the package; FLORES+ on the Hub is
  read at a required revision);
- ``build:<locale>``: the annotation folder's files, the prompts file, the localiser's recorded
  answers (engine ``replay``) or local weights folder;
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

from cultivar_assets.construction.selection_page import default_review_dir
from cultivar_assets.metrics.sacrebleu_metrics import SPM_TOKENIZERS, spm_model_location
from cultivar_assets.runner.digests import (
    code_digest,
    content_digest,
    environment_digest,
    listing_digest,
)
from cultivar_assets.settings import Settings
from cultivar_assets.site.query_engine import cached_query_engine, npm_executable
from cultivar_assets.specs import ModelSpec

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


@dataclass(frozen=True)
class PlannedStep:
    """One step, as the runner is about to run it (its inputs read now)."""

    key: str  # selection, build:<locale>, dataset, test_sets, model:<id>, results
    assets: tuple[str, ...]
    partition: str | None
    upstream: tuple[str, ...]  # keys of the steps whose outputs it reads
    inputs: dict[str, Any]  # what else its outputs depend on (JSON)
    outputs: tuple[Path, ...] = ()  # the files and folders it writes besides the database
    always_runs: str | None = None  # why it is never reused (None: it can be)

    def outputs_digest(self) -> str:
        return listing_digest(self.outputs)

    def fingerprint(self, upstream_tokens: dict[str, str]) -> str:
        """sha256 of the step's identity, its inputs and the tokens of the recorded runs of the
        steps it reads (a step that ran again gives its readers other fingerprints)."""
        payload = {"step": self.key, "assets": list(self.assets), "partition": self.partition,
                   "inputs": self.inputs, "upstream": upstream_tokens}
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _common(settings: Settings) -> dict[str, Any]:
    return {"code": code_digest(), "environment": environment_digest(),
            "database": str(settings.database_path)}


_CACHE_FIELDS = {path.rsplit(".", 1)[-1] for path, kind in PATH_FIELDS.items() if kind == "cache"}


def _dump(model) -> dict[str, Any]:
    """A settings section as JSON, without the folders of caches (not inputs)."""
    return model.model_dump(mode="json", exclude=_CACHE_FIELDS & set(type(model).model_fields))


def _engine_files(engine: str, location: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """What an engine reads from disk besides caches: recorded answers (``replay``), a local
    weights folder (listed, not read: as the translation cache keys it, by its path)."""
    files: dict[str, Any] = {}
    if engine == "replay" and options.get("answers"):
        from cultivar_assets.engines.replay import recording_path

        files["answers"] = content_digest(recording_path(options["answers"]))
    if location and Path(location).expanduser().is_dir():
        files["weights_listing"] = listing_digest([location])
    return files


def selection_step(settings: Settings) -> PlannedStep:
    source, selection = settings.construction.source, settings.construction.selection
    review = Path(selection.review_dir) if selection.review_dir else default_review_dir()
    inputs = {**_common(settings), "source": _dump(source), "selection": _dump(selection),
              "source_files": content_digest(source.path) if source.kind != "demo" else None,
              "corrections_file": content_digest(selection.corrections_file),
              "selection_file": content_digest(selection.selection_file),
              "review_dir": str(review)}
    return PlannedStep("selection", SELECTION_ASSETS, None, (), inputs, (review,))


def build_step(settings: Settings, locale: str) -> PlannedStep:
    localisation = settings.construction.localisation
    annotation = settings.construction.annotation
    tools = annotation.tools_path() / locale
    inputs = {**_common(settings), "localisation": _dump(localisation),
              "annotation": _dump(annotation),
              "annotation_folder": str(annotation.folder_path()),
              "annotation_files": content_digest(annotation.folder_path()),
              "prompts_file": content_digest(localisation.prompts_file),
              "localiser_files": _engine_files(localisation.engine, localisation.model,
                                               localisation.engine_options),
              "tools": str(tools)}
    return PlannedStep(f"build:{locale}", BUILD_ASSETS, locale, ("selection",), inputs, (tools,))


def dataset_step(settings: Settings, locales: list[str]) -> PlannedStep:
    folder = settings.construction.dataset.folder_path()
    inputs = {**_common(settings), "localisation": _dump(settings.construction.localisation),
              "dataset": _dump(settings.construction.dataset), "folder": str(folder)}
    return PlannedStep("dataset", DATASET_ASSETS, None,
                       tuple(f"build:{locale}" for locale in locales), inputs, (folder,))


def test_sets_step(settings: Settings) -> PlannedStep:
    data = settings.data
    files = {"flores": content_digest(data.flores_path) if data.flores == "local" else None}
    if data.kind in ("local", "built"):
        files["cultivar"] = content_digest(data.built_folder() if data.kind == "built"
                                           else data.cultivar_path)
    unpinned = [repo for repo, uses, revision in (
        (data.cultivar_repo, data.kind == "hub", data.cultivar_revision),
        (data.flores_repo, data.flores == "hub", data.flores_revision)) if uses and not revision]
    always = (f"it reads {', '.join(unpinned)} from the Hub at no pinned revision (its main "
              "branch may have changed)") if unpinned else None
    inputs = {**_common(settings), "data": _dump(data), "files": files}
    upstream = ("dataset",) if data.kind == "built" else ()
    return PlannedStep("test_sets", TEST_SET_ASSETS, None, upstream, inputs, always_runs=always)


def model_step(settings: Settings, spec: ModelSpec) -> PlannedStep:
    metrics = settings.metrics
    spm = (content_digest(spm_model_location(metrics)) if metrics.bleu_tokenize in SPM_TOKENIZERS
           else None)
    location = spec.hf_id if spec.weights == "hub" else None
    inputs = {**_common(settings), "model": _dump(spec), "engine": _dump(settings.engine),
              "models_file": settings.models_file,
              "engine_files": _engine_files(spec.engine, location, spec.engine_options),
              "metrics": _dump(metrics), "spm_model": spm}
    return PlannedStep(f"model:{spec.id}", MODEL_ASSETS, spec.id, ("test_sets",), inputs)


def results_step(settings: Settings, upstream: list[str],
                 registered_models: list[str]) -> PlannedStep:
    site, publish, errors = settings.site, settings.publish, settings.error_analysis
    cache = site.web_cache_path()
    query_page = site.query_page != "off" and (
        cached_query_engine(cache) is not None
        or (site.query_page != "cached" and npm_executable() is not None))
    outputs = (site.site_path(), site.charts_path(), errors.tool_path(), publish.folder_path)
    inputs = {**_common(settings), "metrics": _dump(settings.metrics),
              "engine": _dump(settings.engine), "models": list(settings.models),
              "models_file": content_digest(settings.models_file),
              "registered_models": sorted(registered_models),
              "site": _dump(site), "query_page_included": query_page,
              "publish": _dump(publish), "error_analysis": _dump(errors),
              "error_files": content_digest(errors.annotations_dir),
              "outputs": [str(path) for path in outputs]}
    pushes = publish.repo_id is not None and publish.token() is not None
    always = f"it pushes the dataset to {publish.repo_id} on the Hub" if pushes else None
    return PlannedStep("results", RESULTS, None, tuple(upstream), inputs, outputs, always)
