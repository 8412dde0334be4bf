"""The site build's incremental cache: what a build takes from the previous one (ours).

A build writes a fresh folder and swaps it in (:func:`cultivar_assets.files.replace_folder`); its
manifest (``.cultivar-build.json``) records what each reusable output was made from, and the next
build takes an output from the previous folder by hard link when it was made from the same inputs:

- every file of a model (its translation shards, statistics shard and parquet file) when the
  model's translations (their run record's fingerprint, or a hash over its rows) are unchanged
  (the manifest's ``models``);
- the locale shards when the locales are unchanged (``locales``);
- chart SVGs whose spec is unchanged (``charts``);
- every page and table download whose key (:meth:`Cache.key_of`: the reuse key, the templates,
  the pages' common context and the page's own inputs, or digests of them) is unchanged
  (``outputs``), and the instances part of a locale page (between :data:`INSTANCES_MARKERS`)
  when the page's annotations are unchanged (``fragments``).

All of them hold the reuse key (:func:`reuse_key`): the site's format, the dataset, the
originals policy, DuckDB's version and the code, a hash over every module of the package and
every file of ``sql/`` (:func:`code_digest`: found by listing the folders, so a change to any
module makes every file again). A previous manifest with another reuse key is ignored as a
whole. Everything else is written again.

Every file of a build is its own (:class:`~cultivar_assets.site.pages.PageWriter` with
``own_files``): written read-only (0444 less the umask) and recorded in the manifest's ``files``
(path -> size, mtime in ns, inode). A previous file counts as unchanged
only when its size, mtime and inode are still the recorded ones (:func:`verified_files`: any
write to it changes its mtime, a replaced file has another inode); one that differs is made
again, never taken. A verified file is taken by hard link when its mode is the one this build
gives its files (read-only under the current umask), else copied; nothing is linked from outside
the site folder (the Vega bundle and DuckDB-Wasm are copied from the web cache).
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
from markupsafe import Markup

from cultivar_assets.files import current_umask
from cultivar_assets.site.pages import PageWriter
from cultivar_assets.tables import csv_text, json_text

SITE_FORMAT = 3  # the site's layout and manifest; a change rebuilds every file
INSTANCES_MARKERS = ("<!--instances-->", "<!--/instances-->")
# The JSON text that keys and digests hash (sorted keys, str() of what JSON has no type for):
# one encoder, instead of one made by every json.dumps call with these options.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str, ensure_ascii=False)


def reuse_key(dataset_fingerprint: str | None, show_originals: bool, code: str) -> str:
    """What every per-model file and locale shard depends on besides the model's own rows: the
    site's format, the dataset, the originals policy, DuckDB's version and the code
    (``code``: :func:`code_digest`)."""
    parts = [SITE_FORMAT, dataset_fingerprint, show_originals, duckdb.__version__, code]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def code_files() -> dict[str, Path]:
    """Every module of the package and every file of ``sql/`` (name -> path): the code that
    reads the rows and turns them into the site's files, found by listing the folders, not
    named one by one, so that no module a file depends on is left out."""
    from cultivar_assets.paths import resource_dir

    package, sql = Path(__file__).resolve().parents[1], resource_dir("sql")
    files = {f"cultivar_assets/{p.relative_to(package).as_posix()}": p
             for p in package.rglob("*.py")}
    files.update({f"sql/{p.relative_to(sql).as_posix()}": p for p in sql.rglob("*.sql")})
    return dict(sorted(files.items()))


def code_digest() -> str:
    """A hash over :func:`code_files`, names and bytes: part of every key, so a change of code
    makes every file again even where the rows are unchanged."""
    digest = hashlib.sha256()
    for name, path in code_files().items():
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def template_digest() -> str:
    """A hash over every template of the site's pages, names and bytes (macros and imported
    templates are shared by the pages, so a page's key holds them all)."""
    from cultivar_assets.paths import resource_dir

    digest = hashlib.sha256()
    for path in sorted((resource_dir("site") / "templates").glob("*.j2")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def table_files(name: str) -> dict[str, str]:
    """The download files of table ``name``: {"csv": path, "json": path}."""
    return {"csv": f"downloads/{name}.csv", "json": f"downloads/{name}.json"}


def between(text: str, markers: tuple[str, str]) -> Markup | None:
    """The HTML between two markers of a page this build wrote before (data is escaped, so no
    text from the data can contain a marker)."""
    start, end = text.find(markers[0]), text.find(markers[1])
    if start < 0 or end < start or text.count(markers[0]) != 1:
        return None
    return Markup(text[start + len(markers[0]):end])


class Cache:
    """One build's view of the previous build (``previous``: its manifest, or ``{}`` when it
    cannot be reused) and the record it leaves for the next one (``manifest``)."""

    def __init__(self, out_dir: Path, previous: dict | None, manifest: dict[str, Any],
                 dataset_fingerprint: str | None, show_originals: bool) -> None:
        self.out_dir, self.manifest = out_dir, manifest
        self._out = os.fspath(out_dir)
        self.code = code_digest()
        self.key = reuse_key(dataset_fingerprint, show_originals, self.code)
        self.templates = template_digest()
        manifest["reuse_key"] = self.key
        usable = previous is not None and previous.get("reuse_key") == self.key
        self.previous = previous if usable else {}
        # the previous build's files and sizes, listed in a thread of their own while the store
        # is read: a rebuild asks for 13,000 of them at 1,000 models, and a stat() each from
        # the thread that renders pages waits for the GIL after every call
        self._listing: Future | None = None
        if self.previous:
            pool = ThreadPoolExecutor(1, thread_name_prefix="site-listing")
            self._listing = pool.submit(verified_files, self._out,
                                        self.previous.get("files", {}),
                                        PageWriter.READ_ONLY & ~current_umask())
            pool.shutdown(wait=False)
        self.writer: PageWriter | None = None  # set by :meth:`start`
        self.common: str | None = None  # the digest of the common context, set by :meth:`start`

    def start(self, writer: PageWriter) -> None:
        """Write through ``writer`` (its common context is part of every key, as its
        :meth:`digest`: serialised once, not once per output)."""
        self.writer = writer
        self.common = self.digest(writer.common)

    def unchanged(self, path: str, key: str) -> bool:
        """Record ``key`` for ``path``; link the previous build's file when it had the same key
        (the same inputs: the same bytes)."""
        outputs = self.manifest.setdefault("outputs", {})
        if path in outputs:
            raise ValueError(f"the site build writes {path} twice")
        outputs[path] = key
        return self.previous.get("outputs", {}).get(path) == key and self.take_later(path)

    def previous_files(self) -> dict[str, int]:
        """The previous build's files (paths relative to it, forward slashes) that are as it
        wrote them (:func:`verified_files`), and their sizes, when this build started; empty
        where it cannot be reused."""
        return self._listing.result()[0] if self._listing is not None else {}

    def take_later(self, path: str) -> bool:
        """Take the previous build's ``path`` into this one (linked or copied by the writer's
        link pool: :meth:`PageWriter.take`) when it is as that build wrote it; whether it was."""
        if path not in self.previous_files():
            return False
        linkable = self._listing.result()[1]
        self.writer.take_later(os.path.join(self._out, path), path,
                               self.previous["files"][path], path in linkable)
        return True

    def key_of(self, *parts: Any) -> str:
        """The key of an output made from ``parts`` (module docstring)."""
        return self.digest([self.key, self.templates, self.code, self.common, parts])

    def text_key(self, *parts: str | None) -> str:
        """:meth:`key_of` for parts that are strings (paths, digests) or None, without their JSON
        (a model's eight table downloads are keyed by their digests: 8,000 keys at 1,000
        models). Another scheme than :meth:`key_of`'s, so the two never make the same key."""
        text = "\x1f".join(["text", self.key, self.templates, self.code, self.common or "",
                            *("\x00" if part is None else part for part in parts)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @staticmethod
    def digest(value: Any) -> str:
        """A hash of ``value`` (rows, a mapping) that stands for it in keys: a large input shared
        by a page and its table downloads is serialised once instead of once per output."""
        blob = _KEY_ENCODER.encode(value)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def page(self, path: str, template: str, keyed_by: dict | None = None,
             lazy: dict[str, Any] | None = None, **context: Any) -> None:
        """A page, rendered only when its template or data changed since the previous build
        (``keyed_by``: what stands for the context in that comparison, when it is cheaper;
        ``lazy``: parts of the context made only when the page is rendered, by calling them,
        which ``keyed_by`` must then stand for)."""
        key = self.key_of(path, template, context if keyed_by is None else keyed_by)
        if self.unchanged(path, key):
            self.writer.pages += 1
        else:
            made = {name: make() for name, make in (lazy or {}).items()}
            self.writer.page(path, template, **context, **made)

    def previous_text(self, path: str) -> str | None:
        """The previous build's ``path`` (a page), where that build can be reused and wrote it."""
        old = self.out_dir / path
        if path in self.previous.get("outputs", {}) and path in self.previous_files():
            return old.read_text("utf-8")
        return None

    def table(self, name: str, rows: list[dict], columns: list[str] | None = None,
              digest: str | None = None) -> dict:
        """Write ``downloads/<name>.csv`` and ``.json``; the links for the page's template
        (``digest``: :meth:`digest` of ``rows``, where the caller has it already)."""
        columns = columns or (list(rows[0]) if rows else [])
        key = self.key_of(name, digest or self.digest(rows), columns)
        for path in table_files(name).values():
            if not self.unchanged(path, key):
                self.write_table(path, rows, columns)
        return table_files(name)

    def write_table(self, path: str, rows: list[dict], columns: list[str] | None = None) -> None:
        """``rows`` as CSV or JSON (by ``path``'s suffix), written without a key check."""
        columns = columns or (list(rows[0]) if rows else [])
        write = csv_text if path.endswith(".csv") else json_text
        self.writer.text(path, write(rows, columns))

    def fragment_key(self, provenance: dict[int, dict]) -> str:
        """The key of a locale page's instances part: the reuse key, the templates, the code
        (:func:`code_digest`) and the page's annotations."""
        return hashlib.sha256(json.dumps(
            [self.key, self.templates, self.code, sorted(provenance.items())],
            default=str).encode()).hexdigest()

    def fragment(self, path: str, locale: str, key: str) -> Markup | None:
        """The previous build's instances part of ``path`` when it had ``key``, else None."""
        old = self.out_dir / path
        if (self.previous.get("fragments", {}).get(locale) == key
                and path in self.previous_files()):
            return between(old.read_text("utf-8"), INSTANCES_MARKERS)
        return None


def verified_files(folder: str, records: dict[str, list], mode: int
                   ) -> tuple[dict[str, int], set[str]]:
    """The regular files under ``folder`` (paths relative to it, forward slashes) whose size,
    mtime and inode are those of their ``records`` (the manifest's ``files``: as the build
    wrote them), with their sizes; and those of them whose permission bits are ``mode`` (which
    may be linked)."""
    sizes: dict[str, int] = {}
    linkable: set[str] = set()
    pending = [("", folder)]
    while pending:
        prefix, path = pending.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((f"{prefix}{entry.name}/", entry.path))
                elif entry.is_file(follow_symlinks=False):
                    rel = prefix + entry.name
                    record = records.get(rel)
                    if record is None:
                        continue
                    stat = entry.stat(follow_symlinks=False)
                    if (stat.st_size, stat.st_mtime_ns, stat.st_ino) == tuple(record[:3]):
                        sizes[rel] = stat.st_size
                        if stat.st_mode & 0o7777 == mode:
                            linkable.add(rel)
    return sizes, linkable
