"""Drafts that say what they are, and survive: the localiser is described by the
engine and model that ran; drafts that are no localisation are flagged, counted and reported when
kept; drafts are stored beside their tool page and never replaced, once a tool page or an
annotation file was made from them, unless asked."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
import yaml
from annotation_helpers import annotation_document, demo_drafts
from browser_helpers import NEEDS_CHROMIUM, ToolPage, serve
from build_helpers import fake_construction
from localisation_helpers import localising_answer
from openai_server import FakeOpenAIServer

from cultivar_assets.cli import main
from cultivar_assets.construction.annotation.postedit_build import (
    build_tools,
    ingest_files,
    kept_flagged,
    stored_task,
)
from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.localisation.drafts import (
    DRAFTS_FILE,
    draft_checks,
    read_drafts_file,
    script_share,
)
from cultivar_assets.construction.localisation.prompts import parse_prompts
from cultivar_assets.construction.localisation.store import read_drafts
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

HINDI = "hin_Deva_India"


def copying_answer(text: str) -> str:
    """A weak base model's continuation of the few-shot prompt: the English line as the Hindi
    one (the failure seen with a real server), for the last pair of the prompt."""
    pair = [line for line in text.splitlines() if re.match(r"^[A-Z][\w ]*: ", line)][-2:]
    english = pair[1].split(": ", 1)[1]
    return f" {english}\nEnglish: {english}"


def hindi_answer(text: str) -> str:
    """A well-formed answer (chat, or the continuation of a plain prompt): the pair asked for
    with one Devanagari word added."""
    pair = [line for line in text.splitlines() if re.match(r"^[A-Z][\w ]*: ", line)][-2:]
    source, english = pair[0].split(": ", 1), pair[1].split(": ", 1)
    body = f"दिल्ली {source[1]}\n{english[0]}: Delhi {english[1]}"
    return f" {body}" if text.rstrip().endswith(":") else f"{source[0]}: {body}"


@pytest.fixture
def server():
    fake = FakeOpenAIServer(answer=localising_answer).start()
    yield fake
    fake.stop()


def construction_for(tmp_path, server, locales, **localisation):
    construction = fake_construction(tmp_path, locales, server.url)
    return construction.model_copy(update={"localisation": construction.localisation.model_copy(
        update=localisation)})


def select(construction, store) -> None:
    build_selection(construction.source, construction.selection, store, show_bar=False)


# -- 1. the localiser is what ran ---------------------------------------------------------------

def select_and_localise(tmp_path, construction) -> tuple[Settings, Path]:
    """A settings file for ``construction``, then `cultivar build select` and `build localise`."""
    settings = Settings(database=str(tmp_path / "b.duckdb"), construction=construction)
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json")), "utf-8")
    assert main(["--config", str(config), "build", "select"]) == 0
    assert main(["--config", str(config), "build", "localise"]) == 0
    return settings, config


def test_a_served_model_with_the_few_shot_template_is_stored_and_printed_as_itself(
        tmp_path, server, capsys):
    server.answer = copying_answer
    construction = construction_for(tmp_path, server, [HINDI], model="my-localiser-1",
                                    prompt="cultivar-paper-fewshot", max_attempts=1)
    settings, _ = select_and_localise(tmp_path, construction)
    out = capsys.readouterr().out
    with duckdb.connect(settings.database, read_only=True) as con:
        localiser, engine, model = con.execute(
            "SELECT localiser, engine, model FROM localisation_summary").fetchone()
    assert (localiser, engine, model) == ("my-localiser-1 (openai)", "openai", "my-localiser-1")
    assert f"by {localiser} (" in out and "cultivar-paper-fewshot" in out
    assert "demo" not in localiser and "weak" not in out


def test_replayed_answers_say_so_and_name_the_model_that_recorded_them(tmp_path):
    from cultivar_assets.construction.config import demo_construction

    construction = demo_construction()
    store = Store(tmp_path / "demo.duckdb")
    select(construction.model_copy(update={"selection": construction.selection.model_copy(
        update={"review_dir": str(tmp_path / "review")})}), store)
    build = build_localisation(construction.localisation, store, ["spa_Latn_Spain"],
                               show_bar=False)
    row = build.summary["spa_Latn_Spain"]
    assert row["localiser"] == ("recorded answers played back (recorded from "
                                "google/gemma-3-270m (transformers, revision "
                                "gguf-q4_k_m-sha256-a5fd3b62230aa5ec))")
    assert row["engine"] == "replay"
    assert json.loads(row["recorded_from"])["model"] == "google/gemma-3-270m"


def test_a_template_with_a_label_is_refused():
    text = yaml.safe_dump({"templates": {"mine": {
        "kind": "chat", "label": "a very good localiser",
        "system": "Localise this {src_name}-{tgt_name} pair to {src_location}.",
        "user": "{src_name}: {src_text}\n{tgt_name}: {tgt_text}"}}})
    with pytest.raises(ConstructionError, match=r"template 'mine': label: "):
        parse_prompts(text, "mine.yaml")


# -- 2. drafts that are no localisation are flagged -------------------------------------------

def hindi_draft(source: str, english: str = "The mayor of Delhi spoke.") -> object:
    (draft,) = [d for d in demo_drafts("hin_Deva_India")][:1]
    return replace(draft, source_draft=source, english_draft=english)


def test_the_checks_of_a_draft():
    original = hindi_draft("x")
    assert draft_checks(hindi_draft("दिल्ली के मेयर ने iPhone 15 के बारे में बात की।")) == ()
    assert draft_checks(hindi_draft("The mayor of Delhi spoke.")) == (
        "source_not_in_script", "source_equals_english")
    assert draft_checks(hindi_draft("Delhi ke mayor ne baat ki.")) == ("source_not_in_script",)
    assert draft_checks(hindi_draft("12, 13.")) == ("source_not_in_script",)  # no letter
    assert draft_checks(hindi_draft(f"  {original.source_original} ")) == (
        "source_equals_original",)
    assert draft_checks(hindi_draft(original.english_original, "Something else.")) == (
        "source_not_in_script", "source_equals_english")
    assert draft_checks(replace(original, flagged=True, source_draft=None,
                                english_draft=None)) == ()
    # letters only: half Devanagari, half Latin is in the script (the threshold is ours)
    assert script_share("कख ab", "Deva") == 0.5 and script_share("१२ ।", "Deva") is None
    assert script_share("北京市", "Hans") == 1.0 and script_share("東京へ", "Jpan") == 1.0


def test_flagged_drafts_are_stored_counted_per_reason_and_shown_in_the_tool(tmp_path, server):
    server.answer = copying_answer
    construction = construction_for(tmp_path, server, [HINDI, "deu_Latn_Germany"],
                                    prompt="cultivar-paper-fewshot", max_attempts=1)
    store = Store(tmp_path / "b.duckdb")
    select(construction, store)
    build_localisation(construction.localisation, store, show_bar=False,
                       annotation=construction.annotation)
    with duckdb.connect(str(store.path), read_only=True) as con:
        counts = con.execute(
            "SELECT locale, n_drafts, n_source_not_in_script, n_source_equals_english, "
            "n_source_equals_original FROM localisation_summary ORDER BY locale").fetchall()
        checks = con.execute("SELECT DISTINCT checks FROM localised_drafts WHERE locale = ?",
                             [HINDI]).fetchall()
    assert counts == [("deu_Latn_Germany", 12, 0, 12, 0), (HINDI, 12, 12, 12, 0)]
    assert checks == [(["source_not_in_script", "source_equals_english"],)]
    (page,) = build_tools(store, tmp_path / "tools", [HINDI])
    assert page.n_flagged == 12  # what `cultivar build tools` and the asset report
    html = page.page.read_text("utf-8")
    assert html.count('data-role="checks"') == 12
    assert ("Flagged draft:</strong> the Hindi side is not in the Devanagari script; the Hindi "
            "side is the English sentence.") in html
    payload = json.loads(re.search(r'<script type="application/json" id="task-data">(.*?)'
                                   r"</script>", html, re.S).group(1))
    assert payload["items"][0]["draft"]["checks"] == ["source_not_in_script",
                                                      "source_equals_english"]


def test_kept_flagged_pairs_are_named_at_ingest_and_counted_by_the_dataset(
        tmp_path, server, capsys):
    server.answer = copying_answer
    construction = construction_for(tmp_path, server, [HINDI], prompt="cultivar-paper-fewshot",
                                    max_attempts=1)
    settings, config = select_and_localise(tmp_path, construction)
    store = Store(settings.database)
    task = stored_task(store, HINDI)
    fixed = {d.instance_id: (d.source_original, d.english_original) for d in task.drafts[2:]}
    path = tmp_path / f"{task.task_id}.annotations.json"
    path.write_text(json.dumps(annotation_document(task, fixed)), "utf-8")
    capsys.readouterr()
    assert main(["--config", str(config), "build", "ingest", str(path)]) == 0
    out = capsys.readouterr().out
    first, second = (d.instance_id for d in task.drafts[:2])
    warning = next(line for line in out.splitlines() if line.startswith(f"warning: {HINDI}: "))
    assert warning.startswith(f"warning: {HINDI}: 2 ")
    assert all(f"{HINDI}_{i} (source_not_in_script, source_equals_english)" in warning
               for i in (first, second))
    assert kept_flagged(store, HINDI) == {first: ("source_not_in_script",
                                                  "source_equals_english"),
                                          second: ("source_not_in_script",
                                                   "source_equals_english")}
    assert main(["--config", str(config), "build", "dataset"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines()
              if line.startswith(f"{HINDI}: 12 ")]
    assert all(count in line for count in ("2 kept", "0 edited", "10 reverted", "2 flagged"))


# -- 3. drafts are stored beside their tool page and kept ---------------------------------------

def test_the_drafts_file_beside_the_tool_page_holds_the_drafts_and_their_hashes(tmp_path):
    from cultivar_assets.construction.annotation.postedit_tool import build_postedit_tool
    from cultivar_assets.construction.localisation.drafts import task_id

    drafts = demo_drafts(flagged=True)
    page = build_postedit_tool(drafts, tmp_path / "tool")
    path = page.parent / DRAFTS_FILE
    assert read_drafts_file(path) == drafts
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert [r["draft_hash"] for r in rows] == [d.draft_hash for d in drafts]
    assert {r["task_id"] for r in rows} == {task_id(drafts[0].locale, drafts)}
    rows[3]["english_draft"] = "Changed by hand."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    with pytest.raises(ValueError, match=rf"{DRAFTS_FILE}, line 4: .*deu_Latn_Germany_"
                       rf"{rows[3]['instance_id']}\b.*draft_hash"):
        read_drafts_file(path)


def test_drafts_with_a_tool_page_are_kept_until_redraft(tmp_path, server):
    construction = construction_for(tmp_path, server, ["deu_Latn_Germany", HINDI])
    store = Store(tmp_path / "b.duckdb")
    select(construction, store)
    first = build_localisation(construction.localisation, store, show_bar=False,
                               annotation=construction.annotation)
    assert first.kept == {} and len(server.requests) == 24
    before = {loc: stored_task(store, loc).task_id for loc in (HINDI, "deu_Latn_Germany")}
    build_tools(store, construction.annotation.tools_path(), [HINDI])
    # the server now answers otherwise (greedy decoding on a server is not reproducible) and
    # the cache is gone: only the locale without a tool page gets new drafts
    server.answer = hindi_answer
    fresh = construction.localisation.model_copy(update={"cache_dir": str(tmp_path / "new")})
    said: list[str] = []
    second = build_localisation(fresh, store, show_bar=False, annotation=construction.annotation,
                                say=said.append)
    assert list(second.kept) == [HINDI] and len(server.requests) == 36
    assert stored_task(store, HINDI).task_id == before[HINDI]
    assert stored_task(store, "deu_Latn_Germany").task_id != before["deu_Latn_Germany"]
    tool = construction.annotation.tools_path() / HINDI / "index.html"
    assert said[0].startswith(f"{HINDI}: ") and "\n" not in said[0]
    assert all(fact in said[0] for fact in (
        before[HINDI], str(tool), f"cultivar build localise --redraft --locale {HINDI}",
        "redraft: true"))
    third = build_localisation(fresh, store, [HINDI], show_bar=False,
                               annotation=construction.annotation, redraft=True)
    assert third.kept == {} and stored_task(store, HINDI).task_id != before[HINDI]
    assert all("दिल्ली" in d.source_draft for d in read_drafts(store, HINDI))


def test_drafts_an_annotation_file_was_made_from_are_kept(tmp_path, server, capsys):
    construction = construction_for(tmp_path, server, [HINDI])
    settings, config = select_and_localise(tmp_path, construction)
    store = Store(settings.database)
    task = stored_task(store, HINDI)
    path = tmp_path / f"{task.task_id}.annotations.json"
    path.write_text(json.dumps(annotation_document(task)), "utf-8")
    ingest_files(store, [path])  # ingested: held even without the file in the folder
    server.answer = hindi_answer
    capsys.readouterr()
    assert main(["--config", str(config), "build", "localise", "--cache-dir",
                 str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert path.name in out and "kept" in out and stored_task(store, HINDI) == task
    assert len(server.requests) == 12
    assert main(["--config", str(config), "build", "localise", "--cache-dir",
                 str(tmp_path / "new"), "--redraft"]) == 0
    assert stored_task(store, HINDI) != task and len(server.requests) == 24


@pytest.mark.dagster_instances
def test_the_assets_keep_held_drafts_redraft_on_request_and_report_kept_flagged_pairs(
        tmp_path, server):
    import dagster as dg

    from cultivar_assets.assets.graph import ASSETS
    from cultivar_assets.resources import resources_from_settings

    server.answer = copying_answer
    construction = construction_for(tmp_path, server, [HINDI], prompt="cultivar-paper-fewshot",
                                    max_attempts=1)
    settings = Settings(database=str(tmp_path / "b.duckdb"), construction=construction)
    later = Settings(database=settings.database, construction=construction_for(
        tmp_path, server, [HINDI], prompt="cultivar-paper-fewshot", max_attempts=1,
        cache_dir=str(tmp_path / "new")))  # the cache is gone

    def materialise(selection, using=settings, **kwargs):
        partition = None if selection == ["selected_instances"] else HINDI
        result = dg.materialize(ASSETS, selection=selection, instance=instance,
                                partition_key=partition, resources=resources_from_settings(using),
                                **kwargs)
        event = result.asset_materializations_for_node(selection[0])[0]
        return {k: v.value for k, v in event.metadata.items()}

    with dg.instance_for_test() as instance:
        materialise(["selected_instances"])
        first = materialise(["localised_drafts", "postedit_tools"])
        assert first["kept"] is False and first["localiser"] == "gpt-test (openai)"
        assert (first["checks_source_not_in_script"], first["checks_source_equals_english"],
                first["checks_source_equals_original"]) == (12, 12, 0)
        store = Store(settings.database)
        task = stored_task(store, HINDI)
        folder = construction.annotation.folder_path()
        folder.mkdir(parents=True)
        (folder / f"{task.task_id}.annotations.json").write_text(
            json.dumps(annotation_document(task)), "utf-8")  # every draft kept as it is
        ingested = materialise(["annotations"])
        assert ingested["kept_flagged_pairs"] == 12
        assert ingested["kept_flagged"].startswith(
            f"{HINDI}: 12 pair(s) kept unchanged although their draft was flagged: {HINDI}_")
        server.answer = hindi_answer
        again = materialise(["localised_drafts"], later)
        assert again["kept"] is True and again["task_id"] == task.task_id
        assert again["kept_because"].count("was made from them") == 0  # three holders
        assert "the tool page" in again["kept_because"] and "were made from them" in (
            again["kept_because"])
        assert len(server.requests) == 12
        redrafted = materialise(["localised_drafts"], later, run_config={"ops": {
            "localised_drafts": {"config": {"redraft": True}}}})
        assert redrafted["kept"] is False and redrafted["task_id"] != task.task_id
        assert redrafted["checks_source_not_in_script"] == 0 and len(server.requests) == 24


@pytest.mark.dagster_instances
@pytest.mark.slow  # two whole runs: the keeping is proven on the assets and the build above
def test_a_rerun_with_other_localiser_settings_keeps_the_drafts_and_says_so(
        tmp_path, monkeypatch, isolated_home):
    """The runner (`cultivar run`): once tool pages and returned files exist, a change of the
    localiser's settings reruns the build steps, which keep the drafts (the server is gone: a
    new request would fail) and say so; the rest of the pipeline runs on the same drafts."""
    from build_helpers import build_drafts
    from conftest import COPY_ENTRY, write_models_file

    from cultivar_assets.construction.annotation.demo import write_demo_annotations
    from cultivar_assets.data.sources import DataConfig
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.runner import run_pipeline

    locales = ["deu_Latn_Germany", "hin_Deva_US"]
    construction = build_drafts(tmp_path, locales, tmp_path / "drafts.duckdb")
    drafts_store = Store(tmp_path / "drafts.duckdb")
    write_demo_annotations([stored_task(drafts_store, loc) for loc in locales],
                           tmp_path / "returned")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])

    def settings(localisation) -> Settings:
        return Settings(database=str(tmp_path / "demo.duckdb"), data=DataConfig(kind="built"),
                        construction=construction.model_copy(update={
                            "localisation": localisation}),
                        models_file=str(models), models=["copy-source-baseline"],
                        metrics=MetricConfig(bleu_tokenize="13a"))

    run_pipeline(settings(construction.localisation), say=lambda _: None)
    tasks = {loc: stored_task(Store(tmp_path / "demo.duckdb"), loc).task_id for loc in locales}
    said: list[str] = []
    changed = construction.localisation.model_copy(update={"max_new_tokens": 99})
    result = run_pipeline(settings(changed), say=said.append)
    kept = [line.strip() for line in said if "kept its drafts" in line]
    assert [line.split(":")[0] for line in kept] == locales
    assert all(f"(task {tasks[line.split(':')[0]]})" in line for line in kept)
    assert "the tool page" in kept[0] and "were made from them" in kept[0]
    assert sorted(r["locale"] for r in result.build.table1) == locales
    assert {loc: stored_task(Store(tmp_path / "demo.duckdb"), loc).task_id
            for loc in locales} == tasks


@NEEDS_CHROMIUM
def test_the_tool_page_flags_a_copied_draft_in_chromium(tmp_path, browser):
    """In Chromium: the item whose Hindi side is the English line is marked flagged, says why,
    and the "flagged drafts" filter shows it (and only it)."""
    from cultivar_assets.construction.annotation.postedit_tool import build_postedit_tool

    drafts = demo_drafts(HINDI)
    drafts[3] = replace(drafts[3], source_draft=drafts[3].english_draft)
    assert [bool(d.checks) for d in drafts].count(True) == 1
    build_postedit_tool(drafts, tmp_path / "tool")
    with serve(tmp_path) as url:
        page = ToolPage(browser, f"{url}/tool/index.html")
        item = page.page.locator(f"#item-{drafts[3].instance_id}")
        assert "flagged" in (item.get_attribute("class") or "")
        assert ("Flagged draft: the Hindi side is not in the Devanagari script; the Hindi side "
                "is the English sentence.") in " ".join(
                    item.locator("[data-role=checks]").inner_text().split())
        page.page.select_option("#show", "flagged")
        assert page.page.locator("article.item:visible").count() == 1
        assert page.page.inner_text("#shown") == "1 of 12 items shown"
        page.close()
