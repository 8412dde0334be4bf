"""The asset ``model_site`` (assets/site_assets.py): a model's part of the site, written only once
the database holds the model's files as the storage root has them, and assembled by ``site``."""

from __future__ import annotations

import dagster as dg
import pytest
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.site.config import SiteConfig
from cultivar_assets.site.model_part import ModelPartError
from cultivar_assets.site.pages import model_slug
from cultivar_assets.versions.rows import folder_digest

pytestmark = pytest.mark.dagster_instances
MODEL = COPY_ENTRY["id"]


def test_a_models_part_waits_for_its_rows_and_the_site_assembles_it(tmp_path):
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    settings = Settings(database=str(tmp_path / "db.duckdb"), models_file=str(models),
                        models=[MODEL], metrics=MetricConfig(bleu_tokenize="13a"),
                        site=SiteConfig(output_dir=str(tmp_path / "site"), query_page="off",
                                        charts_dir=str(tmp_path / "charts"),
                                        model_parts_dir=str(tmp_path / "parts")))
    resources = resources_from_settings(settings)
    part = tmp_path / "parts" / model_slug(MODEL)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", [MODEL])
        for selection, partition in ((["test_sets"], None),
                                     (["translations", "scores"], MODEL)):
            assert dg.materialize(ASSETS, selection=selection, partition_key=partition,
                                  resources=resources, instance=instance).success
        # the model's files are not in the database yet: refused, nothing written
        with pytest.raises(ModelPartError, match=rf"model {MODEL}: .* holds none of the files "
                           r"in .*; materialise model_results first"):
            dg.materialize(ASSETS, selection=["model_site"], partition_key=MODEL,
                           resources=resources, instance=instance)
        assert not part.exists()
        assert dg.materialize(ASSETS, selection=["model_results", "leaderboard",
                                                 "error_annotation_tool", "error_analysis",
                                                 "reported_results", "charts"],
                              resources=resources, instance=instance).success
        result = dg.materialize(ASSETS, selection=["model_site"], partition_key=MODEL,
                                resources=resources, instance=instance)
        (event,) = result.get_asset_materialization_events()
        assert event.materialization.tags["dagster/data_version"] == folder_digest(part)
        result = dg.materialize(ASSETS, selection=["site"], resources=resources,
                                instance=instance)
        metadata = result.get_asset_materialization_events()[0].materialization.metadata
        assert metadata["assembled_models"].value == 1
        assert metadata["models_made_here"].value == []
    for rel in ("data/hyp", "data/stats", "downloads/translations"):
        (made,) = (part / rel).iterdir()
        assert (tmp_path / "site" / rel / made.name).read_bytes() == made.read_bytes()
