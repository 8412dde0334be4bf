"""Scoring a model's stored translations, and the cross-model aggregates (Tables 2-4).

Both read from and write to the DuckDB store. Scores carry their sacreBLEU signature and the
fingerprint of the dataset they were computed on; the aggregates refuse to mix scores with
different signatures or datasets (one table, one signature), naming the models to re-score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from cultivar_assets.data.testsets import TestSet
from cultivar_assets.metrics.delta import locale_mean_deltas, model_averages, pair_deltas
from cultivar_assets.metrics.rank_agreement import RankAgreement, rank_agreement
from cultivar_assets.metrics.sacrebleu_metrics import METRIC_NAMES, MetricConfig
from cultivar_assets.metrics.scoring import HypothesisCountError, score_systems
from cultivar_assets.metrics.word_recall import (
    InstanceRecall,
    instance_recall,
    locale_rates,
    model_rates,
)
from cultivar_assets.store.database import Step, Store
from cultivar_assets.store.records import dataset_fingerprint, read_test_sets


class AggregationError(RuntimeError):
    """Scores cannot be aggregated as they are (mixed signatures or datasets)."""


@dataclass(frozen=True)
class ModelScores:
    model_id: str
    scores: dict[tuple[str, str], float]  # (test_set, metric) -> score
    signatures: dict[str, str]  # metric -> signature
    recall: list[InstanceRecall]
    n_empty: int


def _hypotheses(store: Store, model_id: str, test_sets: Sequence[TestSet]) -> dict[str, list[str]]:
    rows = store.query("model_translations", model_id=model_id)
    if not rows:
        raise HypothesisCountError(f"no translations stored for model {model_id!r}")
    by_set: dict[str, dict[int, str]] = {}
    for row in rows:
        by_set.setdefault(row["test_set"], {})[row["segment_id"]] = row["hypothesis"]
    hypotheses = {}
    for test_set in test_sets:
        got = by_set.get(test_set.name, {})
        wanted = [s.segment_id for s in test_set.segments]
        if set(got) != set(wanted):
            raise HypothesisCountError(
                f"{model_id}: {len(got)} stored hypotheses for the {len(wanted)} segments of "
                f"{test_set.name}; re-materialise its translations"
            )
        hypotheses[test_set.name] = [got[i] for i in wanted]
    extra = set(by_set) - {t.name for t in test_sets}
    if extra:
        raise HypothesisCountError(
            f"{model_id}: translations for unknown test sets {sorted(extra)}"
        )
    return hypotheses


def score_model(store: Store, model_id: str, config: MetricConfig | None = None,
                processes: int = 1) -> ModelScores:
    """Score one model's stored translations and replace its score rows."""
    config = config or MetricConfig()
    fingerprint = dataset_fingerprint(store)
    runs = {r["model_id"]: r for r in store.query("model_fingerprints")}
    if model_id not in runs:
        raise HypothesisCountError(f"no translations stored for model {model_id!r}")
    if runs[model_id]["dataset_fingerprint"] != fingerprint:
        raise HypothesisCountError(
            f"{model_id}: its stored translations were made from another version of the data; "
            "re-materialise its translations before scoring"
        )
    test_sets = read_test_sets(store)
    hypotheses = _hypotheses(store, model_id, test_sets)
    references = {t.name: [s.reference for s in t.segments] for t in test_sets}
    results = list(score_systems(references, {model_id: hypotheses}, config, processes))
    by_name = {t.name: t for t in test_sets}
    score_rows, stats_rows = [], []
    for result in results:
        score_rows.append({
            "model_id": model_id, "test_set": result.test_set, "metric": result.metric,
            "score": result.score, "signature": result.signature,
            "tokenizer_sha256": result.tokenizer_sha256,
            "n_segments": len(result.segment_stats), "dataset_fingerprint": fingerprint,
            "translations_fingerprint": runs[model_id]["translations_fingerprint"],
        })
        segments = by_name[result.test_set].segments
        stats_rows += [
            {"model_id": model_id, "test_set": result.test_set, "segment_id": seg.segment_id,
             "metric": result.metric, "stats": [int(x) for x in stats]}
            for seg, stats in zip(segments, result.segment_stats, strict=True)
        ]
    instances = {(r["locale"], r["instance_id"]): r for r in store.query("instances")}
    recall = []
    for test_set in test_sets:
        if test_set.kind != "cultivar":
            continue
        for segment, hyp in zip(test_set.segments, hypotheses[test_set.name], strict=True):
            instance = instances[(test_set.locale, segment.segment_id)]
            if instance["english_original"] is None:
                continue
            recall.append(instance_recall(test_set.locale, segment.segment_id,
                                          instance["english_original"],
                                          instance["english_localised"], hyp))
    store.write([
        Step("delete_model_scores", {"model_id": model_id}),
        Step("insert_scores", rows=score_rows),
        Step("insert_segment_stats", rows=stats_rows),
        Step("insert_word_recall", rows=[{"model_id": model_id, **asdict(r)} for r in recall]),
    ])
    return ModelScores(
        model_id,
        {(r.test_set, r.metric): r.score for r in results},
        {r.metric: r.signature for r in results},
        recall,
        sum(1 for hyps in hypotheses.values() for h in hyps if not h.strip()),
    )


@dataclass(frozen=True)
class Aggregates:
    models: list[str]
    locales: list[str]
    signatures: dict[str, str]
    leaderboard: list[dict]
    locale_summary: list[dict]
    rank_agreement: list[RankAgreement]


def _check_consistency(rows: list[dict], fingerprint: str) -> dict[str, tuple[str, str | None]]:
    """metric -> (signature, tokenizer sha256) shared by every row; raises when they differ."""
    stale = sorted({r["model_id"] for r in rows if r["dataset_fingerprint"] != fingerprint})
    if stale:
        raise AggregationError(
            f"scores of {', '.join(stale)} were computed on another version of the data; "
            "re-materialise their translations and scores"
        )
    outdated = sorted({r["model_id"] for r in rows if not r["current"]})
    if outdated:
        raise AggregationError(
            f"scores of {', '.join(outdated)} were computed from earlier translations; "
            "materialise their scores"
        )
    found_by_metric: dict[str, tuple[str, str | None]] = {}
    for metric in METRIC_NAMES:
        found: dict[tuple[str, str | None], set[str]] = {}
        for r in rows:
            if r["metric"] == metric:
                found.setdefault((r["signature"], r["tokenizer_sha256"]), set()).add(r["model_id"])
        if len(found) > 1:
            detail = "; ".join(
                f"{sig}{f' (tokenizer model sha256 {sha[:16]})' if sha else ''}: "
                f"{', '.join(sorted(m))}" for (sig, sha), m in found.items())
            raise AggregationError(
                f"{metric} scores carry {len(found)} different signatures or tokenizer models and "
                f"are never mixed in one table ({detail}). Re-score the models with one metric "
                "configuration."
            )
        if found:
            found_by_metric[metric] = next(iter(found))
    return found_by_metric


def aggregate(store: Store, models: Sequence[str] | None = None) -> Aggregates:
    """Recompute ∆ per model and locale, Table 3/4 summaries and rank agreement."""
    fingerprint = dataset_fingerprint(store)
    rows = store.query("all_scores")
    if models is not None:
        rows = [r for r in rows if r["model_id"] in set(models)]
    if not rows:
        raise AggregationError("no scores to aggregate; materialise scores first")
    consistent = _check_consistency(rows, fingerprint)
    signatures = {metric: signature for metric, (signature, _) in consistent.items()}
    model_ids = sorted({r["model_id"] for r in rows})
    locales = sorted({t["locale"] for t in store.query("test_set_index") if t["locale"]})
    per_metric = {
        metric: {(r["model_id"], r["test_set"]): r["score"] for r in rows if r["metric"] == metric}
        for metric in METRIC_NAMES
    }
    pairs = {metric: pair_deltas(per_metric[metric], model_ids, locales) for metric in METRIC_NAMES}

    recall_rows = [r for r in store.query("all_word_recall") if r["model_id"] in set(model_ids)]
    delta_rows = [
        {"model_id": b.model, "locale": b.locale, "language": b.language,
         "flores_bleu": b.flores, "cultivar_bleu": b.cultivar, "delta_bleu": b.delta,
         "flores_chrf": c.flores, "cultivar_chrf": c.cultivar, "delta_chrf": c.delta}
        for b, c in zip(pairs["bleu"], pairs["chrf"], strict=True)
    ]
    summary, recall_table = [], []
    for model in model_ids:
        bleu = model_averages(per_metric["bleu"], model, pairs["bleu"])
        chrf = model_averages(per_metric["chrf"], model, pairs["chrf"])
        recall = [InstanceRecall(**{k: v for k, v in r.items() if k != "model_id"})
                  for r in recall_rows if r["model_id"] == model]
        rates = locale_rates(recall)
        recall_table += [{"model_id": model, "locale": locale, **asdict(r)}
                         for locale, r in sorted(rates.items())]
        fp, fn = model_rates(rates)
        summary.append({
            "model_id": model, "delta_bleu": bleu.mean_delta, "delta_chrf": chrf.mean_delta,
            "flores_bleu": bleu.flores_average, "flores_chrf": chrf.flores_average,
            "cultivar_bleu": bleu.cultivar_average, "cultivar_chrf": chrf.cultivar_average,
            "false_positive_rate": fp, "false_negative_rate": fn,
            "n_locale_pairs": bleu.n_pairs, "n_flores_test_sets": bleu.n_flores,
            "n_cultivar_test_sets": bleu.n_cultivar,
            "bleu_signature": signatures.get("bleu", ""),
            "chrf_signature": signatures.get("chrf", ""),
            "bleu_tokenizer_sha256": consistent.get("bleu", ("", None))[1],
        })
    bleu_locales = locale_mean_deltas(pairs["bleu"])
    chrf_locales = locale_mean_deltas(pairs["chrf"])
    locale_rows = [
        {"locale": loc, "delta_bleu": bleu_locales[loc][0], "delta_chrf": chrf_locales[loc][0],
         "n_models": bleu_locales[loc][1]}
        for loc in sorted(bleu_locales)
    ]
    agreement = [row for metric in METRIC_NAMES for row in rank_agreement(pairs[metric], metric)]
    store.write([
        Step("delete_aggregates"),
        Step("insert_model_locale_deltas", rows=delta_rows),
        Step("insert_locale_word_recall", rows=recall_table),
        Step("insert_model_summary", rows=summary),
        Step("insert_locale_summary", rows=locale_rows),
        Step("insert_rank_agreement", rows=[asdict(r) for r in agreement]),
    ])
    return Aggregates(model_ids, locales, signatures, store.query("leaderboard"), locale_rows,
                      agreement)
