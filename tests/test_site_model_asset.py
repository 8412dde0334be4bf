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

pytestmark = [pytest.mark.dagster_instances, pytest.mark.usefixtures("shared_site_caches")]
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
        (event,) = result.get_asset_materialization_events()
        metadata = event.materialization.metadata
        assert metadata["assembled_models"].value == 1
        assert metadata["models_made_here"].value == []
        # its data version: the published folder's digest, made from what the build wrote
        assert event.materialization.tags["dagster/data_version"] == folder_digest(
            tmp_path / "site")
    for rel in ("data/hyp", "data/stats", "downloads/translations"):
        (made,) = (part / rel).iterdir()
        assert (tmp_path / "site" / rel / made.name).read_bytes() == made.read_bytes()


def test_several_models_parts_in_one_run_keep_each_partitions_provenance(tmp_path):
    """A run of several ``model_site`` partitions (BackfillPolicy.single_run: a backfill, the
    runner's stage) writes every part with one read of the dataset; Dagster records a
    materialisation per partition (one input data version for the run's range of ``scores``
    partitions, with the storage id of the latest it read), and its stale status judges each
    partition by its own ``scores`` partition's records after that id: every partition is fresh
    afterwards, and a new data version of one model's scores makes that model's part alone
    stale."""
    from cultivar_assets.assets.graph import PIPELINE
    from cultivar_assets.assets.staleness import stale_assets
    from cultivar_assets.processes import interruptions
    from cultivar_assets.runner.pipeline import _Materialiser
    from cultivar_assets.runner.stages import STAGES

    other = {**COPY_ENTRY, "id": "copy-source-baseline-2"}
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY, other])
    ids = [MODEL, other["id"]]
    settings = Settings(database=str(tmp_path / "db.duckdb"), models_file=str(models),
                        models=ids, metrics=MetricConfig(bleu_tokenize="13a"),
                        site=SiteConfig(output_dir=str(tmp_path / "site"), query_page="off",
                                        charts_dir=str(tmp_path / "charts"),
                                        model_parts_dir=str(tmp_path / "parts")))
    resources = resources_from_settings(settings)
    defs = dg.Definitions(assets=list(PIPELINE.assets), jobs=list(PIPELINE.jobs),
                          resources=resources)
    (stage,) = [s for s in STAGES if s.kind == "batch"]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", ids)
        assert dg.materialize(ASSETS, selection=["test_sets"], resources=resources,
                              instance=instance).success
        for model_id in ids:
            assert dg.materialize(ASSETS, selection=["translations", "scores"],
                                  partition_key=model_id, resources=resources,
                                  instance=instance).success
        assert dg.materialize(ASSETS, selection=["model_results"], resources=resources,
                              instance=instance).success
        said: list[str] = []
        with interruptions() as signals:  # the runner's stage "site of model": one run
            runner = _Materialiser(defs, instance, said.append, signals)
            seconds = runner.batch(stage, ids)
        (run,) = [job for job, _ in runner.runs]
        assert run == "build_model_site" and sorted(seconds) == sorted(ids)
        assert said == [f"  model_site [{m}]: never materialised, materialising" for m in ids]
        records = instance.fetch_materializations(dg.AssetKey("model_site"), limit=10).records
        assert {r.run_id for r in records} == {runner.runs[0][1]}
        events = {r.partition_key: r.asset_materialization for r in records}
        assert sorted(events) == sorted(ids)
        assert all(e.metadata["seconds"].value == seconds[m] for m, e in events.items())
        # a part written by the threads while the one before it was awaited takes no time of
        # its own (progress: the seconds since the previous part was done); the run's do
        assert sum(seconds.values()) > 0
        for model_id in ids:
            part = tmp_path / "parts" / model_slug(model_id)
            metadata = events[model_id].metadata
            assert metadata["folder"].value == str(part)
            assert metadata["folder_digest"].value == folder_digest(part)
            assert metadata["seconds"].value >= 0
        stale = stale_assets(defs, instance)
        assert not [key for key in stale if key[0] == "model_site"]
        instance.report_runless_asset_event(dg.AssetMaterialization(
            "scores", partition=ids[1], tags={"dagster/data_version": "another"}))
        stale = stale_assets(defs, instance)
        assert [key for key in stale if key[0] == "model_site"] == [("model_site", ids[1])]
