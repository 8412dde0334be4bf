"""Corpus scores from per-segment sufficient statistics (after sacreBLEU's ``metrics/base.py``).

For each test set and system, :class:`Scorer` computes the per-segment statistics of each chosen
metric entry of :mod:`cultivar_assets.metrics.registry` (the settings' ``metrics``; default:
BLEU, ``[hyp_len, ref_len, match_1..4, hyp_count_1..4]``, and chrF, ``[hyp_count_n,
ref_count_n, match_n]`` for n = 1..6, then word orders for chrF++) exactly as sacreBLEU does,
sums them over the segments and turns the sums into the corpus score with sacreBLEU's own
``_compute_score_from_stats``. A segment-score entry (the COMET shape,
:class:`~cultivar_assets.metrics.registry.SegmentScoreMetric`) scores each segment (with the
sources, when given) and its corpus score is the mean of those scores.
Stored per-segment statistics let later analyses (e.g. paired bootstrap over instances) resample
without re-scoring.

Speed: references are tokenised and counted once per test set for all systems, n-gram matching is
vectorised (:mod:`cultivar_assets.metrics.ngram_stats`), and test sets are spread over processes.
``benchmarks/bench_scoring.py`` compares it with a loop of ``corpus_score`` calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from cultivar_assets.metrics.configured import build_metric
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import BuiltStatistics


class HypothesisCountError(ValueError):
    """A system's hypotheses do not line up with the test set's references."""


@dataclass(frozen=True)
class TestSetScore:
    __test__ = False

    system: str
    test_set: str
    metric: str
    score: float
    signature: str
    tokenizer_sha256: str | None  # of the SentencePiece model used; None without one
    # (n_segments, k) int64 statistics; (n_segments,) float64 scores when kind is "segment scores"
    segment_stats: np.ndarray
    kind: str = "statistics"  # the registry entry's kind


class Scorer:
    """Scores many systems on many test sets with one set of configured metrics (registry
    entries of per-segment statistics or of segment scores; default: the settings' ``metrics``,
    the paper's BLEU and chrF unless configured)."""

    def __init__(self, config: MetricConfig | None = None,
                 metrics: Sequence[str] | None = None) -> None:
        self.config = config or MetricConfig()
        names = self.config.metrics if metrics is None else metrics
        self.built = {name: build_metric(name, self.config) for name in names}
        self.metrics = {name: b.metric for name, b in self.built.items()
                        if isinstance(b, BuiltStatistics)}
        self.signatures = {name: b.signature for name, b in self.built.items()}
        self.tokenizer_sha256 = {name: b.tokenizer_sha256 for name, b in self.built.items()}

    def segment_statistics(
        self, references: Sequence[str], systems: Mapping[str, Sequence[str]]
    ) -> dict[str, dict[str, np.ndarray]]:
        """metric -> system -> per-segment statistics for one test set (the statistics
        entries)."""
        names = self._check(references, systems)
        n = len(references)
        rows = [h for name in names for h in systems[name]]
        segs = np.tile(np.arange(n, dtype=np.int64), len(names))
        result: dict[str, dict[str, np.ndarray]] = {}
        for metric, built in self.built.items():
            if isinstance(built, BuiltStatistics):
                stats = built.segment_statistics(references, rows, segs)
                result[metric] = {name: stats[i * n:(i + 1) * n] for i, name in enumerate(names)}
        return result

    def segment_scores(self, references: Sequence[str], systems: Mapping[str, Sequence[str]],
                       sources: Sequence[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """metric -> system -> (n,) float64 segment scores for one test set (the segment-score
        entries; ``sources`` the test set's sources, passed on to them)."""
        names = self._check(references, systems)
        return {metric: {name: built.segment_scores(references, systems[name], sources)
                         for name in names}
                for metric, built in self.built.items() if not isinstance(built, BuiltStatistics)}

    @staticmethod
    def _check(references: Sequence[str], systems: Mapping[str, Sequence[str]]) -> list[str]:
        """The systems' names; raises unless each has one string per reference."""
        n = len(references)
        if n == 0:
            raise HypothesisCountError("a test set has no references")
        for system, hyps in systems.items():
            if len(hyps) != n:
                raise HypothesisCountError(
                    f"{system}: {len(hyps)} hypotheses for {n} references"
                )
            bad = [i for i, h in enumerate(hyps) if not isinstance(h, str)]
            if bad:
                raise HypothesisCountError(f"{system}: hypotheses {bad[:5]} are not strings")
        return list(systems)

    def corpus_score(self, metric: str, stats: np.ndarray) -> float:
        """The corpus score of per-segment statistics (sacreBLEU's formula of their sums) or
        of segment scores (their mean)."""
        return self.built[metric].corpus_score(stats)

    def score_test_set(
        self, test_set: str, references: Sequence[str], systems: Mapping[str, Sequence[str]],
        sources: Sequence[str] | None = None,
    ) -> list[TestSetScore]:
        segments = self.segment_statistics(references, systems)
        segments |= self.segment_scores(references, systems, sources)
        return [
            TestSetScore(system, test_set, metric,
                         self.corpus_score(metric, segments[metric][system]),
                         self.signatures[metric], self.tokenizer_sha256[metric],
                         segments[metric][system], self.built[metric].kind)
            for system in systems
            for metric in self.built
        ]


_worker_scorer: Scorer | None = None


def _init_worker(config: MetricConfig) -> None:
    global _worker_scorer
    _worker_scorer = Scorer(config)


def _score_in_worker(job: tuple[str, Sequence[str], Mapping[str, Sequence[str]],
                                 Sequence[str] | None]):
    assert _worker_scorer is not None
    return _worker_scorer.score_test_set(*job)


def score_systems(
    references: Mapping[str, Sequence[str]],
    hypotheses: Mapping[str, Mapping[str, Sequence[str]]],
    config: MetricConfig | None = None,
    processes: int | None = None,
    sources: Mapping[str, Sequence[str]] | None = None,
) -> Iterable[TestSetScore]:
    """Score ``hypotheses[system][test_set]`` against ``references[test_set]`` (and
    ``sources[test_set]``, given to segment-score metrics, when given).

    Every system must cover every test set it is given for; a test set missing from
    ``references`` is an error. ``processes`` defaults to the number of CPUs (at most one per
    test set); 1 scores in this process. Results are yielded per test set as they finish.
    """
    config = config or MetricConfig()
    unknown = {t for tests in hypotheses.values() for t in tests} - set(references)
    if unknown:
        raise HypothesisCountError(f"hypotheses for unknown test sets: {sorted(unknown)}")
    jobs = []
    for test_set, refs in references.items():
        systems = {s: tests[test_set] for s, tests in hypotheses.items() if test_set in tests}
        for system, hyps in systems.items():  # every check before the first result is yielded
            if len(hyps) != len(refs):
                raise HypothesisCountError(
                    f"{system}: {len(hyps)} hypotheses for {len(refs)} references of {test_set}"
                )
        if systems:
            jobs.append((test_set, refs, systems, (sources or {}).get(test_set)))
    processes = min(processes or os.cpu_count() or 1, len(jobs)) or 1
    if processes == 1:
        scorer = Scorer(config)
        for job in jobs:
            yield from scorer.score_test_set(*job)
        return
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # safe beside torch / dagster threads
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_init_worker,
                             initargs=(config,)) as pool:
        for scores in pool.map(_score_in_worker, jobs):
            yield from scores
