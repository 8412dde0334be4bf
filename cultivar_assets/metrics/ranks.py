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

Kept from one computation to the next (:class:`RankState`, :func:`ranked`): every model's
values, per row how many models are better than it, and the separable pairs. A model whose
values are the same to the bit keeps its pairs (a pair's test depends on its two models alone),
and its count of better models in each row changes by ``−[x_r > x_i]`` for each model ``r``
removed (or changed) and ``+[x_a > x_i]`` for each model ``a`` added (or changed); the added
models' counts and pairs are computed against every model. The same integers and pairs as a
computation from nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

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


def _columns(replicates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M, B)`` values (an infinite one made NaN: its differences are not finite) and where
    they are defined; refuses values whose differences could overflow."""
    columns = np.ascontiguousarray(np.asarray(replicates, dtype=np.float64).T)  # (M, B)
    defined = np.isfinite(columns)
    # a difference with an infinite side is not finite: left out, as an undefined one
    columns = np.where(defined, columns, np.nan)
    if defined.any() and float(np.abs(columns[defined]).max()) >= 1e300:
        raise ValueError("replicates this large could overflow in a difference")
    return columns, defined


def _ranges(columns: np.ndarray, defined: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per model: whether it has a defined value, and the lowest and highest of them."""
    low = np.where(defined, columns, np.inf).min(axis=1, initial=np.inf)
    high = np.where(defined, columns, -np.inf).max(axis=1, initial=-np.inf)
    return defined.any(axis=1), low, high


def separable(replicates: np.ndarray, confidence: float) -> np.ndarray:
    """``(M, M)`` bool: True where the percentile interval of ``x_i − x_j`` over the replicates
    (``replicates``: ``(B, M)``; NaN: undefined) lies entirely above or below 0 (module
    docstring)."""
    columns, defined = _columns(replicates)
    both = (defined.astype(np.float64) @ defined.T.astype(np.float64)).astype(np.int64)
    k, _ = interval_positions(both, confidence)
    has, low, high = _ranges(columns, defined)
    # disjoint ranges: every defined difference has one sign, so one count is 0
    apart = (high[:, None] < low[None, :]) | (low[:, None] > high[None, :])
    first, second = np.nonzero(np.triu(has[:, None] & has[None, :] & ~apart, 1))
    for i, j, side in _compared_pairs(columns, first, second, k[first, second]):
        apart[i, j] = apart[j, i] = side
    return (both > 0) & apart


def separable_rows(replicates: np.ndarray, rows: np.ndarray, confidence: float) -> np.ndarray:
    """``(len(rows), M)`` bool: the rows ``rows`` of :func:`separable` (the same values, each
    pair decided by the same counts), computed for those models alone."""
    columns, defined = _columns(replicates)
    rows = np.asarray(rows, dtype=np.int64)
    both = (defined[rows].astype(np.float64) @ defined.T.astype(np.float64)).astype(np.int64)
    k, _ = interval_positions(both, confidence)
    has, low, high = _ranges(columns, defined)
    apart = (high[rows, None] < low[None, :]) | (low[rows, None] > high[None, :])
    at, second = np.nonzero(has[rows, None] & has[None, :] & ~apart
                            & (rows[:, None] != np.arange(len(columns))[None, :]))
    for r, j, side in _compared_pairs(columns, rows[at], second, k[at, second], at):
        apart[r, j] = side
    return (both > 0) & apart


CHUNK_REPLICATES = 64  # replicates compared at a time in :func:`_compared_pairs`


def _compared_pairs(columns: np.ndarray, first: np.ndarray, second: np.ndarray,
                    k: np.ndarray, labels: np.ndarray | None = None):
    """For the model pairs ``(first, second)``, whether ``#{b: x_ib ≤ x_jb} ≤ k`` or
    ``#{b: x_ib ≥ x_jb} ≤ k`` (both sides defined), yielded as ``(i, j, bool)`` arrays (``i``
    from ``labels`` in place of ``first`` when given). The counts grow chunk by chunk of
    replicates; a pair whose two counts both exceed ``k`` is not separable, decided early; the
    others are counted to the end (each pair's outcome depends on its own counts alone)."""
    labels = first if labels is None else labels
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
        yield labels[live[decided]], second[live[decided]], False
        live = live[~decided]
        if not len(live):
            return
    yield labels[live], second[live], (le[live] <= k[live]) | (ge[live] <= k[live])


@dataclass(frozen=True, eq=False)
class RankState:
    """What one quantity's ranks were computed from and what they came to, for the next
    computation (:func:`ranked`): the models with a point estimate (``keys``), their values
    (``values``: ``(B + 1, M)``, the point estimate then the replicates), in each row how many
    models are better (``better``: the rank − 1) and which pairs are separable (``apart``)."""

    higher_is_better: bool
    confidence: float
    keys: tuple[str, ...]
    values: np.ndarray
    better: np.ndarray
    apart: np.ndarray


INCREMENTAL_SHARE = 0.25  # above this share of changed models, ranks are computed in full


def _better_counts(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """``(R, M)``: per row, how many values are strictly better than each (NaN is worst)."""
    return _ranks(values, higher_is_better) - 1


def _oriented(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """The values with "better" as "larger" and NaN as −∞ (the order :func:`_ranks` uses)."""
    x = values if higher_is_better else -values
    return np.where(np.isnan(x), -np.inf, x)


def _update(previous: RankState, keys: Sequence[str], values: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(better, apart)`` of ``values`` from ``previous``: the models whose values are the
    same to the bit keep their separable pairs, and their counts of better models change by the
    models removed (or changed) and added; the rest is computed for the added (or changed)
    models alone. None when too many models changed (then everything is computed)."""
    old_at = {key: i for i, key in enumerate(previous.keys)}
    new_common = np.asarray([i for i, key in enumerate(keys) if key in old_at], dtype=np.int64)
    old_common = np.asarray([old_at[keys[i]] for i in new_common], dtype=np.int64)
    same = (previous.values[:, old_common].view(np.int64)
            == values[:, new_common].view(np.int64)).all(axis=0)
    kept_new, kept_old = new_common[same], old_common[same]
    removed = np.setdiff1d(np.arange(len(previous.keys)), kept_old)
    added = np.setdiff1d(np.arange(len(keys)), kept_new)
    if len(removed) + len(added) > INCREMENTAL_SHARE * max(len(keys), 1):
        return None
    higher = previous.higher_is_better
    x = _oriented(values, higher)
    gone = _oriented(previous.values[:, removed], higher)
    counts = previous.better[:, kept_old].astype(np.int64)
    kept_x = x[:, kept_new]
    for r in range(gone.shape[1]):
        counts -= gone[:, r:r + 1] > kept_x
    for a in added:
        counts += x[:, a:a + 1] > kept_x
    better = np.empty(values.shape, dtype=np.int64)
    better[:, kept_new] = counts
    for a in added:
        better[:, a] = (x > x[:, a:a + 1]).sum(axis=1)
    apart = np.zeros((len(keys), len(keys)), dtype=bool)
    apart[np.ix_(kept_new, kept_new)] = previous.apart[np.ix_(kept_old, kept_old)]
    if len(added):
        rows = separable_rows(values[1:], added, previous.confidence)
        apart[added, :] = rows
        apart[:, added] = rows.T  # the same values: every pair's test is symmetric
    return better, apart


def _computed(quantity: Quantity, higher_is_better: bool, confidence: float | None,
              previous: RankState | None):
    """The :class:`RankState` of :func:`ranked`, each model's rank and rank interval, and the
    models' positions in ranking order."""
    confidence = quantity.confidence if confidence is None else confidence
    keep = [i for i, v in enumerate(quantity.point) if np.isfinite(v)]
    keys: tuple[str, ...] = tuple(quantity.keys[i] for i in keep)
    values = np.vstack([quantity.point[keep][None, :], quantity.replicates[:, keep]])
    updated = None
    if (previous is not None and previous.higher_is_better == higher_is_better
            and previous.confidence == confidence and previous.values.shape[0] == len(values)):
        updated = _update(previous, keys, values)
    if updated is None:
        better = _better_counts(values, higher_is_better) if keys else np.empty(
            values.shape, dtype=np.int64)
        apart = separable(values[1:], confidence)
    else:
        better, apart = updated
    state = RankState(higher_is_better, confidence, keys, values, better, apart)
    if not keys:
        return state, None, None, None, np.empty(0, dtype=np.int64)
    rank = better[0] + 1
    low, high = percentile_interval((better[1:] + 1).astype(float), confidence)
    order = np.array(sorted(range(len(keys)), key=lambda i: (rank[i], keys[i])), dtype=np.int64)
    return state, rank, low, high, order


def ranked(quantity: Quantity, higher_is_better: bool = True, confidence: float | None = None,
           previous: RankState | None = None) -> tuple[list[RankInterval], RankState]:
    """:func:`rank_intervals` and the :class:`RankState` they come from. With ``previous`` (a
    state of the same direction and confidence) only what changed is computed: the same
    results as without it."""
    state, rank, low, high, order = _computed(quantity, higher_is_better, confidence, previous)
    keys, values, apart = state.keys, state.values, state.apart
    if not keys:
        return [], state
    ordered_keys = np.array(keys, dtype=object)[order]
    result = []
    for i in order:
        tied = ordered_keys[~apart[i, order] & (order != i)]
        result.append(RankInterval(keys[i], float(values[0, i]), int(rank[i]), int(low[i]),
                                   int(high[i]), tuple(tied.tolist())))
    return result, state


@dataclass(frozen=True, eq=False)
class RankColumns:
    """:func:`ranked`'s intervals as columns, in the same (ranking) order: ``keys``, ``value``,
    ``rank``, ``rank_low``, ``rank_high`` and ``not_separable_from`` (an Arrow list of keys per
    model, the same lists, made from the separable pairs without a Python object per name)."""

    keys: pa.Array
    value: np.ndarray
    rank: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    not_separable_from: pa.ListArray


def rank_columns(quantity: Quantity, higher_is_better: bool = True,
                   confidence: float | None = None, previous: RankState | None = None
                   ) -> tuple[RankColumns, RankState]:
    """:func:`ranked` as :class:`RankColumns` (the same values, in the same order)."""
    state, rank, low, high, order = _computed(quantity, higher_is_better, confidence, previous)
    ordered = pa.array([state.keys[i] for i in order], type=pa.string())
    if not state.keys:
        empty = np.empty(0, dtype=np.int64)
        return RankColumns(ordered, np.empty(0), empty, empty, empty, pa.array(
            [], type=pa.list_(pa.string()))), state
    tied = ~state.apart[np.ix_(order, order)]  # row p, column q: the p-th and q-th in order
    np.fill_diagonal(tied, False)
    rows, at = np.nonzero(tied)  # row by row, each row's models in ranking order
    offsets = np.zeros(len(order) + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=len(order)), out=offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(offsets), ordered.take(pa.array(at)))
    return RankColumns(ordered, state.values[0, order].astype(np.float64), rank[order],
                       low[order].astype(np.int64), high[order].astype(np.int64), lists), state


def rank_intervals(
    quantity: Quantity, higher_is_better: bool = True, confidence: float | None = None
) -> list[RankInterval]:
    """Rank, rank interval and non-separable models of every model with a point estimate,
    sorted by rank (module docstring)."""
    return ranked(quantity, higher_is_better, confidence)[0]


RANK_STATE_FORMAT = 3  # the layout of a kept rank state file (save_rank_states)


def save_rank_states(path: Path, key: str, states: Mapping[str, RankState]) -> None:
    """Keep ``states`` (name -> :class:`RankState`) in ``path``, a safetensors file: the arrays
    ``values/<name>``, ``better/<name>`` and ``apart/<name>``, and as its metadata (strings)
    the layout (``format``), ``key`` and per state its direction, confidence and model keys
    (``states``, JSON); written beside ``path`` and renamed over it when complete."""
    meta = {"format": str(RANK_STATE_FORMAT), "key": key,
            "states": json.dumps({name: {"higher_is_better": s.higher_is_better,
                                         "confidence": s.confidence, "keys": list(s.keys)}
                                  for name, s in states.items()})}
    arrays = {f"{kind}/{name}": np.ascontiguousarray(getattr(s, kind))
              for name, s in states.items() for kind in ("values", "better", "apart")}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    save_file(arrays, str(partial), metadata=meta)
    os.replace(partial, path)


def load_rank_states(path: Path, key: str) -> tuple[dict[str, RankState], str | None]:
    """The states kept in ``path`` by :func:`save_rank_states` under the same ``key`` and
    layout, and None; or no states (an empty dict) and why: no file, not a file of kept states
    (unreadable, another layout) or kept under another key."""
    try:
        with safe_open(str(path), framework="np") as kept:
            meta = kept.metadata() or {}
            if meta.get("format") != str(RANK_STATE_FORMAT):
                return {}, f"{path} holds rank states of another layout"
            if meta.get("key") != key:
                return {}, "the rank states were kept under other settings"
            arrays = {name: kept.get_tensor(name) for name in kept.keys()}  # noqa: SIM118
    except FileNotFoundError:
        return {}, "no rank states kept"
    except (SafetensorError, OSError, ValueError) as error:
        return {}, f"{path} is not a file of rank states ({error})"
    return {name: RankState(bool(m["higher_is_better"]), float(m["confidence"]),
                            tuple(m["keys"]), arrays[f"values/{name}"],
                            arrays[f"better/{name}"], arrays[f"apart/{name}"])
            for name, m in json.loads(meta["states"]).items()}, None
