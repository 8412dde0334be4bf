"""The streamed aggregation (models read and bootstrapped part by part, per-model replicates
combined) equals the reference that held every model's replicates at once
(``tests/reference_statistics``, today's implementation before the streaming), output by
output: every point estimate, interval, n, rank, rank interval and "not separable" list.

The synthetic store has irregular models: two identical ones (ties in every rank), one without
a Cultivar test set, one without a FLORES test set (no pairs of that language's locales), one
whose FP rate is undefined (NaN in its rank column), a locale with fewer instances, and one
model with an instance id that no other statistic has (it enlarges the pool ``U``). The parts
are made small so that many of them are combined.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from reference_statistics import reference_tables
from reference_statistics.bootstrap import paired_bootstrap as reference_bootstrap

from cultivar_assets.data.locales import all_locales, cultivar_test_set_name, flores_test_set_name
from cultivar_assets.data.testsets import BenchmarkData, Instance
from cultivar_assets.evaluation import aggregates
from cultivar_assets.metrics import bootstrap
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import (
    RECALL_COLUMNS,
    SegmentStats,
    StatsError,
    recall_from_table,
    stats_from_sorted_table,
    stats_from_table,
)
from cultivar_assets.store.database import Store, WriteBlock
from cultivar_assets.store.records import ScoreRows, write_dataset, write_model_scores

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_bootstrap import synthetic_segment_stats

pytestmark = pytest.mark.usefixtures("one_blas_thread")  # small products: one thread

N_MODELS = 20
N_IDS = 30
LOCALES = [loc.key for loc in all_locales()]
SHORT_LOCALE = LOCALES[3]  # its Cultivar test set has fewer instances
NO_CULTIVAR = ("model-05", LOCALES[0])
NO_FLORES = ("model-06", flores_test_set_name(all_locales()[1].source_language))
NO_FP = "model-07"  # no removed terms: its FP rate is undefined
EXTRA_ID = ("model-08", cultivar_test_set_name(LOCALES[2]), 9999)
SIGNATURE = {"bleu": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
             "chrf": "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"}


def _tables(fingerprint: str) -> dict[str, pa.Table]:
    rng = np.random.default_rng(11)
    ids = np.arange(N_IDS) * 2 + 1
    names = [flores_test_set_name(lang) for lang in dict.fromkeys(
        loc.source_language for loc in all_locales())] + [cultivar_test_set_name(loc)
                                                           for loc in LOCALES]
    scores, stats, recall = [], {c: [] for c in ("model_id", "test_set", "segment_id",
                                                  "metric", "stats")}, []
    drawn: dict[str, tuple] = {}
    for m in range(N_MODELS):
        model = f"model-{m:02d}"
        quality = 0.3 + 0.4 * (m % 20) / 19
        for name in names:
            if (model, name[len("cultivar_"):]) == NO_CULTIVAR or (model, name) == NO_FLORES:
                continue
            these = ids[:N_IDS - 8] if name == cultivar_test_set_name(SHORT_LOCALE) else ids
            if (model, name) == EXTRA_ID[:2]:
                these = np.append(these, EXTRA_ID[2])
            if model == "model-01":  # a copy of model-00: ties everywhere
                bleu, chrf = drawn[name]
            else:
                bleu, chrf = synthetic_segment_stats(rng, len(these), quality)
            if model == "model-00":
                drawn[name] = (bleu, chrf)
            for metric, values in (("bleu", bleu), ("chrf", chrf)):
                scores.append({"model_id": model, "test_set": name, "metric": metric,
                               "score": 0.0, "signature": SIGNATURE[metric],
                               "n_segments": len(these), "dataset_fingerprint": fingerprint,
                               "tokenizer_sha256": None})
                stats["model_id"] += [model] * len(these)
                stats["test_set"] += [name] * len(these)
                stats["segment_id"] += these.tolist()
                stats["metric"] += [metric] * len(these)
                stats["stats"] += values.tolist()
        for loc in LOCALES:
            removed = (np.zeros(N_IDS, dtype=int) if model == NO_FP
                       else np.random.default_rng([m, 1]).integers(0, 4, size=N_IDS))
            if model == "model-01":
                removed = np.random.default_rng([0, 1]).integers(0, 4, size=N_IDS)
            introduced = np.random.default_rng([m % 39, 2]).integers(0, 4, size=N_IDS)
            counts = np.column_stack([removed, removed // 3, introduced, introduced // 2])
            recall += [{"model_id": model, "locale": loc, "segment_id": int(i),
                        **dict(zip(RECALL_COLUMNS, map(int, row), strict=True))}
                       for i, row in zip(ids, counts, strict=True)]
    return {"scores": pa.Table.from_pylist(scores),
            "segment_stats": pa.table({**{k: v for k, v in stats.items() if k != "stats"},
                                       "stats": pa.array(stats["stats"],
                                                         pa.list_(pa.int64()))}),
            "word_recall": pa.Table.from_pylist(recall)}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    store = Store(tmp_path_factory.mktemp("streaming") / "synthetic.duckdb")
    ids = np.arange(N_IDS) * 2 + 1
    fingerprint = write_dataset(store, BenchmarkData("synthetic", False, {
        loc: [Instance(loc, int(i), f"s {i}", f"r {i}", f"o {i}", f"or {i}") for i in ids]
        for loc in LOCALES}))
    tables = _tables(fingerprint)
    store.write([WriteBlock("insert_models", rows=[
        {"model_id": f"model-{m:02d}", "hf_id": None, "revision": None, "weights": "hub",
         "type": "LLM", "family": "Synthetic", "params_total_b": None, "params_active_b": None,
         "engine": "none", "prompt_style": "none", "engine_options": "{}"}
        for m in range(N_MODELS)])] + [WriteBlock(f"insert_{name}", rows=table)
                                       for name, table in tables.items()]
                + [WriteBlock("record_every_model_statistics")])
    return store


def _same(a, b, where: str) -> None:
    """Equal to the last bit (NaN equal to NaN, None to None), recursively; an Arrow table
    (the ranks' rows) by its rows."""
    if isinstance(a, pa.Table):
        a = a.to_pylist()
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), f"{where}: {a!r} != {b!r}"
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def _same_quantities(new, old) -> None:
    assert list(new.quantities) == list(old.quantities)
    for name, q in new.quantities.items():
        r = old[name]
        assert q.keys == r.keys, name
        np.testing.assert_array_equal(q.point, r.point, err_msg=name, strict=True)
        np.testing.assert_array_equal(q.n, r.n, err_msg=name, strict=True)
        np.testing.assert_array_equal(q.low, r.low, err_msg=name, strict=True)
        np.testing.assert_array_equal(q.high, r.high, err_msg=name, strict=True)
        if q.replicates is not None:
            np.testing.assert_array_equal(q.replicates, r.replicates, err_msg=name, strict=True)
        elif not name.startswith("pair_"):
            pytest.fail(f"{name} lost its replicates")
    assert new.pair_unpaired == old.pair_unpaired
    assert new.pair_languages == old.pair_languages
    assert new.n_instances == old.n_instances


def test_streamed_aggregate_equals_the_reference(store, monkeypatch):
    # three chunks of replicates compared in the ranks (ranks.CHUNK_REPLICATES), the last of 2
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=130)
    reference, expected = reference_tables(store, config)
    # the irregularities are there: a tie, a NaN rate, a short locale, the extra id
    fp = reference["model_false_positive_rate"]
    assert np.isnan(fp.point[fp.index(NO_FP)])
    assert reference.n_instances == N_IDS + 1
    assert reference.pair_unpaired[(EXTRA_ID[0], LOCALES[2])] == 1
    assert (NO_CULTIVAR[0], NO_CULTIVAR[1]) not in reference["pair_delta_bleu"].keys
    monkeypatch.setattr(aggregates, "BLOCK_MODELS", 6)  # 4 blocks of the store, the last of 2
    result = aggregates.aggregate(store, config=config)
    assert result.models == sorted(f"model-{m:02d}" for m in range(N_MODELS))
    tied = [r for r in result.tables.ranks.to_pylist() if r["model_id"] in ("model-00", "model-01")]
    assert all(r["rank"] == tied[0]["rank"] for r in tied if r["quantity"] == "delta_bleu")
    for table in ("pairs", "models", "locales", "values", "agreement", "averages", "ranks",
                  "flags"):
        _same(getattr(result.tables, table), getattr(expected, table), table)
    assert result.tables.rules == expected.rules
    assert result.tables.ranks.num_rows == 8 * N_MODELS - 1  # the NaN FP rate is not ranked


def test_paired_bootstrap_in_blocks_equals_the_reference(store, monkeypatch):
    """The in-memory bootstrap (blocks of models, then combined) keeps every replicate, and
    they equal the reference's, pairs included."""
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=130).bootstrap_config()
    stats = stats_from_table(store.arrow("all_segment_stats"))
    recall = recall_from_table(store.arrow("all_word_recall"))
    models = [f"model-{m:02d}" for m in range(N_MODELS)]
    old = reference_bootstrap(stats, models, LOCALES, recall, config,
                              score_functions=score_functions(stats))
    monkeypatch.setattr(bootstrap, "BLOCK_MODELS", 9)  # 3 blocks, the last of 2
    new = bootstrap.paired_bootstrap(stats, models, LOCALES, recall, config,
                                     score_functions=score_functions(stats))
    _same_quantities(new, old)
    assert all(new[f"pair_{side}_chrf"].replicates is not None
               for side in ("flores", "cultivar", "delta"))


def _stats_table(rows: list[tuple]) -> pa.Table:
    return pa.table({"model_id": [r[0] for r in rows], "test_set": [r[1] for r in rows],
                     "segment_id": pa.array([r[2] for r in rows], pa.int32()),
                     "metric": [r[3] for r in rows],
                     "stats": pa.array([r[4] for r in rows], pa.list_(pa.int64()))})


def test_stats_from_table_equals_building_each_group():
    """Shuffled rows of several metrics, widths, models and test sets: every group sorted by
    id, equal to ``SegmentStats.build`` of its rows, in the order the groups first occur."""
    rng = np.random.default_rng(5)
    rows = [(f"m{m}", f"t{t}", int(i), metric, rng.integers(0, 9, size=width).tolist())
            for metric, width in (("chrf", 18), ("bleu", 10), ("one", 1))
            for m in range(3) for t in range(4) for i in rng.permutation(12)[:7 + t]]
    shuffled = [rows[i] for i in rng.permutation(len(rows))]
    got = stats_from_table(_stats_table(shuffled))
    expected: dict = {}
    for model_id, test_set, i, metric, stats in shuffled:
        expected.setdefault(metric, {}).setdefault((model_id, test_set), []).append((i, stats))
    assert list(got) == list(expected)
    for metric, table in expected.items():
        assert sorted(got[metric]) == sorted(table)
        for key, items in table.items():
            want = SegmentStats.build([i for i, _ in items], [s for _, s in items])
            np.testing.assert_array_equal(got[metric][key].ids, want.ids, strict=True)
            np.testing.assert_array_equal(got[metric][key].stats, want.stats, strict=True)


@pytest.mark.parametrize(("change", "message"), [
    (lambda rows: [*rows, ("m1", "t1", 99, "bleu", [1, 2])], "rows of different lengths"),
    (lambda rows: [*rows, ("m1", "t1", 3, "bleu", [1, 2, 3])], r"duplicate instance ids \[3\]"),
    (lambda rows: [*rows, ("m1", "t1", 98, "bleu", [1, -2, 3])], "negative counts"),
])
def test_stats_from_table_refuses_malformed_groups_naming_them(change, message):
    rows = [(f"m{m}", "t1", i, "bleu", [1, 2, 3]) for m in range(3) for i in range(5)]
    with pytest.raises(StatsError, match=f"bleu statistics of m1 on t1: {message}"):
        stats_from_table(_stats_table(change(rows)))


AGGREGATE_TABLES = ("model_locale_deltas", "locale_word_recall", "model_summary",
                    "locale_summary", "metric_values", "statistics_metrics", "rank_agreement",
                    "table_averages", "leaderboard_ranks", "contamination_flags")


def _stored(store: Store) -> dict[str, list]:
    """Every row of the aggregate tables as stored (sorted), the settings row without its
    timing columns."""
    with store.connect(read_only=True) as con:
        tables = {table: sorted((list(row) for row in con.execute(
            f"SELECT * FROM raw.{table}").fetchall()), key=repr) for table in AGGREGATE_TABLES}
        tables["statistics_settings"] = [list(row) for row in con.execute(
            "SELECT * EXCLUDE (seconds, computed_at) FROM raw.statistics_settings").fetchall()]
    return tables


def _fully_aggregated(store: Store, config: MetricConfig, models=None) -> dict[str, list]:
    """The aggregate tables that a full aggregation (nothing kept) of a copy of ``store``
    writes."""
    copy = store.path.with_name(f"full-{store.path.name}")
    copy.write_bytes(store.path.read_bytes())
    aggregates.aggregate(Store(copy), models, config=config)
    tables = _stored(Store(copy))
    copy.unlink()
    return tables


def _same_rows_of(result, expected, model: str) -> None:
    """The per-model rows that ``result`` wrote are ``model``'s, equal to ``expected``'s; its
    cross-model rows equal ``expected``'s."""
    for table in ("pairs", "models", "values"):
        mine = [r for r in getattr(expected, table) if r.get("model_id") == model
                or (table == "values" and r["level"] == "locale")]
        _same(getattr(result.tables, table), mine, table)
    for table in ("locales", "agreement", "averages", "ranks", "flags"):
        _same(getattr(result.tables, table), getattr(expected, table), table)
    assert result.tables.rules == expected.rules


def test_kept_replicates_are_reused_only_while_their_inputs_are_unchanged(store, tmp_path,
                                                                        monkeypatch):
    """With ``replicates_dir`` every model's replicates are kept; a second aggregation takes
    them all (no statistics read), writes no model's rows again and leaves the same tables;
    after one model's statistics change, only that model is computed again and only its
    per-model rows are written, and the tables equal a full aggregation's (and the
    reference's)."""
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=100)
    kept = tmp_path / "replicates"
    copy = tmp_path / "kept.duckdb"
    copy.write_bytes(store.path.read_bytes())
    store = Store(copy)
    first = aggregates.aggregate(store, config=config, replicates_dir=kept)
    assert sorted(bootstrap.ReplicatesPack(kept).entries) == first.models
    assert first.rewritten == first.models
    stored = _stored(store)
    computed: list[list[str]] = []
    real = aggregates.model_replicates

    def counting(stats, models, *args, **kwargs):
        computed.append(list(models))
        return real(stats, models, *args, **kwargs)

    monkeypatch.setattr(aggregates, "model_replicates", counting)
    again = aggregates.aggregate(store, config=config, replicates_dir=kept)
    assert computed == [] and again.rewritten == []
    assert again.kept["replicates"] == f"{N_MODELS} models' kept, 0 computed"
    _same(_stored(store), stored, "tables")

    changed = store.path.with_name("changed.duckdb")
    changed.write_bytes(store.path.read_bytes())
    other = Store(changed)
    with other.connect() as con:  # one count of one model's statistic, its score unchanged
        con.execute("UPDATE raw.segment_stats SET stats = list_transform(stats, lambda x: x + 1) "
                    "WHERE model_id = 'model-03' AND test_set = ? AND segment_id = 1 "
                    "AND metric = 'chrf'", [cultivar_test_set_name(LOCALES[5])])
    # written in place by hand (no writer of store/records.py, the same number of rows): seen
    # by hashing the statistics
    result = aggregates.aggregate(other, config=config, replicates_dir=kept,
                                  scan_statistics=True)
    assert result.kept["digests"] == (f"0 models' recorded, {N_MODELS} hashed from their "
                                      "statistics (every model's hashed (asked to scan))")
    assert computed == [["model-03"]] and result.rewritten == ["model-03"]
    assert result.kept["pools"] == f"{N_MODELS - 1} models' ids kept, 1 read"
    _, expected = reference_tables(other, config)
    _same_rows_of(result, expected, "model-03")
    _same(_stored(other), _fully_aggregated(other, config), "tables")
    assert _stored(other)["metric_values"] != stored["metric_values"]


def test_kept_state_of_other_inputs_is_recomputed_saying_so(store, tmp_path, monkeypatch):
    """Everything kept is labelled with what produced it and ignored when that differs,
    saying so in ``Aggregates.kept``: replicates of another seed are computed again, rank
    states of another confidence recomputed in full, and per-model rows that the database no
    longer holds as last written (changed by another writer) are all written again; each time
    the tables equal a full aggregation's."""
    copy = tmp_path / "kept.duckdb"
    copy.write_bytes(store.path.read_bytes())
    store = Store(copy)
    kept = tmp_path / "replicates"
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=60)
    aggregates.aggregate(store, config=config, replicates_dir=kept)

    seed = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=60, bootstrap_seed=99)
    result = aggregates.aggregate(store, config=seed, replicates_dir=kept)
    assert result.kept["replicates"].startswith(f"0 models' kept, {N_MODELS} computed")
    assert result.kept["rank_states"].startswith("computed in full")
    assert result.kept["rows"] == "the rows were written under other settings"
    assert result.rewritten == result.models
    _same(_stored(store), _fully_aggregated(store, seed), "tables")

    with store.connect() as con:  # another writer changes one stored value
        con.execute("UPDATE raw.metric_values SET value = value + 1 WHERE model_id = "
                    "'model-02' AND level = 'model' AND metric = 'bleu' AND quantity = 'delta'")
    result = aggregates.aggregate(store, config=seed, replicates_dir=kept)
    assert result.kept["rows"] == ("the database's per-model rows differ from the ones last "
                                   "written")
    assert result.kept["replicates"] == f"{N_MODELS} models' kept, 0 computed"
    assert result.rewritten == result.models
    _same(_stored(store), _fully_aggregated(store, seed), "tables")


def test_a_model_left_out_has_its_rows_deleted_and_nothing_else_written(store, tmp_path):
    """With the kept state, aggregating every model but one computes nothing, writes no
    model's per-model rows and deletes the left-out model's; the tables equal a full
    aggregation of the same models."""
    copy = tmp_path / "kept.duckdb"
    copy.write_bytes(store.path.read_bytes())
    store = Store(copy)
    kept = tmp_path / "replicates"
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=40)
    aggregates.aggregate(store, config=config, replicates_dir=kept)
    fewer = [f"model-{m:02d}" for m in range(N_MODELS) if m != 15]
    result = aggregates.aggregate(store, fewer, config=config, replicates_dir=kept)
    assert result.rewritten == [] and result.models == fewer
    assert result.kept["replicates"] == f"{N_MODELS - 1} models' kept, 0 computed"
    stored = _stored(store)
    assert not any("model-15" in map(str, row) for table in stored.values() for row in table)
    _same(stored, _fully_aggregated(store, config, fewer), "tables")


def test_replicates_pack_keeps_parts_under_their_keys(store, tmp_path):
    """A pack gives back each part put in it, to the bit, under its key only; a part put
    again replaces the earlier one; parts of models no longer kept are dropped, and the data
    file is written afresh once most of it is unused."""
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=20).bootstrap_config()
    stats = stats_from_table(store.arrow("all_segment_stats"))
    recall = recall_from_table(store.arrow("all_word_recall"))
    models = [f"model-{m:02d}" for m in range(4)]
    universe = bootstrap.instance_pool(stats, models, LOCALES, recall)
    weights = bootstrap.bootstrap_weights(len(universe), config)
    parts = bootstrap.model_replicates(stats, models, LOCALES, recall, universe, weights,
                                       config.confidence, score_functions=score_functions(stats))
    folder = tmp_path / "pack"
    pack = bootstrap.ReplicatesPack(folder)
    for part in parts:
        pack.put(part, f"key-{part.model}")
    pack.save(models)
    again = bootstrap.ReplicatesPack(folder)
    assert again.get("model-00", "other key") is None and again.get("model-09", "x") is None
    for part in parts:
        back = again.get(part.model, f"key-{part.model}")
        compact = part.compact()
        assert (back.pairs, back.unpaired) == (compact.pairs, compact.unpaired)
        for name, (values, n) in compact.columns.items():
            np.testing.assert_array_equal(back.columns[name][0], values, strict=True)
            assert back.columns[name][1] == n
        for metric, sides in compact.pair_values.items():
            np.testing.assert_array_equal(back.pair_replicates[metric]["delta"],
                                          compact.pair_replicates[metric]["delta"], strict=True)
            for side, values in sides.items():
                for got, want in zip(back.pair_values[metric][side], values, strict=True):
                    np.testing.assert_array_equal(got, want, strict=True)
    first_file = again.data_name
    again.put(parts[1], "key-new")
    again.save(models[:2])  # model-02 and model-03 dropped: most of the file unused
    last = bootstrap.ReplicatesPack(folder)
    assert sorted(last.entries) == models[:2] and last.data_name != first_file
    assert [p.name for p in folder.glob("replicates-*.bin")] == [last.data_name]
    assert last.get("model-01", "key-model-01") is None
    np.testing.assert_array_equal(last.get("model-01", "key-new").columns[
        "model_delta_bleu"][0], parts[1].columns["model_delta_bleu"][0], strict=True)
    np.testing.assert_array_equal(last.get("model-00", "key-model-00").columns[
        "model_delta_bleu"][0], parts[0].columns["model_delta_bleu"][0], strict=True)


def test_block_sums_of_models_sharing_every_column():
    """Models with identical statistics (every column shared) sum as the plain product."""
    rng = np.random.default_rng(2)
    weights = rng.integers(0, 3, size=(7, 5)).astype(float)
    same = rng.integers(0, 9, size=(5, 1, 4))
    for rows in (np.repeat(same, 3, axis=1), np.concatenate(
            [np.repeat(same, 2, axis=1), same + 1], axis=1)):
        expected = (weights @ rows.reshape(5, -1)).reshape(7, rows.shape[1], 4)
        np.testing.assert_array_equal(
            bootstrap._block_sums(weights, np.arange(5), rows), expected, strict=True)


def test_stats_from_sorted_table_equals_stats_from_table_and_refuses_what_it_does():
    """On rows sorted as ``segment_stats_of_models`` sorts them, the run-by-run reader gives
    what :func:`stats_from_table` gives; ragged rows, a duplicate id, a negative count and
    unsorted rows are refused."""
    rng = np.random.default_rng(9)
    rows = sorted(((f"m{m}", f"t{t}", int(i), metric, rng.integers(0, 9, size=width).tolist())
                   for metric, width in (("bleu", 10), ("chrf", 18)) for m in range(3)
                   for t in range(2) for i in rng.permutation(9)[:5 + t]),
                  key=lambda r: (r[3], r[0], r[1], r[2]))
    got, expected = stats_from_sorted_table(_stats_table(rows)), stats_from_table(
        _stats_table(rows))
    assert list(got) == list(expected)
    for metric, table in expected.items():
        assert list(got[metric]) == list(table)
        for key, want in table.items():
            np.testing.assert_array_equal(got[metric][key].ids, want.ids, strict=True)
            np.testing.assert_array_equal(got[metric][key].stats, want.stats, strict=True)
    first = rows[0]
    for changed, message in (
            ([(*first[:4], first[4][:3]), *rows[1:]], "bleu statistics of m0 on t0: rows of "
                                                       "different lengths"),
            ([first, (*first[:4], first[4]), *rows[1:]], "duplicate instance ids"),
            ([(*first[:4], [-1, *first[4][1:]]), *rows[1:]], "negative counts"),
            ([*rows[1:], first], "not sorted")):
        with pytest.raises(StatsError, match=message):
            stats_from_sorted_table(_stats_table(changed))


def test_one_model_added_to_kept_replicates_and_ranks_equals_a_full_aggregation(
        store, tmp_path, monkeypatch):
    """Aggregate every model but one (between the others in model order), then all: only the
    added model's replicates are computed, every rank is updated from the kept rank states (no
    full separability matrix), and every table equals the reference's full aggregation."""
    from cultivar_assets.metrics import ranks

    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=100)
    kept = tmp_path / "replicates"
    models = [f"model-{m:02d}" for m in range(N_MODELS)]
    aggregates.aggregate(store, [m for m in models if m != "model-13"], config=config,
                         replicates_dir=kept)
    assert (kept / aggregates.RANK_STATES_FILE).exists()
    computed: list[list[str]] = []
    full: list[int] = []
    real_replicates, real_separable = aggregates.model_replicates, ranks.separable
    monkeypatch.setattr(aggregates, "model_replicates", lambda stats, block, *a, **k: (
        computed.append(list(block)) or real_replicates(stats, block, *a, **k)))
    monkeypatch.setattr(ranks, "separable", lambda r, c: full.append(1) or real_separable(r, c))
    result = aggregates.aggregate(store, models, config=config, replicates_dir=kept)
    assert computed == [["model-13"]] and full == [] and result.rewritten == ["model-13"]
    assert result.kept["pools"] == f"{N_MODELS - 1} models' ids kept, 1 read"
    _, expected = reference_tables(store, config)
    _same_rows_of(result, expected, "model-13")
    stored = _stored(store)
    _same(stored, _fully_aggregated(store, config), "tables")
    _same(stored["leaderboard_ranks"], sorted((list(r.values()) for r in expected.ranks),
                                              key=repr), "stored ranks")


def test_kept_rank_states_of_other_settings_are_not_used(store, tmp_path, monkeypatch):
    """Rank states kept with another confidence are not used: the ranks are computed in full
    and equal the reference's at the new confidence."""
    from cultivar_assets.metrics import ranks

    kept = tmp_path / "replicates"
    aggregates.aggregate(store, config=MetricConfig(bleu_tokenize="13a",
                                                     bootstrap_replicates=100),
                         replicates_dir=kept)
    full: list[int] = []
    real = ranks.separable
    monkeypatch.setattr(ranks, "separable", lambda r, c: full.append(1) or real(r, c))
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=100, confidence=0.9)
    result = aggregates.aggregate(store, config=config, replicates_dir=kept)
    assert len(full) == 8  # every ranked column
    _, expected = reference_tables(store, config)
    _same(result.tables.ranks, expected.ranks, "ranks")


def test_a_missing_statistic_is_refused_naming_the_model(store, tmp_path):
    """A scored test set with one statistic row fewer than its scored segments is refused
    (the counts are read beside the other queries), and nothing is written."""
    copy = tmp_path / "missing.duckdb"
    copy.write_bytes(store.path.read_bytes())
    other = Store(copy)
    with other.connect() as con:
        con.execute("DELETE FROM raw.segment_stats WHERE model_id = 'model-04' AND metric = "
                    "'bleu' AND test_set = ? AND segment_id = 1",
                    [cultivar_test_set_name(LOCALES[1])])
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=20)
    before = other.query("leaderboard")
    with pytest.raises(aggregates.AggregationError,
                       match="per-segment statistics of model-04 are missing or do not match"):
        aggregates.aggregate(other, config=config, replicates_dir=tmp_path / "kept")
    assert other.query("leaderboard") == before
    assert [p.name for p in (tmp_path / "kept").iterdir()] == [aggregates.LOCK_FILE]  # no state


def _model_rows(store: Store, model: str) -> ScoreRows:
    """The model's rows of the four tables that ``write_model_scores`` replaces."""
    with store.connect(read_only=True) as con:
        return ScoreRows(*(con.sql(f"SELECT * FROM raw.{table} WHERE model_id = $model",
                                   params={"model": model}).to_arrow_table().to_pylist()
                           for table in ("scores", "segment_stats", "segment_scores",
                                         "word_recall")))


def test_recorded_digests_equal_the_hashed_ones(store):
    """The digests and counts read from ``raw.statistics_digests`` (recorded by
    ``record_statistics``) equal those hashed from the statistics themselves."""
    models = [f"model-{m:02d}" for m in range(N_MODELS)]
    recorded = aggregates._digests(store, models, scan=False)
    hashed = aggregates._digests(store, models, scan=True)
    assert recorded[2] == f"{N_MODELS} models' recorded, 0 hashed from their statistics"
    assert recorded[:2] == hashed[:2] and len(recorded[0]) == N_MODELS
    assert len(set(recorded[0].values())) == N_MODELS  # no two models hold the same rows


def test_a_statistic_changed_by_a_writer_is_noticed_from_its_record(store, tmp_path,
                                                                    monkeypatch):
    """A statistic of one model rewritten by ``write_model_scores`` (what ``cultivar score``
    and ``model_results`` run), its number of rows unchanged: the model's recorded digest
    changes with it, so its replicates and rows are computed again (read from the records,
    nothing hashed), and the tables equal a full aggregation's. A statistic deleted by hand
    (no record written) changes the model's number of rows: it is hashed and refused."""
    copy = tmp_path / "written.duckdb"
    copy.write_bytes(store.path.read_bytes())
    other = Store(copy)
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=40)
    kept = tmp_path / "replicates"
    aggregates.aggregate(other, config=config, replicates_dir=kept)
    rows = _model_rows(other, "model-03")
    changed = next(r for r in rows.segment_stats if r["metric"] == "chrf")
    changed["stats"] = [x + 1 for x in changed["stats"]]
    write_model_scores(other, "model-03", rows)
    computed: list[list[str]] = []
    real = aggregates.model_replicates
    monkeypatch.setattr(aggregates, "model_replicates", lambda stats, block, *a, **k: (
        computed.append(list(block)) or real(stats, block, *a, **k)))
    result = aggregates.aggregate(other, config=config, replicates_dir=kept)
    assert computed == [["model-03"]] and result.rewritten == ["model-03"]
    assert result.kept["digests"] == f"{N_MODELS} models' recorded, 0 hashed from their " \
                                     "statistics"
    _same(_stored(other), _fully_aggregated(other, config), "tables")

    with other.connect() as con:
        con.execute("DELETE FROM raw.segment_stats WHERE model_id = 'model-05' AND "
                    "metric = 'bleu' AND segment_id = 1 AND test_set = ?",
                    [cultivar_test_set_name(LOCALES[4])])
    with pytest.raises(aggregates.AggregationError,
                       match="per-segment statistics of model-05 are missing or do not match"):
        aggregates.aggregate(other, config=config, replicates_dir=kept)
