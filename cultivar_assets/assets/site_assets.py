"""The public face: charts and the static leaderboard site, built from the DuckDB store."""

import dagster as dg

from cultivar_assets.assets.aggregate_assets import leaderboard, reported_results
from cultivar_assets.assets.analysis_assets import error_analysis
from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS, run_failures
from cultivar_assets.assets.safety import redacting
from cultivar_assets.publish.card import card_for_store
from cultivar_assets.resources import HubPublishResource, SiteResource, StoreResource
from cultivar_assets.site.build import build_site
from cultivar_assets.versions.rows import folder_digest


@dg.asset(group_name="site", deps=[leaderboard, reported_results], kinds={"vega"},
          automation_condition=AFTER_NEW_RESULTS)
@redacting
def charts(site: SiteResource, store: StoreResource):
    """The paper's figures (∆ heatmaps, ∆ vs size, same language by location) as Vega-Lite + SVG."""
    from cultivar_assets.site import charts as site_charts  # altair: only when charts are drawn

    entries, files = site_charts.write_store_charts(store.store(), site.charts_path())
    return dg.MaterializeResult(metadata={
        "charts": dg.MetadataValue.json([entry["id"] for entry in entries]),
        "files": len(files),
        "folder": dg.MetadataValue.path(str(site.charts_path())),
    }, data_version=dg.DataVersion(folder_digest(site.charts_path())))


# follows new results and newly recorded failures of models' runs (conditions.py)
# it shows the test sets' segments, every model's translations and scores and the reported
# results besides what its other deps compute: deps on them (Dagster's staleness follows them)
@dg.asset(group_name="site", deps=[charts, error_analysis, run_failures, leaderboard,
                                   reported_results, "test_sets", "model_results"],
          kinds={"html"},
          automation_condition=AFTER_NEW_RESULTS)
@redacting
def site(context: dg.AssetExecutionContext, site: SiteResource, store: StoreResource,
         hf_publish: HubPublishResource):
    """The static leaderboard site (self-contained; works from file:// and any static host)."""
    card = card_for_store(store.store(), hf_publish.config())
    summary = build_site(store.store(), site.site_path(), card_markdown=card.page_body,
                         charts_dir=site.charts_path(), include_database=site.include_database,
                         show_originals=site.show_originals, query_page=site.query_page,
                         web_cache=site.web_cache_path(), progress=context.log.info)
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(summary.path / "index.html")),
        "pages": summary.pages,
        "files": summary.files,
        "megabytes": round(summary.bytes / 1e6, 2),
        "seconds": round(summary.seconds, 1),
        "models": summary.models,
        "reused_models": summary.reused_models,
        "locales": summary.locales,
        "largest_file": f"{summary.largest_file[0]} ({summary.largest_file[1] / 1e6:.1f} MB)",
        "megabytes_by_part": dg.MetadataValue.json(
            {part: round(size / 1e6, 2) for part, size in summary.sizes.items()}),
        "notes": dg.MetadataValue.json(list(summary.notes)),
    }, data_version=dg.DataVersion(folder_digest(summary.path)))
