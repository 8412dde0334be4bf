"""Helpers for the error-analysis tests: a store with evaluated systems, a sample, and
error-annotation documents written the way the tool writes them (not a test module)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from statistics_helpers import build_statistics_store

from cultivar_assets import __version__
from cultivar_assets.error_analysis.config import ErrorAnalysisConfig
from cultivar_assets.error_analysis.file import FORMAT, SCHEMA_VERSION
from cultivar_assets.error_analysis.sample import ErrorTask
from cultivar_assets.error_analysis.types import CODES
from cultivar_assets.evaluation import aggregate
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.store.database import Store

SAMPLE_LOCALES = ["cmn_Hans_China", "deu_Latn_Germany", "deu_Latn_Switzerland"]
SAMPLE_MODELS = ["copy-source-baseline", "drop-3", "memoriser"]
STAMP = "2026-12-01T10:00:00.000Z"


def evaluated_store(folder: Path) -> Store:
    """The six systems of statistics_helpers, scored and aggregated (B = 200 for speed)."""
    store, _ = build_statistics_store(folder / "errors.duckdb", folder / "cache")
    aggregate(store, config=MetricConfig(bleu_tokenize="13a", bootstrap_replicates=200))
    return store


def copy_store(store: Store, path: Path) -> Store:
    shutil.copyfile(store.path, path)
    return Store(path)


def sample_config(folder: Path | None = None, **changes) -> ErrorAnalysisConfig:
    base = ErrorAnalysisConfig(locales=SAMPLE_LOCALES, models=SAMPLE_MODELS, n_instances=3,
                               outlier_model="copy-source-baseline",
                               annotations_dir=str(folder) if folder else None)
    return base.model_copy(update=changes)


def marks_for(task: ErrorTask) -> dict[str, list[str]]:
    """Deterministic made-up judgments: the k-th translation gets the codes at k mod 9 and, for
    the memoriser, also NE (it returns the unlocalised sentence)."""
    marks = {}
    for k, item in enumerate(task.items):
        codes = {CODES[k % len(CODES)]} if k % 3 else set()
        if item.model_id == "memoriser":
            codes.add("NE")
        marks[item.key] = [c for c in CODES if c in codes]
    return marks


def error_document(task: ErrorTask, marks: dict[str, list[str]] | None = None, *,
                   demo: bool = False, annotator: str = "tester") -> dict:
    """A complete file for ``task`` (every instance done), as the tool's Download JSON."""
    marks = marks if marks is not None else marks_for(task)
    document = {
        "format": FORMAT, "schema_version": SCHEMA_VERSION,
        "task": {"task_id": task.task_id, "locale": task.locale, "n_items": len(task.items),
                 "n_instances": len(task.instance_ids),
                 "translations_hash": task.translations_hash, "error_types": list(CODES),
                 "tool_version": __version__, "annotator": annotator},
        "saved_at": STAMP,
        "items": [{"key": i.key, "model_id": i.model_id, "locale": i.locale,
                   "instance_id": i.instance_id, "hypothesis_sha256": i.hypothesis_sha256,
                   "errors": marks.get(i.key, []), "note": "", "done": True,
                   "updated_at": STAMP, "done_at": STAMP} for i in task.items],
    }
    if demo:
        document["demo"] = True
    return document


def write_document(folder: Path, document: dict, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"{document['task']['task_id']}.errors.json")
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1), "utf-8")
    return path
