"""The DuckDB database file: schema, public views and named statements from ``sql/*.sql``.

DuckDB allows one writing process per file, and a reader cannot open a file that another
process is writing. So every step opens the file (waiting, with backoff, up to ``lock_timeout``
seconds while another process holds it), does its work in one transaction and closes it:
``Store.write`` either applies all of its steps or none (a failed write leaves the database as it
was). Files are written in a storage format that DuckDB 1.5 can also read
(``storage_compatibility_version``), so the standalone ``duckdb`` CLI 1.5.x opens them.

A write connection applies ``schema.sql`` and ``views.sql`` only when the file was not already
set up with these very scripts: ``raw.schema_state`` keeps the sha256 of both texts, so an
unchanged file costs one small query per connection instead of re-creating every view (a
pipeline run opens the file dozens of times).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from cultivar_assets.paths import resource_dir

STORAGE_VERSION = "v1.5.0"
_RESERVED_STEMS = {"raw", "main", "system", "temp", "memory"}
_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


class StoreError(RuntimeError):
    """The database cannot be used as asked."""


def _parse_named(text: str, source: str) -> dict[str, str]:
    """``-- name: <name>`` blocks of a SQL file -> their SQL text."""
    parts = _NAME_LINE.split(text)
    named: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in named:
            raise StoreError(f"{source}: query {name!r} is defined twice")
        named[name] = body.strip()
    return named


@cache
def named_statements() -> dict[str, str]:
    sql = resource_dir("sql")
    named: dict[str, str] = {}
    for file in ("writes.sql", "reads.sql", "site.sql", "cache.sql"):
        for name, text in _parse_named((sql / file).read_text(encoding="utf-8"), file).items():
            if name in named:
                raise StoreError(f"{file}: query {name!r} is defined twice")
            named[name] = text
    return named


def statement_text(name: str) -> str:
    """The SQL of a named block of ``sql/*.sql``; an unknown name is a StoreError."""
    try:
        return named_statements()[name]
    except KeyError:
        raise StoreError(f"no SQL statement named {name!r} in sql/*.sql") from None


@cache
def _script(name: str) -> str:
    return (resource_dir("sql") / name).read_text(encoding="utf-8")


@cache
def _schema_digest() -> str:
    """sha256 of ``schema.sql`` and ``views.sql`` (what ``raw.schema_state`` records)."""
    both = _script("schema.sql") + "\0" + _script("views.sql")
    return hashlib.sha256(both.encode("utf-8")).hexdigest()


def _ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply ``schema.sql`` and ``views.sql`` unless the file already has them (same digest)."""
    digest = _schema_digest()
    try:
        stored = _execute(con, "get_schema_digest", {})
    except duckdb.CatalogException:  # a new file, or one set up before the digest was kept
        stored = []
    if stored != [(digest,)]:
        con.execute(_script("schema.sql"))
        con.execute(_script("views.sql"))
        _execute(con, "set_schema_digest", {"digest": digest})


@dataclass
class Step:
    """One named block of ``writes.sql`` with its parameters and optional staging rows."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    rows: pa.Table | Sequence[dict[str, Any]] | None = None


def _run(con: duckdb.DuckDBPyConnection, statement, params: dict[str, Any]):
    used = {k: params[k] for k in statement.named_parameters}
    return con.execute(statement, used) if used else con.execute(statement)


def _execute(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list:
    result: list = []
    for statement in duckdb.extract_statements(statement_text(name)):
        result = _run(con, statement, params).fetchall()
    return result


class Store:
    """A Cultivar DuckDB database at ``path``."""

    def __init__(self, path: str | Path, lock_timeout: float = 120.0) -> None:
        self.path = Path(path).expanduser().resolve()
        self.lock_timeout = lock_timeout
        if self.path.stem.lower() in _RESERVED_STEMS:
            raise StoreError(
                f"database file name {self.path.name!r} clashes with a schema name "
                f"({', '.join(sorted(_RESERVED_STEMS))}); choose another name"
            )

    def _open(self, read_only: bool, config: dict) -> duckdb.DuckDBPyConnection:
        """Connect, waiting (with backoff) while another process holds the file's lock."""
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.1
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only, config=config)
            except duckdb.IOException as error:
                locked = "lock" in str(error).lower()
                if not locked or time.monotonic() + delay > deadline:
                    raise StoreError(
                        f"cannot open {self.path}: {error}. DuckDB allows one writing process "
                        "per file (another run, a DuckDB shell or a notebook may hold it)."
                    ) from error
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    @contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open the file (creating schema and views when writing) and close it afterwards."""
        if read_only and not self.path.exists():
            raise StoreError(f"database {self.path} does not exist yet; run the pipeline first")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        config = {} if read_only else {"storage_compatibility_version": STORAGE_VERSION}
        con = self._open(read_only, config)
        try:
            if not read_only:
                _ensure_schema(con)
            yield con
        finally:
            con.close()

    def write(self, steps: Sequence[Step]) -> None:
        """Run ``steps`` in one transaction: all of them take effect, or none."""
        with self.connect() as con:
            con.begin()
            try:
                for step in steps:
                    if step.rows is not None:
                        table = step.rows if isinstance(step.rows, pa.Table) else (
                            pa.Table.from_pylist(list(step.rows)))
                        if table.num_rows == 0:
                            continue  # an insert of nothing
                        con.register("staging", table)
                        _execute(con, step.name, step.params)  # on error: rollback, then close
                        con.unregister("staging")
                    else:
                        _execute(con, step.name, step.params)
                con.commit()
            except Exception:
                con.rollback()
                raise

    def stream(self, name: str, batch_rows: int = 20_000,
               **params: Any) -> Iterator[dict[str, Any]]:
        """Rows of a named query, fetched in batches (for results too large to hold at once)."""
        with self.connect(read_only=True) as con:
            cursor = _run(con, duckdb.extract_statements(statement_text(name))[-1], params)
            columns = [d[0] for d in cursor.description]
            while rows := cursor.fetchmany(batch_rows):
                for row in rows:
                    yield dict(zip(columns, row, strict=True))

    def query(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of a named query from ``sql/*.sql`` as dicts (read-only connection)."""
        return list(self.stream(name, **params))
