"""Instance-paired ∆ (delta.py): the FLORES side on exactly the locale's ids, checked against
sacreBLEU's corpus_score on the raw text of those ids; BLEU and chrF joined by key; Table 4's
average."""

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
from cultivar_assets.metrics.delta import (
    PairDelta,
    PairingError,
    instance_paired_deltas,
    join_metric_pairs,
    locale_average,
    locale_mean_deltas,
)
from cultivar_assets.metrics.segment_stats import SegmentStats, StatsError

METRICS = reference_metrics("13a")


def sacrebleu_stats(references, hypotheses) -> dict[str, dict[tuple[str, str], SegmentStats]]:
    rows = sacrebleu_segment_rows(METRICS, references, hypotheses)
    return {metric: {key: SegmentStats.build(*value) for key, value in table.items()}
            for metric, table in rows.items()}


def corpus_score(metric: str, refs: dict[int, str], hyps: dict[int, str], ids) -> float:
    return METRICS[metric].corpus_score([hyps[i] for i in ids], [[refs[i] for i in ids]]).score


LOCALES = list(PAIRED_LOCALES)


@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_flores_side_is_scored_on_the_locales_ids(metric):
    references, hypotheses = paired_benchmark()
    stats = sacrebleu_stats(references, hypotheses)
    pairs = instance_paired_deltas(stats[metric], ["m1", "m2"], LOCALES, metric)
    assert [(p.model, p.locale) for p in pairs] == [(m, loc) for m in ("m1", "m2")
                                                    for loc in LOCALES]
    for p in pairs:
        language = get_locale(p.locale).source_language
        flores, cultivar = f"flores_{language}", f"cultivar_{p.locale}"
        shared = sorted(set(references[cultivar]) & set(references[flores]))
        hyps = hypotheses[p.model]
        assert p.flores == pytest.approx(
            corpus_score(metric, references[flores], hyps[flores], shared), abs=1e-9)
        assert p.cultivar == pytest.approx(
            corpus_score(metric, references[cultivar], hyps[cultivar], shared), abs=1e-9)
        assert p.delta == pytest.approx(p.cultivar - p.flores)
        assert p.n_instances == len(shared)
        assert p.language == language
    by_key = {(p.model, p.locale): p for p in pairs}
    # the US locale lacks 5 ids: its FLORES side differs from the full flores_hin_Deva score
    us = by_key[("m1", "hin_Deva_US")]
    full = corpus_score(metric, references["flores_hin_Deva"],
                        hypotheses["m1"]["flores_hin_Deva"], range(30))
    assert us.n_instances == 25 and us.n_cultivar_only == 0
    assert us.flores != pytest.approx(full, abs=1e-6)
    assert by_key[("m1", "hin_Deva_India")].flores == pytest.approx(full, abs=1e-9)
    # deu: id 4 has no FLORES original -> left out of both sides, and said so
    deu = by_key[("m2", "deu_Latn_Germany")]
    assert (deu.n_instances, deu.n_cultivar_only) == (9, 1)
    whole = corpus_score(metric, references["cultivar_deu_Latn_Germany"],
                         hypotheses["m2"]["cultivar_deu_Latn_Germany"], range(10))
    assert deu.cultivar != pytest.approx(whole, abs=1e-6)


def test_missing_side_no_pair_and_disjoint_ids_raise():
    references, hypotheses = paired_benchmark()
    stats = sacrebleu_stats(references, hypotheses)["bleu"]
    del stats[("m2", "flores_deu_Latn")]
    pairs = instance_paired_deltas(stats, ["m1", "m2"], LOCALES, "bleu")
    assert ("m2", "deu_Latn_Germany") not in {(p.model, p.locale) for p in pairs}
    assert len(pairs) == 5
    stats[("m2", "flores_deu_Latn")] = SegmentStats.build([100, 101], np.zeros((2, 10)))
    with pytest.raises(PairingError, match="share no instance id"):
        instance_paired_deltas(stats, ["m2"], ["deu_Latn_Germany"], "bleu")


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


def test_join_metric_pairs_by_key_not_position():
    references, hypotheses = paired_benchmark()
    stats = sacrebleu_stats(references, hypotheses)
    bleu = instance_paired_deltas(stats["bleu"], ["m1", "m2"], LOCALES, "bleu")
    chrf = instance_paired_deltas(stats["chrf"], ["m1", "m2"], LOCALES, "chrf")
    rows = join_metric_pairs({"bleu": bleu, "chrf": chrf[::-1]})  # chrF in reverse order
    assert [(r["model_id"], r["locale"]) for r in rows] == sorted((p.model, p.locale)
                                                                  for p in bleu)
    by_key = {(p.model, p.locale): p for p in chrf}
    for row in rows:
        p = by_key[(row["model_id"], row["locale"])]
        assert (row["flores_chrf"], row["cultivar_chrf"], row["delta_chrf"]) == (
            p.flores, p.cultivar, p.delta)
        assert row["n_instances"] == p.n_instances
    with pytest.raises(PairingError, match="no chrf pair"):
        join_metric_pairs({"bleu": bleu, "chrf": chrf[1:]})
    with pytest.raises(PairingError, match="two pairs"):
        join_metric_pairs({"bleu": bleu + bleu[:1]})


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
    pairs = [PairDelta("a", "hin_Deva_US", "hin_Deva", 10, 12),
             PairDelta("b", "hin_Deva_US", "hin_Deva", 10, 8),
             PairDelta("a", "deu_Latn_Germany", "deu_Latn", 10, 13)]
    # locale means: US (2 - 2) / 2 = 0, Germany 3 -> mean over locales 1.5 (not over pairs: 1)
    average = locale_average(locale_mean_deltas(pairs))
    assert (average.mean, average.n_locales) == (pytest.approx(1.5), 2)
    assert locale_average({}).mean is None and locale_average({}).n_locales == 0
