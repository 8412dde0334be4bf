"""The leaderboard's statistics as the project computed them before they were streamed over
blocks of models: a frozen copy of ``metrics/bootstrap.py``, ``metrics/ranks.py`` and
``evaluation/statistics.py`` (one paired bootstrap holding every model's replicates at once).

Kept only as the reference that ``tests/test_aggregation_streaming.py`` compares the streamed
aggregation with, output by output; nothing outside the tests imports it.
:func:`reference_tables` is ``evaluation.aggregate`` up to the rows it writes: every statistic
read at once, one :func:`~reference_statistics.bootstrap.paired_bootstrap`, then
:func:`~reference_statistics.statistics.statistics_tables`.
"""

from __future__ import annotations

from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import (
    recall_from_table,
    scores_from_table,
    stats_from_table,
)
from cultivar_assets.store.database import Store


def reference_tables(store: Store, config: MetricConfig):
    """(BootstrapResult, StatisticsTables) of every scored model, as the reference computes
    them (the store must hold consistent scores: ``aggregate`` checks them)."""
    from reference_statistics.bootstrap import paired_bootstrap
    from reference_statistics.statistics import statistics_tables

    rows = [r for r in store.query("all_scores") if r["metric"] in config.metrics]
    models = sorted({r["model_id"] for r in rows})
    locales = sorted({t["locale"] for t in store.query("test_set_index") if t["locale"]})
    stored = stats_from_table(store.arrow("all_segment_stats")) | scores_from_table(
        store.arrow("all_segment_scores"))
    chosen = set(models)
    stats = {metric: {k: v for k, v in stored[metric].items() if k[0] in chosen}
             for metric in config.metrics}
    recall = {k: v for k, v in recall_from_table(store.arrow("all_word_recall")).items()
              if k[0] in chosen}
    result = paired_bootstrap(stats, models, locales, recall, config.bootstrap_config(),
                              score_functions=score_functions(stats))
    return result, statistics_tables(result, config.flag_config())
