"""The registry's metrics configured by the ``metrics`` settings (:class:`MetricConfig`):
building an entry's sacreBLEU object with its signature, and scoring a corpus with it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import (
    METRIC_NAMES,
    BuiltMetric,
    BuiltStatistics,
    get_metric,
)


def build_metric(name: str, config: MetricConfig | None = None) -> BuiltMetric:
    """The entry ``name`` configured by the ``metrics`` settings."""
    return get_metric(name).build(config or MetricConfig())


@dataclass(frozen=True)
class CorpusScore:
    """One metric's corpus score of one system on one test set, with what it rests on."""

    metric: str
    score: float
    signature: str
    tokenizer_sha256: str | None
    segments: np.ndarray  # (n, width) int64 statistics, or (n,) float64 segment scores


def score_corpus(name: str, references: Sequence[str], hypotheses: Sequence[str],
                 config: MetricConfig | None = None,
                 sources: Sequence[str] | None = None) -> CorpusScore:
    """Score ``hypotheses`` (one per reference) with the registered metric ``name``."""
    built = build_metric(name, config)
    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"{name}: {len(hypotheses)} hypotheses for {len(references)} "
                         "references (one each, at least one)")
    if isinstance(built, BuiltStatistics):
        segments = built.segment_statistics(references, hypotheses)
    else:
        segments = built.segment_scores(references, hypotheses, sources)
    return CorpusScore(name, built.corpus_score(segments), built.signature,
                       built.tokenizer_sha256, segments)


class BuiltMetrics(NamedTuple):
    """sacreBLEU metric objects, their signatures and tokenizer model hashes, by metric name."""

    metrics: dict[str, object]
    signatures: dict[str, str]  # exactly as sacreBLEU formats them
    tokenizer_sha256: dict[str, str | None]  # sha256 of a SentencePiece model; None: no model


def build_statistics(config: MetricConfig | None = None,
                     names: Sequence[str] = METRIC_NAMES) -> dict[str, BuiltStatistics]:
    """The statistics entries ``names`` (default: the paper's), configured, by name."""
    built = {name: build_metric(name, config) for name in names}
    wrong = [name for name, b in built.items() if not isinstance(b, BuiltStatistics)]
    if wrong:
        raise ValueError(f"metrics {wrong} are not of per-segment statistics")
    return built  # type: ignore[return-value]


def build_metrics(config: MetricConfig, names: Sequence[str] = METRIC_NAMES) -> BuiltMetrics:
    """sacreBLEU metric objects for ``names`` (default 'bleu' and 'chrf'), with signatures and
    tokenizer hashes."""
    built = build_statistics(config, names)
    return BuiltMetrics({n: b.metric for n, b in built.items()},
                        {n: b.signature for n, b in built.items()},
                        {n: b.tokenizer_sha256 for n, b in built.items()})
