"""The checks of per-model assets are partitioned, and a failing ``all_test_sets_scored`` (the
leaderboard would publish numbers that leave test sets out) blocks the leaderboard."""

from __future__ import annotations

import dataclasses

import dagster as dg
import pytest
from conftest import COPY_ENTRY, copy_baseline_settings

from cultivar_assets.assets import model_assets
from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.resources import resources_from_settings

pytestmark = pytest.mark.dagster_instances
MODEL = COPY_ENTRY["id"]


def test_the_per_model_checks_are_partitioned_and_the_scores_check_blocks():
    specs = {spec.name: spec for asset in ASSETS for spec in asset.check_specs}
    for name in ("no_empty_hypotheses", "all_test_sets_scored"):
        assert specs[name].partitions_def == model_assets.models_partitions
    assert {name for name, spec in specs.items() if spec.blocking} == {"all_test_sets_scored"}


def test_a_failing_blocking_check_stops_the_leaderboard_in_the_same_run(tmp_path, monkeypatch):
    settings = copy_baseline_settings(tmp_path)
    resources = resources_from_settings(settings)
    real = model_assets.compute_scores

    def leaves_one_test_set_out(*args, **kwargs):
        result = real(*args, **kwargs)
        first = min(test_set for test_set, _ in result.scores)
        return dataclasses.replace(result, scores={
            key: value for key, value in result.scores.items() if key[0] != first})

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", [MODEL])
        for selection, partition in ((["test_sets"], None), (["translations"], MODEL)):
            assert dg.materialize(ASSETS, selection=selection, partition_key=partition,
                                  instance=instance, resources=resources).success
        monkeypatch.setattr(model_assets, "compute_scores", leaves_one_test_set_out)
        result = dg.materialize(ASSETS, selection=["scores", "leaderboard"], partition_key=MODEL,
                                instance=instance, resources=resources, raise_on_error=False)
        assert instance.get_latest_materialization_event(dg.AssetKey("leaderboard")) is None
        assert instance.get_latest_materialization_event(dg.AssetKey("scores")) is not None
        assert not result.success
        (check,) = result.get_asset_check_evaluations()
        assert (check.check_name, check.passed, check.partition) == (
            "all_test_sets_scored", False, MODEL)
