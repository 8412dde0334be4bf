"""The localisation step as a Dagster asset (partitioned by locale) and as `cultivar build
localise`, against a local OpenAI-compatible server; bad input names the file and the item and
writes nothing."""

from __future__ import annotations

import duckdb
import pytest
import yaml
from localisation_helpers import localising_answer
from openai_server import FakeOpenAIServer

from cultivar_assets.assets.construction_assets import locale_partitions
from cultivar_assets.assets.graph import ASSETS, JOBS
from cultivar_assets.cli import main
from cultivar_assets.construction.config import (
    ConstructionConfig,
    LocalisationConfig,
    demo_construction,
)
from cultivar_assets.data.locales import all_locales
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings

pytestmark = pytest.mark.dagster_instances

KEY_ENV = "CULTIVAR_TEST_LOCALISER_KEY"
KEY = "sk-asset-secret-9d2c41ee"


@pytest.fixture
def server(monkeypatch):
    import openai._base_client as base_client

    monkeypatch.setattr(base_client, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(base_client, "MAX_RETRY_DELAY", 0.005)
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = FakeOpenAIServer(answer=localising_answer).start()
    yield fake
    fake.stop()


def settings_for(tmp_path, server, **localisation) -> Settings:
    construction = demo_construction().model_copy(update={"localisation": LocalisationConfig(
        model="gpt-test", engine_options={"base_url": server.url, "api_key_env": KEY_ENV},
        price_input_per_million=1.0, price_output_per_million=4.0,
        cache_dir=str(tmp_path / "cache"), **localisation)})
    return Settings(database=str(tmp_path / "build.duckdb"), construction=construction)


def materialise(settings, instance, selection, partition=None):
    import dagster as dg

    return dg.materialize(ASSETS, selection=selection, partition_key=partition,
                          instance=instance, resources=resources_from_settings(settings),
                          raise_on_error=False)


def metadata(result, asset: str) -> dict:
    event = result.asset_materializations_for_node(asset)[0]
    return {k: v.value for k, v in event.metadata.items()}


def test_one_partition_per_locale_of_the_registry():
    assert locale_partitions.get_partition_keys() == [loc.key for loc in all_locales()]
    job = next(j for j in JOBS if j.name == "build_benchmark")
    assert {"selected_instances", "localised_drafts"} <= {
        key.path[-1] for key in job.selection.resolve(ASSETS)}


def test_the_asset_localises_one_locale_and_records_usage_and_cost(tmp_path, server):
    import dagster as dg

    settings = settings_for(tmp_path, server)
    with dg.instance_for_test() as instance:
        assert materialise(settings, instance, ["selected_instances"]).success
        result = materialise(settings, instance, ["localised_drafts"], "hin_Deva_US")
        assert result.success
        meta = metadata(result, "localised_drafts")
        again = materialise(settings, instance, ["localised_drafts"], "hin_Deva_US")
        events = [str(e) for e in instance.all_logs(again.run_id)]
    assert meta["locale"] == "hin_Deva_US" and meta["drafts"] == 12 and meta["flagged"] == 0
    assert meta["generated"] == 12 and meta["requests_from_cache"] == 0
    assert meta["prompt_tokens"] > 1000 and meta["currency"] == "USD"
    assert meta["estimated_cost"] == pytest.approx(
        (meta["prompt_tokens"] * 1.0 + meta["completion_tokens"] * 4.0) / 1e6)
    assert meta["task_id"].startswith("hin_Deva_US-") and meta["prompt"] == "cultivar-paper"
    assert len(server.requests) == 12  # the second materialisation came from the cache
    assert all(KEY not in text for text in events)
    with duckdb.connect(settings.database, read_only=True) as con:
        row = con.execute("SELECT n_drafts, task_id, estimated_cost, estimated_cost_this_run "
                          "FROM localisation_summary").fetchone()
        drafts = con.execute("SELECT count(*), count(*) FILTER (flagged), sum(prompt_tokens) "
                             "FROM localised_drafts WHERE locale = 'hin_Deva_US'").fetchone()
    assert row[:3] == (12, meta["task_id"], pytest.approx(meta["estimated_cost"]))
    assert row[3] == 0  # the second run generated nothing
    assert drafts == (12, 0, meta["prompt_tokens"])


def test_the_asset_fails_clearly_before_a_selection(tmp_path, server):
    import dagster as dg

    with dg.instance_for_test() as instance:
        result = materialise(settings_for(tmp_path, server), instance, ["localised_drafts"],
                             "deu_Latn_Germany")
    assert not result.success
    event = next(e for e in result.all_events if e.is_step_failure)
    message = str(event.step_failure_data.error)
    assert "selection" in message and "selected_instances" in message


def write_settings(tmp_path, server, **localisation) -> str:
    settings = settings_for(tmp_path, server, **localisation)
    path = tmp_path / "cultivar.yaml"
    path.write_text(yaml.safe_dump(settings.model_dump(mode="json")), "utf-8")
    return str(path)


def localisation_rows(database) -> int:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute("SELECT count(*) FROM raw.localised_drafts").fetchone()[0]


def test_cli_build_localise(tmp_path, server, capsys):
    config = write_settings(tmp_path, server, locales=["spa_Latn_Spain", "cmn_Hans_China"])
    assert main(["--config", config, "build", "localise"]) == 1
    err = capsys.readouterr().err
    assert "selected_instances" in err and "cultivar build select" in err
    assert main(["--config", config, "build", "select"]) == 0
    assert main(["--config", config, "build", "localise"]) == 0
    out = capsys.readouterr().out
    assert "spa_Latn_Spain: 12 drafts, 0 flagged, 0 retried" in out
    assert "cmn_Hans_China: 12 drafts" in out and "estimated cost 0.00" in out
    assert KEY not in out and localisation_rows(tmp_path / "build.duckdb") == 24

    assert main(["--config", config, "build", "localise", "--locale", "deu_Latn_Austria"]) == 1
    error = capsys.readouterr().err
    assert "'deu_Latn_Austria'" in error and "deu_Latn_Germany" in error
    assert localisation_rows(tmp_path / "build.duckdb") == 24


def test_a_prompt_template_missing_a_placeholder_writes_nothing(tmp_path, server, capsys):
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text(yaml.safe_dump({"templates": {"mine": {
        "kind": "chat", "system": "Localise this {src_name}-{tgt_name} pair.",
        "user": "{src_name}: {src_text}\n{tgt_name}: {tgt_text}"}}}), "utf-8")
    config = write_settings(tmp_path, server, prompt="mine", prompts_file=str(prompts))
    assert main(["--config", config, "build", "select"]) == 0
    capsys.readouterr()
    assert main(["--config", config, "build", "localise", "--locale", "spa_Latn_Spain"]) == 1
    error = capsys.readouterr().err
    assert f"{prompts}: " in error
    assert "template 'mine': " in error and "{src_location}" in error
    assert localisation_rows(tmp_path / "build.duckdb") == 0 and not server.requests


def test_a_locale_whose_language_the_source_lacks(tmp_path, server):
    from cultivar_assets.construction.build import build_localisation
    from cultivar_assets.construction.errors import ConstructionError
    from cultivar_assets.store.database import Store

    settings = settings_for(tmp_path, server)
    construction: ConstructionConfig = settings.construction
    main_args = ["--config", write_settings(tmp_path, server), "build", "select"]
    assert main(main_args) == 0
    with pytest.raises(ConstructionError, match=r"jpn_Jpan_Japan\b.*\bjpn_Jpan\b.*\b12\b"):
        build_localisation(construction.localisation, Store(settings.database),
                           ["jpn_Jpan_Japan"], show_bar=False)
    assert localisation_rows(tmp_path / "build.duckdb") == 0
