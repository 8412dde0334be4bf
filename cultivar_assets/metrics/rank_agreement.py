"""Rank agreement between FLORES and Cultivar (paper §4.1, Table 2).

For locale l of language L and metric s, with x_m = s(m, flores_L) and y_m = s(m, cultivar_l) over
the models m that have both scores:

- Spearman's r_s = Pearson correlation of the ranks of x and y (``scipy.stats.spearmanr``; ties get
  average ranks);
- Kendall's τ_b = (P − Q) / sqrt((P + Q + T_x)(P + Q + T_y)), P/Q concordant/discordant pairs,
  T_x/T_y pairs tied only in x/y (``scipy.stats.kendalltau``, variant "b").

Both are undefined (reported as None with a note) with fewer than 3 models or when either list is
constant. Two averages, labelled by how they aggregate:

- ``mean_of_locales``: the unweighted mean of the defined per-locale coefficients;
- ``locale_averaged_scores``: the coefficients between X_m = mean_l s(m, flores_L(l)) and
  Y_m = mean_l s(m, cultivar_l), over the locales every included model has.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from cultivar_assets.metrics.delta import PairDelta

MIN_MODELS = 3


@dataclass(frozen=True)
class RankAgreement:
    aggregation: str  # 'per_locale' | 'mean_of_locales' | 'locale_averaged_scores'
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


def rank_agreement(pairs: Sequence[PairDelta], metric: str) -> list[RankAgreement]:
    """Per-locale coefficients, then the two labelled averages (see the module docstring)."""
    by_locale: dict[str, list[PairDelta]] = {}
    for pair in pairs:
        by_locale.setdefault(pair.locale, []).append(pair)
    rows = []
    for locale in sorted(by_locale):
        items = sorted(by_locale[locale], key=lambda p: p.model)
        rho, tau, note = coefficients([p.flores for p in items], [p.cultivar for p in items])
        rows.append(RankAgreement("per_locale", locale, metric, rho, tau, len(items), note))

    defined = [r for r in rows if r.spearman is not None]
    note = None if defined else "undefined: no locale has a defined coefficient"
    rows.append(RankAgreement(
        "mean_of_locales", None, metric,
        fmean(r.spearman for r in defined) if defined else None,
        fmean(r.kendall_tau_b for r in defined if r.kendall_tau_b is not None) if defined else None,
        max((r.n_models for r in rows), default=0), note,
    ))

    models = sorted({p.model for p in pairs})
    shared = set(by_locale)
    for model in models:
        shared &= {p.locale for p in pairs if p.model == model}
    x = [fmean(p.flores for p in pairs if p.model == m and p.locale in shared) for m in models
         ] if shared else []
    y = [fmean(p.cultivar for p in pairs if p.model == m and p.locale in shared) for m in models
         ] if shared else []
    rho, tau, note = coefficients(x, y)
    if not shared and models:
        note = "undefined: no locale is shared by all models"
    rows.append(RankAgreement("locale_averaged_scores", None, metric, rho, tau, len(x), note))
    return rows
