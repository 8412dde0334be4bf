"""Contamination and robustness flags: explicit, configurable rules.

The paper (§4.3) reads possible FLORES contamination from (1) a large negative ∆ in most
translation directions and (2) false-positive recall of original FLORES terms; (3) §5's "many
errors but a high BLEU" needs human error counts and is not a rule here. The first two become
rules over the evaluated models — no model is named anywhere; a rule fires on numbers alone.
Every rule is *relative to the models evaluated together*, so its outcome changes when the set of
models does.

Robust spread (ours): ``MAD = 1.4826 · median_i |x_i − median(x)|`` over the models with a
value (the factor makes MAD estimate the standard deviation of normally distributed values).

Rules (names as reported; parameters in :class:`FlagConfig`; the rules' form and defaults —
k = 3, more than half of the locales, at least 5 models — are ours):

- ``delta_outlier_<metric>`` (metric ∈ ``delta_outlier.metrics``): the model's mean pairwise
  ∆ is below ``median − k · MAD`` of all models' mean ∆. With intervals (``use_interval``), the
  whole interval must lie below the threshold (its upper end ``< threshold``).
- ``negative_share_<metric>``: more than ``min_share`` of the model's locales have ∆ < 0; with
  intervals, only locales whose ∆ interval lies entirely below 0 count. Needs per-locale ∆.
- ``false_positive_outlier``: the model's false-positive rate is above ``median + k · MAD`` of all
  models' FP rates; with intervals, the whole interval (its lower end) must lie above.

A rule is *not applied* (``fired`` None, with the reason) when its input is missing (e.g. the
paper's Table 3 has no per-locale ∆), when fewer than ``min_models`` models have a value, or when
MAD is 0. When intervals are asked for but the data has none (reported figures), the point
estimate is compared and the outcome says so (``used_interval`` False).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cultivar_assets.metrics.registry import PAPER_METRICS
from cultivar_assets.tables import count

if TYPE_CHECKING:
    from cultivar_assets.metrics.bootstrap import BootstrapResult

MAD_SCALE = 1.4826


class DeltaOutlierRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    metrics: tuple[str, ...] = PAPER_METRICS
    k: float = Field(3.0, gt=0)
    min_models: int = Field(5, ge=3)
    use_interval: bool = True


class NegativeShareRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    metrics: tuple[str, ...] = PAPER_METRICS
    min_share: float = Field(0.5, ge=0, lt=1)
    min_locales: int = Field(3, ge=1)
    use_interval: bool = True


class FalsePositiveOutlierRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    k: float = Field(3.0, gt=0)
    min_models: int = Field(5, ge=3)
    use_interval: bool = True


class FlagConfig(BaseModel):
    """Parameters of the three rule families (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    delta_outlier: DeltaOutlierRule = DeltaOutlierRule()
    negative_share: NegativeShareRule = NegativeShareRule()
    false_positive_outlier: FalsePositiveOutlierRule = FalsePositiveOutlierRule()


@dataclass(frozen=True)
class Value:
    """A figure with its interval when one exists."""

    point: float
    low: float | None = None
    high: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None


@dataclass(frozen=True)
class ModelEvidence:
    """What the rules look at for one model; None/empty where the source has no such figure."""

    model: str
    mean_delta: Mapping[str, Value] = field(default_factory=dict)  # metric -> mean pairwise ∆
    locale_deltas: Mapping[str, Mapping[str, Value]] | None = None  # metric -> locale -> ∆
    false_positive_rate: Value | None = None


@dataclass(frozen=True)
class FlagOutcome:
    model: str
    fired: bool | None  # None: the rule could not be applied to this model
    value: float | None  # the figure compared (mean ∆, share of locales, FP rate)
    threshold: float | None
    used_interval: bool
    detail: str


@dataclass(frozen=True)
class RuleResult:
    name: str
    text: str  # the rule, with its parameters
    applied: bool
    reason: str | None  # why it was not applied, or what was substituted
    outcomes: tuple[FlagOutcome, ...]

    @property
    def fired_for(self) -> list[str]:
        return [o.model for o in self.outcomes if o.fired]


def robust_center(values: Sequence[float]) -> tuple[float, float]:
    """(median, MAD scaled by 1.4826)."""
    x = np.asarray(values, dtype=np.float64)
    median = float(np.median(x))
    return median, MAD_SCALE * float(np.median(np.abs(x - median)))


def _not_applied(name: str, text: str, reason: str, models: Iterable[str]) -> RuleResult:
    return RuleResult(name, text, False, reason, tuple(
        FlagOutcome(m, None, None, None, False, reason) for m in models))


def _outlier_rule(name: str, text: str, values: Mapping[str, Value | None], models: Sequence[str],
                  k: float, min_models: int, use_interval: bool, below: bool) -> RuleResult:
    present = {m: v for m, v in values.items() if v is not None}
    if len(present) < min_models:
        has = "has" if len(present) == 1 else "have"
        return _not_applied(name, text, f"{count(len(present), 'model')} {has} a value, the rule "
                            f"needs {min_models}", models)
    median, mad = robust_center([v.point for v in present.values()])
    if mad == 0:
        return _not_applied(name, text, "MAD is 0 (at least half the models have the same "
                            "value)", models)
    threshold = median - k * mad if below else median + k * mad
    lacking = use_interval and not all(v.has_interval for v in present.values())
    outcomes = []
    for model in models:
        v = present.get(model)
        if v is None:
            outcomes.append(FlagOutcome(model, None, None, threshold, False, "no value"))
            continue
        with_interval = use_interval and v.has_interval
        compared = (v.high if below else v.low) if with_interval else v.point
        fired = compared < threshold if below else compared > threshold
        side = "upper end" if below else "lower end"
        what = f"interval {side} {compared:.4g}" if with_interval else f"value {compared:.4g}"
        outcomes.append(FlagOutcome(
            model, bool(fired), v.point, threshold, with_interval,
            f"{what} {'<' if below else '>'} {threshold:.4g}" if fired
            else f"{what} not {'below' if below else 'above'} {threshold:.4g}"))
    reason = ("no intervals in the data: the point estimate is compared with the threshold"
              if lacking else None)
    return RuleResult(name, text, True, reason, tuple(outcomes))


def _share_rule(name: str, text: str, evidence: Sequence[ModelEvidence], metric: str,
                rule: NegativeShareRule) -> RuleResult:
    models = [e.model for e in evidence]
    if all(e.locale_deltas is None or metric not in e.locale_deltas for e in evidence):
        return _not_applied(name, text, "no per-locale ∆ in the data", models)
    outcomes, lacking = [], False
    for e in evidence:
        per_locale = (e.locale_deltas or {}).get(metric) or {}
        if len(per_locale) < rule.min_locales:
            outcomes.append(FlagOutcome(e.model, None, None, rule.min_share, False,
                                        f"{len(per_locale)} locales, the rule needs "
                                        f"{rule.min_locales}"))
            continue
        with_interval = rule.use_interval and all(v.has_interval for v in per_locale.values())
        lacking |= rule.use_interval and not with_interval
        negative = [loc for loc, v in per_locale.items()
                    if (v.high < 0 if with_interval else v.point < 0)]
        share = len(negative) / len(per_locale)
        fired = share > rule.min_share
        how = "interval below 0" if with_interval else "∆ < 0"
        outcomes.append(FlagOutcome(
            e.model, fired, share, rule.min_share, with_interval,
            f"{len(negative)} of {len(per_locale)} locales with {how} ({share:.0%})"))
    reason = ("some models have no per-locale intervals: their point estimates are compared"
              if lacking else None)
    return RuleResult(name, text, True, reason, tuple(outcomes))


def rule_texts(config: FlagConfig | None = None, *, label: Callable[[str], str]
               ) -> dict[str, str]:
    """Rule name -> its text with the configured parameters (enabled rules only); ``label``
    names a metric in the texts (e.g. ``registry.table_label``: ``bleu`` -> ``BLEU``)."""
    config = config or FlagConfig()
    texts = {}
    d, s, f = config.delta_outlier, config.negative_share, config.false_positive_outlier
    if d.enabled:
        for metric in d.metrics:
            texts[f"delta_outlier_{metric}"] = (
                f"Mean pairwise ∆{label(metric)} below median − {d.k:g}·MAD of all evaluated "
                "models (MAD scaled by 1.4826)"
                + ("; with intervals, the whole interval below it" if d.use_interval else ""))
    if s.enabled:
        for metric in s.metrics:
            texts[f"negative_share_{metric}"] = (
                f"More than {s.min_share:.0%} of the model's locales have ∆{label(metric)} < 0"
                + ("; with intervals, counting only intervals entirely below 0"
                   if s.use_interval else ""))
    if f.enabled:
        texts["false_positive_outlier"] = (
            f"False-positive rate above median + {f.k:g}·MAD of all evaluated models "
            "(MAD scaled by 1.4826)"
            + ("; with intervals, the whole interval above it" if f.use_interval else ""))
    return texts


def apply_flags(evidence: Sequence[ModelEvidence], config: FlagConfig | None = None, *,
                label: Callable[[str], str]) -> list[RuleResult]:
    """Every enabled rule applied to ``evidence`` (one entry per model evaluated together);
    ``label`` names a metric in the rules' texts (:func:`rule_texts`)."""
    config = config or FlagConfig()
    names = [e.model for e in evidence]
    if len(set(names)) != len(names):
        raise ValueError("apply_flags: a model occurs twice in the evidence")
    texts = rule_texts(config, label=label)
    results = []
    d = config.delta_outlier
    if d.enabled:
        for metric in d.metrics:
            name = f"delta_outlier_{metric}"
            results.append(_outlier_rule(
                name, texts[name], {e.model: e.mean_delta.get(metric) for e in evidence},
                names, d.k, d.min_models, d.use_interval, below=True))
    s = config.negative_share
    if s.enabled:
        for metric in s.metrics:
            name = f"negative_share_{metric}"
            results.append(_share_rule(name, texts[name], evidence, metric, s))
    f = config.false_positive_outlier
    if f.enabled:
        name = "false_positive_outlier"
        results.append(_outlier_rule(
            name, texts[name], {e.model: e.false_positive_rate for e in evidence}, names,
            f.k, f.min_models, f.use_interval, below=False))
    return results


def _optional(values) -> list[float | None]:
    """The values as floats, None where NaN (``bootstrap.Estimate``'s convention)."""
    return [None if v != v else v for v in np.asarray(values, dtype=np.float64).tolist()]


def evidence_from_bootstrap(result: BootstrapResult) -> list[ModelEvidence]:
    """Evidence with intervals from a :class:`~cultivar_assets.metrics.bootstrap.BootstrapResult`
    (models without a mean ∆ keep empty fields)."""
    mean_of: dict[str, dict[str, Value]] = {}  # model -> metric -> its mean ∆
    locale_of: dict[str, dict[str, dict[str, Value]]] = {}  # metric -> model -> locale -> ∆
    for metric in result.metrics:
        mean = result[f"model_delta_{metric}"]
        for model, value, low, high in zip(mean.keys, *map(_optional, (mean.point,
                                                                     *mean.interval())),
                                           strict=True):
            if value is not None:
                mean_of.setdefault(model, {})[metric] = Value(value, low, high)
        pairs = result[f"pair_delta_{metric}"]
        per_model = locale_of.setdefault(metric, {})
        for key, value, low, high in zip(pairs.keys, *map(_optional, (pairs.point,
                                                                      *pairs.interval())),
                                         strict=True):
            per_model.setdefault(key[0], {})
            if value is not None:
                per_model[key[0]][key[1]] = Value(value, low, high)
    fp = result.quantities.get("model_false_positive_rate")
    rates = (dict(zip(fp.keys, zip(*map(_optional, (fp.point, *fp.interval())), strict=True),
                      strict=True)) if fp is not None else {})
    evidence = []
    for model in result.models:
        rate = rates.get(model)
        evidence.append(ModelEvidence(
            model, {m: v for m in result.metrics
                    for v in [mean_of.get(model, {}).get(m)] if v is not None},
            {metric: locale_of[metric].get(model, {}) for metric in result.metrics},
            Value(*rate) if rate is not None and rate[0] is not None else None))
    return evidence


def evidence_from_reported(reported: Mapping[str, object]) -> list[ModelEvidence]:
    """Evidence from the paper's Table 3 (model id -> ``models.ReportedResults``): mean ∆ and FP
    rate without intervals, no per-locale ∆."""
    return [
        ModelEvidence(model, {m: Value(getattr(r, f"delta_{m}")) for m in PAPER_METRICS}, None,
                      Value(r.false_positive_rate))
        for model, r in reported.items()
    ]


def flag_rows(results: Sequence[RuleResult]) -> list[dict]:
    """One row per (rule, model) for a table: rule, rule_text, applied, fired, value, threshold,
    used_interval, detail, note."""
    return [
        {"rule": r.name, "rule_text": r.text, "applied": r.applied, "model_id": o.model,
         "fired": o.fired, "value": o.value, "threshold": o.threshold,
         "used_interval": o.used_interval, "detail": o.detail, "note": r.reason}
        for r in results for o in r.outcomes
    ]
