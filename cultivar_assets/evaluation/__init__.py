"""Evaluating models (paper §3-5): scoring, the cross-model tables and their statistics, and the
human error analysis.

- :mod:`~cultivar_assets.evaluation.model_scores`: one model's BLEU/chrF per test set, with
  per-segment statistics and word-recall counts (``score_model``);
- :mod:`~cultivar_assets.evaluation.aggregates` and :mod:`~cultivar_assets.evaluation.statistics`:
  Tables 2-4 with intervals, ranks and contamination flags (``aggregate``);
- :mod:`~cultivar_assets.evaluation.contamination`: the same rules on the paper's reported
  Table 3;
- ``error_*`` modules: the error analysis of §5 (Table 5): the sample, the annotation page, the
  returned files and the table.
"""

from cultivar_assets.evaluation.aggregates import Aggregates, AggregationError, aggregate
from cultivar_assets.evaluation.model_scores import ModelScores, score_model

__all__ = ["Aggregates", "AggregationError", "ModelScores", "aggregate", "score_model"]
