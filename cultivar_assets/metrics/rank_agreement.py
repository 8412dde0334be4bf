"""Rank agreement between FLORES and Cultivar (paper §4.1, Table 2).

For locale l of language L and metric s, with x_m = s(m, flores_L) and y_m = s(m, cultivar_l) over
the models m that have both scores:

- Spearman's r_s = Pearson correlation of the ranks of x and y (ties get average ranks;
  ``scipy.stats.spearmanr``'s arithmetic: ``numpy.corrcoef`` of the two rank columns);
- Kendall's τ_b = (P − Q) / sqrt((P + Q + T_x)(P + Q + T_y)), P/Q concordant/discordant pairs,
  T_x/T_y pairs tied only in x/y (``scipy.stats.kendalltau``'s variant "b" and arithmetic: the
  pair counts exact integers, Q counted as the inversions of y in x order, by merge sort).

Both equal SciPy's to the bit (``tests/test_metrics_rank_agreement.py``); they are computed with
NumPy alone, so that aggregating does not import ``scipy.stats``.

Both are undefined (reported as None with a note) with fewer than 3 models or when either list is
constant. Two labelled averages (:class:`AgreementAverage`), each with its numbers of models and
locales:

- ``model_averages`` — **the default, the paper's**: the coefficients between X_m, model m's
  FLORES average over languages, and Y_m, its Cultivar average over locales (the FLORES and
  Cultivar columns of Table 3). From the paper's reported Table 3 this gives r_s/τ_b 0.981/0.907
  (BLEU) and 0.976/0.890 (chrF), the printed Average row of Table 2 (0.98/0.91, 0.98/0.89).
- ``mean_of_locales``: the unweighted mean of the defined per-locale coefficients. On the paper's
  per-locale Table 2 values it is 0.964/0.874 (BLEU) and 0.973/0.895 (chrF): a different quantity.

The store's ``rank_agreement`` view holds the per-locale rows and both averages
(:mod:`cultivar_assets.evaluation.statistics`, on instance-paired scores).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

import numpy as np

from cultivar_assets.metrics.delta import PairDelta

MIN_MODELS = 3
DEFAULT_AGGREGATION = "model_averages"
AGGREGATIONS = ("model_averages", "mean_of_locales")


@dataclass(frozen=True)
class RankAgreement:
    aggregation: str  # 'per_locale' (the averages are AgreementAverage)
    locale: str | None
    metric: str
    spearman: float | None
    kendall_tau_b: float | None
    n_models: int
    note: str | None


def coefficients(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, float | None,
                                                                   str | None]:
    """(Spearman r_s, Kendall τ_b, note) of paired lists; None and a note when undefined."""
    if len(x) < MIN_MODELS:
        return None, None, f"undefined: {len(x)} model(s), rank agreement needs at least 3"
    if len(set(x)) == 1 or len(set(y)) == 1:
        return None, None, "undefined: all models have the same score on one side"
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.isnan(xs).any() or np.isnan(ys).any():  # SciPy's NaN policy "propagate"
        return None, None, None
    return _spearman(xs, ys), _kendall_tau_b(xs, ys), None


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values``, tied values the mean of their positions (SciPy's
    ``rankdata``, method "average")."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, len(values)])
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(starts + (counts + 1) / 2, counts)
    return ranks


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's r_s of two non-constant lists without NaN (``scipy.stats.spearmanr``: the
    rank columns ranked along axis 0 and correlated by ``numpy.corrcoef``)."""
    ranked = np.apply_along_axis(_average_ranks, 0, np.column_stack((x, y)))
    return float(np.corrcoef(ranked, rowvar=False)[1, 0])


def _dense_ranks(values: np.ndarray) -> np.ndarray:
    """0-based ranks of ``values`` where equal values share one rank and ranks have no gaps."""
    return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _tied_pairs(ranks: np.ndarray) -> int:
    """Pairs of positions with equal ``ranks`` (non-negative integers)."""
    counts = np.bincount(ranks).astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def _inversions(values: np.ndarray) -> int:
    """Pairs i < j with ``values[i] > values[j]`` (non-negative integers): a bottom-up merge
    sort that counts, for each element of each right half, the greater elements of its left
    half (every pair of halves at once: each pair's values offset above the previous pair's,
    so that one ``searchsorted`` of all right halves in all left halves counts them)."""
    n = len(values)
    size = 1 << max(n - 1, 0).bit_length()
    top = int(values.max()) + 1 if n else 1
    merged = np.full(size, top, dtype=np.int64)  # the largest values last add no inversion
    merged[:n] = values
    found, width = 0, 1
    while width < size:
        halves = merged.reshape(-1, 2 * width)
        offset = (np.arange(len(halves), dtype=np.int64) * (top + 1))[:, None]
        lefts = (halves[:, :width] + offset).ravel()
        not_greater = np.searchsorted(lefts, (halves[:, width:] + offset).ravel(), side="right")
        found += int((np.repeat(np.arange(1, len(halves) + 1) * width, width)
                      - not_greater).sum())
        merged = np.sort(halves, axis=1).ravel()
        width *= 2
    return found


def _kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ_b of two non-constant lists without NaN (``scipy.stats.kendalltau``, variant
    "b": its pair counts and its final arithmetic)."""
    dense_x, dense_y = _dense_ranks(x), _dense_ranks(y)
    order = np.lexsort((dense_y, dense_x))  # by x, ties in x by y: those add no inversion
    discordant = _inversions(dense_y[order])
    joint = _tied_pairs(_dense_ranks(dense_x * (int(dense_y.max()) + 1) + dense_y))
    x_ties, y_ties = _tied_pairs(dense_x), _tied_pairs(dense_y)
    total = len(x) * (len(x) - 1) // 2
    concordant_minus_discordant = total - x_ties - y_ties + joint - 2 * discordant
    tau = concordant_minus_discordant / np.sqrt(total - x_ties) / np.sqrt(total - y_ties)
    return float(np.minimum(1.0, max(-1.0, tau)))


def per_locale_agreement(pairs: Sequence[PairDelta], metric: str) -> list[RankAgreement]:
    """r_s and τ_b per locale, over the models paired on it; rows sorted by locale."""
    by_locale: dict[str, list[PairDelta]] = {}
    for pair in pairs:
        by_locale.setdefault(pair.locale, []).append(pair)
    rows = []
    for locale in sorted(by_locale):
        items = sorted(by_locale[locale], key=lambda p: p.model)
        rho, tau, note = coefficients([p.flores for p in items], [p.cultivar for p in items])
        rows.append(RankAgreement("per_locale", locale, metric, rho, tau, len(items), note))
    return rows


@dataclass(frozen=True)
class AgreementAverage:
    """One labelled average of Table 2 (module docstring), with the n it is computed over."""

    aggregation: str  # 'model_averages' (default, the paper's) | 'mean_of_locales'
    metric: str
    spearman: float | None
    kendall_tau_b: float | None
    n_models: int  # models correlated (model_averages) / most models on one locale
    n_locales: int  # locales behind the Cultivar averages / locales with a defined coefficient
    is_default: bool
    note: str | None


def model_average_agreement(
    flores_average: Mapping[str, float], cultivar_average: Mapping[str, float], metric: str,
    n_locales: int,
) -> AgreementAverage:
    """The paper's Table 2 average: r_s, τ_b between the two per-model averages (Table 3).

    Only models with both averages count. ``n_locales`` is the number of locales behind the
    Cultivar averages (the caller knows it; the paper's is 27).
    """
    models = sorted(set(flores_average) & set(cultivar_average))
    rho, tau, note = coefficients([flores_average[m] for m in models],
                                  [cultivar_average[m] for m in models])
    return AgreementAverage("model_averages", metric, rho, tau, len(models), n_locales,
                            DEFAULT_AGGREGATION == "model_averages", note)


def mean_of_locales(rows: Sequence[RankAgreement], metric: str) -> AgreementAverage:
    """Mean of the defined per-locale coefficients of ``metric`` (rows of other metrics and
    other aggregations are ignored)."""
    per_locale = [r for r in rows if r.aggregation == "per_locale" and r.metric == metric]
    rhos = [r.spearman for r in per_locale if r.spearman is not None]
    taus = [r.kendall_tau_b for r in per_locale if r.kendall_tau_b is not None]
    note = None if rhos else "undefined: no locale has a defined coefficient"
    if rhos and len(taus) != len(rhos):
        note = f"τ_b averaged over {len(taus)} locales, r_s over {len(rhos)}"
    return AgreementAverage(
        "mean_of_locales", metric, fmean(rhos) if rhos else None,
        fmean(taus) if taus else None, max((r.n_models for r in per_locale), default=0),
        len(rhos), DEFAULT_AGGREGATION == "mean_of_locales", note,
    )


def agreement_averages(
    pairs: Sequence[PairDelta], flores_average: Mapping[str, float],
    cultivar_average: Mapping[str, float], metric: str,
) -> tuple[list[RankAgreement], list[AgreementAverage]]:
    """Per-locale rows and the two averages, the default (``model_averages``) first.

    ``flores_average``/``cultivar_average``: model -> its FLORES average over languages and its
    Cultivar average over locales (the bootstrap's ``model_flores_<m>``, ``model_cultivar_<m>``).
    The number of locales behind the Cultivar averages is taken as the number of distinct
    locales in ``pairs``.
    """
    rows = per_locale_agreement(pairs, metric)
    n_locales = len({p.locale for p in pairs})
    return rows, [
        model_average_agreement(flores_average, cultivar_average, metric, n_locales),
        mean_of_locales(rows, metric),
    ]
