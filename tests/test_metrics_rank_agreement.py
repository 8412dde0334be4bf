"""rank_agreement.py against scipy.stats (and one hand computation), with ties and edge cases;
the two labelled averages against the paper's reported Tables 2 and 3."""

from __future__ import annotations

import math
from statistics import fmean

import numpy as np
import pytest
from import_helpers import imports_module
from scipy.stats import kendalltau, spearmanr

from cultivar_assets.metrics.delta import PairDelta
from cultivar_assets.metrics.rank_agreement import (
    RankAgreement,
    agreement_averages,
    coefficients,
    mean_of_locales,
    model_average_agreement,
    per_locale_agreement,
)


def pairs_for(locale: str, flores: dict[str, float], cultivar: dict[str, float]):
    language = locale.rsplit("_", 1)[0]
    return [PairDelta(m, locale, language, flores[m], cultivar[m]) for m in flores]


def scipy_coefficients(x, y):
    return (float(spearmanr(x, y).statistic),
            float(kendalltau(x, y, variant="b").statistic))


def test_coefficients_hand_computed_with_ties():
    # x = [1, 2, 2, 3], y = [1, 3, 2, 4]
    # Kendall: pairs (1,2) C, (1,3) C, (1,4) C, (2,3) tied in x only, (2,4) C, (3,4) C
    #   P = 5, Q = 0, T_x = 1, T_y = 0 -> τ_b = 5 / sqrt((5 + 1) * 5) = 5 / sqrt(30)
    # Spearman: ranks x = [1, 2.5, 2.5, 4], ranks y = [1, 3, 2, 4], means 2.5
    #   dx = [-1.5, 0, 0, 1.5], dy = [-1.5, 0.5, -0.5, 1.5]
    #   cov = 2.25 + 2.25 = 4.5; Sxx = 4.5; Syy = 2.25 + 0.25 + 0.25 + 2.25 = 5
    #   r_s = 4.5 / sqrt(4.5 * 5) = sqrt(0.9)
    rho, tau, note = coefficients([1, 2, 2, 3], [1, 3, 2, 4])
    assert note is None
    assert rho == pytest.approx(math.sqrt(0.9), rel=1e-12)
    assert tau == pytest.approx(5 / math.sqrt(30), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_coefficients_equal_scipy_to_the_bit(seed):
    """SciPy's r_s and τ_b to the bit on lists of up to 1,200 values, with and without ties
    (the aggregation's leaderboard sizes)."""
    rng = np.random.default_rng(seed)
    for n in (3, 4, 7, 33, 34, 250, 1001, 1200):
        tied = rng.integers(0, 6, (2, n)).astype(float)
        rounded = np.round(rng.normal(size=(2, n)), 1)
        rounded[1] -= rounded[0]
        for x, y in (rng.normal(size=(2, n)), tied, rounded):
            if len(set(x)) == 1 or len(set(y)) == 1:
                continue
            rho, tau, note = coefficients(x.tolist(), y.tolist())
            assert (rho, tau, note) == (*scipy_coefficients(x.tolist(), y.tolist()), None), n


def test_coefficients_import_no_scipy_stats():
    """Aggregating does not pay for importing ``scipy.stats``: coefficients come from NumPy."""
    code = ("from cultivar_assets.metrics.rank_agreement import coefficients\n"
            "coefficients([1.0, 2.0, 2.0, 3.0], [1.0, 3.0, 2.0, 4.0])")
    assert not imports_module(code, "scipy.stats")


def test_coefficients_with_nan_are_undefined_without_note():
    """A NaN score makes both coefficients undefined, as SciPy's NaN policy "propagate"."""
    assert coefficients([1.0, 2.0, math.nan, 4.0], [1.0, 3.0, 2.0, 4.0]) == (None, None, None)


def test_per_locale_equal_scipy_with_ties():
    flores = {"m1": 10.0, "m2": 20.0, "m3": 20.0, "m4": 30.0, "m5": 40.0, "m6": 15.0}
    cultivar = {"m1": 1.0, "m2": 3.0, "m3": 2.0, "m4": 2.0, "m5": 5.0, "m6": 3.0}
    [row] = per_locale_agreement(pairs_for("hin_Deva_US", flores, cultivar), "bleu")
    assert row.aggregation == "per_locale"
    models = sorted(flores)
    rho, tau = scipy_coefficients([flores[m] for m in models], [cultivar[m] for m in models])
    assert (row.locale, row.metric, row.n_models, row.note) == ("hin_Deva_US", "bleu", 6, None)
    assert row.spearman == pytest.approx(rho, rel=1e-12)
    assert row.kendall_tau_b == pytest.approx(tau, rel=1e-12)
    # order of the input pairs does not matter
    shuffled = pairs_for("hin_Deva_US", flores, cultivar)[::-1]
    [again] = per_locale_agreement(shuffled, "bleu")
    assert (again.spearman, again.kendall_tau_b) == (row.spearman, row.kendall_tau_b)


def test_perfect_and_reversed_orders():
    flores = {"a": 1.0, "b": 2.0, "c": 3.0}
    up = per_locale_agreement(pairs_for("cmn_Hans_China", flores, {"a": 5, "b": 6, "c": 9}),
                              "chrf")
    down = per_locale_agreement(pairs_for("cmn_Hans_China", flores, {"a": 9, "b": 6, "c": 5}),
                                "chrf")
    assert (up[0].spearman, up[0].kendall_tau_b) == (pytest.approx(1.0), pytest.approx(1.0))
    assert (down[0].spearman, down[0].kendall_tau_b) == (pytest.approx(-1.0),
                                                         pytest.approx(-1.0))


def test_fewer_than_three_models_is_undefined():
    rows = per_locale_agreement(pairs_for("deu_Latn_Germany", {"a": 1, "b": 2},
                                          {"a": 2, "b": 1}), "bleu")
    per_locale = rows[0]
    assert per_locale.aggregation == "per_locale"
    assert per_locale.spearman is None and per_locale.kendall_tau_b is None
    assert per_locale.n_models == 2
    assert "3" in per_locale.note
    rho, tau, note = coefficients([1.0], [2.0])
    assert (rho, tau) == (None, None) and "3" in note


def test_constant_scores_are_undefined():
    rows = per_locale_agreement(
        pairs_for("deu_Latn_Germany", {"a": 5, "b": 5, "c": 5}, {"a": 1, "b": 2, "c": 3}),
        "bleu",
    )
    assert rows[0].spearman is None and rows[0].kendall_tau_b is None
    assert rows[0].note and "same score" in rows[0].note
    rho, tau, note = coefficients([1, 2, 3], [4, 4, 4])
    assert (rho, tau) == (None, None) and note


def build_three_locales():
    # five models on L1, L2 (all models), L3 (m5 missing)
    l1 = pairs_for("hin_Deva_US",
                   {"m1": 30, "m2": 25, "m3": 28, "m4": 10, "m5": 12},
                   {"m1": 20, "m2": 22, "m3": 21, "m4": 8, "m5": 9})
    l2 = pairs_for("hin_Deva_India",
                   {"m1": 30, "m2": 25, "m3": 28, "m4": 10, "m5": 12},
                   {"m1": 31, "m2": 24, "m3": 24, "m4": 15, "m5": 11})
    l3 = pairs_for("deu_Latn_Germany",
                   {"m1": 40, "m2": 35, "m3": 41, "m4": 20},
                   {"m1": 38, "m2": 39, "m3": 36, "m4": 60})
    return l1, l2, l3


def test_mean_of_locales_is_mean_of_per_locale_values():
    l1, l2, l3 = build_three_locales()
    rows = per_locale_agreement(l1 + l2 + l3, "chrf")
    per_locale = {r.locale: r for r in rows}
    assert list(per_locale) == sorted(["hin_Deva_US", "hin_Deva_India", "deu_Latn_Germany"])
    expected = {}
    for pairs in (l1, l2, l3):
        items = sorted(pairs, key=lambda p: p.model)
        expected[pairs[0].locale] = scipy_coefficients(
            [p.flores for p in items], [p.cultivar for p in items]
        )
    for locale, (rho, tau) in expected.items():
        assert per_locale[locale].spearman == pytest.approx(rho, rel=1e-12)
        assert per_locale[locale].kendall_tau_b == pytest.approx(tau, rel=1e-12)
    mean_row = mean_of_locales(rows, "chrf")
    assert (mean_row.aggregation, mean_row.n_locales, mean_row.note) == ("mean_of_locales", 3,
                                                                         None)
    assert mean_row.spearman == pytest.approx(fmean(v[0] for v in expected.values()))
    assert mean_row.kendall_tau_b == pytest.approx(fmean(v[1] for v in expected.values()))


def test_mean_of_locales_skips_undefined_locales():
    l1, _, _ = build_three_locales()
    two_models = pairs_for("cmn_Hans_China", {"m1": 1, "m2": 2}, {"m1": 1, "m2": 2})
    rows = per_locale_agreement(l1 + two_models, "bleu")
    by = {r.locale: r for r in rows}
    assert by["cmn_Hans_China"].spearman is None
    defined = by["hin_Deva_US"]
    mean_row = mean_of_locales(rows, "bleu")
    assert mean_row.n_locales == 1
    assert mean_row.spearman == pytest.approx(defined.spearman)
    assert mean_row.kendall_tau_b == pytest.approx(defined.kendall_tau_b)


def test_no_pairs():
    assert per_locale_agreement([], "bleu") == []
    empty = mean_of_locales([], "bleu")
    assert empty.spearman is None and empty.kendall_tau_b is None and "no locale" in empty.note


# ---- the labelled averages: the paper's (model_averages, default) and mean_of_locales ----

def reported_table3():
    from cultivar_assets.models import load_models

    registry = load_models()
    specs = [registry.get(name) for name in registry]
    return {s.id: s.reported for s in specs if s.reported is not None}


def reported_table2():
    import csv
    from importlib import resources

    text = resources.files("cultivar_assets.data").joinpath(
        "reported/table2_rank_correlation.csv").read_text("utf-8")
    rows = []
    for r in csv.DictReader(text.splitlines()):
        for metric in ("bleu", "chrf"):
            rows.append(RankAgreement("per_locale", r["locale"], metric,
                                      float(r[f"{metric}_spearman"]),
                                      float(r[f"{metric}_kendall_tau_b"]), 32, None))
    return rows


@pytest.mark.parametrize("metric, rho, tau, printed_rho, printed_tau", [
    ("bleu", 0.981, 0.907, 0.98, 0.91),
    ("chrf", 0.976, 0.890, 0.98, 0.89),
])
def test_model_averages_reproduce_the_papers_table2_average(metric, rho, tau, printed_rho,
                                                            printed_tau):
    table3 = reported_table3()
    assert len(table3) == 32
    average = model_average_agreement(
        {m: getattr(r, f"flores_{metric}") for m, r in table3.items()},
        {m: getattr(r, f"cultivar_{metric}") for m, r in table3.items()}, metric, n_locales=27)
    assert (average.aggregation, average.is_default) == ("model_averages", True)
    assert (average.n_models, average.n_locales, average.note) == (32, 27, None)
    assert round(average.spearman, 3) == rho and round(average.kendall_tau_b, 3) == tau
    # the printed Average row of Table 2, to its precision
    assert round(average.spearman, 2) == printed_rho
    assert round(average.kendall_tau_b, 2) == printed_tau


@pytest.mark.parametrize("metric, rho, tau", [("bleu", 0.964, 0.874), ("chrf", 0.973, 0.895)])
def test_mean_of_locales_of_the_papers_per_locale_values(metric, rho, tau):
    average = mean_of_locales(reported_table2(), metric)
    assert (average.aggregation, average.is_default) == ("mean_of_locales", False)
    assert (average.n_locales, average.n_models, average.note) == (27, 32, None)
    assert round(average.spearman, 3) == rho and round(average.kendall_tau_b, 3) == tau


def test_agreement_averages_default_first_with_ns():
    l1, l2, l3 = build_three_locales()
    pairs = l1 + l2 + l3
    flores = {"m1": 33.3, "m2": 28.3, "m3": 32.3, "m4": 13.3, "m5": 12.0}
    cultivar = {"m1": 29.7, "m2": 28.3, "m3": 27.0, "m4": 27.7, "m5": 10.0}
    per_locale, averages = agreement_averages(pairs, flores, cultivar, "bleu")
    assert [a.aggregation for a in averages] == ["model_averages", "mean_of_locales"]
    assert [r.locale for r in per_locale] == sorted(["hin_Deva_US", "hin_Deva_India",
                                                     "deu_Latn_Germany"])
    default, mean_row = averages
    rho, tau = scipy_coefficients([flores[m] for m in sorted(flores)],
                                  [cultivar[m] for m in sorted(flores)])
    assert default.spearman == pytest.approx(rho) and default.kendall_tau_b == pytest.approx(tau)
    assert (default.n_models, default.n_locales) == (5, 3)
    assert mean_row.spearman == pytest.approx(fmean(r.spearman for r in per_locale))
    assert (mean_row.n_locales, mean_row.n_models) == (3, 5)


def test_model_averages_use_models_with_both_averages_only():
    average = model_average_agreement({"a": 1, "b": 2, "c": 3, "d": 4},
                                      {"a": 1, "b": 3, "c": 2}, "chrf", n_locales=1)
    assert average.n_models == 3
    rho, tau = scipy_coefficients([1, 2, 3], [1, 3, 2])
    assert average.spearman == pytest.approx(rho) and average.kendall_tau_b == pytest.approx(tau)
    short = model_average_agreement({"a": 1, "b": 2}, {"a": 1, "b": 2}, "chrf", n_locales=1)
    assert short.spearman is None and "3" in short.note
    empty = mean_of_locales([], "bleu")
    assert empty.spearman is None and empty.n_locales == 0 and "no locale" in empty.note
