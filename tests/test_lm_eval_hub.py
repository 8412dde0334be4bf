"""``cultivar export lm-eval DIR --dataset <Hub id>``: the published dataset read from the Hub (a
local Hub emulator on 127.0.0.1, tests/hub_server.py), its originals from its own columns; the
tasks hold exactly the served sentences."""

from __future__ import annotations

import json

import yaml
from data_helpers import cultivar_rows
from hub_server import HubServer, use_hub
from test_data_hub import CH, CULTIVAR_REPO, DE, ES, cultivar_files

from cultivar_assets.cli import main


def test_the_export_reads_a_hub_dataset_id(tmp_path, homes, monkeypatch, capsys):
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"data": {"kind": "demo",
                                               "hub_cache_dir": str(tmp_path / "hub-cache")},
                                      "metrics": {"bleu_tokenize": "13a"}}), "utf-8")
    with HubServer() as hub:
        use_hub(monkeypatch, hub.url, tmp_path)
        hub.add_repo(CULTIVAR_REPO, cultivar_files(originals=True))
        assert main(["--config", str(config), "export", "lm-eval", str(tmp_path / "tasks"),
                     "--dataset", CULTIVAR_REPO]) == 0
        assert hub.seen(contains=CULTIVAR_REPO)
    root = tmp_path / "tasks" / "cultivar"
    group = yaml.safe_load((root / "_cultivar.yaml").read_text("utf-8"))
    assert sorted(group["task"]) == sorted([
        f"cultivar_{CH}", f"cultivar_{DE}", f"cultivar_{ES}", "cultivar_flores_deu_Latn",
        "cultivar_flores_spa_Latn"])
    served = {(locale, row["id"]): row for locale, ids in ((DE, [0, 3]), (CH, [3, 5]), (ES, [1]))
              for row in cultivar_rows(locale, ids, originals=True)}

    def docs(task: str) -> list[dict]:
        return [json.loads(line) for line in
                (root / "docs" / f"{task}.json").read_text("utf-8").splitlines()]

    assert [(d["id"], d["source"]) for d in docs(f"cultivar_{CH}")] == [
        (i, served[(CH, i)]["source_localised"]) for i in (3, 5)]
    assert [(d["id"], d["source"]) for d in docs("cultivar_flores_spa_Latn")] == [
        (1, served[(ES, 1)]["source_original"])]
