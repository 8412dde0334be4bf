"""Storing validated annotation files: one locale's rows replaced in one transaction.

Views: ``annotations`` (one row per locale and instance) and ``annotation_summary`` (the paper's
Table 1 computed from the files; definitions in ``construction/annotation/stats.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cultivar_assets.construction.annotation.file import (
    AnnotationFile,
    IngestLimits,
    read_annotation_file,
)
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.store.database import Store, WriteBlock


def annotation_rows(file: AnnotationFile) -> list[dict[str, Any]]:
    """The rows of ``raw.annotations`` for a validated file."""
    return [
        {"locale": a.locale, "instance_id": a.instance_id,
         "source_original": a.source_original, "english_original": a.english_original,
         "source_draft": a.source_draft, "english_draft": a.english_draft,
         "flagged": a.flagged, "draft_hash": a.draft_hash, "prompt_hash": a.prompt_hash,
         "source_final": a.source_final, "english_final": a.english_final,
         "action": a.action, "confirmed": a.confirmed, "source_mode": a.source_mode,
         "source_changed": a.source_changed, "english_changed": a.english_changed,
         "source_edits": a.source_edits, "english_edits": a.english_edits,
         "updated_at": a.updated_at, "confirmed_at": a.confirmed_at}
        for a in file.annotations
    ]


def annotation_blocks(file: AnnotationFile) -> list[WriteBlock]:
    """The write blocks that replace the stored annotations of ``file.locale`` with ``file``'s."""
    header = {"locale": file.locale, "task_id": file.task_id, "drafts_hash": file.drafts_hash,
              "annotator": file.annotator, "tool_version": file.tool_version,
              "schema_version": file.schema_version, "saved_at": file.saved_at,
              "file_name": Path(file.path).name, "file_sha256": file.sha256,
              "n_items": len(file.annotations),
              "ingested_at": datetime.now(UTC).replace(tzinfo=None)}
    return [
        WriteBlock("delete_locale_annotations", {"locale": file.locale}),
        WriteBlock("insert_annotation_files", rows=[header]),
        WriteBlock("insert_annotations", rows=annotation_rows(file)),
    ]


def write_annotations(store: Store, file: AnnotationFile) -> int:
    """Replace the stored annotations of ``file.locale`` with ``file``'s; returns the row count.

    Only a validated :class:`AnnotationFile` reaches here, so a file with any problem changes
    nothing (``read_annotation_file`` raised before); the delete and inserts are one transaction.
    """
    store.write(annotation_blocks(file))
    return len(file.annotations)


def write_annotation_files(store: Store, files: list[AnnotationFile]) -> None:
    """Replace the annotations of every file's locale, all in one transaction."""
    locales = [f.locale for f in files]
    twice = sorted({loc for loc in locales if locales.count(loc) > 1})
    if twice:
        raise ValueError(f"more than one file for {', '.join(twice)}: hand in one per locale")
    store.write([block for file in files for block in annotation_blocks(file)])


def ingest_annotation_file(
    store: Store,
    path: str | Path,
    task: AnnotationTask,
    *,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    limits: IngestLimits | None = None,
) -> AnnotationFile:
    """Validate the file at ``path`` against ``task``, then replace the locale's stored rows.

    A file with any problem raises ``AnnotationFileError`` (every problem in one message) before
    anything is written, so the database keeps the locale's previous rows. ``limits``: the
    file's size and its strings' lengths (default ``IngestLimits()``).
    """
    file = read_annotation_file(path, task, benchmark_originals=benchmark_originals,
                                limits=limits)
    write_annotations(store, file)
    return file


def read_annotation_summary(store: Store) -> list[dict[str, Any]]:
    """The ``annotation_summary`` view (Table 1 computed from the files), one row per locale."""
    return store.query("annotation_summary")
