"""Reading and writing the pipeline's records: core objects <-> rows of the raw tables."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from cultivar_assets.data.locales import all_locales
from cultivar_assets.data.testsets import BenchmarkData, Segment, TestSet
from cultivar_assets.secrets import redact
from cultivar_assets.specs import REPORTED_SOURCE, ModelSpec
from cultivar_assets.store.database import Store, WriteBlock
from cultivar_assets.store.model_files import (
    Document,
    ModelFilesError,
    model_folder,
    model_folder_names,
    read_document,
    run_record,
    scores_path,
    split_run_record,
    test_sets_path,
    translations_path,
    write_document,
)
from cultivar_assets.translation import TranslationRun


@dataclass(frozen=True)
class ScoreRows:
    """One model's score rows, as the raw tables hold them: ``raw.scores`` (with signatures),
    ``raw.segment_stats``, ``raw.segment_scores`` and ``raw.word_recall``."""

    scores: list[dict]
    segment_stats: list[dict]
    segment_scores: list[dict]
    word_recall: list[dict]


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
        WriteBlock("replace_dataset"),
        WriteBlock("insert_locales", rows=locales),
        WriteBlock("insert_dataset", rows=dataset),
        WriteBlock("insert_instances", rows=instances),
        WriteBlock("insert_segments", rows=segments),
        WriteBlock("insert_missing", rows=[asdict(m) for m in data.missing]),
    ])
    return fingerprint


def dataset_fingerprint(store: Store) -> str:
    rows = store.query("dataset")
    if not rows:
        raise LookupError(f"{store.path} holds no dataset; materialise test_sets first")
    return rows[0]["fingerprint"]


def read_test_sets(store: Store) -> list[TestSet]:
    return rows_to_test_sets(store.query("test_set_segments"))


def rows_to_test_sets(rows: Iterable[dict]) -> list[TestSet]:
    """Test sets from segment rows (``test_set_segments``' columns), in the rows' order."""
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(row["test_set"], []).append(row)
    return [
        TestSet(name, rows[0]["kind"], rows[0]["language"], rows[0]["locale"],
                tuple(Segment(r["segment_id"], r["source"], r["reference"]) for r in rows))
        for name, rows in grouped.items()
    ]


def translation_rows(run: TranslationRun, dataset_fingerprint: str
                     ) -> tuple[dict, dict, list[dict]]:
    """A translation run as the rows of ``raw.models`` (its registry entry, engine options with
    every registered secret redacted: ``secrets.redact``), ``raw.model_runs`` and
    ``raw.translations``."""
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
    return model_row, run_row, translations


def _translations_blocks(model_id: str, model_row: dict, run_row: dict,
                        translations: list[dict]) -> list[WriteBlock]:
    return [
        WriteBlock("delete_model_translations", {"model_id": model_id}),
        WriteBlock("insert_models", rows=[model_row]),
        WriteBlock("insert_model_runs", rows=[run_row]),
        WriteBlock("insert_translations", rows=translations),
    ]


def _scores_blocks(model_id: str, rows: ScoreRows) -> list[WriteBlock]:
    return [
        WriteBlock("delete_model_scores", {"model_id": model_id}),
        WriteBlock("insert_scores", rows=rows.scores),
        WriteBlock("insert_segment_stats", rows=rows.segment_stats),
        WriteBlock("insert_segment_scores", rows=rows.segment_scores),
        WriteBlock("insert_word_recall", rows=rows.word_recall),
        WriteBlock("record_statistics", {"model_id": model_id}),
    ]


def write_translations(store: Store, run: TranslationRun, dataset_fingerprint: str) -> None:
    """Replace a model's translations, its run record and its registry entry
    (:func:`translation_rows`)."""
    store.write(_translations_blocks(run.model.id, *translation_rows(run, dataset_fingerprint)))


def write_model_scores(store: Store, model_id: str, rows: ScoreRows) -> None:
    """Replace a model's score rows, per-segment statistics and scores, and word-recall counts,
    and record their digest (``raw.statistics_digests``), in one transaction."""
    store.write(_scores_blocks(model_id, rows))


def record_every_model_statistics(store: Store) -> None:
    """Record the digest of every model's stored statistics, segment scores and word-recall
    counts (``raw.statistics_digests``), for rows written by other means than this module."""
    store.write([WriteBlock("record_every_model_statistics")])


# --- the storage root's files (store/model_files.py) -------------------------------------------

def write_test_sets_file(root: str, data: BenchmarkData) -> str:
    """Write the benchmark's test sets and instances with its fingerprint to
    ``<root>/test_sets.json`` (what the models' partitions read); returns its digest."""
    segments = [
        {"test_set": t.name, "kind": t.kind, "language": t.language, "locale": t.locale,
         "segment_id": s.segment_id, "source": s.source, "reference": s.reference}
        for t in data.test_sets() for s in t.segments
    ]
    segments.sort(key=lambda r: (r["kind"] != "flores", r["test_set"], r["segment_id"]))
    instances = [asdict(row) for rows in data.instances.values() for row in rows]
    return write_document(test_sets_path(root), "test_sets", {
        "fingerprint": data.fingerprint(), "segments": segments, "instances": instances})


@dataclass(frozen=True)
class StoredTestSets:
    """The test sets as ``<root>/test_sets.json`` holds them."""

    fingerprint: str
    test_sets: list[TestSet]
    instances: dict[tuple[str, int], dict]  # (locale, instance id) -> instance row
    digest: str


def read_test_sets_file(root: str) -> StoredTestSets:
    """``<root>/test_sets.json`` (:func:`write_test_sets_file`); a
    :class:`~cultivar_assets.store.model_files.ModelFilesError` naming it when it is missing,
    corrupt or partial."""
    try:
        document = read_document(test_sets_path(root), "test_sets")
    except ModelFilesError as error:
        raise ModelFilesError(f"{error}; materialise test_sets (it writes the file) with this "
                              "storage root first") from None
    content = document.content
    return StoredTestSets(
        content["fingerprint"], rows_to_test_sets(content["segments"]),
        {(r["locale"], r["instance_id"]): r for r in content["instances"]}, document.digest)


def write_translations_file(root: str, run: TranslationRun, dataset_fingerprint: str) -> str:
    """Write a model's translations, run record and registry entry row
    (:func:`translation_rows`) to ``<root>/models/<id>/translations.json``; returns its
    digest (the run's volatile values left out of it)."""
    model_row, run_row, translations = translation_rows(run, dataset_fingerprint)
    outputs, volatile = split_run_record(run_row)
    return write_document(translations_path(root, run.model.id), "translations",
                          {"model": model_row, "run": outputs, "translations": translations},
                          volatile)


def write_scores_file(root: str, model_id: str, rows: ScoreRows, translations_digest: str) -> str:
    """Write a model's score rows (:class:`ScoreRows`) with the digest of the translations file
    they were computed from to ``<root>/models/<id>/scores.json``; returns its digest."""
    return write_document(scores_path(root, model_id), "scores", {
        "translations_digest": translations_digest, "scores": rows.scores,
        "segment_stats": rows.segment_stats, "segment_scores": rows.segment_scores,
        "word_recall": rows.word_recall})


@dataclass(frozen=True)
class ModelOutputs:
    """One model's files under the storage root, read and checked (:func:`read_model_files`)."""

    model_id: str
    translations: Document
    scores: Document

    def score_rows(self) -> ScoreRows:
        c = self.scores.content
        return ScoreRows(c["scores"], c["segment_stats"], c["segment_scores"], c["word_recall"])


def read_model_files(root: str, model_id: str) -> ModelOutputs:
    """A model's translations and scores files; a
    :class:`~cultivar_assets.store.model_files.ModelFilesError` naming the file when one is
    missing, corrupt or partial, or when the scores were computed from other translations than
    the file holds, or a file holds another model's rows."""
    translations = read_document(translations_path(root, model_id), "translations")
    scores = read_document(scores_path(root, model_id), "scores")
    if scores.content.get("translations_digest") != translations.digest:
        raise ModelFilesError(
            f"{scores.path}: computed from other translations (digest "
            f"{scores.content.get('translations_digest')!r}) than {translations.path} holds "
            f"({translations.digest!r}); materialise the model's scores again")
    ids = ({translations.content["model"]["model_id"], translations.content["run"]["model_id"]}
           | {r["model_id"] for r in translations.content["translations"]}
           | {r["model_id"] for key in ("scores", "segment_stats", "segment_scores",
                                        "word_recall") for r in scores.content[key]})
    if ids != {model_id}:
        raise ModelFilesError(f"{model_folder(root, model_id)}: holds rows of the models "
                              f"{sorted(ids)}, not only {model_id!r}")
    return ModelOutputs(model_id, translations, scores)


def loaded_model_files(store: Store) -> dict[str, tuple[str, str]]:
    """model id -> (translations digest, scores digest) of the files last loaded into the
    database (``raw.model_files``)."""
    return {r["model_id"]: (r["translations_digest"], r["scores_digest"])
            for r in store.query("model_files_loaded")}


def load_model_outputs(store: Store, outputs: ModelOutputs) -> None:
    """Replace a model's translations, run record, registry entry row and score rows with its
    files' (:func:`read_model_files`), and record their digests, in one transaction."""
    content = outputs.translations.content
    record = {"model_id": outputs.model_id, "translations_digest": outputs.translations.digest,
              "scores_digest": outputs.scores.digest,
              "loaded_at": datetime.now(UTC).replace(tzinfo=None)}
    translations = [{**r, "cleaning_rules": list(r["cleaning_rules"])}
                    for r in content["translations"]]
    store.write([
        *_translations_blocks(outputs.model_id, content["model"],
                             run_record(outputs.translations), translations),
        *_scores_blocks(outputs.model_id, outputs.score_rows()),
        WriteBlock("delete_model_files", {"model_id": outputs.model_id}),
        WriteBlock("insert_model_files", rows=[record]),
    ])


def write_reported_results(store: Store, specs: list[ModelSpec]) -> int:
    """Replace the paper's reported figures with those of the registry entries that have them."""
    rows = [
        {"model_id": spec.id, "type": spec.type, "family": spec.family,
         "params_total_b": spec.params_total_b, "params_active_b": spec.params_active_b,
         **spec.reported.model_dump(), "source": REPORTED_SOURCE}
        for spec in specs if spec.reported is not None
    ]
    store.write([WriteBlock("delete_reported_results"),
                 WriteBlock("insert_reported_results", rows=rows)])
    return len(rows)


def remove_model_rows(store: Store, model_id: str) -> dict[str, int]:
    """Delete every row of ``model_id`` from the raw tables keyed by model (``delete_model_rows``,
    one transaction); returns the rows removed per table (tables with none left out). The results
    computed across models are recomputed by the next results step (sql/writes.sql)."""
    counts = {row["table_name"]: row["n"]
              for row in store.query("model_stored_rows", model_id=model_id) if row["n"]}
    if counts:
        store.write([WriteBlock("delete_model_rows", {"model_id": model_id})])
    return counts


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_models_files` did, by model id."""

    loaded: list[str]  # replaced in the database by their files
    unchanged: list[str]  # their files' digests equal those loaded last
    without_files: list[str]  # no folder under the storage root
    problems: list[str]  # one line per model folder that could not be loaded
    digest: str  # sha256 of every model's loaded files' digests, as the database records them


def load_models_files(store: Store, root: str, model_ids: Iterable[str]) -> LoadResult:
    """Load each model's files under the storage root ``root`` (:func:`read_model_files`) into
    the database, one transaction per model, those whose digests differ from the ones loaded
    last (``raw.model_files``) only. A model without a folder is left as the database holds it;
    a folder with a missing, corrupt or partial file gives one line in ``problems`` and nothing of
    that model is loaded."""
    loaded_before = loaded_model_files(store)
    loaded, unchanged, without, problems = [], [], [], []
    present = model_folder_names(root)  # one listing, not one check per model
    for model_id in sorted(model_ids):
        if not (model_id in present if "/" not in model_id
                else model_folder(root, model_id).exists()):
            without.append(model_id)
            continue
        try:
            outputs = read_model_files(root, model_id)
        except ModelFilesError as error:
            problems.append(f"{model_id}: {error}")
            continue
        if loaded_before.get(model_id) == (outputs.translations.digest, outputs.scores.digest):
            unchanged.append(model_id)
            continue
        load_model_outputs(store, outputs)
        loaded.append(model_id)
    digests = sorted(loaded_model_files(store).items())
    digest = hashlib.sha256(json.dumps(digests).encode("utf-8")).hexdigest()
    return LoadResult(loaded, unchanged, without, problems, digest)
