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
arithmetic).

Given a ``replicates_dir`` (held by one aggregation at a time: a lock on its :data:`LOCK_FILE`),
three things are kept there, each labelled with what produced it and ignored when that differs
(``Aggregates.kept`` says what was taken and what not, and why). What a model's kept things were
computed from includes a digest of its statistics, segment scores and word-recall counts,
read from ``raw.statistics_digests`` (recorded by every writer of those rows in the same
transaction) and hashed from the rows themselves for a model whose stored rows are more or
fewer than recorded, or for every model with ``scan_statistics`` (:func:`_digests`):

- every model's replicates, in one pack (``bootstrap.ReplicatesPack``), each under the key of
  what it was computed from (:func:`_replicates_key`): a model whose key is unchanged is taken
  from the pack, the others computed and added to it;
- the ranks' states (:data:`RANK_STATES_FILE`, a safetensors file, ``metrics.ranks.ranked``),
  under the bootstrap settings and ranked columns: the ranks of models whose values are
  unchanged are updated for the models added, changed or removed;
- a record of the per-model rows written (:data:`WRITTEN_FILE`: each model's replicates key
  and a digest of every per-model row the database held after the write, under the rows'
  layout, bootstrap settings, metrics and locales). While the database's per-model rows
  (``model_locale_deltas``, ``model_summary``, ``locale_word_recall``, ``metric_values`` of
  levels ``model_locale`` and ``model``, which depend on one model's replicates alone) are
  still the ones recorded, only the rows of models added, changed or removed are deleted and
  written; every cross-model row (per-locale, ranks, rank agreement, averages, flags,
  settings) is written in full. Otherwise every row is written.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
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
    ReplicatesPack,
    bootstrap_weights,
    combine,
    model_replicates,
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
    tables: StatisticsTables  # per-model rows: those of ``rewritten`` only
    settings: dict  # the statistics_settings row
    rewritten: list[str]  # the models whose per-model rows were written
    kept: dict[str, str]  # what was taken from ``replicates_dir`` and what not (and why)

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


def _check_statistics(counts: dict[tuple[str, str, str], int], rows: list[dict]) -> None:
    """Every scored test set must have its statistics, with one row per scored segment
    (``counts``: (metric, model, test set) -> rows, as the query ``segment_counts`` gives)."""
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


def _locale_languages(locales: Sequence[str]) -> list[list[str]]:
    """[locale, its source language] of each locale, in order."""
    return [[locale, get_locale(locale).source_language] for locale in locales]


def _replicates_key(model: str, digest, rows: list[dict], pool: str,
                    bootstrap: BootstrapConfig, metrics: Sequence[str],
                    locales: Sequence[str]) -> str:
    """What a model's replicates are computed from: its statistics (their digest) and score
    rows (``rows``: the model's), the pool of ids (``pool``: a digest of it), the bootstrap
    settings, the metrics and the locales with their languages (which FLORES test set each
    is paired with)."""
    described = {
        "model": model, "statistics": str(digest), "pool": pool,
        "bootstrap": bootstrap.model_dump(), "metrics": list(metrics),
        "locales": _locale_languages(locales),
        "scores": sorted((r["metric"], r["test_set"], repr(r["score"]), r["signature"],
                          r["tokenizer_sha256"] or "", r["n_segments"],
                          r["dataset_fingerprint"]) for r in rows)}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


WORKERS = 2  # blocks of models read and computed at once, each in a thread of its own


def _block_parts(store: Store, block: list[str], keys: dict[str, str], locales: list[str],
                 metrics: Sequence[str], universe: np.ndarray, weights: np.ndarray,
                 bootstrap: BootstrapConfig, pack: ReplicatesPack | None, progress: bool
                 ) -> tuple[dict[str, ModelReplicates], list[str]]:
    """The :class:`ModelReplicates` of the models of ``block`` (loaded from ``pack`` where kept
    under their key, the others' statistics read and their replicates computed) and the
    models computed."""
    parts: dict[str, ModelReplicates] = {}
    if pack is not None:
        for model in block:
            found = pack.get(model, keys[model])
            if found is not None:
                parts[model] = found
    missing = [m for m in block if m not in parts]
    if missing:
        stats, recall = _read_block(store, missing, metrics)
        for part in model_replicates(stats, missing, locales, recall, universe, weights,
                                     bootstrap.confidence, score_functions=score_functions(stats),
                                     progress=progress):
            parts[part.model] = part.compact()
    return parts, missing


# in ``replicates_dir``, beside the replicates' pack: the ranks' states (metrics.ranks), what
# the database's per-model rows were last written from, and the lock of the folder
RANK_STATES_FILE = "_ranks.state"
WRITTEN_FILE = "_written.json"
LOCK_FILE = ".lock"
ROWS_FORMAT = 1  # the per-model rows' layout: a change makes every kept record of them stale


def _rank_states_key(bootstrap: BootstrapConfig, metrics: Sequence[str]) -> str:
    """What kept rank states are labelled with: the bootstrap settings and the ranked columns
    (quantity, direction). Each state also holds every model's values, compared to the bit
    with the new ones before anything kept is used (``metrics.ranks.ranked``)."""
    described = {"bootstrap": bootstrap.model_dump(),
                 "columns": sorted(ranked_columns(metrics).values())}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def _replicates_keys(rows: list[dict], model_ids: list[str], locales: list[str],
                     metrics: Sequence[str], universe: np.ndarray, bootstrap: BootstrapConfig,
                     digests: dict[str, int]) -> dict[str, str]:
    """model -> :func:`_replicates_key` (``digests``: model -> the digest of its statistics,
    segment scores and word-recall counts, from the queries ``statistics_groups_of_models``
    and ``word_recall_groups_of_models``)."""
    rows_of: dict[str, list[dict]] = {}
    for r in rows:
        rows_of.setdefault(r["model_id"], []).append(r)
    pool = hashlib.sha256(universe.tobytes()).hexdigest()
    return {model: _replicates_key(model, digests.get(model), rows_of.get(model, []), pool,
                                   bootstrap, metrics, locales) for model in model_ids}


def _model_parts(store: Store, model_ids: list[str], keys: dict[str, str], locales: list[str],
                 metrics: Sequence[str], universe: np.ndarray, weights: np.ndarray,
                 bootstrap: BootstrapConfig, pack: ReplicatesPack | None, progress: bool,
                 computed: list[str]):
    """Every model's :class:`ModelReplicates` in model order: taken from ``pack`` where kept
    under the same key (``keys``), else computed :data:`BLOCK_MODELS` models at a time (and
    put in ``pack``; their names appended to ``computed``). :data:`WORKERS` blocks are read
    and computed at once, in threads (DuckDB's reads and NumPy's array operations run outside
    Python's lock; :func:`aggregate` holds BLAS at one thread per call): each block's
    arithmetic is the same as alone."""
    blocks = [model_ids[start:start + BLOCK_MODELS]
              for start in range(0, len(model_ids), BLOCK_MODELS)]
    with ThreadPoolExecutor(max_workers=WORKERS) as workers:
        pending: dict[int, Future] = {}
        for i, block in enumerate(blocks):
            for ahead in range(i, min(i + WORKERS, len(blocks))):  # this block and the next
                if ahead not in pending:
                    pending[ahead] = workers.submit(
                        _block_parts, store, blocks[ahead], keys, locales, metrics, universe,
                        weights, bootstrap, pack, progress)
            parts, missing = pending.pop(i).result()
            computed += missing
            for model in block:
                part = parts.pop(model)
                if pack is not None and model in missing:
                    pack.put(part, keys[model])
                yield part


@contextmanager
def _locked(folder: Path | None):
    """The kept state in ``folder`` held by this aggregation alone (an exclusive lock on its
    lock file; other aggregations of the same folder wait)."""
    if folder is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


POOLS_FILE = "_pools.json"


def _kept_pool(store: Store, folder: Path, model_ids: list[str], digests: dict[str, int],
               metrics: Sequence[str], test_sets: list[str], locales: list[str]
               ) -> tuple[np.ndarray, str]:
    """``U`` (what the query ``aggregation_instance_pool`` gives) as the union of each model's
    ids (``instance_pools_of_models``), kept in :data:`POOLS_FILE` under the model's
    statistics digest and the query's parameters and read for the other models only; and a
    note of how many were read."""
    key = hashlib.sha256(json.dumps({"metrics": list(metrics), "test_sets": test_sets,
                                     "locales": locales}).encode()).hexdigest()
    try:
        found = json.loads((folder / POOLS_FILE).read_text("utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        found = {}
    entries = found.get("models", {}) if found.get("key") == key else {}
    pools = {m: entries[m][1] for m in model_ids
             if m in entries and entries[m][0] == str(digests.get(m))}
    missing = [m for m in model_ids if m not in pools]
    if missing:
        for r in store.query("instance_pools_of_models", models=missing, metrics=list(metrics),
                             test_sets=test_sets, locales=locales):
            pools[r["model_id"]] = r["ids"]
    if missing or len(entries) != len(model_ids):
        partial = folder / f".{POOLS_FILE}.partial"
        partial.write_text(json.dumps({"key": key, "models": {
            m: [str(digests.get(m)), pools.get(m, [])] for m in model_ids}}), "utf-8")
        os.replace(partial, folder / POOLS_FILE)
    ids = [np.asarray(pools[m], dtype=np.int64) for m in model_ids if pools.get(m)]
    universe = np.unique(np.concatenate(ids)) if ids else np.empty(0, dtype=np.int64)
    return universe, f"{len(model_ids) - len(missing)} models' ids kept, {len(missing)} read"


def _rows_key(bootstrap: BootstrapConfig, metrics: Sequence[str], locales: Sequence[str]
              ) -> str:
    """What a record of the database's per-model rows is labelled with: the rows' layout, the
    bootstrap settings, the metrics and the locales with their languages. (Which database
    holds the rows is the record's digest of them: a copy of the file holds the same rows.)"""
    described = {"format": ROWS_FORMAT, "bootstrap": bootstrap.model_dump(),
                 "metrics": list(metrics), "locales": _locale_languages(locales)}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def _rows_digest(store: Store) -> tuple[int | None, dict]:
    """(write generation, digest of every per-model aggregate row) read in one snapshot."""
    row = store.query("aggregate_model_rows_digest")[0]
    return row.pop("generation"), row


def _kept_rows(folder: Path, key: str, store: Store) -> tuple[dict[str, str], str | None]:
    """model -> the replicates key its rows in the database were written from, when the
    record in ``folder`` was kept under ``key`` and the database's per-model rows are still
    the ones it describes (their digest); else an empty dict and why."""
    try:
        kept = json.loads((folder / WRITTEN_FILE).read_text("utf-8"))
    except FileNotFoundError:
        return {}, "no record of the rows written"
    except json.JSONDecodeError:
        return {}, f"{folder / WRITTEN_FILE} is not JSON"
    if kept.get("key") != key:
        return {}, "the rows were written under other settings"
    if kept.get("digest") != _rows_digest(store)[1]:
        return {}, "the database's per-model rows differ from the ones last written"
    return kept["models"], None


def aggregate(store: Store, models: Sequence[str] | None = None,
              config: MetricConfig | None = None, progress: bool = False,
              replicates_dir: Path | None = None, scan_statistics: bool = False
              ) -> Aggregates:
    """Recompute the aggregate tables of ``models`` (default: every scored model); module
    docstring. ``config``: the metric settings (the metrics aggregated, in their order; bootstrap
    and flag parameters). ``replicates_dir``: a folder where each model's replicates, the
    ranks' states and a record of the per-model rows written are kept and reused while what
    they were computed from is unchanged (module docstring). ``scan_statistics``: with
    ``replicates_dir``, every model's statistics hashed for its digest instead of reading the
    digest recorded beside them (module docstring)."""
    with _locked(replicates_dir):
        return _aggregate(store, models, config or MetricConfig(), progress, replicates_dir,
                          scan_statistics)


def _counts(groups) -> dict[tuple[str, str, str], int]:
    """(metric, model, test set) -> n of the rows (or Arrow table) ``groups``."""
    if isinstance(groups, list):
        return {(r["metric"], r["model_id"], r["test_set"]): r["n"] for r in groups}
    columns = groups.to_pydict()
    return dict(zip(zip(columns["metric"], columns["model_id"], columns["test_set"],
                        strict=True), columns["n"], strict=True))


def _digests(store: Store, model_ids: list[str], scan: bool
             ) -> tuple[dict[str, int], dict[tuple[str, str, str], int], str]:
    """(model -> the digest of its statistics, segment scores and word-recall counts; (metric,
    model, test set) -> rows, as ``segment_counts``; a note of where they came from).

    A model's digest is the XOR of its groups' (``statistics_groups_of_models``,
    ``word_recall_groups_of_models``):
    read from ``raw.statistics_digests``, which every writer of those rows records in the
    same transaction (``record_statistics``), for each model whose recorded rows are as many
    as the tables hold; hashed from the statistics themselves for the others (rows written
    by another path) and, with ``scan``, for every model (a change that keeps the number of
    rows is seen only by the hashes)."""
    with ThreadPoolExecutor(max_workers=WORKERS) as reads:
        recorded = reads.submit(store.query, "recorded_statistics")
        groups = reads.submit(store.arrow, "recorded_statistics_groups")
        wanted = set(model_ids)
        records = {r["model_id"]: r for r in recorded.result() if r["model_id"] in wanted}
        if scan:
            hashed, why = list(model_ids), "every model's hashed (asked to scan)"
        else:
            hashed = [m for m in model_ids if m in records and records[m]["recorded_rows"]
                      != records[m]["stored_rows"]]
            why = "no record or rows other than recorded"
        counts = _counts(groups.result())
    scanned = set(hashed)
    digests = {m: r["digest"] for m, r in records.items() if m not in scanned
               and r["digest"] is not None}
    if hashed:
        counts = {key: n for key, n in counts.items() if key[1] not in scanned}
        for m in hashed:
            digests[m] = 0
        for r in (*store.query("statistics_groups_of_models", models=hashed),
                  *store.query("word_recall_groups_of_models", models=hashed)):
            digests[r["model_id"]] ^= r["digest"]
            if "metric" in r:
                counts[(r["metric"], r["model_id"], r["test_set"])] = r["n"]
    named = ", ".join(hashed[:10]) + (", …" if len(hashed) > 10 else "")
    note = (f"{len(model_ids) - len(hashed)} models' recorded, {len(hashed)} hashed from their "
            f"statistics" + (f" ({why}: {named})" if hashed and not scan else
                             f" ({why})" if scan else ""))
    return digests, counts, note


def _aggregate(store: Store, models: Sequence[str] | None, config: MetricConfig,
               progress: bool, replicates_dir: Path | None, scan_statistics: bool
               ) -> Aggregates:
    started = time.perf_counter()
    fingerprint = dataset_fingerprint(store)
    rows = store.arrow("all_scores").to_pylist()  # the rows of store.query, read as columns
    if models is not None:
        wanted = set(models)
        rows = [r for r in rows if r["model_id"] in wanted]
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
    kept: dict[str, str] = {}  # what was taken from replicates_dir, and what not (and why)
    digests: dict[str, int] = {}
    recall_sums = None
    if replicates_dir is None:
        with ThreadPoolExecutor(max_workers=WORKERS) as reads:  # independent reads, side by side
            pool = reads.submit(store.query, "aggregation_instance_pool", models=model_ids,
                                metrics=list(metrics), test_sets=test_sets, locales=locales)
            counts = reads.submit(store.query, "segment_counts")
            recall_sums = reads.submit(store.query, "word_recall_sums").result()
            counts = _counts(counts.result())
    else:  # the same counts, and each model's digest
        digests, counts, kept["digests"] = _digests(store, model_ids, scan_statistics)
    _check_statistics(counts, rows)
    if replicates_dir is None:
        universe = np.asarray([r["segment_id"] for r in pool.result()], dtype=np.int64)
    else:
        universe, kept["pools"] = _kept_pool(store, replicates_dir, model_ids, digests,
                                             metrics, test_sets, locales)
    del counts
    if len(universe) == 0:
        raise AggregationError("no statistics for the scored models and locales")
    weights = bootstrap_weights(len(universe), bootstrap)
    pack = keys = None
    if replicates_dir is not None:
        pack = ReplicatesPack(replicates_dir)
        keys = _replicates_keys(rows, model_ids, locales, metrics, universe, bootstrap, digests)
    computed: list[str] = []
    # one BLAS thread per product: the blocks' threads (WORKERS) use the cores instead; BLAS's
    # own threads beside them only wait on each other
    with threadpool_limits(limits=1, user_api="blas"):
        parts = _model_parts(store, model_ids, keys or {}, locales, metrics, universe, weights,
                             bootstrap, pack, progress, computed)
        result = combine(parts, model_ids, locales, metrics, len(universe), bootstrap)
    if pack is not None:
        pack.save(model_ids)
        named = ", ".join(computed[:10]) + (", …" if len(computed) > 10 else "")
        kept["replicates"] = (f"{len(model_ids) - len(computed)} models' kept, "
                              f"{len(computed)} computed" + (f" ({named})" if computed else ""))
    # the per-model rows to write: every model's, or (with a record of the rows the database
    # holds) those of the models whose replicates differ from the ones their rows came from
    written: dict[str, str] = {}
    rows_key = None
    if replicates_dir is not None and keys is not None:
        rows_key = _rows_key(bootstrap, metrics, locales)
        written, why = _kept_rows(replicates_dir, rows_key, store)
        kept["rows"] = why or "per-model rows rewritten for the models changed, added or removed"
    rewrite = ([m for m in model_ids if written.get(m) != keys[m]] if written
               else list(model_ids))
    removed = sorted(set(written) - set(model_ids))
    chosen = set(rewrite)
    if recall_sums is None:
        recall_sums = store.query("word_recall_sums_of_models", models=sorted(chosen))
    recall_table = [  # per (model, locale): word_recall.rates_from_sums of the summed counts
        {"model_id": r["model_id"], "locale": r["locale"],
         **vars(rates_from_sums(*(int(r[c]) for c in RECALL_COLUMNS), r["n_instances"]))}
        for r in recall_sums if r["model_id"] in chosen]
    ranks_file = key = None
    previous_ranks = None
    if replicates_dir is not None:
        ranks_file = replicates_dir / RANK_STATES_FILE
        key = _rank_states_key(bootstrap, metrics)
        previous_ranks, why = load_rank_states(ranks_file, key)
        kept["rank_states"] = (
            "taken from the kept states (a column where more than a quarter of the models "
            "changed is computed in full)" if previous_ranks else
            f"computed in full ({why or 'no states kept'})")
    with threadpool_limits(limits=1, user_api="blas"):
        tables = statistics_tables(result, config.flag_config(), previous_ranks,
                                   models_rows=chosen if written else None)
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
    deletes = ([WriteBlock("delete_cross_model_aggregates"),
                WriteBlock("delete_model_aggregates", {"models": sorted(chosen) + removed})]
               if written else [WriteBlock("delete_aggregates")])
    if replicates_dir is not None:
        (replicates_dir / WRITTEN_FILE).unlink(missing_ok=True)  # stale until rewritten below
    generation = store.write([
        *deletes,
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
    if replicates_dir is not None and keys is not None:
        save_rank_states(ranks_file, key, tables.rank_states)
        at, digest = _rows_digest(store)
        if at == generation:  # no other write since this one: the rows are this write's
            partial = replicates_dir / f".{WRITTEN_FILE}.partial"
            partial.write_text(json.dumps({"key": rows_key, "digest": digest, "models": keys}),
                               "utf-8")
            os.replace(partial, replicates_dir / WRITTEN_FILE)
    return Aggregates(model_ids, locales, signatures, store.query("leaderboard"),
                      result.locale_rows(), tables.agreement, tables, settings, rewrite, kept)
