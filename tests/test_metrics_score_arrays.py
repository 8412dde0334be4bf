"""score_arrays.py against sacreBLEU's own _compute_score_from_stats, on random and real stats.

Every comparison is ``==`` (bit for bit), as the stored scores must equal sacreBLEU's."""

from __future__ import annotations

import random

import numpy as np
import pytest
from metrics_helpers import ALPHABETS, random_corpus, reference_metrics
from sacrebleu.metrics import BLEU, CHRF

from cultivar_assets.metrics.registry import metric_registry
from cultivar_assets.metrics.score_arrays import (
    bleu_from_stats,
    chrf_from_stats,
    python_sum,
)


def random_bleu_stats(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random [sys_len, ref_len, correct_1..4, total_1..4] with zeros in every position, totals
    not necessarily decreasing (a zero total in the middle), correct sometimes above total."""
    total = rng.integers(0, 40, size=(n, 4))
    total[rng.random((n, 4)) < 0.12] = 0
    correct = (rng.random((n, 4)) * (total + 1)).astype(np.int64)
    correct[rng.random((n, 4)) < 0.3] = 0
    correct[rng.random((n, 4)) < 0.02] += 3
    sys_len = rng.integers(0, 80, size=n)
    sys_len[rng.random(n) < 0.05] = 0
    ref_len = rng.integers(0, 80, size=n)
    return np.column_stack([sys_len, ref_len, correct, total])


def random_chrf_stats(rng: np.random.Generator, n: int, orders: int) -> np.ndarray:
    hyp = rng.integers(0, 60, size=(n, orders))
    hyp[rng.random((n, orders)) < 0.12] = 0
    ref = rng.integers(0, 60, size=(n, orders))
    ref[rng.random((n, orders)) < 0.12] = 0
    match = (rng.random((n, orders)) * (np.minimum(hyp, ref) + 1)).astype(np.int64)
    match[rng.random((n, orders)) < 0.1] = 0
    stats = np.stack([hyp, ref, match], axis=2).reshape(n, 3 * orders)
    stats[rng.random(n) < 0.02] = 0  # all-zero rows
    return stats


def theirs(metric, stats: np.ndarray) -> np.ndarray:
    return np.array([metric._compute_score_from_stats([int(x) for x in row]).score
                     for row in stats])


def test_bleu_equals_sacrebleu_on_random_stats():
    stats = random_bleu_stats(np.random.default_rng(1), 6000)
    expected = theirs(BLEU(), stats)
    got = bleu_from_stats(stats)
    assert (expected > 0).mean() > 0.3 and (expected == 0).mean() > 0.05  # both branches hit
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("smooth_method, effective_order",
                         [("none", False), ("exp", True), ("none", True)])
def test_bleu_other_settings_equal_sacrebleu(smooth_method, effective_order):
    stats = random_bleu_stats(np.random.default_rng(2), 3000)
    expected = theirs(BLEU(smooth_method=smooth_method, effective_order=effective_order), stats)
    got = bleu_from_stats(stats, smooth_method=smooth_method, effective_order=effective_order)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("word_order", [0, 2])
def test_chrf_equals_sacrebleu_on_random_stats(word_order):
    stats = random_chrf_stats(np.random.default_rng(3 + word_order), 6000, 6 + word_order)
    expected = theirs(CHRF(word_order=word_order), stats)
    got = chrf_from_stats(stats)
    assert (expected == 0).any() and (expected > 0).mean() > 0.5
    np.testing.assert_array_equal(got, expected)


def test_hand_cases():
    # BLEU: sys_len 0 -> BP 0; no match -> 0; total_2 = 0 stops the orders -> precision 0 -> 0
    rows = np.array([
        [0, 5, 1, 0, 0, 0, 0, 0, 0, 0],
        [5, 5, 0, 0, 0, 0, 5, 4, 3, 2],
        [5, 5, 5, 0, 0, 0, 5, 0, 0, 0],
        [4, 4, 4, 3, 2, 1, 4, 3, 2, 1],  # perfect: 100
        [4, 4, 4, 3, 0, 0, 4, 3, 2, 1],  # p = 100, 100, 100/(2·2), 100/(4·1)
    ])
    got = bleu_from_stats(rows)
    expected_last = float(np.exp((2 * np.log(100) + np.log(25) + np.log(25)) / 4))
    np.testing.assert_allclose(got, [0, 0, 0, 100, expected_last], atol=1e-12)
    # chrF: no counted order -> 0; identical -> 100
    zero = np.zeros(18)
    same = np.tile([10, 10, 10], 6)
    np.testing.assert_allclose(chrf_from_stats(np.stack([zero, same])), [0, 100], atol=1e-12)


def test_shapes_are_kept_and_errors_are_clear():
    stats = random_bleu_stats(np.random.default_rng(4), 24).reshape(2, 3, 4, 10)
    got = bleu_from_stats(stats)
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got.reshape(-1), theirs(BLEU(), stats.reshape(-1, 10)))
    chrf = random_chrf_stats(np.random.default_rng(5), 6, 6).reshape(3, 2, 18)
    assert chrf_from_stats(chrf).shape == (3, 2)
    with pytest.raises(ValueError, match="10 columns"):
        bleu_from_stats(np.zeros((2, 9)))
    with pytest.raises(ValueError, match="triples"):
        chrf_from_stats(np.zeros((2, 17)))
    with pytest.raises(ValueError, match="'floor'"):
        bleu_from_stats(np.zeros((1, 10)), smooth_method="floor")


def test_real_corpus_statistics_equal_corpus_score():
    """Summed sacreBLEU segment statistics of real (random-text) corpora give corpus_score."""
    rng = random.Random(11)
    metrics = reference_metrics("13a")
    for alphabet in ("ascii", "devanagari", "cjk"):
        refs, systems = random_corpus(rng, ALPHABETS[alphabet], n_segments=25, n_systems=4)
        for hyps in systems.values():
            for name, metric in metrics.items():
                stats = np.array(metric._extract_corpus_statistics(hyps, [refs]))
                expected = metric.corpus_score(hyps, [refs]).score
                score = metric_registry().get(name).score_from_stats(stats.sum(axis=0))
                assert float(score) == expected


def test_issue_example_is_bit_exact():
    """The issue's case: NumPy's exp gave 88.24969025845957, sacreBLEU 88.24969025845958."""
    bleu = BLEU()
    hyp, ref = "a b c d e f g h", "a b c d e f g h i"
    stats = np.array(bleu._extract_corpus_statistics([hyp], [[ref]])).sum(axis=0)
    expected = bleu.corpus_score([hyp], [[ref]]).score
    assert expected == 88.24969025845958
    assert float(bleu_from_stats(stats)) == expected
    # the same through compute_bleu, sacreBLEU's public formula
    ref_score = BLEU.compute_bleu(correct=list(map(int, stats[2:6])),
                                  total=list(map(int, stats[6:])), sys_len=int(stats[0]),
                                  ref_len=int(stats[1]), smooth_method="exp")
    assert ref_score.score == expected


def test_many_realistic_corpus_sums_equal_compute_bleu():
    """Sums of the size a bootstrap replicate has (hundreds of segments: large counts, BP < 1
    and > 1) against ``BLEU.compute_bleu``, the case where NumPy's exp and log drifted."""
    rng = np.random.default_rng(7)
    n = 20000
    ref_len = rng.integers(2000, 12000, size=n)
    sys_len = (ref_len * rng.uniform(0.8, 1.15, size=n)).astype(np.int64)
    total = np.stack([np.maximum(sys_len - k * 200, 1) for k in range(4)], axis=1)
    quality = rng.uniform(0.05, 0.9, size=(n, 1))
    correct = rng.binomial(total, quality ** np.arange(1, 5))
    stats = np.column_stack([sys_len, ref_len, correct, total])
    expected = np.array([BLEU.compute_bleu(list(map(int, row[2:6])), list(map(int, row[6:])),
                                           int(row[0]), int(row[1]), smooth_method="exp").score
                         for row in stats])
    np.testing.assert_array_equal(bleu_from_stats(stats), expected)


def test_python_sum_is_builtin_sum_and_neumaier_by_hand():
    rng = np.random.default_rng(8)
    values = np.where(rng.random((5000, 4)) < 0.2, -9999999999.0, rng.normal(0, 3, (5000, 4)))
    got = python_sum(values)
    np.testing.assert_array_equal(got, [sum(row.tolist()) for row in values])
    # by hand: left to right, 1e16 + 1 rounds to 1e16, so the sum is 0; Neumaier keeps the 1
    hard = np.array([[1e16, 1.0, -1e16]])
    assert python_sum(hard, compensated=False)[0] == 0.0
    assert python_sum(hard, compensated=True)[0] == 1.0
