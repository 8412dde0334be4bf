"""The wired statistics: instance-paired ∆, the paper's averages with their n,
bootstrap intervals, rank intervals and contamination flags, through the store and its views.

Six systems made from the demo references (tests/statistics_helpers.py), one locale with two
instances fewer. Expected values are recomputed here from the raw text with sacreBLEU, scipy and
plain Python, independently of the code under test.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Mapping
from statistics import fmean

import duckdb
import numpy as np
import pytest
import sacrebleu
from scipy.stats import kendalltau, spearmanr
from statistics_helpers import DROPPED_IDS, MODELS, SHORT_LOCALE, build_statistics_store

from cultivar_assets.evaluation import AggregationError, aggregate, score_model
from cultivar_assets.evaluation.contamination import write_reported_flags
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.segment_stats import RECALL_COLUMNS, RecallCounts, SegmentStats
from cultivar_assets.models import load_models
from cultivar_assets.store.database import Store

CONFIG = MetricConfig(bleu_tokenize="13a")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The store with the six systems scored, before aggregation (copy it before changing it)."""
    folder = tmp_path_factory.mktemp("statistics")
    store, data = build_statistics_store(folder / "built.duckdb", folder / "cache")
    return store, data


@pytest.fixture(scope="module")
def aggregated(built, tmp_path_factory):
    store, data = built
    path = tmp_path_factory.mktemp("aggregated") / "stats.duckdb"
    shutil.copyfile(store.path, path)
    copy = Store(path)
    result = aggregate(copy, config=CONFIG)
    return copy, data, result


def fresh_copy(built, tmp_path) -> Store:
    path = tmp_path / "copy.duckdb"
    shutil.copyfile(built[0].path, path)
    return Store(path)


def rows(store: Store, sql: str) -> list[dict]:
    with duckdb.connect(str(store.path), read_only=True) as con:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def texts(store: Store) -> dict[tuple[str, str], dict[int, tuple[str, str]]]:
    """(model, test set) -> id -> (hypothesis, reference), from the translations view."""
    out: dict = {}
    for r in rows(store, "SELECT model_id, test_set, segment_id, hypothesis, reference "
                         "FROM translations"):
        out.setdefault((r["model_id"], r["test_set"]), {})[r["segment_id"]] = (
            r["hypothesis"], r["reference"])
    return out


def corpus(metric: str, items: dict[int, tuple[str, str]], ids) -> float:
    hyps, refs = [items[i][0] for i in ids], [items[i][1] for i in ids]
    if metric == "bleu":
        return sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a").score
    return sacrebleu.corpus_chrf(hyps, [refs]).score


# ---- §1: instance pairing, the paper's aggregates, every average with its n -----------------

@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_delta_is_instance_paired_on_a_locale_with_fewer_instances(aggregated, metric):
    store, data, _ = aggregated
    text = texts(store)
    deltas = {(r["model_id"], r["locale"]): r for r in rows(store,
                                                              "SELECT * FROM model_locale_deltas")}
    full = {(r["model_id"], r["test_set"]): r["score"] for r in rows(
        store, f"SELECT model_id, test_set, score FROM scores WHERE metric = '{metric}'")}
    short_ids = [i.instance_id for i in data.instances[SHORT_LOCALE]]
    assert len(short_ids) == 12 - len(DROPPED_IDS)
    unpaired_would_differ = 0
    for model in MODELS:
        swiss = deltas[model, SHORT_LOCALE]
        german = deltas[model, "deu_Latn_Germany"]
        assert (swiss["n_instances"], swiss["n_cultivar_only"]) == (10, 0)
        assert german["n_instances"] == 12
        flores = text[model, "flores_deu_Latn"]
        assert swiss[f"flores_{metric}"] == pytest.approx(
            corpus(metric, flores, short_ids), abs=1e-9)
        assert german[f"flores_{metric}"] == pytest.approx(full[model, "flores_deu_Latn"],
                                                           abs=1e-9)
        assert swiss[f"cultivar_{metric}"] == pytest.approx(
            full[model, f"cultivar_{SHORT_LOCALE}"], abs=1e-9)
        for row in (swiss, german):
            assert row[f"delta_{metric}"] == pytest.approx(
                row[f"cultivar_{metric}"] - row[f"flores_{metric}"], abs=1e-12)
        # the unpaired ∆ (cultivar minus the language's full FLORES score) is another number
        unpaired = full[model, f"cultivar_{SHORT_LOCALE}"] - full[model, "flores_deu_Latn"]
        unpaired_would_differ += abs(unpaired - swiss[f"delta_{metric}"]) > 1e-6
    assert unpaired_would_differ >= 3

    board = {r["model_id"]: r for r in rows(store, "SELECT * FROM leaderboard")}
    for model in MODELS:
        mine = [r[f"delta_{metric}"] for (m, _), r in deltas.items() if m == model]
        assert board[model][f"delta_{metric}"] == pytest.approx(fmean(mine), abs=1e-12)
        assert board[model]["n_locale_pairs"] == len(mine) == 6
        assert board[model]["n_flores_test_sets"] == 4
        assert board[model]["n_cultivar_test_sets"] == 6
    for row in rows(store, "SELECT * FROM locale_deltas"):
        mine = [r[f"delta_{metric}"] for (_, loc), r in deltas.items() if loc == row["locale"]]
        assert row[f"delta_{metric}"] == pytest.approx(fmean(mine), abs=1e-12)
        assert row["n_models"] == len(mine) == 6


def test_averages_state_their_n(aggregated):
    store, _, _ = aggregated
    board = rows(store, "SELECT * FROM leaderboard")
    locales = rows(store, "SELECT * FROM locale_deltas")
    averages = {(r["paper_table"], r["quantity"]): r for r in rows(
        store, "SELECT * FROM table_averages")}
    for metric in ("bleu", "chrf"):
        table4 = averages["table4", f"delta_{metric}"]
        assert table4["value"] == pytest.approx(fmean(r[f"delta_{metric}"] for r in locales))
        assert (table4["n"], table4["n_of"]) == (6, "locales")
        assert "unknown" in table4["note"]
        for column in (f"delta_{metric}", f"flores_{metric}", f"cultivar_{metric}"):
            table3 = averages["table3", column]
            assert table3["value"] == pytest.approx(fmean(r[column] for r in board))
            assert (table3["n"], table3["n_of"]) == (6, "models")
            assert table3["low"] <= table3["high"]
    recall = rows(store, "SELECT * FROM word_recall")
    for row in board:  # FP/FN: mean of the per-locale rates, over the locales that define them
        mine = [r for r in recall if r["model_id"] == row["model_id"]]
        fps = [r["false_positive_rate"] for r in mine if r["false_positive_rate"] is not None]
        assert row["false_positive_rate"] == pytest.approx(fmean(fps), abs=1e-12)
        assert row["n_fp_locales"] == len(fps) == 6
        assert row["n_fn_locales"] == 6


def test_rank_agreement_default_is_the_papers_average_with_ns(aggregated):
    store, _, _ = aggregated
    board = rows(store, "SELECT * FROM leaderboard ORDER BY model_id")
    agreement = rows(store, "SELECT * FROM rank_agreement")
    deltas = rows(store, "SELECT * FROM model_locale_deltas ORDER BY model_id")
    for metric in ("bleu", "chrf"):
        averages = [r for r in agreement if r["metric"] == metric and r["locale"] is None]
        assert [(r["aggregation"], r["is_default"]) for r in averages] == [
            ("model_averages", True), ("mean_of_locales", False)]
        default, mean_row = averages
        x = [r[f"flores_{metric}"] for r in board]
        y = [r[f"cultivar_{metric}"] for r in board]
        assert default["spearman"] == pytest.approx(spearmanr(x, y).statistic)
        assert default["kendall_tau_b"] == pytest.approx(kendalltau(x, y).statistic)
        assert (default["n_models"], default["n_locales"]) == (6, 6)
        per_locale = [r for r in agreement if r["metric"] == metric and r["locale"]]
        assert len(per_locale) == 6
        for row in per_locale:  # on the instance-paired scores of model_locale_deltas
            mine = [d for d in deltas if d["locale"] == row["locale"]]
            rho = spearmanr([d[f"flores_{metric}"] for d in mine],
                            [d[f"cultivar_{metric}"] for d in mine]).statistic
            assert row["spearman"] == pytest.approx(rho)
            assert (row["n_models"], row["n_locales"], row["is_default"]) == (6, 1, False)
        assert mean_row["spearman"] == pytest.approx(fmean(r["spearman"] for r in per_locale))
        assert mean_row["n_locales"] == 6


# ---- §2: intervals ---------------------------------------------------------------------------

def test_an_interval_equals_a_bootstrap_of_the_raw_text(aggregated):
    """The interval of one ∆, recomputed by resampling the texts and scoring with sacreBLEU."""
    store, data, result = aggregated
    settings = result.settings
    assert (settings["n_replicates"], settings["seed"], settings["confidence"]) == (
        1000, 12345, 0.95)
    universe = sorted({i.instance_id for rows_ in data.instances.values() for i in rows_})
    assert settings["n_instances"] == len(universe) == 12
    drawn = np.random.default_rng(12345).choice(len(universe), size=(1000, len(universe)))
    text = texts(store)
    model, locale = "drop-3", "deu_Latn_Germany"
    cultivar, flores = text[model, f"cultivar_{locale}"], text[model, "flores_deu_Latn"]
    deltas = np.array([corpus("bleu", cultivar, [universe[j] for j in row])
                       - corpus("bleu", flores, [universe[j] for j in row]) for row in drawn])
    ordered = np.sort(deltas)
    k = math.floor(1000 * 0.05 / 2 + 1e-9)
    [stored] = rows(store, f"SELECT * FROM model_locale_deltas WHERE model_id = '{model}' "
                           f"AND locale = '{locale}'")
    assert stored["delta_bleu_low"] == pytest.approx(ordered[k], abs=1e-6)
    assert stored["delta_bleu_high"] == pytest.approx(ordered[999 - k], abs=1e-6)


def test_intervals_are_ordered_and_zero_marks_agree(aggregated):
    store, _, _ = aggregated
    checked = 0
    for view, quantities in (
            ("model_locale_deltas", ["flores_bleu", "cultivar_bleu", "delta_bleu", "flores_chrf",
                                     "cultivar_chrf", "delta_chrf"]),
            ("leaderboard", ["delta_bleu", "delta_chrf", "flores_bleu", "flores_chrf",
                             "cultivar_bleu", "cultivar_chrf", "false_positive_rate",
                             "false_negative_rate"]),
            ("locale_deltas", ["delta_bleu", "delta_chrf"])):
        for row in rows(store, f"SELECT * FROM {view}"):
            for q in quantities:
                assert row[f"{q}_low"] <= row[f"{q}_high"], (view, q, row)
                if q.startswith("delta_"):
                    excludes = row[f"{q}_low"] > 0 or row[f"{q}_high"] < 0
                    assert row[f"{q}_excludes_zero"] is excludes
                checked += 1
    assert checked == 36 * 6 + 6 * 8 + 6 * 2
    memoriser = rows(store, "SELECT * FROM leaderboard WHERE model_id = 'memoriser'")[0]
    assert memoriser["delta_bleu_excludes_zero"] and memoriser["delta_bleu_high"] < -20


def test_intervals_follow_the_metrics_settings_and_are_reproducible(built, tmp_path):
    store = fresh_copy(built, tmp_path)
    config = CONFIG.model_copy(update={"bootstrap_replicates": 200, "bootstrap_seed": 7,
                                       "confidence": 0.9})
    first = aggregate(store, config=config)
    board = rows(store, "SELECT model_id, delta_bleu_low, delta_bleu_high FROM leaderboard")
    [settings] = rows(store, "SELECT * FROM statistics_settings")
    assert (settings["n_replicates"], settings["seed"], settings["confidence"]) == (200, 7, 0.9)
    assert "90 %" in settings["rank_rule"]
    aggregate(store, config=config)
    assert rows(store, "SELECT model_id, delta_bleu_low, delta_bleu_high FROM leaderboard"
                ) == board
    aggregate(store, config=CONFIG)
    other = rows(store, "SELECT model_id, delta_bleu_low, delta_bleu_high FROM leaderboard")
    assert other != board
    assert [r["model_id"] for r in other] == [r["model_id"] for r in board]
    assert first.settings["n_replicates"] == 200


# ---- §3: ranks -------------------------------------------------------------------------------

def test_rank_intervals_of_every_sortable_column(aggregated):
    store, _, _ = aggregated
    ranks = rows(store, "SELECT * FROM leaderboard_ranks")
    assert {r["quantity"] for r in ranks} == {
        "delta_bleu", "delta_chrf", "flores_bleu", "flores_chrf", "cultivar_bleu",
        "cultivar_chrf", "false_positive_rate", "false_negative_rate"}
    assert len(ranks) == 8 * 6
    board = rows(store, "SELECT * FROM leaderboard")  # sorted by ∆BLEU, highest first
    by_delta = {r["model_id"]: r for r in ranks if r["quantity"] == "delta_bleu"}
    for position, row in enumerate(board, 1):
        rank = by_delta[row["model_id"]]
        assert rank["rank"] == position == row["rank_delta_bleu"]
        assert (row["rank_delta_bleu_low"], row["rank_delta_bleu_high"]) == (
            rank["rank_low"], rank["rank_high"])
        assert rank["rank_low"] <= rank["rank_high"]
        expected = (f"rank {rank['rank_low']}" if rank["rank_low"] == rank["rank_high"]
                    else f"rank {rank['rank_low']}–{rank['rank_high']}")
        assert rank["rank_label"] == row["rank_delta_bleu_label"] == expected
        assert list(row["not_separable_delta_bleu"]) == list(rank["not_separable_from"])
    for quantity in {r["quantity"] for r in ranks}:  # "not separable" is symmetric
        mine = {r["model_id"]: set(r["not_separable_from"]) for r in ranks
                if r["quantity"] == quantity}
        for model, others in mine.items():
            assert all(model in mine[o] for o in others), (quantity, model)
    assert by_delta["memoriser"]["rank"] == 6 and by_delta["memoriser"]["rank_label"] == "rank 6"
    assert list(by_delta["memoriser"]["not_separable_from"]) == []
    fp = {r["model_id"]: r for r in ranks if r["quantity"] == "false_positive_rate"}
    assert fp["memoriser"]["rank"] == 6 and fp["memoriser"]["higher_is_better"] is False
    lowest = min(fp.values(), key=lambda r: r["value"])
    assert lowest["rank"] == 1


# ---- §4: flags -------------------------------------------------------------------------------

def test_contamination_rules_flag_the_memoriser_only_by_its_numbers(aggregated):
    store, _, _ = aggregated
    rules = {r["rule"]: r for r in rows(store, "SELECT * FROM contamination_rules "
                                               "WHERE source = 'evaluated'")}
    assert set(rules) == {"delta_outlier_bleu", "delta_outlier_chrf", "negative_share_bleu",
                          "negative_share_chrf", "false_positive_outlier"}
    for name in ("delta_outlier_bleu", "delta_outlier_chrf", "false_positive_outlier"):
        assert list(rules[name]["fired_for"]) == ["memoriser"], name
        assert rules[name]["applied"] and rules[name]["n_models"] == 6
        assert rules[name]["rule_text"]
    assert "memoriser" in rules["negative_share_bleu"]["fired_for"]
    flags = rows(store, "SELECT * FROM contamination_flags WHERE source = 'evaluated' AND "
                        "rule = 'delta_outlier_bleu'")
    assert all(f["used_interval"] for f in flags)
    board = {r["model_id"]: list(r["flags"]) for r in rows(store, "SELECT * FROM leaderboard")}
    assert board["memoriser"] == sorted(["delta_outlier_bleu", "delta_outlier_chrf",
                                         "false_positive_outlier", "negative_share_bleu",
                                         "negative_share_chrf"])
    assert board["drop-5"] == []


def test_reported_table3_flags_say_which_rules_could_not_be_applied(aggregated, tmp_path):
    store = Store(tmp_path / "reported.duckdb")
    shutil.copyfile(aggregated[0].path, store.path)
    registry = load_models()
    write_reported_flags(store, [registry.get(m) for m in registry])
    rules = {r["rule"]: r for r in rows(store, "SELECT * FROM contamination_rules "
                                               "WHERE source = 'reported'")}
    for metric in ("bleu", "chrf"):
        share = rules[f"negative_share_{metric}"]
        assert share["applied"] is False and "no per-locale" in share["note"]
        assert share["n_not_applied"] == share["n_models"] == 32
        outlier = rules[f"delta_outlier_{metric}"]
        assert outlier["applied"] and "no intervals" in outlier["note"]
        assert len(outlier["fired_for"]) == 2
    assert list(rules["false_positive_outlier"]["fired_for"]) == []
    aggregate(store, config=CONFIG)  # re-aggregating keeps the reported rows
    assert len(rows(store, "SELECT * FROM contamination_flags WHERE source = 'reported'")) == (
        32 * 5)


# ---- refusals --------------------------------------------------------------------------------

def test_missing_statistics_are_refused_naming_the_model(built, tmp_path):
    store = fresh_copy(built, tmp_path)
    with duckdb.connect(str(store.path)) as con:
        con.execute("DELETE FROM raw.segment_stats WHERE model_id = 'drop-4' AND "
                    "test_set = 'flores_hin_Deva'")
    with pytest.raises(AggregationError, match=r"drop-4.*re-materialise their scores"):
        aggregate(store, config=CONFIG)


def test_mixed_signatures_are_refused_and_leave_the_tables_unchanged(aggregated, tmp_path):
    store = Store(tmp_path / "mixed.duckdb")
    shutil.copyfile(aggregated[0].path, store.path)
    before = rows(store, "SELECT * FROM leaderboard")
    score_model(store, "drop-2", MetricConfig(bleu_tokenize="char"))
    with pytest.raises(AggregationError, match="never mixed in one table"):
        aggregate(store, config=CONFIG)
    assert rows(store, "SELECT * FROM leaderboard") == before


def stats_from_rows(rows: Iterable[Mapping]) -> dict[str, dict[tuple[str, str], SegmentStats]]:
    """The row-by-row reference reader: metric -> (model, test set) -> statistics, from
    ``segment_stats`` rows.

    Each row has ``model_id, test_set, segment_id, metric, stats`` (a list of integers).
    """
    grouped: dict[tuple[str, str, str], tuple[list[int], list]] = {}
    for row in rows:
        key = (row["metric"], row["model_id"], row["test_set"])
        ids, stats = grouped.setdefault(key, ([], []))
        ids.append(row["segment_id"])
        stats.append(row["stats"])
    result: dict[str, dict[tuple[str, str], SegmentStats]] = {}
    for (metric, model, test_set), (ids, stats) in grouped.items():
        result.setdefault(metric, {})[(model, test_set)] = SegmentStats.build(
            ids, stats, f"{metric} statistics of {model} on {test_set}"
        )
    return result




def recall_from_rows(rows: Iterable[Mapping]) -> dict[tuple[str, str], RecallCounts]:
    """(model, locale) -> counts, from ``word_recall`` rows (``model_id, locale, segment_id`` and
    the four ``RECALL_COLUMNS``)."""
    grouped: dict[tuple[str, str], tuple[list[int], list]] = {}
    for row in rows:
        ids, counts = grouped.setdefault((row["model_id"], row["locale"]), ([], []))
        ids.append(row["segment_id"])
        counts.append([row[c] for c in RECALL_COLUMNS])
    return {
        key: RecallCounts.build(ids, counts, f"word recall of {key[0]} on {key[1]}")
        for key, (ids, counts) in grouped.items()
    }


def test_the_arrow_readers_equal_the_row_readers(aggregated):
    """The aggregation reads statistics and recall counts as Arrow tables; the result is the
    same as the row-by-row readers'."""
    from cultivar_assets.metrics.segment_stats import recall_from_table, stats_from_table

    store = aggregated[0]
    by_rows = stats_from_rows(store.query("all_segment_stats"))
    by_table = stats_from_table(store.arrow("all_segment_stats"))
    assert by_rows.keys() == by_table.keys() == {"bleu", "chrf"}
    for metric, table in by_rows.items():
        assert table.keys() == by_table[metric].keys() and len(table) == 6 * 10
        for key, stats in table.items():
            assert np.array_equal(stats.ids, by_table[metric][key].ids)
            assert np.array_equal(stats.stats, by_table[metric][key].stats)
    recall_rows = recall_from_rows(store.query("all_word_recall"))
    recall_table = recall_from_table(store.arrow("all_word_recall"))
    assert recall_rows.keys() == recall_table.keys() and len(recall_rows) == 6 * 6
    for key, counts in recall_rows.items():
        assert np.array_equal(counts.ids, recall_table[key].ids)
        assert np.array_equal(counts.counts, recall_table[key].counts)
