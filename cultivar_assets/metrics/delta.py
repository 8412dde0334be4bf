"""The definition of ∆, the paired difference between Cultivar and FLORES (paper §3.2, Tables 3, 4).

For model m, metric s (BLEU, chrF) and locale l whose source language is L(l), with
``P(m, l) = ids(cultivar_l) ∩ ids(flores_L)`` (:func:`paired_ids`, the ids both test sets have for
model m):

    ∆s(m, l) = s(m, cultivar_l restricted to P) − s(m, flores_L restricted to P)

(:func:`paired_delta`), each side the corpus score of the summed per-segment statistics of P
(BLEU and chrF by sacreBLEU's formulas, :mod:`cultivar_assets.metrics.score_arrays`). The pipeline
computes it in :func:`cultivar_assets.metrics.bootstrap.paired_bootstrap`, whose point estimate
(weights 1: every instance of P once) is the stored ∆, and whose replicates apply the same
function to re-weighted sums. ``flores_L`` holds the union of the ids of L's locales, so its full
corpus score can cover sentences a locale lacks; the pair compares the same instances. Normally
``P = ids(cultivar_l)``; an id of the locale that has no FLORES original is left out of *both*
sides (our choice; the pair records ``n_instances = |P|`` and ``n_cultivar_only``). A pair with
either test set missing has no ∆; metrics are joined by (model, locale) key, never by position.

- Per model (Table 3): mean pairwise ∆ = (1/n) Σ_{i=1..n} ∆s(m, l_i) over the n locales l_i with
  a pair. This is not Cultivar average minus FLORES average, because one language can be paired
  with several locales.
- Per locale (Table 4): mean of ∆s(m, l) over the models m that have it (models fixed).

**Table 4's Average row** (:func:`locale_average`). The paper prints −0.27 (∆BLEU) and −1.05
(∆chrF). That is not the mean of its own column (−0.488 / −1.103), nor the mean over languages
of the per-language means (−0.436 / −1.214), nor the mean over the 23 locales where the language
is official or de facto (−0.616 / −1.322): the paper's aggregation is unknown. We report the mean
over locales of the per-locale means, with its number of locales.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean

import numpy as np

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name, get_locale
from cultivar_assets.metrics.segment_stats import SegmentStats


@dataclass(frozen=True)
class PairDelta:
    model: str
    locale: str
    language: str
    flores: float
    cultivar: float
    n_instances: int | None = None  # |P|
    n_cultivar_only: int = 0  # ids of the locale without a FLORES original, left out of ∆

    @property
    def delta(self) -> float:
        return float(paired_delta(self.flores, self.cultivar))


class PairingError(ValueError):
    """Two test sets cannot be paired (no shared instance), or metrics disagree on the pairs."""


def paired_ids(model: str, locale: str, flores: SegmentStats, cultivar: SegmentStats
               ) -> np.ndarray:
    """``P(m, l) = ids(cultivar_l) ∩ ids(flores_L)``, sorted; :class:`PairingError` when empty."""
    shared = np.intersect1d(cultivar.ids, flores.ids, assume_unique=True)
    if len(shared) == 0:
        language = get_locale(locale).source_language
        raise PairingError(f"{model}: {cultivar_test_set_name(locale)} and "
                           f"{flores_test_set_name(language)} share no instance id")
    return shared


def paired_delta(flores: np.ndarray, cultivar: np.ndarray) -> np.ndarray:
    """∆ = s(cultivar_l on P) − s(flores_L on P), elementwise (module docstring).

    ``flores`` and ``cultivar`` are the two sides' scores, each from the summed statistics of
    the same instances P with the same weights (one entry per replicate in the bootstrap).
    """
    return np.asarray(cultivar, dtype=np.float64) - np.asarray(flores, dtype=np.float64)



@dataclass(frozen=True)
class LocaleAverage:
    """Mean over locales of the per-locale mean ∆ (Table 4's Average row, our definition)."""

    mean: float | None
    n_locales: int


def locale_average(locale_means: Mapping[str, tuple[float, int]]) -> LocaleAverage:
    """Unweighted mean over locales of the per-locale mean ∆ (``locale -> (mean, n models)``;
    module docstring: the paper's own aggregation of its Average row is unknown)."""
    values = [mean for mean, _ in locale_means.values()]
    return LocaleAverage(fmean(values) if values else None, len(values))
