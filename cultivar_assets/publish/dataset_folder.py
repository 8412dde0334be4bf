"""The dataset repository folder in the Hub's layout, built from the DuckDB store.

``data/<locale>/test.parquet`` (one configuration per locale, columns ``id``, ``locale``,
``source_localised``, ``english_localised`` and, when configured, ``source_original`` and
``english_original``; see :mod:`cultivar_assets.publish.config`; for a locale of the project's
own build, the provenance columns ``action``, ``draft_hash``, ``prompt_hash``), the dataset
card ``README.md`` (with Table 1 as computed from the annotation files, for such locales) and,
given an :class:`~cultivar_assets.publish.lm_eval_tasks.LmEvalTasks`, the folder's test sets as
lm-evaluation-harness tasks under ``lm_eval_tasks/`` (``lm_eval --include_path
lm_eval_tasks``; the FLORES tasks only when the originals are included). The
folder is the project's published format, so the project's own reader
(:mod:`cultivar_assets.data.cultivar_files`) and ``datasets.load_dataset`` both read it.

The folder is written into a temporary sibling and swapped in when complete: a failed build
leaves the previous folder as it was.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cultivar_assets.data.cultivar_files import CANONICAL_COLUMNS, ORIGINAL_COLUMNS
from cultivar_assets.data.testsets import BenchmarkData, Instance, TestSet
from cultivar_assets.files import MANIFEST, file_sha256, replace_folder
from cultivar_assets.publish.card import SPLIT, Card, card_for
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.publish.lm_eval_tasks import HUB_FOLDER, LmEvalTasks, write_lm_eval_tasks
from cultivar_assets.publish.records import DatasetInfo, PublishData

_TYPES = {"id": pa.int64()}
PROVENANCE = ("action", "draft_hash", "prompt_hash")  # of the project's own build


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative, with forward slashes
    size: int
    sha256: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DatasetFolder:
    """A written dataset folder and what it holds."""

    path: Path
    card: Card
    files: list[FileEntry]
    rows: dict[str, int]  # locale -> instances
    include_originals: bool
    info: DatasetInfo

    @property
    def digest(self) -> str:
        """sha256 over the files' paths and hashes: changes whenever a byte of the folder does."""
        return digest(self.files)


def locale_table(rows: list[dict[str, Any]], include_originals: bool,
                 provenance: list[dict[str, Any]] | None = None) -> pa.Table:
    """The parquet table of one locale (instances query rows, sorted by id), with the
    provenance columns when ``provenance`` gives every row's (``instance_provenance`` rows)."""
    columns = [c for c in CANONICAL_COLUMNS if include_originals or c not in ORIGINAL_COLUMNS]
    values = {c: [row["instance_id" if c == "id" else c] for row in rows] for c in columns}
    if provenance is not None:
        for column in PROVENANCE:
            values[column] = [p[column] for p in provenance]
        columns += list(PROVENANCE)
    schema = pa.schema([(c, _TYPES.get(c, pa.string())) for c in columns])
    return pa.table(values, schema=schema)


def list_files(folder: Path) -> list[FileEntry]:
    """Every file under ``folder`` with its size and sha256, sorted by path."""
    entries = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        if path.name == MANIFEST:  # the build manifest is ours, not part of the dataset
            continue
        entries.append(FileEntry(path.relative_to(folder).as_posix(), path.stat().st_size,
                                 file_sha256(path)))
    return entries


def digest(files: list[FileEntry]) -> str:
    return hashlib.sha256("".join(f"{f.path}\0{f.sha256}\n" for f in files).encode()).hexdigest()


def published_test_sets(data: PublishData, include_originals: bool) -> list[TestSet]:
    """The test sets of the published instances (the FLORES ones only with the originals)."""
    instances = {locale: [Instance(locale, row["instance_id"], row["source_localised"],
                                   row["english_localised"],
                                   row["source_original"] if include_originals else None,
                                   row["english_original"] if include_originals else None)
                          for row in rows]
                 for locale, rows in data.instances.items()}
    return BenchmarkData("published", data.info.is_demo, instances).test_sets()


def build_dataset_folder(data: PublishData, config: PublishConfig,
                         lm_eval: LmEvalTasks | None = None) -> DatasetFolder:
    """Write the folder at ``config.folder_path``, replacing any previous one when complete;
    with ``lm_eval``, its test sets as lm-eval tasks under ``lm_eval_tasks/``."""
    if not data.instances:
        raise LookupError("the stored dataset has no instances to publish")
    include = config.originals_included(data.info.is_demo)
    provenance = {locale: data.locale_provenance(locale) for locale in data.instances}
    card = card_for(data.locales, data.info, config, annotation_summary=data.annotation_summary,
                    provenance=any(p is not None for p in provenance.values()))
    target = config.folder_path

    def write(work: Path) -> None:
        for locale, rows in data.instances.items():
            path = work / "data" / locale / f"{SPLIT}.parquet"
            path.parent.mkdir(parents=True)
            pq.write_table(locale_table(rows, include, provenance[locale]), path)
        (work / "README.md").write_text(card.to_readme(), encoding="utf-8")
        if lm_eval is not None:
            write_lm_eval_tasks(work / HUB_FOLDER, published_test_sets(data, include), lm_eval)

    replace_folder(target, write, {"kind": "hf_dataset", "fingerprint": data.info.fingerprint,
                                   "is_demo": data.info.is_demo})
    return DatasetFolder(target, card, list_files(target),
                         {k: len(v) for k, v in data.instances.items()}, include, data.info)
