"""The demo's annotation files: the bundled demo data as the final pairs of the demo's drafts.

The demo closes the building loop (selection → drafts → post-editing → dataset → evaluation) on
the demo data. Its "post-editing" is not a session with an annotator: the final pairs are the
localised pairs of the bundled demo data (``cultivar_assets/data/demo/<locale>.jsonl``, written
by the toolkit's authors before any draft existed), recorded against the drafts that the demo's
weak localiser (``config.demo_localisation``) produces. The files say so in their annotator
label, and every timestamp is :data:`DEMO_TIMESTAMP`, so the files depend on the drafts and the
demo data only: regenerating them from unchanged drafts gives the same bytes.

:func:`demo_annotation_document` is one locale's file; :func:`write_demo_annotations` writes every
locale's into the shipped folder (``scripts/regenerate_demo_annotations.py`` calls it after
localising with the demo's settings). An item's ``action`` follows the shared rule
(``task.classify_action``): ``kept`` only where a draft is exactly the demo pair.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cultivar_assets import __version__
from cultivar_assets.construction.annotation.file import FILE_SUFFIX, FORMAT, SCHEMA_VERSION
from cultivar_assets.construction.annotation.task import AnnotationTask, classify_action
from cultivar_assets.construction.config import LocalisationConfig
from cultivar_assets.data.sources import demo_dataset_dir
from cultivar_assets.store.database import Store

DEMO_ANNOTATOR = ("demo: final pairs are the toolkit's bundled demo data, written by its authors "
                  "(not a post-editing session)")
DEMO_TIMESTAMP = "2026-01-01T00:00:00.000Z"
GENERATED_WITH = "generated_with.json"  # the environment the shipped drafts came from


def environment() -> dict[str, Any]:
    """What a local model's greedy answers can depend on beyond its fingerprint: library
    versions, the number of CPU threads and the processor (floating-point reductions differ
    between kernels and thread counts, and a near-tie can then change a token)."""
    import importlib.metadata as metadata

    versions = {}
    for package in ("torch", "transformers", "tokenizers"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    threads = None
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {**versions, "torch_threads": threads, "cpus": os.cpu_count(), "cpu": cpu,
            "python": platform.python_version()}


def describe(env: dict[str, Any]) -> str:
    return (f"torch {env.get('torch')}, transformers {env.get('transformers')}, "
            f"{env.get('torch_threads')} threads on {env.get('cpu')}")


def demo_finals(locale: str) -> dict[int, dict[str, str]]:
    """Instance id -> the demo data's original and localised pairs of ``locale``."""
    rows = [json.loads(line) for line in
            (demo_dataset_dir() / f"{locale}.jsonl").read_text("utf-8").splitlines()]
    return {row["id"]: row for row in rows}


def demo_annotation_document(task: AnnotationTask) -> dict[str, Any]:
    """The demo annotation file of ``task`` (the module docstring)."""
    rows = demo_finals(task.locale)
    ids = [d.instance_id for d in task.drafts]
    if sorted(rows) != ids:
        raise ValueError(f"{task.locale}: the drafts cover ids {ids}, the demo data "
                         f"{sorted(rows)}")
    items = []
    for draft in task.drafts:
        row = rows[draft.instance_id]
        if (row["source_original"], row["english_original"]) != (draft.source_original,
                                                                 draft.english_original):
            raise ValueError(f"{task.locale}_{draft.instance_id}: the draft's original pair is not "
                             "the demo data's")
        source, english = row["source_localised"], row["english_localised"]
        items.append({
            "instance_id": draft.instance_id, "locale": draft.locale,
            "original": {"source": draft.source_original, "english": draft.english_original},
            "draft": {"source": draft.source_draft, "english": draft.english_draft,
                      "flagged": draft.flagged, "draft_hash": draft.draft_hash,
                      "prompt_hash": draft.prompt_hash},
            "final": {"source": source, "english": english},
            "action": classify_action(draft, source, english),
            "confirmed": True, "updated_at": DEMO_TIMESTAMP, "confirmed_at": DEMO_TIMESTAMP,
        })
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION,
            "task": {"task_id": task.task_id, "locale": task.locale,
                     "drafts_hash": task.drafts_hash, "n_items": len(task.drafts),
                     "source_mode": task.source_mode, "tool_version": __version__,
                     "annotator": DEMO_ANNOTATOR},
            "saved_at": DEMO_TIMESTAMP, "items": items}


def write_demo_annotations(tasks: Sequence[AnnotationTask], folder: Path,
                           generated_with: dict[str, Any] | None = None) -> list[Path]:
    """Write each task's demo file into ``folder``, replacing that locale's earlier files; with
    ``generated_with`` (:func:`environment`), also the note of where the drafts came from."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if generated_with is not None:
        (folder / GENERATED_WITH).write_text(json.dumps(generated_with, indent=1) + "\n",
                                             "utf-8")
    written = []
    for task in tasks:
        text = json.dumps(demo_annotation_document(task), ensure_ascii=False, indent=1) + "\n"
        path = folder / f"{task.task_id}{FILE_SUFFIX}"
        for old in folder.glob(f"{task.locale}-*.json"):
            if old != path:
                old.unlink()
        path.write_text(text, "utf-8")
        written.append(path)
    return written


def record_localiser_answers(store: Store, config: LocalisationConfig, path: Path) -> int:
    """Record, for the replay engine (``engines/replay.py``), the answers that ``config``'s
    localiser gave for the drafts in ``store`` (one attempt per instance, as the demo localiser
    makes); returns how many. The request of each answer is rebuilt exactly as
    :func:`localisation.localise` builds it."""
    from cultivar_assets.construction.localisation.localiser import make_localiser
    from cultivar_assets.construction.localisation.prompts import prompt_values
    from cultivar_assets.engines.base import Generation
    from cultivar_assets.engines.replay import write_recording

    if config.max_attempts != 1:
        raise ValueError("a recording holds first attempts only (max_attempts: 1)")
    localiser = make_localiser(config)
    answers = []
    for locale in config.locale_keys():
        for row in store.query("locale_drafts", locale=locale):
            request = localiser.prompt.request(
                prompt_values(locale, row["source_original"], row["english_original"]),
                config.max_new_tokens)
            answers.append((request, Generation(row["raw_answer"], row["prompt_tokens"],
                                                row["completion_tokens"]),
                            f"{locale} {row['instance_id']:05d}"))
    write_recording(path, {"engine": config.engine, "model": config.model,
                           "revision": config.revision, "weights": config.weights,
                           "engine_options": config.engine_options, "prompt": config.prompt,
                           "max_new_tokens": config.max_new_tokens,
                           "environment": environment()}, answers)
    return len(answers)
