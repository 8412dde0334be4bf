"""Ingesting the returned error-annotation files into the store (paper §5, Table 5).

:func:`ingest_error_files` validates every file of the configured folder against the sample's
tasks (``file.read_error_file``), and only when all of them are usable replaces the error
analysis in the store in one transaction: the files, one row per annotated translation, and the
settings the correlations need (the outlier model). A folder with any bad file raises one
:class:`ErrorIngestError` with one message per bad file, and nothing is written (the store keeps
the previous analysis). At most one file per locale. A file that annotates other systems than
its locale's task (``file.OtherSystemsError``: made for the sample of an earlier leaderboard,
before models were added or removed) is not a bad file: it is left out, with a one-line notice
in :attr:`ErrorFiles.left_out`, and the other files are ingested.

Views (``sql/views.sql``): ``error_annotations`` (one row per translation), ``error_files``,
``error_table5`` (paper Table 5: per model and locale the counts of each locale-specific type,
the locale-specific, general and overall totals and BLEU) and ``error_correlations`` (Pearson r
between BLEU and the total per language; definitions in :mod:`cultivar_assets.evaluation.
error_analysis`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cultivar_assets.error_analysis.config import ErrorAnalysisConfig
from cultivar_assets.error_analysis.file import (
    ErrorFile,
    ErrorFileError,
    OtherSystemsError,
    find_error_files,
    read_error_file,
)
from cultivar_assets.error_analysis.sample import ErrorSample
from cultivar_assets.site.tool_files import Problem
from cultivar_assets.store.database import Store, WriteBlock


class ErrorIngestError(ValueError):
    """Some error-annotation files cannot be used; one message per bad file; nothing written."""

    def __init__(self, errors: Sequence[ErrorFileError], n_files: int) -> None:
        self.errors = list(errors)
        super().__init__(
            f"{len(self.errors)} of {n_files} error-annotation file"
            f"{'s' if n_files != 1 else ''} cannot be used; nothing was written:\n"
            + "\n".join(str(e) for e in self.errors))


@dataclass(frozen=True)
class ErrorFiles:
    """The usable files of a folder, and a one-line notice per file left out (module
    docstring)."""

    files: list[ErrorFile]
    left_out: list[str]


def read_error_files(paths: Sequence[Path], sample: ErrorSample) -> ErrorFiles:
    """Every file validated; raises :class:`ErrorIngestError` when any of them is bad."""
    tasks = sample.by_locale()
    files, left_out, errors, seen = [], [], [], {}
    for path in paths:
        try:
            file = read_error_file(path, tasks)
        except ErrorFileError as error:
            errors.append(error)
            continue
        except OtherSystemsError as other:
            left_out.append(str(other))
            continue
        if file.locale in seen:
            errors.append(ErrorFileError([Problem(
                str(path), None, "(folder)", f"a second file for {file.locale} (the first is "
                f"{seen[file.locale]}); keep one file per locale")]))
            continue
        seen[file.locale] = path.name
        files.append(file)
    if errors:
        raise ErrorIngestError(errors, len(paths))
    return ErrorFiles(files, left_out)


def annotation_rows(file: ErrorFile) -> list[dict]:
    return [{"locale": a.locale, "instance_id": a.instance_id, "model_id": a.model_id,
             "item_key": a.key, "system": a.system, "errors": list(a.errors), "note": a.note,
             "done": a.done, "hypothesis_sha256": a.hypothesis_sha256,
             "translation_matches": a.translation_matches, "updated_at": a.updated_at,
             "done_at": a.done_at} for a in file.annotations]


def write_error_analysis(store: Store, files: Sequence[ErrorFile],
                         config: ErrorAnalysisConfig) -> None:
    """Replace the stored error analysis with ``files`` (validated) and the settings."""
    now = datetime.now(UTC).replace(tzinfo=None)
    headers = [{"locale": f.locale, "task_id": f.task_id, "annotator": f.annotator,
                "tool_version": f.tool_version, "schema_version": f.schema_version,
                "saved_at": f.saved_at, "file_name": Path(f.path).name,
                "file_sha256": f.sha256, "is_demo": f.is_demo, "n_items": len(f.annotations),
                "n_translation_changed": f.n_translation_changed, "ingested_at": now}
               for f in files]
    settings = [{"outlier_model": config.outlier_model, "seed": config.seed,
                 "n_instances": config.n_instances, "locales": list(config.locales),
                 "models": list(config.models) if config.models is not None else None,
                 "blind": config.blind, "annotations_dir": config.annotations_dir,
                 "n_files": len(files), "ingested_at": now}]
    store.write([
        WriteBlock("replace_error_analysis"),
        WriteBlock("insert_error_files", rows=headers),
        WriteBlock("insert_error_annotations", rows=[r for f in files for r in annotation_rows(f)]),
        WriteBlock("insert_error_analysis_settings", rows=settings),
    ])


def ingest_error_files(store: Store, sample: ErrorSample,
                       config: ErrorAnalysisConfig) -> ErrorFiles:
    """Validate the configured folder's files against ``sample`` and replace the stored error
    analysis with the usable ones (module docstring); no folder configured: an empty
    analysis."""
    paths = find_error_files(config.annotations_dir) if config.annotations_dir else []
    read = read_error_files(paths, sample)
    write_error_analysis(store, read.files, config)
    return read
