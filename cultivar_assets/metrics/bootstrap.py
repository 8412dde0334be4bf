"""Paired bootstrap over instances, from stored per-segment sufficient statistics.

Nothing is re-scored: every replicate re-weights the stored statistics of each (model, test set)
and turns the weighted sums into BLEU and chrF with sacreBLEU's formulas
(:mod:`cultivar_assets.metrics.score_arrays`, vectorised over replicates and models). The
weighted sums are one matrix product per (metric, test set, id set) for all models and
replicates, and exact integers (float32 arithmetic when every partial sum stays below 2**24,
float64 otherwise). A segment-score metric (the COMET shape) comes as float64 statistics
``[score, 1]`` (``SegmentStats.of_scores``) and is summed in float64; its score is
``Σ w·score / Σ w``, the mean of the resampled scores.

**Resampling (ours).** All instance ids that occur in the given statistics form one pool ``U``
(Cultivar's instances are the same 200 FLORES dev sentences in every locale, paper §2, so ids
are shared by locales, by a language's FLORES test set and by the models). Replicate ``b`` draws
``|U|`` ids from ``U`` with replacement, once, with ``numpy.random.default_rng(seed).choice(|U|,
size=(B, |U|), replace=True)``: the index generation of sacreBLEU's paired bootstrap
(``sacrebleu.significance``), so a single test set whose ids are ``U`` gets exactly sacreBLEU's
resamples. ``w_b(i)`` is how often id ``i`` was drawn. The same weights are applied to every model,
to both sides of every pair, to every test set and to the word-recall counts: a test set ``T``
scores ``Σ_{i ∈ ids(T)} w_b(i) · stats_T(i)``. This is a cluster bootstrap with the instance id as
cluster: it keeps the correlation between locales and between the FLORES and Cultivar sides that
share a sentence, which averages over locales need. When locales have different id sets, a
locale's resample size varies between replicates (its expectation is its own size); a locale
whose resample holds none of its ids scores 0 in that replicate (sacreBLEU's score of empty
statistics) — possible only for locales much smaller than ``U``.

**Quantities** (point estimate on all instances = weights 1, replicates, percentile interval):

- per (model, locale), for each metric: ``pair_flores_<m>``, ``pair_cultivar_<m>`` and
  ``pair_delta_<m>``, the ∆ of :mod:`cultivar_assets.metrics.delta` (``delta.paired_delta``,
  both sides on ``P = ids(cultivar_l) ∩ ids(flores_L)``, ``delta.paired_ids``); n = ``|P|``;
- per model: ``model_delta_<m>`` (mean pairwise ∆ over its pairs, Table 3; n = pairs),
  ``model_flores_<m>`` (mean over the locales' languages of the full ``flores_L`` score;
  n = languages), ``model_cultivar_<m>`` (mean over locales of ``cultivar_l``; n = locales),
  ``model_false_positive_rate`` / ``model_false_negative_rate`` (per locale Σ-ratios of the
  resampled word-recall counts, then the mean over the locales where the ratio is defined *in
  that replicate*; n = locales with a defined rate on all instances);
- per locale: ``locale_delta_<m>``, the mean ∆ over models (Table 4). Only instances are
  resampled: the set of models is fixed (an interval says how much the instance sample moves
  the mean over *these* models, not over a population of models).

**Interval (ours).** The percentile interval at ``confidence`` c over the finite replicates
(NaN where a quantity is undefined in a replicate): sorted values at positions
``k = ⌊B'(1 − c)/2⌋`` and ``B' − 1 − k`` (B' finite replicates), the order statistics that
sacreBLEU's ``estimate_ci`` uses (it reports their half distance, we report both ends).

**Computation.** :func:`model_replicates` computes every quantity that depends on one model's
statistics alone, for a block of models at once; :func:`combine` joins the models' shares in
model order into the per-model and per-locale quantities (:func:`paired_bootstrap` does both in
memory; ``evaluation.aggregates`` streams blocks from the store). Speed:
``benchmarks/bench_bootstrap.py`` (32 models in memory) and ``benchmarks/bench_aggregate.py``
(32 to 1,000 models from a store).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name, get_locale
from cultivar_assets.metrics.delta import PairingError, paired_delta, paired_ids
from cultivar_assets.metrics.segment_stats import RecallCounts, StatsTable

SACREBLEU_DEFAULT_SEED = 12345  # sacreBLEU's default SACREBLEU_SEED


class BootstrapError(ValueError):
    """The bootstrap cannot run on the given input."""


class BootstrapConfig(BaseModel):
    """How the paired bootstrap resamples (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_replicates: int = Field(1000, ge=1, le=100_000)
    # sacreBLEU's default; 0 is refused because sacreBLEU's paired test treats seed 0 as unseeded
    seed: int = Field(SACREBLEU_DEFAULT_SEED, ge=1)
    confidence: float = Field(0.95, gt=0, lt=1)


def instance_weights(n_instances: int, n_replicates: int, seed: int) -> np.ndarray:
    """``(n_replicates, n_instances)`` draw counts: row b counts how often each position was
    drawn by ``default_rng(seed).choice(n_instances, size=(n_replicates, n_instances))``."""
    if n_instances < 1 or n_replicates < 1:
        raise BootstrapError("the bootstrap needs at least one instance and one replicate")
    rng = np.random.default_rng(seed)
    drawn = rng.choice(n_instances, size=(n_replicates, n_instances), replace=True)
    flat = drawn + (np.arange(n_replicates, dtype=np.int64) * n_instances)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_replicates * n_instances)
    return counts.reshape(n_replicates, n_instances)


def interval_positions(n, confidence: float):
    """Positions ``(k, n − 1 − k)``, ``k = ⌊n(1 − c)/2⌋``, of the interval's ends among ``n``
    sorted replicates (module docstring); ``n`` an int, or an array of them (elementwise)."""
    k = np.floor(np.asarray(n) * (1 - confidence) / 2 + 1e-9).astype(np.int64)
    if k.ndim == 0:
        return int(k), int(n) - 1 - int(k)
    return k, np.asarray(n) - 1 - k


def percentile_interval(replicates: np.ndarray, confidence: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) over axis 0, ignoring NaN replicates; NaN where no replicate is finite.
    Where every replicate is finite the two order statistics are selected
    (``numpy.partition``) instead of sorting: the same values."""
    replicates = np.asarray(replicates, dtype=np.float64)
    if replicates.ndim >= 1 and len(replicates) and np.isfinite(replicates).all():
        k, top = interval_positions(len(replicates), confidence)
        chosen = np.partition(replicates, sorted({k, top}), axis=0)
        return chosen[k], chosen[top]
    ordered = np.sort(replicates, axis=0)  # NaN sort last
    finite = np.isfinite(replicates).sum(axis=0)
    k, top = interval_positions(finite, confidence)
    low_at = np.clip(k, 0, max(len(replicates) - 1, 0))
    high_at = np.clip(top, 0, max(len(replicates) - 1, 0))
    low = np.take_along_axis(ordered, low_at[None, ...], axis=0)[0]
    high = np.take_along_axis(ordered, high_at[None, ...], axis=0)[0]
    none = finite == 0
    return np.where(none, np.nan, low), np.where(none, np.nan, high)


@dataclass(frozen=True, eq=False)
class Quantity:
    """One bootstrapped quantity over a list of items (pairs, models or locales)."""

    name: str
    keys: tuple  # item keys: (model, locale) for pairs, model ids, locale keys
    point: np.ndarray  # (n_items,) on all instances; NaN when undefined
    # (B, n_items); None for the (model, locale) pairs of :func:`combine`, which keep only
    # their intervals (computed per model, the same values)
    replicates: np.ndarray | None
    n: np.ndarray  # (n_items,) how many values each item averages (module docstring)
    confidence: float
    _interval: dict = field(default_factory=dict, repr=False)  # cache: interval, key index

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        if "value" not in self._interval:
            self._interval["value"] = percentile_interval(self.replicates, self.confidence)
        return self._interval["value"]

    @property
    def low(self) -> np.ndarray:
        return self.interval()[0]

    @property
    def high(self) -> np.ndarray:
        return self.interval()[1]

    @property
    def excludes_zero(self) -> np.ndarray:
        """True where the whole interval lies above or below 0."""
        low, high = self.interval()
        return (low > 0) | (high < 0)

    def index(self, key) -> int:
        if "index" not in self._interval:
            self._interval["index"] = {k: i for i, k in enumerate(self.keys)}
        try:
            return self._interval["index"][key]
        except KeyError:
            raise KeyError(f"{self.name}: no item {key!r}") from None

    def estimate(self, key) -> Estimate:
        i = self.index(key)
        low, high = self.interval()
        return Estimate(_num(self.point[i]), _num(low[i]), _num(high[i]), int(self.n[i]))


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval (None where undefined) and its n."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def excludes_zero(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def difference_interval(quantity: Quantity, a, b) -> Estimate:
    """The paired-bootstrap estimate of ``a − b`` for two items of one quantity (e.g. two models'
    ``pair_delta_bleu`` on one locale: keys ``(model, locale)``): the point estimates'
    difference and the percentile interval of the replicates' differences, replicate by
    replicate (both items were resampled with the same weights). n: the smaller n."""
    if quantity.replicates is None:
        raise BootstrapError(f"{quantity.name} keeps no replicates (only its intervals)")
    i, j = quantity.index(a), quantity.index(b)
    low, high = percentile_interval(quantity.replicates[:, i] - quantity.replicates[:, j],
                                    quantity.confidence)
    return Estimate(_num(quantity.point[i] - quantity.point[j]), _num(low), _num(high),
                    int(min(quantity.n[i], quantity.n[j])))


def _nums(values: np.ndarray) -> list[float | None]:
    """:func:`_num` of every element."""
    return [None if v != v else v for v in np.asarray(values, dtype=np.float64).tolist()]


def _num(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    config: BootstrapConfig
    metrics: tuple[str, ...]
    models: tuple[str, ...]
    locales: tuple[str, ...]
    n_instances: int  # |U|, the pool of instance ids resampled
    quantities: dict[str, Quantity]
    pair_languages: dict[tuple[str, str], str]
    pair_unpaired: dict[tuple[str, str], int]  # (model, locale) -> ids without a FLORES original

    def __getitem__(self, name: str) -> Quantity:
        try:
            return self.quantities[name]
        except KeyError:
            raise KeyError(f"no quantity {name!r}; known: {', '.join(self.quantities)}") from None

    def pair_rows(self, models: Collection[str] | None = None) -> list[dict]:
        """One row per (model, locale), metrics joined by key: ``flores_<m>``,
        ``cultivar_<m>``, ``delta_<m>``, each with ``_low``/``_high``, ``delta_<m>_excludes_zero``,
        ``n_instances`` and ``n_cultivar_only``; the rows of ``models`` only, when given."""
        keys = None
        for metric in self.metrics:
            mine = set(self[f"pair_delta_{metric}"].keys)
            if keys is not None and mine != keys:
                raise PairingError(f"{metric} pairs differ from other metrics': "
                                   f"{sorted(mine ^ keys)[:5]}")
            keys = mine
        order = self[f"pair_delta_{self.metrics[0]}"].keys
        if models is not None:
            order = tuple(key for key in order if key[0] in models)
        fast = self._pair_rows_by_column(order)
        if fast is not None:
            return fast
        rows = []
        for key in order:
            row = {"model_id": key[0], "locale": key[1], "language": self.pair_languages[key],
                   "n_cultivar_only": self.pair_unpaired[key]}
            for metric in self.metrics:
                for side in ("flores", "cultivar", "delta"):
                    e = self[f"pair_{side}_{metric}"].estimate(key)
                    _put(row, f"{side}_{metric}", e)
                    _put_n(row, "n_instances", e.n)
                row[f"delta_{metric}_excludes_zero"] = e.excludes_zero
            rows.append(row)
        return rows

    def _pair_rows_by_column(self, order: tuple) -> list[dict] | None:
        """:meth:`pair_rows` built column by column (the same rows); None when the quantities'
        n differ somewhere (then the row-by-row build raises, naming the row)."""
        columns: list[tuple[str, list]] = []
        n = None
        for metric in self.metrics:
            for side in ("flores", "cultivar", "delta"):
                q = self[f"pair_{side}_{metric}"]
                at = (np.arange(len(order)) if q.keys == order
                      else np.asarray([q.index(key) for key in order], dtype=np.int64))
                low, high = (x[at] for x in q.interval())
                mine = q.n[at]
                if n is None:
                    n = mine
                elif not np.array_equal(n, mine):
                    return None
                columns += [(f"{side}_{metric}", _nums(q.point[at])),
                            (f"{side}_{metric}_low", _nums(low)),
                            (f"{side}_{metric}_high", _nums(high))]
                if n is mine:
                    columns.append(("n_instances", n.tolist()))
            excludes = ~np.isnan(low) & ~np.isnan(high) & ((low > 0) | (high < 0))
            columns.append((f"delta_{metric}_excludes_zero", excludes.tolist()))
        rows = [{"model_id": key[0], "locale": key[1], "language": self.pair_languages[key],
                 "n_cultivar_only": self.pair_unpaired[key]} for key in order]
        for name, values in columns:
            for row, value in zip(rows, values, strict=True):
                row[name] = value
        return rows

    def model_rows(self, models: Collection[str] | None = None) -> list[dict]:
        """One row per model: Table 3's columns, each with ``_low``/``_high``, and the n's
        (``n_locale_pairs``, ``n_flores_test_sets``, ``n_cultivar_test_sets``, ``n_fp_locales``,
        ``n_fn_locales``); ``delta_<m>_excludes_zero``; the rows of ``models`` only, when
        given."""
        names = [(f"model_{side}_{metric}", f"{side}_{metric}", n_name)
                 for metric in self.metrics
                 for side, n_name in (("delta", "n_locale_pairs"),
                                      ("flores", "n_flores_test_sets"),
                                      ("cultivar", "n_cultivar_test_sets"))]
        for rate, n_name in (("false_positive_rate", "n_fp_locales"),
                             ("false_negative_rate", "n_fn_locales")):
            if f"model_{rate}" in self.quantities:
                names.append((f"model_{rate}", rate, n_name))
        rows = []
        for model in self.models:
            if models is not None and model not in models:
                continue
            row: dict = {"model_id": model}
            for quantity, column, n_name in names:
                e = self[quantity].estimate(model)
                _put(row, column, e)
                _put_n(row, n_name, e.n)
            for metric in self.metrics:
                row[f"delta_{metric}_excludes_zero"] = self[f"model_delta_{metric}"].estimate(
                    model).excludes_zero
            rows.append(row)
        return rows

    def locale_rows(self) -> list[dict]:
        """One row per locale with a pair: ``delta_<m>`` with ``_low``/``_high``, ``n_models``."""
        rows = []
        for locale in self[f"locale_delta_{self.metrics[0]}"].keys:
            row: dict = {"locale": locale}
            for metric in self.metrics:
                e = self[f"locale_delta_{metric}"].estimate(locale)
                _put(row, f"delta_{metric}", e)
                _put_n(row, "n_models", e.n)
                row[f"delta_{metric}_excludes_zero"] = e.excludes_zero
            rows.append(row)
        return rows


def _put(row: dict, column: str, e: Estimate) -> None:
    row[column], row[f"{column}_low"], row[f"{column}_high"] = e.value, e.low, e.high


def _put_n(row: dict, column: str, n: int) -> None:
    if row.setdefault(column, n) != n:
        raise PairingError(f"{column} differs between metrics ({row[column]} vs {n}) for {row}")


def _key(ids: np.ndarray) -> bytes:
    return ids.tobytes()


class _Requests:
    """Which (metric, test set, id subset) blocks to score, for which models."""

    def __init__(self) -> None:
        self.blocks: dict[tuple[str, str, bytes], tuple[np.ndarray, list[str]]] = {}

    def add(self, metric: str, test_set: str, ids: np.ndarray, model: str) -> tuple:
        key = (metric, test_set, _key(ids))
        entry = self.blocks.setdefault(key, (ids, []))
        if not entry[1] or entry[1][-1] != model:
            entry[1].append(model)
        return key


_FLOAT32_EXACT = 2 ** 24  # integers up to this are exact in float32


def _weighted_sums(weights: np.ndarray, positions: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``weights[:, positions] @ matrix``, as float64; exactly for integer statistics.

    Weights and integer statistics are non-negative integers, so every partial sum of a product
    is an integer no larger than ``max_b Σ_i w_bi · max(matrix)``. Below 2**24 float32 holds all
    of them exactly and float32 BLAS (about twice as fast) is used; otherwise float64 (exact
    below 2**53). Float statistics (segment scores) are always summed in float64.
    """
    n = weights.shape[1]
    # every instance of the pool, in its order (the usual case): the weights as they are
    w = (weights if len(positions) == n and np.array_equal(positions, np.arange(n))
         else weights[:, positions])
    if not np.issubdtype(matrix.dtype, np.integer):
        return w.astype(np.float64) @ matrix.astype(np.float64)
    bound = float(w.sum(axis=1).max(initial=0)) * float(matrix.max(initial=0))
    dtype = np.float32 if bound < _FLOAT32_EXACT else np.float64
    return (w.astype(dtype) @ matrix.astype(dtype)).astype(np.float64)


def _block_sums(weights: np.ndarray, positions: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(B + 1, M, k)`` weighted sums of ``rows`` ``(n, M, k)`` (:func:`_weighted_sums`). A
    column of integer statistics that every model shares (a reference length) is summed once."""
    n, n_models, k = rows.shape
    shared = ((rows == rows[:, :1, :]).all(axis=(0, 1)) if n_models > 1
              and np.issubdtype(rows.dtype, np.integer) else np.zeros(k, dtype=bool))
    if not shared.any():
        return _weighted_sums(weights, positions, rows.reshape(n, n_models * k)).reshape(
            -1, n_models, k)
    n_shared = int(shared.sum())
    matrix = np.concatenate([rows[:, 0, shared], rows[:, :, ~shared].reshape(n, -1)], axis=1)
    sums = _weighted_sums(weights, positions, matrix)
    # the column of ``sums`` that each (model, statistic) takes: a shared one, or its own
    column = np.empty((n_models, k), dtype=np.int64)
    column[:, shared] = np.arange(n_shared)
    column[:, ~shared] = n_shared + np.arange(n_models * (k - n_shared)).reshape(n_models, -1)
    return np.take(sums, column.ravel(), axis=1).reshape(len(weights), n_models, k)


def _mean_columns(values: np.ndarray, columns: Sequence[Sequence[int]]) -> np.ndarray:
    """(R, groups): the mean of ``values[:, group]`` per group; NaN for an empty group."""
    out = np.full((values.shape[0], len(columns)), np.nan)
    for j, group in enumerate(columns):
        if group:
            out[:, j] = values[:, list(group)].mean(axis=1)
    return out


def _nan_mean(values: np.ndarray) -> np.ndarray:
    """Mean over axis 1 of the finite values; NaN where none is finite."""
    finite = np.isfinite(values)
    count = finite.sum(axis=1)
    total = np.where(finite, values, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def bootstrap_weights(n_instances: int, config: BootstrapConfig) -> np.ndarray:
    """``(B + 1, n_instances)`` float64 weights: row 0 every instance once (the point estimate),
    rows 1..B the draw counts of :func:`instance_weights`."""
    weights = np.empty((config.n_replicates + 1, n_instances))
    weights[0] = 1.0
    weights[1:] = instance_weights(n_instances, config.n_replicates, config.seed)
    return weights


def instance_pool(stats: Mapping[str, StatsTable], models: Sequence[str],
                  locales: Sequence[str],
                  recall: Mapping[tuple[str, str], RecallCounts] | None = None) -> np.ndarray:
    """``U``, the sorted instance ids that occur in the statistics of ``models`` on the test sets
    of ``locales`` (and their languages) or in their word-recall counts (module docstring)."""
    language_of = {loc: get_locale(loc).source_language for loc in locales}
    wanted = {flores_test_set_name(lang) for lang in language_of.values()}
    wanted |= {cultivar_test_set_name(loc) for loc in locales}
    chosen = set(models)
    pools = [s.ids for table in stats.values() for (m, t), s in table.items()
             if m in chosen and t in wanted]
    pools += [r.ids for (m, loc), r in (recall or {}).items()
              if m in chosen and loc in language_of]
    if not pools:
        raise BootstrapError("no statistics for the given models and locales")
    return np.unique(np.concatenate(pools))


@dataclass(frozen=True, eq=False)
class ModelReplicates:
    """One model's share of the paired bootstrap: everything that depends on its statistics
    alone (given the pool ``U`` and the weights), computed once per model.

    ``pairs[metric]``: its (locale, n = |P|) pairs in locale order; ``pair_values[metric]``:
    side (flores, cultivar, delta) -> (point, low, high) over its pairs;
    ``pair_replicates[metric]``: side -> ``(B + 1, pairs)`` values (the ∆ side always, for the
    means over models; all three until :meth:`compact`); ``columns``: quantity name
    (``model_<side>_<metric>``, ``model_false_positive_rate``, ...) -> (``(B + 1,)`` values,
    n); ``unpaired``: locale -> ids without a FLORES original."""

    model: str
    pairs: dict[str, list[tuple[str, int]]]
    pair_values: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]
    pair_replicates: dict[str, dict[str, np.ndarray]]
    columns: dict[str, tuple[np.ndarray, int]]
    unpaired: dict[str, int]

    def compact(self) -> ModelReplicates:
        """The same without the FLORES and Cultivar sides' pair replicates (their intervals are
        in ``pair_values``)."""
        return ModelReplicates(self.model, self.pairs, self.pair_values,
                               {m: {"delta": sides["delta"]}
                                for m, sides in self.pair_replicates.items()},
                               self.columns, self.unpaired)


def model_replicates(
    stats: Mapping[str, StatsTable],
    models: Sequence[str],
    locales: Sequence[str],
    recall: Mapping[tuple[str, str], RecallCounts] | None,
    universe: np.ndarray,
    weights: np.ndarray,
    confidence: float,
    *,
    score_functions: Mapping[str, Callable[[np.ndarray], np.ndarray]],
    progress: bool = False,
) -> list[ModelReplicates]:
    """The :class:`ModelReplicates` of ``models`` (one block: every (metric, test set, id set)
    is one matrix product for all of them), in their order. ``universe``: the pool ``U``
    (:func:`instance_pool` over *every* model of the leaderboard); ``weights``:
    :func:`bootstrap_weights` of ``len(universe)``."""
    metrics = tuple(stats)
    models = tuple(dict.fromkeys(models))
    language_of = {loc: get_locale(loc).source_language for loc in locales}
    languages = tuple(dict.fromkeys(language_of.values()))
    recall = recall or {}
    n_rows = weights.shape[0]

    requests = _Requests()
    pairs: dict[str, list[tuple[tuple[str, str], tuple, tuple, int]]] = {}
    flores_full: dict[str, dict[str, list[tuple]]] = {}
    cultivar_full: dict[str, dict[str, list[tuple]]] = {}
    unpaired: dict[str, dict[str, int]] = {m: {} for m in models}
    for metric in metrics:
        table = stats[metric]
        pairs[metric] = []
        flores_full[metric] = {m: [] for m in models}
        cultivar_full[metric] = {m: [] for m in models}
        for model in models:
            for language in languages:
                f = table.get((model, flores_test_set_name(language)))
                if f is not None:
                    flores_full[metric][model].append(
                        requests.add(metric, flores_test_set_name(language), f.ids, model))
            for locale in locales:
                f_name = flores_test_set_name(language_of[locale])
                c_name = cultivar_test_set_name(locale)
                f, c = table.get((model, f_name)), table.get((model, c_name))
                if c is not None:
                    cultivar_full[metric][model].append(requests.add(metric, c_name, c.ids, model))
                if f is None or c is None:
                    continue
                shared = paired_ids(model, locale, f, c)
                unpaired[model][locale] = len(c.ids) - len(shared)
                pairs[metric].append(((model, locale),
                                      requests.add(metric, f_name, shared, model),
                                      requests.add(metric, c_name, shared, model),
                                      len(shared)))

    scores: dict[tuple, np.ndarray] = {}
    for (metric, test_set, ids_key), (ids, block_models) in tqdm(
            requests.blocks.items(), desc="bootstrap", unit="block", disable=not progress):
        table = stats[metric]
        widths = {m: table[(m, test_set)].stats.shape[1] for m in block_models}
        if len(set(widths.values())) > 1:
            raise BootstrapError(f"{metric} statistics of {test_set} have different widths "
                                 f"per model ({widths}): scores of different metric "
                                 "configurations are never mixed")
        rows = np.stack([table[(m, test_set)].rows(ids, f"{metric} statistics of {m} on "
                                                        f"{test_set}") for m in block_models],
                        axis=1)  # (n, M, k)
        block = score_functions[metric](
            _block_sums(weights, np.searchsorted(universe, ids), rows))  # (B + 1, M)
        for j, model in enumerate(block_models):
            scores[(metric, test_set, ids_key, model)] = block[:, j]

    columns: dict[str, dict[str, tuple[np.ndarray, int]]] = {m: {} for m in models}
    own_pairs: dict[str, dict] = {m: {} for m in models}
    pair_values: dict[str, dict] = {m: {} for m in models}
    pair_replicates: dict[str, dict] = {m: {} for m in models}
    for metric in metrics:
        for model in models:
            entries = [e for e in pairs[metric] if e[0][0] == model]
            flores_side = (np.column_stack([scores[(*e[1], model)] for e in entries])
                           if entries else np.empty((n_rows, 0)))
            cultivar_side = (np.column_stack([scores[(*e[2], model)] for e in entries])
                             if entries else np.empty((n_rows, 0)))
            delta = paired_delta(flores_side, cultivar_side)
            own_pairs[model][metric] = [(e[0][1], e[3]) for e in entries]
            pair_values[model][metric] = {
                side: (values[0], *percentile_interval(values[1:], confidence))
                for side, values in (("flores", flores_side), ("cultivar", cultivar_side),
                                     ("delta", delta))}
            pair_replicates[model][metric] = {"flores": flores_side,
                                              "cultivar": cultivar_side, "delta": delta}
            mean = _mean_columns(delta, [list(range(len(entries)))])[:, 0]
            columns[model][f"model_delta_{metric}"] = (mean, len(entries))
            for side, full in (("flores", flores_full[metric]),
                               ("cultivar", cultivar_full[metric])):
                values = (np.mean([scores[(*r, model)] for r in full[model]], axis=0)
                          if full[model] else np.full(n_rows, np.nan))
                columns[model][f"model_{side}_{metric}"] = (values, len(full[model]))
    if recall:
        for name, values in _recall_columns(recall, models, locales, universe, weights).items():
            for j, model in enumerate(models):
                columns[model][name] = (values[0][:, j], values[1][j])
    return [ModelReplicates(model, own_pairs[model], pair_values[model],
                            pair_replicates[model], columns[model], unpaired[model])
            for model in models]


def combine(parts: Iterable[ModelReplicates], models: Sequence[str], locales: Sequence[str],
            metrics: Sequence[str], n_instances: int, config: BootstrapConfig
            ) -> BootstrapResult:
    """The :class:`BootstrapResult` of the models' :class:`ModelReplicates`, one per model of
    ``models`` and in that order (an iterable: each part is used once, its ∆ replicates only
    added to the per-locale sums): the pairs' estimates as computed per model, the per-model
    quantities' replicates side by side, the per-locale means over models (the models' ∆
    added one after another in their order, then divided by their number). The pairs'
    quantities keep their replicates when every part has all of them (not :meth:`compact`),
    else only their intervals."""
    models = tuple(dict.fromkeys(models))
    language_of = {loc: get_locale(loc).source_language for loc in locales}
    n_rows = config.n_replicates + 1
    keys: dict[str, list] = {m: [] for m in metrics}
    sizes: dict[str, list] = {m: [] for m in metrics}
    values: dict[tuple[str, str], list] = {}  # (metric, side) -> [(point, low, high)]
    kept: dict[tuple[str, str], list] | None = {}  # (metric, side) -> pair replicates
    columns: dict[str, dict[int, tuple]] = {}  # quantity name -> model index -> (values, n)
    # per metric: Σ ∆ per locale (column: the locale's position in ``locales``) and the count
    locale_at = {locale: i for i, locale in enumerate(dict.fromkeys(locales))}
    sums = {m: np.zeros((n_rows, len(locale_at))) for m in metrics}
    counts = {m: np.zeros(len(locale_at), dtype=np.int64) for m in metrics}
    unpaired: dict[tuple[str, str], int] = {}
    count = 0
    for part in parts:
        if count >= len(models) or part.model != models[count]:
            raise BootstrapError(f"replicates of {part.model} where "
                                 f"{models[count] if count < len(models) else 'no model'} "
                                 "was expected: parts come one per model, in its order")
        for name, value in part.columns.items():
            columns.setdefault(name, {})[count] = value
        count += 1
        for metric in metrics:
            keys[metric] += [(part.model, locale) for locale, _ in part.pairs[metric]]
            sizes[metric] += [n for _, n in part.pairs[metric]]
            for side in ("flores", "cultivar", "delta"):
                values.setdefault((metric, side), []).append(part.pair_values[metric][side])
                if kept is not None and part.pair_replicates[metric].get(side) is not None:
                    kept.setdefault((metric, side), []).append(
                        part.pair_replicates[metric][side])
                else:  # a compact part: no pair keeps its replicates (none are held)
                    kept = None
            _add_locale_deltas(sums[metric], counts[metric], locale_at, part.pairs[metric],
                               part.pair_replicates[metric]["delta"])
        unpaired.update({(part.model, locale): n for locale, n in part.unpaired.items()})
    if count != len(models):
        raise BootstrapError(f"no replicates of the models {list(models[count:count + 5])}")

    quantities: dict[str, Quantity] = {}

    def add(name: str, keys: Sequence, values: np.ndarray, n: Sequence[int]) -> None:
        quantities[name] = Quantity(name, tuple(keys), values[0], values[1:],
                                    np.asarray(n, dtype=np.int64), config.confidence)

    def stacked(name: str) -> None:  # NaN and n = 0 for a model without the quantity
        found = columns.get(name, {})
        values = np.full((n_rows, len(models)), np.nan)
        for j, (column, _) in found.items():
            values[:, j] = column
        add(name, models, values, [found[j][1] if j in found else 0
                                   for j in range(len(models))])

    for metric in metrics:
        n = np.asarray(sizes[metric], dtype=np.int64)
        for side in ("flores", "cultivar", "delta"):
            point, low, high = (np.concatenate([v[i] for v in values[(metric, side)]])
                                if values.get((metric, side)) else np.empty(0)
                                for i in range(3))
            pair = None if kept is None else kept.get((metric, side), [])
            replicates = (None if pair is None else np.hstack([r[1:] for r in pair])
                          if pair else np.empty((n_rows - 1, 0)))
            quantities[f"pair_{side}_{metric}"] = Quantity(
                f"pair_{side}_{metric}", tuple(keys[metric]), point, replicates, n,
                config.confidence, {"value": (low, high)})
        for side in ("delta", "flores", "cultivar"):
            stacked(f"model_{side}_{metric}")
        paired = np.flatnonzero(counts[metric])
        add(f"locale_delta_{metric}", [list(locale_at)[j] for j in paired],
            sums[metric][:, paired] / counts[metric][paired], counts[metric][paired].tolist())
    for name in ("model_false_positive_rate", "model_false_negative_rate"):
        if name in columns:
            stacked(name)
    return BootstrapResult(
        config, tuple(metrics), models, tuple(dict.fromkeys(locales)), n_instances, quantities,
        {key: language_of[key[1]] for key in unpaired}, unpaired,
    )


def _add_locale_deltas(sums: np.ndarray, counts: np.ndarray, locale_at: Mapping[str, int],
                       pairs: Sequence[tuple[str, int]], delta: np.ndarray) -> None:
    """Add one model's ∆ replicates (``delta``: ``(B + 1, pairs)``) to the per-locale sums
    (``sums[:, locale_at[locale]]``; the first model of a locale is copied, the next ones
    added, in the order the models come) and count them."""
    at = np.asarray([locale_at.get(locale, -1) for locale, _ in pairs], dtype=np.int64)
    every = len(at) == sums.shape[1] and (at == np.arange(len(at))).all()
    if every and (counts.all() or not counts.any()):  # every locale, in order: whole arrays
        if counts.all():
            sums += delta
        else:
            sums[:] = delta
        counts += 1
        return
    known = at >= 0  # a locale outside ``locales`` is left out
    first = known & (counts[np.where(known, at, 0)] == 0)
    later = known & ~first
    if first.any():
        sums[:, at[first]] = delta[:, first]
    if later.any():
        sums[:, at[later]] += delta[:, later]
    counts[at[known]] += 1


PACK_FORMAT = 1  # the layout of a kept replicates pack (ReplicatesPack)
PACK_INDEX = "replicates.json"


def _part_arrays(part: ModelReplicates) -> tuple[dict, list[tuple[str, np.ndarray]]]:
    """A :meth:`~ModelReplicates.compact` part as (its JSON description, its named arrays)."""
    arrays = [(f"pair/{metric}/{side}/{i}", values[i])
              for metric, sides in part.pair_values.items()
              for side, values in sides.items() for i in range(3)]
    arrays += [(f"delta/{metric}", sides["delta"])
               for metric, sides in part.pair_replicates.items()]
    arrays += [(f"column/{name}", values) for name, (values, _) in part.columns.items()]
    meta = {"model": part.model, "pairs": part.pairs, "unpaired": part.unpaired,
            "columns": {name: n for name, (_, n) in part.columns.items()},
            "arrays": [(name, list(np.shape(a))) for name, a in arrays]}
    return meta, arrays


def _part_from(meta: dict, data: np.ndarray) -> ModelReplicates:
    """The part that :func:`_part_arrays` described as ``meta``, its values in ``data``."""
    arrays, at = {}, 0
    for name, shape in meta["arrays"]:
        size = int(np.prod(shape))
        arrays[name] = data[at:at + size].reshape(shape)
        at += size
    pairs = {metric: [(locale, int(n)) for locale, n in entries]
             for metric, entries in meta["pairs"].items()}
    return ModelReplicates(
        meta["model"], pairs,
        {metric: {side: tuple(arrays[f"pair/{metric}/{side}/{i}"] for i in range(3))
                  for side in ("flores", "cultivar", "delta")} for metric in pairs},
        {metric: {"delta": arrays[f"delta/{metric}"]} for metric in pairs},
        {name: (arrays[f"column/{name}"], int(n)) for name, n in meta["columns"].items()},
        {locale: int(n) for locale, n in meta["unpaired"].items()})


class ReplicatesPack:
    """Every model's :meth:`~ModelReplicates.compact` replicates kept in one folder, each
    labelled with the key of what it was computed from: ``replicates.json`` (per model: its
    key, its description, where its values lie) and the data file it names (float64, each
    model's values one after another; a model computed again is appended, and the file is
    written afresh without the values no model uses once they are more than half of it). The
    index is replaced atomically after the data it names is written, so a reader sees a
    complete pack; :meth:`get` reads a model's values from the file's mapping (no copy). (Not a
    safetensors file, as the ranks' states are: a model computed again is appended to the
    data file, where safetensors writes a file whole, and a model's share is a slice of one
    mapping, where ``safe_open`` reads each of a model's dozens of arrays by name.)"""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries: dict[str, dict] = {}
        self.data_name: str | None = None
        self._data: np.ndarray | None = None
        self._out = None
        self._length = 0  # float64 values in the data file
        try:
            index = json.loads((folder / PACK_INDEX).read_text("utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return
        data = folder / str(index.get("data"))
        if index.get("format") != PACK_FORMAT or not data.is_file():
            return
        self.data_name, self.entries = data.name, index["models"]
        self._length = data.stat().st_size // 8
        if self._length:
            # a plain array on the mapping (slices of a np.memmap cost more than the reads)
            self._data = np.memmap(data, dtype=np.float64, mode="r",
                                   shape=(self._length,)).view(np.ndarray)

    def get(self, model: str, key: str) -> ModelReplicates | None:
        """The model's kept part, if it was kept under ``key``; None otherwise."""
        entry = self.entries.get(model)
        if entry is None or entry["key"] != key or self._data is None:
            return None
        start = entry["offset"]
        return _part_from(entry["meta"], self._data[start:start + entry["size"]])

    def put(self, part: ModelReplicates, key: str) -> None:
        """Keep ``part`` (its compact form) under ``key``, appended to the data file (the index
        is written by :meth:`save`)."""
        meta, arrays = _part_arrays(part.compact())
        data = (np.concatenate([np.asarray(a, dtype=np.float64).ravel() for _, a in arrays])
                if arrays else np.empty(0))
        if self._out is None:
            if self.data_name is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self.data_name = f"replicates-{os.getpid()}-{os.urandom(4).hex()}.bin"
            self._out = (self.folder / self.data_name).open("ab")
        self._out.write(memoryview(data))
        self.entries[part.model] = {"key": key, "offset": self._length, "size": len(data),
                                    "meta": meta}
        self._length += len(data)

    def save(self, models: Sequence[str]) -> None:
        """Keep the parts of ``models`` only and write the index (after the data it names)."""
        if self._out is not None:
            self._out.close()
            self._out = None
        self.entries = {m: self.entries[m] for m in models if m in self.entries}
        if self.data_name is None:
            return
        live = sum(e["size"] for e in self.entries.values())
        old = self.data_name
        if live * 2 < self._length:  # mostly values no model uses: written afresh
            source = np.memmap(self.folder / old, dtype=np.float64, mode="r",
                               shape=(self._length,)) if self._length else np.empty(0)
            self.data_name = f"replicates-{os.getpid()}-{os.urandom(4).hex()}.bin"
            with (self.folder / self.data_name).open("wb") as out:
                at = 0
                for entry in self.entries.values():
                    out.write(memoryview(np.ascontiguousarray(
                        source[entry["offset"]:entry["offset"] + entry["size"]])))
                    entry["offset"], at = at, at + entry["size"]
            self._length = at
        partial = self.folder / f".{PACK_INDEX}.partial"
        partial.write_text(json.dumps({"format": PACK_FORMAT, "data": self.data_name,
                                       "models": self.entries}), "utf-8")
        os.replace(partial, self.folder / PACK_INDEX)
        for other in self.folder.glob("replicates-*.bin"):  # earlier data files
            if other.name != self.data_name:
                other.unlink(missing_ok=True)


BLOCK_MODELS = 100  # models whose replicates are computed together (one matrix product each)


def paired_bootstrap(
    stats: Mapping[str, StatsTable],
    models: Sequence[str],
    locales: Sequence[str],
    recall: Mapping[tuple[str, str], RecallCounts] | None = None,
    config: BootstrapConfig | None = None,
    progress: bool = False,
    *,
    score_functions: Mapping[str, Callable[[np.ndarray], np.ndarray]],
) -> BootstrapResult:
    """Paired bootstrap of every quantity in the module docstring.

    ``stats``: metric ('bleu', 'chrf') -> (model, test set) -> per-segment statistics
    (``segment_stats.stats_from_table``); ``recall``: (model, locale) -> word-recall counts
    (``segment_stats.recall_from_table``), optional. Test sets are ``flores_<language>`` and
    ``cultivar_<locale>``; statistics of other models or test sets are ignored.
    ``score_functions``: metric -> its vectorised corpus score of summed statistics (rows of
    summed statistics -> scores; :func:`cultivar_assets.metrics.registry.score_functions` gives
    the registry's). Computed as :func:`model_replicates` over blocks of
    :data:`BLOCK_MODELS` models, then :func:`combine`.
    """
    config = config or BootstrapConfig()
    metrics = tuple(stats)
    if not metrics:
        raise BootstrapError("no metric statistics given")
    missing = [m for m in metrics if m not in score_functions]
    if missing:
        raise BootstrapError(f"no score function given for the metrics {missing}")
    models = tuple(dict.fromkeys(models))
    locales = tuple(dict.fromkeys(locales))
    universe = instance_pool(stats, models, locales, recall)
    weights = bootstrap_weights(len(universe), config)
    parts = (part for start in range(0, len(models), BLOCK_MODELS)
             for part in model_replicates(stats, models[start:start + BLOCK_MODELS], locales,
                                          recall, universe, weights, config.confidence,
                                          score_functions=score_functions, progress=progress))
    return combine(parts, models, locales, metrics, len(universe), config)


def _recall_columns(recall, models, locales, universe, weights
                    ) -> dict[str, tuple[np.ndarray, list[int]]]:
    """FP/FN rates per (model, locale) from resampled counts, then the model means:
    quantity name -> ((B + 1, models) values, n per model)."""
    out: dict[str, tuple[np.ndarray, list[int]]] = {}
    _recall_quantities(recall, models, locales, universe, weights,
                       lambda name, keys, values, n: out.__setitem__(name, (values, list(n))))
    return out


def _recall_quantities(recall, models, locales, universe, weights, add) -> None:
    """FP/FN rates per (model, locale) from resampled counts, then the model means."""
    groups: dict[tuple[str, bytes], tuple[np.ndarray, list[str]]] = {}
    for model in models:
        for locale in locales:
            counts = recall.get((model, locale))
            if counts is not None:
                groups.setdefault((locale, _key(counts.ids)), (counts.ids, []))[1].append(model)
    rates: dict[str, dict[str, list[np.ndarray]]] = {"fp": {m: [] for m in models},
                                                     "fn": {m: [] for m in models}}
    for (locale, _), (ids, group) in groups.items():
        rows = np.stack([recall[(m, locale)].counts for m in group], axis=1)  # (n, M, 4)
        n, n_models, _k = rows.shape
        sums = _weighted_sums(weights, np.searchsorted(universe, ids),
                              rows.reshape(n, n_models * 4)).reshape(-1, n_models, 4)
        with np.errstate(invalid="ignore", divide="ignore"):
            fp = np.where(sums[..., 0] > 0, sums[..., 1] / sums[..., 0], np.nan)
            fn = np.where(sums[..., 2] > 0, sums[..., 3] / sums[..., 2], np.nan)
        for j, model in enumerate(group):
            rates["fp"][model].append(fp[:, j])
            rates["fn"][model].append(fn[:, j])
    n_rows = weights.shape[0]
    for short, name in (("fp", "false_positive_rate"), ("fn", "false_negative_rate")):
        values = np.full((n_rows, len(models)), np.nan)
        n = []
        for j, model in enumerate(models):
            per_locale = rates[short][model]
            if per_locale:
                stacked = np.column_stack(per_locale)
                values[:, j] = _nan_mean(stacked)
                n.append(int(np.isfinite(stacked[0]).sum()))
            else:
                n.append(0)
        add(f"model_{name}", models, values, n)
