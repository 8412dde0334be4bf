"""Pushing the dataset folder with huggingface_hub, against the local Hub emulator.

The emulator (tests/hub_server.py) listens on 127.0.0.1 and records every request; the uploads
are decoded from the commit payloads and compared byte for byte with the folder.
"""

from __future__ import annotations

import logging
import re

import pytest
import yaml
from hub_server import HubServer, use_hub

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.publish.card import parse_readme
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.publish.dataset_folder import build_dataset_folder, list_files
from cultivar_assets.publish.push import PublishError, push_dataset
from cultivar_assets.publish.records import read_publish_data
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_dataset

REPO = "tester/cultivar-demo"
TOKEN = "hf_TESTsecret0123456789abcdef"
OTHER = "xyz_Latn_Other"
EXISTING_README = f"""---
license: cc-by-sa-4.0
annotations_creators:
- expert-generated
source_datasets:
- extended|flores
language:
- xyz
configs:
- config_name: {OTHER}
  data_files:
  - split: test
    path: data/{OTHER}/test.parquet
- config_name: deu_Latn_Germany
  data_files: old/deu.csv
---

# An older card
"""


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("db") / "demo.duckdb")
    write_dataset(store, load_benchmark(DataConfig()))
    return read_publish_data(store)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer() as server:
        use_hub(monkeypatch, server.url, tmp_path)
        yield server


@pytest.fixture(params=[False, True], ids=["xet-installed", "xet-disabled"])
def xet_disabled(request, monkeypatch):
    """upload_folder takes the pipelined path with hf_xet and create_commit without it."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", request.param)
    return request.param


def config(tmp_path, **kwargs) -> PublishConfig:
    defaults = {"folder": str(tmp_path / "hf_dataset"), "repo_id": REPO, "allow_demo_push": True}
    return PublishConfig(**{**defaults, **kwargs})


def assert_token_only_in_authorization(hub: HubServer, *texts: str) -> None:
    writes = [r for r in hub.requests if r.method == "POST"]
    assert writes and {r.authorization for r in writes} == {f"Bearer {TOKEN}"}
    for request in hub.requests:
        others = {k: v for k, v in request.headers.items() if k != "authorization"}
        seen = f"{request.path} {request.query} {others}".encode() + request.body
        assert TOKEN.encode() not in seen, request.path
    for text in texts:
        assert TOKEN not in text


@pytest.mark.parametrize(("kwargs", "token", "reason"), [
    ({}, None, "no token: the environment variable HF_TOKEN is not set"),
    ({"repo_id": None}, TOKEN, "no repo_id configured"),
    ({"allow_demo_push": False}, TOKEN, "the data is the bundled demo data"),
])
def test_dry_run_makes_no_request_and_lists_the_files(hub, demo_data, tmp_path, kwargs, token,
                                                      reason):
    cfg = config(tmp_path, **kwargs)
    folder = build_dataset_folder(demo_data, cfg)
    result = push_dataset(folder.path, cfg, is_demo=True, token=token)

    assert result.pushed is False and result.commit_url is None
    assert reason in result.reason
    assert result.files == folder.files == list_files(folder.path)
    meta = result.metadata()
    assert meta["files"][0] == {"path": "README.md", "size": folder.files[0].size,
                                "sha256": folder.files[0].sha256}
    assert len(meta["files"]) == 7 and all(len(f["sha256"]) == 64 for f in meta["files"])
    assert hub.requests == []


def test_offline_mode_is_a_dry_run(demo_data, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    cfg = config(tmp_path)
    folder = build_dataset_folder(demo_data, cfg)
    result = push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)
    assert result.pushed is False and "offline" in result.reason


def test_push_creates_the_repo_and_uploads_every_file(hub, demo_data, tmp_path, xet_disabled,
                                                      caplog):
    caplog.set_level(logging.DEBUG)
    cfg = config(tmp_path, private=True)
    folder = build_dataset_folder(demo_data, cfg)
    result = push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)

    assert result.pushed is True and result.reason is None and result.kept_configs == []
    repo = hub.repos[("dataset", REPO)]
    assert repo.private is True
    [commit] = hub.commits
    assert (commit.repo_id, commit.repo_type, commit.summary) == (
        REPO, "dataset", "Update the Cultivar dataset")
    assert result.commit_url == f"{hub.url}/datasets/{REPO}/commit/{commit.sha}"
    local = {f.path: (folder.path / f.path).read_bytes() for f in folder.files}
    assert commit.files == local  # README.md as built (nothing to merge) and every parquet file
    assert commit.deleted == []
    assert repo.files == local
    assert hub.validated and set(hub.validated) == {local["README.md"].decode()}
    assert [f.as_dict() for f in result.files] == [f.as_dict() for f in folder.files]
    assert [r.path for r in hub.seen("POST")][:2] == ["/api/repos/create", "/api/validate-yaml"]
    assert_token_only_in_authorization(hub, caplog.text, str(result), str(result.metadata()))


def test_second_push_keeps_other_configs_keys_and_files(hub, demo_data, tmp_path, xet_disabled,
                                                        caplog):
    caplog.set_level(logging.DEBUG)
    other_data = b"PAR1 another locale's data"
    hub.add_repo(REPO, {"README.md": EXISTING_README.encode(),
                        f"data/{OTHER}/test.parquet": other_data,
                        "old/deu.csv": b"id,text\n"})
    cfg = config(tmp_path)
    folder = build_dataset_folder(demo_data, cfg)
    result = push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)

    assert result.kept_configs == [OTHER]
    [commit] = hub.commits
    uploaded = parse_readme(commit.files["README.md"].decode())
    ours = folder.card.front_matter
    assert uploaded.body == folder.card.body
    front = uploaded.front_matter
    names = [c["config_name"] for c in front["configs"]]
    assert names == [c["config_name"] for c in ours["configs"]] + [OTHER]
    assert front["configs"][-1] == yaml.safe_load(EXISTING_README.split("---")[1])["configs"][0]
    assert front["configs"][1]["data_files"] == [
        {"split": "test", "path": "data/deu_Latn_Germany/test.parquet"}]  # ours replaced it
    assert front["annotations_creators"] == ["expert-generated"]
    assert front["source_datasets"] == ["extended|flores"]
    assert front["language"] == ours["language"] + ["xyz"]
    assert {k: front[k] for k in ours if k not in ("configs", "language")} == {
        k: v for k, v in ours.items() if k not in ("configs", "language")}
    # nothing deleted: the other locale's data (and the old file) stay
    assert commit.deleted == []
    repo = hub.repos[("dataset", REPO)]
    assert repo.files[f"data/{OTHER}/test.parquet"] == other_data
    assert "old/deu.csv" in repo.files
    assert hub.seen("GET", "/resolve/main/README.md")
    assert result.files[0].path == "README.md"
    assert result.files[0].size == len(commit.files["README.md"])
    # the local folder keeps the card as built
    assert (folder.path / "README.md").read_text(encoding="utf-8") == folder.card.to_readme()
    assert_token_only_in_authorization(hub, caplog.text, str(result))

    # pushing the same again: the parquet files are unchanged and skipped by the client
    hub.commits.clear()
    push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)
    assert hub.commits == []  # README.md unchanged too: no empty commit


def test_a_token_without_write_access_fails_without_showing_it(hub, demo_data, tmp_path):
    hub.write_tokens = {"some-other-token"}
    cfg = config(tmp_path)
    folder = build_dataset_folder(demo_data, cfg)
    with pytest.raises(PublishError, match=rf"{re.escape(REPO)}\b.*\(HTTP 403\)") as info:
        push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)
    assert hub.url in str(info.value)  # the endpoint is named ...
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)  # ... never the token
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert hub.commits == []


def test_an_unreachable_endpoint_is_named(hub, demo_data, tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cfg = config(tmp_path).model_copy(update={"endpoint": f"http://127.0.0.1:{port}"})
    folder = build_dataset_folder(demo_data, cfg)
    with pytest.raises(PublishError, match=rf"http://127\.0\.0\.1:{port}\b"):
        push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)


def test_an_endpoint_answering_other_json_is_named_with_what_it_lacked(hub, demo_data,
                                                                       tmp_path):
    """A server at the endpoint that answers 200 with JSON that is not the Hub's."""
    hub.posts_answered["/api/repos/create"] = (200, {"status": "ok", "name": REPO})
    cfg = config(tmp_path)
    folder = build_dataset_folder(demo_data, cfg)
    with pytest.raises(PublishError) as info:
        push_dataset(folder.path, cfg, is_demo=True, token=TOKEN)
    message = str(info.value)
    assert "\n" not in message
    assert hub.url in message and REPO in message and "Hub API" in message
    assert "KeyError: 'url'" in message and "publish.endpoint" in message
    assert TOKEN not in message and hub.commits == []


def test_push_needs_a_built_folder(tmp_path):
    with pytest.raises(PublishError, match=rf"{re.escape(str(tmp_path / 'nothing'))}.*"
                       r"\bhf_dataset_folder\b"):
        push_dataset(tmp_path / "nothing", config(tmp_path), is_demo=True, token=TOKEN)


def test_a_folder_built_from_other_data_is_not_pushed(tmp_path, hub):
    """The folder of another data source (e.g. the demo) is never pushed as this dataset."""
    store = Store(tmp_path / "db.duckdb")
    write_dataset(store, load_benchmark(DataConfig()))
    cfg = config(tmp_path)
    folder = build_dataset_folder(read_publish_data(store), cfg)
    with pytest.raises(PublishError, match=rf"{re.escape(str(folder.path))}\b.*manifest.*"
                       r"\bhf_dataset_folder\b"):
        push_dataset(folder.path, cfg, is_demo=False, token=TOKEN, fingerprint="0" * 64)
    assert not [r for r in hub.requests if r.method == "POST"]
