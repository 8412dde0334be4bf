"""A metric of segment scores (the COMET shape) through the core pipeline: a deterministic
stand-in, installed through a real ``cultivar.metrics`` entry point, scored beside BLEU and chrF,
its segment scores stored in ``raw.segment_scores``, its corpus score their mean, and its ∆,
intervals and ranks from the same paired bootstrap (statistics ``[score, 1]``)."""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import install_metadata

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name, get_locale
from cultivar_assets.metrics.registry import metric_registry

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))
from test_metrics_configured import MODELS, _rows, _store  # noqa: E402

NAME = "cross_ratio"
SIGNATURE = "cross_ratio|v:1"
STAND_IN = '''
from cultivar_assets.metrics.registry import SegmentScoreMetric


def _ratio(a, b):
    return min(len(a), len(b)) / max(len(a), len(b), 1) if a or b else 1.0


def cross_ratio(hypotheses, references, sources=None):
    """ratio(h, r) − ratio(h, s) / 2, ratio(a, b) = min(|a|, |b|) / max(|a|, |b|) in characters
    (1 for two empty strings): reads the sources, and can be negative."""
    return [_ratio(h, r) - _ratio(h, s) / 2
            for h, r, s in zip(hypotheses, references, sources, strict=True)]


METRIC = SegmentScoreMetric(name="cross_ratio", label="Cross ratio", higher_is_better=True,
                            score_segments=cross_ratio, signature="cross_ratio|v:1")
'''


def _ratio(a: str, b: str) -> float:
    return min(len(a), len(b)) / max(len(a), len(b), 1) if a or b else 1.0


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("segment-scores")
    (tmp / "cross_ratio_metric.py").write_text(STAND_IN, "utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(tmp))
        install_metadata(tmp, "cross-ratio-metric",
                         {"cultivar.metrics": {NAME: "cross_ratio_metric:METRIC"}})
        metric_registry.cache_clear()
        try:
            yield _store(tmp / "seg.duckdb", tmp / "cache", ["bleu", "chrf", NAME])
        finally:
            metric_registry.cache_clear()  # the next module's registry is the package's own
            sys.modules.pop("cross_ratio_metric", None)


def _stored_scores(store) -> dict[tuple[str, str], dict[int, float]]:
    by_set: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for model, test_set, segment, score in _rows(
            store, f"SELECT model_id, test_set, segment_id, score FROM segment_scores "
                   f"WHERE metric = '{NAME}'"):
        by_set[(model, test_set)][segment] = score
    return by_set


def test_segment_scores_are_the_stand_ins_and_the_corpus_score_their_mean(store):
    stored = _stored_scores(store)
    translations = _rows(store, "SELECT model_id, test_set, segment_id, source, reference, "
                                "hypothesis FROM translations")
    assert len(translations) == sum(len(s) for s in stored.values()) > 0
    for model, test_set, segment, source, reference, hypothesis in translations:
        expected = _ratio(hypothesis, reference) - _ratio(hypothesis, source) / 2
        assert stored[(model, test_set)][segment] == expected, (model, test_set, segment)
    assert any(s < 0 for scores in stored.values() for s in scores.values())  # float path
    scores = _rows(store, "SELECT model_id, test_set, score, signature, tokenizer_sha256, "
                          f"n_segments FROM scores WHERE metric = '{NAME}'")
    assert len(scores) == len(stored)
    for model, test_set, score, signature, sha, n in scores:
        values = list(stored[(model, test_set)].values())
        assert score == math.fsum(values) / len(values)
        assert (signature, sha, n) == (SIGNATURE, None, len(values))
    # the integer statistics table holds only the statistics metrics
    assert _rows(store, "SELECT DISTINCT metric FROM segment_stats ORDER BY 1") == [
        ("bleu",), ("chrf",)]


def test_its_delta_interval_and_ranks_come_from_the_paired_bootstrap(store):
    stored = _stored_scores(store)
    values = _rows(store, "SELECT level, model_id, locale, quantity, value, low, high, n, label, "
                          "higher_is_better, signature FROM leaderboard_metrics "
                          f"WHERE metric = '{NAME}'")
    assert {(lv, q) for lv, _, _, q, *_ in values} == {
        (lv, q) for lv in ("model_locale", "model") for q in ("flores", "cultivar", "delta")
    } | {("locale", "delta")}
    assert {tuple(v[8:]) for v in values} == {("Cross ratio", True, SIGNATURE)}
    pairs = [v for v in values if v[0] == "model_locale" and v[3] == "delta"]
    assert {m for _, m, *_ in pairs} == set(MODELS)
    for _, model, locale, _, value, low, high, n, *_ in pairs:
        flores = stored[(model, flores_test_set_name(get_locale(locale).source_language))]
        cultivar = stored[(model, cultivar_test_set_name(locale))]
        shared = sorted(set(flores) & set(cultivar))
        by_hand = (np.mean([cultivar[i] for i in shared])
                   - np.mean([flores[i] for i in shared]))
        assert n == len(shared) > 0
        assert value == pytest.approx(by_hand, rel=1e-12, abs=1e-12), (model, locale)
        assert low is not None and high is not None and low <= value <= high
    for level, model, _, quantity, value, low, high, n, *_ in values:
        if level == "model":
            assert low <= value <= high and low < high and n > 0, (model, quantity)
    ranks = {(q, m): rank for m, q, rank in _rows(
        store, "SELECT model_id, quantity, rank FROM leaderboard_ranks "
               f"WHERE quantity LIKE '%{NAME}'")}
    for quantity in (f"delta_{NAME}", f"flores_{NAME}", f"cultivar_{NAME}"):
        assert {ranks[(quantity, m)] for m in MODELS} <= {1, 2}, quantity
    assert _rows(store, "SELECT metric, label FROM statistics_metrics") == [
        ("bleu", "BLEU"), ("chrf", "chrF"), (NAME, "Cross ratio")]


def test_the_site_leaderboard_shows_it_with_its_signature(store, tmp_path):
    from cultivar_assets.site.build import build_site

    build_site(store, tmp_path / "site", query_page="off")
    page = (tmp_path / "site" / "index.html").read_text("utf-8")
    for header in ("∆Cross ratio", "FLORES Cross ratio", "Cultivar Cross ratio", "∆BLEU"):
        assert f">{header}<" in page, header
    assert f"<li>Cross ratio: <code>{SIGNATURE}</code></li>" in page
