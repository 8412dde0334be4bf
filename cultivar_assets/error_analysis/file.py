"""The error-annotation file (what the error-annotation tool downloads) and its validation.

Its structure is the JSON Schema ``error_annotation.schema.json`` in this folder
(:data:`SCHEMA_VERSION`): ``format``, ``schema_version``, ``saved_at``, ``demo`` (optional; true
only for the toolkit's bundled demo files); ``task`` (``task_id``, ``locale``, ``n_items``,
``n_instances``, ``translations_hash``, ``error_types`` in order, ``tool_version``,
``annotator``); one item per translation (``key``, ``model_id``, ``locale``, ``instance_id``,
``hypothesis_sha256``, ``errors``: codes, each at most once, ``note``, ``done``, timestamps).
:func:`read_error_file` reports *every* problem in one :class:`ErrorFileError` (file, item,
field) and returns nothing from a file with any: 1. UTF-8, complete JSON, this reader's format and
version, the schema (as every tool file, ``site/tool_files.py``); 2. a task of the sample: its
locale's task id, ``n_items``, ``n_instances`` and ``error_types`` (else the wrong file), except
that a file whose items annotate other models than the task's systems raises
:class:`OtherSystemsError` (a sample of an earlier leaderboard: the ingest leaves it out with a
notice); 3. the task's keys, each once, each item's model, locale and instance its key's, every
item done (unless ``allow_unfinished``) with ``done_at``; 4. ``hypothesis_sha256`` equal to the
stored translation's, else refused naming the items, except in a file marked ``demo``, whose
judgments of changed translations are kept as ``translation_matches = false`` (counted in Table
5's ``n_translation_changed``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from cultivar_assets.error_analysis.sample import ErrorItem, ErrorTask
from cultivar_assets.error_analysis.types import CODES
from cultivar_assets.files import file_sha256
from cultivar_assets.site.tool_files import (
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

FORMAT = "cultivar-error-annotation"
SCHEMA_VERSION = 1
FILE_SUFFIX = ".errors.json"  # the tool downloads <task_id>.errors.json


class ErrorFileError(ToolFileError):
    """An error-annotation file cannot be used; ``problems`` lists everything found wrong."""


class OtherSystemsError(ValueError):
    """An error-annotation file annotates other systems (models) than the sample's task of its
    locale: a file of an earlier sample, made before models were added to or removed from the
    leaderboard. Not a bad file: the ingest leaves it out with this one-line notice."""

    def __init__(self, name: str, locale: str, file_models: Sequence[str],
                 task_models: Sequence[str]) -> None:
        self.name, self.locale = name, locale
        self.file_models, self.task_models = tuple(file_models), tuple(task_models)
        super().__init__(
            f"{name}: left out: it annotates {', '.join(self.file_models)}; the sample's "
            f"{locale} task has {', '.join(self.task_models)} (every leaderboard model, or "
            "error_analysis.models)")


@cache
def error_schema() -> dict[str, Any]:
    """The JSON Schema of error-annotation files (version :data:`SCHEMA_VERSION`)."""
    text = resources.files("cultivar_assets.error_analysis").joinpath(
        "error_annotation.schema.json").read_text("utf-8")
    return json.loads(text)


KIND = ToolFileKind(FORMAT, SCHEMA_VERSION, "a Cultivar error-annotation file", error_schema,
                    ErrorFileError, item_id="key")


@dataclass(frozen=True)
class ErrorAnnotation:
    """One annotated translation."""

    key: str
    model_id: str
    system: str
    locale: str
    instance_id: int
    errors: tuple[str, ...]  # codes, in ERROR_TYPES order
    note: str
    done: bool
    hypothesis_sha256: str  # of the translation annotated
    translation_matches: bool  # it equals the stored translation (False only in demo files)
    updated_at: datetime | None
    done_at: datetime | None


@dataclass(frozen=True)
class ErrorFile:
    """A validated error-annotation file."""

    path: str
    sha256: str | None
    task_id: str
    locale: str
    annotator: str
    tool_version: str
    schema_version: int
    saved_at: datetime
    is_demo: bool
    annotations: tuple[ErrorAnnotation, ...]

    @property
    def n_translation_changed(self) -> int:
        return sum(not a.translation_matches for a in self.annotations)


def _check_task(header: dict, task: ErrorTask | None, tasks: Mapping[str, ErrorTask],
                check: ProblemCollector, file_models: Sequence[str]) -> ErrorTask:
    if task is None:
        known = ", ".join(sorted(tasks)) or "none"
        check.add("task.locale", f"the sample has no task for {header['locale']} (its tasks: "
                  f"{known}): the file is for a locale that is not in the configured sample")
        check.fail()
    if header["task_id"] != task.task_id and set(file_models) != set(task.models):
        raise OtherSystemsError(check.name, task.locale, sorted(file_models),
                                sorted(task.models))
    if header["task_id"] != task.task_id:
        check.add("task.task_id", f"the file is for task {header['task_id']}, not for this "
                  f"sample's {task.task_id}: it was made for another sample (models, instances, "
                  "seed) or another version of the data")
        check.fail()  # the wrong file: comparing its items says nothing more
    if header["n_items"] != len(task.items):
        check.add("task.n_items", f"is {header['n_items']}, the task has {len(task.items)}")
    if header["n_instances"] != len(task.instance_ids):
        check.add("task.n_instances", f"is {header['n_instances']}, the task has "
                  f"{len(task.instance_ids)}")
    if list(header["error_types"]) != list(CODES):
        check.add("task.error_types", f"are {header['error_types']}, this reader's are "
                  f"{list(CODES)}")
    return task


def _check_item(item: dict, expected: ErrorItem, check: ProblemCollector, demo: bool,
                allow_unfinished: bool) -> bool:
    """Problems of one item; returns whether its translation is the stored one."""
    key = expected.key
    for field, want in (("model_id", expected.model_id), ("locale", expected.locale),
                        ("instance_id", expected.instance_id)):
        if item[field] != want:
            check.add(field, f"is {item[field]!r}, but the key {key} says {want!r}", key)
    matches = item["hypothesis_sha256"] == expected.hypothesis_sha256
    if not matches and not demo:
        check.add("hypothesis_sha256", f"the stored translation of {expected.model_id} differs "
                  "from the one annotated (the model was re-run since the tool was built); "
                  "rebuild the tool and annotate this translation again", key)
    if not item["done"] and not allow_unfinished:
        check.add("done", "the instance is not marked done (tick 'Done' in the tool, then "
                  "download the file again)", key)
    if item["done"] and item["done_at"] is None:
        check.add("done_at", "a done item needs the time it was marked done", key)
    return matches


def parse_error_file(data: bytes, tasks: Mapping[str, ErrorTask], *, name: str,
                     allow_unfinished: bool = False) -> ErrorFile:
    """Validate the bytes of an error-annotation file against the sample's tasks (by locale);
    module docstring. ``allow_unfinished``: accept items not marked done (to inspect work in
    progress; the ingest never sets it)."""
    document = parse_tool_document(data, name, KIND)
    check = ProblemCollector(name, ErrorFileError)
    header = document["task"]
    file_models = {item["model_id"] for item in document["items"]}
    task = _check_task(header, tasks.get(header["locale"]), tasks, check, sorted(file_models))
    demo = bool(document.get("demo", False))

    expected = task.by_key()
    matches = {item["key"]: _check_item(item, expected[item["key"]], check, demo,
                                        allow_unfinished)
               for item in check_item_ids(document["items"], list(expected), check,
                                          field="key", noun=("a translation", "translations"),
                                          task_id=task.task_id, list_at_most=10)}
    check.fail()

    items = {item["key"]: item for item in document["items"]}
    annotations = tuple(
        ErrorAnnotation(
            key=e.key, model_id=e.model_id, system=e.system, locale=e.locale,
            instance_id=e.instance_id,
            errors=tuple(c for c in CODES if c in items[e.key]["errors"]),
            note=items[e.key]["note"], done=items[e.key]["done"],
            hypothesis_sha256=items[e.key]["hypothesis_sha256"],
            translation_matches=matches[e.key],
            updated_at=parse_timestamp(items[e.key]["updated_at"]),
            done_at=parse_timestamp(items[e.key]["done_at"]))
        for e in task.items)
    return ErrorFile(path=name, sha256=None, task_id=task.task_id, locale=task.locale,
                     annotator=header["annotator"], tool_version=header["tool_version"],
                     schema_version=document["schema_version"],
                     saved_at=parse_timestamp(document["saved_at"]), is_demo=demo,
                     annotations=annotations)


def read_error_file(path: str | Path, tasks: Mapping[str, ErrorTask], *,
                    allow_unfinished: bool = False) -> ErrorFile:
    """Read and validate the file at ``path`` (see :func:`parse_error_file`)."""
    path = Path(path)
    parsed = parse_error_file(read_tool_bytes(path, KIND), tasks, name=str(path),
                              allow_unfinished=allow_unfinished)
    return replace(parsed, sha256=file_sha256(path))


def find_error_files(folder: str | Path) -> list[Path]:
    """The returned files in ``folder``: every ``*.errors.json``, sorted by name. One of those
    names that is not a regular file (a directory, a dangling link) is an
    :class:`ErrorFileError`: it would otherwise be left out of the analysis without a word."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"error-annotation folder {folder} does not exist")
    found = sorted(folder.glob(f"*{FILE_SUFFIX}"))
    problems = [Problem(str(p), None, "(file)", f"{problem}: each *{FILE_SUFFIX} here is read "
                        "as an error-annotation file; move or rename it")
                for p in found if (problem := file_problem(p))]
    if problems:
        raise ErrorFileError(problems)
    return found
