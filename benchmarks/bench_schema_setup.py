"""Benchmark: what schema versions cost (cultivar_assets/store/migrations.py).

Times, each as the median of ``--repeats`` runs:

- setting up a new file (``schema.sql``, ``views.sql``, the version and digest);
- migrating a file made before versions were kept (tests/fixtures/schema_v0.sql, the layout of
  commit 507340c) holding the rows of a small real evaluation (tests/fault_pipeline.py: the
  demo data, two systems, scored and aggregated), including the check that its tables then
  equal a new file's;
- the version query that every read-only connection makes, on an up-to-date file, against a
  read-only connection without it (open, query, close).

Not a test: run it by hand and record the figures in docs/database-migrations.md.

    python benchmarks/bench_schema_setup.py                # 5 repeats
    python benchmarks/bench_schema_setup.py --repeats 9
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _median_ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import fault_pipeline

    from cultivar_assets.store import migrations
    from cultivar_assets.store.database import Store

    tmp = Path(tempfile.mkdtemp(prefix="bench-schema-"))
    try:
        new = []
        for n in range(args.repeats):
            started = time.perf_counter()
            with Store(tmp / f"new-{n}.duckdb").connect():
                pass
            new.append(time.perf_counter() - started)

        evaluation = tmp / "evaluation.duckdb"
        fault_pipeline.run(evaluation, tmp / "cache")
        old = tmp / "v0.duckdb"
        with duckdb.connect(str(old), config={"storage_compatibility_version": "v1.5.0"}) as con:
            con.execute((ROOT / "tests" / "fixtures" / "schema_v0.sql").read_text("utf-8"))
            con.execute(f"ATTACH '{evaluation}' AS new (READ_ONLY)")
            tables = {}
            for table, column in con.execute(
                    "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name "
                    "= current_database() AND schema_name = 'raw' ORDER BY ALL").fetchall():
                tables.setdefault(table, []).append(column)
            rows = 0
            for table, names in tables.items():
                if table != "schema_state":
                    listed = ", ".join(names)
                    con.execute(f"INSERT INTO raw.{table} ({listed}) "
                                f"SELECT {listed} FROM new.raw.{table}")
                    rows += con.execute(f"SELECT count(*) FROM raw.{table}").fetchall()[0][0]
        migrated = []
        for n in range(args.repeats):
            copy = tmp / f"migrate-{n}.duckdb"
            shutil.copy(old, copy)
            migrations.expected_layout.cache_clear()  # as in a new process
            started = time.perf_counter()
            with Store(copy).connect():
                pass
            migrated.append(time.perf_counter() - started)

        store = Store(evaluation)
        with_check, without = [], []
        for _ in range(args.repeats * 20):
            started = time.perf_counter()
            with store.connect(read_only=True):
                pass
            with_check.append(time.perf_counter() - started)
            started = time.perf_counter()
            duckdb.connect(str(evaluation), read_only=True).close()
            without.append(time.perf_counter() - started)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"new file set up:                  {_median_ms(new)}")
    print(f"version 0 -> {migrations.SCHEMA_VERSION} ({rows} rows):        {_median_ms(migrated)}")
    print(f"read-only open, version checked:  {statistics.median(with_check) * 1000:.1f} ms")
    print(f"read-only open, plain DuckDB:     {statistics.median(without) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
