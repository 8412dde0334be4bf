"""Scoring one model's translations: the configured metrics per test set (BLEU and chrF
by default) with their per-segment sufficient statistics (``raw.segment_stats``) or, for a
segment-score metric, its per-segment scores (``raw.segment_scores``), and the word-recall
counts of every localised instance.

Scores carry their sacreBLEU signature and the fingerprint of the dataset they were computed on
(the aggregates refuse to mix different ones, :mod:`cultivar_assets.evaluation.aggregates`).

:func:`compute_scores` takes the rows in memory and returns the rows (it reads and writes
nothing: the asset ``scores`` gives it the files of the storage root); :func:`score_model`
scores a model's translations stored in the database and writes its rows there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cultivar_assets.data.testsets import TestSet
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.scoring import HypothesisCountError, score_systems
from cultivar_assets.metrics.word_recall import InstanceRecall, instance_recall
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import (
    ScoreRows,
    dataset_fingerprint,
    read_test_sets,
    write_model_scores,
)


@dataclass(frozen=True)
class ModelScores:
    model_id: str
    scores: dict[tuple[str, str], float]  # (test_set, metric) -> score
    signatures: dict[str, str]  # metric -> signature
    recall: list[InstanceRecall]
    n_empty: int
    rows: ScoreRows  # the rows of the raw tables (store.records.ScoreRows)


def _hypotheses(model_id: str, translations: Sequence[dict],
                test_sets: Sequence[TestSet]) -> dict[str, list[str]]:
    if not translations:
        raise HypothesisCountError(f"no translations stored for model {model_id!r}")
    by_set: dict[str, dict[int, str]] = {}
    for row in translations:
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


def compute_scores(model_id: str, translations: Sequence[dict], run: dict,
                   test_sets: Sequence[TestSet], instances: Mapping[tuple[str, int], dict],
                   dataset_fingerprint: str, config: MetricConfig | None = None,
                   processes: int = 1) -> ModelScores:
    """Score one model's translations (rows of ``raw.translations``: test_set, segment_id,
    hypothesis) against ``test_sets``, with the word recall of every localised instance
    (``instances``: (locale, instance id) -> the instance's row); ``run``: its run record (a
    ``raw.model_runs`` row), whose dataset fingerprint must be ``dataset_fingerprint``.
    Returns the scores and the rows of the raw tables; writes nothing."""
    config = config or MetricConfig()
    if run["dataset_fingerprint"] != dataset_fingerprint:
        raise HypothesisCountError(
            f"{model_id}: its stored translations were made from another version of the data; "
            "re-materialise its translations before scoring"
        )
    hypotheses = _hypotheses(model_id, translations, test_sets)
    references = {t.name: [s.reference for s in t.segments] for t in test_sets}
    sources = {t.name: [s.source for s in t.segments] for t in test_sets}
    results = list(score_systems(references, {model_id: hypotheses}, config, processes,
                                 sources))
    by_name = {t.name: t for t in test_sets}
    score_rows, stats_rows, segment_score_rows = [], [], []
    for result in results:
        score_rows.append({
            "model_id": model_id, "test_set": result.test_set, "metric": result.metric,
            "score": result.score, "signature": result.signature,
            "tokenizer_sha256": result.tokenizer_sha256,
            "n_segments": len(result.segment_stats), "dataset_fingerprint": dataset_fingerprint,
            "translations_fingerprint": run["translations_fingerprint"],
        })
        segments = by_name[result.test_set].segments
        if result.kind == "segment scores":
            segment_score_rows += [
                {"model_id": model_id, "test_set": result.test_set, "segment_id": seg.segment_id,
                 "metric": result.metric, "score": float(score)}
                for seg, score in zip(segments, result.segment_stats, strict=True)
            ]
            continue
        stats_rows += [
            {"model_id": model_id, "test_set": result.test_set, "segment_id": seg.segment_id,
             "metric": result.metric, "stats": [int(x) for x in stats]}
            for seg, stats in zip(segments, result.segment_stats, strict=True)
        ]
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
    return ModelScores(
        model_id,
        {(r.test_set, r.metric): r.score for r in results},
        {r.metric: r.signature for r in results},
        recall,
        sum(1 for hyps in hypotheses.values() for h in hyps if not h.strip()),
        ScoreRows(score_rows, stats_rows, segment_score_rows,
                  [{"model_id": model_id, **vars(r)} for r in recall]),
    )


def score_model(store: Store, model_id: str, config: MetricConfig | None = None,
                processes: int = 1) -> ModelScores:
    """Score one model's translations stored in the database (:func:`compute_scores`) and
    replace its score rows there (:func:`cultivar_assets.store.records.write_model_scores`)."""
    fingerprint = dataset_fingerprint(store)
    runs = {r["model_id"]: r for r in store.query("model_fingerprints")}
    if model_id not in runs:
        raise HypothesisCountError(f"no translations stored for model {model_id!r}")
    result = compute_scores(
        model_id, store.query("model_translations", model_id=model_id), runs[model_id],
        read_test_sets(store),
        {(r["locale"], r["instance_id"]): r for r in store.query("instances")},
        fingerprint, config, processes)
    write_model_scores(store, model_id, result.rows)
    return result
