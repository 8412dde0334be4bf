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

Step records (``raw.step_records``, :mod:`cultivar_assets.store.step_records`) say which steps of
a pipeline run are unchanged since they last ran. Only the runner's own steps may leave them in
place: a write made inside :func:`recording_steps` (the runner wraps its whole run in it) keeps
them, and every other write (``cultivar build``, a Dagster run started from the UI, a script)
empties the table in the same transaction, so that no step is ever taken as unchanged after
something else wrote to the file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from cultivar_assets.sqlfiles import script, statement_text

STORAGE_VERSION = "v1.5.0"
_RESERVED_STEMS = {"raw", "main", "system", "temp", "memory"}
_RECORDING = [0]  # open recording_steps() blocks in this process


@contextmanager
def recording_steps() -> Iterator[None]:
    """Within this block, this process's writes are steps of a pipeline run that keeps the step
    records itself: they leave ``raw.step_records`` as it is (see the module docstring)."""
    _RECORDING[0] += 1
    try:
        yield
    finally:
        _RECORDING[0] -= 1


class StoreError(RuntimeError):
    """The database cannot be used as asked."""


def lock_holder(path: Path) -> int | None:
    """The PID of another process holding a lock on ``path``, or None (not locked, no file).

    DuckDB locks its file with POSIX record locks (``fcntl``); its Python API raises the same
    ``IOException`` for a lock conflict as for a damaged file, so the conflict is asked of the
    operating system (``F_GETLK``, which tests without acquiring). Only called after DuckDB
    failed to open the file, when this process holds no connection to it: closing the probe's
    descriptor therefore cannot release a lock of this process.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        if sys.platform == "darwin":  # struct flock: start, len, pid, type, whence
            request = struct.pack("qqihh", 0, 0, 0, fcntl.F_WRLCK, os.SEEK_SET)
            _, _, pid, l_type, _ = struct.unpack("qqihh", fcntl.fcntl(fd, fcntl.F_GETLK, request))
        else:  # Linux: type, whence, start, len, pid
            request = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            l_type, _, _, _, pid = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK,
                                                                       request))
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if l_type == fcntl.F_UNLCK else pid


@cache
def _schema_digest() -> str:
    """sha256 of ``schema.sql`` and ``views.sql`` (what ``raw.schema_state`` records)."""
    both = script("schema.sql") + "\0" + script("views.sql")
    return hashlib.sha256(both.encode("utf-8")).hexdigest()


def _ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply ``schema.sql`` and ``views.sql`` unless the file already has them (same digest)."""
    digest = _schema_digest()
    try:
        stored = _execute(con, "get_schema_digest", {})
    except duckdb.CatalogException:  # a new file, or one set up before the digest was kept
        stored = []
    if stored != [(digest,)]:
        con.execute(script("schema.sql"))
        con.execute(script("views.sql"))
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


class Reader:
    """Named queries on one open read-only connection (see :meth:`Store.reader`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        for statement in duckdb.extract_statements(statement_text("reader_session")):
            con.execute(statement)

    def _cursor(self, name: str, params: dict[str, Any]):
        return _run(self.con, duckdb.extract_statements(statement_text(name))[-1], params)

    def rows(self, name: str, **params: Any) -> list[dict[str, Any]]:
        cursor = self._cursor(name, params)
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    def _relation(self, name: str, params: dict[str, Any]) -> duckdb.DuckDBPyRelation:
        statement = duckdb.extract_statements(statement_text(name))[-1]
        used = {k: params[k] for k in statement.named_parameters}
        return self.con.sql(statement.query, params=used or None)

    def arrow(self, name: str, **params: Any) -> pa.Table:
        return self._relation(name, params).to_arrow_table()

    def batches(self, name: str, batch_rows: int = 100_000,
                **params: Any) -> Iterator[pa.RecordBatch]:
        """The result as Arrow record batches (for results too large to hold at once)."""
        yield from self._relation(name, params).to_arrow_reader(batch_rows)


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
                holder = lock_holder(self.path)
                if holder is None:  # not a lock conflict: a damaged file, permissions, ...
                    raise StoreError(f"cannot open the database {self.path}: {error}") from error
                if time.monotonic() + delay > deadline:
                    raise StoreError(
                        f"cannot open the database {self.path}: process {holder} holds its lock "
                        f"(waited {self.lock_timeout:g} s). DuckDB allows one writing process per "
                        "file: another run, a DuckDB shell or a notebook may hold it."
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
        """Run ``steps`` in one transaction: all of them take effect, or none. Outside
        :func:`recording_steps`, the transaction also forgets every step record."""
        if not _RECORDING[0]:
            steps = [Step("forget_step_records"), *steps]
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

    @contextmanager
    def reader(self) -> Iterator[Reader]:
        """One read-only connection for many named queries (cheaper than :meth:`query` each)."""
        with self.connect(read_only=True) as con:
            yield Reader(con)

    def stream(self, name: str, batch_rows: int = 20_000,
               **params: Any) -> Iterator[dict[str, Any]]:
        """Rows of a named query, fetched in batches (for results too large to hold at once)."""
        with self.connect(read_only=True) as con:
            cursor = _run(con, duckdb.extract_statements(statement_text(name))[-1], params)
            columns = [d[0] for d in cursor.description]
            while rows := cursor.fetchmany(batch_rows):
                for row in rows:
                    yield dict(zip(columns, row, strict=True))

    def arrow(self, name: str, **params: Any) -> pa.Table:
        """A named query's result as one Arrow table (for large reads that are used as arrays,
        such as every per-segment statistic)."""
        with self.connect(read_only=True) as con:
            statement = duckdb.extract_statements(statement_text(name))[-1]
            used = {k: params[k] for k in statement.named_parameters}
            return con.sql(statement.query, params=used or None).to_arrow_table()

    def query(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of a named query from ``sql/*.sql`` as dicts (read-only connection)."""
        return list(self.stream(name, **params))
