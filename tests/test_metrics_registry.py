"""metrics/registry.py: every entry against plain sacreBLEU objects, bit for bit (``==``), and a
third-party segment-score metric registered through a real entry point.

The reference objects are built here from sacreBLEU's constructors, independently of the entries;
the corpus scores are sacreBLEU's ``corpus_score(...).score``."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
from conftest import install_metadata
from metrics_helpers import ALPHABETS, english_lines, perturb, random_corpus, train_tiny_spm
from sacrebleu.metrics import BLEU, CHRF, TER

from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.configured import build_metric, build_statistics, score_corpus
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import (
    METRIC_NAMES,
    BuiltStatistics,
    SegmentScoreMetric,
    get_metric,
    metric_registry,
    score_functions,
)
from cultivar_assets.metrics.sacrebleu_metrics import MetricUnavailableError
from cultivar_assets.metrics.scoring import Scorer
from cultivar_assets.metrics.segment_stats import SegmentStats, StatsError
from cultivar_assets.metrics.significance import paired_test

CONFIG = MetricConfig(bleu_tokenize="13a")


def sacrebleu_objects(lowercase: bool = False) -> dict:
    """Plain sacreBLEU objects configured as the entries' definitions say."""
    return {"bleu": BLEU(tokenize="13a", lowercase=lowercase),
            "chrf": CHRF(lowercase=lowercase),
            "chrf++": CHRF(word_order=2, lowercase=lowercase),
            "ter": TER(case_sensitive=not lowercase)}


def corpora() -> list[tuple[list[str], list[str]]]:
    """(references, hypotheses) pairs: random texts of several scripts with edge cases, and
    English-like sentences with their perturbations (hundreds of segments in all)."""
    rng = random.Random(19)
    pairs = []
    for alphabet in ("ascii", "accented", "devanagari", "cjk", "emoji"):
        refs, systems = random_corpus(rng, ALPHABETS[alphabet], n_segments=20, n_systems=3)
        pairs += [(refs, hyps) for hyps in systems.values()]
    refs = english_lines(5, 60)
    for _ in range(3):
        pairs.append((refs, [perturb(rng, ref, ALPHABETS["ascii"]) for ref in refs]))
    pairs.append((refs, [ref.capitalize() + "." for ref in refs]))  # case and punctuation
    return pairs


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("name", ["bleu", "chrf", "chrf++", "ter"])
def test_corpus_scores_from_summed_statistics_are_sacrebleus(name, lowercase):
    config = MetricConfig(bleu_tokenize="13a", lowercase=lowercase)
    built = build_metric(name, config)
    theirs = sacrebleu_objects(lowercase)[name]
    for refs, hyps in corpora():
        expected = theirs.corpus_score(hyps, [refs]).score
        ours = score_corpus(name, refs, hyps, config)
        assert ours.score == expected
        stats = built.segment_statistics(refs, hyps)
        np.testing.assert_array_equal(stats, theirs._extract_corpus_statistics(hyps, [refs]))
        assert float(built.scores(stats.sum(axis=0))) == expected  # the vectorised formula
    assert built.signature == theirs.get_signature().format()  # nrefs:1 after corpus_score
    assert ours.signature == built.signature


def test_signatures_are_sacrebleus_as_printed():
    signatures = {name: build_metric(name, CONFIG).signature for name in metric_registry()}
    version = signatures["bleu"].rsplit("version:", 1)[1]
    assert signatures == {
        "bleu": f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{version}",
        "chrf": f"nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:{version}",
        "chrf++": f"nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:{version}",
        "ter": f"nrefs:1|case:mixed|tok:tercom|norm:no|punct:yes|asian:no|version:{version}",
    }


def test_entries_state_their_direction_kind_and_width():
    entries = {name: get_metric(name) for name in ("bleu", "chrf", "chrf++", "ter")}
    assert {n: e.higher_is_better for n, e in entries.items()} == {
        "bleu": True, "chrf": True, "chrf++": True, "ter": False}  # TER: edits, lower is better
    assert {n: e.label for n, e in entries.items()} == {
        "bleu": "spBLEU", "chrf": "chrF", "chrf++": "chrF++", "ter": "TER"}
    assert {e.kind for e in entries.values()} == {"statistics"}
    widths = {n: build_metric(n, CONFIG).width for n in entries}
    assert widths == {"bleu": 10, "chrf": 18, "chrf++": 24, "ter": 2}
    assert METRIC_NAMES == ("bleu", "chrf")  # the paper's, what the pipeline stores


@pytest.mark.parametrize("option", [{"normalized": True}, {"no_punct": True},
                                    {"asian_support": True}])
def test_ters_options_are_settings_recorded_in_its_signature(option):
    """TER's normalisation, punctuation and Asian options are set like the other metrics'
    options; the scores and signature are sacreBLEU's TER with that option."""
    (key, value), = option.items()
    config = MetricConfig(**{f"ter_{key}": value})
    theirs = TER(case_sensitive=True, **option)
    default_signature = build_metric("ter", MetricConfig()).signature
    for refs, hyps in corpora()[-4:]:
        assert score_corpus("ter", refs, hyps, config).score == theirs.corpus_score(
            hyps, [refs]).score
    built = build_metric("ter", config)
    assert built.signature == theirs.get_signature().format() != default_signature
    assert "case:mixed" in built.signature  # case-sensitive unless metrics.lowercase


def test_bleus_label_follows_its_signatures_tokenizer():
    from cultivar_assets.metrics.registry import score_label

    thirteen = build_metric("bleu", MetricConfig(bleu_tokenize="13a")).signature
    assert "tok:13a" in thirteen and score_label("bleu", thirteen) == "BLEU"
    assert score_label("bleu", thirteen.replace("tok:13a", "tok:flores200")) == "spBLEU"
    assert score_label("bleu", thirteen.replace("tok:13a", "tok:flores101")) == "spBLEU"
    assert score_label("bleu", thirteen.replace("tok:13a", "tok:intl")) == "BLEU"
    ter = build_metric("ter", MetricConfig()).signature
    assert score_label("ter", ter) == "TER"
    with pytest.raises(ValueError, match=r"nrefs:1\|case:mixed"):
        score_label("bleu", "nrefs:1|case:mixed")


def test_ter_of_many_sums_equals_sacrebleu():
    """Random [edits, ref_len] sums, zeros included (empty references: 100 or 0)."""
    rng = np.random.default_rng(3)
    stats = rng.integers(0, 400, size=(5000, 2))
    stats[rng.random(5000) < 0.05, 1] = 0
    stats[rng.random(5000) < 0.05, 0] = 0
    ter = build_metric("ter", CONFIG)
    expected = np.array([TER()._compute_score_from_stats([int(e), int(r)]).score
                         for e, r in stats])
    np.testing.assert_array_equal(ter.scores(stats), expected)
    assert ter.scores(np.array([[3, 0], [0, 0]])).tolist() == [100.0, 0.0]


def test_scorer_and_paired_test_take_any_statistics_entry():
    refs, systems = random_corpus(random.Random(4), ALPHABETS["ascii"], 15, 2)
    scorer = Scorer(CONFIG, metrics=("chrf++", "ter"))
    scores = scorer.score_test_set("t", refs, systems)
    assert [(s.system, s.metric) for s in scores[:2]] == [("system_0", "chrf++"),
                                                          ("system_0", "ter")]
    theirs = sacrebleu_objects()
    for s in scores:
        assert s.score == theirs[s.metric].corpus_score(systems[s.system], [refs]).score
    tested = paired_test(refs, systems, CONFIG, metrics=("ter",), n_samples=20)
    assert {r.metric for r in tested} == {"ter"}
    assert tested[0].score == scores[1].score


def test_default_scorer_is_the_papers_bleu_and_chrf():
    scorer = Scorer(CONFIG)
    assert list(scorer.built) == ["bleu", "chrf"]
    assert scorer.signatures == {n: build_metric(n, CONFIG).signature for n in ("bleu", "chrf")}


def test_spbleu_entry_never_downloads(tmp_path, monkeypatch):
    """flores200 with no model file fails loudly; with a (stand-in) model its hash comes along."""
    monkeypatch.setenv("SACREBLEU", str(tmp_path / "home"))
    with pytest.raises(MetricUnavailableError, match=r"flores200"):
        build_metric("bleu", MetricConfig())
    model = train_tiny_spm(tmp_path / "spm")
    built = build_metric("bleu", MetricConfig(spm_model_path=str(model)))
    assert isinstance(built, BuiltStatistics)
    assert "tok:flores200" in built.signature and len(built.tokenizer_sha256) == 64
    assert build_metric("chrf", MetricConfig()).tokenizer_sha256 is None


LENGTH_RATIO = '''
from cultivar_assets.metrics.registry import SegmentScoreMetric


def length_ratio(hypotheses, references, sources=None):
    """min(|h|, |r|) / max(|h|, |r|) in characters; 1 for two empty strings."""
    return [min(len(h), len(r)) / max(len(h), len(r), 1) if h or r else 1.0
            for h, r in zip(hypotheses, references, strict=True)]


METRIC = SegmentScoreMetric(name="length-ratio", label="Length ratio", higher_is_better=True,
                            score_segments=length_ratio, signature="length-ratio|v:1")
MISNAMED = SegmentScoreMetric(name="other", label="Other", higher_is_better=True,
                              score_segments=length_ratio, signature="other|v:1")
'''


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Installs a distribution's ``cultivar.metrics`` entry points (module in tmp_path)."""
    (tmp_path / "length_ratio_metric.py").write_text(LENGTH_RATIO, "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(name: str, points: dict[str, str]) -> None:
        install_metadata(tmp_path, name, {"cultivar.metrics": points})
        metric_registry.cache_clear()

    yield install
    metric_registry.cache_clear()  # the next test's registry is the package's own
    sys.modules.pop("length_ratio_metric", None)


def test_segment_score_metric_through_an_entry_point(installed):
    installed("length-ratio-metric", {"length-ratio": "length_ratio_metric:METRIC"})
    assert "length-ratio" in metric_registry()
    entry = get_metric("length-ratio")
    assert isinstance(entry, SegmentScoreMetric) and entry.kind == "segment scores"
    refs, hyps = ["abcd", "ab", "", "abcde"], ["ab", "ab", "", "abcdefghij"]
    result = score_corpus("length-ratio", refs, hyps)
    assert result.segments.tolist() == [0.5, 1.0, 1.0, 0.5]
    assert result.score == 0.75  # the mean of the segment scores
    assert (result.signature, result.tokenizer_sha256) == ("length-ratio|v:1", None)
    with pytest.raises(ValueError, match=r"'length-ratio'"):
        build_statistics(CONFIG, ("bleu", "length-ratio"))
    # the scorer and the bootstrap take it: its scores resampled as statistics [score, 1]
    [scored] = Scorer(CONFIG, ["length-ratio"]).score_test_set("t", refs, {"s": hyps})
    assert (scored.kind, scored.score, scored.segment_stats.tolist()) == (
        "segment scores", 0.75, [0.5, 1.0, 1.0, 0.5])
    as_stats = SegmentStats.of_scores([3, 1, 2, 0], result.segments[::-1])
    assert as_stats.stats.tolist() == [[0.5, 1], [1.0, 1], [1.0, 1], [0.5, 1]]
    boot = paired_bootstrap({"length-ratio": {("m", "flores_hin_Deva"): as_stats}}, ["m"],
                            ["hin_Deva_India"], config=BootstrapConfig(n_replicates=50),
                            score_functions=score_functions(["length-ratio"]))
    flores = boot["model_flores_length-ratio"]
    assert flores.point.tolist() == [0.75]
    assert 0.5 <= flores.low[0] <= 0.75 <= flores.high[0] <= 1.0
    with pytest.raises(StatsError, match="not finite"):
        SegmentStats.of_scores([0], [float("nan")])
    with pytest.raises(ValueError, match=r"\b2 hypotheses\b.*\b1 references\b"):
        score_corpus("length-ratio", ["a"], ["a", "b"])


def test_a_taken_metric_name_is_refused(installed):
    installed("rogue-metrics", {"ter": "length_ratio_metric:METRIC"})
    with pytest.raises(ValueError, match=r"'ter'.*\brogue-metrics\b"):
        metric_registry()


def test_an_entry_must_carry_its_registered_name(installed):
    installed("misnamed-metrics", {"renamed": "length_ratio_metric:MISNAMED"})
    with pytest.raises(ValueError, match=r"'renamed'.*'other'"):
        get_metric("renamed")
