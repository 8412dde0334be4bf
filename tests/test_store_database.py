"""The DuckDB store: dataset round trip, idempotent writes, atomic steps, the public views."""

from __future__ import annotations

import re
import time
import unicodedata

import duckdb
import pytest
from doc_helpers import doc_text

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import BenchmarkData, Instance, MissingItem
from cultivar_assets.sqlfiles import SQLFileError, named_statements
from cultivar_assets.store.database import Store, StoreError, WriteBlock
from cultivar_assets.store.records import dataset_fingerprint, read_test_sets, write_dataset


def documented_view_columns() -> dict[str, list[str]]:
    """The table of public views of docs/database.md: view -> documented columns."""
    views = {}
    for line in doc_text("database").splitlines():
        match = re.match(r"^\| `(\w+)` \|[^|]*\| ([^|]+) \|$", line)
        if match:
            views[match[1]] = [c.strip() for c in match[2].split(",")]
    return views


@pytest.fixture(scope="module")
def demo() -> BenchmarkData:
    return load_benchmark(DataConfig())


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "db" / "cultivar.duckdb")


def raw_tables(path) -> dict[str, list[tuple]]:
    """Every table of schema raw with all its rows (sorted), read through a read-only connection;
    ``raw.write_log`` (the writes the file has seen, and their writers) is not data and
    is left out."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'raw' AND table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall() if r[0] != "write_log"]
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
    with pytest.raises(LookupError, match=rf"{re.escape(str(store.path))}.*\bdataset\b"):
        dataset_fingerprint(store)


# --- atomic writes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failing_step",
    [
        pytest.param(WriteBlock("insert_locales", rows=[{"locale": "xx_Latn_Nowhere"}]),
                     id="missing-not-null-column"),
        pytest.param(WriteBlock("no_such_statement"), id="unknown-step-name"),
        pytest.param(WriteBlock("insert_segments", rows=[
            {"test_set": "t", "kind": "flores", "language": "deu_Latn", "locale": None,
             "segment_id": 1, "source": "s", "reference": "r"}] * 2), id="duplicate-key"),
    ],
)
def test_a_failing_last_step_leaves_every_table_unchanged(store, demo, failing_step):
    write_dataset(store, demo)
    before = raw_tables(store.path)
    assert before["segments"] and before["locales"]
    steps = [
        WriteBlock("replace_dataset"),  # deletes the dataset ...
        WriteBlock("insert_locales", rows=[{"locale": "xx_Latn_Nowhere", "language": "xx",
                                      "script": "Latn", "location": "Nowhere",
                                      "location_short": "NW", "flores_plus_code": "xx_Latn",
                                      "flores200_code": None, "language_name": "X",
                                      "official_or_de_facto": True}]),  # ... inserts a row ...
        WriteBlock("delete_model_translations", {"model_id": "m"}),
        failing_step,  # ... and fails
    ]
    with pytest.raises((duckdb.Error, SQLFileError)):
        store.write(steps)
    assert raw_tables(store.path) == before
    assert {t.name: t for t in read_test_sets(store)} == {t.name: t for t in demo.test_sets()}


def test_a_failing_step_reports_its_own_error(store):
    with pytest.raises(duckdb.Error, match="NOT NULL"):
        store.write([WriteBlock("insert_locales", rows=[{"locale": "xx_Latn_Nowhere"}])])


def test_unknown_step_name_is_an_error_naming_it(store):
    with pytest.raises(SQLFileError, match="'no_such_statement'"):
        store.write([WriteBlock("no_such_statement")])


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
    with pytest.raises(StoreError, match=re.escape(repr(name))):
        Store(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_query_on_a_missing_file_raises_and_creates_nothing(tmp_path):
    store = Store(tmp_path / "sub" / "absent.duckdb")
    with pytest.raises(StoreError, match=re.escape(str(tmp_path / "sub" / "absent.duckdb"))):
        store.query("leaderboard")
    assert not (tmp_path / "sub").exists()


def test_unknown_query_name_is_an_error_naming_it(store):
    store.write([])
    with pytest.raises(SQLFileError, match="'nope'"):
        store.query("nope")


def test_the_database_page_documents_every_public_view_and_its_columns(store, demo):
    documented = documented_view_columns()
    assert len(documented) >= 14
    write_dataset(store, demo)
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        views = sorted(r[0] for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'"
        ).fetchall())
        columns = {view: [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]
                   for view in views}
        with pytest.raises(duckdb.Error):  # read-only really is read-only
            con.execute("DELETE FROM raw.segments")
    finally:
        con.close()
    assert sorted(documented) == views
    assert columns == documented


def _terms(text: str) -> set[str]:
    """Word-recall terms, written independently of metrics/word_recall.py from its definition:
    runs of word characters (``str.isalnum`` or ``_``) joined by one inner ``.``, ``'`` or ``’``
    between word characters, of the NFC-normalised lower-cased text, a final ``'s`` dropped."""
    text = unicodedata.normalize("NFC", text).lower()
    word = lambda c: c.isalnum() or c == "_"  # noqa: E731
    found, current, i = set(), "", 0
    while i < len(text):
        c = text[i]
        if word(c) or (current and c in ".'’" and i + 1 < len(text) and word(text[i + 1])):
            current += c
        else:
            if current:
                found.add(current)
            current = ""
        i += 1
    if current:
        found.add(current)
    return {t[:-2] if t[-2:] in ("'s", "’s") else t for t in found}


def test_views_agree_with_values_computed_independently(tmp_path, demo):
    """Two systems through the real translate -> score -> aggregate path; every view value is
    recomputed here from the raw text with sacreBLEU and plain Python."""
    import sacrebleu
    from fault_pipeline import translate_two_systems

    from cultivar_assets.evaluation import aggregate, score_model
    from cultivar_assets.metrics.metric_config import MetricConfig

    store = Store(tmp_path / "views.duckdb")
    fingerprint = write_dataset(store, demo)
    test_sets = read_test_sets(store)
    copy, run = translate_two_systems(store, fingerprint, tmp_path / "cache")
    second = run.rows
    for model in ("copy-source-baseline", "drop-words"):
        score_model(store, model, MetricConfig(bleu_tokenize="13a"))
    aggregate(store)

    hyps = {(r.model_id, r.test_set): [] for r in [*copy.rows, *second]}
    for row in [*copy.rows, *second]:
        hyps[row.model_id, row.test_set].append(row.hypothesis)
    refs = {t.name: [seg.reference for seg in t.segments] for t in test_sets}
    expected = {}
    for (model, test_set), texts in hyps.items():
        expected[model, test_set, "bleu"] = sacrebleu.corpus_bleu(
            texts, [refs[test_set]], tokenize="13a").score
        expected[model, test_set, "chrf"] = sacrebleu.corpus_chrf(texts, [refs[test_set]]).score

    con = duckdb.connect(str(store.path), read_only=True)
    try:
        scores = {(m, t, k): v for m, t, k, v in con.execute(
            "SELECT model_id, test_set, metric, score FROM scores").fetchall()}
        deltas = con.execute("SELECT model_id, locale, language, flores_bleu, cultivar_bleu, "
                             "delta_bleu, delta_chrf FROM model_locale_deltas").fetchall()
        board = {r[0]: r[1:] for r in con.execute(
            "SELECT model_id, delta_bleu, delta_chrf, flores_bleu, cultivar_chrf, "
            "false_positive_rate, false_negative_rate, n_locale_pairs FROM leaderboard"
        ).fetchall()}
        locales = dict(con.execute("SELECT locale, delta_bleu FROM locale_deltas").fetchall())
        recall = {(m, loc): (fp, fn) for m, loc, fp, fn in con.execute(
            "SELECT model_id, locale, false_positive_rate, false_negative_rate FROM word_recall"
        ).fetchall()}
    finally:
        con.close()

    assert scores.keys() == expected.keys()
    for key, value in expected.items():
        assert scores[key] == pytest.approx(value, abs=1e-9), key
    by_locale = {loc: rows for loc, rows in demo.instances.items()}
    want_delta = {}
    for model in ("copy-source-baseline", "drop-words"):
        for locale in by_locale:
            language = "_".join(locale.split("_")[:2])
            want_delta[model, locale] = {
                m: expected[model, f"cultivar_{locale}", m]
                - expected[model, f"flores_{language}", m]
                for m in ("bleu", "chrf")}
    assert len(deltas) == len(want_delta) == 12
    for model, locale, language, flores_bleu, cultivar_bleu, d_bleu, d_chrf in deltas:
        assert flores_bleu == pytest.approx(expected[model, f"flores_{language}", "bleu"])
        assert cultivar_bleu == pytest.approx(expected[model, f"cultivar_{locale}", "bleu"])
        assert d_bleu == pytest.approx(want_delta[model, locale]["bleu"], abs=1e-9)
        assert d_chrf == pytest.approx(want_delta[model, locale]["chrf"], abs=1e-9)
    for model, (d_bleu, d_chrf, flores_bleu, cultivar_chrf, fp, fn, n_pairs) in board.items():
        mine = [v for (m, _), v in want_delta.items() if m == model]
        assert n_pairs == 6
        assert d_bleu == pytest.approx(sum(v["bleu"] for v in mine) / 6, abs=1e-9)
        assert d_chrf == pytest.approx(sum(v["chrf"] for v in mine) / 6, abs=1e-9)
        assert flores_bleu == pytest.approx(sum(
            expected[model, f"flores_{lang}", "bleu"] for lang in demo.languages) / 4)
        assert cultivar_chrf == pytest.approx(sum(
            expected[model, f"cultivar_{loc}", "chrf"] for loc in by_locale) / 6)
        assert fp == pytest.approx(sum(recall[model, loc][0] for loc in by_locale) / 6)
        assert fn == pytest.approx(sum(recall[model, loc][1] for loc in by_locale) / 6)
    for locale, value in locales.items():
        assert value == pytest.approx((want_delta["copy-source-baseline", locale]["bleu"]
                                       + want_delta["drop-words", locale]["bleu"]) / 2)
    hyp_of = {(r.model_id, r.test_set, r.segment_id): r.hypothesis for r in [*copy.rows, *second]}
    for (model, locale), (fp, fn) in recall.items():
        removed = recalled = introduced = missed = 0
        for inst in by_locale[locale]:
            original, localised = _terms(inst.english_original), _terms(inst.english_localised)
            hyp = _terms(hyp_of[model, f"cultivar_{locale}", inst.instance_id])
            removed += len(original - localised)
            recalled += len((original - localised) & hyp)
            introduced += len(localised - original)
            missed += len((localised - original) - hyp)
        assert fp == pytest.approx(recalled / removed)
        assert fn == pytest.approx(missed / introduced)
    # the copy baseline copies German/Hindi/Chinese sources: it recalls no English term
    assert all(recall["copy-source-baseline", loc][0] < 0.2 for loc in by_locale)


# --- another process holding the file; a damaged file --------------------------------------

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
if sys.argv[2] == "stdin":
    sys.stdin.readline()  # until the test says
else:
    time.sleep(float(sys.argv[2]))
con.close()
"""


def _hold(path, seconds: float | None):
    """A process that holds ``path`` open for ``seconds``, or (None) until a line on its stdin."""
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), "stdin" if seconds is None else str(seconds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_write_waits_for_another_process_to_release_the_file(store, demo, monkeypatch):
    """The holder lets go at the write's first backoff: the write waited, then succeeded."""
    import types

    from cultivar_assets.store import database

    write_dataset(store, demo)
    holder = _hold(store.path, None)
    backoffs: list[float] = []

    def backoff(seconds: float) -> None:
        if not backoffs:  # the open failed on the lock: let go, and wait till the file is free
            holder.communicate("\n", timeout=30)
        backoffs.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(database, "time", types.SimpleNamespace(monotonic=time.monotonic,
                                                                 sleep=backoff))
    try:
        write_dataset(store, demo)  # waits (with backoff) instead of failing
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert backoffs and holder.returncode == 0
    assert count(store.path, "raw.instances") == 72


def test_a_held_file_times_out_naming_the_process(tmp_path, demo):
    store = Store(tmp_path / "held.duckdb", lock_timeout=0.5)
    write_dataset(store, demo)
    holder = _hold(store.path, 10)
    try:
        with pytest.raises(StoreError, match=rf"\b{holder.pid}\b.*\block\b"):
            store.query("dataset")
    finally:
        holder.kill()
        holder.wait()


HAMMER = """
import sys, time, duckdb
deadline = time.monotonic() + float(sys.argv[2])
opens = 0
print("hammering", flush=True)
while time.monotonic() < deadline:
    try:
        con = duckdb.connect(sys.argv[1], read_only=True)
    except duckdb.IOException:  # the test's writer holds the file just now
        continue
    con.execute("SELECT count(*) FROM raw.locales").fetchall()
    con.close()
    opens += 1
print(opens, flush=True)
"""


def test_an_open_retries_on_duckdbs_lock_error_when_the_holder_is_already_gone(
        tmp_path, demo, monkeypatch):
    """DuckDB's lock error, from a reader that closed before anyone could ask who held the
    lock (no PID in the text, no holder left): the open waits and retries until the file
    opens. With a real process opening short read-only connections:
    :func:`test_write_opens_succeed_while_another_process_opens_short_read_only_connections`
    (slow)."""
    import types

    from cultivar_assets.store import database

    store = Store(tmp_path / "busy.duckdb", lock_timeout=30)
    write_dataset(store, demo)
    real_connect, refused, backoffs = duckdb.connect, [], []

    def connect(path, **kwargs):
        if len(refused) < 3:
            refused.append(path)
            raise duckdb.IOException(f'IO Error: Could not set lock on file "{path}": '
                                     "Conflicting lock is held")
        return real_connect(path, **kwargs)

    logged = count(store.path, "raw.write_log")
    monkeypatch.setattr(duckdb, "connect", connect)
    monkeypatch.setattr(database, "time", types.SimpleNamespace(
        monotonic=time.monotonic, sleep=backoffs.append))
    assert database.lock_holder(store.path) is None  # nobody holds it when asked
    store.write([])  # a write of nothing (the log only)
    assert refused == [str(store.path)] * 3 and len(backoffs) == 3
    assert all(0 < seconds <= 1.0 for seconds in backoffs)
    monkeypatch.undo()
    assert count(store.path, "raw.write_log") == logged + 1


@pytest.mark.slow  # a real process hammering the file; the retry itself: the test above
def test_write_opens_succeed_while_another_process_opens_short_read_only_connections(
        tmp_path, demo):
    """A reader that holds the lock only for milliseconds is gone by the time one could ask who
    held it: the open must retry on DuckDB's lock error itself."""
    import subprocess
    import sys

    store = Store(tmp_path / "busy.duckdb", lock_timeout=30)
    write_dataset(store, demo)
    reader = subprocess.Popen([sys.executable, "-c", HAMMER, str(store.path), "60"],
                              stdout=subprocess.PIPE, text=True)
    failures, opens = [], 0
    try:
        assert reader.stdout.readline().strip() == "hammering"
        started = time.monotonic()
        while opens < 40 and time.monotonic() - started < 40:
            try:
                store.write([])  # a write of nothing (the log only)
            except StoreError as error:
                failures.append(str(error))
            opens += 1
    finally:
        reader.kill()
        reader.wait()
    assert opens >= 10 and failures == [], f"{len(failures)} of {opens} write opens failed"
    print(f"{opens} write opens beside a process opening read-only connections: 0 failed")


def test_the_timeout_says_how_long_it_really_waited(tmp_path, demo):
    store = Store(tmp_path / "held.duckdb", lock_timeout=1.0)
    write_dataset(store, demo)
    holder = _hold(store.path, 10)
    try:
        started = time.monotonic()
        with pytest.raises(StoreError) as info:
            write_dataset(store, demo)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    said = re.search(r"waited (\d+\.\d) s of lock_timeout 1 s", str(info.value))
    assert said and abs(float(said[1]) - waited) < 0.3, str(info.value)


def test_a_damaged_file_is_reported_without_the_lock_hint(tmp_path):
    path = tmp_path / "garbage.duckdb"
    path.write_bytes(b"not a database" * 500)
    with pytest.raises(StoreError, match="DuckDB") as info:
        Store(path).write([])
    assert "lock" not in str(info.value) and "another run" not in str(info.value)
    assert str(path) in str(info.value)
    assert path.read_bytes() == b"not a database" * 500  # left as it was


def test_scores_stay_valid_for_the_same_translations_and_go_stale_for_new_ones(tmp_path, demo):
    from dataclasses import replace

    from cultivar_assets.evaluation import AggregationError, aggregate, score_model
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.models import load_models
    from cultivar_assets.store.records import write_translations
    from cultivar_assets.translation import translate

    store = Store(tmp_path / "stale.duckdb")
    fingerprint = write_dataset(store, demo)
    run = translate(load_models().get("copy-source-baseline"), read_test_sets(store),
                    cache_dir=tmp_path / "cache", show_progress_bar=False)
    write_translations(store, run, fingerprint)
    score_model(store, run.model.id, MetricConfig(bleu_tokenize="13a"))
    aggregate(store)
    n_scores = count(store.path, "scores")
    assert n_scores == 2 * 10 and count(store.path, "segment_stats") == 2 * 120

    write_translations(store, run, fingerprint)  # a re-run that changed nothing (from the cache)
    assert count(store.path, "scores") == n_scores  # no gap: the scores are still current
    aggregate(store)

    changed = replace(run, rows=[replace(run.rows[0], hypothesis="something else"),
                                 *run.rows[1:]])
    write_translations(store, changed, fingerprint)
    assert count(store.path, "raw.scores") == n_scores  # kept, but stale:
    assert count(store.path, "scores") == 0 and count(store.path, "segment_stats") == 0
    with pytest.raises(AggregationError, match=r"copy-source-baseline\b.*translations.*\bscores\b"):
        aggregate(store)
    score_model(store, run.model.id, MetricConfig(bleu_tokenize="13a"))
    assert count(store.path, "scores") == n_scores
    aggregate(store)


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


def test_every_write_is_logged_with_its_writer_and_another_process_is_told_apart(store):
    """The write log (``raw.write_log``): each write appends one generation with its writer;
    a pipeline run tells its own writes from another process's by the writer."""
    import subprocess
    import sys

    from cultivar_assets.store.database import writer_id

    store.write([])
    first = store.generation()
    store.write([])
    subprocess.run([sys.executable, "-c", "import sys; from cultivar_assets.store.database "
                    "import Store; Store(sys.argv[1]).write([])", str(store.path)], check=True)
    store.write([])
    writers = store.writers_since(first)
    assert store.generation() == first + 3 and len(writers) == 3
    assert writers[0] == writers[2] == writer_id()
    assert writers[1] != writer_id() and writers[1].split(":")[:1] == writer_id().split(":")[:1]
