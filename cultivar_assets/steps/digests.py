"""Digests of what a pipeline step reads and writes: the code, the installed packages, files.

- :func:`code_digest`: the sha256 over every file of the package (``cultivar_assets/``: modules,
  registries, prompt templates, bundled data) and of its ``sql/`` and ``site/`` folders, by
  relative path and content (byte-compiled files and ``node_modules`` left out).
- :func:`environment_digest`: the Python version and the installed distributions: the names of
  the ``*.dist-info`` and ``*.egg-info`` entries of every ``sys.path`` folder, which carry each
  distribution's name and version (an install, upgrade or removal changes it).
- :func:`content_digest`: a file's bytes, or a folder's files (relative path and bytes);
  ``"missing"`` when the path does not exist, ``None`` for no path; :func:`files_digest`: the
  same over chosen files of a folder. Only regular files are read (:func:`file_sha256`).
- :func:`listing_digest`: the listing of files and folders (each file's path, size and
  modification time in ns): cheap, for a step's outputs, which must be as the step left them.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

from cultivar_assets.config_files import not_a_regular_file
from cultivar_assets.paths import resource_dir

MISSING = "missing"
_SKIPPED_DIRS = {"__pycache__", "node_modules"}


def _files(folder: Path) -> Iterator[Path]:
    """Every file below ``folder``, in a fixed order (skipping byte code and node_modules)."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(names):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(root) / name


def file_sha256(path: Path) -> bytes:
    """The sha256 of a regular file's bytes (read in blocks). Anything else (a FIFO, a device,
    a link to one) is not read: its digest is that of the words naming what it is (``missing``
    for a link to nothing), and the reader of the file refuses it
    (:func:`~cultivar_assets.config_files.read_input_file`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:  # a link to nothing
        return hashlib.sha256(MISSING.encode()).digest()
    try:
        kind = not_a_regular_file(os.fstat(fd).st_mode)
        if kind:
            return hashlib.sha256(f"not a regular file: {kind}".encode()).digest()
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.digest()
    finally:
        os.close(fd)


def _add_files(digest, folder: Path, paths: Iterable[Path], label: str) -> None:
    for path in paths:
        digest.update(f"{label}/{path.relative_to(folder).as_posix()}\0".encode())
        digest.update(file_sha256(path))


def _add_tree(digest, folder: Path, label: str) -> None:
    _add_files(digest, folder, _files(folder), label)


def code_roots() -> dict[str, Path]:
    """The folders :func:`code_digest` covers: the package, and its ``sql/`` and ``site/``
    folders where they lie beside it (a source checkout; in a wheel they are inside it)."""
    package = Path(__file__).resolve().parents[1]
    roots = {"cultivar_assets": package}
    for name in ("sql", "site"):
        folder = resource_dir(name).resolve()
        if not folder.is_relative_to(package):
            roots[name] = folder
    return roots


def tree_digest(roots: dict[str, Path]) -> str:
    """sha256 over the files below each root (labelled), by relative path and content."""
    digest = hashlib.sha256()
    for label, folder in sorted(roots.items()):
        _add_tree(digest, folder, label)
    return digest.hexdigest()


@cache
def code_digest() -> str:
    """The package's files and its SQL and site folders (module docstring)."""
    return tree_digest(code_roots())


@cache
def environment_digest() -> str:
    """The Python version and the installed distributions (module docstring)."""
    names = set()
    for entry in sys.path:
        folder = Path(entry or ".")
        if folder.is_dir():
            with os.scandir(folder) as entries:
                names.update(e.name for e in entries
                             if e.name.endswith((".dist-info", ".egg-info")))
    parts = [platform.python_implementation(), platform.python_version(), platform.machine(),
             *sorted(names)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def content_digest(path: str | Path | None) -> str | None:
    """sha256 of a file's bytes or of a folder's files (module docstring)."""
    if path is None:
        return None
    path = Path(path).expanduser()
    if path.is_dir():
        digest = hashlib.sha256()
        _add_tree(digest, path, ".")
        return digest.hexdigest()
    if not path.exists():
        return MISSING
    return file_sha256(path).hex()


def files_digest(folder: str | Path, paths: Iterable[Path]) -> str:
    """sha256 over ``paths`` (files inside ``folder``), by relative path and content: for a
    folder of which only some files are read (:func:`content_digest` reads every file)."""
    digest = hashlib.sha256()
    _add_files(digest, Path(folder), sorted(paths), ".")
    return digest.hexdigest()


def listing_digest(paths: Iterable[str | Path]) -> str:
    """sha256 of the listing of ``paths`` (module docstring); a missing path is listed as such."""
    digest = hashlib.sha256()
    for raw in paths:
        path = Path(raw).expanduser()
        digest.update(f"{path}\0".encode())
        if path.is_file():
            stat = path.stat()
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}\n".encode())
        elif path.is_dir():
            for file in _files(path):
                stat = file.stat()
                digest.update(f"{file.relative_to(path).as_posix()}\0{stat.st_size}:"
                              f"{stat.st_mtime_ns}\n".encode())
        else:
            digest.update(f"{MISSING}\n".encode())
    return digest.hexdigest()
