"""The runner's stages (runner/stages.py) hold every materialisable asset of the project's
graph exactly once, and each stage's job selects the assets the stage materialises with it."""

from __future__ import annotations

from collections import Counter

from cultivar_assets.assets.graph import PIPELINE
from cultivar_assets.runner.pipeline import definitions_for
from cultivar_assets.runner.stages import STAGES
from cultivar_assets.settings import Settings


def test_every_asset_is_in_exactly_one_stage():
    held = Counter(asset for stage in STAGES for asset in stage.assets)
    materialisable = {asset.key.to_user_string() for asset in PIPELINE.assets
                      if getattr(asset, "is_materializable", False)}
    assert set(held) == materialisable
    assert [asset for asset, count in held.items() if count > 1] == []


def test_each_stage_job_selects_its_assets(tmp_path):
    defs = definitions_for(Settings(database=str(tmp_path / "db.duckdb")), PIPELINE)
    for stage in STAGES:
        job = defs.resolve_job_def(stage.job)
        selected = {key.to_user_string() for key in job.asset_layer.executable_asset_keys}
        assert set(stage.assets) <= selected, (stage.timing, set(stage.assets) - selected)
