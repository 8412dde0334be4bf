"""The error analysis of §5: the seeded sample, the file's validation, the ingest (one message
per bad file, nothing half-written) and Table 5 from the ingested files."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import duckdb
import pytest
from error_helpers import (
    SAMPLE_LOCALES,
    SAMPLE_MODELS,
    copy_store,
    error_document,
    evaluated_store,
    marks_for,
    sample_config,
    write_document,
)

from cultivar_assets.error_analysis.file import ErrorFileError, parse_error_file
from cultivar_assets.error_analysis.sample import (
    ErrorItem,
    ErrorTask,
    build_error_sample,
    text_sha256,
)
from cultivar_assets.error_analysis.store import (
    ErrorFiles,
    ErrorIngestError,
    ingest_error_files,
)
from cultivar_assets.error_analysis.table import read_table5
from cultivar_assets.error_analysis.tool import build_error_tools, highlights
from cultivar_assets.error_analysis.types import CODES, GENERAL, LOCALE_SPECIFIC


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return evaluated_store(tmp_path_factory.mktemp("error_analysis"))


@pytest.fixture(scope="module")
def sample(store):
    return build_error_sample(store, sample_config())


def parse(document, sample, name="file.errors.json", **kwargs):
    data = json.dumps(document).encode() if isinstance(document, dict) else document
    return parse_error_file(data, sample.by_locale(), name=name, **kwargs)


def problems(document, sample, **kwargs) -> list[str]:
    with pytest.raises(ErrorFileError) as caught:
        parse(document, sample, **kwargs)
    assert "nothing was read from this file" in str(caught.value)
    return [f"{p.field}: {p.message}" for p in caught.value.problems]


# ---- the sample ------------------------------------------------------------------------------

def test_the_nine_types_in_two_groups():
    assert CODES == ("NE", "PY", "IC", "NU", "MT", "OM", "AD", "UT", "RF")
    assert LOCALE_SPECIFIC == ("NE", "PY", "IC", "NU") and len(GENERAL) == 5


def test_the_sample_is_seeded_and_the_same_instances_for_every_model(store, sample):
    assert [t.locale for t in sample.tasks] == SAMPLE_LOCALES and sample.notes == ()
    again = build_error_sample(store, sample_config())
    assert [t.task_id for t in again.tasks] == [t.task_id for t in sample.tasks]
    assert [t.items for t in again.tasks] == [t.items for t in sample.tasks]
    other = build_error_sample(store, sample_config(seed="another seed"))
    assert [t.instance_ids for t in other.tasks] != [t.instance_ids for t in sample.tasks]
    for task in sample.tasks:
        assert len(task.instance_ids) == 3 and len(task.items) == 9
        assert task.task_id.startswith(f"{task.locale}-errors-")
        by_instance = Counter(i.instance_id for i in task.items)
        assert set(by_instance.values()) == {3}  # every model on every sampled instance
        assert sorted(task.models) == sorted(SAMPLE_MODELS)
        assert {i.system for i in task.items} == {"system 1", "system 2", "system 3"}
        assert all(i.hypothesis_sha256 == text_sha256(i.hypothesis) for i in task.items)
    # the Swiss locale lacks ids 3 and 7 (statistics_helpers): never sampled
    swiss = sample.by_locale()["deu_Latn_Switzerland"]
    assert not {3, 7} & set(swiss.instance_ids)
    everything = build_error_sample(store, sample_config(n_instances=None, models=None))
    assert len(everything.by_locale()["deu_Latn_Switzerland"].instance_ids) == 10
    assert len(everything.models) == 6


def test_what_the_sample_leaves_out_is_said(store):
    sample = build_error_sample(store, sample_config(
        locales=["cmn_Hans_China", "cmn_Hans_UK"], models=["drop-2", "no-such-model"]))
    assert [t.locale for t in sample.tasks] == ["cmn_Hans_China"]
    assert any("cmn_Hans_UK: not in the loaded data" in n for n in sample.notes)
    assert any("no-such-model is not on the leaderboard" in n for n in sample.notes)
    visible = build_error_sample(store, sample_config(blind=False))
    assert {i.system for i in visible.tasks[0].items} == set(SAMPLE_MODELS)


# ---- the file --------------------------------------------------------------------------------

def test_a_complete_file_is_read_with_its_marks(sample):
    task = sample.tasks[0]
    marks = marks_for(task)
    file = parse(error_document(task, marks), sample)
    assert (file.task_id, file.locale, file.annotator, file.is_demo) == (
        task.task_id, task.locale, "tester", False)
    assert {a.key: list(a.errors) for a in file.annotations} == marks
    assert all(a.translation_matches and a.done for a in file.annotations)


def test_the_wrong_file_is_refused_at_once(sample):
    other = error_document(sample.tasks[1])
    other["task"]["locale"] = sample.tasks[0].locale
    [problem] = problems(other, sample)
    assert problem.startswith("task.task_id: ") and "deu_Latn_Germany-errors-" in problem
    stranger = error_document(sample.tasks[0])
    stranger["task"]["locale"] = "jpn_Jpan_Japan"
    [problem] = problems(stranger, sample)
    assert "jpn_Jpan_Japan" in problem


def test_every_problem_of_a_file_is_reported(sample):
    task = sample.tasks[0]
    document = error_document(task)
    items = document["items"]
    items[0]["errors"] = ["NE", "NE"]  # a type twice (schema)
    items[1]["errors"] = ["XX"]  # an unknown type (schema)
    bad = problems(document, sample)
    assert any("items[0].errors" in p and "more than once" in p for p in bad)
    assert any("items[1].errors.0" in p and "must be one of" in p for p in bad)

    document = error_document(task)
    items = document["items"]
    items[2]["done"] = False
    items[3]["done_at"] = None
    items[4]["model_id"] = "drop-2"
    items.append(copy.deepcopy(items[5]))
    del items[6]
    items[0]["hypothesis_sha256"] = "f" * 64
    bad = problems(document, sample)
    assert sum("done: the instance is not marked done" in p for p in bad) == 1
    assert sum("done_at: a done item needs" in p for p in bad) == 1
    assert any(p.startswith("model_id: is 'drop-2'") for p in bad)
    assert any(p.startswith("key: occurs 2 times") for p in bad)
    assert any("1 of the task's translations are missing" in p for p in bad)
    assert any(p.startswith("hypothesis_sha256: the stored translation") for p in bad)
    assert parse(error_document(task) | {"items": [dict(i, done=False) for i in error_document(
        task)["items"]]}, sample, allow_unfinished=True).annotations


def test_a_demo_file_keeps_judgments_of_changed_translations_and_says_so(sample):
    task = sample.tasks[0]
    document = error_document(task, demo=True)
    document["items"][0]["hypothesis_sha256"] = "f" * 64
    file = parse(document, sample)
    assert file.is_demo and file.n_translation_changed == 1
    assert [a.translation_matches for a in file.annotations][:2] == [False, True]


@pytest.mark.parametrize("data, message", [
    (b"", "the file is empty"),
    (b"\xff\xfe{}", "is not UTF-8 text"),
    (b'{"format": "cultivar-error-annotation", "schema_version": 1, "task": {', "ends early"),
    (b'{"format": "cultivar-annotation", "schema_version": 1}', "not a Cultivar error-annotation"),
    (b'{"format": "cultivar-error-annotation", "schema_version": 2}', "schema version 1 only"),
])
def test_unreadable_files_get_one_clear_message(sample, data, message):
    [problem] = problems(data, sample)
    assert message in problem


# ---- ingest and Table 5 ----------------------------------------------------------------------

def test_ingest_writes_table5_from_the_files(store, sample, tmp_path):
    db = copy_store(store, tmp_path / "ingest.duckdb")
    folder = tmp_path / "returned"
    marks = {}
    for task in sample.tasks:
        marks.update(marks_for(task))
        write_document(folder, error_document(task))
    ingested = ingest_error_files(db, sample, sample_config(folder))
    assert [f.locale for f in ingested.files] == SAMPLE_LOCALES and ingested.left_out == []
    table5, correlations = read_table5(db)
    assert len(table5) == 9  # 3 models × 3 locales
    items = {i.key: i for t in sample.tasks for i in t.items}
    with duckdb.connect(str(db.path), read_only=True) as con:
        bleu = {(m, loc): b for m, loc, b in con.execute(
            "SELECT model_id, locale, cultivar_bleu FROM model_locale_deltas").fetchall()}
    for row in table5:
        mine = [marks[k] for k, i in items.items()
                if (i.model_id, i.locale) == (row["model_id"], row["locale"])]
        assert row["n_translations"] == len(mine) == 3
        for code in CODES:
            assert row[code.lower()] == sum(code in m for m in mine), (row, code)
        assert row["locale_specific_total"] == sum(row[c.lower()] for c in LOCALE_SPECIFIC)
        assert row["general_total"] == sum(row[c.lower()] for c in GENERAL)
        assert row["total"] == row["locale_specific_total"] + row["general_total"]
        assert row["bleu"] == bleu[row["model_id"], row["locale"]]
        assert (row["annotator"], row["is_demo"], row["n_translation_changed"]) == (
            "tester", False, 0)
    by_language = {r["language"]: r for r in correlations}
    assert (by_language["deu"]["n_including"], by_language["deu"]["n_excluding"]) == (6, 4)
    assert (by_language["cmn"]["n_including"], by_language["cmn"]["n_excluding"]) == (3, 2)
    assert by_language["cmn"]["r_excluding"] is None  # 2 cells: undefined
    assert by_language["deu"]["outlier_model"] == "copy-source-baseline"


def test_bad_files_are_reported_one_message_each_and_nothing_is_written(store, sample, tmp_path):
    db = copy_store(store, tmp_path / "bad.duckdb")
    good = tmp_path / "good"
    for task in sample.tasks:
        write_document(good, error_document(task))
    ingest_error_files(db, sample, sample_config(good))
    before = read_table5(db)

    bad = tmp_path / "bad"
    china, germany, swiss = sample.tasks
    write_document(bad, error_document(china))
    unfinished = error_document(germany)
    unfinished["items"][0]["done"] = False
    write_document(bad, unfinished)
    (bad / f"{swiss.task_id}.errors.json").write_text('{"format": "cultivar-error', "utf-8")
    with pytest.raises(ErrorIngestError) as caught:
        ingest_error_files(db, sample, sample_config(bad))
    message = str(caught.value)
    assert message.startswith("2 of 3 ")
    assert len(caught.value.errors) == 2
    assert germany.task_id in message and "not marked done" in message
    assert swiss.task_id in message and "ends early" in message
    assert china.task_id not in message
    assert read_table5(db) == before  # the previous analysis is kept

    twice = tmp_path / "twice"
    write_document(twice, error_document(china))
    write_document(twice, error_document(china), name="copy.errors.json")
    with pytest.raises(ErrorIngestError, match=r"copy\.errors\.json: \(folder\): "
                       r".*cmn_Hans_China\b.*cmn_Hans_China-errors-"):
        ingest_error_files(db, sample, sample_config(twice))


def test_files_of_other_systems_are_left_out_with_a_notice(store, sample, tmp_path):
    """Files made for a sample of other models (a model added to or removed from the
    leaderboard since) do not stop the ingest: each is left out with a one-line notice naming
    the file and both sets of models, and the files of the current tasks are ingested."""
    db = copy_store(store, tmp_path / "other.duckdb")
    folder = tmp_path / "returned"
    for task in sample.tasks:  # files of the three-model sample
        write_document(folder, error_document(task))
    fewer = build_error_sample(store, sample_config(models=SAMPLE_MODELS[:2]))
    china = fewer.by_locale()["cmn_Hans_China"]
    (folder / f"{sample.tasks[0].task_id}.errors.json").unlink()
    write_document(folder, error_document(china))  # China's file of the two-model sample

    ingested = ingest_error_files(db, fewer, sample_config(folder, models=SAMPLE_MODELS[:2]))
    assert [f.locale for f in ingested.files] == ["cmn_Hans_China"]
    assert len(ingested.left_out) == 2
    for notice, task in zip(ingested.left_out, sample.tasks[1:], strict=True):
        annotated, systems = (re.escape(", ".join(sorted(models)))
                              for models in (SAMPLE_MODELS, SAMPLE_MODELS[:2]))
        assert notice.startswith(f"{folder / (task.task_id + '.errors.json')}: ")
        assert re.search(rf"{annotated}\b.*{task.locale}\b.*{systems}\b", notice)
        assert "error_analysis.models" in notice and "\n" not in notice
    table5, _ = read_table5(db)
    assert {(r["model_id"], r["locale"]) for r in table5} == {
        (m, "cmn_Hans_China") for m in SAMPLE_MODELS[:2]}

    other_seed = build_error_sample(store, sample_config(seed="another seed"))
    wrong = tmp_path / "wrong"  # the same systems, another sample: still the wrong file
    write_document(wrong, error_document(other_seed.tasks[0]))
    with pytest.raises(ErrorIngestError, match=rf"{re.escape(str(wrong))}.*\bsample\b"):
        ingest_error_files(db, sample, sample_config(wrong))


def test_no_files_mean_an_empty_table5(store, sample, tmp_path):
    db = copy_store(store, tmp_path / "empty.duckdb")
    assert ingest_error_files(db, sample, sample_config()) == ErrorFiles([], [])
    assert read_table5(db) == ([], [])


def test_the_tool_folder_escapes_every_text(store, tmp_path):
    sample = build_error_sample(store, sample_config())
    pages = build_error_tools(sample, tmp_path / "tools")
    assert sorted(pages) == SAMPLE_LOCALES
    task = sample.tasks[0]
    html = pages[task.locale].read_text("utf-8")
    assert task.task_id in html and "Content-Security-Policy" in html
    for name in ("tool-common.js", "tool.css", "errors.js", "errors.css"):
        assert (pages[task.locale].parent / "static" / name).is_file()
    manifest = json.loads((pages[task.locale].parent / ".cultivar-build.json").read_text())
    assert manifest["kind"] == "error-annotation-tool" and manifest["n_items"] == 9
    index = (tmp_path / "tools" / "index.html").read_text("utf-8")
    assert all(t.task_id in index for t in sample.tasks)


def test_a_deeply_nested_error_file_is_refused(sample):
    deep = b'{"format": "cultivar-error-annotation", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    assert problems(deep, sample) == [
        "(file): nests arrays or objects more than 32 levels deep: it is not a file the tool wrote"]


def test_the_tools_highlights_diff_the_source_in_the_mode_of_the_locales_script():
    """The source of a Chinese locale is diffed per character (a Latin word in it too), the
    English texts per word (textdiff.py, mode by the locale registry's script)."""
    hypothesis = "I use an iPad."
    item = ErrorItem(key="cmn_Hans_China_1:m", model_id="m", system="m",
                     locale="cmn_Hans_China", instance_id=1, source="我用iPad。",
                     reference="I use an iPad.", original_reference="I use an iPhone.",
                     hypothesis=hypothesis, hypothesis_sha256=text_sha256(hypothesis),
                     original_source="我用iPhone。")
    task = ErrorTask(task_id="t", locale="cmn_Hans_China", seed="s", blind=False,
                     models=("m",), instance_ids=(1,), items=(item,))
    group = highlights(task)[1]
    assert [s.text for s in group["source"] if s.changed] == ["ad"]
    assert [s.text for s in group["reference"] if s.changed] == ["iPad"]
    assert [s.text for s in group["original_reference"] if s.changed] == ["iPhone"]
    assert not any(s.changed for s in group["hypotheses"][item.key])
