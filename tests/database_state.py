"""What a database file holds as data, for tests that compare two files (the fault-injection
test, the migration tests): every raw table's rows, volatile columns left out."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import duckdb

# values that depend on when or how fast a run went, not on what it computed
VOLATILE = {"loaded_at", "finished_at", "seconds", "ingested_at", "created_at", "computed_at",
            "n_generated",
            "n_cached"}
# how the file was set up and how many writes it has seen: not data
NOT_DATA = ("schema_state", "write_log", "schema_version")


def state(path: Path) -> dict[str, list[tuple]]:
    """Every raw table's rows (volatile columns left out), sorted; ``raw.schema_state``,
    ``raw.schema_version`` (which scripts and versions set the file up) and ``raw.write_log``
    (how many writes it has seen) are not data and are left out."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        result = {}
        for table in state_tables(con):
            columns = [r[0] for r in con.execute(f"DESCRIBE raw.{table}").fetchall()
                       if r[0] not in VOLATILE]
            rows = con.execute(f"SELECT {', '.join(columns)} FROM raw.{table}").fetchall()
            result[table] = sorted(rows, key=repr)
        return result
    finally:
        con.close()


# --- the demo database as a portable reference (tests/test_demo_cli.py) -----------------------

# The step records hold the package's code digest and run ids (they change with every edit of the
# code, by design); the run failures are empty in a successful demo; the model files record the
# digests of the storage root's files that model_results loaded (their content names the
# machine's paths), not results: the rows loaded from them are compared; the statistics' digests
# are DuckDB's hashes of rows that are compared themselves.
NOT_RESULTS = ("run_failures", "model_files", "statistics_digests")
# columns (and keys inside JSON texts) whose values are the time of a run, not what it computed
_TIMES = ("built_at", "ingested_at", "created_at", "loaded_at", "finished_at", "computed_at",
          "recorded_at")
# columns, by table, that name the library versions a run used (``transformers 5.24.0``): the
# machine's environment, not what it computed (the outputs and their fingerprints are compared;
# a localisation run's engine_version names the recording it played back, and stays)
_ENVIRONMENT = {"model_runs": ("engine_version",)}
_TIME_IN_JSON = re.compile(rf'"({"|".join(_TIMES)})": "[^"]*"')
_BUILT = re.compile(r"\bbuilt \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # the dataset's description
# public views whose rows the reference holds too (keys "view <name>"): the paper's wide tables,
# pivoted from the long-form metric values, and the long form itself
PINNED_VIEWS = ("model_locale_deltas", "leaderboard", "locale_deltas", "statistics_settings",
                "leaderboard_metrics", "statistics_metrics", "leaderboard_ranks", "table_averages")
REFERENCE = Path(__file__).parent / "fixtures" / "demo_database.json.gz"
REPOSITORY = str(Path(__file__).resolve().parents[1])  # the checkout: the demo's recorded answers


def _portable(value, home: str):
    if isinstance(value, str):
        value = value.replace(home, "<home>").replace(REPOSITORY, "<repository>")
        value = _BUILT.sub("built <time>", value)
        return _TIME_IN_JSON.sub(r'"\1": "<time>"', value)
    if isinstance(value, (list, tuple)):
        return [_portable(item, home) for item in value]
    if isinstance(value, dict):
        return {key: _portable(item, home) for key, item in value.items()}
    return value


def portable_state(path: Path, home: Path) -> dict[str, list]:
    """:func:`state` of a demo database as JSON data that another machine's run can equal: the
    results only (:data:`NOT_RESULTS` left out), the run's home folder written ``<home>`` and the
    checkout's folder ``<repository>`` (the demo's recorded answers are read from it), times
    (:data:`_TIMES`, as columns or inside JSON texts) left out, every value as JSON has it; then
    the rows of the public views :data:`PINNED_VIEWS` (keys ``view <name>``)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        columns = {table: [r[0] for r in con.execute(f"DESCRIBE raw.{table}").fetchall()
                           if r[0] not in VOLATILE] for table in state_tables(con)}
    finally:
        con.close()
    result = {}
    for table, rows in state(path).items():
        if table in NOT_RESULTS:
            continue
        keep = [i for i, column in enumerate(columns[table])
                if column not in _TIMES and column not in _ENVIRONMENT.get(table, ())]
        result[table] = sorted(
            (json.loads(json.dumps(_portable([row[i] for i in keep], str(home)), default=str))
             for row in rows), key=repr)
    con = duckdb.connect(str(path), read_only=True)
    try:
        for view in PINNED_VIEWS:  # the paper's tables as the public views give them
            kept = [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()
                    if r[0] not in VOLATILE and r[0] not in _TIMES]
            rows = con.execute(f"SELECT {', '.join(kept)} FROM {view}").fetchall()
            result[f"view {view}"] = sorted(
                (json.loads(json.dumps(_portable(list(row), str(home)), default=str))
                 for row in rows), key=repr)
    finally:
        con.close()
    return result


def state_tables(con) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'raw' ORDER BY 1"
    ).fetchall() if r[0] not in NOT_DATA]


def write_reference(state_: dict[str, list], path: Path = REFERENCE) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as handle:
        json.dump(state_, handle, ensure_ascii=False, sort_keys=True, indent=0)


def read_reference(path: Path = REFERENCE) -> dict[str, list]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def differences(actual: dict[str, list], reference: dict[str, list], limit: int = 3) -> list[str]:
    """What differs, table by table: missing or extra tables, and up to ``limit`` rows of each
    table that are only in one of the two."""
    found = []
    for table in sorted(set(actual) | set(reference)):
        if table not in actual or table not in reference:
            found.append(f"{table}: only in the {'reference' if table in reference else 'run'}")
            continue
        mine, theirs = ([repr(row) for row in rows] for rows in (actual[table], reference[table]))
        only_mine = [row for row in mine if row not in set(theirs)]
        only_theirs = [row for row in theirs if row not in set(mine)]
        if only_mine or only_theirs or len(mine) != len(theirs):
            found.append(f"{table}: {len(mine)} rows against the reference's {len(theirs)}; "
                         f"only in the run: {[r[:300] for r in only_mine[:limit]]}; "
                         f"only in the reference: {[r[:300] for r in only_theirs[:limit]]}")
    return found
