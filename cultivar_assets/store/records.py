"""Reading and writing the pipeline's records: core objects <-> rows of the raw tables."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

from cultivar_assets.data.locales import all_locales
from cultivar_assets.data.testsets import BenchmarkData, Segment, TestSet
from cultivar_assets.secrets import redact
from cultivar_assets.specs import REPORTED_SOURCE, ModelSpec
from cultivar_assets.store.database import Step, Store
from cultivar_assets.translation import TranslationRun


def write_dataset(store: Store, data: BenchmarkData) -> str:
    """Replace the stored dataset (locales, instances, segments, missing items)."""
    fingerprint = data.fingerprint()
    segments = [
        {"test_set": t.name, "kind": t.kind, "language": t.language, "locale": t.locale,
         "segment_id": s.segment_id, "source": s.source, "reference": s.reference}
        for t in data.test_sets() for s in t.segments
    ]
    instances = [
        {k: v for k, v in asdict(row).items()} for rows in data.instances.values() for row in rows
    ]
    locales = [
        {"locale": loc.key, **{k: v for k, v in asdict(loc).items() if k != "key"}}
        for loc in all_locales()
    ]
    provenance = (json.dumps(data.build_provenance, ensure_ascii=False, sort_keys=True)
                  if data.build_provenance is not None else None)
    dataset = [{"fingerprint": fingerprint, "source": data.source, "is_demo": data.is_demo,
                "notes": list(data.notes), "loaded_at": datetime.now(UTC).replace(tzinfo=None),
                "kind": data.kind, "build_provenance": provenance}]
    store.write([
        Step("replace_dataset"),
        Step("insert_locales", rows=locales),
        Step("insert_dataset", rows=dataset),
        Step("insert_instances", rows=instances),
        Step("insert_segments", rows=segments),
        Step("insert_missing", rows=[asdict(m) for m in data.missing]),
    ])
    return fingerprint


def dataset_fingerprint(store: Store) -> str:
    rows = store.query("dataset")
    if not rows:
        raise LookupError(f"{store.path} holds no dataset; materialise test_sets first")
    return rows[0]["fingerprint"]


def read_test_sets(store: Store) -> list[TestSet]:
    grouped: dict[str, list[dict]] = {}
    for row in store.query("test_set_segments"):
        grouped.setdefault(row["test_set"], []).append(row)
    return [
        TestSet(name, rows[0]["kind"], rows[0]["language"], rows[0]["locale"],
                tuple(Segment(r["segment_id"], r["source"], r["reference"]) for r in rows))
        for name, rows in grouped.items()
    ]


def write_translations(store: Store, run: TranslationRun, dataset_fingerprint: str) -> None:
    """Replace a model's translations, its run record and its registry entry (its engine
    options stored with every registered secret redacted: ``secrets.redact``)."""
    spec = run.model
    model_row = {
        "model_id": spec.id, "hf_id": spec.hf_id, "revision": spec.revision,
        "weights": spec.weights, "type": spec.type, "family": spec.family,
        "params_total_b": spec.params_total_b, "params_active_b": spec.params_active_b,
        "engine": spec.engine, "prompt_style": spec.prompt_style,
        "engine_options": redact(json.dumps(spec.engine_options, sort_keys=True)),
        "license": spec.license,
    }
    run_row = {
        "model_id": spec.id, "dataset_fingerprint": dataset_fingerprint,
        "model_fingerprint": run.fingerprint, "engine": run.info.engine,
        "engine_version": run.info.engine_version, "model_revision": run.info.model_revision,
        "prompt_template_hash": run.prompt_template_hash,
        "chat_template_hash": run.info.chat_template_hash, "n_segments": len(run.rows),
        "n_generated": run.n_generated, "n_cached": run.n_cached,
        "n_empty": sum(1 for r in run.rows if not r.hypothesis),
        "seconds": run.seconds, "finished_at": datetime.now(UTC).replace(tzinfo=None),
        "translations_fingerprint": run.translations_fingerprint,
    }
    translations = [
        {"model_id": r.model_id, "test_set": r.test_set, "segment_id": r.segment_id,
         "source": r.source, "reference": r.reference, "hypothesis": r.hypothesis,
         "raw_output": r.raw_output, "cleaning_rules": list(r.cleaning_rules)}
        for r in run.rows
    ]
    params = {"model_id": spec.id}
    store.write([
        Step("delete_model_translations", params),
        Step("insert_models", rows=[model_row]),
        Step("insert_model_runs", rows=[run_row]),
        Step("insert_translations", rows=translations),
    ])


def write_reported_results(store: Store, specs: list[ModelSpec]) -> int:
    """Replace the paper's reported figures with those of the registry entries that have them."""
    rows = [
        {"model_id": spec.id, "type": spec.type, "family": spec.family,
         "params_total_b": spec.params_total_b, "params_active_b": spec.params_active_b,
         **spec.reported.model_dump(), "source": REPORTED_SOURCE}
        for spec in specs if spec.reported is not None
    ]
    store.write([Step("delete_reported_results"), Step("insert_reported_results", rows=rows)])
    return len(rows)


def remove_model_rows(store: Store, model_id: str) -> dict[str, int]:
    """Delete every row of ``model_id`` from the raw tables keyed by model (``delete_model_rows``,
    one transaction); returns the rows removed per table (tables with none left out). The results
    computed across models are recomputed by the next results step (sql/writes.sql)."""
    counts = {row["table_name"]: row["n"]
              for row in store.query("model_stored_rows", model_id=model_id) if row["n"]}
    if counts:
        store.write([Step("delete_model_rows", {"model_id": model_id})])
    return counts
