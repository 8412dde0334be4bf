"""One way to build static pages: Jinja2 templates from ``site/templates`` and a page writer.

Used by the leaderboard site and by the annotation tools (post-editing, error analysis), so every
page the project writes is rendered the same way: HTML autoescaping on for every template
(``select_autoescape(default=True)``), undefined variables are errors, links are relative (a
page at ``a/b.html`` gets ``root="../"``), and the shared static files (``site/static``: CSS,
vendored JavaScript with its licences) are copied next to the pages, never loaded from a CDN.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Executor, Future
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from cultivar_assets.files import current_umask
from cultivar_assets.paths import cultivar_home, resource_dir
from cultivar_assets.site.fonts import font_advice
from cultivar_assets.site.model_card import engine_text, utc_time
from cultivar_assets.tables import format_params, format_value

# The browser's token diff (site/static/textdiff.js, the twin of cultivar_assets/textdiff.py) and
# what it needs: the vendored diff-match-patch with its licence and origin, and the shim that lets
# the unmodified file run as a classic script. Loaded in this order by every page that diffs.
TEXTDIFF_STATIC = ("module-shim.js", "vendor/diff-match-patch/diff_match_patch.js",
                   "vendor/diff-match-patch/LICENSE", "vendor/diff-match-patch/README.md",
                   "textdiff.js")


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
    if value is None:
        return ""
    number = _number_text(value)
    return number if number is not None else str(escape(value))


def _shown(value: Any, digits: int) -> str:
    text = format_value(value, digits=digits)
    return text if isinstance(value, float) else str(escape(text))


def num_cell(value: Any, digits: int = 2) -> Markup:
    """A numeric table cell: the formatted value, the exact one in ``data-value`` (sorting).
    Numbers are written without escaping (their text has no markup characters); anything else
    is escaped."""
    return Markup(f'<td class="num" data-value="{_exact(value)}">{_shown(value, digits)}</td>')


def interval_cell(row: dict[str, Any], column: dict[str, Any]) -> Markup:
    """A numeric cell with its 95 % interval where ``row`` has ``<key>_low`` and ``<key>_high``,
    and a mark where ``<key>_excludes_zero`` is true."""
    key, digits = column["key"], column["digits"]
    value, low, high = row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high")
    text = _shown(value, digits)
    if low is not None and high is not None:
        text += f' <span class="interval">[{_shown(low, digits)}, {_shown(high, digits)}]</span>'
    if row.get(f"{key}_excludes_zero"):
        text += '<abbr class="excludes-zero" title="the interval excludes 0">*</abbr>'
    return Markup(f'<td class="num" data-value="{_exact(value)}">{text}</td>')


def _copy_bytes(source: int, target: int, size: int) -> None:
    """Copy ``size`` bytes between two open files: ``os.copy_file_range`` (a reflink on
    filesystems that share extents), else read and write."""
    copied = 0
    if hasattr(os, "copy_file_range"):
        try:
            while copied < size:
                n = os.copy_file_range(source, target, size - copied)
                if n == 0:
                    break
                copied += n
        except OSError as error:
            if copied or error.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL,
                                             errno.EOPNOTSUPP, errno.EPERM):
                raise
    if copied < size:
        os.lseek(source, copied, os.SEEK_SET)
        while chunk := os.read(source, 1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view):]


def static_dir() -> Path:
    """The shared static files (CSS, JavaScript, vendored libraries and their licences)."""
    return resource_dir("site") / "static"


class PageWriter:
    """Writes pages and files under ``root`` and counts pages, files and bytes (and, with
    ``component``, the bytes per part of the output it names for a path, and the largest
    file).

    With ``link_pool``, :meth:`link_later` and :meth:`take_later` hand hard links to that
    pool's threads in batches (``os.link`` releases the GIL: a site rebuild at 1,000 models
    links 13,000 unchanged files while it renders pages); :meth:`wait_links` makes the rest and
    waits for them all.

    With ``own_files`` (the site build), every file is the writer's own: created read-only
    (mode 0444 less the umask: :data:`READ_ONLY`), never a link to a file outside the folder,
    and recorded in :attr:`records` (path -> [size, mtime in ns, inode]),
    which the next build checks before it takes a file from this one (:meth:`take`)."""

    LINK_BATCH = 1000
    READ_ONLY = 0o444

    def __init__(self, root: Path, common: dict[str, Any] | None = None,
                 env: jinja2.Environment | None = None,
                 component: Callable[[str], str] | None = None,
                 link_pool: Executor | None = None, own_files: bool = False) -> None:
        self.root = Path(root)
        self._root = os.fspath(self.root)
        self.env = env or environment()
        self.common = dict(common or {})
        self.pages = self.files = self.bytes = 0
        self.component = component
        self.sizes: dict[str, int] = defaultdict(int)  # bytes per component, with one
        self.largest: tuple[str, int] = ("", 0)  # the largest file (path, bytes), with one
        self._lock = threading.Lock()  # writes may come from worker threads
        self._folders: set[str] = set()  # folders made already (a build writes ~13,000 files)
        self.link_pool = link_pool
        # link_later's and take_later's, not handed over yet: (method, its arguments)
        self._deferred: list[tuple[Callable, tuple]] = []
        self._linking: list[Future] = []
        self.records: dict[str, list] | None = {} if own_files else None

    def _target(self, path: str) -> str:
        """``root / path`` (as a string: a build makes ~13,000 of them, and pathlib's objects
        cost more than the links), its folder made (once per folder)."""
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
        if self.records is None:
            with open(target, "wb") as file:
                file.write(content)
        else:
            with self._create(target) as file:
                file.write(content)
                file.flush()
                stat = os.fstat(file.fileno())
            self._record(path, stat)
        self._count(path, len(content))

    def _create(self, target: str):
        """A new file at ``target``, read-only (:data:`READ_ONLY` less the umask), open for
        writing; an existing one is an error."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        return os.fdopen(os.open(target, flags, self.READ_ONLY), "wb")

    def _record(self, path: str, stat: os.stat_result) -> None:
        with self._lock:
            self.records[path] = [stat.st_size, stat.st_mtime_ns, stat.st_ino]

    def copy(self, source: Path, path: str) -> None:
        """A copy of ``source`` at ``path`` (with ``own_files``: read and written as the
        writer's own file)."""
        if self.records is not None:
            self.data(path, Path(source).read_bytes())
            return
        target = self._target(path)
        shutil.copyfile(source, target)
        self.counted(path)

    def take(self, source: str, path: str, record: list, link: bool) -> None:
        """Put ``source``, a file of the previous build whose size, mtime and inode are its
        ``record``'s ([size, mtime in ns, inode], :attr:`records`), at ``path``: as a hard
        link when ``link`` (the file is read-only with the mode this build gives its files), else
        as a copy (``os.copy_file_range``: a reflink where the filesystem makes one). Needs
        ``own_files``."""
        target = self._target(path)
        if link:
            try:
                os.link(source, target)
            except OSError:
                link = False
        if link:
            with self._lock:
                self.records[path] = record
        else:
            with open(source, "rb") as read, self._create(target) as write:
                _copy_bytes(read.fileno(), write.fileno(), record[0])
                write.flush()
                stat = os.fstat(write.fileno())
            self._record(path, stat)
        self._count(path, record[0])

    def take_later(self, source: str, path: str, record: list, link: bool) -> None:
        """:meth:`take` in a thread of ``link_pool`` (now without one)."""
        if self.link_pool is None:
            self.take(source, path, record, link)
            return
        self._deferred.append((self.take, (source, path, record, link)))
        if len(self._deferred) >= self.LINK_BATCH:
            self._hand_over()

    def link(self, source: Path | str, path: str, size: int | None = None) -> None:
        """Put ``source`` at ``path`` as a hard link (instant; same file system), else a copy
        (``size``: its size in bytes, where the caller knows it).

        For files that are never written again in place (not with ``own_files``: :meth:`take`).
        """
        if self.records is not None:
            raise ValueError(f"a writer of its own files links no file ({path}): use take")
        target = self._target(path)
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
        if size is None:
            self.counted(path)
        else:
            self._count(path, size)

    def link_later(self, source: str, path: str, size: int | None = None) -> None:
        """:meth:`link` ``source`` to ``path`` in a thread of ``link_pool`` (now without one)."""
        if self.link_pool is None:
            self.link(source, path, size)
            return
        self._deferred.append((self.link, (source, path, size)))
        if len(self._deferred) >= self.LINK_BATCH:
            self._hand_over()

    def _hand_over(self) -> None:
        batch, self._deferred = self._deferred, []
        if batch:
            self._linking.append(self.link_pool.submit(self._link_all, batch))

    @staticmethod
    def _link_all(batch: list[tuple[Callable, tuple]]) -> None:
        for make, arguments in batch:
            make(*arguments)

    def wait_links(self) -> None:
        """Every link asked for by :meth:`link_later` made (their first error raised)."""
        self._hand_over()
        linking, self._linking = self._linking, []
        for future in linking:
            future.result()

    def counted(self, path: str) -> None:
        """Count a file written at ``path`` (relative to ``root``) by other means (with
        ``own_files``: made read-only and recorded)."""
        target = os.path.join(self._root, path)
        if self.records is not None:
            os.chmod(target, self.READ_ONLY & ~current_umask())
            self._record(path, os.stat(target))
        self._count(path, os.stat(target).st_size)

    def _count(self, path: str, size: int) -> None:
        with self._lock:
            self.files += 1
            self.bytes += size
            if self.component is not None:
                self.sizes[self.component(path)] += size
                if size > self.largest[1] or (size == self.largest[1] and path < self.largest[0]):
                    self.largest = (path, size)

    def copy_static(self, names: list[str] | None = None, folder: str = "static") -> None:
        """Copy the shared static files (all, or ``names``) into ``folder``."""
        for file in sorted(static_dir().rglob("*")):
            relative = file.relative_to(static_dir()).as_posix()
            if file.is_file() and (names is None or relative in names):
                self.copy(file, f"{folder}/{relative}")
