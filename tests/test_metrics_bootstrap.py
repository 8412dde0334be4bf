"""bootstrap.py: replicates against a plain loop over resampled ids scored by sacreBLEU, point
estimates against corpus_score, pairing, intervals against sacreBLEU's estimate_ci."""

from __future__ import annotations

import re

import numpy as np
import pytest
from metrics_helpers import (
    PAIRED_LOCALES,
    paired_benchmark,
    reference_metrics,
    sacrebleu_segment_rows,
)
from pydantic import ValidationError
from sacrebleu.significance import estimate_ci

from cultivar_assets.data.locales import get_locale
from cultivar_assets.metrics.bootstrap import (
    BootstrapConfig,
    BootstrapError,
    instance_weights,
    interval_positions,
    paired_bootstrap,
    percentile_interval,
)
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import RecallCounts, SegmentStats
from cultivar_assets.registry import UnknownEntryError

METRICS = reference_metrics("13a")
MODELS = ("m1", "m2")
LOCALES = list(PAIRED_LOCALES)


def make_input(seed: int = 3):
    references, hypotheses = paired_benchmark(seed, MODELS)
    raw = sacrebleu_segment_rows(METRICS, references, hypotheses)
    stats = {metric: {key: SegmentStats.build(*value) for key, value in table.items()}
             for metric, table in raw.items()}
    rng = np.random.default_rng(seed)
    recall = {}
    for model in MODELS:
        for locale in LOCALES:
            ids = sorted(references[f"cultivar_{locale}"])
            removed = rng.integers(0, 4, size=len(ids))
            introduced = rng.integers(0, 4, size=len(ids))
            counts = np.column_stack([removed, rng.binomial(removed, 0.3), introduced,
                                      rng.binomial(introduced, 0.4)])
            recall[(model, locale)] = RecallCounts.build(ids, counts)
    return references, hypotheses, raw, stats, recall


def loop_reference(raw, recall, n_replicates, seed):
    """Every quantity per replicate, by resampling ids and summing rows in Python loops, scored
    with sacreBLEU's _compute_score_from_stats (independent of bootstrap.py's matrices)."""
    universe = sorted({i for table in raw.values() for ids, _ in table.values() for i in ids})
    drawn = np.random.default_rng(seed).choice(len(universe), size=(n_replicates,
                                                                    len(universe)))
    out: dict[str, dict] = {}

    def score(metric, rows_by_id, ids, sample):
        k = len(next(iter(rows_by_id.values())))
        totals = [0] * k
        for i in sample:
            if i in ids:
                totals = [a + b for a, b in zip(totals, rows_by_id[i], strict=True)]
        return METRICS[metric]._compute_score_from_stats(totals).score

    for b in range(n_replicates):
        sample = [universe[j] for j in drawn[b]]
        for metric, table in raw.items():
            by_id = {key: dict(zip(ids, rows, strict=True)) for key, (ids, rows) in table.items()}
            for model in MODELS:
                deltas, flores_full, cultivar_full = [], {}, []
                for locale in LOCALES:
                    language = get_locale(locale).source_language
                    f_key, c_key = (model, f"flores_{language}"), (model, f"cultivar_{locale}")
                    shared = set(by_id[f_key]) & set(by_id[c_key])
                    f = score(metric, by_id[f_key], shared, sample)
                    c = score(metric, by_id[c_key], shared, sample)
                    out.setdefault(f"pair_delta_{metric}", {}).setdefault(
                        (model, locale), []).append(c - f)
                    out.setdefault(f"pair_flores_{metric}", {}).setdefault(
                        (model, locale), []).append(f)
                    deltas.append(c - f)
                    flores_full[language] = score(metric, by_id[f_key], set(by_id[f_key]),
                                                  sample)
                    cultivar_full.append(score(metric, by_id[c_key], set(by_id[c_key]), sample))
                    out.setdefault(f"locale_delta_{metric}", {}).setdefault(
                        (locale, b), []).append(c - f)
                out.setdefault(f"model_delta_{metric}", {}).setdefault(model, []).append(
                    sum(deltas) / len(deltas))
                out.setdefault(f"model_flores_{metric}", {}).setdefault(model, []).append(
                    sum(flores_full.values()) / len(flores_full))
                out.setdefault(f"model_cultivar_{metric}", {}).setdefault(model, []).append(
                    sum(cultivar_full) / len(cultivar_full))
        for model in MODELS:
            fps, fns = [], []
            for locale in LOCALES:
                counts = recall[(model, locale)]
                rows = dict(zip(counts.ids.tolist(), counts.counts.tolist(), strict=True))
                s = [0, 0, 0, 0]
                for i in sample:
                    if i in rows:
                        s = [a + c for a, c in zip(s, rows[i], strict=True)]
                if s[0]:
                    fps.append(s[1] / s[0])
                if s[2]:
                    fns.append(s[3] / s[2])
            out.setdefault("model_false_positive_rate", {}).setdefault(model, []).append(
                sum(fps) / len(fps) if fps else np.nan)
            out.setdefault("model_false_negative_rate", {}).setdefault(model, []).append(
                sum(fns) / len(fns) if fns else np.nan)
    locale_means = {}
    for metric in raw:
        per = out.pop(f"locale_delta_{metric}")
        locale_means[f"locale_delta_{metric}"] = {
            locale: [float(np.mean(per[(locale, b)])) for b in range(n_replicates)]
            for locale in LOCALES}
    out.update(locale_means)
    return out


def test_replicates_equal_a_loop_over_resampled_ids():
    _, _, raw, stats, recall = make_input()
    n_replicates, seed = 30, 99
    result = paired_bootstrap(stats, MODELS, LOCALES, recall,
                              BootstrapConfig(n_replicates=n_replicates, seed=seed),
                              score_functions=score_functions(stats))
    expected = loop_reference(raw, recall, n_replicates, seed)
    assert result.n_instances == 30
    for name, per_key in expected.items():
        quantity = result[name]
        for key, values in per_key.items():
            got = quantity.replicates[:, quantity.index(key)]
            np.testing.assert_allclose(got, values, rtol=0, atol=1e-9, err_msg=f"{name} {key}")


def test_point_estimates_are_corpus_scores_on_all_instances():
    references, hypotheses, _, stats, recall = make_input()
    result = paired_bootstrap(stats, MODELS, LOCALES, recall, BootstrapConfig(n_replicates=5),
                              score_functions=score_functions(stats))

    def corpus(metric, test_set, model, ids):
        hyps, refs = hypotheses[model][test_set], references[test_set]
        return METRICS[metric].corpus_score([hyps[i] for i in ids],
                                            [[refs[i] for i in ids]]).score

    for metric in METRICS:
        for model in MODELS:
            cultivar = []
            for locale in LOCALES:
                language = get_locale(locale).source_language
                shared = sorted(set(references[f"cultivar_{locale}"])
                                & set(references[f"flores_{language}"]))
                e = result[f"pair_delta_{metric}"].estimate((model, locale))
                expected = (corpus(metric, f"cultivar_{locale}", model, shared)
                            - corpus(metric, f"flores_{language}", model, shared))
                assert e.value == pytest.approx(expected, abs=1e-9)
                assert e.n == len(shared)
                assert e.low <= e.high
                cultivar.append(corpus(metric, f"cultivar_{locale}", model,
                                       sorted(references[f"cultivar_{locale}"])))
            flores = [corpus(metric, f"flores_{lang}", model,
                             sorted(references[f"flores_{lang}"]))
                      for lang in ("hin_Deva", "deu_Latn")]
            assert result[f"model_flores_{metric}"].estimate(model).value == pytest.approx(
                np.mean(flores), abs=1e-9)
            assert result[f"model_cultivar_{metric}"].estimate(model).value == pytest.approx(
                np.mean(cultivar), abs=1e-9)
    # FP rate on all instances: mean over locales of Σ-ratios
    fp = []
    for locale in LOCALES:
        c = recall[("m1", locale)].counts.sum(axis=0)
        fp.append(c[1] / c[0])
    assert result["model_false_positive_rate"].estimate("m1").value == pytest.approx(
        np.mean(fp))
    assert result["model_false_positive_rate"].estimate("m1").n == 3


def test_same_resample_on_both_sides_and_for_every_model():
    _, _, _, stats, _ = make_input()
    for metric in stats:
        # m2's Cultivar statistics on hin_Deva_India := its FLORES statistics (same ids):
        # a paired resample gives ∆ = 0 in every replicate; independent resamples would not
        stats[metric][("m2", "cultivar_hin_Deva_India")] = stats[metric][("m2", "flores_hin_Deva")]
        # m3 is a copy of m1: identical replicates, whatever the resample
        for (model, test_set), value in list(stats[metric].items()):
            if model == "m1":
                stats[metric][("m3", test_set)] = value
    result = paired_bootstrap(stats, ("m1", "m2", "m3"), LOCALES,
                              config=BootstrapConfig(n_replicates=200),
                              score_functions=score_functions(stats))
    delta = result["pair_delta_bleu"]
    column = delta.replicates[:, delta.index(("m2", "hin_Deva_India"))]
    assert np.all(column == 0)
    e = delta.estimate(("m2", "hin_Deva_India"))
    assert (e.low, e.high, e.excludes_zero) == (0.0, 0.0, False)
    assert np.std(delta.replicates[:, delta.index(("m2", "hin_Deva_US"))]) > 0
    for name in ("model_delta_chrf", "model_flores_bleu", "model_cultivar_chrf"):
        q = result[name]
        np.testing.assert_array_equal(q.replicates[:, q.index("m1")],
                                      q.replicates[:, q.index("m3")])


def test_instance_weights():
    w = instance_weights(7, 500, seed=5)
    assert w.shape == (500, 7) and w.dtype.kind == "i"
    assert np.all(w.sum(axis=1) == 7) and w.min() >= 0
    np.testing.assert_array_equal(w, instance_weights(7, 500, seed=5))
    assert not np.array_equal(w, instance_weights(7, 500, seed=6))
    # every position is drawn 1 time per replicate on average
    assert abs(w.mean() - 1) < 0.05
    with pytest.raises(BootstrapError):
        instance_weights(0, 5, seed=1)


@pytest.mark.parametrize("n", [1000, 999, 37, 10])
def test_percentile_interval_uses_sacrebleus_order_statistics(n):
    rng = np.random.default_rng(n)
    replicates = rng.normal(size=(n, 4))
    low, high = percentile_interval(replicates, 0.95)
    for j in range(4):
        _, ci = estimate_ci(replicates[:, j])
        assert (high[j] - low[j]) / 2 == pytest.approx(ci, abs=1e-12)
        ordered = np.sort(replicates[:, j])
        k, top = interval_positions(n, 0.95)
        assert (low[j], high[j]) == (ordered[k], ordered[top])


def test_percentile_interval_ignores_nan_replicates():
    values = np.arange(1.0, 101.0)
    column = np.concatenate([values, [np.nan] * 50])
    data = np.column_stack([column, np.full(150, np.nan)])
    low, high = percentile_interval(data, 0.9)
    # 100 finite values: k = floor(100 · 0.05) = 5 -> sorted[5] = 6, sorted[94] = 95
    assert (low[0], high[0]) == (6.0, 95.0)
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_rows_state_their_n_and_bounds():
    _, _, _, stats, recall = make_input()
    result = paired_bootstrap(stats, MODELS, LOCALES, recall, BootstrapConfig(n_replicates=50),
                              score_functions=score_functions(stats))
    pairs = {(r["model_id"], r["locale"]): r for r in result.pair_rows()}
    assert set(pairs) == {(m, loc) for m in MODELS for loc in LOCALES}
    us = pairs[("m1", "hin_Deva_US")]
    assert (us["language"], us["n_instances"], us["n_cultivar_only"]) == ("hin_Deva", 25, 0)
    assert pairs[("m1", "deu_Latn_Germany")]["n_cultivar_only"] == 1
    for row in pairs.values():
        for metric in ("bleu", "chrf"):
            low, high = row[f"delta_{metric}_low"], row[f"delta_{metric}_high"]
            assert low <= high
            assert row[f"delta_{metric}_excludes_zero"] == (low > 0 or high < 0)
            assert row[f"delta_{metric}"] == pytest.approx(
                row[f"cultivar_{metric}"] - row[f"flores_{metric}"])
    models = {r["model_id"]: r for r in result.model_rows()}
    m1 = models["m1"]
    assert (m1["n_locale_pairs"], m1["n_flores_test_sets"], m1["n_cultivar_test_sets"],
            m1["n_fp_locales"], m1["n_fn_locales"]) == (3, 2, 3, 3, 3)
    assert m1["delta_bleu"] == pytest.approx(
        np.mean([pairs[("m1", loc)]["delta_bleu"] for loc in LOCALES]))
    for column in ("delta_bleu", "flores_chrf", "cultivar_bleu", "false_negative_rate"):
        assert m1[f"{column}_low"] <= m1[f"{column}_high"]
    locales = {r["locale"]: r for r in result.locale_rows()}
    assert set(locales) == set(LOCALES)
    assert locales["hin_Deva_US"]["n_models"] == 2
    assert locales["hin_Deva_US"]["delta_chrf"] == pytest.approx(
        np.mean([pairs[(m, "hin_Deva_US")]["delta_chrf"] for m in MODELS]))


def test_model_without_any_pair_and_metric_subset():
    _, _, _, stats, _ = make_input()
    bleu_only = {"bleu": stats["bleu"]}
    result = paired_bootstrap(bleu_only, ("m1", "nobody"), LOCALES,
                              config=BootstrapConfig(n_replicates=20),
                              score_functions=score_functions(bleu_only))
    assert result.metrics == ("bleu",)
    e = result["model_delta_bleu"].estimate("nobody")
    assert (e.value, e.low, e.high, e.n) == (None, None, None, 0)
    assert "model_false_positive_rate" not in result.quantities
    with pytest.raises(KeyError, match="no quantity"):
        result["model_delta_chrf"]


def test_config_and_input_errors():
    with pytest.raises(ValidationError):
        BootstrapConfig(seed=0)
    with pytest.raises(ValidationError):
        BootstrapConfig(n_replicates=0)
    with pytest.raises(ValidationError):
        BootstrapConfig(confidence=1.0)
    with pytest.raises(ValidationError):
        BootstrapConfig(replicates=10)
    _, _, _, stats, _ = make_input()
    with pytest.raises(ValueError, match="unknown metrics"):
        score_functions(["meteor"])
    with pytest.raises(BootstrapError, match=r"no score function given for the metrics \['chrf'\]"):
        paired_bootstrap(stats, MODELS, LOCALES, score_functions=score_functions(["bleu"]))
    with pytest.raises(BootstrapError, match="no statistics"):
        paired_bootstrap(stats, ("nobody",), LOCALES, score_functions=score_functions(stats))
    with pytest.raises(UnknownEntryError):
        paired_bootstrap(stats, MODELS, ["xxx_Latn_Nowhere"],
                         score_functions=score_functions(stats))
    # chrF (18 columns) of one model beside chrF++ (24) of another
    wide = stats["chrf"][("m1", "flores_hin_Deva")]
    stats["chrf"][("m2", "flores_hin_Deva")] = SegmentStats.build(
        wide.ids, np.concatenate([wide.stats, wide.stats[:, :6]], axis=1))
    with pytest.raises(BootstrapError, match="different widths"):
        paired_bootstrap(stats, MODELS, LOCALES, score_functions=score_functions(stats))


def valid_chrf_rows(rng: np.random.Generator, n: int, quality: float) -> np.ndarray:
    hyp = rng.integers(40, 160, size=(n, 1)) - np.arange(6)
    ref = rng.integers(40, 160, size=(n, 1)) - np.arange(6)
    match = rng.binomial(np.minimum(hyp, ref), quality ** (np.arange(1, 7) / 3))
    return np.stack([hyp, ref, match], axis=2).reshape(n, 18)


COVERAGE_TRIALS = 1000


def nominal_coverage_bounds(trials: int, level: float = 0.95,
                            alpha: float = 0.001) -> tuple[int, int]:
    """The hit counts an interval of nominal ``level`` lands in with probability at least
    1 - ``alpha``: the central region of Binomial(trials, level), ``alpha / 2`` cut from each
    side. For 1,000 trials at 95 %: [926, 971] (P(X < 926) = 0.0004, P(X > 971) = 0.0004); an
    interval of 99 % coverage hits about 990 times and fails, one of 90 % about 900 and fails."""
    from scipy.stats import binom

    return int(binom.ppf(alpha / 2, trials, level)), int(binom.isf(alpha / 2, trials, level))


def test_the_coverage_bounds_are_those_stated():
    assert nominal_coverage_bounds(COVERAGE_TRIALS) == (926, 971)


@pytest.mark.slow
def test_interval_coverage_on_simulated_instances():
    """Percentile intervals of a pair ∆ cover the population ∆ 95 % of the time: the number of
    hits in :data:`COVERAGE_TRIALS` trials is within :func:`nominal_coverage_bounds` (two-sided,
    so an interval too wide fails as well as one too narrow), and the mean half-width is
    1.96 times the spread of the point estimates over the trials (±10 %; the spread's own
    standard error is about 2 % at 1,000 trials).

    A population of 4,000 instances has two versions of statistics each (qualities 0.5 and
    0.55); a trial samples 120 instances and bootstraps ∆ = chrF(version 2) − chrF(version 1);
    the population value is the ∆ over all 4,000. Measured: 949 hits, half-width ratio 1.009.
    """
    from cultivar_assets.metrics.score_arrays import chrf_from_stats

    population = np.random.default_rng(1)
    flores_rows = valid_chrf_rows(population, 4000, 0.5)
    cultivar_rows = valid_chrf_rows(population, 4000, 0.55)
    truth = chrf_from_stats(cultivar_rows.sum(0)) - chrf_from_stats(flores_rows.sum(0))
    rng = np.random.default_rng(0)
    hits, values, half_widths = 0, [], []
    for trial in range(COVERAGE_TRIALS):
        ids = np.sort(rng.choice(4000, size=120, replace=False))
        stats = {"chrf": {
            ("m", "flores_deu_Latn"): SegmentStats.build(ids, flores_rows[ids]),
            ("m", "cultivar_deu_Latn_Germany"): SegmentStats.build(ids, cultivar_rows[ids]),
        }}
        result = paired_bootstrap(stats, ["m"], ["deu_Latn_Germany"],
                                  config=BootstrapConfig(n_replicates=500, seed=trial + 1),
                                  score_functions=score_functions(stats))
        e = result["pair_delta_chrf"].estimate(("m", "deu_Latn_Germany"))
        hits += e.low <= truth <= e.high
        values.append(e.value)
        half_widths.append((e.high - e.low) / 2)
    low, high = nominal_coverage_bounds(COVERAGE_TRIALS)
    assert low <= hits <= high
    ratio = np.mean(half_widths) / (1.959964 * np.std(values, ddof=1))
    assert 0.9 <= ratio <= 1.1


def test_progress_bar_counts_every_block_to_the_end(capsys):
    """progress=True draws a tqdm bar named "bootstrap" on stderr that starts at 0 of the
    blocks and ends at all of them (one block per metric, test set and instance subset: here
    2 metrics x 7); progress=False writes nothing; the results are the same."""
    _, _, _, stats, _ = make_input()
    config = BootstrapConfig(n_replicates=3)
    quiet = paired_bootstrap(stats, MODELS, LOCALES, config=config,
                             score_functions=score_functions(stats))
    assert capsys.readouterr().err == ""
    shown = paired_bootstrap(stats, MODELS, LOCALES, config=config, progress=True,
                             score_functions=score_functions(stats))
    states = [line for line in capsys.readouterr().err.split("\r") if line.strip()]
    assert re.match(r"bootstrap:\s+0%\|\s*\| 0/14 \[", states[0])
    assert re.match(r"bootstrap: 100%\|.+\| 14/14 \[.*block/s\]", states[-1])
    key = ("m1", LOCALES[0])
    assert shown["pair_delta_chrf"].estimate(key) == quiet["pair_delta_chrf"].estimate(key)
