"""The DuckDB store: dataset round trip, idempotent writes, atomic steps, the public views."""

from __future__ import annotations

import duckdb
import pytest

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import BenchmarkData, Instance, MissingItem
from cultivar_assets.store.database import Step, Store, StoreError, named_statements
from cultivar_assets.store.records import dataset_fingerprint, read_test_sets, write_dataset

VIEW_COLUMNS = {
    "translations": ["model_id", "test_set", "segment_id", "source", "reference", "hypothesis",
                     "raw_output"],
    "scores": ["model_id", "test_set", "metric", "score", "signature"],
    "leaderboard": ["model_id", "type", "delta_bleu", "delta_chrf", "flores_bleu", "flores_chrf",
                    "cultivar_bleu", "cultivar_chrf", "false_positive_rate",
                    "false_negative_rate"],
    "locale_deltas": ["locale", "language", "script", "location", "delta_bleu", "delta_chrf",
                      "n_models"],
    "rank_agreement": ["locale", "metric", "spearman", "kendall_tau_b", "n_models"],
}


# The columns documented in the README ("The database").
README_COLUMNS = {
    "translations": VIEW_COLUMNS["translations"] + ["cleaning_rules"],
    "scores": ["model_id", "test_set", "kind", "language", "locale", "metric", "score",
               "signature", "n_segments"],
    "leaderboard": ["model_id", "type", "family", "params_total_b", "params_active_b",
                    "delta_bleu", "delta_chrf", "flores_bleu", "flores_chrf", "cultivar_bleu",
                    "cultivar_chrf", "false_positive_rate", "false_negative_rate",
                    "n_locale_pairs", "n_flores_test_sets", "n_cultivar_test_sets",
                    "bleu_signature", "chrf_signature"],
    "locale_deltas": ["locale", "language", "script", "location", "official_or_de_facto",
                      "delta_bleu", "delta_chrf", "n_models"],
    "rank_agreement": ["locale", "metric", "spearman", "kendall_tau_b", "n_models",
                       "aggregation", "note"],
    "word_recall": ["model_id", "locale", "false_positive_rate", "false_negative_rate",
                    "n_removed_terms", "n_introduced_terms"],
    "segment_stats": ["model_id", "test_set", "segment_id", "metric", "stats"],
}


@pytest.fixture(scope="module")
def demo() -> BenchmarkData:
    return load_benchmark(DataConfig())


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "db" / "cultivar.duckdb")


def raw_tables(path) -> dict[str, list[tuple]]:
    """Every table of schema raw with all its rows (sorted), read through a read-only connection."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'raw' AND table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall()]
        return {name: sorted(con.execute(f"SELECT * FROM raw.{name}").fetchall(), key=repr)
                for name in names}
    finally:
        con.close()


def count(path, relation: str) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {relation}").fetchone()[0]
    finally:
        con.close()


def small_benchmark() -> BenchmarkData:
    """Two locales, one of them without original source (its language has no FLORES file)."""
    def inst(locale, i, original):
        return Instance(locale, i, f"{locale} loc {i}", f"English loc {i}",
                        f"orig {i}" if original else None, f"English orig {i}")

    return BenchmarkData(
        source="made-up test data", is_demo=False,
        instances={"deu_Latn_Germany": [inst("deu_Latn_Germany", i, True) for i in (0, 2)],
                   "gom_Deva_India": [inst("gom_Deva_India", i, False) for i in (0, 2)]},
        missing=[MissingItem("flores_gom_Deva", "flores", "gom_Deva", None, "no FLORES file"),
                 MissingItem("cultivar_spa_Latn_Spain", "cultivar", "spa_Latn", "spa_Latn_Spain",
                             "no data file")],
        notes=["a note"],
    )


# --- dataset round trip ----------------------------------------------------------------------


def test_write_dataset_then_read_test_sets_round_trips(store, demo):
    fingerprint = write_dataset(store, demo)
    assert fingerprint == demo.fingerprint() == dataset_fingerprint(store)
    stored = read_test_sets(store)
    assert len(stored) == 10
    assert {t.name: t for t in stored} == {t.name: t for t in demo.test_sets()}


def test_round_trip_with_missing_items_and_null_originals(store):
    data = small_benchmark()
    write_dataset(store, data)
    assert {t.name: t for t in read_test_sets(store)} == {t.name: t for t in data.test_sets()}
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        missing = con.execute("SELECT test_set, kind, language, locale, reason "
                              "FROM missing_test_sets ORDER BY test_set").fetchall()
        dataset = con.execute("SELECT source, is_demo, notes FROM raw.dataset").fetchall()
        gom = con.execute("SELECT source_original, english_original FROM raw.instances "
                          "WHERE locale = 'gom_Deva_India' ORDER BY instance_id").fetchall()
    finally:
        con.close()
    assert missing == [
        ("cultivar_spa_Latn_Spain", "cultivar", "spa_Latn", "spa_Latn_Spain", "no data file"),
        ("flores_gom_Deva", "flores", "gom_Deva", None, "no FLORES file")]
    assert dataset == [("made-up test data", False, ["a note"])]
    assert gom == [(None, "English orig 0"), (None, "English orig 2")]
    assert store.query("instances")[0] == {
        "locale": "deu_Latn_Germany", "instance_id": 0, "source_original": "orig 0",
        "english_original": "English orig 0", "source_localised": "deu_Latn_Germany loc 0",
        "english_localised": "English loc 0"}


def test_writing_the_dataset_twice_does_not_duplicate_rows(store, demo):
    write_dataset(store, demo)
    first = raw_tables(store.path)
    write_dataset(store, demo)
    second = raw_tables(store.path)
    n_segments = sum(len(t.segments) for t in demo.test_sets())
    assert n_segments == 4 * 12 + 6 * 12
    for relation, expected in [("raw.segments", n_segments), ("raw.instances", 72),
                               ("raw.locales", 27), ("raw.dataset", 1), ("raw.missing", 0),
                               ("locales", 27), ("test_sets", 10), ("missing_test_sets", 0)]:
        assert count(store.path, relation) == expected, relation
    assert store.query("table_counts")[4] == {"name": "segments", "n": n_segments}
    first.pop("dataset"), second.pop("dataset")  # loaded_at differs
    assert first == second


def test_rewriting_with_other_data_replaces_the_dataset(store, demo):
    write_dataset(store, demo)
    data = small_benchmark()
    write_dataset(store, data)
    assert dataset_fingerprint(store) == data.fingerprint()
    assert sorted(t.name for t in read_test_sets(store)) == [
        "cultivar_deu_Latn_Germany", "cultivar_gom_Deva_India", "flores_deu_Latn"]
    assert count(store.path, "raw.instances") == 4


def test_dataset_fingerprint_of_an_empty_store(store):
    store.write([])  # creates the schema, writes nothing
    with pytest.raises(LookupError, match="holds no dataset"):
        dataset_fingerprint(store)


# --- atomic writes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failing_step",
    [
        pytest.param(Step("insert_locales", rows=[{"locale": "xx_Latn_Nowhere"}]),
                     id="missing-not-null-column"),
        pytest.param(Step("no_such_statement"), id="unknown-step-name"),
        pytest.param(Step("insert_segments", rows=[
            {"test_set": "t", "kind": "flores", "language": "deu_Latn", "locale": None,
             "segment_id": 1, "source": "s", "reference": "r"}] * 2), id="duplicate-key"),
    ],
)
def test_a_failing_last_step_leaves_every_table_unchanged(store, demo, failing_step):
    write_dataset(store, demo)
    before = raw_tables(store.path)
    assert before["segments"] and before["locales"]
    steps = [
        Step("replace_dataset"),  # deletes the dataset ...
        Step("insert_locales", rows=[{"locale": "xx_Latn_Nowhere", "language": "xx",
                                      "script": "Latn", "location": "Nowhere",
                                      "location_short": "NW", "flores_plus_code": "xx_Latn",
                                      "flores200_code": None, "language_name": "X",
                                      "official_or_de_facto": True}]),  # ... inserts a row ...
        Step("delete_model_translations", {"model_id": "m"}),
        failing_step,  # ... and fails
    ]
    with pytest.raises((duckdb.Error, StoreError)):
        store.write(steps)
    assert raw_tables(store.path) == before
    assert {t.name: t for t in read_test_sets(store)} == {t.name: t for t in demo.test_sets()}


def test_a_failing_step_reports_its_own_error(store):
    with pytest.raises(duckdb.Error, match="NOT NULL"):
        store.write([Step("insert_locales", rows=[{"locale": "xx_Latn_Nowhere"}])])


def test_unknown_step_name_is_a_store_error(store):
    with pytest.raises(StoreError, match="no SQL statement named 'no_such_statement'"):
        store.write([Step("no_such_statement")])


def test_every_named_statement_is_unique_and_present():
    names = named_statements()
    for name in ("replace_dataset", "insert_locales", "insert_dataset", "insert_instances",
                 "insert_segments", "insert_missing", "test_set_segments", "dataset",
                 "leaderboard", "table_counts"):
        assert name in names
        assert names[name].strip()


# --- the database file -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["raw.duckdb", "RAW.duckdb", "main.duckdb", "system.db"])
def test_file_named_like_a_schema_is_refused(tmp_path, name):
    with pytest.raises(StoreError, match="clashes with a schema name"):
        Store(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_query_on_a_missing_file_raises_and_creates_nothing(tmp_path):
    store = Store(tmp_path / "sub" / "absent.duckdb")
    with pytest.raises(StoreError, match="does not exist yet"):
        store.query("leaderboard")
    assert not (tmp_path / "sub").exists()


def test_unknown_query_name_is_a_store_error(store):
    store.write([])
    with pytest.raises(StoreError, match="no SQL statement named 'nope'"):
        store.query("nope")


def test_file_opens_read_only_with_the_public_views(store, demo):
    write_dataset(store, demo)
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        views = {r[0] for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        columns = {view: [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]
                   for view in README_COLUMNS}
        n_test_sets = con.execute("SELECT count(*) FROM test_sets").fetchone()[0]
        with pytest.raises(duckdb.Error):  # read-only really is read-only
            con.execute("DELETE FROM raw.segments")
    finally:
        con.close()
    assert set(VIEW_COLUMNS) <= views
    assert {"locales", "models", "test_sets", "missing_test_sets", "segment_stats",
            "word_recall", "model_locale_deltas", "cleaning_counts"} <= views
    for view, expected in VIEW_COLUMNS.items():
        assert set(expected) <= set(columns[view]), (view, columns[view])
    assert columns == README_COLUMNS
    assert n_test_sets == 10


def test_views_show_rows_of_the_raw_tables(store, demo):
    write_dataset(store, demo)
    summary = {"model_id": "m1", "delta_bleu": -1.5, "delta_chrf": -0.5, "flores_bleu": 30.0,
               "flores_chrf": 55.0, "cultivar_bleu": 28.5, "cultivar_chrf": 54.5,
               "false_positive_rate": 0.1, "false_negative_rate": 0.2, "n_locale_pairs": 6,
               "n_flores_test_sets": 4, "n_cultivar_test_sets": 6,
               "bleu_signature": "bleu-sig", "chrf_signature": "chrf-sig"}
    model = {"model_id": "m1", "hf_id": None, "revision": None, "weights": "none",
             "type": "MT", "family": "Test", "params_total_b": 1.0, "params_active_b": 1.0,
             "engine": "copy-source", "prompt_style": "source", "engine_options": "{}"}
    store.write([
        Step("insert_models", rows=[model]),
        Step("insert_model_summary", rows=[summary]),
        Step("insert_translations", rows=[{
            "model_id": "m1", "test_set": "flores_deu_Latn", "segment_id": 0, "source": "s",
            "reference": "r", "hypothesis": "h", "raw_output": " h ",
            "cleaning_rules": ["strip"]}]),
        Step("insert_scores", rows=[{
            "model_id": "m1", "test_set": "cultivar_deu_Latn_Germany", "metric": "bleu",
            "score": 28.5, "signature": "bleu-sig", "n_segments": 12,
            "dataset_fingerprint": demo.fingerprint()}]),
        Step("insert_locale_summary", rows=[{"locale": "deu_Latn_Germany", "delta_bleu": -1.0,
                                             "delta_chrf": -2.0, "n_models": 1}]),
        Step("insert_rank_agreement", rows=[{
            "aggregation": "per_locale", "locale": "deu_Latn_Germany", "metric": "bleu",
            "spearman": None, "kendall_tau_b": None, "n_models": 1, "note": "too few models"}]),
    ])
    [board] = store.query("leaderboard")
    assert board["model_id"] == "m1" and board["type"] == "MT"
    assert (board["delta_bleu"], board["false_negative_rate"]) == (-1.5, 0.2)
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        score = con.execute("SELECT model_id, test_set, kind, locale, metric, score, signature "
                            "FROM scores").fetchall()
        delta = con.execute("SELECT locale, language, script, location, delta_bleu, n_models "
                            "FROM locale_deltas").fetchall()
        rank = con.execute("SELECT locale, metric, spearman, kendall_tau_b, n_models "
                           "FROM rank_agreement").fetchall()
        translation = con.execute("SELECT hypothesis, raw_output FROM translations").fetchall()
    finally:
        con.close()
    assert score == [("m1", "cultivar_deu_Latn_Germany", "cultivar", "deu_Latn_Germany", "bleu",
                      28.5, "bleu-sig")]
    assert delta == [("deu_Latn_Germany", "deu", "Latn", "Germany", -1.0, 1)]
    assert rank == [("deu_Latn_Germany", "bleu", None, None, 1)]
    assert translation == [("h", " h ")]


def test_schema_and_views_are_applied_once_per_set_up(store, monkeypatch):
    from cultivar_assets.store import database

    with store.connect():
        pass
    with duckdb.connect(str(store.path)) as con:
        digest = con.execute("SELECT digest FROM raw.schema_state").fetchall()
        con.execute("DROP VIEW leaderboard")  # a change the digest cannot see
    assert digest == [(database._schema_digest(),)]
    with store.connect():  # same scripts: nothing re-applied, so the view stays dropped
        pass
    with duckdb.connect(str(store.path), read_only=True) as con:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "leaderboard" not in views
    monkeypatch.setattr(database, "_schema_digest", lambda: "another set-up")
    with store.connect():  # other scripts (an upgrade): applied again, digest updated
        pass
    with duckdb.connect(str(store.path), read_only=True) as con:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        digest = con.execute("SELECT digest FROM raw.schema_state").fetchall()
    assert "leaderboard" in views and digest == [("another set-up",)]
