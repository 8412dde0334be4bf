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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name, get_locale

Scores = Mapping[tuple[str, str], float]  # (model, test set) -> score


@dataclass(frozen=True)
class PairDelta:
    model: str
    locale: str
    language: str
    flores: float
    cultivar: float

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
