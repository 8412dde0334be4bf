"""The cross-model tables (paper Tables 2-4) with their statistics, recomputed from the store.

:func:`aggregate` reads every stored score of the chosen models, refuses to mix scores with
different signatures, tokenizer models or datasets (one table, one signature; the message names
the models to re-score), runs one paired bootstrap over instances
(:mod:`cultivar_assets.metrics.bootstrap`, configured by the ``metrics`` settings:
``bootstrap_replicates``, ``bootstrap_seed``, ``confidence``) and replaces the aggregate tables in
one transaction with the rows of :mod:`cultivar_assets.evaluation.statistics` (definitions there).

The bootstrap streams over the models in blocks of :data:`BLOCK_MODELS`, in model order: a
block's per-segment statistics and word-recall counts are read, each model's replicates computed
(``bootstrap.model_replicates``) and combined with the others' (``bootstrap.combine``) before the
next block is read; every result equals one bootstrap over all models at once. :data:`WORKERS`
blocks are read and computed at once, in threads, BLAS at one thread per product (the same
arithmetic). Given a ``replicates_dir``, each model's replicates are kept there and reused while
what they were computed from is unchanged (:func:`_replicates_key`), and so are the ranks'
states (:data:`RANK_STATES_FILE`, ``metrics.ranks.ranked``): the ranks of models whose values
are unchanged are updated for the models added, changed or removed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name, get_locale
from cultivar_assets.evaluation.statistics import (
    StatisticsTables,
    ranked_columns,
    statistics_tables,
)
from cultivar_assets.metrics.bootstrap import (
    BootstrapConfig,
    ModelReplicates,
    bootstrap_weights,
    combine,
    load_replicates,
    model_replicates,
    save_replicates,
)
from cultivar_assets.metrics.flags import RuleResult
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.ranks import load_rank_states, rank_sentence, save_rank_states
from cultivar_assets.metrics.registry import metric_registry, score_functions, score_label
from cultivar_assets.metrics.segment_stats import (
    RECALL_COLUMNS,
    recall_from_table,
    scores_from_table,
    stats_from_sorted_table,
)
from cultivar_assets.metrics.word_recall import rates_from_sums
from cultivar_assets.store.database import Store, WriteBlock
from cultivar_assets.store.records import dataset_fingerprint

RESAMPLING = ("paired bootstrap over instance ids: one resample of the pooled ids per replicate, "
              "applied to every model, to both sides of every ∆ and to the word-recall counts; "
              "models fixed")
INTERVAL = "percentile interval (sacreBLEU's order statistics), both ends reported"


class AggregationError(RuntimeError):
    """Scores cannot be aggregated as they are (mixed signatures or datasets, missing
    statistics)."""


@dataclass(frozen=True)
class Aggregates:
    models: list[str]
    locales: list[str]
    signatures: dict[str, str]
    leaderboard: list[dict]  # the leaderboard view after the write
    locale_summary: list[dict]  # per locale: delta_<metric> with _low/_high/_excludes_zero
    rank_agreement: list[dict]  # rows of raw.rank_agreement
    tables: StatisticsTables
    settings: dict  # the statistics_settings row

    @property
    def rules(self) -> list[RuleResult]:
        return self.tables.rules


def _check_consistency(rows: list[dict], fingerprint: str, metrics: Sequence[str]
                       ) -> dict[str, tuple[str, str | None]]:
    """metric -> (signature, tokenizer sha256) shared by every row of ``metrics``; raises when
    they differ, or when a model lacks scores of one of them."""
    stale = sorted({r["model_id"] for r in rows if r["dataset_fingerprint"] != fingerprint})
    if stale:
        raise AggregationError(
            f"scores of {', '.join(stale)} were computed on another version of the data; "
            "re-materialise their translations and scores"
        )
    outdated = sorted({r["model_id"] for r in rows if not r["current"]})
    if outdated:
        raise AggregationError(
            f"scores of {', '.join(outdated)} were computed from earlier translations; "
            "materialise their scores"
        )
    models = {r["model_id"] for r in rows}
    scored = {(r["model_id"], r["metric"]) for r in rows}
    lacking = sorted(f"{model} ({metric})" for metric in metrics for model in models
                     if (model, metric) not in scored)
    if lacking:
        raise AggregationError(
            f"no scores of {', '.join(lacking)}: the settings' metrics ({', '.join(metrics)}) "
            "were not all scored; materialise their scores")
    found_by_metric: dict[str, tuple[str, str | None]] = {}
    for metric in metrics:
        found: dict[tuple[str, str | None], set[str]] = {}
        for r in rows:
            if r["metric"] == metric:
                found.setdefault((r["signature"], r["tokenizer_sha256"]), set()).add(r["model_id"])
        if len(found) > 1:
            detail = "; ".join(
                f"{sig}{f' (tokenizer model sha256 {sha[:16]})' if sha else ''}: "
                f"{', '.join(sorted(m))}" for (sig, sha), m in found.items())
            raise AggregationError(
                f"{metric} scores carry {len(found)} different signatures or tokenizer models and "
                f"are never mixed in one table ({detail}). Re-score the models with one metric "
                "configuration."
            )
        if found:
            found_by_metric[metric] = next(iter(found))
    return found_by_metric


def _check_statistics(segment_counts: list[dict], rows: list[dict]) -> None:
    """Every scored test set must have its statistics, with one row per scored segment
    (``segment_counts``: the rows of the query of that name)."""
    counts = {(r["metric"], r["model_id"], r["test_set"]): r["n"] for r in segment_counts}
    lacking = sorted({r["model_id"] for r in rows
                      if counts.get((r["metric"], r["model_id"], r["test_set"]))
                      != r["n_segments"]})
    if lacking:
        raise AggregationError(
            f"per-segment statistics of {', '.join(lacking)} are missing or do not match their "
            "scores; re-materialise their scores")


BLOCK_MODELS = 50  # models read and bootstrapped together


def _read_block(store: Store, block: list[str], metrics: Sequence[str]):
    """(statistics, word recall) of the models of ``block``."""
    stored = (stats_from_sorted_table(store.arrow("segment_stats_of_models", models=block))
              | scores_from_table(store.arrow("segment_scores_of_models", models=block)))
    stats = {metric: stored.get(metric, {}) for metric in metrics}
    recall = recall_from_table(store.arrow("word_recall_of_models", models=block))
    return stats, recall


def _replicates_key(model: str, digest, rows: list[dict], pool: str,
                    bootstrap: BootstrapConfig, metrics: Sequence[str],
                    locales: Sequence[str]) -> str:
    """What a model's replicates are computed from: its statistics (their digest) and score
    rows (``rows``: the model's), the pool of ids (``pool``: a digest of it), the bootstrap
    settings, the metrics and the locales."""
    described = {
        "model": model, "statistics": str(digest), "pool": pool,
        "bootstrap": bootstrap.model_dump(), "metrics": list(metrics), "locales": list(locales),
        "scores": sorted((r["metric"], r["test_set"], repr(r["score"]), r["signature"],
                          r["tokenizer_sha256"] or "", r["n_segments"],
                          r["dataset_fingerprint"]) for r in rows)}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


WORKERS = 2  # blocks of models read and computed at once, each in a thread of its own


def _block_parts(store: Store, block: list[str], keys: dict[str, str], locales: list[str],
                 metrics: Sequence[str], universe: np.ndarray, weights: np.ndarray,
                 bootstrap: BootstrapConfig, replicates_dir: Path | None, progress: bool
                 ) -> dict[str, ModelReplicates]:
    """The :class:`ModelReplicates` of the models of ``block``: loaded from ``replicates_dir``
    where kept under their key, the others' statistics read and their replicates computed (and
    kept there)."""
    parts: dict[str, ModelReplicates] = {}
    if replicates_dir is not None:
        for model in block:
            found = load_replicates(replicates_dir / f"{model}.npz", keys[model])
            if found is not None:
                parts[model] = found
    missing = [m for m in block if m not in parts]
    if missing:
        stats, recall = _read_block(store, missing, metrics)
        for part in model_replicates(stats, missing, locales, recall, universe, weights,
                                     bootstrap.confidence, score_functions=score_functions(stats),
                                     progress=progress):
            parts[part.model] = part.compact()
            if replicates_dir is not None:
                save_replicates(part, replicates_dir / f"{part.model}.npz", keys[part.model])
    return parts


# in ``replicates_dir``, beside ``<model>.npz``: the ranks' states (metrics.ranks); no model
# id begins with "_" (specs.MODEL_ID_PATTERN)
RANK_STATES_FILE = "_ranks.state"


def _rank_states_key(bootstrap: BootstrapConfig, metrics: Sequence[str]) -> str:
    """What kept rank states are labelled with: the bootstrap settings and the ranked columns
    (quantity, direction). Each state also holds every model's values, compared to the bit
    with the new ones before anything kept is used (``metrics.ranks.ranked``)."""
    described = {"bootstrap": bootstrap.model_dump(),
                 "columns": sorted(ranked_columns(metrics).values())}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def _model_parts(store: Store, rows: list[dict], model_ids: list[str], locales: list[str],
                 metrics: Sequence[str], universe: np.ndarray, weights: np.ndarray,
                 bootstrap: BootstrapConfig, replicates_dir: Path | None, progress: bool,
                 statistics_digests: list[dict]):
    """Every model's :class:`ModelReplicates` in model order: loaded from ``replicates_dir``
    where kept under the same key (``statistics_digests``: the rows of the query of that
    name), else computed :data:`BLOCK_MODELS` models at a time (and kept there).
    :data:`WORKERS` blocks are read and computed at once, in threads (DuckDB's reads and
    NumPy's array operations run outside Python's lock; :func:`aggregate` holds BLAS at one
    thread per call): each block's arithmetic is the same as alone."""
    keys: dict[str, str] = {}
    if replicates_dir is not None:
        digests = {r["model_id"]: r["digest"] for r in statistics_digests}
        rows_of: dict[str, list[dict]] = {}
        for r in rows:
            rows_of.setdefault(r["model_id"], []).append(r)
        pool = hashlib.sha256(universe.tobytes()).hexdigest()
        keys = {model: _replicates_key(model, digests.get(model), rows_of.get(model, []), pool,
                                       bootstrap, metrics, locales) for model in model_ids}
    blocks = [model_ids[start:start + BLOCK_MODELS]
              for start in range(0, len(model_ids), BLOCK_MODELS)]
    with ThreadPoolExecutor(max_workers=WORKERS) as workers:
        pending: dict[int, Future] = {}
        for i, block in enumerate(blocks):
            for ahead in range(i, min(i + WORKERS, len(blocks))):  # this block and the next
                if ahead not in pending:
                    pending[ahead] = workers.submit(
                        _block_parts, store, blocks[ahead], keys, locales, metrics, universe,
                        weights, bootstrap, replicates_dir, progress)
            parts = pending.pop(i).result()
            for model in block:
                yield parts.pop(model)


def aggregate(store: Store, models: Sequence[str] | None = None,
              config: MetricConfig | None = None, progress: bool = False,
              replicates_dir: Path | None = None) -> Aggregates:
    """Recompute the aggregate tables of ``models`` (default: every scored model); module
    docstring. ``config``: the metric settings (the metrics aggregated, in their order; bootstrap
    and flag parameters). ``replicates_dir``: a folder where each model's replicates are kept
    (``<model>.npz``) and reused while what they were computed from is unchanged."""
    config = config or MetricConfig()
    started = time.perf_counter()
    fingerprint = dataset_fingerprint(store)
    rows = store.query("all_scores")
    if models is not None:
        rows = [r for r in rows if r["model_id"] in set(models)]
    rows = [r for r in rows if r["metric"] in config.metrics]  # the configured metrics only
    if not rows:
        raise AggregationError("no scores to aggregate; materialise scores first")
    consistent = _check_consistency(rows, fingerprint, config.metrics)
    signatures = {metric: signature for metric, (signature, _) in consistent.items()}
    model_ids = sorted({r["model_id"] for r in rows})
    locales = sorted({t["locale"] for t in store.query("test_set_index") if t["locale"]})
    metrics = tuple(config.metrics)
    bootstrap = config.bootstrap_config()
    test_sets = sorted({cultivar_test_set_name(loc) for loc in locales}
                       | {flores_test_set_name(get_locale(loc).source_language)
                          for loc in locales})
    with ThreadPoolExecutor(max_workers=WORKERS) as reads:  # independent reads, side by side
        queries = {name: reads.submit(store.query, name, **params) for name, params in (
            ("segment_counts", {}),
            ("aggregation_instance_pool", {"models": model_ids, "metrics": list(metrics),
                                           "test_sets": test_sets, "locales": locales}),
            ("statistics_digests", {}), ("word_recall_sums", {}))
            if name != "statistics_digests" or replicates_dir is not None}
        read = {name: future.result() for name, future in queries.items()}
    _check_statistics(read.pop("segment_counts"), rows)
    universe = np.asarray([r["segment_id"] for r in read.pop("aggregation_instance_pool")],
                          dtype=np.int64)
    if len(universe) == 0:
        raise AggregationError("no statistics for the scored models and locales")
    weights = bootstrap_weights(len(universe), bootstrap)
    # one BLAS thread per product: the blocks' threads (WORKERS) use the cores instead; BLAS's
    # own threads beside them only wait on each other
    with threadpool_limits(limits=1, user_api="blas"):
        parts = _model_parts(store, rows, model_ids, locales, metrics, universe, weights,
                             bootstrap, replicates_dir, progress,
                             read.pop("statistics_digests", []))
        result = combine(parts, model_ids, locales, metrics, len(universe), bootstrap)
    chosen = set(model_ids)
    recall_table = [  # per (model, locale): word_recall.rates_from_sums of the summed counts
        {"model_id": r["model_id"], "locale": r["locale"],
         **vars(rates_from_sums(*(int(r[c]) for c in RECALL_COLUMNS), r["n_instances"]))}
        for r in read["word_recall_sums"] if r["model_id"] in chosen]
    ranks_file = key = None
    if replicates_dir is not None:
        ranks_file = replicates_dir / RANK_STATES_FILE
        key = _rank_states_key(bootstrap, metrics)
    with threadpool_limits(limits=1, user_api="blas"):
        tables = statistics_tables(result, config.flag_config(),
                                   load_rank_states(ranks_file, key) if ranks_file else None)
    registry = metric_registry()
    metric_rows = [  # raw.statistics_metrics
        {"metric": metric, "position": i, "label": score_label(metric, consistent[metric][0]),
         "higher_is_better": registry.get(metric).higher_is_better,
         "signature": consistent[metric][0], "tokenizer_sha256": consistent[metric][1]}
        for i, metric in enumerate(result.metrics)]

    settings = {
        "n_replicates": bootstrap.n_replicates, "seed": bootstrap.seed,
        "confidence": bootstrap.confidence, "n_instances": result.n_instances,
        "n_models": len(model_ids),
        "n_locales": len(result[f"locale_delta_{result.metrics[0]}"].keys),
        "resampling": RESAMPLING, "interval": INTERVAL,
        "rank_rule": rank_sentence(bootstrap.confidence),
        "flag_config": json.dumps(config.flag_config().model_dump(mode="json"), sort_keys=True),
        "seconds": round(time.perf_counter() - started, 3),
        "computed_at": datetime.now(UTC).replace(tzinfo=None),
    }
    store.write([
        WriteBlock("delete_aggregates"),
        WriteBlock("insert_model_locale_deltas", rows=tables.pairs),
        WriteBlock("insert_locale_word_recall", rows=recall_table),
        WriteBlock("insert_model_summary", rows=tables.models),
        WriteBlock("insert_locale_summary", rows=tables.locales),
        WriteBlock("insert_metric_values", rows=tables.values),
        WriteBlock("insert_statistics_metrics", rows=metric_rows),
        WriteBlock("insert_rank_agreement", rows=tables.agreement),
        WriteBlock("insert_table_averages", rows=tables.averages),
        WriteBlock("insert_leaderboard_ranks", rows=tables.ranks),
        WriteBlock("insert_contamination_flags", rows=tables.flags),
        WriteBlock("insert_statistics_settings", rows=[settings]),
    ])
    if ranks_file is not None:
        save_rank_states(ranks_file, key, tables.rank_states)
    return Aggregates(model_ids, locales, signatures, store.query("leaderboard"),
                      result.locale_rows(), tables.agreement, tables, settings)
