"""score_systems / Scorer: process pool equivalence and input validation."""

from __future__ import annotations

import random

import numpy as np
import pytest
from metrics_helpers import ALPHABETS, random_corpus, reference_metrics

from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.scoring import HypothesisCountError, Scorer, score_systems

CONFIG = MetricConfig(bleu_tokenize="13a", chrf_word_order=2)


def make_inputs(seed: int = 5):
    rng = random.Random(seed)
    alphabet = ALPHABETS["ascii"] + ALPHABETS["devanagari"]
    references: dict[str, list[str]] = {}
    hypotheses: dict[str, dict[str, list[str]]] = {}
    for t, n in (("flores_hin_Deva", 9), ("cultivar_hin_Deva_US", 6), ("flores_deu_Latn", 4)):
        refs, systems = random_corpus(rng, alphabet, n_segments=n, n_systems=2)
        references[t] = refs
        for name, hyps in systems.items():
            hypotheses.setdefault(name, {})[t] = hyps
    # a system that covers only one test set
    hypotheses["partial"] = {"flores_deu_Latn": list(references["flores_deu_Latn"])}
    return references, hypotheses


def as_rows(results):
    return [(r.system, r.test_set, r.metric, r.score, r.signature, r.segment_stats.tolist())
            for r in results]


def test_processes_1_and_2_identical_and_equal_sacrebleu():
    references, hypotheses = make_inputs()
    one = list(score_systems(references, hypotheses, CONFIG, processes=1))
    two = list(score_systems(references, hypotheses, CONFIG, processes=2))
    assert as_rows(one) == as_rows(two)

    # every (system, test set it has) appears once per metric, and nothing else
    expected_keys = {(s, t, m) for s, tests in hypotheses.items() for t in tests
                     for m in ("bleu", "chrf")}
    assert {(r.system, r.test_set, r.metric) for r in one} == expected_keys
    assert len(one) == len(expected_keys)

    theirs = reference_metrics("13a", word_order=2)
    for r in one:
        hyps, refs = hypotheses[r.system][r.test_set], references[r.test_set]
        assert r.score == theirs[r.metric].corpus_score(hyps, [refs]).score
        assert r.segment_stats.tolist() == theirs[r.metric]._extract_corpus_statistics(
            hyps, [refs]
        )
        assert r.segment_stats.shape[0] == len(refs)
    # a system identical to the references scores 100 on both metrics
    identical = [r for r in one if r.system == "identical"]
    assert identical and all(r.score == pytest.approx(100.0) for r in identical)


def test_results_grouped_by_test_set_in_reference_order():
    references, hypotheses = make_inputs()
    results = list(score_systems(references, hypotheses, CONFIG, processes=1))
    order = list(dict.fromkeys(r.test_set for r in results))
    assert order == list(references)


@pytest.mark.parametrize("processes", [1, 2])
def test_mismatched_hypothesis_count_names_the_system(processes):
    references, hypotheses = make_inputs()
    hypotheses["short_system"] = {
        "flores_hin_Deva": references["flores_hin_Deva"][:-1],  # 8 for 9 references
        "flores_deu_Latn": list(references["flores_deu_Latn"]),
    }
    with pytest.raises(HypothesisCountError, match=r"short_system: 8 hypotheses\b.*\b9\b"):
        list(score_systems(references, hypotheses, CONFIG, processes=processes))


def test_unknown_test_set_raises():
    references, hypotheses = make_inputs()
    hypotheses["system_0"]["flores_xyz_Latn"] = ["a"]
    with pytest.raises(HypothesisCountError, match=r"\bflores_xyz_Latn\b"):
        list(score_systems(references, hypotheses, CONFIG, processes=1))
    # also when the only hypotheses are for unknown test sets
    with pytest.raises(HypothesisCountError, match="nope"):
        list(score_systems(references, {"s": {"nope": ["a"]}}, CONFIG, processes=1))


def test_segment_statistics_validation():
    scorer = Scorer(CONFIG)
    with pytest.raises(HypothesisCountError, match=r"sys_a: 1 hypotheses\b.*\b2 references\b"):
        scorer.segment_statistics(["a", "b"], {"ok": ["a", "b"], "sys_a": ["a"]})
    with pytest.raises(HypothesisCountError, match=r"sys_b: hypotheses \[1\]"):
        scorer.segment_statistics(["a", "b"], {"sys_b": ["a", None]})
    with pytest.raises(HypothesisCountError, match=r"\breferences\b"):
        scorer.segment_statistics([], {"s": []})


def test_score_test_set_equals_sacrebleu_on_the_raw_text():
    scorer = Scorer(CONFIG)
    refs = ["the cat sat on the mat", "a b c d"]
    systems = {"x": ["the cat sat on mat", "a b c e"], "y": ["mat the on", ""]}
    results = scorer.score_test_set("t", refs, systems)
    assert [(r.system, r.metric) for r in results] == [
        ("x", "bleu"), ("x", "chrf"), ("y", "bleu"), ("y", "chrf")
    ]
    theirs = reference_metrics("13a", word_order=2)  # sacreBLEU on the raw text
    for r in results:
        assert r.test_set == "t"
        assert r.score == theirs[r.metric].corpus_score(systems[r.system], [refs]).score
        assert r.signature == theirs[r.metric].get_signature().format()  # nrefs:1 once scored
        assert np.asarray(r.segment_stats).dtype.kind == "i"
