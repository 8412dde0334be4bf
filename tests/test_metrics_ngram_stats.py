"""ngram_stats / Scorer.segment_statistics against sacreBLEU's own per-segment statistics.

Expected values come from sacreBLEU (``metric._extract_corpus_statistics``, ``corpus_score``) or
from a plain Counter implementation of the docstring formulas (``metrics_helpers``).
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from import_helpers import imports_module
from metrics_helpers import (
    ALPHABETS,
    counter_match_statistics,
    random_corpus,
    reference_metrics,
)

from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.ngram_stats import (
    _LIMIT,
    char_unit_ids,
    match_statistics,
    token_unit_ids,
)
from cultivar_assets.metrics.scoring import Scorer


@functools.cache
def scorer(tokenize: str, word_order: int, lowercase: bool) -> Scorer:
    return Scorer(
        MetricConfig(bleu_tokenize=tokenize, chrf_word_order=word_order, lowercase=lowercase)
    )


def assert_same_as_sacrebleu(ours: Scorer, refs, systems, tokenize, word_order, lowercase):
    stats = ours.segment_statistics(refs, systems)
    reference = reference_metrics(tokenize, word_order, lowercase)
    for metric, theirs in reference.items():
        for name, hyps in systems.items():
            expected = theirs._extract_corpus_statistics(hyps, [refs])
            got = stats[metric][name]
            assert got.dtype.kind == "i"
            assert got.tolist() == expected, (metric, name)
            # corpus score: exactly sacreBLEU's float
            assert ours.corpus_score(metric, got) == theirs.corpus_score(hyps, [refs]).score


SCRIPT_MIXES = {
    "ascii": ALPHABETS["ascii"] + ALPHABETS["punct"],
    "accented": ALPHABETS["accented"] + ALPHABETS["ascii"][:8] + ALPHABETS["punct"],
    "devanagari": ALPHABETS["devanagari"] + "।॥.,",
    "cjk": ALPHABETS["cjk"] + "。，！",
    "emoji": ALPHABETS["emoji"] + ALPHABETS["ascii"][:5],
    "mixed": "".join(ALPHABETS.values()),
}


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("word_order", [0, 2])
@pytest.mark.parametrize("tokenize", ["13a", "char", "intl"])
@pytest.mark.parametrize("script", sorted(SCRIPT_MIXES))
def test_segment_statistics_equal_sacrebleu_random(script, tokenize, word_order, lowercase):
    seed = sum(map(ord, f"{script}{tokenize}{word_order}{lowercase}"))  # stable across runs
    rng = random.Random(seed)
    refs, systems = random_corpus(rng, SCRIPT_MIXES[script], n_segments=12, n_systems=5)
    assert_same_as_sacrebleu(
        scorer(tokenize, word_order, lowercase), refs, systems, tokenize, word_order, lowercase
    )


@pytest.mark.parametrize("tokenize", ["13a", "char", "intl"])
def test_edge_segments_equal_sacrebleu(tokenize):
    # empty and near-empty references/hypotheses, repeated n-grams, whitespace variants
    refs = [
        "",
        "a",
        ".",
        "the cat",
        "the the the the",
        "Tabs\tand\u3000ideographic  spaces",
        "   ",
        "x",
        "Zürich Mölders café",
    ]
    systems = {
        "empty": [""] * len(refs),
        "same": list(refs),
        "dots": ["."] * len(refs),
        "repeat": ["the the the the the"] * len(refs),
        "ws": ["Tabs and\tideographic\u3000\u3000spaces"] * len(refs),
        "short": ["a", "", "a", "the", "the", "Tabs", "", "x x", "zürich"],
    }
    for word_order in (0, 2):
        for lowercase in (False, True):
            assert_same_as_sacrebleu(
                scorer(tokenize, word_order, lowercase), refs, systems, tokenize, word_order,
                lowercase,
            )


def test_many_systems_at_once_equal_one_at_a_time():
    rng = random.Random(7)
    refs, systems = random_corpus(rng, SCRIPT_MIXES["mixed"], n_segments=20, n_systems=30)
    ours = scorer("13a", 2, False)
    together = ours.segment_statistics(refs, systems)
    assert_same_as_sacrebleu(ours, refs, systems, "13a", 2, False)
    for name, hyps in systems.items():
        alone = ours.segment_statistics(refs, {name: hyps})
        for metric in ("bleu", "chrf"):
            np.testing.assert_array_equal(alone[metric][name], together[metric][name])


def test_statistics_shapes():
    refs = ["a b c", "d e"]
    stats = scorer("13a", 0, False).segment_statistics(refs, {"s": ["a b", "d"]})
    # BLEU: hyp_len, ref_len, match_1..4, hyp_count_1..4; chrF: 3 columns per char order 1..6
    assert stats["bleu"]["s"].shape == (2, 2 + 4 + 4)
    assert stats["chrf"]["s"].shape == (2, 3 * 6)
    stats = scorer("13a", 2, False).segment_statistics(refs, {"s": ["a b", "d"]})
    assert stats["chrf"]["s"].shape == (2, 3 * (6 + 2))


def test_overflow_densify_path_chars_equal_sacrebleu():
    # 2500 distinct code points: 2500**6 > 2**62, so the n-gram code is re-numbered at order 6,
    # and with >= 19 rows 2500**5 * rows > 2**62, so the (row, code) keys are re-numbered too.
    rng = random.Random(11)
    alphabet = [chr(0x4E00 + i) for i in range(2500)]
    common = alphabet[:25]
    refs = ["".join(alphabet)]
    refs += ["".join(rng.choice(common) for _ in range(rng.randint(0, 40))) for _ in range(24)]
    hyps = ["".join(rng.choice(common) for _ in range(rng.randint(0, 40))) for _ in refs]
    hyps[0] = refs[0][:700] + refs[0][900:1200] + refs[0][:50]
    systems = {"a": hyps, "b": list(refs), "c": [r[::-1] for r in refs]}

    rows = refs + [h for hs in systems.values() for h in hs]
    _, _, size = char_unit_ids(rows)
    assert size == 2500
    assert size**6 >= _LIMIT  # code re-numbering happens
    assert size**5 * len(rows) >= _LIMIT  # key re-numbering happens
    for word_order in (0, 2):
        assert_same_as_sacrebleu(
            scorer("char", word_order, False), refs, systems, "char", word_order, False
        )


def test_overflow_densify_path_tokens_equal_sacrebleu():
    # 50 000 distinct tokens: 50000**4 > 2**62, so BLEU's 4-gram codes are re-numbered
    words = [f"w{i}" for i in range(50_000)]
    refs = [" ".join(words[i * 1000:(i + 1) * 1000]) for i in range(50)]
    hyps = [
        " ".join(words[i * 1000:i * 1000 + 400] + words[i * 1000 + 500:(i + 1) * 1000])
        for i in range(50)
    ]
    _, _, size = token_unit_ids([r.split() for r in refs + hyps])
    assert size**4 >= _LIMIT
    ours = scorer("13a", 0, False)
    stats = ours.segment_statistics(refs, {"h": hyps})["bleu"]["h"]
    bleu = reference_metrics("13a")["bleu"]
    assert stats.tolist() == bleu._extract_corpus_statistics(hyps, [refs])
    # hand check of one segment: 900 tokens, 1000 ref tokens; all 900 unigrams match, n-grams
    # crossing the gap (400 | 500) do not: match_n = (400 - n + 1) + (500 - n + 1)
    assert stats[0].tolist() == [900, 1000, 900, 898, 896, 894, 900, 899, 898, 897]


@pytest.mark.parametrize("max_order", [1, 4, 6])
def test_match_statistics_direct_with_segment_mapping(max_order):
    # hypotheses are mapped to segments out of order and several to one segment
    rng = random.Random(max_order)
    refs = ["".join(rng.choice("abcab") for _ in range(rng.randint(0, 12))) for _ in range(6)]
    hyp_segment = np.array([3, 0, 0, 5, 2, 1, 4, 3, 5], dtype=np.int64)
    hyps = [
        "".join(rng.choice("abcd") for _ in range(rng.randint(0, 12))) for _ in hyp_segment
    ]
    hyps[0] = refs[3]
    ids, lengths, size = char_unit_ids(refs + hyps)
    hc, rc, mc = match_statistics(ids, lengths, size, len(refs), hyp_segment, max_order)
    expected = counter_match_statistics(refs, hyps, hyp_segment.tolist(), max_order)
    assert hc.tolist() == expected[0]
    assert rc.tolist() == expected[1]
    assert mc.tolist() == expected[2]


def test_match_statistics_overflow_path_against_counters():
    # 2100 distinct tokens: 2100**6 > 2**62, so codes are re-numbered before order 6
    rng = random.Random(3)
    vocab = [f"t{i}" for i in range(2100)]
    token_lists = [[rng.choice(vocab[:30]) for _ in range(rng.randint(0, 15))] for _ in range(8)]
    token_lists[0] = vocab  # every token present
    refs, hyps = token_lists[:4], [*token_lists[4:], vocab[5:], vocab[:10] * 2]
    segs = [0, 1, 2, 3, 0, 0]
    ids, lengths, size = token_unit_ids(refs + hyps)
    assert size == 2100 and size**6 >= _LIMIT
    hc, rc, mc = match_statistics(ids, lengths, size, len(refs), np.array(segs), 6)
    expected = counter_match_statistics(refs, hyps, segs, 6)
    assert (hc.tolist(), rc.tolist(), mc.tolist()) == expected


def test_unit_ids_are_dense_and_consistent():
    ids, lengths, size = char_unit_ids(["abca", "", "😀a"])
    assert lengths.tolist() == [4, 0, 2]
    assert size == 4  # a b c 😀
    assert ids[0] == ids[3] == ids[5]  # the three "a"
    assert len(set(ids.tolist())) == size and set(ids.tolist()) == set(range(size))
    ids, lengths, size = token_unit_ids([["x", "y"], [], ["y", "z", "x"]])
    assert lengths.tolist() == [2, 0, 3]
    assert size == 3
    assert ids[0] == ids[4] and ids[1] == ids[2]
    ids, lengths, size = char_unit_ids(["", ""])
    assert ids.size == 0 and lengths.tolist() == [0, 0] and size == 1


def test_scoring_imports_no_pandas():
    """Scoring a model does not pay for importing pandas (the token ids come from a dict)."""
    code = ("from cultivar_assets.metrics.metric_config import MetricConfig\n"
            "from cultivar_assets.metrics.scoring import Scorer\n"
            "config = MetricConfig(bleu_tokenize='13a', chrf_word_order=2)\n"
            "Scorer(config).segment_statistics(['a b c .', 'd e'], {'m': ['a b d .', 'd']})")
    assert not imports_module(code, "pandas")


def test_lone_surrogate_equal_sacrebleu():
    refs = ["a\ud800b c", "plain text"]
    systems = {"s": ["a\ud800b c", "plain"]}
    assert_same_as_sacrebleu(scorer("13a", 0, False), refs, systems, "13a", 0, False)


@pytest.mark.parametrize("limit", [2, 97, 1 << 20])
def test_densify_forced_by_small_limit_stays_exact(monkeypatch, limit):
    # With a tiny _LIMIT every order takes the re-numbering branches; results must not change.
    from cultivar_assets.metrics import ngram_stats

    monkeypatch.setattr(ngram_stats, "_LIMIT", limit)
    rng = random.Random(limit)
    refs, systems = random_corpus(rng, SCRIPT_MIXES["mixed"], n_segments=10, n_systems=3)
    for word_order in (0, 2):
        assert_same_as_sacrebleu(
            scorer("13a", word_order, True), refs, systems, "13a", word_order, True
        )


def test_densify_at_many_limits_against_counters(monkeypatch):
    # Sweep _LIMIT so that every combination of "codes re-numbered" / "keys re-numbered" occurs
    # at some order, on many small corpora over tiny alphabets (adjacent rows share many
    # n-grams, so any collision between rows or n-grams changes the counts).
    from cultivar_assets.metrics import ngram_stats

    rng = random.Random(17)
    limits = [2**k for k in range(1, 21)] + [_LIMIT]
    for _ in range(150):
        alphabet = rng.choice(["ab", "abc", "abcd"])
        n_refs, n_hyps = rng.randint(1, 5), rng.randint(1, 5)
        refs = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
                for _ in range(n_refs)]
        hyps = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
                for _ in range(n_hyps)]
        # (at least 3 units in all: with fewer, an artificially small _LIMIT would re-number an
        # empty code array, which the real _LIMIT can never do: that needs alphabet**3 >= 2**62)
        refs[0] += "aba"
        segs = [rng.randrange(n_refs) for _ in hyps]
        expected = counter_match_statistics(refs, hyps, segs, 4)
        ids, lengths, size = char_unit_ids(refs + hyps)
        assert len(ids) >= 3
        for limit in limits:
            monkeypatch.setattr(ngram_stats, "_LIMIT", limit)
            hc, rc, mc = match_statistics(ids, lengths, size, n_refs, np.array(segs), 4)
            assert (hc.tolist(), rc.tolist(), mc.tolist()) == expected, (refs, hyps, limit)
