"""Rank agreement between FLORES and Cultivar (paper §4.1, Table 2).

For locale l of language L and metric s, with x_m = s(m, flores_L) and y_m = s(m, cultivar_l) over
the models m that have both scores:

- Spearman's r_s = Pearson correlation of the ranks of x and y (``scipy.stats.spearmanr``; ties get
  average ranks);
- Kendall's τ_b = (P − Q) / sqrt((P + Q + T_x)(P + Q + T_y)), P/Q concordant/discordant pairs,
  T_x/T_y pairs tied only in x/y (``scipy.stats.kendalltau``, variant "b").

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

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
    from scipy.stats import kendalltau, spearmanr

    rho = float(spearmanr(x, y).statistic)
    tau = float(kendalltau(x, y, variant="b").statistic)
    return (None if math.isnan(rho) else rho, None if math.isnan(tau) else tau, None)


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
