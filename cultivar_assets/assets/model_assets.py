"""Per-model assets, partitioned by model id: translations and scores, written as files under the
storage root (``storage.root``; :mod:`cultivar_assets.store.model_files`), so that a model's
partition needs no database file; and ``model_results``, the one asset that loads them into the
database.

The per-model checks are partitioned like their assets (one result per model).
``all_test_sets_scored`` blocks what is downstream of ``scores`` in the same run (the
leaderboard would publish numbers that leave test sets out); ``no_empty_hypotheses`` only warns
(an empty hypothesis is a model's output, scored as such)."""

import time
import warnings
from collections import Counter

import dagster as dg

from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS
from cultivar_assets.assets.safety import redacting
from cultivar_assets.evaluation.model_scores import compute_scores
from cultivar_assets.metrics.registry import column_key, table_label
from cultivar_assets.resources import EngineResource, MetricsResource, StoreResource
from cultivar_assets.store.model_files import (
    ModelFilesError,
    read_document,
    scores_path,
    translations_path,
)
from cultivar_assets.store.records import (
    load_models_files,
    read_test_sets_file,
    write_scores_file,
    write_translations_file,
)
from cultivar_assets.tables import markdown_table
from cultivar_assets.translation import translate

models_partitions = dg.DynamicPartitionsDefinition(name="models")
# partitioned checks are a "preview" in Dagster 1.13; the warning says nothing to our users
warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*",
                        category=dg.PreviewWarning)
# the concurrency pool of the database's one writer of models' rows (limit 1: dagster.yaml's
# concurrency.pools.default_limit)
DATABASE_POOL = "cultivar_database"


@dg.asset(
    group_name="models",
    partitions_def=models_partitions,
    deps=["test_sets"],
    kinds={"json"},
    check_specs=[
        dg.AssetCheckSpec("no_empty_hypotheses", asset="translations",
                          partitions_def=models_partitions,
                          description="Empty hypotheses (after cleaning) are counted and flagged."),
    ],
)
@redacting
def translations(context: dg.AssetExecutionContext, engine: EngineResource, store: StoreResource):
    """Every test set translated by one model (loaded once), with raw and cleaned outputs:
    written to ``<storage root>/models/<model>/translations.json``
    (:mod:`cultivar_assets.store.model_files`), never to the database; its data version is the
    file's content digest. It reads the test sets from the storage root."""
    model_id = context.partition_key
    spec = engine.model(model_id)
    root = store.root()
    stored = read_test_sets_file(root)
    test_sets = stored.test_sets
    last_log = [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last_log[0] > 10 or done == total:
            last_log[0] = time.monotonic()
            context.log.info(f"{model_id}: {done}/{total} segments translated")

    run = translate(spec, test_sets, engine.settings(), progress=progress)
    digest = write_translations_file(root, run, stored.fingerprint)
    empty = [(r.test_set, r.segment_id) for r in run.rows if not r.hypothesis]
    rules = Counter(rule for r in run.rows for rule in r.cleaning_rules)
    yield dg.MaterializeResult(metadata={
        "model": spec.id,
        "type": spec.type,
        "segments": len(run.rows),
        "test_sets": len(test_sets),
        "generated": run.n_generated,
        "from_cache": run.n_cached,
        "seconds": round(run.seconds, 1),
        "engine": run.info.engine_version,
        "model_revision": run.info.model_revision or "",
        "prompt_template_hash": run.prompt_template_hash,
        "chat_template_hash": run.info.chat_template_hash or "none",
        "cleaning_rules_fired": dg.MetadataValue.json(dict(rules)),
        "file": dg.MetadataValue.path(str(translations_path(root, model_id))),
        "digest": digest,
    }, data_version=dg.DataVersion(digest))
    yield dg.AssetCheckResult(
        check_name="no_empty_hypotheses",
        passed=not empty,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"empty": len(empty),
                  "examples": dg.MetadataValue.json([f"{t}:{i}" for t, i in empty[:20]])},
    )


@dg.asset(
    group_name="models",
    partitions_def=models_partitions,
    deps=[translations],
    kinds={"json"},
    check_specs=[
        dg.AssetCheckSpec("all_test_sets_scored", asset="scores",
                          partitions_def=models_partitions, blocking=True,
                          description="Every configured metric's score exists for every test "
                                      "set of the model (blocking: a model with unscored test "
                                      "sets stops what is downstream in the same run)."),
    ],
)
@redacting
def scores(context: dg.AssetExecutionContext, metrics: MetricsResource, store: StoreResource):
    """The configured metrics' scores per test set (``metrics.metrics``, default BLEU and chrF;
    with per-segment statistics) and word recall counts, computed from the model's translations
    file and the test sets under the storage root and written to ``<storage root>/models/
    <model>/scores.json`` (:mod:`cultivar_assets.store.model_files`), never to the database;
    its data version is the file's content digest."""
    model_id = context.partition_key
    root = store.root()
    config = metrics.config()
    stored = read_test_sets_file(root)
    try:
        translated = read_document(translations_path(root, model_id), "translations")
    except ModelFilesError as error:
        raise ModelFilesError(f"{error}; materialise the model's translations with this "
                              "storage root first") from None
    result = compute_scores(model_id, translated.content["translations"],
                            translated.content["run"], stored.test_sets, stored.instances,
                            stored.fingerprint, config)
    digest = write_scores_file(root, model_id, result.rows, translated.digest)
    rows = [{"test_set": test_set, **{m: result.scores.get((test_set, m)) for m in config.metrics}}
            for test_set in sorted({t for t, _ in result.scores})]
    expected = {t.name for t in stored.test_sets}
    scored = set.intersection(*({t for t, m in result.scores if m == metric}
                                for metric in config.metrics))
    yield dg.MaterializeResult(metadata={
        "scores": dg.MetadataValue.md(markdown_table(rows, [("test_set", "test set")] + [
            (m, table_label(m)) for m in config.metrics])),
        **{f"{column_key(m)}_signature": result.signatures[m] for m in config.metrics},
        "empty_hypotheses": result.n_empty,
        "word_recall_instances": len(result.recall),
        "file": dg.MetadataValue.path(str(scores_path(root, model_id))),
        "digest": digest,
    }, data_version=dg.DataVersion(digest))
    yield dg.AssetCheckResult(
        check_name="all_test_sets_scored",
        passed=scored == expected,
        metadata={"expected": len(expected), "scored": len(scored),
                  "unscored": dg.MetadataValue.json(sorted(expected - scored))},
    )


@dg.asset(
    group_name="results",
    deps=[scores],
    kinds={"duckdb"},
    pool=DATABASE_POOL,
    # loads once new scores have landed, once per batch of model runs (conditions.py)
    automation_condition=AFTER_NEW_RESULTS,
)
@redacting
def model_results(context: dg.AssetExecutionContext, store: StoreResource):
    """Every registered model's translations and scores, loaded from its files under the
    storage root into the database: the only writer of the models' rows (the concurrency pool
    ``cultivar_database``, limit one). A model whose files' digests equal those loaded last is
    left as it is; one whose files changed is replaced whole, in one transaction; a model with no
    folder (not evaluated under this storage root) is left as the database holds it. A folder
    with a missing, corrupt or partial file is named in one line, nothing of that model is
    loaded, and the asset fails once the others are loaded."""
    models = context.instance.get_dynamic_partitions(models_partitions.name)
    db = store.store()
    result = load_models_files(db, store.root(), models)
    for line in result.problems:
        context.log.error(line)
    if result.problems:
        raise ModelFilesError(f"{len(result.problems)} model folder(s) not loaded (the others "
                              "were):\n" + "\n".join(result.problems))
    return dg.MaterializeResult(metadata={
        "loaded": dg.MetadataValue.json(result.loaded),
        "unchanged": dg.MetadataValue.json(result.unchanged),
        "without_files": dg.MetadataValue.json(result.without_files),
        "storage_root": store.root(),
        "database": dg.MetadataValue.path(str(db.path)),
    }, data_version=dg.DataVersion(result.digest))
