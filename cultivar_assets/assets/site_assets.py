"""The public face: charts and the static leaderboard site, built from the DuckDB store."""

import hashlib
import json

import dagster as dg

from cultivar_assets.assets.aggregate_assets import leaderboard, reported_results
from cultivar_assets.assets.analysis_assets import error_analysis
from cultivar_assets.assets.conditions import (
    AFTER_LOADED_SCORES,
    AFTER_NEW_DATASET,
    AFTER_NEW_RESULTS,
    AFTER_NEW_RESULTS_AND_PARTS,
    run_failures,
)
from cultivar_assets.assets.model_assets import models_partitions, scores
from cultivar_assets.assets.safety import redacting
from cultivar_assets.publish.card import card_for_store
from cultivar_assets.resources import HubPublishResource, SiteResource, StoreResource
from cultivar_assets.site.build import build_site
from cultivar_assets.site.locale_shards import current_locale_shards, write_locale_shards
from cultivar_assets.site.model_part import ModelPartError, current_parts, write_model_parts
from cultivar_assets.site.pages import model_slug
from cultivar_assets.store.model_files import read_document, scores_path, translations_path
from cultivar_assets.store.records import loaded_model_files
from cultivar_assets.versions.rows import folder_digest


def model_part_folder(site: SiteResource, model_id: str):
    """Where the asset ``model_site`` writes ``model_id``'s part of the site."""
    return site.model_parts_path() / model_slug(model_id)


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


# Its upstream is the model's own scores partition (whose data version is the digest of its
# scores file, which holds the digest of its translations file) and the test sets; it reads the
# model's rows from the database, which model_results loads from those files: the asset checks
# that the database holds the same files before it writes anything. The pages that show other
# models' facts about it (its rank, "not separable from", intervals) are the site's.
# Many partitions may run in one run (a backfill of several models, the runner's stage "site of
# model"): BackfillPolicy.single_run. Dagster then records one input data version for the run's
# range of scores partitions, with the storage id of the latest it read, and its stale status
# judges each partition by its own scores partition's records after that id, so a part is stale
# exactly when its own model's scores changed (tests/test_site_model_asset.py).
@dg.asset(group_name="site", partitions_def=models_partitions, deps=[scores, "test_sets"],
          kinds={"html"}, backfill_policy=dg.BackfillPolicy.single_run(),
          automation_condition=AFTER_LOADED_SCORES)
@redacting
def model_site(context: dg.AssetExecutionContext, site: SiteResource, store: StoreResource):
    """Each model's part of the static site (:mod:`cultivar_assets.site.model_part`: its
    translations shard, statistics shard, translations download and the downloads of its page's
    scores and cleaning tables, most of the site's bytes),
    written to ``<site.model_parts_dir>/<slug>/`` from the model's rows in the database, every
    partition of the run with one read of the dataset
    (:func:`~cultivar_assets.site.model_part.write_model_parts`); the ``site`` asset assembles
    every model's part into the published folder. It fails, writing nothing, when the database
    holds other files of a model than the storage root (materialise ``model_results`` first).
    Each partition's metadata: its folder, files, locales and the seconds its part took; the
    data version: the digest of the part's folder (of a run of several partitions: the digest
    of their folders' digests)."""
    model_ids = list(context.partition_keys)
    db, root = store.store(), store.root()
    loaded = loaded_model_files(db)
    for model_id in model_ids:
        files = (read_document(translations_path(root, model_id), "translations").digest,
                 read_document(scores_path(root, model_id), "scores").digest)
        if loaded.get(model_id) != files:
            held = "other files of it than" if loaded.get(model_id) else "none of the files in"
            raise ModelPartError(f"model {model_id}: {db.path} holds {held} "
                                 f"{scores_path(root, model_id).parent}; materialise "
                                 "model_results first")
    folders = {model_id: model_part_folder(site, model_id) for model_id in model_ids}
    seconds: dict[str, float] = {}
    manifests = write_model_parts(db, folders, show_originals=site.show_originals,
                                  progress=seconds.__setitem__)
    digests = {model_id: folder_digest(folder) for model_id, folder in folders.items()}
    for model_id, manifest in manifests.items():
        context.add_asset_metadata({
            "folder": dg.MetadataValue.path(str(folders[model_id])),
            "files": dg.MetadataValue.json(manifest["files"]),
            "locales": len(manifest["locales"]),
            "seconds": round(seconds[model_id], 6),
            "folder_digest": digests[model_id],
        }, partition_key=model_id)
    version = (digests[model_ids[0]] if len(model_ids) == 1 else hashlib.sha256(
        json.dumps(sorted(digests.items())).encode()).hexdigest())
    return dg.MaterializeResult(metadata={"models": len(model_ids)},
                                data_version=dg.DataVersion(version))


# made from the dataset alone (its instances, each locale's script) and the originals policy:
# a new model's results leave it fresh
@dg.asset(group_name="site", deps=["test_sets"], kinds={"json"},
          automation_condition=AFTER_NEW_DATASET)
@redacting
def locale_shards(site: SiteResource, store: StoreResource):
    """The site's locale shards (:mod:`cultivar_assets.site.locale_shards`: each present
    locale's sources and references with their word diffs), written to
    ``<site.locale_shards_dir>/`` from the dataset's instances in the database; the ``site``
    asset hard-links them into the published folder. Its metadata: the folder, the locales and
    the files; its data version: the digest of the folder."""
    folder = site.locale_shards_path()
    manifest = write_locale_shards(store.store(), folder, show_originals=site.show_originals)
    return dg.MaterializeResult(metadata={
        "folder": dg.MetadataValue.path(str(folder)),
        "locales": len(manifest["locales"]),
        "files": len(manifest["files"]),
    }, data_version=dg.DataVersion(folder_digest(folder)))


# follows new results and newly recorded failures of models' runs (conditions.py)
# it shows the test sets' segments, every model's translations and scores and the reported
# results besides what its other deps compute: deps on them (Dagster's staleness follows them)
@dg.asset(group_name="site", deps=[charts, error_analysis, run_failures, leaderboard,
                                   reported_results, "test_sets", "model_results", model_site,
                                   locale_shards],
          kinds={"html"},
          automation_condition=AFTER_NEW_RESULTS_AND_PARTS)
@redacting
def site(context: dg.AssetExecutionContext, site: SiteResource, store: StoreResource,
         hf_publish: HubPublishResource):
    """The static leaderboard site (self-contained; works from file:// and any static host):
    every cross-model page and shard rendered in full, and each registered model's part (the
    asset ``model_site``) and the locale shards (the asset ``locale_shards``) assembled into
    it. A model whose part is missing or was made from other rows than the database holds (its
    partition not materialised since) has its files made here, the same bytes, and is named in
    a warning and the metadata (``models_made_here``); so have the locale shards (a warning,
    ``locale_shards_made_here``). Its data version: the digest of the published folder
    (:attr:`~cultivar_assets.site.build.SiteSummary.digest`, equal to ``folder_digest`` of it),
    made from the bytes the build wrote and the digests each part's manifest records, without
    reading the folder again. The previous build is removed by a detached process once the new
    one is in place (``files.replace_folder``, ``detach_removal``): the asset does not wait
    for it."""
    card = card_for_store(store.store(), hf_publish.config())
    parts, unusable = current_parts(store.store(), {
        model_id: model_part_folder(site, model_id)
        for model_id in context.instance.get_dynamic_partitions(models_partitions.name)},
        site.show_originals)
    for message in unusable.values():
        context.log.warning(f"{message}; its files are made by this build")
    locales, why_not = current_locale_shards(store.store(), site.locale_shards_path(),
                                             site.show_originals)
    if why_not is not None:
        context.log.warning(f"{why_not}; the locale shards are made by this build")
    summary = build_site(store.store(), site.site_path(), card_markdown=card.page_body,
                         charts_dir=site.charts_path(), include_database=site.include_database,
                         show_originals=site.show_originals, query_page=site.query_page,
                         web_cache=site.web_cache_path(), progress=context.log.info,
                         model_parts=parts, locale_shards=locales, detach_removal=True)
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(summary.path / "index.html")),
        "pages": summary.pages,
        "files": summary.files,
        "megabytes": round(summary.bytes / 1e6, 2),
        "seconds": round(summary.seconds, 1),
        "models": summary.models,
        "assembled_models": summary.assembled_models,
        "linked_files": summary.linked_files,
        "copied_files": summary.copied_files,
        "models_made_here": dg.MetadataValue.json(sorted(unusable)),
        "locale_shards_made_here": why_not is not None,
        "locales": summary.locales,
        "largest_file": f"{summary.largest_file[0]} ({summary.largest_file[1] / 1e6:.1f} MB)",
        "megabytes_by_part": dg.MetadataValue.json(
            {part: round(size / 1e6, 2) for part, size in summary.sizes.items()}),
        "notes": dg.MetadataValue.json(list(summary.notes)),
    }, data_version=dg.DataVersion(summary.digest))
