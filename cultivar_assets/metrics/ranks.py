"""Rank resolution from bootstrap replicates (issue 11, §3).

For a per-model quantity with replicates (e.g. ``model_delta_bleu`` of
:func:`cultivar_assets.metrics.bootstrap.paired_bootstrap`), over the models with a defined
point estimate:

- **rank** of model i in a list of values x: ``1 + #{j : x_j > x_i}`` (1 = best; tied models share
  the best rank; "better" is "lower" when ``higher_is_better`` is False, e.g. the FN rate);
- **rank interval**: the rank in each replicate, and its percentile interval with the bootstrap's
  order statistics (``bootstrap.interval_positions``): "rank 3–7" means that in 95 % of the
  resamples of instances the model ranked between 3 and 7;
- **not separable from** (ours): model j is not separable from model i when the percentile
  interval of the paired difference ``x_i − x_j`` over the same replicates contains 0 (a paired
  bootstrap test of the difference at the interval's level). This is a test of each pair, not
  "overlapping rank intervals" (which can overlap although the difference is clear, or the
  reverse).

Replicates in which a model's value is undefined (NaN) rank it last there and are left out of
its differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cultivar_assets.metrics.bootstrap import Quantity, percentile_interval


@dataclass(frozen=True)
class RankInterval:
    key: str
    value: float  # point estimate
    rank: int  # on the point estimates
    rank_low: int
    rank_high: int
    not_separable_from: tuple[str, ...]  # keys, in ranking order

    @property
    def label(self) -> str:
        """'rank 3–7' (or 'rank 3' when the interval is one rank)."""
        if self.rank_low == self.rank_high:
            return f"rank {self.rank_low}"
        return f"rank {self.rank_low}–{self.rank_high}"


def rank_sentence(confidence: float = 0.95) -> str:
    """The one-sentence explanation of a rank interval shown beside the ranks."""
    level = f"{confidence * 100:g} %"
    return (f"Rank a–b: in {level} of the bootstrap resamples of test instances the model ranked "
            f"between a and b; a model is not separable from another when the {level} interval "
            "of their paired difference contains 0.")


RANK_SENTENCE = rank_sentence(0.95)


def _ranks(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Ranks along the last axis: 1 + number of strictly better values; NaN counts as worst."""
    x = values if higher_is_better else -values
    x = np.where(np.isnan(x), -np.inf, x)
    better = x[..., None, :] > x[..., :, None]  # [.., i, j]: j better than i
    return 1 + better.sum(axis=-1)


def rank_intervals(
    quantity: Quantity, higher_is_better: bool = True, confidence: float | None = None
) -> list[RankInterval]:
    """Rank, rank interval and non-separable models of every model with a point estimate,
    sorted by rank (module docstring)."""
    confidence = quantity.confidence if confidence is None else confidence
    keep = [i for i, v in enumerate(quantity.point) if np.isfinite(v)]
    keys: Sequence[str] = [quantity.keys[i] for i in keep]
    point = quantity.point[keep]
    replicates = quantity.replicates[:, keep]
    if not keys:
        return []
    rank = _ranks(point, higher_is_better)
    low, high = percentile_interval(_ranks(replicates, higher_is_better).astype(float),
                                    confidence)
    diff = replicates[:, :, None] - replicates[:, None, :]  # (B, i, j)
    d_low, d_high = percentile_interval(diff, confidence)
    order = sorted(range(len(keys)), key=lambda i: (rank[i], keys[i]))
    result = []
    for i in order:
        tied = [j for j in order if j != i and not (d_low[i, j] > 0 or d_high[i, j] < 0)]
        result.append(RankInterval(keys[i], float(point[i]), int(rank[i]), int(low[i]),
                                   int(high[i]), tuple(keys[j] for j in tied)))
    return result
