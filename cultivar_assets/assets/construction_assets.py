"""Building Cultivar as assets: source benchmark -> ``selected_instances`` (localisation next)."""

import dagster as dg

from cultivar_assets.assets.safety import redacting
from cultivar_assets.construction.build import build_selection
from cultivar_assets.resources import SelectionResource, SourceBenchmarkResource, StoreResource


@dg.asset(group_name="construction", kinds={"duckdb", "spacy"})
@redacting
def selected_instances(context: dg.AssetExecutionContext, source_benchmark: SourceBenchmarkResource,
                       instance_selection: SelectionResource, store: StoreResource):
    """Named-entity-rich instances of the source benchmark (paper §2.1), with a review page.

    Writes every instance with its entities, rule outcomes and the decision to DuckDB (views
    ``selection_candidates``, ``selection_entities``, ``selection_rule_outcomes``,
    ``selected_instances``, ``selected_sources``, ``selection_summary``).
    """
    build = build_selection(source_benchmark.config(), instance_selection.config(), store.store(),
                            say=context.log.info)
    result = build.result
    counts = result.counts()
    for note in result.notes:
        context.log.warning(note)
    metadata = {
        "source": result.source_description,
        "demo_data": result.is_demo,
        "instances": counts["instances"],
        "with_1_or_more_entities": counts["with_entities"],
        f"with_{result.config.min_entities}_or_more_entities": counts["with_enough_entities"],
        **{f"excluded_by_{rule}": counts[f"excluded_by_{rule}"] for rule in result.config.rules},
        "candidates": counts["candidates"],
        "selected": counts["selected"],
        "selected_manually": counts["selected_manually"],
        "manual_overrides": counts["manual_overrides"],
        "corrected_instances": counts["corrected_instances"],
        "without_topic": counts["without_topic"],
        "spacy_version": result.ner.spacy_version,
        "ner_pipeline": result.ner.pipeline,
        "ner_pipeline_version": result.ner.pipeline_version,
        "counted_labels": ", ".join(result.counted_labels),
        "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in result.notes) or "none"),
        "ner_seconds": round(build.ner_seconds, 2),
        "review_page": dg.MetadataValue.path(str(build.review_page)),
        "database": dg.MetadataValue.path(str(build.database)),
        "fingerprint": build.fingerprint,
    }
    return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(build.fingerprint))
