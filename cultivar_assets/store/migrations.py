"""Schema versions: which layout a database file has, and the migrations to this release's.

Definitions (ours):

- :data:`SCHEMA_VERSION` is the version of the layout this release writes and reads;
  ``sql/schema.sql`` is that layout, each table whole, applied once to a new file.
- A file's *schema version* is the largest ``version`` in ``raw.schema_version`` (one row per
  version the file went through). A file with tables in schema ``raw`` but no
  ``raw.schema_version`` was set up before versions were kept: version 0. A file without any
  table in ``raw`` is *new* (:func:`stored_version` answers None).
- Migration *k* is ``sql/migrations/NNNN_<what>.sql`` with NNNN = *k*: a script that brings a
  file from version *k* - 1 to *k*. The migrations are numbered 1, 2, ... without gaps, and the
  last is :data:`SCHEMA_VERSION` (:func:`migrations` refuses anything else).
- A file's *layout* is what ``duckdb_columns()`` and ``duckdb_constraints()`` say of its ``raw``
  tables: per table, its columns in order with their types, nullability and defaults, and its
  constraints (:func:`layout`). After its migrations, a file's layout must equal the layout
  that ``schema.sql`` gives a new file (:func:`expected_layout`); our choice: a file that
  differs (a table the migrations do not know, a column of another type, ...) is not kept
  half-migrated but refused (:class:`MigrationFailed`; the store rolls back and says how to
  rebuild it).

The store (:mod:`cultivar_assets.store.database`) decides when to migrate and words the errors;
this module knows nothing of the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import duckdb

from cultivar_assets.paths import resource_dir
from cultivar_assets.sqlfiles import script, statement_text

SCHEMA_VERSION = 4
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class MigrationFileError(RuntimeError):
    """``sql/migrations/`` does not hold migrations 1 to :data:`SCHEMA_VERSION` (a release
    that was packaged wrongly, or a migration added without bumping the version)."""


@dataclass(frozen=True)
class Migration:
    """One file of ``sql/migrations/``: brings a file from ``version - 1`` to ``version``."""

    version: int
    name: str  # the file name, as raw.schema_version records it

    @property
    def text(self) -> str:
        return script(f"migrations/{self.name}")


class MigrationFailed(Exception):
    """A file could not be brought to :data:`SCHEMA_VERSION`: ``migration`` failed (None: the
    migrations ran, but the layout differs from ``schema.sql``'s); ``reason`` says how."""

    def __init__(self, migration: Migration | None, reason: str) -> None:
        super().__init__(reason)
        self.migration = migration
        self.reason = reason


@dataclass(frozen=True)
class Layout:
    """The layout of a file's ``raw`` tables (module docstring)."""

    columns: dict[str, tuple[tuple, ...]]  # table -> (name, type, nullable, default) in order
    constraints: dict[str, frozenset[tuple]]  # table -> {(type, text)}


@cache
def migrations() -> tuple[Migration, ...]:
    """Every migration, in order; :class:`MigrationFileError` unless they are numbered 1 to
    :data:`SCHEMA_VERSION` without gaps, each named ``NNNN_<what>.sql``."""
    folder = Path(resource_dir("sql")) / "migrations"
    found = []
    for path in sorted(folder.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationFileError(f"{path}: a migration is named NNNN_<what>.sql "
                                     "(four digits, lower-case words joined by _)")
        found.append(Migration(int(match[1]), path.name))
    versions = [m.version for m in found]
    if versions != list(range(1, SCHEMA_VERSION + 1)):
        raise MigrationFileError(
            f"{folder} holds migrations {versions or 'none'}; schema version {SCHEMA_VERSION} "
            f"needs exactly 1 to {SCHEMA_VERSION}, one file each")
    return tuple(found)


def stored_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The file's schema version; 0: set up before versions were kept; None: a new file."""
    try:
        ((version,),) = con.execute(statement_text("read_schema_version")).fetchall()
    except duckdb.CatalogException:  # no raw.schema_version
        ((n_tables,),) = con.execute(statement_text("count_raw_tables")).fetchall()
        return 0 if n_tables else None
    if version is None:  # the table without a row: not a file this code made
        raise MigrationFailed(None, "raw.schema_version holds no version")
    return version


def record_version(con: duckdb.DuckDBPyConnection, version: int, applied_by: str) -> None:
    """Note in the file that it is now at ``version``, set up by ``applied_by``."""
    con.execute(statement_text("record_schema_version"),
                {"version": version, "applied_at": datetime.now(UTC).replace(tzinfo=None),
                 "applied_by": applied_by})


def create(con: duckdb.DuckDBPyConnection) -> None:
    """Set up a new file: ``schema.sql``, at :data:`SCHEMA_VERSION`."""
    con.execute(script("schema.sql"))
    record_version(con, SCHEMA_VERSION, "schema.sql")


def migrate(con: duckdb.DuckDBPyConnection, version: int) -> list[Migration]:
    """Bring a file from ``version`` to :data:`SCHEMA_VERSION` (inside the caller's
    transaction): each migration after ``version`` in turn, each recorded; then the layout is
    compared with a new file's. Returns the migrations applied; raises :class:`MigrationFailed`
    (the caller rolls back)."""
    pending = list(migrations()[version:])
    for migration in pending:
        try:
            con.execute(migration.text)
        except duckdb.Error as error:
            raise MigrationFailed(migration, str(error).splitlines()[0]) from error
        record_version(con, migration.version, migration.name)
    differences = layout_differences(layout(con), expected_layout())
    if differences:
        shown = "; ".join(differences[:5]) + (
            f"; and {len(differences) - 5} more" if len(differences) > 5 else "")
        raise MigrationFailed(None, f"its tables differ from those of schema version "
                                    f"{SCHEMA_VERSION} (sql/schema.sql): {shown}")
    return pending


def layout(con: duckdb.DuckDBPyConnection) -> Layout:
    """The layout of the ``raw`` tables of the database ``con`` is connected to."""
    columns: dict[str, list[tuple]] = {}
    for table, *column in con.execute(statement_text("raw_columns")).fetchall():
        columns.setdefault(table, []).append(tuple(column))
    constraints: dict[str, set[tuple]] = {}
    for table, kind, text in con.execute(statement_text("raw_constraints")).fetchall():
        constraints.setdefault(table, set()).add((kind, text))
    return Layout({t: tuple(c) for t, c in columns.items()},
                  {t: frozenset(c) for t, c in constraints.items()})


@cache
def expected_layout() -> Layout:
    """The layout ``schema.sql`` gives a new file (built in memory, once per process)."""
    con = duckdb.connect(":memory:")
    try:
        create(con)
        return layout(con)
    finally:
        con.close()


def layout_differences(actual: Layout, expected: Layout) -> list[str]:
    """What differs between two layouts, one phrase per difference (empty: equal)."""
    said = [f"raw.{t} is missing" for t in sorted(expected.columns.keys() - actual.columns.keys())]
    said += [f"raw.{t} is not a table of this layout"
             for t in sorted(actual.columns.keys() - expected.columns.keys())]
    for table in sorted(actual.columns.keys() & expected.columns.keys()):
        have = {c[0]: c for c in actual.columns[table]}
        want = {c[0]: c for c in expected.columns[table]}
        if missing := [n for n in want if n not in have]:
            said.append(f"raw.{table} lacks column(s) {', '.join(missing)}")
        if extra := [n for n in have if n not in want]:
            said.append(f"raw.{table} has column(s) {', '.join(extra)} that this layout has not")
        for name in (n for n in want if n in have and have[n] != want[n]):
            said.append(f"raw.{table}.{name} is {_column(have[name])}, "
                        f"expected {_column(want[name])}")
        if (not missing and not extra and set(have.values()) == set(want.values())
                and actual.columns[table] != expected.columns[table]):
            said.append(f"raw.{table} has its columns in another order")
        if actual.constraints.get(table) != expected.constraints.get(table):
            said.append(f"raw.{table} has other constraints")
    return said


def _column(column: tuple) -> str:
    _, kind, nullable, default = column
    return (kind + ("" if nullable else " NOT NULL")
            + ("" if default is None else f" DEFAULT {default}"))
