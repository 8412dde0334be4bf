"""Dagster's own stale status (what the UI shows) over the project's assets and source assets:
after one full run nothing is stale or missing, a rerun changes nothing, and a changed input
makes exactly what reads it stale, then what reads those once they are materialised again with
other data (cultivar_assets/assets/staleness.py)."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from staleness_helpers import (
    MODEL,
    definitions,
    materialise_stale,
    pipeline_items,
    small_built_settings,
    stale_in_pipeline,
)

from cultivar_assets.assets.staleness import observe_sources, stale_resolver

pytestmark = pytest.mark.dagster_instances


def _data_versions(defs, instance) -> dict:
    resolver = stale_resolver(defs, instance)
    return {(key, partition): resolver.get_current_data_version(
        dg.AssetKey.from_user_string(key), partition).value
        for key, partition in pipeline_items(defs)}


def _edit_annotation_file(settings, locale: str) -> None:
    """A post-editor's change: one final source sentence of ``locale``'s returned file."""
    (path,) = Path(settings.construction.annotation.folder).glob(f"{locale}-*.annotations.json")
    document = json.loads(path.read_text("utf-8"))
    final = document["items"][0]["final"]
    final["source"] = final["source"].replace("टायलर जॉनसन", "माइकल स्मिथ", 1)
    assert final["source"] != json.loads(path.read_text("utf-8"))["items"][0]["final"]["source"]
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2), "utf-8")


@pytest.mark.slow  # ~20 in-process runs of the whole graph: about 2 minutes on 2 cores
def test_dagster_reports_exactly_what_a_changed_input_makes_stale(tmp_path):
    settings = small_built_settings(tmp_path)
    defs = definitions(settings)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", [MODEL])
        observe_sources(defs, instance)
        missing = stale_in_pipeline(defs, instance)
        assert set(missing) == pipeline_items(defs)  # nothing materialised yet
        assert missing[("annotations", "hin_Deva_US")] == ["never materialised"]
        rounds = materialise_stale(settings, defs, instance)
        assert stale_in_pipeline(defs, instance) == {}

        # the sources observed again and everything run again (warm caches): the same data
        # versions, nothing stale
        before = _data_versions(defs, instance)
        observe_sources(defs, instance)
        for items in rounds:
            for partition in {p for _, p in items}:
                selection = [key for key, p in items if p == partition]
                assert dg.materialize(defs.assets, selection=selection, partition_key=partition,
                                      instance=instance, resources=defs.resources).success
        assert stale_in_pipeline(defs, instance) == {}
        after = _data_versions(defs, instance)
        # the dataset folder (its card), its push and the site state when the dataset was
        # built and the model's run finished, as stored: new dates, new bytes, other versions
        assert {item for item in before if before[item] != after[item]} == {
            ("hf_dataset_folder", None), ("hf_dataset_push", None), ("site", None)}

        # one returned annotation file edited: its locale's annotations are stale, then, as
        # each is materialised again with other data, what reads it
        _edit_annotation_file(settings, "hin_Deva_US")
        observe_sources(defs, instance)
        assert stale_in_pipeline(defs, instance) == {("annotations", "hin_Deva_US"): [
            "has a new dependency data version: annotation_files[hin_Deva_US]"]}
        redone = set().union(*materialise_stale(settings, defs, instance))
        # the copy baseline's output follows the edited source sentence (new translations,
        # scores); its Hindi names share no character with the English reference, so the
        # statistics' rows, the leaderboard's data version, are unchanged: the charts (which
        # read only those and the reported results) are not redone
        assert redone == {
            ("annotations", "hin_Deva_US"), ("cultivar_dataset", None), ("test_sets", None),
            ("translations", MODEL), ("scores", MODEL), ("model_results", None),
            ("model_site", MODEL), ("locale_shards", None), ("leaderboard", None),
            ("error_annotation_tool", None), ("error_analysis", None), ("site", None),
            ("hf_dataset_folder", None), ("hf_dataset_push", None)}

        # a settings section changed: exactly the assets that read it
        metrics = settings.metrics.model_copy(update={"bootstrap_replicates": 60})
        defs = definitions(settings.model_copy(update={"metrics": metrics}))
        observe_sources(defs, instance)
        cause = ["has a new dependency data version: settings/metrics"]
        assert stale_in_pipeline(defs, instance) == {
            ("scores", MODEL): cause, ("leaderboard", None): cause,
            ("reported_results", None): cause, ("hf_dataset_folder", None): cause}


def test_every_source_is_read_and_every_source_dep_is_a_source():
    from cultivar_assets.assets.graph import ASSETS
    from cultivar_assets.assets.sources import SOURCE_DEPS, SOURCES

    sources = {source.key.to_user_string() for source in SOURCES}
    named = {key for keys in SOURCE_DEPS.values() for key in keys}
    assert named == sources
    deps = {asset.key.to_user_string(): {dep.asset_key.to_user_string()
                                         for spec in asset.specs for dep in spec.deps}
            for asset in ASSETS}
    assert all(set(keys) <= deps[asset] for asset, keys in SOURCE_DEPS.items())
