"""Searching everything a run wrote for a secret, in every form a reader could recover it from.

:func:`leak_forms` lists what counts as the secret leaking: the raw value, its base64 (standard
and URL-safe, with and without padding, and the part of a longer base64 text that encodes it at
each of the three byte alignments), its percent-encodings, and every 12-character window of the
raw value (a piece that long is a leak even when the rest was cut off or redacted).

:func:`file_texts` gives the texts a file holds: its bytes as text, and decoded where it is a
container: gzip (``.gz``, also inside the site's shards), the site's shards
(``Cultivar.shard("key", "<base64 of gzip JSON>")``), Parquet, Arrow IPC files and streams,
DuckDB (also gzip-compressed) and SQLite databases (every value of every table).
:func:`assert_secret_nowhere` checks every file under the given folders and the printed output,
and returns how many files it read and how many of them it decoded, so a test can show that the
search reached them.
"""

from __future__ import annotations

import base64
import gzip
import io
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

WINDOW = 12
_SHARD = re.compile(rb'Cultivar\.shard\("[^"]*",\s*"([A-Za-z0-9+/=]+)"\)')


def base64_cores(secret: str) -> set[str]:
    """The base64 characters that encode ``secret`` alone, after 0, 1 or 2 other bytes, in both
    alphabets (computed here independently of the code under test)."""
    data = secret.encode()
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + data).decode()
        first = 4 if shift else 0
        last = (shift + len(data)) // 3 * 4
        cores.add(encoded[first:last])
    return cores | {c.replace("+", "-").replace("/", "_") for c in cores}


def leak_forms(secret: str) -> dict[str, str]:
    """Every form of ``secret`` whose presence is a leak, by name."""
    data = secret.encode()
    forms = {
        "raw": secret,
        "base64": base64.b64encode(data).decode(),
        "base64 unpadded": base64.b64encode(data).decode().rstrip("="),
        "base64 url-safe": base64.urlsafe_b64encode(data).decode(),
        "base64 url-safe unpadded": base64.urlsafe_b64encode(data).decode().rstrip("="),
        "percent-encoded": quote(secret, safe=""),
        "percent-encoded (quote_plus)": quote_plus(secret),
    }
    for i, core in enumerate(sorted(base64_cores(secret))):
        forms[f"base64 core {i}"] = core
    for start in range(len(secret) - WINDOW + 1):
        forms[f"window {start}"] = secret[start:start + WINDOW]
    return forms


def found_forms(secret: str, text: str) -> list[str]:
    """The names of the forms of ``secret`` that ``text`` holds."""
    return [name for name, form in leak_forms(secret).items() if form in text]


def _table_texts(table) -> Iterator[str]:
    for column in table.columns:
        yield "\n".join(map(str, column.to_pylist()))


def _duckdb_texts(path: Path) -> Iterator[str]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        for schema, table in tables:
            rows = con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
            yield "\n".join(" ".join(map(str, row)) for row in rows)
    finally:
        con.close()


def _sqlite_texts(path: Path) -> Iterator[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            rows = con.execute(f'SELECT * FROM "{name}"').fetchall()
            yield "\n".join(" ".join(map(str, row)) for row in rows)
    finally:
        con.close()


def _decoded(data: bytes, path: Path, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(kind, text) for each container format ``data`` is in."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if depth > 3:
        return
    if data[:2] == b"\x1f\x8b":
        inner = gzip.decompress(data)
        yield "gzip", inner.decode("utf-8", "replace")
        yield from _decoded(inner, path, depth + 1)
    if data[:4] == b"PAR1":
        yield "parquet", "\n".join(_table_texts(pq.read_table(io.BytesIO(data))))
    if data[:6] == b"ARROW1":
        yield "arrow", "\n".join(_table_texts(pa.ipc.open_file(pa.BufferReader(data)).read_all()))
    elif data[:4] == b"\xff\xff\xff\xff" and len(data) > 8:
        table = pa.ipc.open_stream(pa.BufferReader(data)).read_all()
        yield "arrow stream", "\n".join(_table_texts(table))
    for match in _SHARD.finditer(data):  # base64 of gzip JSON
        inner = base64.b64decode(match.group(1))
        if inner[:2] == b"\x1f\x8b":
            inner = gzip.decompress(inner)
        yield "shard", inner.decode("utf-8", "replace")
    if depth == 0 and data[:16] == b"SQLite format 3\x00":
        yield "sqlite", "\n".join(_sqlite_texts(path))
    if data[8:12] == b"DUCK":
        if depth == 0:
            yield "duckdb", "\n".join(_duckdb_texts(path))
        else:  # a compressed database file (the Query page's): read from a copy on disk
            with tempfile.TemporaryDirectory() as folder:
                copy = Path(folder) / "inner.duckdb"
                copy.write_bytes(data)
                yield "duckdb", "\n".join(_duckdb_texts(copy))


def file_texts(path: Path) -> Iterator[tuple[str, str]]:
    """(kind, text) of ``path``: ``bytes`` (as UTF-8, errors replaced), then each decoding."""
    data = path.read_bytes()
    yield "bytes", data.decode("utf-8", "replace")
    yield "latin-1", data.decode("latin-1")
    yield from _decoded(data, path)


def assert_secret_nowhere(secret: str, printed: str, *roots: Path) -> dict[str, int]:
    """No form of ``secret`` (:func:`leak_forms`) is in ``printed`` or in any file under
    ``roots``, decoded as :func:`file_texts` decodes it. Returns the number of files read and of
    decodings by kind."""
    assert not found_forms(secret, printed), found_forms(secret, printed)
    counts: dict[str, int] = {"files": 0}
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            counts["files"] += 1
            for kind, text in file_texts(path):
                counts[kind] = counts.get(kind, 0) + 1
                found = found_forms(secret, text)
                assert not found, f"{path} ({kind}) holds the secret: {found}"
    return counts
