"""FLORES+ from the Hub in both layouts (v2.x parquet, v4.x jsonl), against a local Hub emulator.

The emulator (tests/hub_server.py) listens on 127.0.0.1; every sentence served is made up.
"""

from __future__ import annotations

import json

import pytest
from data_helpers import cultivar_rows, parquet_bytes
from hub_server import HubServer, use_hub

from cultivar_assets.data.flores import HubFlores
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig, load_source_benchmark
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import DataError

REPO = "tester/flores-plus-mini"
ORDER = [3, 0, 4, 1, 2]  # rows deliberately not in id order
LANGS = {"eng_Latn": ("eng", "Latn", "stan1293"), "deu_Latn": ("deu", "Latn", "stan1295"),
         "spa_Latn": ("spa", "Latn", "stan1288")}


def flores_plus_rows(code: str, split: str = "dev", v4: bool = False) -> list[dict]:
    iso, script, glotto = LANGS[code]
    rows = []
    for i in ORDER:
        row = {"id": i, "iso_639_3": iso, "iso_15924": script, "glottocode": glotto,
               "text": f"{code} {split} sentence {i} ", "url": f"https://example.org/{i}",
               "domain": "wikinews", "topic": f"Topic_{i}", "has_image": "no",
               "has_hyperlink": "no", "last_updated": "2.0"}
        if v4:
            row.update({"variant": None, "split": split})
        rows.append(row)
    return rows


def v2_files(split: str = "dev", codes=tuple(LANGS)) -> dict[str, bytes]:
    files = {"README.md": b"---\nlicense: cc-by-sa-4.0\n---\n"}
    for code in codes:
        rows = flores_plus_rows(code, split)
        files[f"{split}/{code}.parquet"] = parquet_bytes({k: [r[k] for r in rows] for k in rows[0]})
    return files


def v4_files(split: str = "dev", codes=tuple(LANGS)) -> dict[str, bytes]:
    files = {"README.md": b"---\nlicense: cc-by-sa-4.0\n---\n"}
    for code in codes:
        lines = [json.dumps(r) for r in flores_plus_rows(code, split, v4=True)]
        files[f"{split}/{code}.jsonl"] = ("\n".join(lines) + "\n").encode()
    return files


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer() as server:
        use_hub(monkeypatch, server.url, tmp_path)
        yield server


def hub_config(tmp_path, revision: str, **kwargs) -> SourceBenchmarkConfig:
    return SourceBenchmarkConfig(kind="flores", flores="hub", repo=REPO, revision=revision,
                                 languages=["deu_Latn", "spa_Latn"],
                                 hub_cache_dir=str(tmp_path / "cache"), **kwargs)


def check_joined_on_id(bench, split="dev"):
    assert bench.ids() == [0, 1, 2, 3, 4]
    assert [(i.english, i.sources["deu_Latn"], i.topic) for i in bench.instances] == [
        (f"eng_Latn {split} sentence {k}", f"deu_Latn {split} sentence {k}", f"Topic_{k}")
        for k in range(5)]


@pytest.mark.parametrize(("files", "fmt"), [(v2_files, "parquet"), (v4_files, "jsonl")])
def test_both_flores_plus_layouts_join_on_id(hub, tmp_path, files, fmt):
    repo = hub.add_repo(REPO, files())
    bench = load_source_benchmark(hub_config(tmp_path, repo.sha))
    check_joined_on_id(bench)
    assert bench.name == f"flores-plus-dev@{repo.sha}"
    assert f"commit {repo.sha}" in bench.description
    assert bench.english_file == f"{REPO}:dev/eng_Latn.{fmt}@{repo.sha}"
    downloaded = {r.path.split("/resolve/")[1] for r in hub.seen("GET", "/resolve/")}
    assert downloaded == {f"{repo.sha}/dev/{c}.{fmt}" for c in LANGS}  # the pinned revision


def test_devtest_from_the_hub(hub, tmp_path):
    repo = hub.add_repo(REPO, v4_files("devtest"))
    check_joined_on_id(load_source_benchmark(hub_config(tmp_path, repo.sha, split="devtest")),
                       "devtest")


def test_the_layout_can_be_pinned(hub, tmp_path):
    repo = hub.add_repo(REPO, v4_files())
    with pytest.raises(DataError, match=r"\bdev/eng_Latn\.parquet\b"):
        load_source_benchmark(hub_config(tmp_path, repo.sha, hub_layout="parquet"))
    check_joined_on_id(load_source_benchmark(hub_config(tmp_path, repo.sha, hub_layout="jsonl")))


def test_a_layout_that_is_neither_is_a_clear_error(hub, tmp_path):
    repo = hub.add_repo(REPO, {"dev/eng_Latn.dev": b"e0\ne1\n", "dev/deu_Latn.dev": b"d0\nd1\n"})
    with pytest.raises(DataError, match=r"dev/<code>\.parquet \(v2\.x\).*"
                                        r"dev/<code>\.jsonl \(v4\.x\).*"
                                        r"dev/deu_Latn\.dev, dev/eng_Latn\.dev") as info:
        load_source_benchmark(hub_config(tmp_path, repo.sha))
    assert f"{REPO}@{repo.sha}" in str(info.value)
    other = hub.add_repo(REPO, {"data/eng_Latn/dev.parquet": b"x"})
    with pytest.raises(DataError, match=r"\(v4\.x\).*\bnothing\b"):
        load_source_benchmark(hub_config(tmp_path, other.sha))


def test_a_file_with_other_columns_is_a_clear_error(hub, tmp_path):
    repo = hub.add_repo(REPO, {"dev/eng_Latn.jsonl": b'{"sentence_id": 0, "sentence": "e"}\n'})
    with pytest.raises(DataError, match=r"eng_Latn\.jsonl.*'id', 'text'.*"
                                        r"\(columns: sentence, sentence_id\)"):
        load_source_benchmark(hub_config(tmp_path, repo.sha))


def test_a_missing_language_in_a_known_layout_is_reported(hub, tmp_path):
    repo = hub.add_repo(REPO, v4_files(codes=("eng_Latn", "deu_Latn")))
    bench = load_source_benchmark(hub_config(tmp_path, repo.sha))
    assert bench.languages == ("deu_Latn",)
    assert f"{REPO}:dev/spa_Latn.jsonl" in bench.missing["spa_Latn"]


def test_an_unknown_revision_is_an_error(hub, tmp_path):
    hub.add_repo(REPO, v2_files())
    with pytest.raises(DataError, match="tester/flores-plus-mini"):
        load_source_benchmark(hub_config(tmp_path, "v9.9"))


def test_the_evaluation_side_reads_the_v4_layout_too(hub, tmp_path):
    """One reader for both sides: FLORES originals of the evaluation data from v4.x jsonl."""
    cultivar = "tester/cultivar-mini"
    rows = cultivar_rows("deu_Latn_Germany", [4, 1], originals=False)
    hub.add_repo(cultivar, {"data/deu_Latn_Germany/train.parquet":
                            parquet_bytes({k: [r[k] for r in rows] for k in rows[0]})})
    repo = hub.add_repo(REPO, v4_files())
    data = load_benchmark(DataConfig(kind="hub", cultivar_repo=cultivar, flores="hub",
                                     flores_repo=REPO, flores_revision=repo.sha,
                                     locales=["deu_Latn_Germany"],
                                     hub_cache_dir=str(tmp_path / "cache")))
    assert [(r.instance_id, r.source_original, r.english_original)
            for r in data.instances["deu_Latn_Germany"]] == [
        (1, "deu_Latn dev sentence 1", "eng_Latn dev sentence 1"),
        (4, "deu_Latn dev sentence 4", "eng_Latn dev sentence 4")]


def test_hub_reader_keeps_the_commit_it_read(hub, tmp_path):
    repo = hub.add_repo(REPO, v2_files())
    reader = HubFlores(REPO, None, cache_dir=str(tmp_path / "c"))
    found = reader.read_file(["eng_Latn"])
    assert reader.commit == repo.sha
    assert found.metadata_from == found.where == f"{REPO}:dev/eng_Latn.parquet@{repo.sha}"
