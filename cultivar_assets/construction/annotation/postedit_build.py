"""Post-editing as steps of building Cultivar (paper §2.3): tool pages from the stored drafts, and
the returned annotation files validated and ingested.

- :func:`build_tools`: one tool page per locale from the drafts in DuckDB
  (``<tools_dir>/<locale>/index.html``).
- :func:`ingest_folder_locale` (the ``annotations`` asset): one locale's file in the configured
  folder (``<locale>-*.json``), validated against its current drafts and the source benchmark's
  originals (from the stored selection), then ingested.
- :func:`ingest_files` (``cultivar build ingest FILE…``): each file's locale from its header;
  every file validated before anything is written, then all ingested in one transaction; a file
  with any problem changes nothing, and neither do the others.

A pair *kept* unchanged although its draft fails a check (``drafts.draft_checks``) is ingested and
named (:func:`kept_flagged`, :func:`kept_flagged_warning`) in the asset's log and metadata and by
``cultivar build ingest``. In the shipped demo folder, a file made against other drafts is a
:class:`DemoDriftError` saying which drafts changed and how to regenerate the demo files
(``scripts/regenerate_demo_annotations.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cultivar_assets.config_files import read_input_file
from cultivar_assets.construction.annotation.demo import GENERATED_WITH, describe, environment
from cultivar_assets.construction.annotation.file import (
    AnnotationFile,
    AnnotationFileError,
    IngestLimits,
    Problem,
    check_annotation_document,
    find_annotation_file,
    load_annotation_document,
    read_annotation_file,
)
from cultivar_assets.construction.annotation.postedit_tool import build_postedit_tool
from cultivar_assets.construction.annotation.store import write_annotation_files
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.construction.config import demo_annotations_dir
from cultivar_assets.construction.localisation.store import read_drafts
from cultivar_assets.construction.selection.store import read_selected_sources
from cultivar_assets.data.locales import get_locale
from cultivar_assets.site.tool_files import MAX_TOOL_FILE_BYTES
from cultivar_assets.store.database import Store

REGENERATE = "python scripts/regenerate_demo_annotations.py"


class DemoDriftError(RuntimeError):
    """The shipped demo annotation files do not match the drafts the demo localiser produced."""


@dataclass(frozen=True)
class ToolPage:
    locale: str
    page: Path
    task: AnnotationTask

    @property
    def n_flagged(self) -> int:
        """Items the page marks flagged: unreadable answers and drafts failing a check."""
        return sum(d.flagged or bool(d.checks) for d in self.task.drafts)


def stored_task(store: Store, locale: str) -> AnnotationTask:
    """The post-editing task of ``locale``'s stored drafts."""
    return AnnotationTask.from_drafts(read_drafts(store, locale))


def build_tools(store: Store, tools_dir: Path, locales: Sequence[str]) -> list[ToolPage]:
    """Write the tool page of each locale's current drafts."""
    pages = []
    for locale in locales:
        task = stored_task(store, locale)
        pages.append(ToolPage(locale, build_postedit_tool(task, Path(tools_dir) / locale), task))
    return pages


def benchmark_originals(store: Store, locale: str) -> dict[int, tuple[str, str]]:
    """Instance id -> (source, English) of the source benchmark, from the stored selection."""
    language = get_locale(locale).source_language
    return {iid: (item["sources"][language], item["english"])
            for iid, item in read_selected_sources(store).items()
            if language in item["sources"]}


def is_demo_folder(folder: Path) -> bool:
    return Path(folder).resolve() == demo_annotations_dir().resolve()


def _changed_drafts(path: Path, task: AnnotationTask) -> list[int] | None:
    """Ids whose draft hash in the file differs from the task's (None: the file is unreadable)."""
    try:
        document = json.loads(read_input_file(path, "annotation file", MAX_TOOL_FILE_BYTES
                                              ).decode("utf-8-sig"))
        items = {item["instance_id"]: item["draft"]["draft_hash"] for item in document["items"]}
    except (ValueError, KeyError, TypeError):
        return None
    current = task.by_id()
    return sorted(set(items) ^ set(current) | {
        iid for iid, h in items.items() if iid in current and current[iid].draft_hash != h})


def _drift_error(path: Path, task: AnnotationTask, error: AnnotationFileError
                 ) -> DemoDriftError | None:
    if not any(p.field in ("task.drafts_hash", "draft.draft_hash") for p in error.problems):
        return None
    changed = _changed_drafts(path, task) or []
    listing = ", ".join(map(str, changed[:12])) + (" ..." if len(changed) > 12 else "")
    note = path.parent / GENERATED_WITH
    where = ""
    if note.is_file():
        try:
            where = (f" The shipped drafts came from {describe(json.loads(note.read_text()))}; "
                     f"this run used {describe(environment())}.")
        except ValueError:
            where = ""
    return DemoDriftError(
        f"the shipped demo annotation file {path.name} was made against other drafts of "
        f"{task.locale} than the ones the demo localiser produced now ({len(changed)} of "
        f"{len(task.drafts)} drafts differ: ids {listing}). The demo localiser's output changed "
        "(its engine, model, decoding or prompt, see construction/config.py "
        f"demo_localisation, or the libraries or processor its greedy decoding ran on).{where} "
        f"Regenerate the demo files from the current drafts: {REGENERATE} (then review and "
        "commit cultivar_assets/data/demo/annotations/), or restore the localiser's settings.")


def ingest_folder_locale(store: Store, folder: Path, locale: str,
                         limits: IngestLimits | None = None) -> AnnotationFile:
    """Validate and ingest the returned file of ``locale`` in ``folder`` (module docstring);
    ``limits``: the file's size and its strings' lengths (``AnnotationConfig.limits()``)."""
    folder = Path(folder)
    path = find_annotation_file(folder, locale) if folder.is_dir() else None
    if path is None:
        absent = "" if folder.is_dir() else " (the folder does not exist yet)"
        raise AnnotationFileError([Problem(str(folder), None, "(folder)", (
            f"no annotation file for {locale}{absent}: expected {locale}-<12 hex digits>"
            ".annotations.json, the name the tool's Download JSON gives it; post-edit with the "
            "tool page (asset postedit_tools, or cultivar build tools), then put the file here, "
            "or hand it in with: cultivar build ingest FILE"))])
    task = stored_task(store, locale)
    try:
        file = read_annotation_file(path, task, limits=limits,
                                    benchmark_originals=benchmark_originals(store, locale))
    except AnnotationFileError as error:
        drift = _drift_error(path, task, error) if is_demo_folder(folder) else None
        if drift is not None:
            raise drift from None
        raise
    write_annotation_files(store, [file])
    return file


def _locales_with_drafts(store: Store) -> list[str]:
    return [row["locale"] for row in store.query("localisation_runs")]


def validate_files(store: Store, paths: Sequence[Path],
                   limits: IngestLimits | None = None) -> list[AnnotationFile]:
    """Validate every file against its locale's current drafts (each file read once); one error
    lists every file's problems, and nothing is returned when any file has one."""
    problems: list[Problem] = []
    files: list[AnnotationFile] = []
    seen: dict[str, str] = {}
    known = _locales_with_drafts(store) if store.path.exists() else []
    for path in map(Path, paths):
        try:
            read = load_annotation_document(path, limits)
            locale = read.locale
            if locale not in known:
                raise AnnotationFileError([Problem(str(path), None, "task.locale", (
                    f"is {locale}, a locale without drafts in {store.path} (drafts for: "
                    f"{', '.join(known) or 'none'}); is it the right file, or the right "
                    "database?"))])
            if locale in seen:
                raise AnnotationFileError([Problem(str(path), None, "task.locale", (
                    f"{locale} again: {seen[locale]} is for the same locale; hand in one file "
                    "per locale"))])
            file = check_annotation_document(
                read, stored_task(store, locale),
                benchmark_originals=benchmark_originals(store, locale))
            seen[locale] = str(path)
            files.append(file)
        except AnnotationFileError as error:
            problems += error.problems
    if problems:
        bad = len({p.file for p in problems})
        note = (f"No file was ingested ({len(paths)} given, {bad} with problems): fix them and "
                "hand them in again." if len(paths) > 1 else None)
        raise AnnotationFileError(problems, note)
    return files


def kept_flagged(store: Store, locale: str) -> dict[int, tuple[str, ...]]:
    """The ingested instances of ``locale`` whose final pair is the draft kept unchanged (action
    ``kept``) although the draft fails a check: instance id -> the codes of those checks."""
    drafts = {d.instance_id: d for d in read_drafts(store, locale)}
    found = {}
    for row in store.query("locale_annotations", locale=locale):
        draft = drafts.get(row["instance_id"])
        if (row["action"] == "kept" and draft is not None
                and draft.draft_hash == row["draft_hash"] and draft.checks):
            found[row["instance_id"]] = draft.checks
    return found


def kept_flagged_warning(locale: str, kept: dict[int, tuple[str, ...]]) -> str | None:
    """The warning line for :func:`kept_flagged` (None when there is nothing to say)."""
    if not kept:
        return None
    listing = ", ".join(f"{locale}_{iid} ({', '.join(codes)})"
                        for iid, codes in sorted(kept.items())[:12])
    more = f" and {len(kept) - 12} more" if len(kept) > 12 else ""
    return (f"{locale}: {len(kept)} pair(s) kept unchanged although their draft was flagged: "
            f"{listing}{more}. The annotator confirmed them as they are; if that was not meant, "
            "fix them in the tool page and hand the file in again")


def ingest_files(store: Store, paths: Sequence[Path],
                 limits: IngestLimits | None = None) -> list[AnnotationFile]:
    """Validate every file, then ingest them all in one transaction (module docstring)."""
    if not paths:
        raise ValueError("no annotation files given")
    files = validate_files(store, paths, limits)
    write_annotation_files(store, files)
    return files
