"""flags.py: the contamination rules on the paper's reported Table 3 and on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest
from metrics_helpers import (
    PAIRED_LOCALES,
    paired_benchmark,
    reference_metrics,
    sacrebleu_segment_rows,
)
from pydantic import ValidationError

from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.flags import (
    DeltaOutlierRule,
    FlagConfig,
    ModelEvidence,
    NegativeShareRule,
    Value,
    apply_flags,
    evidence_from_bootstrap,
    evidence_from_reported,
    flag_rows,
    rule_texts,
)
from cultivar_assets.metrics.registry import score_functions, table_label
from cultivar_assets.metrics.segment_stats import SegmentStats
from cultivar_assets.models import load_models


def reported_table3():
    registry = load_models()
    specs = [registry.get(name) for name in registry]
    return {s.id: s.reported for s in specs if s.reported is not None}


def by_name(results):
    return {r.name: r for r in results}


def test_rules_on_the_papers_reported_table3():
    table3 = reported_table3()
    results = by_name(apply_flags(evidence_from_reported(table3), label=table_label))
    assert list(results) == ["delta_outlier_bleu", "delta_outlier_chrf", "negative_share_bleu",
                             "negative_share_chrf", "false_positive_outlier"]
    for metric, drop in (("bleu", -8), ("chrf", -5)):
        values = np.array([getattr(r, f"delta_{metric}") for r in table3.values()])
        median = np.median(values)
        threshold = median - 3 * 1.4826 * np.median(np.abs(values - median))
        rule = results[f"delta_outlier_{metric}"]
        assert rule.applied and "point estimate" in rule.reason
        expected = {m for m, r in table3.items() if getattr(r, f"delta_{metric}") < threshold}
        assert set(rule.fired_for) == expected
        # the paper's reading (§4.3): the two models with a drop of more than 8 BLEU / 5 chrF
        assert expected == {m for m, r in table3.items() if getattr(r, f"delta_{metric}") < drop}
        assert len(expected) == 2
        assert all(o.threshold == pytest.approx(threshold) and not o.used_interval
                   for o in rule.outcomes)
    for metric in ("bleu", "chrf"):
        rule = results[f"negative_share_{metric}"]
        assert not rule.applied and "no per-locale ∆" in rule.reason
        assert all(o.fired is None for o in rule.outcomes)
    fp = results["false_positive_outlier"]
    rates = np.array([r.false_positive_rate for r in table3.values()])
    median = np.median(rates)
    threshold = median + 3 * 1.4826 * np.median(np.abs(rates - median))
    assert fp.applied and fp.fired_for == [] and rates.max() < threshold
    assert fp.outcomes[0].threshold == pytest.approx(threshold)


def evidence_with_intervals(extra: list[ModelEvidence]) -> list[ModelEvidence]:
    rng = np.random.default_rng(0)
    base = []
    for i in range(12):
        point = float(rng.normal(0, 0.5))
        base.append(ModelEvidence(f"model_{i}", {"bleu": Value(point, point - 0.4, point + 0.4)},
                                  None, Value(0.01 + 0.001 * rng.normal(), 0.008, 0.012)))
    return base + extra


def test_delta_outlier_uses_the_interval_when_there_is_one():
    clear = ModelEvidence("clear", {"bleu": Value(-4.0, -6.0, -2.5)})
    unsure = ModelEvidence("unsure", {"bleu": Value(-3.0, -5.0, 0.5)})
    evidence = evidence_with_intervals([clear, unsure])
    config = FlagConfig(delta_outlier=DeltaOutlierRule(metrics=("bleu",)))
    rule = by_name(apply_flags(evidence, config, label=table_label))["delta_outlier_bleu"]
    assert rule.applied and rule.reason is None
    assert rule.fired_for == ["clear"]
    outcome = {o.model: o for o in rule.outcomes}
    assert outcome["unsure"].fired is False and outcome["unsure"].used_interval
    assert "upper end" in outcome["clear"].detail
    points_only = FlagConfig(delta_outlier=DeltaOutlierRule(metrics=("bleu",),
                                                            use_interval=False))
    rule = by_name(apply_flags(evidence, points_only, label=table_label))["delta_outlier_bleu"]
    assert rule.fired_for == ["clear", "unsure"]


def test_false_positive_outlier_with_intervals():
    high = ModelEvidence("high_fp", {"bleu": Value(0.0, -0.3, 0.3)}, None,
                         Value(0.05, 0.03, 0.07))
    wide = ModelEvidence("wide_fp", {"bleu": Value(0.0, -0.3, 0.3)}, None,
                         Value(0.05, 0.001, 0.09))
    rules = apply_flags(evidence_with_intervals([high, wide]), label=table_label)
    rule = by_name(rules)["false_positive_outlier"]
    assert rule.fired_for == ["high_fp"]


def locale_values(negative: int, total: int, below_zero: bool) -> dict[str, Value]:
    values = {}
    for i in range(total):
        if i < negative:
            values[f"l{i}"] = Value(-1.0, -1.5 if below_zero else -2.0,
                                    -0.5 if below_zero else 0.3)
        else:
            values[f"l{i}"] = Value(0.5, 0.1, 0.9)
    return values


def test_negative_share_with_and_without_intervals():
    evidence = [
        ModelEvidence("most_below", {}, {"bleu": locale_values(20, 27, True)}),
        ModelEvidence("most_negative_unsure", {}, {"bleu": locale_values(20, 27, False)}),
        ModelEvidence("half", {}, {"bleu": locale_values(13, 27, True)}),
        ModelEvidence("few_locales", {}, {"bleu": locale_values(2, 2, True)}),
    ]
    config = FlagConfig(negative_share=NegativeShareRule(metrics=("bleu",)))
    rule = by_name(apply_flags(evidence, config, label=table_label))["negative_share_bleu"]
    assert rule.applied and rule.fired_for == ["most_below"]
    outcome = {o.model: o for o in rule.outcomes}
    assert outcome["most_below"].value == pytest.approx(20 / 27)
    assert outcome["most_below"].detail.startswith("20 of 27 locales with interval below 0")
    assert outcome["most_negative_unsure"].value == 0
    assert outcome["half"].fired is False  # 13 of 27 is not more than half
    assert outcome["few_locales"].fired is None and "needs 3" in outcome["few_locales"].detail
    points = FlagConfig(negative_share=NegativeShareRule(metrics=("bleu",), use_interval=False))
    rule = by_name(apply_flags(evidence, points, label=table_label))["negative_share_bleu"]
    assert rule.fired_for == ["most_below", "most_negative_unsure"]


def test_rules_not_applied_with_too_few_models_or_zero_spread():
    few = [ModelEvidence(f"m{i}", {"bleu": Value(float(i))}) for i in range(4)]
    rule = by_name(apply_flags(few, label=table_label))["delta_outlier_bleu"]
    assert not rule.applied and "needs 5" in rule.reason
    same = [ModelEvidence(f"m{i}", {"bleu": Value(1.0)}) for i in range(6)]
    same.append(ModelEvidence("low", {"bleu": Value(-9.0)}))
    rule = by_name(apply_flags(same, label=table_label))["delta_outlier_bleu"]
    assert not rule.applied and "MAD is 0" in rule.reason
    assert all(o.fired is None for o in rule.outcomes)
    chrf = by_name(apply_flags(same, label=table_label))["delta_outlier_chrf"]
    assert not chrf.applied and "0 models have a value" in chrf.reason
    one = [ModelEvidence("m0", {"bleu": Value(1.0)})]
    assert "1 model has a value, the rule needs 5" in by_name(apply_flags(one, label=table_label))[
        "delta_outlier_bleu"].reason


def test_rule_texts_follow_the_configuration():
    config = FlagConfig(delta_outlier=DeltaOutlierRule(k=2.5, metrics=("chrf",)),
                        negative_share=NegativeShareRule(enabled=False))
    texts = rule_texts(config, label=table_label)
    assert list(texts) == ["delta_outlier_chrf", "false_positive_outlier"]
    assert "median − 2.5·MAD" in texts["delta_outlier_chrf"]
    assert "∆chrF" in texts["delta_outlier_chrf"]
    assert "More than 75%" in rule_texts(FlagConfig(
        negative_share=NegativeShareRule(min_share=0.75)), label=table_label)["negative_share_bleu"]
    with pytest.raises(ValidationError):
        FlagConfig(delta_outlier={"k": 3, "threshold": 1})
    with pytest.raises(ValueError, match="twice"):
        apply_flags([ModelEvidence("a"), ModelEvidence("a")], label=table_label)


def test_flags_on_a_bootstrap_result_use_its_intervals():
    metrics = reference_metrics("13a")
    models = tuple(f"m{i}" for i in range(6))
    references, hypotheses = paired_benchmark(9, models)
    raw = sacrebleu_segment_rows(metrics, references, hypotheses)
    stats = {m: {k: SegmentStats.build(*v) for k, v in t.items()} for m, t in raw.items()}
    result = paired_bootstrap(stats, models, list(PAIRED_LOCALES),
                              config=BootstrapConfig(n_replicates=100),
                              score_functions=score_functions(stats))
    evidence = {e.model: e for e in evidence_from_bootstrap(result)}
    e = evidence["m0"]
    assert set(e.locale_deltas["bleu"]) == set(PAIRED_LOCALES)
    assert e.mean_delta["bleu"].has_interval and e.false_positive_rate is None
    results = by_name(apply_flags(list(evidence.values()), label=table_label))
    share = results["negative_share_bleu"]
    assert share.applied and all(o.used_interval for o in share.outcomes)
    fp = results["false_positive_outlier"]
    assert not fp.applied and "0 models" in fp.reason
    rows = flag_rows(list(results.values()))
    assert len(rows) == len(results) * len(models)
    assert set(rows[0]) == {"rule", "rule_text", "applied", "model_id", "fired", "value",
                            "threshold", "used_interval", "detail", "note"}
