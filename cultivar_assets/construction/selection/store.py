"""Reading and writing the records of building Cultivar (``raw.selection_*`` tables)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa

from cultivar_assets.construction.selection.choice import SelectionResult
from cultivar_assets.data.source_benchmark import SourceBenchmark
from cultivar_assets.store.database import Store, WriteBlock

_LIST = pa.list_(pa.string())
INSTANCE_SCHEMA = pa.schema([
    ("instance_id", pa.int32()), ("english", pa.string()), ("domain", pa.string()),
    ("topic", pa.string()), ("topic_terms", _LIST), ("n_entities", pa.int32()),
    ("enough_entities", pa.bool_()), ("excluded_by", _LIST), ("candidate", pa.bool_()),
    ("selected", pa.bool_()), ("selected_by", pa.string()), ("selection_rank", pa.int32()),
    ("overrides", _LIST),
])
ENTITY_SCHEMA = pa.schema([
    ("instance_id", pa.int32()), ("start_char", pa.int32()), ("end_char", pa.int32()),
    ("text", pa.string()), ("label", pa.string()), ("origin", pa.string()),
    ("removed", pa.bool_()), ("counted", pa.bool_()), ("note", pa.string()),
])
RULE_SCHEMA = pa.schema([
    ("instance_id", pa.int32()), ("rule", pa.string()), ("excluded", pa.bool_()),
    ("value", pa.float64()), ("detail", pa.string()),
])


def write_selection(store: Store, result: SelectionResult, benchmark: SourceBenchmark) -> str:
    """Replace the stored selection (run, instances, entities, rule outcomes, sources)."""
    if result.source_fingerprint != benchmark.fingerprint():
        raise ValueError("the selection was not made from this source benchmark")
    labels = set(result.counted_labels)
    instances, entities, rules = [], [], []
    for inst in result.instances:
        instances.append({
            "instance_id": inst.instance_id, "english": inst.english, "domain": inst.domain,
            "topic": inst.topic, "topic_terms": list(inst.topic_terms),
            "n_entities": inst.counted, "enough_entities": inst.enough_entities,
            "excluded_by": list(inst.excluded_by), "candidate": inst.candidate,
            "selected": inst.selected, "selected_by": inst.selected_by,
            "selection_rank": inst.rank, "overrides": list(inst.overrides),
        })
        entities += [
            {"instance_id": inst.instance_id, "start_char": e.start, "end_char": e.end,
             "text": e.text, "label": e.label, "origin": e.origin, "removed": e.removed,
             "counted": not e.removed and e.label in labels, "note": e.note}
            for e in inst.entities
        ]
        rules += [
            {"instance_id": inst.instance_id, "rule": o.rule, "excluded": o.excluded,
             "value": o.value, "detail": o.detail}
            for o in inst.rules
        ]
    by_id = benchmark.by_id()
    sources = [
        {"instance_id": inst.instance_id, "language": language, "source": text}
        for inst in result.selected for language, text in by_id[inst.instance_id].sources.items()
    ]
    fingerprint = result.fingerprint()
    ner = result.ner
    run = {
        "fingerprint": fingerprint, "source_name": result.source_name,
        "source_description": result.source_description,
        "source_fingerprint": result.source_fingerprint, "is_demo": result.is_demo,
        "spacy_version": ner.spacy_version, "pipeline": ner.pipeline,
        "pipeline_version": ner.pipeline_version, "counted_labels": list(result.counted_labels),
        "config": json.dumps(result.config.model_dump(mode="json"), sort_keys=True),
        "corrections_file": result.corrections.path if result.corrections else None,
        "corrections_sha256": result.corrections.sha256 if result.corrections else None,
        "selection_file": result.manual.path if result.manual else None,
        "selection_sha256": result.manual.sha256 if result.manual else None,
        "counts": json.dumps(result.counts()), "notes": list(result.notes),
        "source_identity": json.dumps(dict(benchmark.identity), sort_keys=True),
        "created_at": datetime.now(UTC).replace(tzinfo=None),
    }
    table = pa.Table.from_pylist
    store.write([
        WriteBlock("replace_selection"),
        WriteBlock("insert_selection_run", rows=[run]),
        WriteBlock("insert_selection_instances", rows=table(instances, schema=INSTANCE_SCHEMA)),
        WriteBlock("insert_selection_entities", rows=table(entities, schema=ENTITY_SCHEMA)),
        WriteBlock("insert_selection_rule_outcomes", rows=table(rules, schema=RULE_SCHEMA)),
        WriteBlock("insert_selection_sources", rows=sources),
    ])
    return fingerprint


def read_selection_run(store: Store) -> dict:
    """The stored selection run (counts and config decoded); LookupError when there is none."""
    rows = store.query("selection_run")
    if not rows:
        raise LookupError(f"{store.path} holds no selection; materialise selected_instances first")
    run = dict(rows[0])
    run["counts"] = json.loads(run["counts"])
    run["config"] = json.loads(run["config"])
    return run


def read_selected_sources(store: Store) -> dict[int, dict]:
    """Selected instance id -> ``{"english": ..., "sources": {language: text}}``."""
    selected: dict[int, dict] = {}
    for row in store.query("selection_selected_sources"):
        item = selected.setdefault(row["instance_id"], {"english": row["english"], "sources": {}})
        if row["language"] is not None:
            item["sources"][row["language"]] = row["source"]
    return selected
