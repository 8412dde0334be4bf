"""The built dataset: ingested annotations become the Cultivar dataset with per-instance
provenance, the data kind `built` evaluates it, the Hub folder and the card take it from there
(Table 1 as computed), and stale or missing annotations stop the build with nothing written."""

from __future__ import annotations

import json
import re
import shutil

import duckdb
import pyarrow.parquet as pq
import pytest
import yaml
from annotation_helpers import annotation_document
from build_helpers import build_drafts

from cultivar_assets.assets.graph import ASSETS, JOBS
from cultivar_assets.cli import main
from cultivar_assets.construction.annotation.postedit_build import ingest_files, stored_task
from cultivar_assets.construction.config import DatasetConfig
from cultivar_assets.construction.dataset import PROVENANCE_COLUMNS, build_dataset
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import DataError
from cultivar_assets.publish.card import card_for_store
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.publish.dataset_folder import build_dataset_folder
from cultivar_assets.publish.records import read_publish_data
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_dataset

pytestmark = pytest.mark.dagster_instances
LOCALES = ["spa_Latn_Spain", "hin_Deva_India"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("built")
    return root, build_drafts(root, LOCALES, root / "template.duckdb")


@pytest.fixture
def store(built, tmp_path) -> Store:
    root, _ = built
    shutil.copyfile(root / "template.duckdb", tmp_path / "build.duckdb")
    return Store(tmp_path / "build.duckdb")


def hand_in(store: Store, tmp_path, locale: str, finals=None, annotator="a-1"):
    path = tmp_path / f"{locale}.json"
    path.write_text(json.dumps(annotation_document(stored_task(store, locale), finals,
                                                   annotator=annotator)), "utf-8")
    ingest_files(store, [path])


def finals_for(store: Store, locale: str) -> dict[int, tuple[str, str]]:
    """Instance 0 edited on both sides, instance 1 reverted, the rest kept."""
    task = stored_task(store, locale)
    d0, d1 = task.drafts[0], task.drafts[1]
    return {d0.instance_id: (d0.source_draft + " ¡Olé!", "  " + d0.english_draft + " Olé! "),
            d1.instance_id: (d1.source_original, d1.english_original)}


def test_annotations_become_the_dataset_with_provenance(store, tmp_path):
    for locale in LOCALES:
        hand_in(store, tmp_path, locale, finals_for(store, locale), annotator=f"{locale}-a")
    folder = tmp_path / "dataset"
    built = build_dataset(store, folder, LOCALES)
    assert built.is_demo and built.actions() == {
        locale: {"kept": 10, "edited": 1, "reverted": 1} for locale in LOCALES}
    manifest = json.loads((folder / ".cultivar-build.json").read_text("utf-8"))
    assert manifest["kind"] == "cultivar-dataset" and manifest["is_demo"] is True
    assert manifest["fingerprint"] == built.fingerprint
    rows = [json.loads(line) for line in (folder / "spa_Latn_Spain.jsonl").read_text(
        "utf-8").splitlines()]
    task = stored_task(store, "spa_Latn_Spain")
    assert [r["id"] for r in rows] == [d.instance_id for d in task.drafts]
    assert set(PROVENANCE_COLUMNS) <= set(rows[0])
    d0 = task.drafts[0]
    assert rows[0]["english_localised"] == d0.english_draft + " Olé!"  # surrounding space trimmed
    assert rows[0]["action"] == "edited" and rows[1]["action"] == "reverted"
    assert rows[1]["source_localised"] == task.drafts[1].source_original
    assert rows[5]["source_localised"] == task.drafts[5].source_draft  # kept
    assert rows[5]["draft_hash"] == task.drafts[5].draft_hash
    assert rows[5]["prompt_hash"] == task.drafts[5].prompt_hash
    assert rows[0]["annotator"] == "spa_Latn_Spain-a" and rows[0]["task_id"] == task.task_id

    # the data kind `built` evaluates the project's own build
    data = load_benchmark(DataConfig(kind="built", cultivar_path=str(folder)))
    assert data.is_demo and sorted(data.instances) == sorted(LOCALES)
    assert "Cultivar built by this project" in data.source
    loaded = {i.instance_id: i for i in data.instances["spa_Latn_Spain"]}
    assert loaded[0].english_localised == rows[0]["english_localised"]
    assert loaded[0].source_original == d0.source_original
    write_dataset(store, data)

    provenance = store.query("instance_provenance")
    assert len(provenance) == 24
    first = next(r for r in provenance if (r["locale"], r["instance_id"]) == (
        "spa_Latn_Spain", 0))
    assert (first["source_draft"], first["english_draft"]) == (d0.source_draft, d0.english_draft)
    assert first["english_final"] == rows[0]["english_localised"] and first["action"] == "edited"
    (build,) = store.query("dataset_build_row")
    assert build["fingerprint"] == built.fingerprint and build["n_instances"] == 24

    card = card_for_store(store, PublishConfig(folder=str(tmp_path / "hf")))
    assert "## Annotation statistics (computed from the annotation files)" in card.body
    assert card.body.index("(computed from the annotation files)") < card.body.index(
        "## Annotation statistics (reported)")
    assert "`action`" in card.body
    published = build_dataset_folder(read_publish_data(store),
                                     PublishConfig(folder=str(tmp_path / "hf")))
    table = pq.read_table(published.path / "data" / "spa_Latn_Spain" / "test.parquet")
    assert table.column_names[-3:] == ["action", "draft_hash", "prompt_hash"]
    assert table.column("action").to_pylist()[:2] == ["edited", "reverted"]
    summary = {r["locale"]: r for r in store.query("built_annotation_summary")}
    assert summary["spa_Latn_Spain"]["edited_both"] == 1
    assert summary["spa_Latn_Spain"]["reverted_to_flores"] == 1
    assert "| `spa_Latn_Spain` | 10 | 1 | 0 | 0 | 1 |" in card.body


def test_other_data_gets_no_provenance_and_no_computed_table(store, tmp_path):
    for locale in LOCALES:
        hand_in(store, tmp_path, locale)
    build_dataset(store, tmp_path / "dataset", LOCALES)
    write_dataset(store, load_benchmark(DataConfig()))  # the bundled demo data, not the build
    assert store.query("instance_provenance") == []
    assert store.query("built_annotation_summary") == []
    card = card_for_store(store)
    assert "(computed from the annotation files)" not in card.body and "`action`" not in card.body


def test_missing_or_stale_annotations_stop_the_build_and_write_nothing(store, tmp_path):
    hand_in(store, tmp_path, LOCALES[0])
    folder = tmp_path / "dataset"
    with pytest.raises(ConstructionError, match=r"dataset: .*\bhin_Deva_India\b"):
        build_dataset(store, folder, LOCALES)
    assert not folder.exists() and store.query("dataset_build_row") == []

    hand_in(store, tmp_path, LOCALES[1])
    with store.connect() as con:  # the locale is localised again: other drafts
        con.execute("UPDATE raw.localisation_runs SET drafts_hash = 'x', task_id = "
                    "'hin_Deva_India-000000000000' WHERE locale = 'hin_Deva_India'")
    with pytest.raises(ConstructionError, match=r"hin_Deva_India \(task "
                       r"hin_Deva_India-\w{12}, file hin_Deva_India\.json\).*\bdrafts\b"):
        build_dataset(store, folder, LOCALES)
    assert not folder.exists() and store.query("dataset_build_row") == []


def test_the_data_kind_built_says_how_to_build_it(tmp_path):
    with pytest.raises(DataError, match=rf"{re.escape(str(tmp_path / 'nothing'))}\b.*"
                       r"cultivar_dataset \(job build_benchmark\)"):
        load_benchmark(DataConfig(kind="built", cultivar_path=str(tmp_path / "nothing")))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "deu_Latn_Germany.jsonl").write_text("{}\n", "utf-8")
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "other"))):
        load_benchmark(DataConfig(kind="built", cultivar_path=str(tmp_path / "other")))


def test_the_assets_build_and_evaluate_the_dataset(store, tmp_path, built, capsys):
    import dagster as dg

    _, construction = built
    for locale in LOCALES:
        hand_in(store, tmp_path, locale, finals_for(store, locale))
    construction = construction.model_copy(update={"dataset": DatasetConfig(
        folder=str(tmp_path / "ds"))})
    settings = Settings(database=str(store.path), data=DataConfig(kind="built"),
                        construction=construction)
    assert settings.data.cultivar_path == str(tmp_path / "ds")
    assert "build_dataset" in {job.name for job in JOBS}
    with dg.instance_for_test() as instance:
        result = dg.materialize(ASSETS, selection=["cultivar_dataset", "test_sets"],
                                instance=instance, resources=resources_from_settings(settings),
                                raise_on_error=False)
        assert result.success
        meta = {k: v.value for k, v in
                result.asset_materializations_for_node("cultivar_dataset")[0].metadata.items()}
    assert meta["instances"] == 24 and meta["demo_data"] is True
    assert meta["actions_per_locale"]["hin_Deva_India"] == {"kept": 10, "edited": 1,
                                                             "reverted": 1}
    assert "| hin\\_Deva\\_India | 10 | 1 | 0 | 0 | 1 |" in meta["table1"]
    with duckdb.connect(str(store.path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM test_sets WHERE kind = 'cultivar'").fetchone()[
            0] == 2
        assert con.execute("SELECT count(*) FROM instance_provenance").fetchone()[0] == 24

    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json")), "utf-8")
    assert main(["--config", str(config), "build", "dataset", "--folder",
                 str(tmp_path / "ds2")]) == 0
    out = capsys.readouterr().out
    assert "spa_Latn_Spain: 12 instances (10 kept, 1 edited, 1 reverted)" in out
    assert "Table 1" in out and "(DEMO annotation files)" in out
