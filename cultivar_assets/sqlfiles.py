"""The project's SQL, read from ``sql/*.sql``: named statements and whole scripts.

Every SQL statement the project runs lives in ``sql/``. ``schema.sql``, ``views.sql`` and the
migrations in ``sql/migrations/`` are scripts applied as a whole (DuckDB); every other file of
``sql/`` holds named blocks, each starting with a line ``-- name: <name>`` and running to the
next such line. Names are unique across all files.
Used by the DuckDB store and by the SQLite translation cache; imports nothing of the project
but the path lookup.
"""

from __future__ import annotations

import re
from functools import cache

from cultivar_assets.paths import resource_dir

SCRIPTS = ("schema.sql", "views.sql")
_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


class SQLFileError(LookupError):
    """A named statement is missing or defined twice."""


def parse_named(text: str, source: str) -> dict[str, str]:
    """``-- name: <name>`` blocks of a SQL file -> their SQL text."""
    parts = _NAME_LINE.split(text)
    named: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in named:
            raise SQLFileError(f"{source}: query {name!r} is defined twice")
        named[name] = body.strip()
    return named


@cache
def named_statements() -> dict[str, str]:
    """Every named block of every ``sql/*.sql`` file except the scripts."""
    named: dict[str, str] = {}
    for path in sorted(resource_dir("sql").glob("*.sql")):
        if path.name in SCRIPTS:
            continue
        for name, text in parse_named(path.read_text(encoding="utf-8"), path.name).items():
            if name in named:
                raise SQLFileError(f"{path.name}: query {name!r} is defined twice")
            named[name] = text
    return named


def statement_text(name: str) -> str:
    """The SQL of a named block of ``sql/*.sql``; an unknown name is an SQLFileError."""
    try:
        return named_statements()[name]
    except KeyError:
        raise SQLFileError(f"no SQL statement named {name!r} in sql/*.sql") from None


@cache
def script(name: str) -> str:
    """A whole SQL script (``schema.sql``, ``views.sql``, ``migrations/NNNN_<what>.sql``)."""
    return (resource_dir("sql") / name).read_text(encoding="utf-8")
