"""Data from the Hugging Face Hub (data kind "hub", flores "hub"), against a local Hub emulator.

The emulator (tests/hub_server.py) listens on 127.0.0.1 and is started by each test; nothing
leaves the machine. Every sentence served is made up.
"""

from __future__ import annotations

import pytest
from data_helpers import cultivar_rows, original_english, parquet_bytes
from hub_server import HubServer, use_hub

from cultivar_assets.data.flores import HubFlores
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import DataError

CULTIVAR_REPO = "tester/cultivar-mini"
FLORES_REPO = "tester/flores-mini"
DE, CH, ES = "deu_Latn_Germany", "deu_Latn_Switzerland", "spa_Latn_Spain"
N_DEV = 6


def rows_table(rows: list[dict]) -> bytes:
    return parquet_bytes({key: [row[key] for row in rows] for key in rows[0]})


def cultivar_files(originals: bool = False) -> dict[str, bytes]:
    """A Cultivar dataset in Hub layout: data/<locale>/train.parquet, plus files not downloaded."""
    return {
        "README.md": b"---\nlicense: cc-by-sa-4.0\n---\n# made-up Cultivar sample\n",
        ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n",
        "notes.txt": b"not a data file\n",
        f"data/{DE}/train.parquet": rows_table(cultivar_rows(DE, [0, 3], originals=originals)),
        f"data/{CH}/train.parquet": rows_table(cultivar_rows(CH, [3, 5], originals=originals)),
        f"data/{ES}/train.parquet": rows_table(cultivar_rows(ES, [1], originals=originals)),
    }


def flores_file(code: str) -> bytes:
    """dev/<code>.parquet as on FLORES+: columns id, text; rows deliberately not in id order."""
    order = [4, 1, 0, 5, 3, 2]
    if code == "eng_Latn":
        texts = [original_english(i) for i in order]
    else:
        texts = [f"{code} hub dev line {i}" for i in order]
    return parquet_bytes({"id": order, "text": texts})


def flores_files(*codes: str) -> dict[str, bytes]:
    return {f"dev/{code}.parquet": flores_file(code) for code in ("eng_Latn", *codes)}


def hub_config(tmp_path, **kwargs) -> DataConfig:
    defaults = {"kind": "hub", "cultivar_repo": CULTIVAR_REPO, "flores": "hub",
                "flores_repo": FLORES_REPO, "locales": [DE, CH, ES],
                "hub_cache_dir": str(tmp_path / "hub-cache")}
    return DataConfig(**{**defaults, **kwargs})


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer() as server:
        use_hub(monkeypatch, server.url, tmp_path)
        yield server


def test_cultivar_and_flores_from_the_hub(hub, tmp_path):
    hub.add_repo(CULTIVAR_REPO, cultivar_files())
    hub.add_repo(FLORES_REPO, flores_files("deu_Latn", "spa_Latn"))
    data = load_benchmark(hub_config(tmp_path), token="tok-123")

    assert data.missing == []
    assert data.locales == [DE, CH, ES]
    assert f"{CULTIVAR_REPO}@main (Hub)" in data.source
    assert FLORES_REPO in data.source
    assert [r.instance_id for r in data.instances[CH]] == [3, 5]
    de = data.instances[DE]
    assert [(r.source_localised, r.english_localised) for r in de] == [
        (f"[{DE}] localised sentence {i}", f"Localised English for {DE}, number {i}.")
        for i in (0, 3)]
    # originals come from FLORES+ (sorted by its id column), not from the dataset
    assert [(r.source_original, r.english_original) for r in de] == [
        ("deu_Latn hub dev line 0", original_english(0)),
        ("deu_Latn hub dev line 3", original_english(3))]
    flores = {t.name: t for t in data.test_sets() if t.kind == "flores"}
    assert [s.segment_id for s in flores["flores_deu_Latn"].segments] == [0, 3, 5]
    assert flores["flores_spa_Latn"].segments[0].source == "spa_Latn hub dev line 1"

    # every request carried the token; only the allowed patterns were downloaded
    assert hub.seen()
    assert {r.authorization for r in hub.seen()} == {"Bearer tok-123"}
    downloaded = {r.path.rsplit("/resolve/", 1)[1].split("/", 1)[1]
                  for r in hub.seen("GET", "/resolve/")}
    assert downloaded == {"README.md", f"data/{DE}/train.parquet", f"data/{CH}/train.parquet",
                          f"data/{ES}/train.parquet", "dev/eng_Latn.parquet",
                          "dev/deu_Latn.parquet", "dev/spa_Latn.parquet"}
    # nothing outside the configured cache
    assert (tmp_path / "hub-cache").is_dir()


def test_hub_dataset_with_its_own_originals(hub, tmp_path):
    hub.add_repo(CULTIVAR_REPO, cultivar_files(originals=True))
    data = load_benchmark(hub_config(tmp_path, flores="dataset", locales=[ES]))
    assert [(r.instance_id, r.source_original) for r in data.instances[ES]] == [
        (1, "[spa_Latn] original sentence 1")]
    assert not hub.seen(contains=FLORES_REPO)
    assert {r.authorization for r in hub.seen()} == {None}  # no token configured


def test_second_load_reuses_the_cache(hub, tmp_path):
    hub.add_repo(CULTIVAR_REPO, cultivar_files(originals=True))
    config = hub_config(tmp_path, flores="dataset")
    first = load_benchmark(config)
    n_downloads = len(hub.seen("GET", "/resolve/"))
    second = load_benchmark(config)
    assert second.fingerprint() == first.fingerprint()
    assert len(hub.seen("GET", "/resolve/")) == n_downloads  # files come from the cache


def test_hf_token_environment_variable_is_sent(hub, tmp_path, monkeypatch):
    hub.add_repo(CULTIVAR_REPO, cultivar_files(), gated=True, allowed_tokens=("env-token",))
    hub.add_repo(FLORES_REPO, flores_files("deu_Latn", "spa_Latn"), gated=True,
                 allowed_tokens=("env-token",))
    monkeypatch.setenv("HF_TOKEN", "env-token")
    data = load_benchmark(hub_config(tmp_path))
    assert data.missing == []
    assert {r.authorization for r in hub.seen()} == {"Bearer env-token"}


def test_missing_flores_plus_file_becomes_a_missing_item(hub, tmp_path):
    hub.add_repo(CULTIVAR_REPO, cultivar_files())
    hub.add_repo(FLORES_REPO, flores_files("deu_Latn"))  # no dev/spa_Latn.parquet
    data = load_benchmark(hub_config(tmp_path))
    [item] = data.missing
    assert (item.test_set, item.kind, item.language, item.locale) == (
        "flores_spa_Latn", "flores", "spa_Latn", None)
    assert f"{FLORES_REPO}:dev/spa_Latn.parquet" in item.reason
    assert [r.source_original for r in data.instances[ES]] == [None]
    assert [r.english_original for r in data.instances[ES]] == [original_english(1)]
    assert [t.name for t in data.test_sets()] == [
        "flores_deu_Latn", f"cultivar_{DE}", f"cultivar_{CH}", f"cultivar_{ES}"]
    assert hub.seen("HEAD", "dev/spa_Latn.parquet")  # it was asked for, and answered 404
    with pytest.raises(DataError, match="flores_spa_Latn"):
        load_benchmark(hub_config(tmp_path, on_missing="fail"))


def test_flores200_name_is_tried_after_the_flores_plus_name(hub, tmp_path):
    hub.add_repo(FLORES_REPO, {"dev/eng_Latn.parquet": flores_file("eng_Latn"),
                               "dev/zho_Hans.parquet": flores_file("zho_Hans")})
    reader = HubFlores(FLORES_REPO, cache_dir=str(tmp_path / "cache"))
    assert reader.read(["cmn_Hans", "zho_Hans"])[2] == "zho_Hans hub dev line 2"
    assert reader.read(["gom_Deva"]) is None
    assert hub.seen("HEAD", "dev/cmn_Hans.parquet")


@pytest.mark.parametrize(("token", "status"), [(None, 401), ("not-accepted", 403)])
def test_gated_flores_plus_without_access_is_a_data_error(hub, tmp_path, token, status):
    hub.add_repo(CULTIVAR_REPO, cultivar_files())
    hub.add_repo(FLORES_REPO, flores_files("deu_Latn", "spa_Latn"), gated=True,
                 allowed_tokens=("good",))
    with pytest.raises(DataError, match="HF_TOKEN") as info:
        load_benchmark(hub_config(tmp_path), token=token)
    assert "gated" in str(info.value) and FLORES_REPO in str(info.value)
    answers = hub.seen(contains=FLORES_REPO)
    assert answers
    assert {r.status for r in answers} == {status}
    assert {r.authorization for r in answers} == {None if token is None else f"Bearer {token}"}


@pytest.mark.parametrize(("token", "status"), [(None, 401), ("not-accepted", 403)])
def test_gated_cultivar_repo_without_access_is_a_data_error(hub, tmp_path, token, status):
    hub.add_repo(CULTIVAR_REPO, cultivar_files(), gated=True, allowed_tokens=("good",))
    with pytest.raises(DataError, match="HF_TOKEN") as info:
        load_benchmark(hub_config(tmp_path), token=token)
    assert CULTIVAR_REPO in str(info.value) and "GatedRepoError" in str(info.value)
    assert {r.status for r in hub.seen(contains=CULTIVAR_REPO)} == {status}


def test_gated_repos_with_an_accepted_token_load(hub, tmp_path):
    hub.add_repo(CULTIVAR_REPO, cultivar_files(), gated=True, allowed_tokens=("good",))
    hub.add_repo(FLORES_REPO, flores_files("deu_Latn", "spa_Latn"), gated=True,
                 allowed_tokens=("good",))
    data = load_benchmark(hub_config(tmp_path), token="good")
    assert data.missing == [] and data.locales == [DE, CH, ES]
    assert {r.status for r in hub.seen()} == {200}


def test_unknown_repo_is_a_data_error(hub, tmp_path):
    with pytest.raises(DataError, match="RepositoryNotFoundError"):
        load_benchmark(hub_config(tmp_path))
    hub.add_repo(CULTIVAR_REPO, cultivar_files())
    with pytest.raises(DataError, match=FLORES_REPO):
        load_benchmark(hub_config(tmp_path))


def test_hub_failure_for_one_flores_file_is_not_reported_as_missing(hub, tmp_path):
    hub.add_repo(CULTIVAR_REPO, cultivar_files())
    hub.add_repo(FLORES_REPO, flores_files("deu_Latn", "spa_Latn"))
    hub.fail(FLORES_REPO, "dev/spa_Latn.parquet", 403)
    # a refusal (403) is an error to report, never a "file does not exist" (a missing test set)
    with pytest.raises(DataError, match=r"dev/spa_Latn\.parquet"):
        load_benchmark(hub_config(tmp_path))
