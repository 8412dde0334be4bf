"""The leaderboard's statistics as table rows, from one paired bootstrap.

:func:`statistics_tables` turns a :class:`~cultivar_assets.metrics.bootstrap.BootstrapResult`
into the rows of the store's aggregate tables. Every value is the bootstrap's point estimate
(weights 1: all instances once), which is the definition in :mod:`cultivar_assets.metrics.delta`;
every interval is the bootstrap's percentile interval at the configured confidence; every average
carries its n.

- **∆ per model and locale** (``model_locale_deltas``): instance-paired, both sides on
  ``P = ids(cultivar_l) ∩ ids(flores_L)`` (``n_instances = |P|``; ``n_cultivar_only``: the
  locale's ids without a FLORES original, left out of both sides); every configured metric
  joined by key.
- **Long form** (``metric_values``): every metric value (per model and locale, per model, per
  locale) as one row per (level, item, metric, quantity) with its interval, ``excludes_zero``
  (∆ only) and n (:func:`long_form`); the narrow tables keep the non-metric columns.
- **Per model** (Table 3, ``leaderboard``): mean pairwise ∆ (n = pairs), FLORES average over
  languages (n = FLORES test sets), Cultivar average over locales (n = Cultivar test sets), FP and
  FN rates (mean over the locales where the rate is defined; n = those locales).
- **Per locale** (Table 4, ``locale_deltas``): mean ∆ over the models (n = models); instances
  are resampled, the models are fixed.
- **Averages** (``table_averages``): Table 3's Average row = the mean over models of each column
  (n = models); Table 4's = the mean over locales of the per-locale means (n = locales;
  ``delta.locale_average``: the paper's own aggregation of its printed −0.27/−1.05 is unknown).
  Their intervals come from the same replicates (the mean of the replicate values).
- **Rank agreement** (Table 2, ``rank_agreement``): per locale, r_s and τ_b between the models'
  instance-paired FLORES and Cultivar scores; the default average ``model_averages`` (the
  paper's: between the per-model FLORES and Cultivar averages) and ``mean_of_locales``
  (:mod:`cultivar_assets.metrics.rank_agreement`), each with its numbers of models and locales.
- **Ranks** (``leaderboard_ranks``): for each sortable leaderboard column that has intervals
  (:data:`RANKED_COLUMNS`), every model's rank, rank interval and the models it is not separable
  from (:mod:`cultivar_assets.metrics.ranks`). Rank 1 is the first model in that column's
  leaderboard order: the highest ∆, BLEU or chrF, the lowest FP or FN rate (ours: a low FP rate
  means little recall of the original FLORES terms, a low FN rate few missed local terms).
- **Flags** (``contamination_flags``): the configured contamination rules over the evaluated
  models, with intervals (:mod:`cultivar_assets.metrics.flags`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from cultivar_assets.metrics.bootstrap import BootstrapResult, Quantity, percentile_interval
from cultivar_assets.metrics.delta import PairDelta, locale_average
from cultivar_assets.metrics.flags import (
    FlagConfig,
    RuleResult,
    apply_flags,
    evidence_from_bootstrap,
    flag_rows,
)
from cultivar_assets.metrics.rank_agreement import agreement_averages
from cultivar_assets.metrics.ranks import RankState, rank_columns
from cultivar_assets.metrics.registry import METRIC_NAMES, column_key, get_metric, table_label

SIDES = ("flores", "cultivar", "delta")  # the quantities of a metric (∆ = cultivar − flores)
_N_COLUMN = {  # level -> quantity -> the wide row's n column the value rests on
    "model_locale": dict.fromkeys(SIDES, "n_instances"),
    "model": {"delta": "n_locale_pairs", "flores": "n_flores_test_sets",
              "cultivar": "n_cultivar_test_sets"},
    "locale": {"delta": "n_models"},
}


def ranked_columns(metrics: Sequence[str] = METRIC_NAMES) -> dict[str, tuple[str, bool]]:
    """leaderboard column -> (bootstrap quantity, higher is better): ∆, FLORES and Cultivar of
    every metric (``<side>_<metric_key>``, the direction the registry entry's, for ∆ too: a lower
    ∆TER is the better one), then the FP and FN rates (lower is better)."""
    columns = {f"{side}_{column_key(m)}": (f"model_{side}_{m}", get_metric(m).higher_is_better)
               for side in ("delta", "flores", "cultivar") for m in metrics}
    columns["false_positive_rate"] = ("model_false_positive_rate", False)
    columns["false_negative_rate"] = ("model_false_negative_rate", False)
    return columns


RANKED_COLUMNS: dict[str, tuple[str, bool]] = ranked_columns()  # the paper's metrics
TABLE3_COLUMNS = tuple(RANKED_COLUMNS)  # Table 3's averaged columns: the ranked ones
TABLE3_NOTE = {
    "flores_bleu": "the paper's printed Average of this column (36.66) is not its column mean "
                   "(35.71); its aggregation is unknown",
    "flores_chrf": "the paper's printed Average of this column (59.43) is not its column mean "
                   "(58.54); its aggregation is unknown",
    "cultivar_chrf": "the paper's printed Average of this column (58.79) is not its column mean "
                     "(58.35); its aggregation is unknown",
}
TABLE4_NOTE = ("the paper's aggregation of its printed Average row (−0.27 / −1.05) is unknown: it "
               "is not the mean of its column, nor the mean over languages, nor over the locales "
               "where the language is official; reported here: the mean over locales")


@dataclass(frozen=True)
class StatisticsTables:
    """Rows of the aggregate tables (column names as in ``sql/schema.sql``)."""

    pairs: list[dict]  # raw.model_locale_deltas (its non-metric columns)
    models: list[dict]  # raw.model_summary (its non-metric columns)
    locales: list[dict]  # raw.locale_summary (its non-metric columns)
    values: list[dict]  # raw.metric_values: every metric value in long form
    agreement: list[dict]  # raw.rank_agreement
    averages: list[dict]  # raw.table_averages
    ranks: pa.Table  # raw.leaderboard_ranks
    flags: list[dict]  # raw.contamination_flags (source 'evaluated')
    rules: list[RuleResult]
    # ranked quantity -> what its ranks were computed from (for the next computation)
    rank_states: dict[str, RankState] = field(default_factory=dict, compare=False, repr=False)


def _column_mean(quantity: Quantity, name: str, paper_table: str, aggregation: str,
                 n_of: str, confidence: float, note: str | None) -> dict:
    """The mean over items (models or locales) with a point estimate, with its interval."""
    keep = np.isfinite(quantity.point)
    value = float(quantity.point[keep].mean()) if keep.any() else None
    if keep.any():
        replicates = quantity.replicates[:, keep]
        finite = np.isfinite(replicates)
        with np.errstate(invalid="ignore"):
            means = np.where(finite.any(axis=1), np.nansum(replicates, axis=1)
                             / np.maximum(finite.sum(axis=1), 1), np.nan)
        low, high = (float(x[0]) for x in percentile_interval(means[:, None], confidence))
        low, high = (None if np.isnan(low) else low), (None if np.isnan(high) else high)
    else:
        low = high = None
    return {"paper_table": paper_table, "quantity": name, "aggregation": aggregation,
            "value": value, "low": low, "high": high, "n": int(keep.sum()), "n_of": n_of,
            "note": note}


def _agreement_rows(result: BootstrapResult) -> list[dict]:
    rows = []
    for metric in result.metrics:
        flores, cultivar = result[f"pair_flores_{metric}"], result[f"pair_cultivar_{metric}"]
        other = (cultivar.point if cultivar.keys == flores.keys else
                 cultivar.point[[cultivar.index(key) for key in flores.keys]])
        pairs = [PairDelta(key[0], key[1], result.pair_languages[key], f, c, n,
                           result.pair_unpaired[key])
                 for key, f, c, n in zip(flores.keys, flores.point.tolist(), other.tolist(),
                                         flores.n.tolist(), strict=True)]
        averages = {side: {m: v for m, v in zip(quantity.keys, quantity.point.tolist(),
                                                strict=True) if v == v}  # NaN: no average
                    for side in ("flores", "cultivar")
                    for quantity in [result[f"model_{side}_{metric}"]]}
        per_locale, labelled = agreement_averages(pairs, averages["flores"],
                                                  averages["cultivar"], metric)
        rows += [{"aggregation": r.aggregation, "locale": r.locale, "metric": r.metric,
                  "spearman": r.spearman, "kendall_tau_b": r.kendall_tau_b,
                  "n_models": r.n_models, "n_locales": 1, "is_default": False, "note": r.note}
                 for r in per_locale]
        rows += [{"aggregation": a.aggregation, "locale": None, "metric": a.metric,
                  "spearman": a.spearman, "kendall_tau_b": a.kendall_tau_b,
                  "n_models": a.n_models, "n_locales": a.n_locales, "is_default": a.is_default,
                  "note": a.note} for a in labelled]
    return rows


RANK_TYPES = {"model_id": pa.string(), "quantity": pa.string(), "higher_is_better": pa.bool_(),
              "value": pa.float64(), "rank": pa.int64(), "rank_low": pa.int64(),
              "rank_high": pa.int64(), "not_separable_from": pa.list_(pa.string()),
              "n_models": pa.int64()}  # the columns of the ranks' rows (_rank_rows)
RANK_WORKERS = 2  # ranked columns computed at once, in threads (NumPy outside Python's lock)


def _rank_rows(result: BootstrapResult, previous: Mapping[str, RankState],
               states: dict[str, RankState], workers: Executor) -> Callable[[], pa.Table]:
    """The ranks' rows as an Arrow table (:data:`RANK_TYPES`: the columns of
    ``raw.leaderboard_ranks``, the lists built from the separable pairs,
    :func:`~cultivar_assets.metrics.ranks.rank_columns`); ``previous``: quantity -> the state its
    ranks were last computed with (only what changed since is computed);
    each quantity's new state is put in ``states``. The ranked columns are computed by
    ``workers`` (:data:`RANK_WORKERS` threads: each column's computation is its own), started
    here; the function returned waits for them and gives the table."""
    columns = [(column, name, higher_is_better)
               for column, (name, higher_is_better) in ranked_columns(result.metrics).items()
               if name in result.quantities]
    computed = [workers.submit(rank_columns, result[name], higher_is_better=higher_is_better,
                               previous=previous.get(name))
                for _, name, higher_is_better in columns]

    def table() -> pa.Table:
        parts = []
        for (column, name, higher_is_better), future in zip(columns, computed, strict=True):
            ranks, states[name] = future.result()
            n = len(ranks.keys)
            parts.append(pa.table({
                "model_id": ranks.keys, "quantity": pa.array([column] * n, pa.string()),
                "higher_is_better": pa.array([higher_is_better] * n, pa.bool_()),
                "value": ranks.value, "rank": ranks.rank, "rank_low": ranks.rank_low,
                "rank_high": ranks.rank_high, "not_separable_from": ranks.not_separable_from,
                "n_models": np.full(n, n, dtype=np.int64)}))
        return pa.concat_tables(parts) if parts else pa.table({
            name: pa.array([], kind) for name, kind in RANK_TYPES.items()})

    return table


def _average_rows(result: BootstrapResult) -> list[dict]:
    confidence = result.config.confidence
    rows = []
    for column, (name, _) in ranked_columns(result.metrics).items():  # Table 3's columns
        if name in result.quantities:
            rows.append(_column_mean(result[name], column, "table3", "mean over models",
                                     "models", confidence, TABLE3_NOTE.get(column)))
    for metric in result.metrics:
        quantity = result[f"locale_delta_{metric}"]
        row = _column_mean(quantity, f"delta_{column_key(metric)}", "table4",
                           "mean over locales of the per-locale mean ∆", "locales",
                           confidence, TABLE4_NOTE)
        # the value by its one definition (delta.locale_average); the interval from the replicates
        average = locale_average({k: (float(v), int(n)) for k, v, n in zip(
            quantity.keys, quantity.point, quantity.n, strict=True) if np.isfinite(v)})
        row["value"], row["n"] = average.mean, average.n_locales
        rows.append(row)
    return rows


def long_form(rows: list[dict], level: str, metrics: Sequence[str]
              ) -> tuple[list[dict], list[dict]]:
    """Wide rows (``BootstrapResult.pair_rows``/``model_rows``/``locale_rows``: ``<side>_<metric>``
    with ``_low``/``_high``, ``delta_<metric>_excludes_zero``) as (their non-metric columns,
    ``raw.metric_values`` rows). ``excludes_zero`` is set for ∆ only; ``n`` is the n column the
    value rests on (:data:`_N_COLUMN`)."""
    n_of = _N_COLUMN[level]
    narrow, values = [], []
    for row in rows:
        taken: set[str] = set()
        for metric in metrics:
            for side, n_column in n_of.items():
                column = f"{side}_{metric}"
                excludes = f"{column}_excludes_zero"
                taken.update((column, f"{column}_low", f"{column}_high", excludes))
                values.append({
                    "level": level, "model_id": row.get("model_id"), "locale": row.get("locale"),
                    "metric": metric, "quantity": side,
                    "value": row[column], "low": row[f"{column}_low"],
                    "high": row[f"{column}_high"], "excludes_zero": row.get(excludes),
                    "n": row[n_column]})
        narrow.append({k: v for k, v in row.items() if k not in taken})
    return narrow, values


def statistics_tables(result: BootstrapResult, flag_config: FlagConfig | None = None,
                      rank_states: Mapping[str, RankState] | None = None,
                      models_rows: Collection[str] | None = None) -> StatisticsTables:
    """The aggregate tables' rows (module docstring). ``rank_states``: the
    :attr:`StatisticsTables.rank_states` of an earlier computation, from which the ranks of
    models whose values are unchanged are updated (the same rows as computed afresh).
    ``models_rows``: when given, the per-model rows (``pairs``, ``models`` and the values of
    levels ``model_locale`` and ``model``) of these models only; every cross-model row is
    computed in full."""
    states: dict[str, RankState] = {}
    with ThreadPoolExecutor(max_workers=RANK_WORKERS) as workers:
        # the ranked columns computed in the workers while the other rows are built here
        ranks = _rank_rows(result, rank_states or {}, states, workers)
        pairs, pair_values = long_form(result.pair_rows(models_rows), "model_locale",
                                       result.metrics)
        models, model_values = long_form(result.model_rows(models_rows), "model",
                                         result.metrics)
        locales, locale_values = long_form(result.locale_rows(), "locale", result.metrics)
        rules = apply_flags(evidence_from_bootstrap(result), flag_config, label=table_label)
        flags = [{"source": "evaluated", **row} for row in flag_rows(rules)]
        agreement, averages = _agreement_rows(result), _average_rows(result)
        return StatisticsTables(
            pairs=pairs, models=models, locales=locales,
            values=pair_values + model_values + locale_values, agreement=agreement,
            averages=averages, ranks=ranks(), flags=flags, rules=rules, rank_states=states)
