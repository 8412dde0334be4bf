"""What the compare view needs for the paired-bootstrap interval of a difference A − B.

The bootstrap's replicates are not stored (one model's ∆ per locale has 1,000 of them per
metric). Our choice (docs/site.md): the site ships the bootstrap's *resampling* once and each
model's *per-instance statistics*, and the browser recomputes the replicates of the pair it
shows, the same way :mod:`cultivar_assets.metrics.bootstrap` does: equal weights
(:func:`~cultivar_assets.metrics.bootstrap.instance_weights` with the stored seed), exact integer
sums, the scores of :mod:`cultivar_assets.metrics.score_arrays`, the same percentile positions.
So the interval the page shows is :func:`~cultivar_assets.metrics.bootstrap.difference_interval`
for the pair. Size: one file per model (about 140 KB on the benchmark's data) plus
one file for the site, where intervals stored per model pair would grow with the square of the
number of models.

Shards (:mod:`cultivar_assets.site.shards`):

- ``data/bootstrap.js`` — key ``bootstrap``: ``{"v", "n_replicates", "seed", "confidence",
  "universe": [ids], "weights": "<base-36 digits>"}``: replicate ``b`` (0-based), position
  ``j``: how often ``universe[j]`` was drawn, the character at ``b·|U| + j``.
- ``data/stats/<slug>.js`` — key ``stats/<slug>``: ``{"v", "model", "blocks": [[metric,
  test_set, ids, form, values]]}``, one block per (stored metric, ``flores_*`` or ``cultivar_*``
  test set). ``form`` ``"c"`` (compact): per instance BLEU ``[sys_len, ref_len, correct_1..4]``
  (``total_n = max(0, sys_len − n + 1)``, the number of n-grams of a sentence) and chrF
  ``[hyp_1, ref_1, match_1..6]`` (``hyp_n = max(0, hyp_1 − n + 1)``, likewise ``ref_n``:
  character n-grams of the sentence without whitespace); ``"x"``: the stored statistics whole,
  for a block where the compact form would not give them back exactly, and for every other
  metric (chrF++, TER, ...).

The browser scores summed statistics with one of three formulas (``site/static/
cultivar-browse.js``), named by :func:`browser_formula`: ``"bleu"``, ``"chrf"`` (chrF and
chrF++: any number of orders) and ``"ter"``, each the twin of the registry entry's
``score_from_stats`` (:mod:`cultivar_assets.metrics.score_arrays`, ``registry.ter_from_stats``);
``tests/test_site_metrics.py`` holds the page's intervals equal to Python's. A metric with another
scoring function (a segment-score or plug-in metric) has no formula: its difference is shown
without an interval.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from cultivar_assets.metrics.bootstrap import instance_weights
from cultivar_assets.metrics.registry import (
    BLEU,
    CHRF,
    get_metric,
    metric_registry,
    ter_from_stats,
)
from cultivar_assets.metrics.score_arrays import (
    BLEU_ORDER,
    BLEU_WIDTH,
    bleu_from_stats,
    chrf_from_stats,
)

# The browser's formulas (cultivar-browse.js) by the scoring function they are the twin of.
BROWSER_FORMULAS = {bleu_from_stats: "bleu", chrf_from_stats: "chrf", ter_from_stats: "ter"}
CHRF_ORDERS = 6
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def browser_formula(metric: str) -> str | None:
    """The name of the browser's formula for ``metric``'s corpus score (module docstring), or
    None where it has none (not registered, or scored by another function)."""
    if metric not in metric_registry():
        return None
    return BROWSER_FORMULAS.get(get_metric(metric).score_from_stats)


def bootstrap_payload(settings: dict, universe: Sequence[int], version: int) -> dict | None:
    """The resampling of the stored statistics (``settings``: the ``statistics_settings`` row);
    None when the universe differs from the one the bootstrap resampled (then the compare
    view shows no difference interval rather than a different one)."""
    if not settings or len(universe) != settings["n_instances"]:
        return None
    weights = instance_weights(len(universe), settings["n_replicates"], settings["seed"])
    if weights.max(initial=0) >= len(_DIGITS):
        return None  # never seen: an id drawn 36 times among a few hundred
    table = np.frombuffer(_DIGITS.encode(), dtype=np.uint8)
    return {"v": version, "n_replicates": int(settings["n_replicates"]),
            "seed": int(settings["seed"]), "confidence": float(settings["confidence"]),
            "universe": [int(i) for i in universe],
            "weights": table[weights.ravel()].tobytes().decode("ascii")}


def expand(metric: str, compact: np.ndarray) -> np.ndarray:
    """Full statistics from the compact form (module docstring); ``compact`` (n, 6) for BLEU,
    (n, 8) for chrF."""
    n = np.arange(1, (BLEU_ORDER if metric == BLEU else CHRF_ORDERS) + 1)
    if metric == BLEU:
        totals = np.maximum(compact[:, :1] - n + 1, 0)
        return np.concatenate([compact[:, :2 + BLEU_ORDER], totals], axis=1)
    hyp, ref = (np.maximum(compact[:, i:i + 1] - n + 1, 0) for i in (0, 1))
    return np.stack([hyp, ref, compact[:, 2:]], axis=2).reshape(len(compact), -1)


def compact(metric: str, stats: np.ndarray) -> np.ndarray | None:
    """The compact form of full statistics, or None where it would not give them back."""
    if metric == BLEU and stats.shape[1] == BLEU_WIDTH:
        short = stats[:, :2 + BLEU_ORDER]
    elif metric == CHRF and stats.shape[1] == 3 * CHRF_ORDERS:
        short = np.concatenate([stats[:, :2], stats[:, 2::3]], axis=1)
    else:
        return None
    return short if np.array_equal(expand(metric, short), stats) else None


def stats_payload(model_id: str, table: pa.Table, version: int) -> dict:
    """The statistics shard of one model (``table``: its ``site_model_stats`` rows, ordered by
    metric, test set and id). Vectorised: one block is a slice of the flattened ``stats``
    lists, reshaped to (instances, width)."""
    n_rows = table.num_rows
    if n_rows == 0:
        return {"v": version, "model": model_id, "blocks": []}
    metric = table["metric"].to_numpy(zero_copy_only=False)
    test_set = table["test_set"].to_numpy(zero_copy_only=False)
    ids = table["segment_id"].to_numpy()
    stats = table["stats"].combine_chunks()
    offsets = stats.offsets.to_numpy()
    flat = stats.flatten().to_numpy(zero_copy_only=False)
    offsets = offsets - offsets[0]
    starts = np.flatnonzero((metric[1:] != metric[:-1]) | (test_set[1:] != test_set[:-1])) + 1
    bounds = [0, *starts.tolist(), n_rows]
    blocks = []
    for start, end in itertools.pairwise(bounds):
        widths = np.diff(offsets[start:end + 1])
        if (widths != widths[0]).any():
            raise ValueError(f"{model_id}: statistics of {metric[start]} on {test_set[start]} "
                             "have rows of different lengths")
        block = flat[offsets[start]:offsets[end]].astype(np.int64).reshape(end - start, -1)
        short = compact(metric[start], block)
        form, values = ("c", short) if short is not None else ("x", block)
        blocks.append([metric[start], test_set[start], ids[start:end].tolist(), form,
                       values.ravel().tolist()])
    return {"v": version, "model": model_id, "blocks": blocks}
