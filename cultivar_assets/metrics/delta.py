"""Paired differences between Cultivar and FLORES (paper §3.2, Tables 3 and 4).

For model m, metric s ∈ {BLEU, chrF} and locale l whose source language is L(l):

    ∆s(m, l) = s(m, cultivar_l) − s(m, flores_L(l))

- Per model (Table 3): mean pairwise ∆ = (1/n) Σ_{i=1..n} ∆s(m, l_i) over the n locales l_i for
  which both test sets were scored. This is not FLORES average minus Cultivar average, because one
  language can be paired with several locales.
- FLORES average (Table 3) = mean of s(m, flores_L) over the model's languages L;
  Cultivar average = mean of s(m, cultivar_l) over its locales l.
- Per locale (Table 4): mean of ∆s(m, l) over the models m that have it (unpaired across models).

Scores enter as ``{(model, test_set): score}`` per metric; every test set name follows
``flores_<language>`` / ``cultivar_<locale>``. A pair with either score missing has no ∆ and is
not counted (the number of pairs used is reported with every mean).

**Instance pairing** (:func:`instance_paired_deltas`). ``flores_L`` holds the union of the ids of
L's locales, so its corpus score can cover sentences a locale lacks. The paired ∆ compares the same
instances: with ``P(m, l) = ids(cultivar_l) ∩ ids(flores_L)`` (the ids both test sets have for
model m),

    ∆s(m, l) = s(m, cultivar_l restricted to P) − s(m, flores_L restricted to P),

each side computed from the summed per-segment statistics of P (BLEU and chrF by sacreBLEU's
formulas, :mod:`cultivar_assets.metrics.score_arrays`). Normally ``P = ids(cultivar_l)``; an id of
the locale that has no FLORES original is left out of *both* sides (our choice; the pair records
``n_instances = |P|`` and ``n_cultivar_only``, the locale's ids left out). BLEU and chrF pairs are
joined by (model, locale) key (:func:`join_metric_pairs`), never by position.

**Table 4's Average row** (:func:`locale_average`). The paper prints −0.27 (∆BLEU) and −1.05
(∆chrF). That is not the mean of its own column (−0.488 / −1.103), nor the mean over languages
of the per-language means (−0.436 / −1.214), nor the mean over the 23 locales where the language
is official or de facto (−0.616 / −1.322): the paper's aggregation is unknown. We report the mean
over locales of the per-locale means, with its number of locales.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

import numpy as np

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name, get_locale
from cultivar_assets.metrics.score_arrays import scores_from_stats
from cultivar_assets.metrics.segment_stats import StatsTable

Scores = Mapping[tuple[str, str], float]  # (model, test set) -> score


@dataclass(frozen=True)
class PairDelta:
    model: str
    locale: str
    language: str
    flores: float
    cultivar: float
    n_instances: int | None = None  # |P| for instance-paired ∆; None: corpus scores paired
    n_cultivar_only: int = 0  # ids of the locale without a FLORES original, left out of ∆

    @property
    def delta(self) -> float:
        return self.cultivar - self.flores


def pair_deltas(scores: Scores, models: Sequence[str], locales: Sequence[str]) -> list[PairDelta]:
    """∆ for every (model, locale) with both scores present."""
    pairs = []
    for model in models:
        for locale in locales:
            language = get_locale(locale).source_language
            original = scores.get((model, flores_test_set_name(language)))
            localised = scores.get((model, cultivar_test_set_name(locale)))
            if original is not None and localised is not None:
                pairs.append(PairDelta(model, locale, language, original, localised))
    return pairs


@dataclass(frozen=True)
class ModelAverages:
    model: str
    mean_delta: float | None  # mean pairwise ∆ over paired locales
    flores_average: float | None  # mean over flores_* test sets
    cultivar_average: float | None  # mean over cultivar_* test sets
    n_pairs: int
    n_flores: int
    n_cultivar: int


def model_averages(scores: Scores, model: str, pairs: Sequence[PairDelta]) -> ModelAverages:
    mine = [p.delta for p in pairs if p.model == model]
    flores = [v for (m, t), v in scores.items() if m == model and t.startswith("flores_")]
    cultivar = [v for (m, t), v in scores.items() if m == model and t.startswith("cultivar_")]
    return ModelAverages(
        model,
        fmean(mine) if mine else None,
        fmean(flores) if flores else None,
        fmean(cultivar) if cultivar else None,
        len(mine),
        len(flores),
        len(cultivar),
    )


def locale_mean_deltas(pairs: Sequence[PairDelta]) -> dict[str, tuple[float, int]]:
    """locale -> (mean ∆ over models, number of models)."""
    grouped: dict[str, list[float]] = {}
    for pair in pairs:
        grouped.setdefault(pair.locale, []).append(pair.delta)
    return {locale: (fmean(values), len(values)) for locale, values in grouped.items()}


class PairingError(ValueError):
    """Two test sets cannot be paired (no shared instance), or metrics disagree on the pairs."""


def instance_paired_delta(
    model: str, locale: str, flores: StatsTable, cultivar: StatsTable, metric: str
) -> PairDelta | None:
    """The instance-paired ∆ of one (model, locale) (module docstring); None if a side is absent.

    ``flores`` and ``cultivar`` map (model, test set) to per-segment statistics of ``metric``
    (one mapping may serve both).
    """
    language = get_locale(locale).source_language
    f = flores.get((model, flores_test_set_name(language)))
    c = cultivar.get((model, cultivar_test_set_name(locale)))
    if f is None or c is None:
        return None
    shared = np.intersect1d(c.ids, f.ids, assume_unique=True)
    if len(shared) == 0:
        raise PairingError(
            f"{model}: {cultivar_test_set_name(locale)} and {flores_test_set_name(language)} "
            "share no instance id"
        )
    name = f"{metric} statistics of {model}"
    original = float(scores_from_stats(metric, f.rows(shared, name).sum(axis=0)))
    localised = float(scores_from_stats(metric, c.rows(shared, name).sum(axis=0)))
    return PairDelta(model, locale, language, original, localised, len(shared),
                     len(c.ids) - len(shared))


def instance_paired_deltas(
    stats: StatsTable, models: Sequence[str], locales: Sequence[str], metric: str
) -> list[PairDelta]:
    """Instance-paired ∆ for every (model, locale) whose two test sets have statistics."""
    pairs = []
    for model in models:
        for locale in locales:
            pair = instance_paired_delta(model, locale, stats, stats, metric)
            if pair is not None:
                pairs.append(pair)
    return pairs


def join_metric_pairs(pairs: Mapping[str, Sequence[PairDelta]]) -> list[dict]:
    """One row per (model, locale) with ``flores_<metric>, cultivar_<metric>, delta_<metric>``
    for every metric, joined by key. A key present for one metric only, or a different
    ``n_instances`` between metrics, raises :class:`PairingError`."""
    by_key: dict[tuple[str, str], dict] = {}
    metrics = list(pairs)
    for metric in metrics:
        seen = set()
        for p in pairs[metric]:
            key = (p.model, p.locale)
            if key in seen:
                raise PairingError(f"{metric}: two pairs for {key}")
            seen.add(key)
            row = by_key.setdefault(key, {"model_id": p.model, "locale": p.locale,
                                          "language": p.language, "n_instances": p.n_instances,
                                          "_metrics": set()})
            if row["n_instances"] != p.n_instances:
                raise PairingError(
                    f"{key}: {metric} pairs {p.n_instances} instances, another metric "
                    f"{row['n_instances']}"
                )
            row[f"flores_{metric}"] = p.flores
            row[f"cultivar_{metric}"] = p.cultivar
            row[f"delta_{metric}"] = p.delta
            row["_metrics"].add(metric)
    rows = []
    for key in sorted(by_key):
        row = by_key[key]
        lacking = sorted(set(metrics) - row.pop("_metrics"))
        if lacking:
            raise PairingError(f"{key}: no {', '.join(lacking)} pair, but other metrics have one")
        rows.append(row)
    return rows


@dataclass(frozen=True)
class LocaleAverage:
    """Mean over locales of the per-locale mean ∆ (Table 4's Average row, our definition)."""

    mean: float | None
    n_locales: int


def locale_average(locale_means: Mapping[str, tuple[float, int]]) -> LocaleAverage:
    """Unweighted mean over locales of ``locale_mean_deltas`` values (module docstring: the
    paper's own aggregation of its Average row is unknown)."""
    values = [mean for mean, _ in locale_means.values()]
    return LocaleAverage(fmean(values) if values else None, len(values))
