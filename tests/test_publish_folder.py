"""The Hugging Face dataset folder and its card, built from the DuckDB store (no network)."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest
import yaml
from data_helpers import cultivar_rows

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import BenchmarkData, Instance
from cultivar_assets.publish import dataset_folder
from cultivar_assets.publish.card import (
    CardError,
    build_card,
    card_for_store,
    md_text,
    merge_front_matter,
    parse_readme,
    size_category,
)
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.publish.dataset_folder import build_dataset_folder, list_files
from cultivar_assets.publish.records import read_publish_data
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_dataset

DEMO_LOCALES = ["cmn_Hans_China", "deu_Latn_Germany", "deu_Latn_Switzerland", "hin_Deva_India",
                "hin_Deva_US", "spa_Latn_Spain"]
DE, ES = "deu_Latn_Germany", "spa_Latn_Spain"


@pytest.fixture
def demo_store(tmp_path) -> Store:
    store = Store(tmp_path / "demo.duckdb")
    write_dataset(store, load_benchmark(DataConfig()))
    return store


def real_data() -> BenchmarkData:
    """Made-up data standing for the real benchmark (is_demo False), two locales."""
    instances = {
        locale: [Instance(locale=locale, instance_id=r["id"],
                          source_localised=r["source_localised"],
                          english_localised=r["english_localised"],
                          source_original=r["source_original"],
                          english_original=r["english_original"])
                 for r in cultivar_rows(locale, ids)]
        for locale, ids in ((DE, [2, 7, 11]), (ES, [2, 5]))
    }
    return BenchmarkData(source="made-up files", is_demo=False, instances=instances)


@pytest.fixture
def real_store(tmp_path) -> Store:
    store = Store(tmp_path / "real.duckdb")
    write_dataset(store, real_data())
    return store


def test_demo_folder_layout_columns_and_card(demo_store, tmp_path):
    target = tmp_path / "out" / "hf_dataset"
    folder = build_dataset_folder(read_publish_data(demo_store), PublishConfig(folder=str(target)))

    assert folder.path == target
    assert [f.path for f in folder.files] == ["README.md"] + [
        f"data/{key}/test.parquet" for key in DEMO_LOCALES]
    assert folder.files == list_files(target)
    assert folder.rows == dict.fromkeys(DEMO_LOCALES, 12)
    assert folder.include_originals is True  # the demo's originals were written by us
    table = pq.read_table(target / "data" / DE / "test.parquet")
    assert table.column_names == ["id", "locale", "source_original", "english_original",
                                  "source_localised", "english_localised"]
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == list(range(12))
    assert {r["locale"] for r in rows} == {DE}
    assert rows[0]["source_localised"].startswith("Am Samstagabend gewann der FC Bayern")

    readme = (target / "README.md").read_text(encoding="utf-8")
    assert readme == folder.card.to_readme()
    front = parse_readme(readme).front_matter
    assert front == folder.card.front_matter
    assert front["license"] == "cc-by-sa-4.0"
    assert front["language"] == ["cmn", "deu", "en", "hin", "spa"]
    assert front["task_categories"] == ["translation"]
    assert front["size_categories"] == ["n<1K"]
    assert front["pretty_name"] == "Cultivar toolkit demo data"
    assert front["configs"][1] == {"config_name": DE, "data_files": [
        {"split": "test", "path": f"data/{DE}/test.parquet"}]}
    assert [c["config_name"] for c in front["configs"]] == DEMO_LOCALES

    body = folder.card.body
    assert "**Demo data, not Cultivar.**" in body.split("\n\n")[1]  # right under the title
    assert "| `hin_Deva_US` | Hindi | `Deva` | US | no | 12 |" in body
    assert "| `deu_Latn_Germany` | 117 | 0 | 3 | 2 | 78 | 4.48 | 4.46 |" in body  # Table 1
    assert "As reported by the paper" in body and "not this demo data" in body
    # the bundled demo data was not made with the pipeline: no method of the paper's is its own
    assert "GPT-5.5" not in body and "written by hand for the toolkit" in body
    assert "[CC BY-SA 4.0]" in body
    for key in ("@misc{chen2026cultivar", "eprint        = {2608.09766}", "@article{nllb2022",
                "@article{goyal2022flores"):
        assert key in body
    assert "not FLORES" in body


def test_load_dataset_reads_a_locale_config(demo_store, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    target = tmp_path / "hf_dataset"
    build_dataset_folder(read_publish_data(demo_store), PublishConfig(folder=str(target)))

    loaded = datasets.load_dataset(str(target), DE, cache_dir=str(tmp_path / "ds-cache"))
    assert list(loaded) == ["test"]
    test = loaded["test"]
    assert test.column_names == ["id", "locale", "source_original", "english_original",
                                 "source_localised", "english_localised"]
    expected = pq.read_table(target / "data" / DE / "test.parquet").to_pylist()
    assert test.num_rows == 12 and test.to_list() == expected
    hin = datasets.load_dataset(str(target), "hin_Deva_US", split="test",
                                cache_dir=str(tmp_path / "ds-cache"))
    assert set(hin["locale"]) == {"hin_Deva_US"}


def test_load_dataset_without_a_config_name_loads_the_default_locale(demo_store, tmp_path,
                                                                      monkeypatch):
    """The card marks one configuration, its first locale's, ``default: true``: the folder
    loads with no configuration name."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    target = tmp_path / "hf_dataset"
    folder = build_dataset_folder(read_publish_data(demo_store),
                                  PublishConfig(folder=str(target)))
    configs = folder.card.front_matter["configs"]
    defaults = [c["config_name"] for c in configs if c.get("default")]
    assert defaults == [configs[0]["config_name"]]
    loaded = datasets.load_dataset(str(target), split="test",
                                   cache_dir=str(tmp_path / "ds-cache"))
    assert set(loaded["locale"]) == {defaults[0]}
    assert loaded.num_rows == folder.rows[defaults[0]]


def test_real_data_leaves_out_the_flores_originals_by_default(real_store, tmp_path):
    target = tmp_path / "hf_dataset"
    folder = build_dataset_folder(read_publish_data(real_store), PublishConfig(folder=str(target)))
    assert folder.include_originals is False
    table = pq.read_table(target / "data" / DE / "test.parquet")
    assert table.column_names == ["id", "locale", "source_localised", "english_localised"]
    assert table.column("id").to_pylist() == [2, 7, 11]
    readme = (target / "README.md").read_text(encoding="utf-8")
    for original in ("original sentence", "Original English sentence"):
        assert original not in readme
        assert not any(original.encode() in (target / f.path).read_bytes()
                       for f in folder.files)
    body = folder.card.body
    assert "Demo data" not in body
    assert "The original FLORES sentences are not included" in body
    assert "web crawlers" in body and "openlanguagedata/flores_plus" in body
    assert "0-based line index in the FLORES dev set" in body
    assert folder.card.front_matter["pretty_name"] == "Cultivar"
    assert folder.card.front_matter["language"] == ["deu", "en", "spa"]


def test_include_originals_overrides_the_default(real_store, demo_store, tmp_path):
    real = build_dataset_folder(read_publish_data(real_store),
                                PublishConfig(folder=str(tmp_path / "a"), include_originals=True))
    assert real.include_originals is True
    columns = pq.read_table(tmp_path / "a" / "data" / ES / "test.parquet").column_names
    assert "source_original" in columns and "english_original" in columns
    assert "keep such a copy gated or private" in real.card.body

    demo = build_dataset_folder(read_publish_data(demo_store),
                                PublishConfig(folder=str(tmp_path / "b"), include_originals=False))
    columns = pq.read_table(tmp_path / "b" / "data" / DE / "test.parquet").column_names
    assert columns == ["id", "locale", "source_localised", "english_localised"]
    # the demo's originals are the demo's own sentences, not FLORES (its ids are demo ids)
    assert "The demo's own \"original\" sentences are not included" in demo.card.body
    assert "flores_plus" not in demo.card.body


def test_the_folder_reads_back_with_the_project_reader(demo_store, tmp_path):
    target = tmp_path / "hf_dataset"
    build_dataset_folder(read_publish_data(demo_store), PublishConfig(folder=str(target)))
    again = load_benchmark(DataConfig(kind="local", cultivar_path=str(target),
                                      locales=DEMO_LOCALES))
    assert again.instances == load_benchmark(DataConfig()).instances


def test_a_failed_build_keeps_the_previous_folder(demo_store, tmp_path, monkeypatch):
    target = tmp_path / "hf_dataset"
    config = PublishConfig(folder=str(target))
    first = build_dataset_folder(read_publish_data(demo_store), config)
    calls = []

    def failing_write(table, path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 3:
            raise OSError("disk full")
        return pq.write_table(table, path, *args, **kwargs)

    monkeypatch.setattr(dataset_folder.pq, "write_table", failing_write)
    with pytest.raises(OSError, match="disk full"):
        build_dataset_folder(read_publish_data(demo_store),
                             PublishConfig(folder=str(target), include_originals=False))
    assert list_files(target) == first.files  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.duckdb", "hf_dataset"]

    monkeypatch.undo()
    second = build_dataset_folder(read_publish_data(demo_store),
                                  PublishConfig(folder=str(target), include_originals=False))
    assert second.digest != first.digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.duckdb", "hf_dataset"]


def test_card_for_store_is_the_card_of_the_folder(real_store, tmp_path):
    config = PublishConfig(folder=str(tmp_path / "f"), pretty_name="Mine", repo_id="me/data")
    folder = build_dataset_folder(read_publish_data(real_store), config)
    assert card_for_store(real_store, config) == folder.card
    assert card_for_store(real_store).front_matter["pretty_name"] == "Cultivar"


def test_default_folder_is_under_cultivar_home(isolated_home):
    assert PublishConfig().folder_path == isolated_home / "publish" / "hf_dataset"


def test_nothing_to_publish_before_test_sets(tmp_path):
    store = Store(tmp_path / "empty.duckdb")
    with store.connect():
        pass
    with pytest.raises(LookupError, match=rf"{re.escape(str(store.path))}.*\btest_sets\b"):
        read_publish_data(store)


def _cells(line: str) -> list[str]:
    """Cells of a Markdown table row: split on pipes that are not escaped."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_text_in_the_card_is_escaped():
    rows = [{"locale": "deu_Latn_Germany", "language": "deu", "script": "La|tn",
             "location": "Ger|many <script>alert(1)</script>", "flores_plus_code": "deu_Latn",
             "language_name": "German\n# not a heading", "official_or_de_facto": True,
             "n_instances": 3}]
    card = build_card(rows, is_demo=False, include_originals=False,
                      pretty_name="Cultivar | *mine* <b>", repo_id="me/data")
    lines = card.body.splitlines()
    assert lines[0] == r"# Cultivar \| \*mine\* \<b\>"
    [row] = [line for line in lines if line.startswith("| `deu_Latn_Germany` | German")]
    assert _cells(row) == ["`deu_Latn_Germany`", r"German \# not a heading", r"La\|tn",
                           r"Ger\|many \<script\>alert\(1\)\</script\>", "yes", "3"]
    assert "<script>" not in card.body and "<b>" not in card.body
    assert "load_dataset('me/data', 'deu_Latn_Germany', split='test')" in card.body
    assert "load_dataset" not in build_card(rows, is_demo=False, include_originals=False,
                                            repo_id="me/x```").body
    # the front matter is YAML data, not concatenated text: values come back unchanged
    readme = card.to_readme()
    assert yaml.safe_load(readme.split("---\n")[1])["pretty_name"] == "Cultivar | *mine* <b>"
    assert parse_readme(readme) == card
    assert md_text("a\\b") == "a\\\\b"


@pytest.mark.parametrize("repo_id", ["no-namespace", "a/b/c", "me/x y", "me/```"])
def test_bad_repo_ids_are_rejected(repo_id):
    with pytest.raises(ValueError, match="namespace"):
        PublishConfig(repo_id=repo_id)


def test_size_categories():
    assert [size_category(n) for n in (12, 999, 1000, 5400, 10_000, 2_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "1M<n<10M"]


def test_merge_keeps_other_configs_and_keys():
    existing = {
        "license": "mit",
        "annotations_creators": ["expert-generated"],
        "language": ["xyz", "deu"],
        "configs": [
            {"config_name": "xyz_Latn_Other", "data_files": [
                {"split": "test", "path": "data/xyz_Latn_Other/test.parquet"}], "default": True},
            {"config_name": DE, "data_files": "old/*.csv"},
        ],
    }
    ours = {"license": "cc-by-sa-4.0", "language": ["deu", "en"],
            "configs": [{"config_name": DE, "data_files": [
                {"split": "test", "path": f"data/{DE}/test.parquet"}]}]}
    merged, kept = merge_front_matter(existing, ours)
    assert kept == ["xyz_Latn_Other"]
    assert merged["license"] == "cc-by-sa-4.0"
    assert merged["annotations_creators"] == ["expert-generated"]
    assert merged["language"] == ["deu", "en", "xyz"]
    assert merged["configs"] == [ours["configs"][0], existing["configs"][0]]
    assert merge_front_matter({}, ours) == (ours, [])
    ours_default = {"configs": [{**ours["configs"][0], "default": True}]}
    merged, _ = merge_front_matter(existing, ours_default)
    assert [c["config_name"] for c in merged["configs"] if c.get("default")] == [DE]
    assert existing["configs"][0]["default"] is True  # the existing card is left as it was


@pytest.mark.parametrize("text", ["---\n[not: closed\n---\nbody\n", "---\n- a list\n---\n"])
def test_a_broken_front_matter_is_an_error(text):
    with pytest.raises(CardError):
        parse_readme(text)


def test_readme_without_front_matter():
    card = parse_readme("# Just a title\n")
    assert card.front_matter == {} and card.body == "# Just a title\n"


@pytest.mark.parametrize("text", __import__("hostile_strings").ALL[:60])
def test_hostile_card_fields_stay_text_and_the_front_matter_keeps_its_keys(text):
    from markdown_it import MarkdownIt

    rows = [{"locale": "deu_Latn_Germany", "language": "deu", "script": "Latn",
             "location": text, "flores_plus_code": "deu_Latn", "language_name": text,
             "official_or_de_facto": True, "n_instances": 3}]
    card = build_card(rows, is_demo=False, include_originals=False, pretty_name=text,
                      repo_id="me/data")
    readme = card.to_readme()
    assert readme.count("\n---\n") == 1  # the front matter's closing line, and no other
    front = parse_readme(readme).front_matter
    assert set(front) == {"license", "language", "task_categories", "pretty_name",
                          "size_categories", "configs"}  # no key injected
    assert front["pretty_name"] == text and front["license"] == "cc-by-sa-4.0"
    assert parse_readme(readme) == card
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(card.body)
    for tag in ("<script", "<svg", "<img", "<iframe", "<style", "<a href=\"javascript"):
        assert tag not in html.lower()
