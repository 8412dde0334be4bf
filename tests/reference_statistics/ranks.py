"""Rank resolution from bootstrap replicates.

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

How it is computed (the same numbers as the definitions, in memory that grows with B·M, not
B·M²): the ranks of a replicate by sorting it (``scipy.stats.rankdata``, method "min", of the
negated values); "not separable" from counts: with n' replicates in which both values are
finite (an infinite one, like an undefined one, gives no finite difference) and
``k = ⌊n'(1 − c)/2⌋`` (the interval's order statistics), the interval of ``x_i − x_j``
lies above 0 exactly when at most k of the n' differences are ≤ 0, and below 0 exactly when at
most k are ≥ 0 — counted over blocks of models (:data:`BLOCK_BYTES` of comparisons at a time).
A model pair with no replicate defined on both sides is not separable (its interval is
undefined).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reference_statistics.bootstrap import Quantity, interval_positions, percentile_interval


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


BLOCK_BYTES = 64 * 2**20  # the comparisons held at once when counting differences' signs


def _ranks(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Ranks along the last axis: 1 + number of strictly better values; NaN counts as worst."""
    from scipy.stats import rankdata

    x = values if higher_is_better else -values
    x = np.where(np.isnan(x), -np.inf, x)
    # "min" ranks of −x: 1 + #{j: −x_j < −x_i} = 1 + #{j: x_j > x_i}
    return rankdata(-x, method="min", axis=-1).astype(np.int64)


def separable(replicates: np.ndarray, confidence: float) -> np.ndarray:
    """``(M, M)`` bool: True where the percentile interval of ``x_i − x_j`` over the replicates
    (``replicates``: ``(B, M)``; NaN: undefined) lies entirely above or below 0 (module
    docstring)."""
    columns = np.ascontiguousarray(np.asarray(replicates, dtype=np.float64).T)  # (M, B)
    n_models, n_replicates = columns.shape
    defined = np.isfinite(columns)
    # a difference with an infinite side is not finite: left out, as an undefined one
    columns = np.where(defined, columns, np.nan)
    if defined.any() and float(np.abs(columns[defined]).max()) >= 1e300:
        raise ValueError("replicates this large could overflow in a difference")
    both = defined.astype(np.float64) @ defined.T.astype(np.float64)  # n' per pair
    k, _ = interval_positions(both.astype(np.int64), confidence)
    le = np.empty((n_models, n_models), dtype=np.int64)  # #{b: x_ib ≤ x_jb}, both defined
    block = max(1, BLOCK_BYTES // max(1, n_models * n_replicates))
    for start in range(0, n_models, block):
        rows = columns[start:start + block, None, :]
        le[start:start + block] = np.count_nonzero(rows <= columns[None, :, :], axis=-1)
    ge = le.T  # #{b: x_ib ≥ x_jb} = #{b: x_jb ≤ x_ib}
    return (both > 0) & ((le <= k) | (ge <= k))


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
    apart = separable(replicates, confidence)
    order = np.array(sorted(range(len(keys)), key=lambda i: (rank[i], keys[i])), dtype=np.int64)
    result = []
    for i in order:
        tied = order[~apart[i, order] & (order != i)]
        result.append(RankInterval(keys[i], float(point[i]), int(rank[i]), int(low[i]),
                                   int(high[i]), tuple(keys[j] for j in tied)))
    return result
