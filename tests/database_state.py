"""What a database file holds as data, for tests that compare two files (the fault-injection
test, the migration tests): every raw table's rows, volatile columns left out."""

from __future__ import annotations

from pathlib import Path

import duckdb

# values that depend on when or how fast a run went, not on what it computed
VOLATILE = {"loaded_at", "finished_at", "seconds", "ingested_at", "created_at", "computed_at",
            "n_generated",
            "n_cached"}
# how the file was set up and how many writes it has seen: not data
NOT_DATA = ("schema_state", "write_state", "schema_version")


def state(path: Path) -> dict[str, list[tuple]]:
    """Every raw table's rows (volatile columns left out), sorted; ``raw.schema_state``,
    ``raw.schema_version`` (which scripts and versions set the file up) and ``raw.write_state``
    (how many writes it has seen) are not data and are left out."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'raw' ORDER BY 1"
        ).fetchall() if r[0] not in NOT_DATA]
        result = {}
        for table in tables:
            columns = [r[0] for r in con.execute(f"DESCRIBE raw.{table}").fetchall()
                       if r[0] not in VOLATILE]
            rows = con.execute(f"SELECT {', '.join(columns)} FROM raw.{table}").fetchall()
            result[table] = sorted(rows, key=repr)
        return result
    finally:
        con.close()
