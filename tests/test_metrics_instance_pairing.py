"""Instance-paired ∆ (delta.py) as the pipeline computes it (``paired_bootstrap``'s point
estimate): the FLORES side on exactly the locale's ids, checked against sacreBLEU's corpus_score
on the raw text of those ids; BLEU and chrF joined by key; Table 4's average."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np
import pytest
from metrics_helpers import (
    PAIRED_LOCALES,
    paired_benchmark,
    reference_metrics,
    sacrebleu_segment_rows,
)

from cultivar_assets.data.locales import get_locale
from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.delta import PairingError, locale_average
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import SegmentStats, StatsError

METRICS = reference_metrics("13a")


def sacrebleu_stats(references, hypotheses) -> dict[str, dict[tuple[str, str], SegmentStats]]:
    rows = sacrebleu_segment_rows(METRICS, references, hypotheses)
    return {metric: {key: SegmentStats.build(*value) for key, value in table.items()}
            for metric, table in rows.items()}


def corpus_score(metric: str, refs: dict[int, str], hyps: dict[int, str], ids) -> float:
    return METRICS[metric].corpus_score([hyps[i] for i in ids], [[refs[i] for i in ids]]).score


LOCALES = list(PAIRED_LOCALES)


def point_pairs(stats, models, locales=LOCALES) -> list[dict]:
    """The pipeline's pair rows: the bootstrap's point estimate (weights 1)."""
    return paired_bootstrap(stats, models, locales,
                            config=BootstrapConfig(n_replicates=1),
                            score_functions=score_functions(stats)).pair_rows()


@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_flores_side_is_scored_on_the_locales_ids(metric):
    references, hypotheses = paired_benchmark()
    stats = sacrebleu_stats(references, hypotheses)
    pairs = point_pairs({metric: stats[metric]}, ["m1", "m2"])
    assert [(p["model_id"], p["locale"]) for p in pairs] == [(m, loc) for m in ("m1", "m2")
                                                              for loc in LOCALES]
    for p in pairs:
        language = get_locale(p["locale"]).source_language
        flores, cultivar = f"flores_{language}", f"cultivar_{p['locale']}"
        shared = sorted(set(references[cultivar]) & set(references[flores]))
        hyps = hypotheses[p["model_id"]]
        # bit for bit: the same summed statistics and sacreBLEU's formula
        assert p[f"flores_{metric}"] == corpus_score(
            metric, references[flores], hyps[flores], shared)
        assert p[f"cultivar_{metric}"] == corpus_score(
            metric, references[cultivar], hyps[cultivar], shared)
        assert p[f"delta_{metric}"] == p[f"cultivar_{metric}"] - p[f"flores_{metric}"]
        assert p["n_instances"] == len(shared)
        assert p["language"] == language
    by_key = {(p["model_id"], p["locale"]): p for p in pairs}
    # the US locale lacks 5 ids: its FLORES side differs from the full flores_hin_Deva score
    us = by_key[("m1", "hin_Deva_US")]
    full = corpus_score(metric, references["flores_hin_Deva"],
                        hypotheses["m1"]["flores_hin_Deva"], range(30))
    assert us["n_instances"] == 25 and us["n_cultivar_only"] == 0
    assert us[f"flores_{metric}"] != pytest.approx(full, abs=1e-6)
    assert by_key[("m1", "hin_Deva_India")][f"flores_{metric}"] == full
    # deu: id 4 has no FLORES original -> left out of both sides, and said so
    deu = by_key[("m2", "deu_Latn_Germany")]
    assert (deu["n_instances"], deu["n_cultivar_only"]) == (9, 1)
    whole = corpus_score(metric, references["cultivar_deu_Latn_Germany"],
                         hypotheses["m2"]["cultivar_deu_Latn_Germany"], range(10))
    assert deu[f"cultivar_{metric}"] != pytest.approx(whole, abs=1e-6)


def test_missing_side_no_pair_and_disjoint_ids_raise():
    references, hypotheses = paired_benchmark()
    stats = sacrebleu_stats(references, hypotheses)["bleu"]
    del stats[("m2", "flores_deu_Latn")]
    pairs = point_pairs({"bleu": stats}, ["m1", "m2"])
    assert ("m2", "deu_Latn_Germany") not in {(p["model_id"], p["locale"]) for p in pairs}
    assert len(pairs) == 5
    stats[("m2", "flores_deu_Latn")] = SegmentStats.build([100, 101], np.zeros((2, 10)))
    with pytest.raises(PairingError, match="share no instance id"):
        point_pairs({"bleu": stats}, ["m2"], ["deu_Latn_Germany"])


def test_segment_stats_validation():
    with pytest.raises(StatsError, match="duplicate instance ids \\[2\\]"):
        SegmentStats.build([1, 2, 2], np.zeros((3, 10)))
    with pytest.raises(StatsError, match="3 ids"):
        SegmentStats.build([1, 2, 3], np.zeros((2, 10)))
    with pytest.raises(StatsError, match="negative"):
        SegmentStats.build([1], -np.ones((1, 10)))
    s = SegmentStats.build([5, 1, 3], np.arange(30).reshape(3, 10))
    assert s.ids.tolist() == [1, 3, 5] and s.stats[0, 0] == 10  # sorted by id with its row
    with pytest.raises(StatsError, match="no row for instance ids \\[4\\]"):
        s.rows(np.array([3, 4]))


def test_metrics_are_joined_by_key_not_position():
    references, hypotheses = paired_benchmark()
    stats = sacrebleu_stats(references, hypotheses)
    # chrF's statistics listed in reverse order: the rows still join by (model, locale)
    stats["chrf"] = dict(reversed(list(stats["chrf"].items())))
    rows = point_pairs(stats, ["m1", "m2"])
    chrf = {(p["model_id"], p["locale"]): p for p in point_pairs({"chrf": stats["chrf"]},
                                                                ["m1", "m2"])}
    bleu = point_pairs({"bleu": stats["bleu"]}, ["m1", "m2"])
    assert [(r["model_id"], r["locale"]) for r in rows] == [(p["model_id"], p["locale"])
                                                            for p in bleu]
    for row in rows:
        p = chrf[(row["model_id"], row["locale"])]
        assert (row["flores_chrf"], row["cultivar_chrf"], row["delta_chrf"]) == (
            p["flores_chrf"], p["cultivar_chrf"], p["delta_chrf"])
        assert row["n_instances"] == p["n_instances"]
    # a pair that one metric has and another lacks is refused
    del stats["chrf"][("m1", "flores_deu_Latn")]
    with pytest.raises(PairingError, match="chrf pairs differ"):
        point_pairs(stats, ["m1", "m2"])


def reported_table4() -> list[dict]:
    text = resources.files("cultivar_assets.data").joinpath(
        "reported/table4_locales.csv").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_table4_average_is_the_mean_over_locales_with_its_n():
    rows = reported_table4()
    for column, expected in (("delta_bleu", -0.488), ("delta_chrf", -1.103)):
        means = {r["locale"]: (float(r[column]), 32) for r in rows}
        average = locale_average(means)
        assert average.n_locales == 27
        assert round(average.mean, 3) == expected


def test_table4_docstring_alternatives_do_not_give_the_printed_row():
    """The figures the delta.py docstring quotes; none is the paper's printed −0.27 / −1.05."""
    rows = reported_table4()
    for column, printed, by_language, official in (("delta_bleu", -0.27, -0.436, -0.616),
                                                   ("delta_chrf", -1.05, -1.214, -1.322)):
        grouped: dict[str, list[float]] = {}
        for r in rows:
            grouped.setdefault(get_locale(r["locale"]).source_language, []).append(
                float(r[column]))
        language_mean = np.mean([np.mean(v) for v in grouped.values()])
        official_rows = [float(r[column]) for r in rows
                         if get_locale(r["locale"]).official_or_de_facto]
        assert len(grouped) == 21 and len(official_rows) == 23
        assert round(language_mean, 3) == by_language
        assert round(float(np.mean(official_rows)), 3) == official
        column_mean = locale_average({r["locale"]: (float(r[column]), 1) for r in rows}).mean
        assert printed not in {round(column_mean, 2), round(language_mean, 2),
                               round(float(np.mean(official_rows)), 2)}


def test_locale_average_of_locale_means_and_empty():
    scores = {("a", "flores_hin_Deva"): 10, ("a", "cultivar_hin_Deva_US"): 12,
              ("b", "flores_hin_Deva"): 10, ("b", "cultivar_hin_Deva_US"): 8,
              ("a", "flores_deu_Latn"): 10, ("a", "cultivar_deu_Latn_Germany"): 13}
    # one segment, 6 orders of 200 n-grams each side, 2·score matches: chrF = score
    stats = {"chrf": {key: SegmentStats.build([0], np.tile([200, 200, 2 * v], 6)[None, :])
                      for key, v in scores.items()}}
    rows = paired_bootstrap(stats, ["a", "b"], ["hin_Deva_US", "deu_Latn_Germany"],
                            config=BootstrapConfig(n_replicates=1),
                            score_functions=score_functions(stats)).locale_rows()
    # locale means: US (2 - 2) / 2 = 0, Germany 3 -> mean over locales 1.5 (not over pairs: 1)
    average = locale_average({r["locale"]: (r["delta_chrf"], r["n_models"]) for r in rows})
    assert (average.mean, average.n_locales) == (pytest.approx(1.5, abs=1e-12), 2)
    assert locale_average({}).mean is None and locale_average({}).n_locales == 0
