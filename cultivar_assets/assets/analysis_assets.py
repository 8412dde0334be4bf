"""The error analysis of paper §5 as assets: the sample's annotation pages, then Table 5 from the
returned files. The check ``sample_complete`` warns and blocks nothing: what the sample leaves
out is listed with the pages."""

import dagster as dg

from cultivar_assets.assets.aggregate_assets import leaderboard
from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS
from cultivar_assets.assets.safety import redacting
from cultivar_assets.error_analysis.sample import build_error_sample
from cultivar_assets.error_analysis.store import ingest_error_files
from cultivar_assets.error_analysis.table import read_table5
from cultivar_assets.error_analysis.tool import build_error_tools
from cultivar_assets.resources import ErrorAnalysisResource, StoreResource
from cultivar_assets.tables import markdown_table
from cultivar_assets.versions.rows import folder_digest, rows_digest


def _notes(notes) -> dg.MetadataValue:
    return dg.MetadataValue.md("\n".join(f"- {n}" for n in notes) or "none")


@dg.asset(
    group_name="analysis",
    deps=[leaderboard, "model_results"],  # the pages show the sample's translations
    kinds={"html"},
    automation_condition=AFTER_NEW_RESULTS,  # follows the leaderboard (conditions.py)
    check_specs=[dg.AssetCheckSpec("sample_complete", asset="error_annotation_tool",
                                   description="Every configured locale and model is in the "
                                               "error-analysis sample.")],
)
@redacting
def error_annotation_tool(error_analysis_config: ErrorAnalysisResource, store: StoreResource):
    """The error-analysis sample (models × locales × instances, seeded) and its annotation pages,
    one per locale (paper §5); the pages work offline and download ``<task_id>.errors.json``."""
    config = error_analysis_config.config()
    sample = build_error_sample(store.store(), config)
    pages = build_error_tools(sample, config.tool_path())
    tasks = [{"locale": t.locale, "task_id": t.task_id, "instances": len(t.instance_ids),
              "systems": len(t.models), "translations": len(t.items)} for t in sample.tasks]
    yield dg.MaterializeResult(metadata={
        "tasks": dg.MetadataValue.md(markdown_table(tasks, [
            ("locale", "locale"), ("task_id", "task"), ("instances", "instances"),
            ("systems", "systems"), ("translations", "translations")])),
        "translations_to_annotate": sum(t["translations"] for t in tasks),
        "models": dg.MetadataValue.json(list(sample.models)),
        "index": dg.MetadataValue.path(str(config.tool_path() / "index.html")),
        "pages": dg.MetadataValue.json({loc: str(p) for loc, p in pages.items()}),
        "left_out": _notes(sample.notes),
    }, data_version=dg.DataVersion(folder_digest(config.tool_path())))
    yield dg.AssetCheckResult(check_name="sample_complete", passed=not sample.notes,
                              severity=dg.AssetCheckSeverity.WARN,
                              metadata={"left_out": _notes(sample.notes)})


# the files are checked against the stored translations (translation_matches)
@dg.asset(group_name="analysis", deps=[error_annotation_tool, leaderboard, "model_results"],
          kinds={"duckdb"},
          automation_condition=AFTER_NEW_RESULTS)
@redacting
def error_analysis(context: dg.AssetExecutionContext, error_analysis_config: ErrorAnalysisResource,
                   store: StoreResource):
    """Table 5 (paper §5) from the returned error-annotation files: per model and locale the
    error counts and BLEU; Pearson r between BLEU and total errors per language, with and
    without the configured outlier model. Every file is validated against the sample; a bad
    file fails the step with one message per bad file, and nothing is written; a file of
    other systems than its locale's task is left out with a notice (error_analysis/store.py)."""
    config = error_analysis_config.config()
    db = store.store()
    sample = build_error_sample(db, config)
    ingested = ingest_error_files(db, sample, config)
    files = ingested.files
    for notice in ingested.left_out:
        context.log.warning(notice)
    table5, correlations = read_table5(db)
    return dg.MaterializeResult(metadata={
        "files": dg.MetadataValue.md(markdown_table([
            {"locale": f.locale, "file": f.path.rsplit("/", 1)[-1], "annotator": f.annotator,
             "demo": "yes" if f.is_demo else "no", "translations": len(f.annotations),
             "changed": f.n_translation_changed} for f in files], [
            ("locale", "locale"), ("file", "file"), ("annotator", "annotator"),
            ("demo", "demo"), ("translations", "translations"),
            ("changed", "translation changed since")])) if files else "no files configured",
        "table5": dg.MetadataValue.md(markdown_table(table5, [
            ("model_id", "model"), ("locale", "locale"), ("ne", "NE"), ("py", "PY"),
            ("ic", "IC"), ("nu", "NU"), ("locale_specific_total", "locale-specific"),
            ("general_total", "general"), ("total", "total"), ("bleu", "BLEU"),
            ("n_translations", "translations")])),
        "correlations": dg.MetadataValue.md(markdown_table(correlations, [
            ("language", "language"), ("r_including", "r (all models)"),
            ("n_including", "cells"), ("outlier_model", "outlier"),
            ("r_excluding", "r (without outlier)"), ("n_excluding", "cells")])),
        "demo_files": sum(f.is_demo for f in files),
        "annotated_translations": sum(len(f.annotations) for f in files),
        "left_out": _notes(ingested.left_out),
        **({"notice": "\n".join(ingested.left_out)} if ingested.left_out else {}),  # printed
    }, data_version=dg.DataVersion(rows_digest(db, "error_analysis")))
