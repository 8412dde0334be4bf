"""Per-instance statistics keyed by instance id: the input of paired ∆ and of the bootstrap.

- :class:`SegmentStats`: the per-segment sufficient statistics of one (model, test set, metric)
  (BLEU ``[hyp_len, ref_len, match_1..4, hyp_count_1..4]``, chrF ``[hyp_n, ref_n, match_n]`` for
  n = 1..6, as :mod:`cultivar_assets.metrics.scoring` computes and the store keeps them in
  ``segment_stats``), one row per instance id. A segment-score metric (the COMET shape) is held
  the same way with float64 statistics ``[score, 1]`` per segment (:meth:`SegmentStats.of_scores`,
  from ``segment_scores``): the sums are ``[Σ score, n]`` and the corpus score their ratio, the
  mean of the scores.
- :class:`RecallCounts`: the word-recall counts of one (model, locale), one row per instance id,
  columns ``n_removed, n_removed_recalled, n_introduced, n_introduced_missed``
  (:mod:`cultivar_assets.metrics.word_recall`, table ``word_recall``).

Rows are kept sorted by id; an id occurs once. ``stats_from_rows`` and ``recall_from_rows`` build
them from the store's rows (dicts with the table's column names); ``stats_from_table`` from the
same columns as one Arrow table (the fast path for every statistic of a leaderboard);
``scores_from_table`` from ``segment_scores`` rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

RECALL_COLUMNS = ("n_removed", "n_removed_recalled", "n_introduced", "n_introduced_missed")


class StatsError(ValueError):
    """Per-instance statistics are malformed (duplicate ids, ragged rows, missing ids)."""


def _sorted_rows(ids, rows, width: int | None, name: str,
                 dtype: type = np.int64) -> tuple[np.ndarray, np.ndarray]:
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    rows = np.asarray(rows, dtype=dtype)
    if rows.ndim != 2 or len(rows) != len(ids):
        raise StatsError(f"{name}: {len(ids)} ids but statistics of shape {rows.shape}")
    if width is not None and rows.shape[1] != width:
        raise StatsError(f"{name}: rows have {rows.shape[1]} columns, expected {width}")
    order = np.argsort(ids, kind="stable")
    ids, rows = ids[order], rows[order]
    if len(ids) > 1 and (np.diff(ids) == 0).any():
        dupes = np.unique(ids[1:][np.diff(ids) == 0])
        raise StatsError(f"{name}: duplicate instance ids {dupes[:10].tolist()}")
    if dtype is np.int64 and (rows < 0).any():
        raise StatsError(f"{name}: negative counts")
    if dtype is not np.int64 and not np.isfinite(rows).all():
        raise StatsError(f"{name}: scores that are not finite")
    ids.setflags(write=False)
    rows.setflags(write=False)
    return ids, rows


def _positions(own: np.ndarray, wanted: np.ndarray, name: str) -> np.ndarray:
    where = np.searchsorted(own, wanted)
    where = np.minimum(where, max(len(own) - 1, 0))
    if len(own) == 0 or (own[where] != wanted).any():
        missing = np.setdiff1d(wanted, own)
        raise StatsError(f"{name}: no row for instance ids {missing[:10].tolist()}")
    return where


@dataclass(frozen=True, eq=False)
class SegmentStats:
    """Sufficient statistics of one (model, test set, metric); ``stats[i]`` is of ``ids[i]``."""

    ids: np.ndarray  # (n,) int64, strictly increasing
    stats: np.ndarray  # (n, k) int64; (n, 2) float64 [score, 1] for segment scores

    @classmethod
    def build(cls, ids, stats, name: str = "statistics") -> SegmentStats:
        """Sorted by id; duplicate ids, ragged or negative rows raise :class:`StatsError`."""
        return cls(*_sorted_rows(ids, stats, None, name))

    @classmethod
    def of_scores(cls, ids, scores, name: str = "segment scores") -> SegmentStats:
        """The segment scores ``scores[i]`` of ``ids[i]`` as float64 statistics
        ``[score, 1]``, sorted by id; duplicate ids or non-finite scores raise
        :class:`StatsError`."""
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        return cls(*_sorted_rows(ids, np.column_stack([scores, np.ones_like(scores)]), 2, name,
                                 np.float64))

    def rows(self, ids: np.ndarray, name: str = "statistics") -> np.ndarray:
        """The rows of ``ids`` (sorted); an id without a row raises :class:`StatsError`."""
        if len(ids) == len(self.ids) and np.array_equal(ids, self.ids):
            return self.stats
        return self.stats[_positions(self.ids, ids, name)]


@dataclass(frozen=True, eq=False)
class RecallCounts:
    """Word-recall counts of one (model, locale); ``counts[i]`` belongs to ``ids[i]``."""

    ids: np.ndarray  # (n,) int64, strictly increasing
    counts: np.ndarray  # (n, 4) int64

    @classmethod
    def build(cls, ids, counts, name: str = "word recall") -> RecallCounts:
        return cls(*_sorted_rows(ids, counts, len(RECALL_COLUMNS), name))


StatsTable = Mapping[tuple[str, str], SegmentStats]  # (model, test set) -> statistics


def _groups(table, columns: tuple[str, ...]):
    """(key values, row positions) per distinct combination of ``columns`` of an Arrow table."""
    import pyarrow.compute as pc

    codes = []
    for name in columns:
        encoded = pc.dictionary_encode(table.column(name).combine_chunks())
        codes.append((encoded.dictionary.to_pylist(), encoded.indices.to_numpy()))
    order = np.lexsort([c[1] for c in reversed(codes)])
    group = np.stack([c[1][order] for c in codes], axis=1)
    starts = np.flatnonzero(np.r_[True, (np.diff(group, axis=0) != 0).any(axis=1)])
    ends = np.r_[starts[1:], len(order)]
    for start, end in zip(starts, ends, strict=True):
        yield tuple(codes[k][0][group[start, k]] for k in range(len(columns))), order[start:end]


def recall_from_table(table) -> dict[tuple[str, str], RecallCounts]:
    """(model, locale) -> counts, from a ``pyarrow.Table`` of ``word_recall`` rows
    (``model_id, locale, segment_id`` and the four ``RECALL_COLUMNS``)."""
    if table.num_rows == 0:
        return {}
    ids = table.column("segment_id").to_numpy()
    counts = np.column_stack([table.column(c).to_numpy() for c in RECALL_COLUMNS])
    return {key: RecallCounts.build(ids[rows], counts[rows], f"word recall of {key[0]} on "
                                                           f"{key[1]}")
            for key, rows in _groups(table, ("model_id", "locale"))}


def stats_from_table(table) -> dict[str, dict[tuple[str, str], SegmentStats]]:
    """metric -> (model, test set) -> statistics, from a ``pyarrow.Table`` of
    ``segment_stats`` rows (``model_id, test_set, segment_id, metric, stats``; ``stats`` a list
    of integers)."""
    import pyarrow as pa

    if table.num_rows == 0:
        return {}
    ids = table.column("segment_id").to_numpy()
    lists = table.column("stats").combine_chunks()
    if not isinstance(lists, pa.ListArray | pa.LargeListArray):
        raise StatsError(f"the stats column must hold lists of integers, not {lists.type}")
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)
    result: dict[str, dict[tuple[str, str], SegmentStats]] = {}
    for (metric, model, test_set), rows in _groups(table, ("metric", "model_id", "test_set")):
        name = f"{metric} statistics of {model} on {test_set}"
        width = lengths[rows]
        if (width != width[0]).any():
            raise StatsError(f"{name}: rows of different lengths {sorted(set(width.tolist()))}")
        at = offsets[:-1][rows][:, None] + np.arange(width[0])
        result.setdefault(metric, {})[(model, test_set)] = SegmentStats.build(
            ids[rows], values[at], name)
    return result


def stats_from_sorted_table(table) -> dict[str, dict[tuple[str, str], SegmentStats]]:
    """:func:`stats_from_table` of rows sorted by ``metric, model_id, test_set, segment_id``
    (``ORDER BY`` in SQL): each group's rows are one run, so its statistics are a view of one
    reshape of the list values (no per-group sort or gather). The same checks (rows of one
    length per group, no duplicate id, no negative count); unsorted rows raise."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return {}
    ids = table.column("segment_id").to_numpy().astype(np.int64)
    lists = table.column("stats").combine_chunks()
    if not isinstance(lists, pa.ListArray | pa.LargeListArray):
        raise StatsError(f"the stats column must hold lists of integers, not {lists.type}")
    offsets = lists.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0]
    values = lists.values.to_numpy(zero_copy_only=False)[:offsets[-1]].astype(np.int64,
                                                                               copy=False)
    keys = [pc.dictionary_encode(table.column(c).combine_chunks())
            for c in ("metric", "model_id", "test_set")]
    codes = np.stack([k.indices.to_numpy() for k in keys], axis=1)
    starts = np.flatnonzero(np.r_[True, (np.diff(codes, axis=0) != 0).any(axis=1)])
    ends = np.r_[starts[1:], len(ids)]
    names = [[k.dictionary[int(c)].as_py() for k, c in zip(keys, codes[s], strict=True)]
             for s in starts]
    if len({tuple(n) for n in names}) != len(names):
        raise StatsError("segment statistics are not sorted by metric, model and test set")
    within = np.ones(len(ids), dtype=bool)
    within[starts] = False
    if (within[1:] & (np.diff(ids) <= 0)[:]).any():
        at = np.flatnonzero(within[1:] & (np.diff(ids) <= 0))[0] + 1
        group = np.searchsorted(starts, at, side="right") - 1
        if ids[at] == ids[at - 1]:
            raise StatsError(f"{names[group][0]} statistics of {names[group][1]} on "
                             f"{names[group][2]}: duplicate instance ids [{ids[at]}]")
        raise StatsError("segment statistics are not sorted by instance id")
    widths = np.diff(offsets)
    result: dict[str, dict[tuple[str, str], SegmentStats]] = {}
    ids.setflags(write=False)
    for group, (start, end) in enumerate(zip(starts, ends, strict=True)):
        metric, model, test_set = names[group]
        width = widths[start:end]
        if (width != width[0]).any():
            raise StatsError(f"{metric} statistics of {model} on {test_set}: rows of different "
                             f"lengths {sorted(set(width.tolist()))}")
        matrix = values[offsets[start]:offsets[end]].reshape(end - start, int(width[0]))
        if (matrix < 0).any():
            raise StatsError(f"{metric} statistics of {model} on {test_set}: negative counts")
        matrix.setflags(write=False)
        result.setdefault(metric, {})[(model, test_set)] = SegmentStats(ids[start:end], matrix)
    return result


def scores_from_table(table) -> dict[str, dict[tuple[str, str], SegmentStats]]:
    """metric -> (model, test set) -> segment scores as statistics ``[score, 1]``
    (:meth:`SegmentStats.of_scores`), from a ``pyarrow.Table`` of ``segment_scores`` rows
    (``model_id, test_set, segment_id, metric, score``)."""
    if table.num_rows == 0:
        return {}
    ids = table.column("segment_id").to_numpy()
    scores = table.column("score").to_numpy()
    result: dict[str, dict[tuple[str, str], SegmentStats]] = {}
    for (metric, model, test_set), rows in _groups(table, ("metric", "model_id", "test_set")):
        result.setdefault(metric, {})[(model, test_set)] = SegmentStats.of_scores(
            ids[rows], scores[rows], f"{metric} segment scores of {model} on {test_set}")
    return result
