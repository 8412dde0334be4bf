"""The annotation file (what the post-editing tool downloads) and its validation against a task.

The file's structure is the JSON Schema ``annotation.schema.json`` in this folder (schema version
:data:`SCHEMA_VERSION`); its fields:

- ``format`` (``"cultivar-annotation"``), ``schema_version`` (1), ``saved_at`` (ISO 8601);
- ``task``: ``task_id``, ``locale``, ``drafts_hash``, ``n_items``, ``source_mode`` (``word`` /
  ``char``), ``tool_version``, ``annotator`` (a label the annotator chose);
- ``items``, one per instance: ``instance_id``, ``locale``, ``original`` {``source``,
  ``english``}, ``draft`` {``source``, ``english`` (null when flagged), ``flagged``,
  ``draft_hash``, ``prompt_hash``}, ``final`` {``source``, ``english``}, ``action`` (``kept`` /
  ``edited`` / ``reverted``), ``confirmed``, ``updated_at``, ``confirmed_at`` (ISO 8601 or null).

:func:`read_annotation_file` checks, and reports *every* problem it finds in one
:class:`AnnotationFileError` (file, instance, field, what is wrong), returning nothing from a file
with any problem:

1. the bytes are UTF-8 (a leading byte-order mark is allowed) and complete, valid JSON;
2. ``format`` and ``schema_version`` are this reader's (other versions are not read further);
3. the structure follows the schema (all schema errors are listed);
4. the file belongs to the task: ``task_id``, ``locale``, ``drafts_hash``, ``n_items`` and
   ``source_mode`` equal the task's (a file for another task or other drafts is not compared item
   by item: it is simply the wrong file);
5. the items: no duplicate ids, no id the task lacks, every task id present; each item's locale
   is the task's; its original pair equals the task's (and the source benchmark's, when given);
   its draft equals the task's draft (hash, texts, flag, prompt hash); the final source and English
   are not blank; ``action`` agrees with the texts (``annotation_task.classify_action``); every
   item is confirmed (unless ``allow_unconfirmed``) and a confirmed item has ``confirmed_at``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from cultivar_assets.construction.annotation_task import (
    Action,
    AnnotationTask,
    classify_action,
)
from cultivar_assets.construction.drafts import Draft
from cultivar_assets.construction.text_edits import Mode, count_edits
from cultivar_assets.files import file_sha256

FORMAT = "cultivar-annotation"
SCHEMA_VERSION = 1
FILE_SUFFIX = ".annotations.json"  # the tool downloads <task_id>.annotations.json


@cache
def annotation_schema() -> dict[str, Any]:
    """The JSON Schema of annotation files (version :data:`SCHEMA_VERSION`)."""
    text = resources.files("cultivar_assets.construction").joinpath(
        "annotation.schema.json").read_text("utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an annotation file."""

    file: str
    instance: int | None  # instance id, when the problem is in one item
    field: str  # e.g. "final.source", "task.task_id", "(file)"
    message: str

    def __str__(self) -> str:
        where = f"instance {self.instance}, " if self.instance is not None else ""
        return f"{self.file}: {where}{self.field}: {self.message}"


class AnnotationFileError(ValueError):
    """An annotation file cannot be used; ``problems`` lists everything found wrong."""

    def __init__(self, problems: list[Problem], note: str | None = None) -> None:
        self.problems = list(problems)
        files = sorted({p.file for p in self.problems})
        which = "this file" if len(files) == 1 else "these files"
        head = (f"{', '.join(files)}: {len(self.problems)} problem"
                f"{'s' if len(self.problems) != 1 else ''}; nothing was read from {which}")
        tail = f"\n{note}" if note else ""
        super().__init__(head + "\n" + "\n".join(f"  - {p}" for p in self.problems) + tail)


@dataclass(frozen=True)
class Annotation:
    """One instance as the annotator finalised it, with the draft it was made against.

    ``source_changed`` / ``english_changed``: the final text differs from the starting text
    (the paraphrase; the original for a flagged draft). ``source_edits`` / ``english_edits``:
    edits from the starting text to the final text (``text_edits.count_edits``; the source side in
    ``source_mode``, English in word mode).
    """

    locale: str
    instance_id: int
    source_original: str
    english_original: str
    source_draft: str | None
    english_draft: str | None
    flagged: bool
    draft_hash: str
    prompt_hash: str
    source_final: str
    english_final: str
    action: Action
    confirmed: bool
    updated_at: datetime | None  # UTC, naive
    confirmed_at: datetime | None
    source_mode: Mode

    @property
    def _from_original(self) -> bool:  # the rule of annotation_task.starting_pair
        return self.flagged or self.source_draft is None or self.english_draft is None

    @property
    def source_start(self) -> str:
        return self.source_original if self._from_original else str(self.source_draft)

    @property
    def english_start(self) -> str:
        return self.english_original if self._from_original else str(self.english_draft)

    @property
    def source_changed(self) -> bool:
        return self.source_final != self.source_start

    @property
    def english_changed(self) -> bool:
        return self.english_final != self.english_start

    @property
    def source_edits(self) -> int:
        return count_edits(self.source_start, self.source_final, self.source_mode)

    @property
    def english_edits(self) -> int:
        return count_edits(self.english_start, self.english_final, "word")


@dataclass(frozen=True)
class AnnotationFile:
    """A validated annotation file: its header and one :class:`Annotation` per instance."""

    path: str
    sha256: str | None
    task_id: str
    locale: str
    drafts_hash: str
    annotator: str
    tool_version: str
    schema_version: int
    saved_at: datetime
    annotations: tuple[Annotation, ...]


def _timestamp(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value).astimezone(UTC).replace(tzinfo=None)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), "?")


def _schema_message(error: jsonschema.ValidationError) -> str:
    value, kind, expected = error.instance, error.validator, error.validator_value
    if kind == "minLength" and value == "":
        return "is empty"
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"must be {' or '.join(names)}, not {_json_type(value)}"
    if kind == "const":
        return f"must be {json.dumps(expected)}, not {json.dumps(value, ensure_ascii=False)}"
    if kind == "enum":
        return (f"must be one of {', '.join(json.dumps(v) for v in expected)}, not "
                f"{json.dumps(value, ensure_ascii=False)}")
    if kind == "pattern":
        return f"{json.dumps(value, ensure_ascii=False)[:80]} does not have the expected form"
    if kind == "anyOf" and isinstance(value, str):
        return f"{json.dumps(value)[:80]} is not an ISO 8601 timestamp with a time zone, or null"
    return error.message


class _Checker:
    """Collects the problems of one file."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.problems: list[Problem] = []

    def add(self, field: str, message: str, instance: int | None = None) -> None:
        self.problems.append(Problem(self.name, instance, field, message))

    def fail(self) -> None:
        if self.problems:
            raise AnnotationFileError(self.problems)


def _decode(data: bytes, check: _Checker) -> Any:
    if not data.strip():
        check.add("(file)", "the file is empty")
        check.fail()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        check.add("(file)", f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
                  f"{error.start} cannot be decoded); save it as UTF-8, as the tool's "
                  "Download JSON does")
        check.fail()
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        stripped = text.rstrip()
        if (error.pos >= len(stripped) or error.msg.startswith("Unterminated string")
                or not stripped.endswith(("}", "]"))):
            check.add("(file)", f"the JSON ends early (line {error.lineno}, column "
                      f"{error.colno}): the file is truncated; download it from the tool again")
        else:
            check.add("(file)", f"is not valid JSON: {error.msg} at line {error.lineno}, "
                      f"column {error.colno}")
        check.fail()
    return None  # not reached


def _check_schema(document: Any, check: _Checker) -> None:
    if not isinstance(document, dict):
        check.add("(file)", f"must hold a JSON object, not {_json_type(document)}")
        check.fail()
    if document.get("format") != FORMAT:
        check.add("format", f"is {json.dumps(document.get('format'))}, not \"{FORMAT}\": this is "
                  "not a Cultivar annotation file")
        check.fail()
    if document.get("schema_version") != SCHEMA_VERSION:
        check.add("schema_version", f"is {json.dumps(document.get('schema_version'))}; this "
                  f"reader reads schema version {SCHEMA_VERSION} only")
        check.fail()
    validator = jsonschema.Draft202012Validator(annotation_schema())
    items = document.get("items") if isinstance(document.get("items"), list) else []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.path))):
        path = list(error.path)
        instance = None
        if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
            item = items[path[1]] if path[1] < len(items) else None
            if isinstance(item, dict) and isinstance(item.get("instance_id"), int):
                instance = item["instance_id"]
            field = f"items[{path[1]}]" + "".join(f".{p}" for p in path[2:])
        else:
            field = ".".join(str(p) for p in path) or "(top level)"
        check.add(field, _schema_message(error), instance)
    check.fail()


def _check_task(header: dict[str, Any], task: AnnotationTask, check: _Checker) -> None:
    if header["task_id"] != task.task_id or header["drafts_hash"] != task.drafts_hash:
        if header["locale"] != task.locale:
            check.add("task.task_id", f"the file is for task {header['task_id']} (locale "
                      f"{header['locale']}), not for this task {task.task_id} (locale "
                      f"{task.locale}): it is another locale's file")
        else:
            check.add("task.drafts_hash", f"the file was made against other drafts of "
                      f"{task.locale} (task {header['task_id']}, drafts hash "
                      f"{header['drafts_hash'][:12]}…), not this task's {task.task_id}: the "
                      "drafts changed after the tool was built")
        check.fail()  # the wrong file: comparing its items with this task says nothing more
    if header["locale"] != task.locale:
        check.add("task.locale", f"is {header['locale']}, not {task.locale}")
    if header["n_items"] != len(task.drafts):
        check.add("task.n_items", f"is {header['n_items']}, the task has {len(task.drafts)}")
    if header["source_mode"] != task.source_mode:
        check.add("task.source_mode", f"is {header['source_mode']}, the task's is "
                  f"{task.source_mode}")


def _check_item(item: dict[str, Any], draft: Draft, check: _Checker, allow_unconfirmed: bool,
                benchmark: tuple[str, str] | None) -> None:
    iid = draft.instance_id
    if item["locale"] != draft.locale:
        check.add("locale", f"is {item['locale']}, not the task's {draft.locale}", iid)
    for side, expected in (("source", draft.source_original),
                           ("english", draft.english_original)):
        if item["original"][side] != expected:
            check.add(f"original.{side}", "differs from the task's original text", iid)
    if benchmark is not None:
        for side, expected in zip(("source", "english"), benchmark, strict=True):
            if item["original"][side] != expected:
                check.add(f"original.{side}", "differs from the source benchmark's text", iid)
    file_draft = item["draft"]
    if file_draft["draft_hash"] != draft.draft_hash:
        check.add("draft.draft_hash", "differs from the task's draft (made against another "
                  "version of this draft)", iid)
    for key, expected in (("source", draft.source_draft), ("english", draft.english_draft),
                          ("flagged", draft.flagged), ("prompt_hash", draft.prompt_hash)):
        if file_draft[key] != expected:
            check.add(f"draft.{key}", "differs from the task's draft", iid)
    final = item["final"]
    blank = [side for side in ("source", "english") if not final[side].strip()]
    for side in blank:
        check.add(f"final.{side}", "holds only whitespace", iid)
    expected_action = classify_action(draft, final["source"], final["english"])
    if not blank and item["action"] != expected_action:
        check.add("action", f"is {item['action']!r}, but the final texts make it "
                  f"{expected_action!r}", iid)
    if not item["confirmed"] and not allow_unconfirmed:
        check.add("confirmed", "the item is not confirmed (tick 'Confirm final version' in the "
                  "tool, then download the file again)", iid)
    if item["confirmed"] and item["confirmed_at"] is None:
        check.add("confirmed_at", "a confirmed item needs the time it was confirmed", iid)


def parse_annotation_file(
    data: bytes,
    task: AnnotationTask,
    *,
    name: str,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    allow_unconfirmed: bool = False,
) -> AnnotationFile:
    """Validate the bytes of an annotation file against ``task`` (module docstring).

    ``benchmark_originals``: instance id -> (source, English) of the source benchmark; when given,
    every item's original pair must equal it. ``allow_unconfirmed``: accept unconfirmed items
    (to inspect work in progress; the ingest never sets it).
    """
    check = _Checker(name)
    document = _decode(data, check)
    _check_schema(document, check)
    header = document["task"]
    _check_task(header, task, check)

    drafts = task.by_id()
    counts = Counter(item["instance_id"] for item in document["items"])
    for iid, count in sorted(counts.items()):
        if count > 1:
            check.add("instance_id", f"occurs {count} times", iid)
        if iid not in drafts:
            check.add("instance_id", f"is not an instance of task {task.task_id}", iid)
    missing = sorted(set(drafts) - set(counts))
    if missing:
        check.add("items", f"{len(missing)} of the task's instances are missing: "
                  f"{', '.join(map(str, missing))}")
    for item in document["items"]:
        iid = item["instance_id"]
        if iid in drafts and counts[iid] == 1:
            benchmark = (benchmark_originals.get(iid) if benchmark_originals is not None
                         else None)
            if benchmark_originals is not None and benchmark is None:
                check.add("instance_id", "is not in the source benchmark", iid)
            _check_item(item, drafts[iid], check, allow_unconfirmed, benchmark)
    check.fail()

    annotations = tuple(
        Annotation(
            locale=task.locale, instance_id=item["instance_id"],
            source_original=item["original"]["source"],
            english_original=item["original"]["english"],
            source_draft=item["draft"]["source"], english_draft=item["draft"]["english"],
            flagged=item["draft"]["flagged"], draft_hash=item["draft"]["draft_hash"],
            prompt_hash=item["draft"]["prompt_hash"], source_final=item["final"]["source"],
            english_final=item["final"]["english"], action=item["action"],
            confirmed=item["confirmed"], updated_at=_timestamp(item["updated_at"]),
            confirmed_at=_timestamp(item["confirmed_at"]), source_mode=task.source_mode)
        for item in sorted(document["items"], key=lambda i: i["instance_id"])
    )
    return AnnotationFile(
        path=name, sha256=None, task_id=header["task_id"], locale=header["locale"],
        drafts_hash=header["drafts_hash"], annotator=header["annotator"],
        tool_version=header["tool_version"], schema_version=document["schema_version"],
        saved_at=_timestamp(document["saved_at"]), annotations=annotations)


def read_annotation_file(
    path: str | Path,
    task: AnnotationTask,
    *,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    allow_unconfirmed: bool = False,
) -> AnnotationFile:
    """Read and validate the annotation file at ``path`` (see :func:`parse_annotation_file`)."""
    path = Path(path)
    if not path.is_file():
        raise AnnotationFileError([Problem(str(path), None, "(file)", "no such file")])
    parsed = parse_annotation_file(path.read_bytes(), task, name=str(path),
                                   benchmark_originals=benchmark_originals,
                                   allow_unconfirmed=allow_unconfirmed)
    return replace(parsed, sha256=file_sha256(path))


def read_annotation_document(path: str | Path) -> dict[str, Any]:
    """The file's JSON after checks 1-3 (UTF-8, complete JSON, format and version, the schema),
    before it is compared with a task: to learn which locale and task a handed-in file is for.
    Any problem raises :class:`AnnotationFileError` as :func:`read_annotation_file` would."""
    path = Path(path)
    if not path.is_file():
        raise AnnotationFileError([Problem(str(path), None, "(file)", "no such file")])
    check = _Checker(str(path))
    document = _decode(path.read_bytes(), check)
    _check_schema(document, check)
    return document


def find_annotation_file(folder: str | Path, locale: str) -> Path | None:
    """The returned file of ``locale`` in ``folder``: ``<locale>-*.json`` (the tool's download
    name is ``<task_id>.annotations.json``, and a task id starts with ``<locale>-``).

    None when there is none; more than one is an :class:`AnnotationFileError` (keep one).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"annotation folder {folder} does not exist")
    found = sorted(p for p in folder.glob(f"{locale}-*.json") if p.is_file())
    if len(found) > 1:
        raise AnnotationFileError([Problem(str(folder), None, "(folder)",
                                           f"{len(found)} files for {locale}: "
                                           f"{', '.join(p.name for p in found)}; keep one")])
    return found[0] if found else None
