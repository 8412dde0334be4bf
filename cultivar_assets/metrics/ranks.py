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
most k are ≥ 0 — counted only for the pairs whose ranges of values overlap (for the others every
difference has the same sign), over chunks of replicates; a pair whose two counts both exceed k
after some chunks is not separable, whatever the rest hold (counts only grow).
A model pair with no replicate defined on both sides is not separable (its interval is
undefined).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cultivar_assets.metrics.bootstrap import Quantity, interval_positions, percentile_interval


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
    defined = np.isfinite(columns)
    # a difference with an infinite side is not finite: left out, as an undefined one
    columns = np.where(defined, columns, np.nan)
    if defined.any() and float(np.abs(columns[defined]).max()) >= 1e300:
        raise ValueError("replicates this large could overflow in a difference")
    both = (defined.astype(np.float64) @ defined.T.astype(np.float64)).astype(np.int64)
    k, _ = interval_positions(both, confidence)
    has = defined.any(axis=1)
    low = np.where(defined, columns, np.inf).min(axis=1, initial=np.inf)
    high = np.where(defined, columns, -np.inf).max(axis=1, initial=-np.inf)
    # disjoint ranges: every defined difference has one sign, so one count is 0
    apart = (high[:, None] < low[None, :]) | (low[:, None] > high[None, :])
    first, second = np.nonzero(np.triu(has[:, None] & has[None, :] & ~apart, 1))
    for i, j, side in _compared_pairs(columns, first, second, k[first, second]):
        apart[i, j] = apart[j, i] = side
    return (both > 0) & apart


CHUNK_REPLICATES = 64  # replicates compared at a time in :func:`_compared_pairs`


def _compared_pairs(columns: np.ndarray, first: np.ndarray, second: np.ndarray,
                    k: np.ndarray):
    """For the model pairs ``(first, second)``, whether ``#{b: x_ib ≤ x_jb} ≤ k`` or
    ``#{b: x_ib ≥ x_jb} ≤ k`` (both sides defined), yielded as ``(i, j, bool)`` arrays.
    The counts grow chunk by chunk of replicates; a pair whose two counts both exceed ``k`` is
    not separable, decided early; the others are counted to the end."""
    n_replicates = columns.shape[1]
    le = np.zeros(len(first), dtype=np.int64)
    ge = np.zeros(len(first), dtype=np.int64)
    live = np.arange(len(first))
    for start in range(0, n_replicates, CHUNK_REPLICATES):
        chunk = np.ascontiguousarray(columns[:, start:start + CHUNK_REPLICATES])
        for at in range(0, len(live), max(1, BLOCK_BYTES // (8 * chunk.shape[1]))):
            pairs = live[at:at + max(1, BLOCK_BYTES // (8 * chunk.shape[1]))]
            a, b = chunk[first[pairs]], chunk[second[pairs]]
            le[pairs] += np.add.reduce((a <= b).view(np.uint8), axis=1, dtype=np.int64)
            ge[pairs] += np.add.reduce((a >= b).view(np.uint8), axis=1, dtype=np.int64)
        decided = (le[live] > k[live]) & (ge[live] > k[live])
        yield first[live[decided]], second[live[decided]], False
        live = live[~decided]
        if not len(live):
            return
    yield first[live], second[live], (le[live] <= k[live]) | (ge[live] <= k[live])


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
    ordered_keys = np.array(keys, dtype=object)[order]
    result = []
    for i in order:
        tied = ordered_keys[~apart[i, order] & (order != i)]
        result.append(RankInterval(keys[i], float(point[i]), int(rank[i]), int(low[i]),
                                   int(high[i]), tuple(tied.tolist())))
    return result
