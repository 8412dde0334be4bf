"""A small built pipeline (the demo's construction for one locale, the copy baseline) as Dagster
sees it: its Definitions, its sources observed, and what Dagster reports stale or missing
materialised until nothing is (cultivar_assets/assets/staleness.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.assets.sources import SOURCES
from cultivar_assets.assets.staleness import stale_assets
from cultivar_assets.construction.config import demo_construction
from cultivar_assets.data.sources import DataConfig
from cultivar_assets.error_analysis.config import demo_error_analysis
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.site.config import SiteConfig

LOCALES = ["hin_Deva_US"]
MODEL = COPY_ENTRY["id"]


def small_built_settings(root: Path) -> Settings:
    """The demo's built pipeline for :data:`LOCALES` and the copy baseline, every file in
    ``root`` (the demo's annotation files copied there)."""
    construction = demo_construction()
    annotations = root / "annotations"
    shutil.copytree(construction.annotation.folder_path(), annotations)
    errors = root / "errors"  # none returned yet (the demo's files are for other systems)
    errors.mkdir()
    construction.localisation = construction.localisation.model_copy(update={
        "locales": LOCALES, "cache_dir": str(root / "localisation-cache")})
    construction.annotation = construction.annotation.model_copy(update={
        "folder": str(annotations), "tools_dir": str(root / "tools")})
    construction.dataset = construction.dataset.model_copy(update={"folder": str(root / "ds")})
    construction.selection = construction.selection.model_copy(update={
        "review_dir": str(root / "review")})
    models = write_models_file(root / "models.yaml", [COPY_ENTRY])
    return Settings(
        database=str(root / "results.duckdb"), models_file=str(models), models=[MODEL],
        data=DataConfig(kind="built"),
        metrics=MetricConfig(bleu_tokenize="13a", bootstrap_replicates=50),
        construction=construction,
        site=SiteConfig(output_dir=str(root / "site"), charts_dir=str(root / "charts"),
                        query_page="off"),
        publish={"folder": str(root / "hub")},
        error_analysis=demo_error_analysis().model_copy(update={
            "locales": LOCALES, "annotations_dir": str(errors),
            "tool_dir": str(root / "error-tools")}))


def definitions(settings: Settings) -> dg.Definitions:
    return dg.Definitions(assets=[*ASSETS, *SOURCES], resources=resources_from_settings(settings))


def pipeline_items(defs: dg.Definitions) -> set[tuple[str, str | None]]:
    """The (asset, partition) pairs of the small pipeline: its locales, its model."""
    graph = defs.resolve_asset_graph()
    items = set()
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        partitions = node.partitions_def
        keys = ([None] if partitions is None else
                LOCALES if partitions.__class__.__name__ == "StaticPartitionsDefinition"
                else [MODEL])
        items.update((key.to_user_string(), p) for p in keys)
    return items


def stale_in_pipeline(defs, instance) -> dict[tuple[str, str | None], list[str]]:
    wanted = pipeline_items(defs)
    return {item: causes for item, causes in stale_assets(defs, instance).items()
            if item in wanted}


def ancestors(graph, key: str) -> set[str]:
    """The keys of every asset above ``key`` in the graph."""
    found: set[str] = set()
    todo = [dg.AssetKey.from_user_string(key)]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys:
            if parent.to_user_string() not in found:
                found.add(parent.to_user_string())
                todo.append(parent)
    return found


# What the graph does not order and the runner's stages do (runner/stages.py): a model's part of
# the site reads the rows that model_results loads (assets/site_assets.py: model_site).
RUN_AFTER = {"model_site": {"model_results"}}


def materialise_stale(settings: Settings, defs: dg.Definitions, instance
                      ) -> list[set[tuple[str, str | None]]]:
    """Materialise what Dagster reports stale or missing until nothing is: each round, the
    stale items whose stale ancestors are all of their own partition and that wait for no stale
    item (:data:`RUN_AFTER`), one run per partition. Returns the items each round
    materialised."""
    graph = defs.resolve_asset_graph()
    resources = resources_from_settings(settings)
    rounds = []
    while stale := stale_in_pipeline(defs, instance):
        ready = set(stale)
        changed = True
        while changed:  # drop items with a stale ancestor of another partition (or not ready)
            changed = False
            for item in list(ready):
                key, partition = item
                names = ancestors(graph, key)
                if any((other[0] in names and (other[1] != partition or other not in ready))
                       or other[0] in RUN_AFTER.get(key, ())
                       for other in stale if other != item):
                    ready.discard(item)
                    changed = True
        assert ready, f"nothing can run, yet stale: {stale}"
        for partition in {p for _, p in ready}:
            selection = [key for key, p in ready if p == partition]
            result = dg.materialize([*ASSETS, *SOURCES], selection=selection,
                                    partition_key=partition, instance=instance,
                                    resources=resources)
            assert result.success
        rounds.append(ready)
        assert len(rounds) < 12, rounds
    return rounds
