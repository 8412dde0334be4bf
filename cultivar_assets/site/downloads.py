"""The site's published tables: parquet downloads, CSV/JSON beside every table a page shows,
the Query page's inputs, and the optional DuckDB file.

- ``downloads/<table>.parquet`` (zstd) for each of :data:`PUBLISHED_TABLES` and ``segments``
  (the test sets' sources and references); ``downloads/translations/<model>.parquet``, one file
  per model (``model_id, test_set, segment_id, hypothesis, raw_output, cleaning_rules``;
  ``raw_output`` is NULL where it equals the hypothesis; join ``segments`` on ``(test_set,
  segment_id)`` for the texts).
- ``downloads/<page table>.csv`` and ``.json``: the rows behind a table on a page, written with
  :func:`cultivar_assets.tables.csv_text` (formula-safe) and
  :func:`cultivar_assets.tables.json_text`.
- ``data/query/published.duckdb.gz``: the same tables (and ``segments``) as one DuckDB file in
  the storage format of the Query page's DuckDB-Wasm (:data:`QUERY_STORAGE_VERSION`),
  gzip-compressed; the page attaches it READ_ONLY, so DuckDB itself refuses any change to a
  published table (DuckDB-Wasm's parquet reader is an extension that would be downloaded from
  the internet; its own file format is built in). The same tables give the same bytes
  (:func:`query_database_gz_bytes`).
- ``downloads/cultivar.duckdb`` (only when configured): the published tables as a fresh DuckDB
  file in the storage format DuckDB 1.5 reads — not a copy of the working database.

FLORES text: where the originals policy hides it, ``segments`` has no source or reference for
``flores_*`` test sets and translations that merely repeat such a source are replaced by
:data:`HIDDEN_OUTPUT` (see :func:`public_output`).
"""

from __future__ import annotations

import gzip
import io
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cultivar_assets.sqlfiles import statement_text

HIDDEN_OUTPUT = "(output identical to the original FLORES source; not shown)"
PARQUET_OPTIONS = {"compression": "zstd", "compression_level": 6}
STORAGE_VERSION = "v1.5.0"
# The storage format of the Query page's database file: DuckDB-Wasm 1.32.0 is DuckDB 1.4.
QUERY_STORAGE_VERSION = "v1.4.0"


@dataclass(frozen=True)
class PublishedTable:
    name: str  # the table's name on the Query page, in the downloads and the DuckDB file
    query: str  # the named block of sql/site.sql that reads it
    description: str


PUBLISHED_TABLES: tuple[PublishedTable, ...] = (
    PublishedTable("leaderboard", "site_leaderboard",
                   "the models evaluated here, averaged over locales (paper, Table 3)"),
    PublishedTable("reported_leaderboard", "site_reported_leaderboard",
                   "the paper's Table 3 as published (reported, not computed here)"),
    PublishedTable("model_locale_deltas", "site_model_locale_deltas_table",
                   "∆ per model and locale"),
    PublishedTable("locale_deltas", "site_locale_deltas",
                   "∆ per locale averaged over models (paper, Table 4)"),
    PublishedTable("rank_agreement", "site_rank_agreement",
                   "rank agreement between FLORES and Cultivar (paper, Table 2)"),
    PublishedTable("leaderboard_metrics", "site_leaderboard_metrics",
                   "every configured metric's values (chrF++, TER, ...) in long form: per "
                   "level, model and/or locale, metric and quantity, with intervals and n"),
    PublishedTable("scores", "site_scores",
                   "every configured metric's score per model and test set"),
    PublishedTable("word_recall", "site_word_recall",
                   "locale-specific word recall per model and locale (FP / FN rates)"),
    PublishedTable("cleaning_counts", "cleaning_counts",
                   "how often each output-cleaning rule changed a model's output"),
    PublishedTable("models", "site_models", "registry entries and run records"),
    PublishedTable("locales", "site_locales_table", "the 27 Cultivar locales"),
    PublishedTable("test_sets", "site_test_sets", "the test sets of this build"),
    PublishedTable("missing_test_sets", "site_missing",
                   "test sets the data could not provide, and why"),
    PublishedTable("annotation_summary", "site_annotation_summary",
                   "post-editing statistics computed from the annotation files (paper, Table 1)"),
)
SEGMENTS_DESCRIPTION = ("the test sets' segments: source and reference per test set and "
                        "instance (original FLORES text only where the site shows it)")
TRANSLATIONS_DESCRIPTION = ("every model's output per segment (segments joined in: source, "
                            "reference), loaded model by model")


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **PARQUET_OPTIONS)
    return sink.getvalue()


# Level 1 (our choice): on the benchmark's 1,000-model site the Query page's files are 5 %
# larger than at level 6 (12.3 MB, 11.7 MB) and take 0.7 s of CPU instead of 2.3 s, which every
# build spends (these tables change with every model added).
IPC_GZIP_LEVEL = 1


def ipc_gz_bytes(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream, gzip-compressed (the Query page's input format)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return gzip.compress(sink.getvalue().to_pybytes(), compresslevel=IPC_GZIP_LEVEL, mtime=0)


# DuckDB's main header (the file's first 4,096 bytes): an 8-byte checksum, then "DUCK", the
# storage version, four flags, the writing library's version and source id (32 bytes each), 8
# bytes of encryption metadata and a 16-byte database identifier that DuckDB draws at random
# for every new file (the salt of its encryption, and what pairs a write-ahead log with its
# file). The checksum is DuckDB's: 5381 XOR each 8-byte word of the rest of the header times
# :data:`_CHECKSUM_MULTIPLIER` (mod 2**64).
_HEADER_SIZE = 4096
_MAGIC = (8, b"DUCK")
_DB_IDENTIFIER = slice(124, 140)
_CHECKSUM_MULTIPLIER = 0xBF58476D1CE4E5B9


def _header_checksum(header: bytes) -> int:
    result = 5381
    for (word,) in struct.iter_unpack("<Q", header[8:_HEADER_SIZE]):
        result ^= (word * _CHECKSUM_MULTIPLIER) & 0xFFFF_FFFF_FFFF_FFFF
    return result


def _without_identifier(header: bytes, path: Path) -> bytes:
    """``header`` (the main header of the DuckDB file ``path``) with its database identifier
    set to zeros and its checksum recomputed; raises :class:`ValueError` where the header is
    not laid out as above."""
    start, magic = _MAGIC
    if (len(header) != _HEADER_SIZE or header[start:start + len(magic)] != magic
            or struct.unpack_from("<Q", header)[0] != _header_checksum(header)):
        raise ValueError(f"{path}: not a DuckDB main header with DuckDB's checksum (this DuckDB "
                         f"{duckdb.__version__} lays it out otherwise); not published")
    out = bytearray(header)
    out[_DB_IDENTIFIER] = bytes(_DB_IDENTIFIER.stop - _DB_IDENTIFIER.start)
    struct.pack_into("<Q", out, 0, _header_checksum(bytes(out)))
    return bytes(out)


def _reproducible(path: Path) -> None:
    """Sets the random database identifier of the closed DuckDB file ``path`` to zeros in
    place (:func:`_without_identifier`). The file has no encryption and no write-ahead log, the
    two things that read the identifier; where a write-ahead log is left (the checkpoint on
    closing did not complete) it raises and changes nothing."""
    wal = path.with_name(path.name + ".wal")
    if wal.exists():
        raise RuntimeError(f"{wal}: DuckDB left a write-ahead log after closing {path.name} "
                           "(its checkpoint did not complete); not published")
    with open(path, "r+b") as handle:
        header = _without_identifier(handle.read(_HEADER_SIZE), path)
        handle.seek(0)
        handle.write(header)


#: The settings of a DuckDB file that the site publishes: the tables are written by one thread
#: (several threads place the row groups' blocks in the order they finish).
_ONE_WRITER = {"threads": 1}


def query_database_gz_bytes(tables: Sequence[tuple[str, pa.Table]]) -> bytes:
    """``tables`` (name, table) as the tables of a fresh DuckDB file in
    :data:`QUERY_STORAGE_VERSION`, gzip-compressed (the Query page's input).

    The bytes are a function of ``tables`` (their order, names and rows) and of the DuckDB
    library that writes them: one thread writes the tables in the given order
    (:data:`_ONE_WRITER`), the file is checkpointed when the connection closes, its random
    database identifier is set to zeros (:func:`_reproducible`), and gzip records no file name
    and mtime 0."""
    with tempfile.TemporaryDirectory(prefix="cultivar-query-") as folder:
        path = Path(folder) / "published.duckdb"
        con = duckdb.connect(str(path), config={
            "storage_compatibility_version": QUERY_STORAGE_VERSION, **_ONE_WRITER})
        try:
            for name, table in tables:
                con.from_arrow(table).create(name)
        finally:
            con.close()
        _reproducible(path)
        return gzip.compress(path.read_bytes(), compresslevel=IPC_GZIP_LEVEL, mtime=0)


def public_segments(segments: pa.Table, show_originals: bool) -> pa.Table:
    """Segments with the FLORES sides' texts removed unless originals are shown."""
    if show_originals:
        return segments
    flores = pc.starts_with(segments["test_set"], "flores_")
    for column in ("source", "reference"):
        index = segments.schema.get_field_index(column)
        nulls = pa.nulls(segments.num_rows, pa.string())
        segments = segments.set_column(index, column, pc.if_else(flores, nulls,
                                                                 segments[column]))
    return segments


def public_output(test_set: str, hypothesis: str, raw: str | None, source: str | None,
                  show_originals: bool) -> tuple[str, str | None]:
    """(hypothesis, raw) as published: an output that repeats a hidden FLORES source is hidden.

    FLORES text is the source and reference of a ``flores_*`` segment; an output that contains
    that source whole (the copy baseline's, or a model that echoes its input inside other text)
    would re-host it, so it is replaced by :data:`HIDDEN_OUTPUT`.
    """
    if show_originals or not test_set.startswith("flores_") or source is None:
        return hypothesis, raw
    stripped = source.strip()
    if not stripped:
        return hypothesis, raw
    if stripped in hypothesis:
        hypothesis = HIDDEN_OUTPUT
    if raw is not None and stripped in raw:
        raw = HIDDEN_OUTPUT
    return hypothesis, raw


TRANSLATION_SCHEMA = pa.schema([
    ("model_id", pa.string()), ("test_set", pa.string()), ("segment_id", pa.int32()),
    ("hypothesis", pa.string()), ("raw_output", pa.string()),
    ("cleaning_rules", pa.list_(pa.string())),
])


def translations_table(table: pa.Table) -> pa.Table:
    """A model's published translations in :data:`TRANSLATION_SCHEMA` (from the site query)."""
    return table.select(TRANSLATION_SCHEMA.names).cast(TRANSLATION_SCHEMA)


def export_database(downloads: Path, tables: Sequence[str], translation_files: Sequence[Path],
                    target: Path) -> None:
    """``downloads/cultivar.duckdb`` from the site's parquet files (see the module docstring):
    one table per name of ``tables`` (the published tables this build wrote, and ``segments``)
    from ``downloads/<name>.parquet``, then ``translations`` from ``translation_files``. The
    same files give the same bytes (one writing thread, :func:`_reproducible`)."""
    target.unlink(missing_ok=True)
    con = duckdb.connect(str(target), config={"storage_compatibility_version": STORAGE_VERSION,
                                              **_ONE_WRITER})
    try:
        for name in tables:
            con.read_parquet(str(downloads / f"{name}.parquet")).create(name)
        if translation_files:
            params = {"translation_files": [str(p) for p in translation_files]}
            for statement in duckdb.extract_statements(statement_text("export_translations")):
                con.execute(statement, {k: params[k] for k in statement.named_parameters})
    finally:
        con.close()
    _reproducible(target)
