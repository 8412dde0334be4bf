"""Per-model assets, partitioned by model id: translations and scores.

Their checks are partitioned like them (one result per model). ``all_test_sets_scored`` blocks
what is downstream of ``scores`` in the same run (the leaderboard would publish numbers that
leave test sets out); ``no_empty_hypotheses`` only warns (an empty hypothesis is a model's
output, scored as such)."""

import time
import warnings
from collections import Counter

import dagster as dg

from cultivar_assets.assets.safety import redacting
from cultivar_assets.evaluation import score_model
from cultivar_assets.metrics.registry import column_key, table_label
from cultivar_assets.resources import EngineResource, MetricsResource, StoreResource
from cultivar_assets.store.records import dataset_fingerprint, read_test_sets, write_translations
from cultivar_assets.tables import markdown_table
from cultivar_assets.translation import translate

models_partitions = dg.DynamicPartitionsDefinition(name="models")
# partitioned checks are a "preview" in Dagster 1.13; the warning says nothing to our users
warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*",
                        category=dg.PreviewWarning)


@dg.asset(
    group_name="models",
    partitions_def=models_partitions,
    deps=["test_sets"],
    kinds={"duckdb"},
    check_specs=[
        dg.AssetCheckSpec("no_empty_hypotheses", asset="translations",
                          partitions_def=models_partitions,
                          description="Empty hypotheses (after cleaning) are counted and flagged."),
    ],
)
@redacting
def translations(context: dg.AssetExecutionContext, engine: EngineResource, store: StoreResource):
    """Every test set translated by one model (loaded once), with raw and cleaned outputs."""
    model_id = context.partition_key
    spec = engine.model(model_id)
    db = store.store()
    test_sets = read_test_sets(db)
    last_log = [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last_log[0] > 10 or done == total:
            last_log[0] = time.monotonic()
            context.log.info(f"{model_id}: {done}/{total} segments translated")

    run = translate(spec, test_sets, engine.settings(), progress=progress)
    write_translations(db, run, dataset_fingerprint(db))
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
    })
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
    kinds={"duckdb"},
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
    with per-segment statistics) and word recall counts."""
    model_id = context.partition_key
    db = store.store()
    config = metrics.config()
    result = score_model(db, model_id, config)
    rows = [{"test_set": test_set, **{m: result.scores.get((test_set, m)) for m in config.metrics}}
            for test_set in sorted({t for t, _ in result.scores})]
    expected = {t["test_set"] for t in db.query("test_set_index")}
    scored = set.intersection(*({t for t, m in result.scores if m == metric}
                                for metric in config.metrics))
    yield dg.MaterializeResult(metadata={
        "scores": dg.MetadataValue.md(markdown_table(rows, [("test_set", "test set")] + [
            (m, table_label(m)) for m in config.metrics])),
        **{f"{column_key(m)}_signature": result.signatures[m] for m in config.metrics},
        "empty_hypotheses": result.n_empty,
        "word_recall_instances": len(result.recall),
    })
    yield dg.AssetCheckResult(
        check_name="all_test_sets_scored",
        passed=scored == expected,
        metadata={"expected": len(expected), "scored": len(scored),
                  "unscored": dg.MetadataValue.json(sorted(expected - scored))},
    )
