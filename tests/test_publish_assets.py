"""The publication assets in process, on the demo data: dry run, and a push to the Hub emulator."""

from __future__ import annotations

import logging
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest
from hub_server import HubServer, use_hub

from cultivar_assets.assets import data_assets
from cultivar_assets.assets.publish_assets import (
    HubPublishResource,
    hf_dataset_folder,
    hf_dataset_push,
)
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings

pytestmark = pytest.mark.dagster_instances

ASSETS = [data_assets.test_sets, hf_dataset_folder, hf_dataset_push]
DEMO_LOCALES = ["cmn_Hans_China", "deu_Latn_Germany", "deu_Latn_Switzerland", "hin_Deva_India",
                "hin_Deva_US", "spa_Latn_Spain"]
TOKEN = "hf_ASSETsecret_9f8e7d6c5b4a"
REPO = "tester/cultivar-demo"


def materialise(tmp_path, instance, **publish) -> dg.ExecuteInProcessResult:
    resources = {**resources_from_settings(Settings(database=str(tmp_path / "demo.duckdb"))),
                 "hf_publish": HubPublishResource(**publish)}
    result = dg.materialize(ASSETS, resources=resources, instance=instance)
    assert result.success
    return result


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    [event] = result.asset_materializations_for_node(asset)
    return {key: value.value for key, value in event.metadata.items()}


def test_folder_and_dry_run(tmp_path, isolated_home):
    with dg.instance_for_test() as instance:
        result = materialise(tmp_path, instance)
    folder = metadata(result, "hf_dataset_folder")
    path = isolated_home / "publish" / "hf_dataset"  # the default folder
    assert folder["path"] == str(path)
    assert folder["demo_data"] is True and folder["include_originals"] is True
    assert folder["rows_per_locale"] == dict.fromkeys(DEMO_LOCALES, 12)
    paths = [f["path"] for f in folder["files"]]
    assert [p for p in paths if not p.startswith("lm_eval_tasks/")] == ["README.md"] + [
        f"data/{key}/test.parquet" for key in DEMO_LOCALES]
    # the test sets as lm-eval tasks: 6 locales, 4 languages (tests/test_lm_eval.py)
    tasks = [p for p in paths if p.startswith("lm_eval_tasks/cultivar/cultivar_")]
    assert len(tasks) == 10 and "lm_eval_tasks/cultivar/_cultivar.yaml" in paths
    assert folder["card_preview"].startswith("# Cultivar toolkit demo data\n")
    assert "**Demo data, not Cultivar.**" in folder["card_preview"]
    assert [c["config_name"] for c in folder["front_matter"]["configs"]] == DEMO_LOCALES
    assert "| README.md |" in folder["files_table"]
    assert pq.read_table(path / "data" / "spa_Latn_Spain" / "test.parquet").num_rows == 12

    push = metadata(result, "hf_dataset_push")
    assert push["pushed"] is False
    assert "repo_id" in push["reason"] and "HF_TOKEN" in push["reason"]
    assert push["token_env"] == "HF_TOKEN"
    assert push["files"] == folder["files"]
    assert push["commit_url"] == ""


def _files_containing(roots: list[Path], secret: bytes) -> list[Path]:
    return [path for root in roots for path in Path(root).rglob("*")
            if path.is_file() and secret in path.read_bytes()]


def test_push_through_dagster_never_records_the_token(tmp_path, isolated_home, monkeypatch,
                                                      caplog, capfd):
    caplog.set_level(logging.DEBUG)
    with HubServer() as hub:
        use_hub(monkeypatch, hub.url, tmp_path, token=TOKEN)  # HF_TOKEN=TOKEN
        with dg.instance_for_test() as instance:
            result = materialise(tmp_path, instance, repo_id=REPO, allow_demo_push=True,
                                 folder=str(tmp_path / "out"))
            events = [str(entry) for entry in instance.all_logs(result.run_id)]
            files = _files_containing([tmp_path, isolated_home, Path(instance.root_directory)],
                                      TOKEN.encode())

    push = metadata(result, "hf_dataset_push")
    [commit] = hub.commits
    assert push["pushed"] is True and push["reason"] == ""
    assert push["repo_id"] == REPO and push["endpoint"] == hub.url
    assert push["commit_url"] == f"{hub.url}/datasets/{REPO}/commit/{commit.sha}"
    assert sorted(commit.files) == [f["path"] for f in push["files"]]
    assert commit.files["data/deu_Latn_Germany/test.parquet"] == (
        tmp_path / "out" / "data" / "deu_Latn_Germany" / "test.parquet").read_bytes()

    assert {r.authorization for r in hub.seen("POST")} == {f"Bearer {TOKEN}"}
    for request in hub.requests:
        others = {k: v for k, v in request.headers.items() if k != "authorization"}
        assert TOKEN.encode() not in f"{request.path} {request.query} {others}".encode()
        assert TOKEN.encode() not in request.body
    assert files == []  # database, folder, Dagster storage and logs
    # the asset's log: README, 6 parquet files, 22 files of lm_eval_tasks/
    assert any(f"pushed 29 files to {REPO}" in text for text in events)
    assert not any(TOKEN in text for text in events)
    for node in ("test_sets", "hf_dataset_folder", "hf_dataset_push"):
        assert TOKEN not in str(result.asset_materializations_for_node(node))
    assert "/api/repos/create" in caplog.text  # huggingface_hub's and httpx's debug logs
    assert TOKEN not in caplog.text
    out, err = capfd.readouterr()
    assert "29 files" in err and REPO in err  # Dagster's console log
    assert TOKEN not in out + err


@pytest.mark.parametrize("repo_id", ["no-namespace", "a/b c"])
def test_a_bad_repo_id_is_a_configuration_error(repo_id):
    with pytest.raises(Exception, match="namespace"):
        HubPublishResource(repo_id=repo_id)


def test_definitions_with_the_publish_assets_load():
    from cultivar_assets.definitions import ASSETS as PROJECT_ASSETS
    from cultivar_assets.definitions import JOBS

    project_keys = {asset.key for asset in PROJECT_ASSETS}  # the graph's versioned copies
    extra = [a for a in (hf_dataset_folder, hf_dataset_push) if a.key not in project_keys]
    with dg.instance_for_test():
        defs = dg.Definitions(assets=[*PROJECT_ASSETS, *extra], jobs=JOBS, resources={
            **resources_from_settings(Settings()), "hf_publish": HubPublishResource()})
        dg.Definitions.validate_loadable(defs)
        keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert {"hf_dataset_folder", "hf_dataset_push"} <= keys
