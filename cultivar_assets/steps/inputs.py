"""The project's steps and the functions its assets' declarations name
(:mod:`cultivar_assets.steps.declarations`): which files a step reads, the folders it writes,
what else its outputs depend on. Which asset declares which is said next to each asset
(``cultivar_assets/assets/*_assets.py``); what the steps are, in order, is in
``docs/pipeline.md``.

Caches (translations, drafts, converted weights) are not inputs: a step's outputs are what it
computes from its inputs whether the cache holds them or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cultivar_assets.construction.annotation.file import locale_annotation_files
from cultivar_assets.construction.selection.page import default_review_dir
from cultivar_assets.error_analysis.file import find_error_files
from cultivar_assets.metrics.sacrebleu_metrics import SPM_TOKENIZERS, spm_model_location
from cultivar_assets.settings import Settings
from cultivar_assets.site.query_engine import cached_query_engine, npm_executable
from cultivar_assets.steps.declarations import Step, StepContext
from cultivar_assets.steps.digests import MISSING, content_digest, files_digest, listing_digest

# --- which partitions the settings' pipeline runs ---------------------------------------------

def build_locales(settings: Settings) -> list[str]:
    """The locales with a build step: the configured ones, when the data kind is ``built``."""
    return settings.construction.localisation.locale_keys() if (
        settings.data.kind == "built") else []


def selected_model_ids(settings: Settings) -> list[str]:
    """The ids of the models the settings select, in their order."""
    from cultivar_assets.models import load_models, select_models

    return [spec.id for spec in select_models(load_models(settings.models_file), settings.models)]


def builds_data(settings: Settings) -> bool:
    return settings.data.kind == "built"


# --- the steps ----------------------------------------------------------------------------------

def _localiser_label(settings: Settings) -> str:
    from cultivar_assets.construction.localisation.drafts import configured_localiser

    config = settings.construction.localisation
    return f"{configured_localiser(config)}, prompt {config.prompt}"


SELECTION = Step(
    "selection", timing="selection",
    title=lambda s, _: (f"selection of named-entity-rich instances ({s.construction.source.name}"
                        f" source benchmark, spaCy NER) -> {s.database_path}"))
BUILD = Step(
    "build", partitions=build_locales, kind="locale", timing="localisation, tools and ingest",
    title=lambda s, locales: (
        f"for {len(locales)} locale(s): LLM drafts ({_localiser_label(s)}), the post-editing "
        f"tool, the returned annotation file ({s.construction.annotation.folder_path()})"))
DATASET = Step("dataset", when=builds_data, timing="dataset",
               title=lambda s, _: f"the dataset -> {s.construction.dataset.folder_path()}")
TEST_SETS = Step("test_sets", timing="test sets",
                 title=lambda s, _: f"test sets ({s.data.kind} data) -> {s.database_path}")
MODEL = Step("model", partitions=selected_model_ids, kind="model", timing="model {partition}",
             title=lambda s, models: f"{len(models)} model(s), one run each")
RESULTS = Step(
    "results", reads_every_other_step=True, timing="results, dataset folder and site",
    lists_outputs_as="output folders",
    title=lambda s, _: ("leaderboard, per-locale ∆, rank agreement, reported figures, the error "
                        "analysis, charts, the dataset folder (push: dry run unless configured) "
                        "and the site"))


# --- files ------------------------------------------------------------------------------------

def engine_files(engine: str, location: str | None, options: dict[str, Any],
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


def annotation_files(folder: Path, locale: str) -> dict[str, str]:
    """The digests of ``locale``'s own returned files in ``folder``, labelled ``annotation file
    <name>``; ``annotation files of <locale>: none`` when it has none (yet)."""
    found = locale_annotation_files(folder, locale)
    if not found:
        return {f"annotation files of {locale}": "none"}
    return {f"annotation file {path.name}": content_digest(path) for path in found}


def error_annotation_files(ctx: StepContext) -> str | None:
    """the returned error-annotation files (``*.errors.json``) of ``annotations_dir``: one digest
    over their names and bytes (no other file of the folder is read); ``missing`` when the
    folder is not there, None when none is configured"""
    folder = ctx.settings.error_analysis.annotations_dir
    if folder is None:
        return None
    path = Path(folder).expanduser()
    if not path.is_dir():
        return MISSING
    return files_digest(path, find_error_files(path))


def source_benchmark_files(ctx: StepContext) -> str | None:
    source = ctx.settings.construction.source
    return content_digest(source.path) if source.kind != "demo" else None


def review_folder(ctx: StepContext) -> Path:
    review_dir = ctx.settings.construction.selection.review_dir
    return Path(review_dir) if review_dir else default_review_dir()


def localiser_files(ctx: StepContext) -> dict[str, Any]:
    """the localiser's recorded answers or local weights folder"""
    localisation = ctx.settings.construction.localisation
    return engine_files(localisation.engine, localisation.model, localisation.engine_options,
                        "the localiser")


def locale_annotation_digests(ctx: StepContext) -> dict[str, str]:
    """the locale's own returned annotation files, each by name"""
    return annotation_files(ctx.settings.construction.annotation.folder_path(), ctx.partition)


def tool_pages_folder(ctx: StepContext) -> Path:
    return ctx.settings.construction.annotation.tools_path() / ctx.partition


def data_files(ctx: StepContext) -> dict[str, Any]:
    """the local FLORES release, the local or built dataset folder (when read)"""
    data = ctx.settings.data
    files = {"FLORES files": content_digest(data.flores_path) if data.flores == "local"
             else None}
    if data.kind in ("local", "built"):
        files["Cultivar data files"] = content_digest(
            data.built_folder() if data.kind == "built" else data.cultivar_path)
    return files


def unpinned_hub_data(ctx: StepContext) -> str | None:
    """it reads data from the Hub at no pinned revision"""
    data = ctx.settings.data
    unpinned = [repo for repo, uses, revision in (
        (data.cultivar_repo, data.kind == "hub", data.cultivar_revision),
        (data.flores_repo, data.flores == "hub", data.flores_revision)) if uses and not revision]
    return (f"it reads {', '.join(unpinned)} from the Hub at no pinned revision (its main "
            "branch may have changed)") if unpinned else None


def spm_model_file(ctx: StepContext) -> str | None:
    metrics = ctx.settings.metrics
    return (content_digest(spm_model_location(metrics))
            if metrics.bleu_tokenize in SPM_TOKENIZERS else None)


def model_files(ctx: StepContext) -> dict[str, Any]:
    """the model's recorded answers, local weights folder or submitted outputs"""
    spec = ctx.model
    location = spec.hf_id if spec.weights == "hub" else None
    files = engine_files(spec.engine, location, spec.engine_options, "the model")
    if spec.engine == "outputs" and spec.path:
        from cultivar_assets.engines.submission import content_sha256

        files["the model's submitted outputs (manifest and outputs file)"] = (
            content_sha256(spec.path))
    return files


def registered_models(ctx: StepContext) -> list[str]:
    return sorted(ctx.registered_models)


def gets_query_page(ctx: StepContext) -> bool:
    """Whether the site gets its Query page: DuckDB-Wasm cached, or npm there to fetch it."""
    site = ctx.settings.site
    return site.query_page != "off" and (
        cached_query_engine(site.web_cache_path()) is not None
        or (site.query_page != "cached" and npm_executable() is not None))


def pushes_to_hub(ctx: StepContext) -> str | None:
    """a push to the Hub is configured (a repo id and a token)"""
    publish = ctx.settings.publish
    pushes = publish.repo_id is not None and publish.token() is not None
    return f"it pushes the dataset to {publish.repo_id} on the Hub" if pushes else None


def folder(dotted_method: str):
    """A function giving the folder that the settings section's method names
    (``site.site_path``, ``publish.folder_path``: a method or a property)."""
    section, _, name = dotted_method.rpartition(".")

    def path(ctx: StepContext) -> Path:
        from cultivar_assets.steps.declarations import settings_value

        value = getattr(settings_value(ctx.settings, section), name)
        return value() if callable(value) else value

    path.__name__ = f"folder_{dotted_method.replace('.', '_')}"
    return path


def as_str(fact):
    """``fact``'s path as a string (as the inputs hold folders)."""
    return lambda ctx: str(fact(ctx))


__all__: Sequence[str] = (
    "BUILD", "DATASET", "MODEL", "RESULTS", "SELECTION", "TEST_SETS", "annotation_files",
    "build_locales", "data_files", "engine_files", "error_annotation_files", "folder",
    "gets_query_page", "locale_annotation_digests", "localiser_files", "model_files",
    "pushes_to_hub", "registered_models", "review_folder", "selected_model_ids",
    "source_benchmark_files", "spm_model_file", "tool_pages_folder", "unpinned_hub_data")
