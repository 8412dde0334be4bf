"""The error-annotation tool (paper §5): one static page per locale task of the sample.

:func:`build_error_tool` writes, into ``out_dir`` (replaced as a whole; built like every
annotation tool, ``site/tool_pages.py``)::

    index.html            every instance: its localised source, both English references, each
                          system's translation with nine checkboxes, a note, "Done"; the task JSON
    static/               tool-common.js, tool.css (shared), errors.js, errors.css
    .cultivar-build.json  manifest: task id, locale, counts, tool and schema versions

The page works offline from ``file://`` (a Content-Security-Policy allows only its own scripts and
styles, no connections), autosaves in ``localStorage`` (keyed by task id and translations hash),
downloads ``<task_id>.errors.json`` (``error_analysis/file.py``) and loads such a file back.
Highlights are the segment browser's word diff (``site/diff.py``): the source and the localised
reference against their originals, the original reference against the localised one, each
translation against the localised reference (ours). Texts are escaped by the template, never set
as HTML by the script. The page shows original FLORES English: keep it local. Keys and behaviour:
``docs/error-analysis.md``, ``docs/annotation-tools.md``. :func:`build_error_tools` writes one
folder per task (``<tool_dir>/<locale>/``) and an index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cultivar_assets import __version__
from cultivar_assets.data.locales import get_locale
from cultivar_assets.error_analysis.file import FILE_SUFFIX, SCHEMA_VERSION
from cultivar_assets.error_analysis.sample import ErrorSample, ErrorTask
from cultivar_assets.error_analysis.types import CODES, ERROR_TYPES, GROUPS
from cultivar_assets.files import replace_folder
from cultivar_assets.site.diff import Span, word_diff
from cultivar_assets.site.pages import PageWriter
from cultivar_assets.site.tool_pages import COMMON_STATIC, build_tool_folder
from cultivar_assets.textdiff import mode_for_script

STATIC_FILES = ["errors.js", "errors.css"]


def payload(task: ErrorTask) -> dict[str, Any]:
    """What the page embeds: the task header, the error types and every instance's items."""
    groups: dict[int, dict] = {}
    for item in task.items:
        group = groups.setdefault(item.instance_id, {
            "instance_id": item.instance_id, "key": f"{task.locale}_{item.instance_id}",
            "source": item.source, "reference": item.reference,
            "original_reference": item.original_reference, "items": []})
        group["items"].append({"key": item.key, "model_id": item.model_id,
                               "system": item.system, "hypothesis": item.hypothesis,
                               "hypothesis_sha256": item.hypothesis_sha256})
    return {
        "task": {"task_id": task.task_id, "locale": task.locale, "n_items": len(task.items),
                 "n_instances": len(task.instance_ids),
                 "translations_hash": task.translations_hash, "error_types": list(CODES),
                 "tool_version": __version__, "blind": task.blind},
        "schema_version": SCHEMA_VERSION,
        "types": [{"code": t.code, "group": t.group, "label": t.label,
                   "description": t.description, "shortcut": str(k)}
                  for k, t in enumerate(ERROR_TYPES, 1)],
        "groups": [groups[i] for i in task.instance_ids],
    }


def _plain(text: str) -> list[Span]:
    return [Span(text, False)] if text else []


def highlights(task: ErrorTask) -> dict[int, dict[str, Any]]:
    """Per instance, the spans the page shows (module docstring): ``source``, ``reference``,
    ``original_reference`` (None when the data has no original) and ``hypotheses`` by item key."""
    out: dict[int, dict[str, Any]] = {}
    source_mode = mode_for_script(get_locale(task.locale).script)
    for item in task.items:
        group = out.get(item.instance_id)
        if group is None:
            source = (word_diff(item.original_source, item.source, source_mode)[1]
                      if item.original_source is not None else _plain(item.source))
            if item.original_reference is not None:
                original, reference = word_diff(item.original_reference, item.reference, "word")
            else:
                original, reference = None, _plain(item.reference)
            group = out[item.instance_id] = {"source": source, "reference": reference,
                                             "original_reference": original, "hypotheses": {}}
        group["hypotheses"][item.key] = word_diff(item.reference, item.hypothesis, "word")[1]
    return out


def build_error_tool(task: ErrorTask, out_dir: str | Path) -> Path:
    """Write the tool of one locale task into ``out_dir``; returns the page's path."""
    locale = get_locale(task.locale)
    data = payload(task)
    return build_tool_folder(
        out_dir, "errors.html.j2", STATIC_FILES,
        manifest={"kind": "error-annotation-tool", "task_id": task.task_id,
                  "locale": task.locale, "n_items": len(task.items),
                  "n_instances": len(task.instance_ids), "tool_version": __version__,
                  "schema_version": SCHEMA_VERSION},
        task=data["task"], payload=data, types=data["types"], groups=GROUPS,
        highlights=highlights(task),
        schema_version=SCHEMA_VERSION, language_name=locale.language_name,
        location=locale.location, source_lang=f"{locale.language}-{locale.script}",
        file_name=f"{task.task_id}{FILE_SUFFIX}")


def build_error_tools(sample: ErrorSample, tool_dir: str | Path) -> dict[str, Path]:
    """One tool per task under ``tool_dir/<locale>/`` and ``tool_dir/index.html`` listing them
    (the folder is replaced as a whole); returns locale -> page."""
    tool_dir = Path(tool_dir)
    pages: dict[str, Path] = {}

    def write(work: Path) -> None:
        for task in sample.tasks:
            build_error_tool(task, work / task.locale)
            pages[task.locale] = tool_dir / task.locale / "index.html"
        writer = PageWriter(work)
        writer.page("index.html", "errors_index.html.j2", tasks=[
            {"locale": t.locale, "task_id": t.task_id, "n_items": len(t.items),
             "n_instances": len(t.instance_ids), "n_systems": len(t.models),
             "language_name": get_locale(t.locale).language_name,
             "location": get_locale(t.locale).location} for t in sample.tasks],
            notes=list(sample.notes), version=__version__)
        writer.copy_static(list(COMMON_STATIC))

    replace_folder(tool_dir, write, manifest={
        "kind": "error-annotation-tools", "tasks": [t.task_id for t in sample.tasks],
        "tool_version": __version__})
    return pages
