"""Cross-model assets: ∆ tables, the leaderboard and rank agreement (paper Tables 2-4), with
intervals, ranks and contamination flags; the paper's reported Table 3 and its flags."""

import dagster as dg

from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS
from cultivar_assets.assets.model_assets import model_results, models_partitions
from cultivar_assets.assets.safety import redacting
from cultivar_assets.evaluation import aggregate
from cultivar_assets.evaluation.contamination import write_reported_flags
from cultivar_assets.metrics.flags import RuleResult
from cultivar_assets.metrics.registry import BLEU, column_key, paper_metric_labels, table_label
from cultivar_assets.models import load_models
from cultivar_assets.paths import replicates_cache_dir
from cultivar_assets.resources import EngineResource, MetricsResource, StoreResource
from cultivar_assets.specs import REPORTED_SOURCE
from cultivar_assets.store.records import write_reported_results
from cultivar_assets.tables import format_interval, leaderboard_markdown, markdown_table
from cultivar_assets.versions.rows import rows_digest


def rules_markdown(rules: list[RuleResult]) -> str:
    """One row per rule: its text, whether it could be applied (and why not), whom it flags."""
    return markdown_table([
        {"rule": r.name, "text": r.text,
         "applied": "yes" if r.applied else "no",
         "fired_for": ", ".join(r.fired_for) or "none",
         "note": r.reason or ""} for r in rules],
        [("rule", "rule"), ("text", "rule text"), ("applied", "applied"),
         ("fired_for", "fired for"), ("note", "note")])


class LeaderboardConfig(dg.Config):
    """Run config of ``leaderboard``: ``scan_statistics: true`` hashes every model's stored
    statistics instead of reading the digests their writers recorded (for rows changed in place
    by a path other than the toolkit's writers: ``evaluation.aggregates``)."""

    scan_statistics: bool = False


@dg.asset(
    group_name="results",
    deps=[model_results],
    kinds={"duckdb"},
    # recomputed once new scores have landed, once per batch of model runs (conditions.py)
    automation_condition=AFTER_NEW_RESULTS,
)
@redacting
def leaderboard(context: dg.AssetExecutionContext, config: LeaderboardConfig,
                metrics: MetricsResource, store: StoreResource):
    """Per-model ∆ and averages (Table 3), per-locale ∆ (Table 4), rank agreement (Table 2),
    each with paired-bootstrap intervals and its n; rank intervals; contamination flags.

    Covers the models that are registered as partitions and have scores in the database.
    """
    models = context.instance.get_dynamic_partitions(models_partitions.name)
    db = store.store()
    # each model's replicates kept and reused while unchanged (a cache under $CULTIVAR_HOME)
    metric_config = metrics.config()
    result = aggregate(db, models, metric_config, progress=True,
                       replicates_dir=replicates_cache_dir(db.path),
                       scan_statistics=config.scan_statistics)
    averages = [
        {**r, "locale": "–", "aggregation": r["aggregation"] + (" (default)" if r["is_default"]
                                                                else "")}
        for r in result.rank_agreement if r["aggregation"] != "per_locale"
    ]
    table_averages = [
        {**a, "value": format_interval(a["value"], a["low"], a["high"], a["quantity"])}
        for a in result.tables.averages]
    locales = [
        {**r, **{f"delta_{m}": format_interval(r[f"delta_{m}"], r[f"delta_{m}_low"],
                                                r[f"delta_{m}_high"],
                                                excludes_zero=r[f"delta_{m}_excludes_zero"])
                 for m in metric_config.metrics}}
        for r in result.locale_summary]
    settings = result.settings
    for name, note in result.kept.items():
        context.log.info(f"statistics, kept {name}: {note}")
    return dg.MaterializeResult(metadata={
        "models": len(result.models),
        "locales": len(result.locales),
        "leaderboard": dg.MetadataValue.md(
            leaderboard_markdown(result.leaderboard, paper_metric_labels(), column_key(BLEU))
            + f"\n\nIntervals: {settings['confidence']:.0%} paired bootstrap over instances, "
              f"{settings['n_replicates']} replicates, seed {settings['seed']}; * the interval "
              f"excludes 0. {settings['rank_rule']}"),
        "locale_deltas": dg.MetadataValue.md(markdown_table(locales, [
            ("locale", "locale"), *((f"delta_{m}", f"∆{table_label(m)}")
                                    for m in metric_config.metrics), ("n_models", "models")])),
        "table_averages": dg.MetadataValue.md(markdown_table(table_averages, [
            ("paper_table", "table"), ("quantity", "column"), ("aggregation", "aggregation"),
            ("value", "value [interval]"), ("n", "n"), ("n_of", "of"), ("note", "note")])),
        "rank_agreement_averages": dg.MetadataValue.md(markdown_table(averages, [
            ("aggregation", "aggregation"), ("metric", "metric"), ("spearman", "Spearman"),
            ("kendall_tau_b", "Kendall τb"), ("n_models", "models"), ("n_locales", "locales"),
            ("note", "note")])),
        "contamination_flags": dg.MetadataValue.md(rules_markdown(result.rules)),
        "flagged_models": dg.MetadataValue.json(
            {r.name: r.fired_for for r in result.rules if r.fired_for}),
        "bootstrap_replicates": settings["n_replicates"],
        "bootstrap_seed": settings["seed"],
        "confidence": settings["confidence"],
        "resampled_instances": settings["n_instances"],
        "statistics_seconds": settings["seconds"],
        # what the kept replicates, rank states and rows record gave, and what was recomputed
        **{f"kept_{name}": note for name, note in result.kept.items()},
        **{f"{column_key(m)}_signature": result.signatures.get(m, "")
           for m in metric_config.metrics},
    }, data_version=dg.DataVersion(rows_digest(store.store(), "leaderboard")))


@dg.asset(group_name="results", kinds={"duckdb"})
@redacting
def reported_results(engine: EngineResource, metrics: MetricsResource, store: StoreResource):
    """The paper's Table 3 figures from the model registry, kept apart from evaluated results,
    and the contamination rules applied to them (which rules could not be applied, and why)."""
    registry = load_models(engine.models_file)
    specs = [registry.get(model_id) for model_id in registry]
    db = store.store()
    written = write_reported_results(db, specs)
    rules = write_reported_flags(db, specs, metrics.config().flag_config())
    return dg.MaterializeResult(metadata={
        "models": written, "source": REPORTED_SOURCE,
        "contamination_flags": dg.MetadataValue.md(rules_markdown(rules)),
        "flagged_models": dg.MetadataValue.json(
            {r.name: r.fired_for for r in rules if r.fired_for}),
    }, data_version=dg.DataVersion(rows_digest(db, "reported_results")))
