"""Schema versions: a new file, a file of every older version (tests/fixtures/schema_v<k>.sql:
the layout version k had, kept from its release), a newer file, a file that cannot be migrated.

The key property: a file migrated from any older version has exactly the layout of a new file
(columns of every raw table: names, types, order, nullability, defaults; constraints), keeps its
rows, and reads as a new file holding the same rows does.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from database_state import VOLATILE, state

from cultivar_assets.store import migrations
from cultivar_assets.store.database import Store, StoreError
from cultivar_assets.store.migrations import SCHEMA_VERSION, MigrationFileError

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
VERSION_FIXTURES = sorted(FIXTURES.glob("schema_v*.sql"))
# the write state as every release before the write log wrote it (one row)
OLD_WRITE_STATE = "INSERT INTO raw.write_state VALUES (7, 'other:123')"
# the same write as the log of version 3 onwards holds it
OLD_WRITE_LOG = "INSERT INTO raw.write_log VALUES (7, 'other:123')"


def fixture_version(path: Path) -> int:
    return int(re.fullmatch(r"schema_v(\d+)\.sql", path.name)[1])


def old_database(path: Path, fixture: Path) -> Path:
    """A file set up as the release of ``fixture``'s version set it up (its schema script,
    applied the way it applied it), holding no rows but its own version's."""
    with duckdb.connect(str(path), config={"storage_compatibility_version": "v1.5.0"}) as con:
        con.execute(fixture.read_text("utf-8"))
        assert migrations.stored_version(con) == fixture_version(fixture)  # the fixture's own
    return path


def columns(path: Path) -> list[tuple]:
    """Every column of every raw table, independently of migrations.layout: table, position,
    name, type, nullable, default."""
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT table_name, column_index, column_name, data_type, is_nullable, "
            "column_default FROM duckdb_columns() WHERE schema_name = 'raw' ORDER BY ALL"
        ).fetchall()


def constraints(path: Path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
            "WHERE schema_name = 'raw' ORDER BY ALL").fetchall()


def versions(path: Path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT version, applied_by FROM raw.schema_version "
                           "ORDER BY version").fetchall()


@pytest.fixture(scope="module")
def new_file(tmp_path_factory) -> Path:
    """A file set up by this release."""
    path = tmp_path_factory.mktemp("new") / "new.duckdb"
    with Store(path).connect():
        pass
    return path


def test_the_migrations_run_from_1_to_the_schema_version_and_each_starts_from_a_fixture():
    found = migrations.migrations()
    assert [m.version for m in found] == list(range(1, SCHEMA_VERSION + 1))
    assert found[-1].version == SCHEMA_VERSION
    assert all(re.fullmatch(rf"{m.version:04d}_[a-z0-9_]+\.sql", m.name) for m in found)
    # each migration k is tested on a file made by version k - 1
    assert [fixture_version(p) for p in VERSION_FIXTURES] == list(range(SCHEMA_VERSION))


def test_schema_sql_names_the_version_it_is_the_layout_of():
    header = (TESTS.parent / "sql" / "schema.sql").read_text("utf-8").split("\nCREATE ")[0]
    assert re.findall(r"layout of schema version (\d+)", header) == [str(SCHEMA_VERSION)]


def test_migration_files_with_a_gap_or_a_bad_name_are_refused(tmp_path, monkeypatch):
    folder = tmp_path / "sql" / "migrations"
    folder.mkdir(parents=True)
    monkeypatch.setattr(migrations, "resource_dir", lambda name: tmp_path / name)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", 2)
    for names, said in ((["0001_a.sql", "0003_c.sql"], r"holds migrations \[1, 3\]"),
                        (["0001_a.sql"], r"holds migrations \[1\]; schema version 2 needs"),
                        (["0001_a.sql", "2_b.sql"], "2_b.sql: a migration is named")):
        for old in folder.iterdir():
            old.unlink()
        for name in names:
            (folder / name).write_text("SELECT 1;")
        migrations.migrations.cache_clear()
        try:
            with pytest.raises(MigrationFileError, match=said):
                migrations.migrations()
        finally:
            migrations.migrations.cache_clear()


def test_a_new_file_is_created_at_the_schema_version_by_schema_sql(new_file):
    assert versions(new_file) == [(SCHEMA_VERSION, "schema.sql")]
    with duckdb.connect(str(new_file), read_only=True) as con:
        assert migrations.layout(con) == migrations.expected_layout()


@pytest.mark.parametrize("fixture", VERSION_FIXTURES, ids=lambda p: p.stem)
def test_a_file_of_an_older_version_is_migrated_to_exactly_a_new_files_layout(
        tmp_path, new_file, fixture):
    path = old_database(tmp_path / "old.duckdb", fixture)
    with duckdb.connect(str(path)) as con:
        con.execute(OLD_WRITE_STATE if fixture_version(fixture) < 3 else OLD_WRITE_LOG)
        con.execute("INSERT INTO raw.run_failures VALUES ('r1', 'results', NULL, 'leaderboard', "
                    "'boom', TIMESTAMP '2026-01-02 03:04:05')")
    before = columns(path)
    assert before != columns(new_file)  # the fixture really is another layout

    generation = Store(path).generation()  # opening it (to read) migrates it

    assert columns(path) == columns(new_file)  # names, types, order, nullability, defaults
    assert constraints(path) == constraints(new_file)
    version = fixture_version(fixture)
    assert versions(path)[-(SCHEMA_VERSION - version):] == [
        (m.version, m.name) for m in migrations.migrations()[version:]]
    assert generation == 7  # the write state's row is the log's first
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT * FROM raw.write_log").fetchall() == [(7, "other:123")]
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() "
                                            "WHERE schema_name = 'raw'").fetchall()}
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() "
                                           "WHERE NOT internal").fetchall()}
    assert not {"step_records", "step_runs", "write_state"} & tables  # dropped by 0003
    assert "step_records" not in views
    with duckdb.connect(str(path), read_only=True) as con:  # through this release's view
        assert con.execute("SELECT * FROM run_failures").fetchall() == [
            ("r1", "results", None, "leaderboard", "boom", datetime(2026, 1, 2, 3, 4, 5))]


def _views(path: Path) -> dict[str, list[tuple]]:
    """Every public view's rows (volatile columns left out), sorted."""
    with duckdb.connect(str(path), read_only=True) as con:
        names = [r[0] for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
            "ORDER BY 1").fetchall()]
        result = {}
        for view in names:
            kept = [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()
                    if r[0] not in VOLATILE]
            result[view] = sorted(con.execute(f"SELECT {', '.join(kept)} FROM {view}").fetchall(),
                                  key=repr)
        return result


# The old wide tables whose metric columns version 2 stores in long form (migration 0002): an old
# layout's rows of them are the public view that keeps their columns.
WIDE_VIEWS = {"model_locale_deltas": "main.model_locale_deltas",
              "model_summary": "main.leaderboard", "locale_summary": "main.locale_deltas",
              "statistics_settings": "main.statistics_settings"}
# the tables migration 0002 makes from them -> how many leading columns every old layout held
# (raw.metric_values: level, model, locale, metric, quantity, value; raw.statistics_metrics: all)
DERIVED = {"metric_values": 6, "statistics_metrics": 6}
# the tables migration 0003 drops (a new file has none of them to copy rows from)
DROPPED = ("step_records", "step_runs", "write_state")
# the tables migration 0004 fills from the statistics the file holds: a new file's rows
RECORDED = ("statistics_digests",)


@pytest.fixture(scope="module")
def pipeline_file(tmp_path_factory) -> Path:
    """A file of this release holding a small real evaluation (tests/fault_pipeline.py: the demo
    data, two systems translated, scored and aggregated, the reported results)."""
    sys.path.insert(0, str(TESTS))
    import fault_pipeline

    tmp = tmp_path_factory.mktemp("pipeline")
    fault_pipeline.run(tmp / "new.duckdb", tmp / "cache")
    return tmp / "new.duckdb"


@pytest.mark.parametrize("fixture", VERSION_FIXTURES, ids=lambda p: p.stem)
def test_a_migrated_file_holds_and_reads_what_a_new_one_with_the_same_rows_does(
        tmp_path, pipeline_file, fixture):
    path = old_database(tmp_path / "old.duckdb", fixture)
    with duckdb.connect(str(path)) as con:  # the evaluation's rows, as far as the old layout
        con.execute(f"ATTACH '{pipeline_file}' AS new (READ_ONLY)")  # can hold them
        old_columns: dict[str, list[str]] = {}
        for table, column in con.execute(
                "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = "
                "current_database() AND schema_name = 'raw' ORDER BY table_name, column_index"
        ).fetchall():
            old_columns.setdefault(table, []).append(column)
        for table, names in old_columns.items():
            if table not in ("schema_state", "schema_version", *DROPPED):
                listed = ", ".join(names)
                source = WIDE_VIEWS.get(table, f"raw.{table}")
                con.execute(f"INSERT INTO raw.{table} ({listed}) "
                            f"SELECT {listed} FROM new.{source}")
    assert state(path)["scores"] == state(pipeline_file)["scores"] != []

    with Store(path).connect():  # migrates
        pass

    migrated, new = state(path), state(pipeline_file)
    assert migrated.keys() == new.keys()
    for table, rows in new.items():
        if table in DERIVED:  # made from the wide tables: their values, as far as old rows had
            width = DERIVED[table]  # them (intervals and n came after the first release)
            assert sorted(r[:width] for r in migrated[table]) == sorted(
                r[:width] for r in rows), f"raw.{table}: values differ"
            continue
        if table in RECORDED:
            assert sorted(migrated[table]) == sorted(rows), f"raw.{table}: rows differ"
            continue
        with duckdb.connect(str(pipeline_file), read_only=True) as con:
            kept = [r[0] for r in con.execute(f"DESCRIBE raw.{table}").fetchall()
                    if r[0] not in VOLATILE]
        had = [kept.index(c) for c in old_columns.get(table, []) if c in kept]
        added = [i for i in range(len(kept)) if i not in had]
        assert [tuple(r[i] for i in had) for r in migrated[table]] == sorted(
            (tuple(r[i] for i in had) for r in rows), key=repr), f"raw.{table}: rows changed"
        assert all(r[i] is None for r in migrated[table] for i in added), (
            f"raw.{table}: a column the old layout lacked is not NULL")
    if fixture_version(fixture) == SCHEMA_VERSION - 1:  # the last release: all it held is all
        assert migrated == new
        assert _views(path) == _views(pipeline_file)


def test_a_file_of_a_newer_version_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "newer.duckdb"
    with Store(path).connect():
        pass
    with duckdb.connect(str(path)) as con:  # what a newer release would have made of it
        con.execute("INSERT INTO raw.schema_version VALUES (?, now(), '0099_later.sql')",
                    [SCHEMA_VERSION + 1])
        con.execute("UPDATE raw.schema_state SET digest = 'a newer release'")
    before = columns(path), versions(path)
    for read_only in (False, True):
        with pytest.raises(StoreError) as info, Store(path).connect(read_only=read_only):
            pass
        said = str(info.value)
        assert re.search(rf"\b{SCHEMA_VERSION + 1}\b.*\b{SCHEMA_VERSION}\b", said)
        assert str(path) in said and "newer" in said and "cultivar run" in said
    assert (columns(path), versions(path)) == before


def test_a_file_whose_tables_differ_is_not_migrated_and_says_how_to_rebuild(tmp_path):
    path = old_database(tmp_path / "odd.duckdb", FIXTURES / "schema_v0.sql")
    with duckdb.connect(str(path)) as con:  # a column of another type than the releases made
        con.execute("ALTER TABLE raw.models DROP COLUMN license")
        con.execute("ALTER TABLE raw.models ADD COLUMN license INTEGER")
    before = columns(path), state(path)
    with pytest.raises(StoreError) as info:
        Store(path).query("leaderboard")
    said = str(info.value)
    assert re.search(rf"{re.escape(str(path))}\D*\b0\b\D*\b{SCHEMA_VERSION}\b", said)
    assert all(fact in said for fact in ("raw.models.license", "INTEGER", "VARCHAR"))
    assert "cultivar run" in said and f"delete {path}" in said
    assert (columns(path), state(path)) == before  # rolled back: no version, no new table
    with duckdb.connect(str(path), read_only=True) as con:
        assert migrations.stored_version(con) == 0


def test_a_migration_that_fails_is_named_and_changes_nothing(tmp_path):
    path = old_database(tmp_path / "view.duckdb", FIXTURES / "schema_v0.sql")
    with duckdb.connect(str(path)) as con:  # what no release made: a view where a table was
        con.execute("DROP TABLE raw.models")
        con.execute("CREATE VIEW raw.models AS SELECT 'm' AS model_id")
    before = columns(path)
    with pytest.raises(StoreError, match=rf"\b0\b\D*\b{SCHEMA_VERSION}\b.*"
                                         r"0001_version_the_schema\.sql.*view"):
        Store(path).write([])
    assert columns(path) == before


def test_a_file_at_this_version_whose_tables_differ_is_refused(tmp_path, monkeypatch):
    """What happens when schema.sql changes without a migration: the files of this version do
    not have the change, and say so instead of failing later in some query."""
    from cultivar_assets.store import database

    path = tmp_path / "edited.duckdb"
    with Store(path).connect():
        pass
    with duckdb.connect(str(path)) as con:
        con.execute("ALTER TABLE raw.models DROP COLUMN license")
    monkeypatch.setattr(database, "_schema_digest", lambda: "schema.sql edited")
    with pytest.raises(StoreError, match=rf"\b{SCHEMA_VERSION}\b.*raw\.models\b.*"
                                         r"\blicense\b"):
        Store(path).write([])


def test_an_up_to_date_file_is_neither_migrated_nor_opened_for_writing_to_read(
        tmp_path, new_file, monkeypatch):
    from cultivar_assets.store import database

    def no(*args):
        raise AssertionError("set up again")

    monkeypatch.setattr(migrations, "migrate", no)
    monkeypatch.setattr(migrations, "create", no)
    opened = []
    original = Store._open

    def recording_open(self, read_only, config):
        opened.append(read_only)
        return original(self, read_only, config)

    monkeypatch.setattr(Store, "_open", recording_open)
    store = Store(new_file)
    store.write([])  # same digest: nothing is set up again
    assert store.query("leaderboard") == []
    assert opened == [False, True]  # the read opened the file once, read-only
    monkeypatch.setattr(database, "_schema_digest", lambda: "another set-up")
    with pytest.raises(AssertionError, match="set up again"):  # a changed digest does set up
        store.write([])


def test_migration_2_moves_a_version_1_files_wide_metric_columns_into_long_form(tmp_path):
    """0002: every BLEU/chrF column of the wide tables becomes a raw.metric_values row, the
    signatures raw.statistics_metrics rows, and the wide views read back what the file held."""
    path = old_database(tmp_path / "v1.duckdb", FIXTURES / "schema_v1.sql")
    wide = {f"{side}_{m}{part}": 10.0 * i + j for i, (side, m) in enumerate(
        (s, m) for m in ("bleu", "chrf") for s in ("flores", "cultivar", "delta"))
        for j, part in enumerate(("", "_low", "_high"))}
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO raw.models (model_id, type, family, engine, prompt_style, "
                    "weights, engine_options) VALUES ('m', 'LLM', 'F', 'copy', 'plain', 'none', "
                    "'{}')")
        columns = ", ".join(wide)
        values = ", ".join(str(v) for v in wide.values())
        con.execute(f"INSERT INTO raw.model_locale_deltas (model_id, locale, language, {columns}, "
                    f"delta_bleu_excludes_zero, n_instances) VALUES ('m', 'hin_Deva_US', "
                    f"'hin_Deva', {values}, true, 7)")
        con.execute(f"INSERT INTO raw.model_summary (model_id, {columns}, n_locale_pairs, "
                    "n_flores_test_sets, n_cultivar_test_sets, bleu_signature, chrf_signature, "
                    f"bleu_tokenizer_sha256) VALUES ('m', {values}, 3, 2, 4, "
                    "'B|tok:flores200|sig', 'C|sig', 'abc')")
    with Store(path).connect():  # migrates
        pass
    with duckdb.connect(str(path), read_only=True) as con:
        pairs = con.execute(f"SELECT {columns}, delta_bleu_excludes_zero, delta_chrf_excludes_zero,"
                            " n_instances FROM model_locale_deltas").fetchall()
        assert pairs == [(*wide.values(), True, None, 7)]
        board = con.execute(f"SELECT {columns}, bleu_signature, chrf_signature, "
                            "bleu_tokenizer_sha256 FROM leaderboard").fetchall()
        assert board == [(*wide.values(), "B|tok:flores200|sig", "C|sig", "abc")]
        long = con.execute("SELECT level, metric, quantity, value, n FROM leaderboard_metrics "
                           "WHERE metric = 'bleu' AND quantity = 'cultivar'").fetchall()
        assert sorted(long) == [("model", "bleu", "cultivar", 10.0, 4),
                                ("model_locale", "bleu", "cultivar", 10.0, 7)]
        assert con.execute("SELECT metric, position, label, signature FROM statistics_metrics"
                           ).fetchall() == [("bleu", 0, "spBLEU", "B|tok:flores200|sig"),
                                            ("chrf", 1, "chrF", "C|sig")]
