"""significance.py runs sacreBLEU's paired tests; our bootstrap reproduces their figures."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from metrics_helpers import ALPHABETS, random_corpus, reference_metrics
from sacrebleu.significance import _compute_p_value, estimate_ci

from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import SegmentStats
from cultivar_assets.metrics.significance import paired_test

CONFIG = MetricConfig(bleu_tokenize="13a")
LOCALE = "deu_Latn_Germany"


def corpus(seed: int = 21, n: int = 80):
    refs, systems = random_corpus(random.Random(seed), ALPHABETS["ascii"], n_segments=n,
                                  n_systems=3)
    systems = {name: systems[name] for name in ("system_0", "system_1", "system_2")}
    return refs, systems


@pytest.mark.parametrize("seed, n_samples", [(12345, 1000), (7, 300)])
def test_our_resampling_reproduces_sacrebleus_paired_bootstrap(seed, n_samples):
    refs, systems = corpus()
    ids = [5 + 2 * i for i in range(len(refs))]  # any sorted ids map to sacreBLEU's positions
    metrics = reference_metrics("13a")
    stats = {
        metric: {(name, f"cultivar_{LOCALE}"): SegmentStats.build(
            ids, obj._extract_corpus_statistics(hyps, [refs])) for name, hyps in systems.items()}
        for metric, obj in metrics.items()
    }
    ours = paired_bootstrap(stats, list(systems), [LOCALE],
                            config=BootstrapConfig(n_replicates=n_samples, seed=seed),
                            score_functions=score_functions(stats))
    theirs = paired_test(refs, systems, CONFIG, "bs", n_samples=n_samples, seed=seed)
    assert len(theirs) == 2 * len(systems)
    baseline = next(iter(systems))
    for result in theirs:
        q = ours[f"model_cultivar_{result.metric}"]
        i = q.index(result.system)
        replicates = q.replicates[:, i]
        assert result.score == pytest.approx(q.point[i], abs=1e-9)
        # sacreBLEU sums float32 statistics, so its precisions are float32: ~1e-5 apart
        np.testing.assert_allclose(replicates.mean(), result.mean, atol=1e-4)
        assert (q.high[i] - q.low[i]) / 2 == pytest.approx(result.ci, abs=1e-4)
        assert estimate_ci(replicates)[1] == pytest.approx(result.ci, abs=1e-4)
        assert f"bs:{n_samples}|seed:{seed}" in result.signature
        if result.system == baseline:
            assert result.p_value is None
            continue
        # sacreBLEU's p-value, computed with its own function from our replicates
        base = q.replicates[:, q.index(baseline)]
        diffs = np.abs(replicates - base)
        p = _compute_p_value(diffs - diffs.mean(), abs(q.point[q.index(baseline)] - q.point[i]))
        assert p == pytest.approx(result.p_value, abs=1e-12)


def test_approximate_randomisation_runs_through_sacrebleu():
    refs, systems = corpus(n=40)
    results = paired_test(refs, systems, CONFIG, "ar", n_samples=200, seed=3,
                          metrics=("chrf",))
    assert [r.metric for r in results] == ["chrf"] * 3
    assert results[0].p_value is None
    assert all(0 < r.p_value <= 1 for r in results[1:])
    assert "ar" in results[1].signature


def test_seed_is_restored_and_bad_input_is_refused(monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", "99")
    refs, systems = corpus(n=20)
    paired_test(refs, dict(list(systems.items())[:2]), CONFIG, "bs", n_samples=20, seed=4)
    assert os.environ["SACREBLEU_SEED"] == "99"
    with pytest.raises(ValueError, match="seed 0"):
        paired_test(refs, systems, CONFIG, seed=0)
    with pytest.raises(ValueError, match="at least one other system"):
        paired_test(refs, {"a": refs}, CONFIG)
    with pytest.raises(ValueError, match="3 hypotheses for 20"):
        paired_test(refs, {"a": refs, "b": refs[:3]}, CONFIG)
    with pytest.raises(ValueError, match="unknown metrics"):
        paired_test(refs, systems, CONFIG, metrics=("meteor",))
