"""Cross-model assets: ∆ tables, the leaderboard and rank agreement (paper Tables 2-4)."""

import dagster as dg

from cultivar_assets.assets.model_assets import models_partitions, scores
from cultivar_assets.assets.safety import redacting
from cultivar_assets.evaluation import aggregate
from cultivar_assets.models import load_models
from cultivar_assets.resources import EngineResource, StoreResource
from cultivar_assets.specs import REPORTED_SOURCE
from cultivar_assets.store.records import write_reported_results
from cultivar_assets.tables import leaderboard_markdown, markdown_table


@dg.asset(
    group_name="results",
    deps=[scores],
    kinds={"duckdb"},
    # recompute when a model's scores land; wait while any of them is still being computed
    automation_condition=(
        dg.AutomationCondition.any_deps_updated()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("after new scores"),
)
@redacting
def leaderboard(context: dg.AssetExecutionContext, store: StoreResource):
    """Per-model ∆ and averages (Table 3), per-locale ∆ (Table 4), rank agreement (Table 2).

    Covers the models that are registered as partitions and have scores in the database.
    """
    models = context.instance.get_dynamic_partitions(models_partitions.name)
    result = aggregate(store.store(), models)
    agreement = [
        {"aggregation": r.aggregation, "locale": r.locale or "–", "metric": r.metric,
         "spearman": r.spearman, "kendall_tau_b": r.kendall_tau_b, "n_models": r.n_models,
         "note": r.note or ""}
        for r in result.rank_agreement if r.aggregation != "per_locale"
    ]
    return dg.MaterializeResult(metadata={
        "models": len(result.models),
        "locales": len(result.locales),
        "leaderboard": dg.MetadataValue.md(leaderboard_markdown(result.leaderboard)),
        "locale_deltas": dg.MetadataValue.md(markdown_table(result.locale_summary, [
            ("locale", "locale"), ("delta_bleu", "∆BLEU"), ("delta_chrf", "∆chrF"),
            ("n_models", "models")])),
        "rank_agreement_averages": dg.MetadataValue.md(markdown_table(agreement, [
            ("aggregation", "aggregation"), ("metric", "metric"), ("spearman", "Spearman"),
            ("kendall_tau_b", "Kendall τb"), ("n_models", "models"), ("note", "note")])),
        "bleu_signature": result.signatures.get("bleu", ""),
        "chrf_signature": result.signatures.get("chrf", ""),
    })


@dg.asset(group_name="results", kinds={"duckdb"})
@redacting
def reported_results(engine: EngineResource, store: StoreResource):
    """The paper's Table 3 figures from the model registry, kept apart from evaluated results."""
    registry = load_models(engine.models_file)
    specs = [registry.get(model_id) for model_id in registry]
    written = write_reported_results(store.store(), specs)
    return dg.MaterializeResult(metadata={"models": written, "source": REPORTED_SOURCE})
