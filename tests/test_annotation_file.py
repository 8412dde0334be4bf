"""The annotation file: its JSON Schema, the validator's checks (every bad-file kind gives one
clear message) and the ingest into the store (a bad file changes nothing; a corrected file
replaces the locale's rows)."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from annotation_helpers import annotation_document, demo_drafts

from cultivar_assets.construction.annotation.file import (
    AnnotationFileError,
    IngestLimits,
    annotation_schema,
    find_annotation_file,
    read_annotation_file,
)
from cultivar_assets.construction.annotation.store import ingest_annotation_file
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.store.database import Store


@pytest.fixture(scope="module")
def task() -> AnnotationTask:
    return AnnotationTask.from_drafts(demo_drafts(flagged=True))


@pytest.fixture
def good(task) -> dict:
    first = task.drafts[0]
    return annotation_document(task, {
        0: (first.source_draft.replace("Jonas Becker", "Thomas Müller"),
            first.english_draft.replace("Jonas Becker", "Thomas Müller")),
        1: (task.drafts[1].source_original, task.drafts[1].english_original),
    })


def write(tmp_path: Path, document: dict | bytes, name: str = "file.json") -> Path:
    path = tmp_path / name
    path.write_bytes(document if isinstance(document, bytes) else
                     json.dumps(document, ensure_ascii=False).encode("utf-8"))
    return path


def problems_of(path: Path, task: AnnotationTask, **kwargs) -> AnnotationFileError:
    with pytest.raises(AnnotationFileError) as caught:
        read_annotation_file(path, task, **kwargs)
    return caught.value


def test_schema_is_valid_and_accepts_the_good_file(good):
    jsonschema.Draft202012Validator.check_schema(annotation_schema())
    jsonschema.Draft202012Validator(annotation_schema()).validate(good)
    assert annotation_schema()["properties"]["schema_version"]["const"] == 1


def test_a_good_file_gives_typed_records(tmp_path, task, good):
    file = read_annotation_file(write(tmp_path, good), task)
    assert (file.task_id, file.locale, file.annotator) == (task.task_id, "deu_Latn_Germany",
                                                           "annotator-1")
    assert len(file.sha256) == 64 and file.schema_version == 1
    by_id = {a.instance_id: a for a in file.annotations}
    assert [a.instance_id for a in file.annotations] == list(range(12))
    assert by_id[0].action == "edited" and by_id[0].source_changed and by_id[0].english_changed
    assert (by_id[0].source_edits, by_id[0].english_edits) == (1, 1)
    assert by_id[1].action == "reverted"
    assert by_id[2].flagged and by_id[2].action == "reverted"  # flagged, left as the original
    assert by_id[3].action == "kept" and not by_id[3].source_changed
    assert by_id[0].confirmed_at.isoformat() == "2026-12-01T10:00:00"


def mutate(good: dict, change) -> dict:
    document = copy.deepcopy(good)
    change(document)
    return document


def other_locale_document() -> dict:
    return annotation_document(AnnotationTask.from_drafts(demo_drafts("spa_Latn_Spain")))


def other_drafts_document() -> dict:
    drafts = demo_drafts(flagged=True)
    drafts[5] = replace(drafts[5], english_draft=drafts[5].english_draft + " Really.")
    return annotation_document(AnnotationTask.from_drafts(drafts))


def set_item(index: int, path: str, value):
    def change(document):
        target = document["items"][index]
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


def duplicate_first(document):
    document["items"].append(copy.deepcopy(document["items"][0]))


def drop_final(document):
    del document["items"][4]["final"]["english"]


# (kind, the file (a document or its bytes), what the message must say, instance it names)
BAD_FILES = [
    ("wrong schema version", lambda g: mutate(g, lambda d: d.update(schema_version=2)),
     "schema_version: is 2; this reader reads schema version 1 only", None),
    ("not an annotation file", lambda g: mutate(g, lambda d: d.update(format="something")),
     "not a Cultivar annotation file", None),
    ("unknown id", lambda g: mutate(g, set_item(3, "instance_id", 999)),
     "instance 999, instance_id: is not an instance of task", 999),
    ("missing id", lambda g: mutate(g, lambda d: d["items"].pop(7)),
     "items: 1 of the task's instances are missing: 7", None),
    ("duplicate ids", lambda g: mutate(g, duplicate_first),
     "instance 0, instance_id: occurs 2 times", 0),
    ("missing final text", lambda g: mutate(g, drop_final),
     "instance 4, items[4].final: 'english' is a required property", 4),
    ("empty final text", lambda g: mutate(g, set_item(5, "final.source", "")),
     "instance 5, items[5].final.source: is empty", 5),
    ("blank final text", lambda g: mutate(g, set_item(5, "final.english", " \n ")),
     "instance 5, final.english: holds only whitespace", 5),
    ("unconfirmed items", lambda g: mutate(g, set_item(6, "confirmed", False)),
     "instance 6, confirmed: the item is not confirmed", 6),
    ("another task's file", lambda g: other_locale_document(),
     "it is another locale's file", None),
    ("other drafts of the locale", lambda g: other_drafts_document(),
     "made against other drafts of deu_Latn_Germany", None),
    ("non-UTF-8", lambda g: json.dumps(g, ensure_ascii=False).encode("latin-1",
                                                                      errors="replace"),
     "is not UTF-8 text (byte 0x", None),
    ("truncated JSON", lambda g: json.dumps(g).encode()[:-40],
     "the JSON ends early", None),
    ("damaged JSON", lambda g: json.dumps(g).encode().replace(b'"items"', b'items', 1),
     "is not valid JSON: Expecting property name", None),
    ("empty file", lambda g: b"", "the file is empty", None),
    ("not an object", lambda g: b"[1, 2]", "must hold a JSON object", None),
    ("wrong locale in an item", lambda g: mutate(g, set_item(8, "locale", "deu_Latn_Austria")),
     "instance 8, locale: is deu_Latn_Austria, not the task's deu_Latn_Germany", 8),
    ("wrong locale in the header", lambda g: mutate(
        g, lambda d: d["task"].update(locale="deu_Latn_Switzerland")),
     "a task of deu_Latn_Germany, but task.locale is deu_Latn_Switzerland: the header "
     "contradicts itself", None),
    ("original differs", lambda g: mutate(g, set_item(9, "original.source", "Anders.")),
     "instance 9, original.source: differs from the task's original text", 9),
    ("draft differs", lambda g: mutate(g, set_item(10, "draft.english", "Another draft.")),
     "instance 10, draft.english: differs from the task's draft", 10),
    ("action disagrees with the texts", lambda g: mutate(g, set_item(0, "action", "kept")),
     "instance 0, action: is 'kept', but the final texts make it 'edited'", 0),
    ("wrong type", lambda g: mutate(g, set_item(11, "confirmed", "yes")),
     "instance 11, items[11].confirmed: must be boolean, not a string", 11),
    ("bad timestamp", lambda g: mutate(g, set_item(11, "confirmed_at", "yesterday")),
     "is not an ISO 8601 timestamp", 11),
    ("no annotator label", lambda g: mutate(g, lambda d: d["task"].update(annotator="")),
     "task.annotator: is empty", None),
    # files that validation refuses up front, not at a later step
    ("a lone surrogate (a JSON escape)", lambda g: json.dumps(mutate(
        g, set_item(3, "final.source", "Ein Satz \ud800 mit Rest."))).encode(),
     "instance 3, items[3].final.source: holds a lone surrogate, U+D800, at character 10", 3),
    ("NUL in a final text", lambda g: mutate(g, set_item(4, "final.english", "In\x00Berlin.")),
     "instance 4, items[4].final.english: holds the control character U+0000 at character 3 "
     "(only tab and line feed are allowed in a text)", 4),
    ("a control character in the annotator label", lambda g: mutate(
        g, lambda d: d["task"].update(annotator="ann\ta")),
     "task.annotator: holds the control character U+0009 at character 4", None),
    ("a text over the per-text limit", lambda g: mutate(
        g, set_item(5, "final.source", "Berlin " * 300)),
     "instance 5, items[5].final.source: is 2,100 characters long, more than the limit of "
     "1,000 characters per text (setting construction.annotation.max_text_chars)", 5),
    ("a header locale other than its task id's", lambda g: mutate(
        g, lambda d: d["task"].update(task_id=d["task"]["task_id"].replace(
            "deu_Latn_Germany", "deu_Latn_Switzerland"))),
     "a task of deu_Latn_Switzerland, but task.locale is deu_Latn_Germany: the header "
     "contradicts itself", None),
    ("a task id whose digits are not its drafts hash's", lambda g: mutate(
        g, lambda d: d["task"].update(task_id="deu_Latn_Germany-" + "0" * 12)),
     "task.task_id: ends in 000000000000, but task.drafts_hash begins", None),
    ("an id written as a float", lambda g: mutate(g, set_item(3, "instance_id", 3.0)),
     "items[3].instance_id: must be an integer, not the number 3.0 (write 3)", None),
    ("a schema version written as a float", lambda g: mutate(
        g, lambda d: d.update(schema_version=1.0)),
     "schema_version: is 1.0; this reader reads schema version 1 only", None),
]


@pytest.mark.parametrize(("kind", "make", "expected", "instance"), BAD_FILES,
                         ids=[b[0] for b in BAD_FILES])
def test_each_bad_file_kind_gives_one_clear_message(tmp_path, task, good, kind, make, expected,
                                                    instance):
    path = write(tmp_path, make(good))
    error = problems_of(path, task)
    message = str(error)
    assert message.startswith(f"{path}: ")
    assert "nothing was read from this file" in message
    assert expected in message, message
    assert any(p.instance == instance for p in error.problems)
    assert all(p.file == str(path) for p in error.problems)


def test_every_problem_is_listed_in_one_message(tmp_path, task, good):
    document = mutate(good, set_item(3, "final.source", "  "))
    document = mutate(document, set_item(6, "confirmed", False))
    document = mutate(document, set_item(9, "original.english", "Changed."))
    error = problems_of(write(tmp_path, document), task)
    assert [(p.instance, p.field) for p in error.problems] == [
        (3, "final.source"), (6, "confirmed"), (9, "original.english")]
    assert "3 problems" in str(error)


def test_originals_are_checked_against_the_source_benchmark(tmp_path, task, good):
    benchmark = {d.instance_id: (d.source_original, d.english_original) for d in task.drafts}
    path = write(tmp_path, good)
    assert read_annotation_file(path, task, benchmark_originals=benchmark)
    benchmark[4] = (benchmark[4][0], "An English sentence the benchmark now has.")
    del benchmark[11]
    error = problems_of(path, task, benchmark_originals=benchmark)
    assert [(p.instance, p.field, p.message) for p in error.problems] == [
        (4, "original.english", "differs from the source benchmark's text"),
        (11, "instance_id", "is not in the source benchmark")]


def test_unconfirmed_items_can_be_inspected_but_not_ingested(tmp_path, task):
    path = write(tmp_path, annotation_document(task, confirmed=False))
    assert len(read_annotation_file(path, task, allow_unconfirmed=True).annotations) == 12
    assert len(problems_of(path, task).problems) == 12


def test_a_bad_file_changes_nothing_and_a_corrected_one_replaces_the_rows(tmp_path, task, good):
    store = Store(tmp_path / "annotations.duckdb")
    first = write(tmp_path, annotation_document(task), "deu_Latn_Germany-first.json")
    ingest_annotation_file(store, first, task)
    before = store.query("locale_annotations", locale=task.locale)
    assert [r["action"] for r in before].count("kept") == 11  # the flagged one is reverted

    for kind, make, _, _ in BAD_FILES:
        bad = write(tmp_path, make(good), "bad.json")
        with pytest.raises(AnnotationFileError):
            ingest_annotation_file(store, bad, task)
        assert store.query("locale_annotations", locale=task.locale) == before, kind

    # over the file-size limit: a sparse file, refused by its size before a byte is read
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(20_000_001)
    with pytest.raises(AnnotationFileError, match="is 20,000,001 bytes"):
        ingest_annotation_file(store, huge, task)
    assert store.query("locale_annotations", locale=task.locale) == before
    # over configured limits
    small = IngestLimits(max_file_bytes=1_000, max_text_chars=10)
    with pytest.raises(AnnotationFileError, match=r"bad\.json.*\b1,000 bytes\b"):
        ingest_annotation_file(store, write(tmp_path, good, "bad.json"), task, limits=small)
    assert store.query("locale_annotations", locale=task.locale) == before

    corrected = write(tmp_path, good, "deu_Latn_Germany-second.json")
    ingest_annotation_file(store, corrected, task)
    after = store.query("locale_annotations", locale=task.locale)
    assert len(after) == 12
    assert {r["instance_id"]: r["action"] for r in after}[0] == "edited"
    summary = store.query("annotation_summary")
    assert [(r["locale"], r["kept_llm_paraphrase"], r["reverted_to_flores"], r["edited_both"])
            for r in summary] == [("deu_Latn_Germany", 9, 2, 1)]
    files = store.query("locale_annotations", locale=task.locale)[0]
    assert files["annotator"] == "annotator-1" and files["task_id"] == task.task_id


def test_find_annotation_file_by_locale(tmp_path, task, good):
    assert find_annotation_file(tmp_path, task.locale) is None
    write(tmp_path, good, f"{task.task_id}.annotations.json")
    write(tmp_path, good, "deu_Latn_Switzerland-abc.annotations.json")
    assert find_annotation_file(tmp_path, task.locale).name == f"{task.task_id}.annotations.json"
    write(tmp_path, good, "deu_Latn_Germany-copy.json")
    with pytest.raises(AnnotationFileError, match=r"\b2\b.*deu_Latn_Germany\b"):
        find_annotation_file(tmp_path, task.locale)
    with pytest.raises(FileNotFoundError):
        find_annotation_file(tmp_path / "nowhere", task.locale)


def test_task_needs_one_locale_and_unique_ids():
    drafts = demo_drafts()
    with pytest.raises(ValueError, match=r"\[.*'spa_Latn_Spain'\]"):
        AnnotationTask.from_drafts(drafts + demo_drafts("spa_Latn_Spain"))
    with pytest.raises(ValueError, match=rf"^{drafts[0].locale}: .*\[{drafts[0].instance_id}\]"):
        AnnotationTask.from_drafts(drafts + drafts[:1])
    with pytest.raises(ValueError, match=r"\bdraft\b"):
        AnnotationTask.from_drafts([])


@pytest.mark.parametrize("depth", [40, 100_000])
def test_a_deeply_nested_file_is_refused_in_one_line(tmp_path, task, depth):
    """It stopped with "maximum recursion depth exceeded" (the parser at 100,000 levels, the schema
    check at a few hundred)."""
    path = write(tmp_path, b'{"items": ' + b"[" * depth + b"]" * depth + b"}")
    error = problems_of(path, task)
    assert [p.message for p in error.problems] == [
        "nests arrays or objects more than 32 levels deep: it is not a file the tool wrote"]


def test_a_directory_given_as_the_file_is_named_as_one(tmp_path, task):
    with pytest.raises(AnnotationFileError, match=rf"{re.escape(str(tmp_path))}.*directory"):
        read_annotation_file(tmp_path, task)  # it said "no such file"


def test_the_size_limit_is_checked_before_the_file_is_read(tmp_path, task, good, monkeypatch):
    path = write(tmp_path, good)
    size = path.stat().st_size
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self) or real_open(
        self, *a, **k))
    error = problems_of(path, task, limits=IngestLimits(max_file_bytes=size - 1))
    assert [(p.field, p.message) for p in error.problems] == [("(file)", (
        f"is {size:,} bytes ({size / 1e6:.1f} MB), more than the limit of {size - 1:,} bytes "
        "for an annotation file (setting construction.annotation.max_file_mb); nothing of it "
        "was read"))]
    assert opened == []
    assert read_annotation_file(path, task, limits=IngestLimits(max_file_bytes=size))


def test_the_per_text_limit_counts_characters_and_names_each_text(tmp_path, task, good):
    longest = max(len(item[part][side] or "") for item in good["items"]
                  for part in ("original", "draft", "final") for side in ("source", "english"))
    path = write(tmp_path, good)
    assert read_annotation_file(path, task, limits=IngestLimits(max_text_chars=longest))
    error = problems_of(path, task, limits=IngestLimits(max_text_chars=longest - 1))
    assert error.problems and all("more than the limit of" in p.message for p in error.problems)
    assert all(p.field.startswith("items[") and p.instance is not None for p in error.problems)


def test_tab_and_line_feed_are_text_in_the_six_texts_only(tmp_path, task, good):
    first = task.drafts[0]
    document = mutate(good, set_item(0, "final.source", first.source_draft + "\n\tEnde."))
    file = read_annotation_file(write(tmp_path, document), task)
    assert file.annotations[0].source_final.endswith("\n\tEnde.")
    assert file.annotations[0].source_edits == 1  # the whitespace is no token
    carriage = mutate(good, set_item(0, "final.source", first.source_draft + "\r"))
    assert "U+000D" in str(problems_of(write(tmp_path, carriage), task))
    tabbed = mutate(good, set_item(0, "draft.prompt_hash", "\t" + first.prompt_hash))
    said = str(problems_of(write(tmp_path, tabbed), task))
    assert "instance 0, items[0].draft.prompt_hash: " in said and "U+0009" in said


def test_the_limits_come_from_the_settings():
    from cultivar_assets.construction.config import AnnotationConfig

    assert AnnotationConfig().limits() == IngestLimits(max_file_bytes=20_000_000,
                                                       max_text_chars=1_000)
    assert AnnotationConfig(max_file_mb=0.5, max_text_chars=300).limits() == IngestLimits(
        max_file_bytes=500_000, max_text_chars=300)
    with pytest.raises(ValueError):
        AnnotationConfig(max_text_chars=0)
