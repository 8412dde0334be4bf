"""The annotation file (what the post-editing tool downloads) and its validation against a task.

Its structure is the JSON Schema ``annotation.schema.json`` in this folder (:data:`SCHEMA_VERSION`):
``format``, ``schema_version``, ``saved_at``; ``task`` (``task_id``, ``locale``, ``drafts_hash``,
``n_items``, ``source_mode``, ``tool_version``, ``annotator``); one item per instance (``original``,
``draft`` with its hashes and flag, ``final``, ``action``: ``kept`` / ``edited`` / ``reverted``,
``confirmed``, timestamps). :func:`read_annotation_file` reports *every* problem in one
:class:`AnnotationFileError` (file, instance, field) and returns nothing from a file with any.
In order (0-3 as for every tool file, ``site/tool_files.py``): 0. at most
:attr:`IngestLimits.max_file_bytes`, looked up before reading; 1. UTF-8 (a BOM allowed), complete
JSON; 2. this reader's ``format`` and ``schema_version``; 2a. every string storable
(:func:`check_strings`): no lone surrogate, no C0 control character but tab and line feed inside
an item's six texts (ours), at most :attr:`IngestLimits.max_text_chars` characters; 3. the schema
(``3.0`` is no integer); 4. the task: ``task_id`` is ``<locale>-<drafts_hash[:12]>``, and
``task_id``, ``locale``, ``drafts_hash``, ``n_items``, ``source_mode`` are the task's (else: the
wrong file, not compared item by item); 5. the items: the task's ids, each once; the task's
locale, original pair (and the source benchmark's, when given) and draft; no blank final text;
``action`` agreeing with the texts (``task.classify_action``); every item confirmed (unless
``allow_unconfirmed``), with ``confirmed_at``. Only then are the edits counted, once per text.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from cultivar_assets.construction.annotation.task import (
    Action,
    AnnotationTask,
    classify_action,
    starting_pair,
)
from cultivar_assets.construction.annotation.text_edits import Mode, count_edits
from cultivar_assets.construction.ingest_limits import (
    DEFAULT_MAX_FILE_MB,
    DEFAULT_MAX_TEXT_CHARS,
    IngestLimits,
)
from cultivar_assets.construction.localisation.drafts import Draft
from cultivar_assets.site.tool_files import (
    ByteLimit,
    Problem,
    ProblemCollector,
    ToolFileError,
    ToolFileKind,
    check_item_ids,
    file_problem,
    parse_timestamp,
    parse_tool_document,
    read_tool_bytes,
)

__all__ = ["DEFAULT_MAX_FILE_MB", "DEFAULT_MAX_TEXT_CHARS", "FILE_SUFFIX", "FORMAT",
           "SCHEMA_VERSION", "Annotation", "AnnotationDocument", "AnnotationFile",
           "AnnotationFileError", "IngestLimits", "Problem", "annotation_schema",
           "check_annotation_document", "check_strings", "find_annotation_file",
           "load_annotation_document", "locale_annotation_files", "parse_annotation_file",
           "read_annotation_document", "read_annotation_file"]

FORMAT = "cultivar-annotation"
SCHEMA_VERSION = 1
FILE_SUFFIX = ".annotations.json"  # the tool downloads <task_id>.annotations.json

@cache
def annotation_schema() -> dict[str, Any]:
    """The JSON Schema of annotation files (version :data:`SCHEMA_VERSION`)."""
    text = resources.files("cultivar_assets.construction.annotation").joinpath(
        "annotation.schema.json").read_text("utf-8")
    return json.loads(text)


class AnnotationFileError(ToolFileError):
    """An annotation file cannot be used; ``problems`` lists everything found wrong."""

    def __init__(self, problems: list[Problem], note: str | None = None) -> None:
        super().__init__(problems)
        message = str(self)
        if len({p.file for p in self.problems}) > 1:
            message = message.replace("nothing was read from this file",
                                      "nothing was read from these files", 1)
        self.args = (message + (f"\n{note}" if note else ""),)


KIND = ToolFileKind(FORMAT, SCHEMA_VERSION, "a Cultivar annotation file", annotation_schema,
                    AnnotationFileError)


@dataclass(frozen=True)
class Annotation:
    """One instance as the annotator finalised it, with the draft it was made against.

    ``source_changed`` / ``english_changed``: the final text differs from the starting text
    (the paraphrase; the original for a flagged draft). ``source_edits`` / ``english_edits``:
    edits from the starting text to the final text (``text_edits.count_edits``; the source side in
    ``source_mode``, English in word mode), counted once, when the file is read
    (:func:`annotation`).
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
    source_edits: int
    english_edits: int

    @property
    def _from_original(self) -> bool:  # the rule of task.starting_pair
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


def annotation(item: dict[str, Any], draft: Draft, source_mode: Mode) -> Annotation:
    """The :class:`Annotation` of a validated item, its edits counted once per text (none for a
    text left as it started)."""
    start_source, start_english = starting_pair(draft)
    source, english = item["final"]["source"], item["final"]["english"]
    return Annotation(
        locale=draft.locale, instance_id=draft.instance_id,
        source_original=item["original"]["source"],
        english_original=item["original"]["english"],
        source_draft=item["draft"]["source"], english_draft=item["draft"]["english"],
        flagged=item["draft"]["flagged"], draft_hash=item["draft"]["draft_hash"],
        prompt_hash=item["draft"]["prompt_hash"], source_final=source, english_final=english,
        action=item["action"], confirmed=item["confirmed"],
        updated_at=parse_timestamp(item["updated_at"]),
        confirmed_at=parse_timestamp(item["confirmed_at"]), source_mode=source_mode,
        source_edits=(count_edits(start_source, source, source_mode)
                      if source != start_source else 0),
        english_edits=(count_edits(start_english, english, "word")
                       if english != start_english else 0))


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


TEXT_FIELDS = frozenset((part, side) for part in ("original", "draft", "final")
                        for side in ("source", "english"))
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f]")
_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f]")  # tab and line feed allowed


def _string_problem(value: str, in_text: bool, limits: IngestLimits) -> str | None:
    if len(value) > limits.max_text_chars:
        return (f"is {len(value):,} characters long, more than the limit of "
                f"{limits.max_text_chars:,} characters per text (setting "
                "construction.annotation.max_text_chars)")
    surrogate = _SURROGATE.search(value)
    if surrogate:
        return (f"holds a lone surrogate, U+{ord(surrogate.group()):04X}, at character "
                f"{surrogate.start() + 1} (an escape such as \\ud800 without its pair): it is "
                "not a Unicode character and cannot be stored")
    control = (_CONTROL_IN_TEXT if in_text else _CONTROL).search(value)
    if control:
        allowed = " (only tab and line feed are allowed in a text)" if in_text else ""
        return (f"holds the control character U+{ord(control.group()):04X} at character "
                f"{control.start() + 1}{allowed}")
    return None


def check_strings(document: dict[str, Any], check: ProblemCollector,
                  limits: IngestLimits) -> None:
    """Every string of the document (keys too) is storable text within the limits (module
    docstring, check 2a); fail when one is not. Each problem names the item by its instance id
    when it has one."""
    items = document.get("items") if isinstance(document.get("items"), list) else []

    def walk(value: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(value, str):
            in_text = (len(path) == 4 and path[0] == "items"
                       and (path[2], path[3]) in TEXT_FIELDS)
            problem = _string_problem(value, in_text, limits)
            if problem:
                instance = None
                if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
                    iid = items[path[1]].get("instance_id") if isinstance(
                        items[path[1]], dict) else None
                    instance = iid if isinstance(iid, int) and not isinstance(iid, bool) else None
                    field = f"items[{path[1]}]" + "".join(f".{p}" for p in path[2:])
                else:
                    field = ".".join(map(str, path)) or "(top level)"
                check.add(field, problem, instance)
        elif isinstance(value, dict):
            for key, inner in value.items():
                problem = _string_problem(key, False, limits)
                if problem:
                    check.add(".".join(map(str, path)) or "(top level)",
                              f"a key {problem}")
                walk(inner, (*path, key))
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                walk(inner, (*path, index))

    walk(document, ())
    check.fail()


def _check_header_agrees(header: dict[str, Any], task: AnnotationTask,
                         check: ProblemCollector) -> None:
    """The header's task id is ``<locale>-<drafts_hash[:12]>`` of its own locale and hash."""
    prefix, _, digits = header["task_id"].rpartition("-")
    redo = ("the header contradicts itself (a task id is <locale>-<the first 12 digits of "
            "drafts_hash>): it was edited by hand or damaged; download the file from the tool "
            f"again (this ingest expects task {task.task_id})")
    if prefix != header["locale"]:
        check.add("task.task_id", f"is {header['task_id']}, a task of {prefix}, but "
                  f"task.locale is {header['locale']}: {redo}")
    if digits != header["drafts_hash"][:12]:
        check.add("task.task_id", f"ends in {digits}, but task.drafts_hash begins "
                  f"{header['drafts_hash'][:12]}: {redo}")
    check.fail()


def _check_task(header: dict[str, Any], task: AnnotationTask, check: ProblemCollector) -> None:
    _check_header_agrees(header, task, check)
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
    if header["n_items"] != len(task.drafts):
        check.add("task.n_items", f"is {header['n_items']}, the task has {len(task.drafts)}")
    if header["source_mode"] != task.source_mode:
        check.add("task.source_mode", f"is {header['source_mode']}, the task's is "
                  f"{task.source_mode}")


def _check_item(item: dict[str, Any], draft: Draft, check: ProblemCollector,
                allow_unconfirmed: bool, benchmark: tuple[str, str] | None) -> None:
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


@dataclass(frozen=True)
class AnnotationDocument:
    """An annotation file's JSON after checks 0-3 (module docstring), before it is compared with
    a task: ``name`` (its path), ``sha256`` of its bytes, ``document``."""

    name: str
    sha256: str
    document: dict[str, Any]

    @property
    def locale(self) -> str:
        return self.document["task"]["locale"]


def _file_too_large(size: int, limits: IngestLimits) -> str:
    return (f"is {size:,} bytes ({size / 1e6:.1f} MB), more than the limit of "
            f"{limits.max_file_bytes:,} bytes for an annotation file (setting "
            "construction.annotation.max_file_mb); nothing of it was read")


def _byte_limit(limits: IngestLimits) -> ByteLimit:
    return ByteLimit(limits.max_file_bytes, lambda size: _file_too_large(size, limits))


def _document_from_bytes(data: bytes, name: str, limits: IngestLimits) -> AnnotationDocument:
    document = parse_tool_document(
        data, name, KIND, limit=_byte_limit(limits),
        before_schema=lambda document, check: check_strings(document, check, limits))
    return AnnotationDocument(name, hashlib.sha256(data).hexdigest(), document)


def load_annotation_document(path: str | Path,
                             limits: IngestLimits | None = None) -> AnnotationDocument:
    """The file's JSON after checks 0-3 (size, UTF-8, complete JSON, format and version, the
    strings, the schema), before it is compared with a task: to learn which locale and task a
    handed-in file is for. Any problem raises :class:`AnnotationFileError`, as
    :func:`read_annotation_file` would. The file is read once, and no more of it than the size
    limit allows."""
    limits = limits or IngestLimits()
    data = read_tool_bytes(path, KIND, _byte_limit(limits))
    return _document_from_bytes(data, str(Path(path)), limits)


def read_annotation_document(path: str | Path,
                             limits: IngestLimits | None = None) -> dict[str, Any]:
    """The JSON of :func:`load_annotation_document` (checks 0-3), as a dict."""
    return load_annotation_document(path, limits).document


def check_annotation_document(
    read: AnnotationDocument,
    task: AnnotationTask,
    *,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    allow_unconfirmed: bool = False,
) -> AnnotationFile:
    """Checks 4-5 of a document that passed checks 0-3, then the records, each text's edits
    counted once (module docstring; arguments as :func:`parse_annotation_file`)."""
    check = ProblemCollector(read.name, AnnotationFileError)
    document = read.document
    header = document["task"]
    _check_task(header, task, check)

    drafts = task.by_id()
    for item in check_item_ids(document["items"], sorted(drafts), check, field="instance_id",
                               noun=("an instance", "instances"), task_id=task.task_id):
        iid = item["instance_id"]
        benchmark = (benchmark_originals.get(iid) if benchmark_originals is not None
                     else None)
        if benchmark_originals is not None and benchmark is None:
            check.add("instance_id", "is not in the source benchmark", iid)
        _check_item(item, drafts[iid], check, allow_unconfirmed, benchmark)
    check.fail()

    items = sorted(document["items"], key=lambda i: i["instance_id"])
    # The C++ diff releases the GIL: the items' edits are counted on every CPU (ours; each
    # count is independent of the others, so the result is the same in any order).
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        annotations = tuple(pool.map(
            lambda item: annotation(item, drafts[item["instance_id"]], task.source_mode), items))
    return AnnotationFile(
        path=read.name, sha256=read.sha256, task_id=header["task_id"], locale=header["locale"],
        drafts_hash=header["drafts_hash"], annotator=header["annotator"],
        tool_version=header["tool_version"], schema_version=document["schema_version"],
        saved_at=parse_timestamp(document["saved_at"]), annotations=annotations)


def parse_annotation_file(
    data: bytes,
    task: AnnotationTask,
    *,
    name: str,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    allow_unconfirmed: bool = False,
    limits: IngestLimits | None = None,
) -> AnnotationFile:
    """Validate the bytes of an annotation file against ``task`` (module docstring).

    ``benchmark_originals``: instance id -> (source, English) of the source benchmark; when given,
    every item's original pair must equal it. ``allow_unconfirmed``: accept unconfirmed items
    (to inspect work in progress; the ingest never sets it). ``limits``: the file's size and
    each string's length (default :class:`IngestLimits`).
    """
    read = _document_from_bytes(data, name, limits or IngestLimits())
    return check_annotation_document(read, task, benchmark_originals=benchmark_originals,
                                     allow_unconfirmed=allow_unconfirmed)


def read_annotation_file(
    path: str | Path,
    task: AnnotationTask,
    *,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    allow_unconfirmed: bool = False,
    limits: IngestLimits | None = None,
) -> AnnotationFile:
    """Read and validate the annotation file at ``path`` (see :func:`parse_annotation_file`)."""
    read = load_annotation_document(path, limits)
    return check_annotation_document(read, task, benchmark_originals=benchmark_originals,
                                     allow_unconfirmed=allow_unconfirmed)


def locale_annotation_files(folder: str | Path, locale: str) -> list[Path]:
    """The files of ``locale`` in ``folder``, sorted: ``<locale>-*.json`` (the tool's download
    name is ``<task_id>.annotations.json``, and a task id starts with ``<locale>-``); none when
    the folder does not exist."""
    folder = Path(folder)
    return sorted(p for p in folder.glob(f"{locale}-*.json") if p.is_file()) if (
        folder.is_dir()) else []


def find_annotation_file(folder: str | Path, locale: str) -> Path | None:
    """The returned file of ``locale`` in ``folder`` (:func:`locale_annotation_files`).

    None when there is none; more than one, or one of those names that is not a regular file (a
    directory, a dangling link), is an :class:`AnnotationFileError`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"annotation folder {folder} does not exist")
    odd = [Problem(str(p), None, "(file)", f"{problem}: each {locale}-*.json here is read as "
                   f"an annotation file of {locale}; move or rename it")
           for p in sorted(folder.glob(f"{locale}-*.json")) if (problem := file_problem(p))]
    if odd:
        raise AnnotationFileError(odd)
    found = locale_annotation_files(folder, locale)
    if len(found) > 1:
        raise AnnotationFileError([Problem(str(folder), None, "(folder)",
                                           f"{len(found)} files for {locale}: "
                                           f"{', '.join(p.name for p in found)}; keep one")])
    return found[0] if found else None
