"""Building an annotation tool's folder: one page, its static files, a manifest.

The post-editing tool (``construction/annotation/postedit_tool.py``) and the error-annotation tool
(``error_analysis/tool.py``) are built the same way: the page is rendered by
:class:`~cultivar_assets.site.pages.PageWriter` (autoescaping; the task is embedded as JSON with
``tojson``), the static files it names are copied from ``site/static`` (and checked to be all
there), and the folder is swapped in as a whole by :func:`cultivar_assets.files.replace_folder`
with a ``.cultivar-build.json`` manifest. The page needs no network and no server: it works from
``file://``; its Content-Security-Policy (``tool_head.html.j2``) allows only its own scripts and
styles and no connections.

Every tool gets :data:`COMMON_STATIC` (``fonts.css``, ``tool.css``, ``script-check.js``: the
check of letters drawn as empty boxes, shared with the site's pages; ``tool-common.js``: autosave in
``localStorage``, status and error messages, JSON download and load, the questions before a reset
and before loading over work not yet downloaded, the notice of a frozen field, the instructions
collapsed after a task's first visit, and the keys shared by the tools, whose single-key
shortcuts act only outside text fields: ``docs/annotation-tools.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cultivar_assets.files import replace_folder
from cultivar_assets.site.pages import PageWriter

COMMON_STATIC = ("fonts.css", "tool.css", "script-check.js", "tool-common.js")


def build_tool_folder(out_dir: str | Path, template: str, static_files: Sequence[str],
                      manifest: dict[str, Any], files: Mapping[str, str] | None = None,
                      **context: Any) -> Path:
    """Write ``index.html`` from ``template``, the static files and ``files`` (name -> text, UTF-8)
    into ``out_dir`` (replaced as a whole); returns the page's path. ``static_files`` come after
    :data:`COMMON_STATIC`."""
    names = list(dict.fromkeys([*COMMON_STATIC, *static_files]))
    out_dir = Path(out_dir)

    def write(work: Path) -> None:
        writer = PageWriter(work)
        writer.page("index.html", template, **context)
        writer.copy_static(names)
        for name, text in (files or {}).items():
            (work / name).write_text(text, "utf-8")
        copied = {p.relative_to(work / "static").as_posix()
                  for p in (work / "static").rglob("*") if p.is_file()}
        missing = sorted(set(names) - copied)
        if missing:
            raise FileNotFoundError(f"static files of the {manifest.get('kind', 'tool')} are "
                                    f"missing from site/static: {missing}")

    replace_folder(out_dir, write, manifest=manifest)
    return out_dir / "index.html"
