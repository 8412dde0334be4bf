"""Post-editing as steps of the build: tool pages from the stored drafts, the `annotations`
asset reading the configured folder, `cultivar build tools|ingest`, and bad files: each gives one
clear message and changes nothing."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest
import yaml
from annotation_helpers import annotation_document
from build_helpers import build_drafts

from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.cli import main
from cultivar_assets.construction.annotation import postedit_build
from cultivar_assets.construction.annotation.postedit_build import (
    DemoDriftError,
    build_tools,
    ingest_folder_locale,
    stored_task,
)
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.construction.config import AnnotationConfig
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

pytestmark = pytest.mark.dagster_instances
LOCALES = ["deu_Latn_Switzerland", "cmn_Hans_China"]
TABLES = ["raw.annotations", "raw.annotation_files"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A database with the demo selection and fake-server drafts of two locales."""
    root = tmp_path_factory.mktemp("built")
    return root, build_drafts(root, LOCALES, root / "template.duckdb")


@pytest.fixture
def setup(built, tmp_path):
    """A fresh copy of the built database and settings pointing at it."""
    root, construction = built
    shutil.copyfile(root / "template.duckdb", tmp_path / "build.duckdb")
    construction = construction.model_copy(update={"annotation": AnnotationConfig(
        folder=str(tmp_path / "returned"), tools_dir=str(tmp_path / "tools"))})
    settings = Settings(database=str(tmp_path / "build.duckdb"), construction=construction)
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json")), "utf-8")
    return settings, str(config), Store(settings.database)


def snapshot(store: Store) -> dict[str, list]:
    with duckdb.connect(str(store.path), read_only=True) as con:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES}


def write(path, document) -> str:
    path.write_text(json.dumps(document, ensure_ascii=False), "utf-8")
    return str(path)


def edited_document(task: AnnotationTask, annotator: str = "annotator-1") -> dict:
    """Item 0's English edited, item 1 reverted to the original, the rest kept."""
    d0, d1 = task.drafts[0], task.drafts[1]
    return annotation_document(task, {
        d0.instance_id: (d0.source_draft, d0.english_draft + " Indeed."),
        d1.instance_id: (d1.source_original, d1.english_original)}, annotator=annotator)


def test_tool_pages_are_built_from_the_stored_drafts(setup, tmp_path):
    _, _, store = setup
    pages = build_tools(store, tmp_path / "tools", LOCALES)
    assert [p.locale for p in pages] == LOCALES
    for page in pages:
        assert page.page == tmp_path / "tools" / page.locale / "index.html"
        assert page.task.task_id in page.page.read_text("utf-8")
        assert page.task == stored_task(store, page.locale)


def test_cli_tools_ingest_and_re_ingest(setup, tmp_path, capsys):
    _, config, store = setup
    assert main(["--config", config, "build", "tools"]) == 0
    out = capsys.readouterr().out
    page = tmp_path / "tools" / "deu_Latn_Switzerland" / "index.html"
    assert f"deu_Latn_Switzerland: {page}" in out
    assert "cultivar build ingest FILE" in out  # the command that hands a file in
    task = stored_task(store, LOCALES[0])
    first = write(tmp_path / "first.json", edited_document(task))
    assert main(["--config", config, "build", "ingest", first]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("deu_Latn_Switzerland: ")
              and "first.json" in line]
    assert all(count in line for count in ("(12 ", "10 kept", "1 reverted", "1 edited"))
    kept = tmp_path / "returned" / f"{task.task_id}.annotations.json"
    assert kept.read_bytes() == (tmp_path / "first.json").read_bytes()
    (row,) = store.query("annotation_summary")
    assert (row["kept_llm_paraphrase"], row["reverted_to_flores"], row["edited_target_only"]) == (
        10, 1, 1)

    corrected = annotation_document(task, annotator="annotator-2")  # everything kept
    assert main(["--config", config, "build", "ingest",
                 write(tmp_path / "corrected.json", corrected)]) == 0
    (row,) = store.query("annotation_summary")
    assert (row["n_instances"], row["kept_llm_paraphrase"], row["annotator"]) == (
        12, 12, "annotator-2")  # the locale's rows were replaced, not added to
    assert len(store.query("locale_annotations", locale=LOCALES[0])) == 12
    assert [p.name for p in (tmp_path / "returned").iterdir()] == [kept.name]


def bad_files(tmp_path, store) -> dict[str, tuple[str, str]]:
    """name -> (file, a phrase of its message): the bad files the ingest refuses."""
    task = stored_task(store, LOCALES[0])
    chinese = stored_task(store, LOCALES[1])
    good = annotation_document(task)
    files = {}

    def bad(name: str, document, phrase: str) -> None:
        path = tmp_path / f"{name}.json"
        if isinstance(document, bytes):
            path.write_bytes(document)
        else:
            write(path, document)
        files[name] = (str(path), phrase)

    bad("schema_version", {**good, "schema_version": 2},
        "schema_version: is 2; this reader reads schema version 1 only")
    unknown = json.loads(json.dumps(good))
    unknown["items"][3]["instance_id"] = 977
    bad("unknown_id", unknown, "instance 977, instance_id: is not an instance of task")
    missing = json.loads(json.dumps(good))
    missing["items"][2]["final"]["english"] = "   "
    bad("missing_final", missing, "final.english: holds only whitespace")
    bad("unconfirmed", annotation_document(task, confirmed=False),
        "confirmed: the item is not confirmed")
    other = {**good, "items": annotation_document(chinese)["items"]}  # another task's items
    bad("other_task", other, "locale: is cmn_Hans_China, not the task's deu_Latn_Switzerland")
    duplicate = json.loads(json.dumps(good))
    duplicate["items"][5] = duplicate["items"][4]
    bad("duplicate_ids", duplicate, "instance_id: occurs 2 times")
    bad("not_utf8", json.dumps(good, ensure_ascii=False).encode("utf-8").replace(
        "ä".encode(), "ä".encode("latin-1"), 1), "is not UTF-8 text")
    bad("truncated", json.dumps(good, ensure_ascii=False).encode("utf-8")[:-40],
        "the JSON ends early")
    wrong_locale = json.loads(json.dumps(good))
    wrong_locale["task"]["locale"] = "jpn_Jpan_Japan"
    bad("wrong_locale", wrong_locale, "task.locale: is jpn_Jpan_Japan, a locale without drafts")
    originals = json.loads(json.dumps(good))
    originals["items"][0]["original"]["english"] += " (changed)"
    bad("originals", originals, "original.english: differs from the source benchmark's text")
    stale = json.loads(json.dumps(good))
    stale["task"]["drafts_hash"] = "0" * 64
    stale["task"]["task_id"] = f"{task.locale}-{'0' * 12}"  # a header that agrees with itself
    bad("other_drafts", stale, "the file was made against other drafts of deu_Latn_Switzerland")
    surrogate = json.loads(json.dumps(good))
    surrogate["items"][1]["final"]["source"] += " \ud800"
    bad("lone_surrogate", json.dumps(surrogate).encode(),  # the escape, as JSON writes it
        "items[1].final.source: holds a lone surrogate, U+D800")
    float_id = json.loads(json.dumps(good))
    float_id["items"][6]["instance_id"] = float(float_id["items"][6]["instance_id"])
    bad("float_id", float_id, "items[6].instance_id: must be an integer, not the number")
    return files


def test_ten_kinds_of_bad_file_each_give_one_message_and_change_nothing(setup, tmp_path, capsys):
    _, config, store = setup
    good = write(tmp_path / "good.json", edited_document(stored_task(store, LOCALES[0])))
    assert main(["--config", config, "build", "ingest", good]) == 0
    before = snapshot(store)
    capsys.readouterr()
    files = bad_files(tmp_path, store)
    assert len(files) >= 10
    for name, (path, phrase) in files.items():
        assert main(["--config", config, "build", "ingest", path]) == 1, name
        error = capsys.readouterr().err
        # wording is the interface: the command's error prefix (cli/common.py: print_error)
        assert error.startswith(f"cultivar build: error: {path}: "), (name, error)
        assert "nothing was read from this file" in error, name
        assert phrase in error, (name, error)
        assert snapshot(store) == before, name
    # a good file with a bad one: neither is ingested
    chinese = write(tmp_path / "zh.json", annotation_document(stored_task(store, LOCALES[1])))
    assert main(["--config", config, "build", "ingest", chinese, files["unconfirmed"][0]]) == 1
    assert "No file was ingested (2 given, 1 with problems)" in capsys.readouterr().err
    assert snapshot(store) == before


def materialise(settings, instance, selection, partition):
    import dagster as dg

    return dg.materialize(ASSETS, selection=selection, partition_key=partition,
                          instance=instance, resources=resources_from_settings(settings),
                          raise_on_error=False)


def failure(result) -> str:
    event = next(e for e in result.all_events if e.is_step_failure)
    return str(event.step_failure_data.error)


def test_the_assets_build_the_tool_and_ingest_from_the_folder(setup, tmp_path):
    import dagster as dg

    settings, _, store = setup
    locale = LOCALES[1]
    folder = tmp_path / "returned"
    with dg.instance_for_test() as instance:
        result = materialise(settings, instance, ["postedit_tools"], locale)
        assert result.success
        event = result.asset_materializations_for_node("postedit_tools")[0]
        page = event.metadata["page"].value
        assert page == str(tmp_path / "tools" / locale / "index.html")

        result = materialise(settings, instance, ["annotations"], locale)
        assert not result.success
        assert str(folder) in failure(result) and f"{locale}-<" in failure(result)
        assert "cultivar build ingest FILE" in failure(result)

        task = stored_task(store, locale)
        folder.mkdir(exist_ok=True)
        document = edited_document(task, annotator="zh-1")
        path = folder / f"{task.task_id}.annotations.json"
        write(path, {**document, "schema_version": 2})
        result = materialise(settings, instance, ["annotations"], locale)
        assert not result.success and "schema_version: is 2" in failure(result)
        assert snapshot(store) == {t: [] for t in TABLES}

        write(path, document)
        result = materialise(settings, instance, ["annotations"], locale)
        assert result.success
        meta = {k: v.value for k, v in
                result.asset_materializations_for_node("annotations")[0].metadata.items()}
    assert (meta["instances"], meta["kept_llm_paraphrase"], meta["reverted_to_flores"]) == (
        12, 10, 1)
    assert meta["annotator"] == "zh-1" and meta["file"] == str(path)
    assert store.query("annotation_summary")[0]["locale"] == locale


def test_drafts_that_drifted_from_the_shipped_demo_files_say_what_to_do(setup, tmp_path,
                                                                        monkeypatch):
    _, _, store = setup
    locale = LOCALES[0]
    folder = tmp_path / "shipped"
    folder.mkdir()
    monkeypatch.setattr(postedit_build, "demo_annotations_dir", lambda: folder)
    task = stored_task(store, locale)
    document = annotation_document(task)
    document["task"]["drafts_hash"] = "f" * 64
    document["task"]["task_id"] = f"{locale}-{'f' * 12}"
    for index in (2, 5):
        document["items"][index]["draft"]["draft_hash"] = "e" * 64
    write(folder / f"{locale}-{'f' * 12}.annotations.json", document)
    with pytest.raises(DemoDriftError) as error:
        ingest_folder_locale(store, folder, locale)
    message = str(error.value)
    assert "2 of 12" in message and "ids 2, 5" in message
    assert "python scripts/regenerate_demo_annotations.py" in message
    assert snapshot(store) == {t: [] for t in TABLES}


def test_another_locales_file_in_the_folder_is_refused(setup, tmp_path):
    _, _, store = setup
    folder = tmp_path / "returned"
    folder.mkdir()
    chinese = annotation_document(stored_task(store, LOCALES[1]))
    write(folder / f"{LOCALES[0]}-0123456789ab.annotations.json", chinese)
    with pytest.raises(Exception,
                       match=rf"{LOCALES[0]}-0123456789ab\.annotations\.json.*{LOCALES[1]}"):
        ingest_folder_locale(store, folder, LOCALES[0])
    write(folder / f"{LOCALES[0]}-ba9876543210.annotations.json", chinese)
    with pytest.raises(Exception,
                       match=r"\b2\b.*deu_Latn_Switzerland: .*0123456789ab.*ba9876543210"):
        ingest_folder_locale(store, folder, LOCALES[0])
    assert snapshot(store) == {t: [] for t in TABLES}
