"""One way to build static pages: Jinja2 templates from ``site/templates`` and a page writer.

Used by the leaderboard site and by the annotation tools (post-editing, error analysis), so every
page the project writes is rendered the same way: HTML autoescaping on for every template
(``select_autoescape(default=True)``), undefined variables are errors, links are relative (a
page at ``a/b.html`` gets ``root="../"``), and the shared static files (``site/static``: CSS,
vendored JavaScript with its licences) are copied next to the pages, never loaded from a CDN.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import os
import re
import resource
import shutil
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from cultivar_assets.paths import cultivar_home, resource_dir
from cultivar_assets.site.fonts import font_advice
from cultivar_assets.site.model_card import engine_text, utc_time
from cultivar_assets.tables import float_texts, format_params, format_value

# The browser's token diff (site/static/textdiff.js, the twin of cultivar_assets/textdiff.py) and
# what it needs: the vendored diff-match-patch with its licence and origin, and the shim that lets
# the unmodified file run as a classic script. Loaded in this order by every page that diffs.
TEXTDIFF_STATIC = ("module-shim.js", "vendor/diff-match-patch/diff_match_patch.js",
                   "vendor/diff-match-patch/LICENSE", "vendor/diff-match-patch/README.md",
                   "textdiff.js")


# Why os.link may refuse where a copy works: another filesystem, a filesystem without hard links
# (or one that forbids them), the link count's limit.
UNLINKABLE = frozenset({errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


def model_slug(model_id: str) -> str:
    """A file name for a model id; ids with other characters get a short hash suffix."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-.")[:60]
    if clean == model_id and clean:
        return clean
    return f"{clean or 'model'}-{hashlib.sha1(model_id.encode()).hexdigest()[:8]}"


def environment() -> jinja2.Environment:
    """The Jinja2 environment of every page (autoescaping, strict undefined, shared filters);
    one per process and ``$CULTIVAR_HOME``, so templates are compiled once (the loader reloads
    changed files), and compiled templates are kept in ``$CULTIVAR_HOME/cache/jinja`` (keyed by
    their source), which saves a new process most of a second."""
    return _environment(cultivar_home())


@cache
def _environment(home: Path) -> jinja2.Environment:
    bytecode = home / "cache" / "jinja"
    bytecode.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("site") / "templates")),
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(bytecode)),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = lambda value, digits=2: format_value(value, digits=digits)
    env.filters["params"] = format_params
    env.filters["slug"] = model_slug
    env.filters["num"] = num_cell
    env.filters["num_interval"] = interval_cell
    env.filters["engine"] = engine_text
    env.filters["utc_time"] = utc_time
    env.globals["font_advice"] = font_advice
    return env


def _number_text(value: Any) -> str | None:
    """``str(value)`` for an int or float (digits, ``.``, ``-``, ``e``, ``inf``, ``nan``: nothing
    to escape), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _exact(value: Any) -> str:
    if type(value) is float:  # most cells: what _number_text gives, without its checks
        return str(value)
    if value is None:
        return ""
    number = _number_text(value)
    return number if number is not None else str(escape(value))


def _shown(value: Any, digits: int) -> str:
    if type(value) is float:  # most cells: what format_value gives a float, without its checks
        return f"{value:.{digits}f}"
    text = format_value(value, digits=digits)
    return text if isinstance(value, float) else str(escape(text))


def num_td(value: Any, digits: int = 2) -> str:
    """A numeric table cell as text: the formatted value, the exact one in ``data-value``
    (sorting). Numbers are written without escaping (their text has no markup characters);
    anything else is escaped. The markup of :func:`num_cell`, for rows built in Python."""
    kind = type(value)
    if kind is float:  # most cells: _exact and _shown of a float, without their checks
        return f'<td class="num" data-value="{value}">{value:.{digits}f}</td>'
    if kind is int:  # an int's text is its value, whatever the digits
        return f'<td class="num" data-value="{value}">{value}</td>'
    if value is None:
        return _MISSING_TD
    return f'<td class="num" data-value="{_exact(value)}">{_shown(value, digits)}</td>'


_MISSING_TD = f'<td class="num" data-value="">{escape(format_value(None))}</td>'


def num_column(values: list[Any], digits: int = 2) -> list[str]:
    """:func:`num_td` of each of ``values`` (a table's column), in bulk: a column of floats has
    its exact values' text from :func:`cultivar_assets.tables.float_texts`."""
    if values and set(map(type, values)) == _FLOAT:
        return [f'<td class="num" data-value="{exact}">{value:.{digits}f}</td>'
                for exact, value in zip(float_texts(values), values, strict=True)]
    return [num_td(value, digits) for value in values]


def interval_column(rows: list[dict[str, Any]], key: str, digits: int) -> list[str]:
    """:func:`interval_td` of each of ``rows`` (a table's column), in bulk: as
    :func:`num_column`."""
    values = [row.get(key) for row in rows]
    if not values or set(map(type, values)) != _FLOAT:
        return [interval_td(row, key, digits) for row in rows]
    return [interval_td(row, key, digits, exact)
            for row, exact in zip(rows, float_texts(values), strict=True)]


_FLOAT = {float}


def interval_td(row: dict[str, Any], key: str, digits: int, exact: str | None = None) -> str:
    """A numeric cell with its 95 % interval where ``row`` has ``<key>_low`` and ``<key>_high``,
    and a mark where ``<key>_excludes_zero`` is true, as text (see :func:`interval_cell`);
    ``exact``: the value's exact text where the caller has it already."""
    value, low, high = row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high")
    text = _shown(value, digits)
    if low is not None and high is not None:
        text += f' <span class="interval">[{_shown(low, digits)}, {_shown(high, digits)}]</span>'
    if row.get(f"{key}_excludes_zero"):
        text += '<abbr class="excludes-zero" title="the interval excludes 0">*</abbr>'
    return f'<td class="num" data-value="{_exact(value) if exact is None else exact}">{text}</td>'


def num_cell(value: Any, digits: int = 2) -> Markup:
    """A numeric table cell (:func:`num_td`), as markup for a template."""
    return Markup(num_td(value, digits))


def interval_cell(row: dict[str, Any], column: dict[str, Any]) -> Markup:
    """A numeric cell with its 95 % interval (:func:`interval_td` of ``column``'s key and
    digits), as markup for a template."""
    return Markup(interval_td(row, column["key"], column["digits"]))


def static_dir() -> Path:
    """The shared static files (CSS, JavaScript, vendored libraries and their licences)."""
    return resource_dir("site") / "static"


class PageWriter:
    """Writes pages and files under ``root`` and counts pages, files and bytes (and, with
    ``component``, the bytes per part of the output it names for a path, and the largest
    file), and keeps each file's sha256 (``digests``: path -> digest; :func:`tree_digest` of
    them is the folder's digest). Its writes may come from worker threads."""

    def __init__(self, root: Path, common: dict[str, Any] | None = None,
                 env: jinja2.Environment | None = None,
                 component: Callable[[str], str] | None = None) -> None:
        self.root = Path(root)
        self._root = os.fspath(self.root)
        self.env = env or environment()
        self.common = dict(common or {})
        self.pages = self.files = self.bytes = 0
        self.component = component
        self.sizes: dict[str, int] = defaultdict(int)  # bytes per component, with one
        self.largest: tuple[str, int] = ("", 0)  # the largest file (path, bytes), with one
        self.digests: dict[str, bytes] = {}  # each file's sha256, by its path
        self._lock = threading.Lock()  # writes may come from worker threads
        self._folders: set[str] = set()  # folders made already (a build writes ~13,000 files)

    def _target(self, path: str) -> str:
        """``root / path`` (as a string: a build makes ~13,000 of them, and pathlib's objects
        cost more than the writes), its folder made (once per folder)."""
        target = os.path.join(self._root, path)
        folder = path.rpartition("/")[0]
        if folder not in self._folders:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with self._lock:
                self._folders.add(folder)
        return target

    def page(self, path: str, template: str, **context: Any) -> None:
        """Render ``template`` to ``path`` (relative, forward slashes) with the common context."""
        depth = path.count("/")
        html = self.env.get_template(template).render(
            **self.common, **context, root="../" * depth, page_path=path)
        self.text(path, html)
        self.pages += 1

    def text(self, path: str, content: str) -> None:
        self.data(path, content.encode("utf-8"))

    def data(self, path: str, content: bytes) -> None:
        target = self._target(path)
        with open(target, "wb") as file:
            file.write(content)
        self._count(path, len(content), hashlib.sha256(content).digest())

    def copy(self, source: Path, path: str) -> None:
        """A copy of ``source`` at ``path``."""
        self.data(path, Path(source).read_bytes())

    def link(self, source: str | Path, path: str, digest: bytes) -> str | None:
        """``source`` at ``path`` as a hard link (the same bytes, no copy), or, where the
        filesystem refuses one (another filesystem, no hard links, the link limit), as a copy;
        None when linked, else why it was copied (the error's text). ``digest``: the sha256 of
        ``source``'s bytes as recorded when it was written (it is not read again). Only for
        files that are never written in place (a model's part: its folder is replaced whole),
        so that a later change to ``source`` cannot reach a file already linked."""
        target = self._target(path)
        try:
            os.link(source, target)
            reason = None
        except OSError as error:
            if error.errno not in UNLINKABLE:
                raise
            shutil.copyfile(source, target)
            reason = f"{error.strerror or error} ({source} -> {target})"
        self._count(path, os.stat(target).st_size, digest)
        return reason

    def counted(self, path: str) -> None:
        """Count a file written at ``path`` (relative to ``root``) by other means (its bytes
        read once for its digest)."""
        target = os.path.join(self._root, path)
        with open(target, "rb") as file:
            digest = hashlib.file_digest(file, "sha256").digest()
        self._count(path, os.stat(target).st_size, digest)

    def _count(self, path: str, size: int, digest: bytes) -> None:
        with self._lock:
            self.files += 1
            self.bytes += size
            self.digests[path] = digest
            if self.component is not None:
                self.sizes[self.component(path)] += size
                if size > self.largest[1] or (size == self.largest[1] and path < self.largest[0]):
                    self.largest = (path, size)

    def counts(self) -> dict[str, Any]:
        """What this writer counted (:meth:`add_counts` adds it to another writer's)."""
        return {"pages": self.pages, "files": self.files, "bytes": self.bytes,
                "sizes": dict(self.sizes), "largest": list(self.largest),
                "digests": {path: digest.hex() for path, digest in self.digests.items()}}

    def add_counts(self, counts: dict[str, Any]) -> None:
        """Add another writer's :meth:`counts` (one that wrote other files under the same root)."""
        with self._lock:
            self.pages += counts["pages"]
            self.files += counts["files"]
            self.bytes += counts["bytes"]
            self.digests.update((path, bytes.fromhex(digest))
                                for path, digest in counts["digests"].items())
            for name, size in counts["sizes"].items():
                self.sizes[name] += size
            path, size = counts["largest"]
            if size > self.largest[1] or (size == self.largest[1] and path < self.largest[0]):
                self.largest = (path, size)

    def copy_static(self, names: list[str] | None = None, folder: str = "static") -> None:
        """Copy the shared static files (all, or ``names``) into ``folder``."""
        for file in sorted(static_dir().rglob("*")):
            relative = file.relative_to(static_dir()).as_posix()
            if file.is_file() and (names is None or relative in names):
                self.copy(file, f"{folder}/{relative}")


def tree_digest(digests: dict[str, bytes]) -> str:
    """The sha256 of a folder whose files are ``digests`` (relative path -> the sha256 of its
    bytes): the same as :func:`cultivar_assets.versions.rows.folder_digest` of that folder
    (each file's path and digest, in the order of a walk that takes a folder's files by name
    before its subfolders by name), computed without reading the files."""
    def walk_order(path: str) -> tuple:
        *folders, name = path.split("/")
        return (*((1, folder) for folder in folders), (0, name))

    digest = hashlib.sha256()
    for path in sorted(digests, key=walk_order):
        digest.update(f"{path}\0".encode())
        digest.update(digests[path])
    return digest.hexdigest()


class SharedItems:
    """Items written by this process and by a child forked from it, side by side (the site's
    Python work is single-threaded, and a build machine has two cores or more): each takes the
    next item from a counter they share until none is left, so each item is written once,
    whichever is less busy taking more. The child writes with a writer of its own under the same
    root and sends its counts back (:meth:`PageWriter.counts`); :meth:`finish` takes what is
    left here, waits for the child and adds its counts to ``writer``'s. An error in the child
    is raised here with its traceback. Without ``os.fork`` this process writes every item.

    ``write(item, writer)`` writes one item; the child calls it, so it must not touch anything
    shared with threads of this process (the store's connection, the writer threads' queue):
    only the rows it is given and the writer.

    ``timing`` (after :meth:`finish`): how many items each process wrote, the child's wall and
    CPU seconds (user + system, from its start to its reply) and how long this process waited
    for the child after taking its last item (``waited_s``: at most the child's last item)."""

    def __init__(self, items: list, write: Callable[[Any, PageWriter], None],
                 writer: PageWriter) -> None:
        import multiprocessing

        self.items, self.write, self.writer = items, write, writer
        self.timing: dict[str, Any] = {"items_here": 0, "items_child": 0, "child_wall_s": None,
                                       "child_cpu_s": None, "waited_s": 0.0}
        self.next = multiprocessing.get_context("fork").Value("l", 0) if hasattr(
            os, "fork") else None
        self.pid: int | None = None
        self.reply: int | None = None
        if self.next is not None and len(items) > 1:
            self._fork()

    def _take(self) -> int | None:
        if self.next is None:
            return None
        with self.next.get_lock():
            index = self.next.value
            if index >= len(self.items):
                return None
            self.next.value = index + 1
        return index

    def _fork(self) -> None:
        import json
        import traceback

        read, write = os.pipe()
        # the objects made so far are left out of garbage collection until the child is done:
        # a collection touches every object it scans, and each page touched by either process
        # after the fork is copied (seconds, in a process holding a large heap)
        gc.freeze()
        try:
            pid = os.fork()
        except OSError:
            gc.unfreeze()
            os.close(read)
            os.close(write)
            raise
        if pid == 0:  # the child: write items until none is left, send the counts, exit
            started = time.perf_counter()
            gc.disable()
            os.close(read)
            status = 0
            try:
                own = PageWriter(self.writer.root, self.writer.common, self.writer.env,
                                 self.writer.component)
                done = 0
                while (index := self._take()) is not None:
                    self.write(self.items[index], own)
                    done += 1
                cpu = resource.getrusage(resource.RUSAGE_SELF)
                reply = {"counts": own.counts(), "items": done,
                         "wall_s": time.perf_counter() - started,
                         "cpu_s": cpu.ru_utime + cpu.ru_stime}
            except BaseException:  # every failure goes back to the parent, whole
                reply, status = {"error": traceback.format_exc()}, 1
            try:
                with os.fdopen(write, "w", encoding="utf-8") as out:
                    out.write(json.dumps(reply))
            finally:
                os._exit(status)
        os.close(write)
        self.pid, self.reply = pid, read

    def cancel(self) -> None:
        """Stop the child, if one is still running (this process failed before :meth:`finish`)."""
        if self.pid is not None:
            import signal

            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self.reply)
            self.pid = None
            gc.unfreeze()

    def finish(self) -> None:
        """Write what is left here, wait for the child, add its counts."""
        import json

        if self.next is None:
            for item in self.items:
                self.write(item, self.writer)
            self.timing["items_here"] = len(self.items)
            return
        try:
            while (index := self._take()) is not None:
                self.write(self.items[index], self.writer)
                self.timing["items_here"] += 1
        except BaseException:
            self.cancel()
            raise
        if self.pid is not None:
            self._join(json)

    def _join(self, json) -> None:
        started = time.perf_counter()
        with os.fdopen(self.reply, encoding="utf-8") as reply:
            text = reply.read()
        _, status = os.waitpid(self.pid, 0)
        self.timing["waited_s"] = time.perf_counter() - started
        self.pid = None
        gc.unfreeze()
        answer = json.loads(text) if text else {}
        if "counts" not in answer:
            raise RuntimeError("writing pages in a child process failed (exit status "
                               f"{os.waitstatus_to_exitcode(status)}): "
                               f"{answer.get('error', 'it sent nothing back')}")
        self.writer.add_counts(answer["counts"])
        self.timing.update(items_child=answer["items"], child_wall_s=answer["wall_s"],
                           child_cpu_s=answer["cpu_s"])
