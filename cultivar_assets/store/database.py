"""The DuckDB database file: schema, public views and named statements from ``sql/*.sql``.

DuckDB allows one writing process per file, and a reader cannot open a file that another
process is writing. So :meth:`Store.write` opens the file (retrying with backoff for up to
``lock_timeout`` seconds while DuckDB answers with its lock error), applies its blocks (each a
:class:`WriteBlock`: a named block of ``writes.sql``) in one transaction, all or none, appends its
write generation and :func:`writer_id` to ``raw.write_log`` in the same transaction, and closes
the file. Files are written in the storage format :data:`STORAGE_VERSION`, which the standalone
``duckdb`` CLI 1.5.x reads.

Every file has a schema version (:mod:`cultivar_assets.store.migrations`). A write connection
sets the file up in one transaction unless ``raw.schema_state`` already holds the sha256 of
``schema.sql`` and the rendered ``views.sql`` (:func:`views_script`): ``schema.sql`` for a new
file, the migrations since its version for an older one. A file of a newer version is refused;
a read-only connection has an older file migrated first. Several writers and a full disk:
docs/writers-and-disk-full.md; versions and migrations: docs/database-migrations.md.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import re
import socket
import struct
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import pyarrow as pa

from cultivar_assets.files import disk_full_error, is_disk_full
from cultivar_assets.metrics.registry import BLEU, PAPER_METRICS, column_key
from cultivar_assets.sqlfiles import script, statement_text
from cultivar_assets.store import migrations
from cultivar_assets.store.migrations import SCHEMA_VERSION, MigrationFailed

STORAGE_VERSION = "v1.5.0"
_RESERVED_STEMS = {"raw", "main", "system", "temp", "memory"}
# DuckDB's words for "another process holds the file's lock" (its IOException says nothing more
# specific); the holder's PID follows in parentheses
_LOCK_CONFLICT = re.compile(r"Could not set lock on file|Conflicting lock is held")
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


WRITE_LOG_KEPT = 100_000  # the most recent writes raw.write_log keeps
_WRITER_TOKEN = uuid.uuid4().hex[:12]  # this process's, for writer_id


def _roll_back(con, error: BaseException) -> None:
    """Roll back after ``error``; what the rollback itself says is added to ``error``."""
    try:
        con.rollback()
    except duckdb.Error as rollback_error:  # a failed commit already rolled back
        error.add_note(f"(the rollback then said: {rollback_error})")


def writer_id() -> str:
    """The writer this process's writes are logged as: ``<host>:<pid>:<token>``."""
    return f"{socket.gethostname()}:{os.getpid()}:{_WRITER_TOKEN}"


class StoreError(RuntimeError):
    """The database cannot be used as asked."""


# the statements a read-only query may hold (DuckDB's classification): DESCRIBE, SHOW,
# SUMMARIZE and FROM-first queries are SELECTs to its parser
READING_STATEMENTS = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})


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
def views_script() -> str:
    """``views.sql`` rendered: a Jinja template over the paper's metrics
    (:data:`cultivar_assets.metrics.registry.PAPER_METRICS`), which its wide views pivot
    (``paper_metrics``: name and column key of each, in order; ``bleu``: the one the leaderboard
    is ranked and sorted by; ``sides``: the quantities of ``raw.metric_values``)."""
    def metric(name: str) -> dict[str, str]:
        return {"name": name, "key": column_key(name)}

    template = jinja2.Template(script("views.sql"), undefined=jinja2.StrictUndefined,
                               keep_trailing_newline=True)
    return template.render(paper_metrics=[metric(m) for m in PAPER_METRICS], bleu=metric(BLEU),
                           sides=("flores", "cultivar", "delta"))


@cache
def _schema_digest() -> str:
    """sha256 of ``schema.sql`` and the rendered ``views.sql`` (:func:`views_script`; what
    ``raw.schema_state`` records)."""
    both = script("schema.sql") + "\0" + views_script()
    return hashlib.sha256(both.encode("utf-8")).hexdigest()


def _rebuild_hint(path: Path) -> str:
    return (f"To rebuild it, run `cultivar run` (or `cultivar demo`) with another database file "
            f"(--database, or `database:` in the settings file), or delete {path} and run the "
            "pipeline again; a model whose outputs the translation cache holds is not run "
            "again.")


def _version_of(con: duckdb.DuckDBPyConnection, path: Path) -> int | None:
    """The file's schema version (None: a new file); a newer one than this release's, or a
    version table without a version, is a :class:`StoreError`."""
    try:
        version = migrations.stored_version(con)
    except MigrationFailed as failure:
        raise StoreError(f"cannot use the database {path}: {failure.reason}. "
                         f"{_rebuild_hint(path)}") from None
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"the database {path} has schema version {version}, newer than the version "
            f"{SCHEMA_VERSION} of this release: a newer release of Cultivar wrote it, and this "
            "one does not downgrade it (the file was not changed). Open it with that release, "
            f"or use another database file with this one. {_rebuild_hint(path)}")
    return version


def _ensure_schema(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Set the file up unless it already is, for these scripts (same digest): see the module
    docstring."""
    digest = _schema_digest()
    try:
        stored = _execute(con, "get_schema_digest", {})
    except duckdb.CatalogException:  # a new file, or one set up before the digest was kept
        stored = []
    if stored == [(digest,)]:
        return
    version = _version_of(con, path)
    con.begin()
    try:
        if version is None:
            migrations.create(con)
        else:
            migrations.migrate(con, version)
        con.execute(views_script())
        _execute(con, "set_schema_digest", {"digest": digest})
        con.commit()
    except BaseException as error:
        _roll_back(con, error)
        if isinstance(error, MigrationFailed):
            where = (f"migration {error.migration.name} failed" if error.migration
                     else "after its migrations")
            raise StoreError(
                f"cannot bring the database {path} from schema version {version} to "
                f"{SCHEMA_VERSION}: {where}: {error.reason}. The file was left as it was. "
                f"{_rebuild_hint(path)}") from error
        raise


@dataclass
class WriteBlock:
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

    def concurrent(self) -> Reader:
        """A reader on its own cursor of the same database (the same snapshot rules as a new
        read-only connection), for a query run in another thread beside this one's."""
        return Reader(self.con.cursor())

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

    def register(self, name: str, table: pa.Table) -> None:
        """Make ``table`` readable as ``name`` by this reader's queries (DuckDB scans the Arrow
        table in place; for rows already read, so that a query does not evaluate their view
        again)."""
        self.con.register(name, table)

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
        if self.path.is_dir():  # refused before anything is done on the way to opening it
            raise StoreError(f"database {self.path} is a directory, not a DuckDB file; give a "
                             "file's path")
        if self.path.stem.lower() in _RESERVED_STEMS:
            raise StoreError(
                f"database file name {self.path.name!r} clashes with a schema name "
                f"({', '.join(sorted(_RESERVED_STEMS))}); choose another name"
            )

    def _open(self, read_only: bool, config: dict) -> duckdb.DuckDBPyConnection:
        """Connect, retrying (with backoff and jitter) for as long as DuckDB's own error says
        that another process holds the file's lock, up to ``lock_timeout`` seconds. The error
        itself decides: asking the operating system who holds the lock comes too late when the
        holder was a short read-only connection, already closed."""
        started = time.monotonic()
        delay = 0.02
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only, config=config)
            except duckdb.IOException as error:
                text = str(error)
                pid = _LOCK_PID.search(text)
                holder = int(pid[1]) if pid else lock_holder(self.path)
                if not _LOCK_CONFLICT.search(text) and holder is None:
                    # not a lock conflict: a damaged file, permissions, a full disk, ...
                    if is_disk_full(error):
                        raise disk_full_error(self.path, "the database was not opened, and "
                                              "nothing was written to it", error) from error
                    raise StoreError(f"cannot open the database {self.path}: {error}") from error
                waited = time.monotonic() - started
                if waited + delay > self.lock_timeout:
                    who = f"process {holder}" if holder else "another process"
                    raise StoreError(
                        f"cannot open the database {self.path}: {who} holds its lock "
                        f"(waited {waited:.1f} s of lock_timeout {self.lock_timeout:g} s). DuckDB "
                        "allows one writing process per file: another run, a DuckDB shell or a "
                        "notebook may hold it."
                    ) from error
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 1.5, 1.0)

    @contextmanager
    def connect(self, read_only: bool = False, other_files: bool = True
                ) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open the file (creating schema and views when writing) and close it afterwards. A
        read-only connection without ``other_files`` can read or write no file but the database
        (DuckDB's ``enable_external_access`` off: no ``COPY … TO``, ``EXPORT DATABASE``,
        ``ATTACH``, ``read_csv``, profiling output, extension loading)."""
        if read_only and not self.path.exists():
            raise StoreError(f"database {self.path} does not exist yet; run the pipeline first")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        config = {} if read_only else {"storage_compatibility_version": STORAGE_VERSION}
        if read_only and not other_files:
            config["enable_external_access"] = False
        con = self._open(read_only, config)
        try:
            if not read_only:
                _ensure_schema(con, self.path)
            else:
                version = _version_of(con, self.path)
                if version is not None and version < SCHEMA_VERSION:  # migrate, then read
                    con.close()
                    with self.connect():
                        pass
                    con = self._open(read_only, config)
            yield con
        finally:
            con.close()

    def write(self, blocks: Sequence[WriteBlock]) -> int:
        """Run ``blocks`` in one transaction: all of them take effect, or none; returns the
        file's new write generation, logged with :func:`writer_id` (module docstring). When the
        write fails, the error raised is its first one (DuckDB's rollback after a failed commit
        only adds "no transaction is active"); a full disk raises
        :class:`~cultivar_assets.files.DiskFullError`."""
        with self.connect() as con:
            con.begin()
            try:
                state = _execute(con, "read_write_state", {})
                generation = state[0][0] if state else 0
                _execute(con, "log_write", {"generation": generation + 1, "writer": writer_id(),
                                            "kept": WRITE_LOG_KEPT})
                for block in blocks:
                    if block.rows is not None:
                        table = block.rows if isinstance(block.rows, pa.Table) else (
                            pa.Table.from_pylist(list(block.rows)))
                        if table.num_rows == 0:
                            continue  # an insert of nothing
                        con.register("staging", table)
                        _execute(con, block.name, block.params)  # on error: rollback, then close
                        con.unregister("staging")
                    else:
                        _execute(con, block.name, block.params)
                con.commit()
            except BaseException as error:
                _roll_back(con, error)
                if is_disk_full(error):
                    raise disk_full_error(self.path, "this write was not applied and the "
                                          "database holds what it held before it", error
                                          ) from error
                raise
        return generation + 1

    def writers_since(self, generation: int) -> list[str]:
        """The writers of the writes after ``generation``, in order (one entry per write)."""
        return [row["writer"] for row in self.query("writes_since", generation=generation)]

    def generation(self) -> int:
        """The file's write generation now (0: no file, or never written by this release)."""
        if not self.path.exists():
            return 0
        try:
            rows = self.query("read_write_state")
        except duckdb.CatalogException:  # a file that holds no tables yet
            return 0
        return rows[0]["generation"] if rows else 0

    def read_only_sql(self, sql: str) -> tuple[list[str], list[tuple]]:
        """The columns and rows of a user's ``sql`` (``cultivar query``), run so that nothing is
        written: every statement must be of a reading kind (:data:`READING_STATEMENTS`, as
        DuckDB's own parser classifies it; anything else is refused before anything runs), and
        the connection is read-only and reaches no other file (:meth:`connect` without
        ``other_files``; an ``EXPLAIN ANALYZE`` of a ``COPY … TO`` is stopped there)."""
        statements = duckdb.extract_statements(sql)
        if not statements:
            raise StoreError("the SQL holds no statement")
        for number, statement in enumerate(statements, 1):
            if statement.type not in READING_STATEMENTS:
                kind = statement.type.name
                which = f"statement {number}" if len(statements) > 1 else "the statement"
                raise StoreError(
                    f"{which} is {kind} ({' '.join(statement.query.split())[:60]!r}): the query "
                    "is read-only; only reading statements run (SELECT, WITH, FROM, DESCRIBE, "
                    "SHOW, SUMMARIZE, EXPLAIN)")
        with self.connect(read_only=True, other_files=False) as con:
            try:
                cursor = con.execute(sql)
            except duckdb.PermissionException as error:
                raise StoreError(f"{' '.join(str(error).split())} (a query reads the database "
                                 "only, and writes no file)") from None
            columns = [d[0] for d in cursor.description] if cursor.description else []
            return columns, cursor.fetchall()

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
