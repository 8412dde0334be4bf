"""The post-editing tool (paper §2.3, Figure 1, Appendix B): one static page per locale task.

:func:`build_postedit_tool` writes, into ``out_dir`` (replaced as a whole, built like every
annotation tool's folder, ``site/tool_pages.py``)::

    index.html            every item, the instructions, the task as JSON (written with tojson)
    static/               tool-common.js, tool.css (shared with the error-annotation tool),
                          postedit.js, postedit.css, and the token diff
                          (``site.pages.TEXTDIFF_STATIC``: textdiff.js, module-shim.js, the
                          vendored diff-match-patch with its LICENSE and README)
    drafts.jsonl          the task's drafts with their hashes (``drafts.DRAFTS_FILE``)
    .cultivar-build.json  manifest: task id, drafts hash, tool and schema versions

The page needs no network and no server (``file://`` or any static host): scripts are referenced
relatively and a Content-Security-Policy allows only its own scripts and styles, no connections.
Draft text is escaped by the template and set with ``textContent`` by the script. What the
annotator does: the page's instructions (``site/templates/postedit_instructions.html.j2``); the
file it downloads: ``file.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cultivar_assets import __version__
from cultivar_assets.construction.annotation.file import SCHEMA_VERSION
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.construction.localisation.drafts import (
    DRAFTS_FILE,
    Draft,
    check_text,
    drafts_jsonl,
)
from cultivar_assets.data.locales import get_locale
from cultivar_assets.site.pages import TEXTDIFF_STATIC
from cultivar_assets.site.tool_pages import build_tool_folder

STATIC_FILES = ["postedit.css", "postedit.js", *TEXTDIFF_STATIC]


def build_postedit_tool(drafts: Sequence[Draft] | AnnotationTask, out_dir: str | Path) -> Path:
    """Write the tool of one locale's drafts into ``out_dir``; returns the page's path."""
    task = drafts if isinstance(drafts, AnnotationTask) else AnnotationTask.from_drafts(drafts)
    locale = get_locale(task.locale)
    payload = task.payload(tool_version=__version__, schema_version=SCHEMA_VERSION)
    return build_tool_folder(
        out_dir, "postedit.html.j2", STATIC_FILES,
        manifest={"kind": "postedit-tool", "task_id": task.task_id, "locale": task.locale,
                  "drafts_hash": task.drafts_hash, "n_items": len(task.drafts),
                  "tool_version": __version__, "schema_version": SCHEMA_VERSION},
        files={DRAFTS_FILE: drafts_jsonl(task.drafts)},
        checks={d.instance_id: [check_text(code, task.locale) for code in d.checks]
                for d in task.drafts},
        task=payload["task"], payload=payload, schema_version=SCHEMA_VERSION,
        language_name=locale.language_name, location=locale.location,
        source_lang=f"{locale.language}-{locale.script}")
