"""The demo closes the loop: selection -> drafts -> tool pages -> the demo annotation files ->
the dataset -> evaluation, in one `run_pipeline`; the evaluated instances are exactly the bundled
demo data. Here the drafts come from the fake OpenAI server's localiser (cached first, then the
server is gone), the model is the copy baseline; `tests/test_demo_cli.py` runs the real demo.
The demo annotation files made against the drafts, ingested and built by the core functions,
are the bundled demo data; the whole `run_pipeline` of them is a slow test (CI runs it), and
the run that stops at drifted drafts runs the stages up to the annotations in the fast suite.
The shipped demo annotation files are checked against the demo data."""

from __future__ import annotations

import html
import json

import duckdb
import pytest
from build_helpers import build_drafts
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.construction.annotation import postedit_build
from cultivar_assets.construction.annotation.demo import (
    DEMO_ANNOTATOR,
    demo_finals,
    write_demo_annotations,
)
from cultivar_assets.construction.annotation.file import read_annotation_document
from cultivar_assets.construction.annotation.postedit_build import (
    ingest_folder_locale,
    stored_task,
)
from cultivar_assets.construction.config import DEMO_LOCALES, demo_annotations_dir
from cultivar_assets.construction.dataset import build_dataset
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.publish.card import card_for_store
from cultivar_assets.runner import run_pipeline
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_dataset

pytestmark = pytest.mark.dagster_instances


def demo_like_settings(tmp_path, construction) -> Settings:
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    return Settings(database=str(tmp_path / "demo.duckdb"), data=DataConfig(kind="built"),
                    construction=construction, models_file=str(models),
                    models=["copy-source-baseline"], metrics=MetricConfig(bleu_tokenize="13a"))


def prepare(tmp_path, locales):
    """Cached drafts of ``locales`` and demo annotation files made against them (in the
    construction's annotation folder, ``tmp_path/returned``)."""
    construction = build_drafts(tmp_path, list(locales), tmp_path / "drafts.duckdb")
    store = Store(tmp_path / "drafts.duckdb")
    tasks = [stored_task(store, locale) for locale in locales]
    folder = tmp_path / "returned"
    paths = write_demo_annotations(tasks, folder)
    again = write_demo_annotations(tasks, tmp_path / "again")
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in again]  # deterministic
    return construction, tasks


@pytest.fixture
def prepared(tmp_path):
    """:func:`prepare` of the demo's six locales."""
    return prepare(tmp_path, DEMO_LOCALES)


def bundled_demo_instances() -> list[tuple]:
    """(locale, id, source and English original, source and English localised) of every
    instance of the bundled demo data, sorted."""
    demo = load_benchmark(DataConfig())
    return sorted((i.locale, i.instance_id, i.source_original, i.english_original,
                   i.source_localised, i.english_localised)
                  for rows in demo.instances.values() for i in rows)


def test_the_demo_annotation_files_build_the_bundled_demo_data(tmp_path, prepared):
    """The files of ``prepared`` ingested from the annotation folder, locale by locale, and
    built: the dataset is the bundled demo data, with one annotator's provenance per instance."""
    construction, _ = prepared
    store = Store(tmp_path / "drafts.duckdb")
    folder = construction.annotation.folder_path()
    assert folder == tmp_path / "returned"
    for locale in DEMO_LOCALES:
        ingest_folder_locale(store, folder, locale)
    built = build_dataset(store, tmp_path / "dataset", list(DEMO_LOCALES))
    assert built.is_demo and sorted(built.actions()) == sorted(DEMO_LOCALES)
    data = load_benchmark(DataConfig(kind="built", cultivar_path=str(tmp_path / "dataset")))
    assert "Cultivar built by this project" in data.source
    assert sorted((i.locale, i.instance_id, i.source_original, i.english_original,
                   i.source_localised, i.english_localised)
                  for rows in data.instances.values() for i in rows) == bundled_demo_instances()
    write_dataset(store, data)
    provenance = store.query("instance_provenance")
    assert len(provenance) == 72 and {r["annotator"] for r in provenance} == {DEMO_ANNOTATOR}
    card = card_for_store(store)
    assert "## Annotation statistics (computed from the annotation files)" in card.body


@pytest.mark.slow  # the whole pipeline; the fast suite builds the data above and runs the stages
def test_run_pipeline_builds_and_evaluates_the_demo_data(tmp_path, prepared, monkeypatch,
                                                         isolated_home):
    construction, _ = prepared
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    say = []
    result = run_pipeline(demo_like_settings(tmp_path, construction), say=say.append)
    assert [name for name, _ in result.stages] == [
        "selection", "localisation, tools and ingest", "dataset", "test sets",
        "model copy-source-baseline", "results, dataset folder and charts",
        "site of model copy-source-baseline", "site"]
    assert any("[2/8] for 6 locale(s): LLM drafts" in line for line in say)
    build = result.build
    assert build.is_demo and sorted(r["locale"] for r in build.table1) == sorted(DEMO_LOCALES)
    for locale, page in build.tools.items():
        assert (tmp_path / "tools" / locale / "index.html").is_file() and page.endswith(
            f"{locale}/index.html")

    with duckdb.connect(result.database, read_only=True) as con:
        evaluated = con.execute("SELECT locale, instance_id, source_original, english_original, "
                                "source_localised, english_localised FROM raw.instances "
                                "ORDER BY ALL").fetchall()
        provenance = con.execute("SELECT count(*), count(DISTINCT annotator) FROM "
                                 "instance_provenance").fetchone()
        (source,) = con.execute("SELECT source FROM raw.dataset").fetchone()
    assert evaluated == bundled_demo_instances()  # today's demo instances are the evaluated data
    assert provenance == (72, 1) and "Cultivar built by this project" in source
    assert len(result.leaderboard) == 1
    card = (isolated_home / "publish" / "hf_dataset" / "README.md").read_text("utf-8")
    assert "## Annotation statistics (computed from the annotation files)" in card
    site_card = html.unescape((isolated_home / "site" / "dataset.html").read_text("utf-8"))
    assert site_card.count('id="table1-computed"') == 1 and site_card.count("<h1") == 1
    assert "demo's shipped annotation files" in site_card  # what the computed table is from


DRIFT_LOCALES = ("cmn_Hans_China", "hin_Deva_US", "spa_Latn_Spain")  # three of the demo's six


def test_drafts_that_drift_stop_the_demo_with_what_to_do(tmp_path, monkeypatch):
    """Files made against other drafts (here: two drafts' hashes changed in the files, as when
    the localiser's output moved) stop the run with the message and nothing is ingested. The
    demo's construction of three of its locales: the run's stages up to the annotations."""
    construction, _ = prepare(tmp_path, DRIFT_LOCALES)
    folder = tmp_path / "returned"
    monkeypatch.setattr(postedit_build, "demo_annotations_dir", lambda: folder)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (path,) = folder.glob("cmn_Hans_China-*.json")
    document = json.loads(path.read_text("utf-8"))
    document["task"]["drafts_hash"] = "0" * 64
    document["task"]["task_id"] = f"cmn_Hans_China-{'0' * 12}"  # a header that agrees with itself
    for index in (4, 7):
        document["items"][index]["draft"]["draft_hash"] = "1" * 64
    path.write_text(json.dumps(document, ensure_ascii=False), "utf-8")
    with pytest.raises(RuntimeError) as error:
        run_pipeline(demo_like_settings(tmp_path, construction), say=lambda _: None)
    message = str(error.value)
    assert message.startswith(f"building 1 of {len(DRIFT_LOCALES)} ")
    assert "annotations [cmn_Hans_China] failed" in message
    assert "2 of 12" in message and "ids 4, 7" in message
    assert "python scripts/regenerate_demo_annotations.py" in message
    store = Store(tmp_path / "demo.duckdb")  # the other locales were ingested, not this one
    assert [r["locale"] for r in store.query("annotation_summary")] == sorted(
        set(DRIFT_LOCALES) - {"cmn_Hans_China"})
    assert store.query("dataset_build_row") == []  # and no dataset was built


def test_the_shipped_demo_annotation_files_record_the_demo_data():
    folder = demo_annotations_dir()
    files = sorted(folder.glob("*.annotations.json"))
    assert sorted(p.name.split("-")[0] for p in files) == sorted(DEMO_LOCALES)
    for path in files:
        document = read_annotation_document(path)  # UTF-8, JSON, format, version, schema
        task = document["task"]
        assert path.name == f"{task['task_id']}.annotations.json"
        assert task["annotator"] == DEMO_ANNOTATOR and task["n_items"] == 12
        finals = demo_finals(task["locale"])
        for item in document["items"]:
            row = finals[item["instance_id"]]
            assert item["final"] == {"source": row["source_localised"],
                                     "english": row["english_localised"]}
            assert item["original"] == {"source": row["source_original"],
                                        "english": row["english_original"]}
            assert item["confirmed"] and item["draft"]["prompt_hash"]
        assert json.loads(path.read_text("utf-8")) == document
