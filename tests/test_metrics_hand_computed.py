"""BLEU and chrF on tiny examples computed by hand (arithmetic in the comments)."""

from __future__ import annotations

import math

import pytest

from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.scoring import Scorer


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer(MetricConfig(bleu_tokenize="13a"))


def scores(scorer: Scorer, refs, hyps) -> dict[str, float]:
    stats = scorer.segment_statistics(refs, {"s": hyps})
    return {m: scorer.corpus_score(m, stats[m]["s"]) for m in ("bleu", "chrf")}


def test_bleu_one_segment(scorer):
    # ref: the cat sat on the mat (6 tokens); hyp: the cat sat on mat (5 tokens)
    # 1-grams: the cat sat on mat -> all in ref                                  5/5
    # 2-grams: the cat, cat sat, sat on | on mat (ref has on the, the mat)        3/4
    # 3-grams: the cat sat, cat sat on | sat on mat                              2/3
    # 4-grams: the cat sat on | cat sat on mat                                   1/2
    # BP = exp(1 - 6/5) = exp(-0.2)
    # BLEU = 100 * exp(-0.2) * (1 * 3/4 * 2/3 * 1/2) ** (1/4) = 100 * exp(-0.2) * (1/4) ** 0.25
    refs, hyps = ["the cat sat on the mat"], ["the cat sat on mat"]
    stats = scorer.segment_statistics(refs, {"s": hyps})["bleu"]["s"]
    assert stats.tolist() == [[5, 6, 5, 3, 2, 1, 5, 4, 3, 2]]
    expected = 100 * math.exp(-0.2) * 0.25**0.25  # = 57.8934...
    assert scores(scorer, refs, hyps)["bleu"] == pytest.approx(expected, rel=1e-12)


def test_bleu_two_segments_sums_statistics(scorer):
    # segment 1 as above: matches 5,3,2,1 of 5,4,3,2; lengths hyp 5 ref 6
    # segment 2: ref "a b", hyp "a b": matches 2,1,0,0 of 2,1,0,0; lengths 2, 2
    # corpus: p = 7/7, 4/5, 2/3, 1/2; hyp_len 7, ref_len 8 -> BP = exp(1 - 8/7) = exp(-1/7)
    # BLEU = 100 * exp(-1/7) * (1 * 4/5 * 2/3 * 1/2) ** (1/4) = 100 * exp(-1/7) * (4/15) ** 0.25
    refs = ["the cat sat on the mat", "a b"]
    hyps = ["the cat sat on mat", "a b"]
    expected = 100 * math.exp(-1 / 7) * (4 / 15) ** 0.25  # = 62.4...
    assert scores(scorer, refs, hyps)["bleu"] == pytest.approx(expected, rel=1e-12)


def test_bleu_exp_smoothing_for_zero_4gram_matches(scorer):
    # ref "a b c d", hyp "a b c e": p1 = 3/4, p2 = 2/3, p3 = 1/2, 4-gram 0/1
    # sacreBLEU's 'exp' smoothing: first zero-match order gets 1 / (2 * total) = 1/2
    # BP = 1 (4 tokens each); BLEU = 100 * (3/4 * 2/3 * 1/2 * 1/2) ** 0.25 = 100 * (1/8) ** 0.25
    expected = 100 * 0.125**0.25  # = 59.4603...
    assert scores(scorer, ["a b c d"], ["a b c e"])["bleu"] == pytest.approx(expected, rel=1e-12)


def test_bleu_no_matches_and_empty_hypothesis(scorer):
    # no matching unigram at all -> 0; an empty hypothesis corpus -> BP = 0 -> 0
    assert scores(scorer, ["a b c d"], ["x y z w"])["bleu"] == 0.0
    assert scores(scorer, ["a b c d"], [""])["bleu"] == 0.0
    assert scores(scorer, ["a b c d"], ["a b c d"])["bleu"] == pytest.approx(100.0, rel=1e-12)


def test_chrf_one_segment_whitespace_removed(scorer):
    # ref "a bc" -> chars "abc"; hyp "a b" -> chars "ab" (whitespace removed)
    # n=1: hyp {a, b} 2, ref {a, b, c} 3, match 2 -> P = 1, R = 2/3
    # n=2: hyp {ab} 1, ref {ab, bc} 2, match 1   -> P = 1, R = 1/2
    # n=3..6: hyp has none -> not in the effective order
    # avgP = 1, avgR = (2/3 + 1/2) / 2 = 7/12
    # chrF = 100 * (1 + 4) * P * R / (4 * P + R) = 100 * (35/12) / (55/12) = 100 * 7/11
    refs, hyps = ["a bc"], ["a b"]
    stats = scorer.segment_statistics(refs, {"s": hyps})["chrf"]["s"]
    # [hyp, ref, match] for n = 1..6
    assert stats.tolist() == [[2, 3, 2, 1, 2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    assert scores(scorer, refs, hyps)["chrf"] == pytest.approx(100 * 7 / 11, rel=1e-12)


def test_chrf_two_segments_sums_before_dividing(scorer):
    # segment 1 as above: n=1 (2, 3, 2), n=2 (1, 2, 1), n=3 (0, 1, 0)
    # segment 2: ref "xyz", hyp "xyz": n=1 (3, 3, 3), n=2 (2, 2, 2), n=3 (1, 1, 1)
    # corpus: n=1 P = 5/5, R = 5/6; n=2 P = 3/3, R = 3/4; n=3 P = 1/1, R = 1/2
    # avgP = 1, avgR = (5/6 + 3/4 + 1/2) / 3 = 25/36
    # chrF = 100 * 5 * (25/36) / (4 + 25/36) = 100 * 125/169
    refs, hyps = ["a bc", "xyz"], ["a b", "xyz"]
    assert scores(scorer, refs, hyps)["chrf"] == pytest.approx(100 * 125 / 169, rel=1e-12)


def test_chrf_hypothesis_ngrams_not_counted_when_reference_has_none(scorer):
    # segment 1: ref "" (no n-grams), hyp "abc": sacreBLEU counts hyp n-grams as 0 here
    # segment 2: ref "ab", hyp "ab": n=1 (2, 2, 2), n=2 (1, 1, 1)
    # corpus: n=1 P = 2/2, R = 2/2; n=2 P = 1/1, R = 1/1 -> chrF = 100
    # (counting "abc"'s n-grams would give n=1 P = 2/5 and a lower score)
    refs, hyps = ["", "ab"], ["abc", "ab"]
    stats = scorer.segment_statistics(refs, {"s": hyps})["chrf"]["s"]
    assert stats[0].tolist() == [0] * 18
    assert scores(scorer, refs, hyps)["chrf"] == pytest.approx(100.0, rel=1e-12)


def test_lowercase_option():
    # BLEU, hyp "The Cat Sat On It" vs ref "the cat sat on it": case-sensitive, no token
    # matches ("It" != "it" too) -> 0; lowercased, identical -> 100
    mixed = Scorer(MetricConfig(bleu_tokenize="13a"))
    lower = Scorer(MetricConfig(bleu_tokenize="13a", lowercase=True))
    ref, hyp = ["the cat sat on it"], ["The Cat Sat On It"]
    assert scores(mixed, ref, hyp)["bleu"] == 0.0
    assert scores(lower, ref, hyp)["bleu"] == pytest.approx(100.0, rel=1e-12)
    # (with only 2 tokens BLEU would be 0 even lowercased: no 3-/4-grams, no effective order)
    assert scores(lower, ["the cat"], ["The Cat"])["bleu"] == 0.0
    # chrF, case-sensitive: chars "TheCat" vs "thecat": n=1 matches h, e, a, t = 4 of 6 each way
    # n=2: hyp Th he eC Ca at, ref th he ec ca at -> he, at = 2 of 5
    # n=3: The heC eCa Cat vs the hec eca cat -> 0 of 4; n=4..6: 0 of 3, 2, 1
    # avgP = avgR = (4/6 + 2/5 + 0 + 0 + 0 + 0) / 6 = (16/15) / 6 = 8/45; F = P when P = R
    assert scores(mixed, ["the cat"], ["The Cat"])["chrf"] == pytest.approx(100 * 8 / 45)
    assert scores(lower, ["the cat"], ["The Cat"])["chrf"] == pytest.approx(100.0)


def test_chrf_plus_plus_word_orders():
    # chrF++ (word_order 2), ref "a b", hyp "a c":
    # chars "ab" vs "ac": n=1 (2, 2, 1) P = R = 1/2; n=2 (1, 1, 0) P = R = 0
    # words: n=1 {a, c} vs {a, b} (2, 2, 1) P = R = 1/2; n=2 {"a c"} vs {"a b"} (1, 1, 0) -> 0
    # effective order 4: avgP = avgR = (1/2 + 0 + 1/2 + 0) / 4 = 1/4 -> chrF++ = 25
    scorer = Scorer(MetricConfig(bleu_tokenize="13a", chrf_word_order=2))
    stats = scorer.segment_statistics(["a b"], {"s": ["a c"]})["chrf"]["s"]
    assert stats.tolist() == [[2, 2, 1, 1, 1, 0] + [0] * 12 + [2, 2, 1, 1, 1, 0]]
    assert scores(scorer, ["a b"], ["a c"])["chrf"] == pytest.approx(25.0, rel=1e-12)
