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
with any problem (checks 1-3 are those of every tool file, ``site/tool_files.py``):

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
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from cultivar_assets.construction.annotation_task import (
    Action,
    AnnotationTask,
    classify_action,
)
from cultivar_assets.construction.drafts import Draft
from cultivar_assets.construction.text_edits import Mode, count_edits
from cultivar_assets.files import file_sha256
from cultivar_assets.site.tool_files import (
    Problem,
    ProblemCollector,
    ToolFileError,
    check_header,
    check_schema,
    decode_json,
    file_problem,
    parse_timestamp,
)

__all__ = ["FILE_SUFFIX", "FORMAT", "SCHEMA_VERSION", "Annotation", "AnnotationFile",
           "AnnotationFileError", "Problem", "annotation_schema", "find_annotation_file",
           "parse_annotation_file", "read_annotation_document", "read_annotation_file"]

FORMAT = "cultivar-annotation"
SCHEMA_VERSION = 1
FILE_SUFFIX = ".annotations.json"  # the tool downloads <task_id>.annotations.json


@cache
def annotation_schema() -> dict[str, Any]:
    """The JSON Schema of annotation files (version :data:`SCHEMA_VERSION`)."""
    text = resources.files("cultivar_assets.construction").joinpath(
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


def _check_schema(document: Any, check: ProblemCollector) -> None:
    check_header(document, check, FORMAT, SCHEMA_VERSION, "a Cultivar annotation file")
    check_schema(document, annotation_schema(), check)


def _check_task(header: dict[str, Any], task: AnnotationTask, check: ProblemCollector) -> None:
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
    check = ProblemCollector(name, AnnotationFileError)
    document = decode_json(data, check)
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
            confirmed=item["confirmed"], updated_at=parse_timestamp(item["updated_at"]),
            confirmed_at=parse_timestamp(item["confirmed_at"]), source_mode=task.source_mode)
        for item in sorted(document["items"], key=lambda i: i["instance_id"])
    )
    return AnnotationFile(
        path=name, sha256=None, task_id=header["task_id"], locale=header["locale"],
        drafts_hash=header["drafts_hash"], annotator=header["annotator"],
        tool_version=header["tool_version"], schema_version=document["schema_version"],
        saved_at=parse_timestamp(document["saved_at"]), annotations=annotations)


def read_annotation_file(
    path: str | Path,
    task: AnnotationTask,
    *,
    benchmark_originals: Mapping[int, tuple[str, str]] | None = None,
    allow_unconfirmed: bool = False,
) -> AnnotationFile:
    """Read and validate the annotation file at ``path`` (see :func:`parse_annotation_file`)."""
    path = Path(path)
    if problem := file_problem(path):
        raise AnnotationFileError([Problem(str(path), None, "(file)", problem)])
    parsed = parse_annotation_file(path.read_bytes(), task, name=str(path),
                                   benchmark_originals=benchmark_originals,
                                   allow_unconfirmed=allow_unconfirmed)
    return replace(parsed, sha256=file_sha256(path))


def read_annotation_document(path: str | Path) -> dict[str, Any]:
    """The file's JSON after checks 1-3 (UTF-8, complete JSON, format and version, the schema),
    before it is compared with a task: to learn which locale and task a handed-in file is for.
    Any problem raises :class:`AnnotationFileError` as :func:`read_annotation_file` would."""
    path = Path(path)
    if problem := file_problem(path):
        raise AnnotationFileError([Problem(str(path), None, "(file)", problem)])
    check = ProblemCollector(str(path), AnnotationFileError)
    document = decode_json(path.read_bytes(), check)
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
