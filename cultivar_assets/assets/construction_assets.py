"""Building Cultivar as assets: source benchmark -> ``selected_instances`` ->
``localised_drafts`` (per locale) -> ``postedit_tools`` and ``annotations`` (per locale) ->
``cultivar_dataset`` -> ``test_sets``.

Per-locale assets use one static partitions definition, ``locales``: the 27 locales of the
registry (``data/locales.csv``), so adding a locale means adding it to the registry, which gives
the prompt its language name and location. Which locales a build covers is configured
(``construction.localisation.locales``); the runner and ``cultivar build`` materialise those.
Everything is written through the DuckDB store and files (no IO manager).
"""

import dagster as dg

from cultivar_assets.assets.safety import redacting
from cultivar_assets.construction.annotation.postedit_build import (
    build_tools,
    ingest_folder_locale,
    kept_flagged,
    kept_flagged_warning,
)
from cultivar_assets.construction.annotation.stats import table1_row
from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.dataset import build_dataset
from cultivar_assets.construction.localisation.drafts import CHECKS
from cultivar_assets.construction.localisation.store import read_drafts
from cultivar_assets.data.locales import all_locales
from cultivar_assets.publish.card import TABLE1_COLUMNS
from cultivar_assets.resources import (
    AnnotationResource,
    BuiltDatasetResource,
    LocalisationResource,
    SelectionResource,
    SourceBenchmarkResource,
    StoreResource,
)
from cultivar_assets.tables import markdown_table

locale_partitions = dg.StaticPartitionsDefinition([loc.key for loc in all_locales()])


def _value(value, unit: str = "") -> object:
    """A metadata value: numbers as they are, None as a short explanation."""
    if value is None:
        return f"not known{unit}"
    return round(value, 6) if isinstance(value, float) else value


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


class LocalisedDraftsConfig(dg.Config):
    """Run config of ``localised_drafts``: ``redraft: true`` replaces drafts that a tool page or
    an annotation file was made from (kept otherwise; ``construction/build.py``)."""

    redraft: bool = False


@dg.asset(group_name="construction", partitions_def=locale_partitions, deps=[selected_instances],
          kinds={"duckdb"})
@redacting
def localised_drafts(context: dg.AssetExecutionContext, config: LocalisedDraftsConfig,
                     localisation: LocalisationResource, annotation: AnnotationResource,
                     store: StoreResource):
    """LLM drafts of one locale (paper §2.2): one request per selected instance, the answers
    cached on disk, malformed ones flagged, drafts failing a check flagged too (views
    ``localised_drafts``, ``localisation_summary``). Drafts that a tool page or annotation file
    was made from are kept unless the run config says ``redraft: true``.
    """
    locale = context.partition_key
    build = build_localisation(localisation.config(), store.store(), [locale],
                               annotation=annotation.config(), redraft=config.redraft,
                               say=context.log.info)
    row = build.summary[locale]  # as stored: the run that wrote the drafts (kept or new)
    drafts = read_drafts(store.store(), locale)
    for draft in drafts:
        why = [draft.flag_reason] if draft.flagged else list(draft.checks)
        if why:
            context.log.warning(f"{locale}_{draft.instance_id}: flagged draft ({'; '.join(why)})")
    priced = row["price_input_per_million"] is not None
    no_prices = " (usage not reported)" if priced else " (no prices configured)"
    kept = build.kept.get(locale)
    metadata = {
        "locale": locale,
        "kept": kept is not None,
        "kept_because": dg.MetadataValue.md(kept.message() if kept else "not kept: localised now"),
        "localiser": row["localiser"],
        "model": row["model"],
        "engine": row["engine_version"],
        "prompt": row["prompt_name"],
        "prompt_hash": row["prompt_hash"],
        "drafts": row["n_drafts"],
        "flagged": row["n_flagged"],
        **{f"checks_{code}": _value(row.get(f"n_{code}"), " (not recorded)") for code in CHECKS},
        "retried": row["n_retried"],
        "unchanged": row["n_unchanged"],
        "generated": 0 if kept else row["n_generated"],
        "requests_from_cache": (build.run.n_requests - build.run.n_generated
                                if build.run else 0),
        "prompt_tokens": _value(row["prompt_tokens"], " (the engine reports none)"),
        "completion_tokens": _value(row["completion_tokens"], " (the engine reports none)"),
        "estimated_cost": _value(row["estimated_cost"], no_prices),
        "estimated_cost_this_run": (0 if kept else
                                    _value(row["estimated_cost_this_run"], no_prices)),
        "currency": row["currency"] or "",
        "seconds": round(build.run.seconds, 1) if build.run else 0,
        "task_id": row["task_id"],
        "flagged_drafts": dg.MetadataValue.md("\n".join(
            f"- `{locale}_{d.instance_id}`: {d.flag_reason or ', '.join(d.checks)}"
            for d in drafts if d.flagged or d.checks) or "none"),
        "database": dg.MetadataValue.path(str(store.store().path)),
        **({"notice": kept.message()} if kept else {}),  # the runner prints it
    }
    return dg.MaterializeResult(metadata=metadata,
                                data_version=dg.DataVersion(row["drafts_hash"]))


@dg.asset(group_name="construction", partitions_def=locale_partitions, deps=[localised_drafts],
          kinds={"html"})
@redacting
def postedit_tools(context: dg.AssetExecutionContext, annotation: AnnotationResource,
                   store: StoreResource):
    """The post-editing tool of one locale (paper §2.3, Figure 1), built from its current drafts:
    a static page to open in a browser; its "Download JSON" file is what annotators hand in."""
    locale = context.partition_key
    config = annotation.config()
    (tool,) = build_tools(store.store(), config.tools_path(), [locale])
    context.log.info(f"{locale}: post-editing tool at {tool.page} ({len(tool.task.drafts)} items)")
    return dg.MaterializeResult(metadata={
        "locale": locale,
        "page": dg.MetadataValue.path(str(tool.page)),
        "task_id": tool.task.task_id,
        "items": len(tool.task.drafts),
        "flagged_drafts": tool.n_flagged,
        "hand_in": dg.MetadataValue.md(
            f"Download the JSON from the tool and put it in `{config.folder_path()}`, then "
            "materialise `annotations`; or run `cultivar build ingest FILE`."),
    }, data_version=dg.DataVersion(tool.task.drafts_hash))


@dg.asset(group_name="construction", partitions_def=locale_partitions, deps=[postedit_tools],
          kinds={"duckdb"})
@redacting
def annotations(context: dg.AssetExecutionContext, annotation: AnnotationResource,
                store: StoreResource):
    """The returned annotation file of one locale, validated against its current drafts and the
    source benchmark, then ingested (replacing the locale's rows; views ``annotations`` and
    ``annotation_summary``). A file with any problem changes nothing."""
    locale = context.partition_key
    config = annotation.config()
    file = ingest_folder_locale(store.store(), config.folder_path(), locale, config.limits())
    row = table1_row(locale, file.annotations)
    kept = kept_flagged(store.store(), locale)
    warning = kept_flagged_warning(locale, kept)
    if warning:
        context.log.warning(warning)
    return dg.MaterializeResult(metadata={
        "kept_flagged_pairs": len(kept),
        "kept_flagged": dg.MetadataValue.md(warning or "none"),
        **({"notice": f"warning: {warning}"} if warning else {}),  # the runner prints it
        "locale": locale,
        "file": dg.MetadataValue.path(file.path),
        "file_sha256": file.sha256 or "",
        "annotator": file.annotator,
        "task_id": file.task_id,
        "instances": row.n_instances,
        "kept_llm_paraphrase": row.kept_llm_paraphrase,
        "reverted_to_flores": row.reverted_to_flores,
        "edited_source_only": row.edited_source_only,
        "edited_target_only": row.edited_target_only,
        "edited_both": row.edited_both,
        "avg_edits_source": _value(row.avg_edits_source, " (no source changed)"),
        "avg_edits_english": _value(row.avg_edits_english, " (no English changed)"),
        "flagged_drafts": row.n_flagged,
    }, data_version=dg.DataVersion(file.sha256 or file.task_id))


@dg.asset(group_name="construction", deps=[annotations], kinds={"duckdb", "json"})
@redacting
def cultivar_dataset(context: dg.AssetExecutionContext, localisation: LocalisationResource,
                     built_dataset: BuiltDatasetResource, store: StoreResource):
    """The Cultivar dataset built here (paper §2.4): the confirmed final pairs of every
    configured locale, with per-instance provenance (kept / edited / reverted, draft and prompt
    hashes), in the published format; the data kind ``built`` evaluates it (``test_sets``)."""
    locales = localisation.config().locale_keys()
    built = build_dataset(store.store(), built_dataset.config().folder_path(), locales)
    counts = {locale: len(rows) for locale, rows in built.rows.items()}
    kept = {locale: len(kept_flagged(store.store(), locale)) for locale in built.rows}
    return dg.MaterializeResult(metadata={
        "kept_flagged_pairs": sum(kept.values()),
        "kept_flagged_pairs_per_locale": dg.MetadataValue.json(kept),
        "folder": dg.MetadataValue.path(str(built.folder)),
        "demo_data": built.is_demo,
        "source": built.source,
        "locales": len(counts),
        "instances": sum(counts.values()),
        "instances_per_locale": dg.MetadataValue.json(counts),
        "actions_per_locale": dg.MetadataValue.json(built.actions()),
        "table1": dg.MetadataValue.md(markdown_table(built.table1, TABLE1_COLUMNS)),
        "fingerprint": built.fingerprint,
    }, data_version=dg.DataVersion(built.fingerprint))
