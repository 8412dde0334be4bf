"""The DuckDB files the site publishes (the Query page's ``data/query/published.duckdb.gz``,
:func:`cultivar_assets.site.downloads.query_database_gz_bytes`, and the download
``downloads/cultivar.duckdb``): the same tables give the same bytes, the file opens in DuckDB
with the tables' rows, a file whose header is not laid out as expected or that has a
write-ahead log left is refused, and two builds of one store give the same ``site`` data
version. DuckDB-Wasm reading the file is tests/test_site_query.py's."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from site_helpers import WEB_CACHE

from cultivar_assets.site import downloads as dl
from cultivar_assets.site.build import build_site
from cultivar_assets.site.query_engine import cached_query_engine
from cultivar_assets.versions.rows import folder_digest

QUERY_FILE = "data/query/published.duckdb.gz"
DOWNLOAD_FILE = "downloads/cultivar.duckdb"
# more rows than DuckDB puts in one row group (122,880), so that several threads would each
# write row groups and place their blocks in the order they finish
ROWS = 300_000


def tables() -> list[tuple[str, pa.Table]]:
    numbers = pa.array(range(ROWS), pa.int64())
    texts = pa.array([f"segment {i} · ∆ {i % 97}" for i in range(ROWS)])
    return [("segments", pa.table({"segment_id": numbers, "text": texts})),
            ("leaderboard", pa.table({"model_id": ["a", "b", None], "bleu": [1.5, None, 3.0]}))]


def opened(data: bytes, folder: Path) -> dict[str, pa.Table]:
    path = folder / "published.duckdb"
    path.write_bytes(gzip.decompress(data))
    with duckdb.connect(str(path), read_only=True) as con:
        names = [row[0] for row in con.execute("SHOW TABLES").fetchall()]
        return {name: con.sql(f'SELECT * FROM "{name}"').to_arrow_table()
                for name in names}


def test_the_same_tables_give_the_same_bytes_and_the_file_holds_their_rows(tmp_path):
    given = tables()
    first, second = dl.query_database_gz_bytes(given), dl.query_database_gz_bytes(given)
    assert first == second
    # gzip: no file name (FLG 0) and mtime 0
    assert first[3] == 0 and struct.unpack_from("<I", first, 4)[0] == 0
    found = opened(first, tmp_path)
    assert sorted(found) == sorted(name for name, _ in given)
    for name, table in given:
        assert found[name].equals(table), name
    other = dl.query_database_gz_bytes([given[0], ("leaderboard", given[1][1].slice(0, 2))])
    assert other != first


def test_the_identifier_is_zeroed_under_a_checksum_duckdb_accepts(tmp_path):
    """The file's database identifier is zeros and DuckDB (which checks the header's checksum
    on opening) attaches it read-only, as the Query page does."""
    raw = gzip.decompress(dl.query_database_gz_bytes(tables()[1:]))
    assert raw[dl._DB_IDENTIFIER] == bytes(16)
    assert struct.unpack_from("<Q", raw)[0] == dl._header_checksum(raw)
    path = tmp_path / "published.duckdb"
    path.write_bytes(raw)
    with duckdb.connect() as con:
        con.execute(f"ATTACH '{path}' AS published (READ_ONLY)")
        assert con.execute("SELECT count(*) FROM published.leaderboard").fetchone() == (3,)


@pytest.mark.parametrize("change", ["magic", "checksum", "short"])
def test_a_header_laid_out_otherwise_is_refused_and_left_as_it_is(tmp_path, change):
    path = tmp_path / "published.duckdb"
    with duckdb.connect(str(path)) as con:
        con.from_arrow(tables()[1][1]).create("leaderboard")
    raw = bytearray(path.read_bytes())
    if change == "magic":
        raw[8:12] = b"DUCC"
    elif change == "checksum":
        raw[0] ^= 1
    else:
        raw = raw[:100]
    path.write_bytes(raw)
    with pytest.raises(ValueError, match=r"published\.duckdb: not a DuckDB main header"):
        dl._reproducible(path)
    assert path.read_bytes() == raw


def test_a_file_with_a_write_ahead_log_left_is_refused(tmp_path):
    path = tmp_path / "published.duckdb"
    with duckdb.connect(str(path)) as con:
        con.from_arrow(tables()[1][1]).create("leaderboard")
    raw = path.read_bytes()
    (tmp_path / "published.duckdb.wal").write_bytes(b"")
    with pytest.raises(RuntimeError, match=r"published\.duckdb\.wal: DuckDB left a write-ahead"):
        dl._reproducible(path)
    assert path.read_bytes() == raw


@pytest.mark.skipif(cached_query_engine(WEB_CACHE) is None,
                    reason=f"DuckDB-Wasm is not in {WEB_CACHE}: run `cultivar "
                           "fetch-query-engine` from the checkout (needs npm)")
def test_two_builds_with_the_query_page_have_one_data_version(tmp_path, hostile_store_copy,
                                                              shared_site_caches):
    """The ``site`` asset's data version (:attr:`SiteSummary.digest`) of two builds of one
    store with the Query page and the DuckDB download is one value, and so are both DuckDB
    files' bytes."""
    store = hostile_store_copy(tmp_path)
    summaries = [build_site(store, tmp_path / name, query_page="cached", web_cache=WEB_CACHE,
                            include_database=True) for name in ("first", "second")]
    assert all(summary.notes == () for summary in summaries)
    for rel in (QUERY_FILE, DOWNLOAD_FILE):
        first, second = (tmp_path / name / rel for name in ("first", "second"))
        assert first.read_bytes() == second.read_bytes(), rel
    assert summaries[0].digest == summaries[1].digest == folder_digest(tmp_path / "first")
