"""The built Cultivar dataset (paper §2.4): the confirmed final pairs, with their provenance.

:func:`build_dataset` checks each locale's ingested annotations (``raw.annotations``) against its
current drafts (every locale annotated, against exactly the current drafts hash, every item
confirmed), then writes the folder (``construction.dataset.folder``; replaced only when complete):
``<locale>.jsonl`` in the published format (``id``, ``locale``, ``source_original``,
``english_original``, ``source_localised``, ``english_localised``) plus ``action``, ``flagged``,
``draft_hash``, ``prompt_hash``, ``task_id``, ``annotator``, and the manifest
``.cultivar-build.json`` (kind ``cultivar-dataset``: demo or not, ``source_benchmark``, the
fingerprint, the time, ``provenance``: :func:`build_provenance`), which the data kind ``built``
reads; and, in one DuckDB transaction, ``raw.dataset_build`` (view ``dataset_build``),
``raw.built_instances`` (view ``instance_provenance``) and ``raw.built_table1`` (Table 1 of those
annotations, frozen, shown on the card when this build is evaluated). Final texts lose only their
surrounding whitespace. The fingerprint is the sha256 of the canonical JSON of every written row,
in locale and id order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cultivar_assets.construction.annotation.demo import DEMO_ANNOTATOR
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.selection.store import read_selection_run
from cultivar_assets.data.sources import BUILT_KIND
from cultivar_assets.engines.replay import recording_path
from cultivar_assets.files import file_sha256, replace_folder
from cultivar_assets.store.database import Store, WriteBlock

PROVENANCE_COLUMNS = ("action", "flagged", "draft_hash", "prompt_hash", "task_id", "annotator")


@dataclass(frozen=True)
class BuiltDataset:
    folder: Path
    fingerprint: str
    is_demo: bool
    source: str
    rows: dict[str, list[dict[str, Any]]]  # locale -> rows, by id
    table1: list[dict[str, Any]]  # annotation_summary rows of the locales

    def actions(self) -> dict[str, dict[str, int]]:
        return {locale: {a: sum(r["action"] == a for r in rows)
                         for a in ("kept", "edited", "reverted")}
                for locale, rows in self.rows.items()}


def _locale_rows(store: Store, locale: str, headers: dict[str, dict]) -> list[dict[str, Any]]:
    run = store.query("localisation_run", locale=locale)
    if not run:
        raise ConstructionError(f"dataset: {locale} has no drafts; localise it first "
                                "(asset localised_drafts, or cultivar build localise)")
    header = headers.get(locale)
    annotations = store.query("locale_annotations", locale=locale)
    if header is None or not annotations:
        raise ConstructionError(
            f"dataset: no annotations of {locale} are ingested; post-edit its drafts with the "
            "tool (cultivar build tools) and hand in the file (cultivar build ingest FILE, or "
            "materialise annotations)")
    if header["drafts_hash"] != run[0]["drafts_hash"]:
        raise ConstructionError(
            f"dataset: the annotations of {locale} (task {header['task_id']}, file "
            f"{header['file_name']}) were made against other drafts than the current ones (task "
            f"{run[0]['task_id']}): the drafts were localised again since. Post-edit the current "
            "drafts (cultivar build tools) and hand in that file, or restore the localisation "
            "settings the file was made with")
    unconfirmed = [a["instance_id"] for a in annotations if not a["confirmed"]]
    if unconfirmed:
        raise ConstructionError(f"dataset: {locale} has unconfirmed annotations: {unconfirmed}")
    return [{
        "id": a["instance_id"], "locale": locale,
        "source_original": a["source_original"], "english_original": a["english_original"],
        "source_localised": a["source_final"].strip(),
        "english_localised": a["english_final"].strip(),
        "action": a["action"], "flagged": a["flagged"], "draft_hash": a["draft_hash"],
        "prompt_hash": a["prompt_hash"], "task_id": header["task_id"],
        "annotator": header["annotator"],
        "_draft": (a["source_draft"], a["english_draft"]),
    } for a in annotations]


def _public(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def dataset_fingerprint(rows: dict[str, list[dict[str, Any]]]) -> str:
    payload = [[_public(r) for r in rows[locale]] for locale in sorted(rows)]
    blob = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def _timestamp(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec="seconds") + "Z" if isinstance(value, datetime) else str(value)


def _json(value: Any) -> Any:
    """A JSON column of ours; None when the column is NULL (written before it existed)."""
    return json.loads(value) if isinstance(value, str) else None


def _recorded_from(run: dict[str, Any]) -> dict[str, Any] | None:
    """For the ``replay`` engine: what its recording says it was recorded with, when the
    recording is still the one the run played back (its sha256 is in the engine version)."""
    options = _json(run.get("engine_options")) or {}
    if run.get("engine") != "replay" or not isinstance(options.get("answers"), str):
        return None
    path = recording_path(options["answers"])
    version = str(run.get("engine_version") or "")
    try:
        if not version.endswith(file_sha256(path)[:16]):
            return None
        recorded = json.loads(path.read_text("utf-8")).get("recorded_from")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(recorded, dict):
        return None
    return {k: recorded.get(k) for k in ("engine", "model", "revision", "weights")}


def _selection_record(selection: dict[str, Any]) -> dict[str, Any]:
    config, counts = selection.get("config") or {}, selection.get("counts") or {}
    return {
        "spacy_version": selection["spacy_version"], "pipeline": selection["pipeline"],
        "pipeline_version": selection["pipeline_version"],
        "counted_labels": list(selection["counted_labels"]),
        "min_entities": config.get("min_entities"),
        "rules": [{"rule": rule, "excluded": counts.get(f"excluded_by_{rule}")}
                  for rule in config.get("rules", [])],
        "corrections_file": selection.get("corrections_file"),
        "corrections_sha256": selection.get("corrections_sha256"),
        "selection_file": selection.get("selection_file"),
        "selection_sha256": selection.get("selection_sha256"),
        "n_requested": config.get("n"), "counts": counts, "fingerprint": selection["fingerprint"],
        "created_at": _timestamp(selection.get("created_at")),
    }


def _localisation_record(run: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: run.get(k) for k in ("task_id", "engine", "engine_version", "model",
                                   "model_revision", "prompt_name", "prompt_hash",
                                   "max_new_tokens", "max_attempts", "n_drafts", "n_flagged")},
        "engine_options": _json(run.get("engine_options")),
        "recorded_from": _recorded_from(run), "created_at": _timestamp(run.get("created_at")),
    }


def source_identity(selection: dict[str, Any]) -> dict[str, Any]:
    """The source benchmark's identity as the selection recorded it (``source_identity``), with
    its name, description and fingerprint; ``kind`` None when the selection predates it."""
    identity = _json(selection.get("source_identity")) or {"kind": None}
    return {**identity, "name": selection.get("source_name"),
            "description": selection.get("source_description"),
            "fingerprint": selection.get("source_fingerprint")}


def build_provenance(store: Store, selection: dict[str, Any],
                     rows: dict[str, list[dict[str, Any]]], headers: dict[str, dict],
                     fingerprint: str, built_at: datetime) -> dict[str, Any]:
    """How this build was made, from the stored records (``selection_runs``,
    ``localisation_runs``, ``annotation_files``) and the built rows: the source benchmark, the
    selection (spaCy and pipeline, counted labels, rules and how many each excluded, the
    corrections and selection files, counts), per locale the localiser (engine, model, revision,
    engine version, prompt template and hash, decoding options, date; for ``replay`` what the
    recording says it was recorded with) and the annotation file (task, annotator label, tool
    version, counts per action, dates), and per locale the number of instances. A value the
    records lack is None ("not recorded" where shown)."""
    localisation = {locale: _localisation_record(store.query("localisation_run",
                                                             locale=locale)[0])
                    for locale in rows}
    annotation = {}
    for locale, items in rows.items():
        header = headers[locale]
        annotation[locale] = {
            **{k: header.get(k) for k in ("task_id", "annotator", "tool_version", "file_name",
                                          "file_sha256", "n_items")},
            "saved_at": _timestamp(header.get("saved_at")),
            "ingested_at": _timestamp(header.get("ingested_at")),
            "actions": {a: sum(r["action"] == a for r in items)
                        for a in ("kept", "edited", "reverted")},
            "demo_file": header.get("annotator") == DEMO_ANNOTATOR,
        }
    return {
        "source_benchmark": source_identity(selection),
        "selection": _selection_record(selection),
        "localisation": localisation,
        "annotation": annotation,
        "dataset": {"n_instances": {locale: len(items) for locale, items in rows.items()},
                    "fingerprint": fingerprint, "built_at": _timestamp(built_at),
                    "is_demo": bool(selection["is_demo"])},
    }


def build_dataset(store: Store, folder: Path, locales: Sequence[str]) -> BuiltDataset:
    """Check the annotations of ``locales``, then write the folder and the records (module
    docstring); nothing is written when a locale fails a check."""
    if not locales:
        raise ConstructionError("dataset: no locales to build")
    if not store.path.exists():
        raise ConstructionError(f"dataset: {store.path} does not exist; build the selection, "
                                "the drafts and the annotations first")
    selection = read_selection_run(store)
    headers = {h["locale"]: h for h in store.query("annotation_file_headers")}
    rows = {locale: _locale_rows(store, locale, headers) for locale in locales}
    fingerprint = dataset_fingerprint(rows)
    is_demo = bool(selection["is_demo"])
    built_at = datetime.now(UTC).replace(tzinfo=None)
    folder = Path(folder)

    def write(work: Path) -> None:
        for locale, items in rows.items():
            with (work / f"{locale}.jsonl").open("w", encoding="utf-8") as handle:
                for row in items:
                    handle.write(json.dumps(_public(row), ensure_ascii=False) + "\n")

    instances = [{
        "locale": r["locale"], "instance_id": r["id"], "source_original": r["source_original"],
        "english_original": r["english_original"], "source_draft": r["_draft"][0],
        "english_draft": r["_draft"][1], "flagged": r["flagged"],
        "source_localised": r["source_localised"], "english_localised": r["english_localised"],
        **{k: r[k] for k in ("action", "draft_hash", "prompt_hash", "task_id", "annotator")},
    } for items in rows.values() for r in items]
    provenance = build_provenance(store, selection, rows, headers, fingerprint, built_at)
    build = {"fingerprint": fingerprint, "folder": str(folder.resolve()), "is_demo": is_demo,
             "source": selection["source_description"], "locales": list(rows),
             "n_instances": len(instances), "built_at": built_at,
             "provenance": json.dumps(provenance, ensure_ascii=False, sort_keys=True)}
    replace_folder(folder, write, manifest={
        "kind": BUILT_KIND, "fingerprint": fingerprint, "is_demo": is_demo,
        "source": selection["source_description"],
        "source_benchmark": provenance["source_benchmark"], "locales": list(rows),
        "built_at": built_at.isoformat(timespec="seconds") + "Z", "provenance": provenance,
        "columns": ["id", "locale", "source_original", "english_original", "source_localised",
                    "english_localised", *PROVENANCE_COLUMNS]})
    store.write([
        WriteBlock("replace_dataset_build"),
        WriteBlock("insert_dataset_build", rows=[build]),
        WriteBlock("insert_built_instances", rows=instances),
        WriteBlock("insert_built_table1", {"locales": list(rows)}),
    ])
    table1 = [r for r in store.query("annotation_summary") if r["locale"] in rows]
    return BuiltDataset(folder, fingerprint, is_demo, selection["source_description"],
                        {k: [_public(r) for r in v] for k, v in rows.items()}, table1)
