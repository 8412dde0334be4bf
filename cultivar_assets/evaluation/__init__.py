"""Evaluating models (paper §3-4): scoring, the cross-model tables and their statistics. The human
error analysis of §5 is the sibling package :mod:`cultivar_assets.error_analysis`.

- :mod:`~cultivar_assets.evaluation.model_scores`: one model's BLEU/chrF per test set, with
  per-segment statistics and word-recall counts (``score_model``);
- :mod:`~cultivar_assets.evaluation.aggregates` and :mod:`~cultivar_assets.evaluation.statistics`:
  Tables 2-4 with intervals, ranks and contamination flags (``aggregate``);
- :mod:`~cultivar_assets.evaluation.contamination`: the same rules on the paper's reported
  Table 3.

The names below are imported on first use, so that importing this package does not import the
scoring code.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "Aggregates": "aggregates", "AggregationError": "aggregates", "aggregate": "aggregates",
    "ModelScores": "model_scores", "score_model": "model_scores",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
