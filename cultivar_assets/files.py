"""Writing output folders safely, and hashing files.

Every folder the project builds (charts, the site, the dataset folder) is written into a fresh
sibling folder and swapped in only when complete, so readers never see half a build. Each build
leaves a small manifest, ``.cultivar-build.json``; a folder that exists, is not empty and has no
manifest was not written by this project and is never replaced (so pointing an output at, say, a
Git checkout cannot wipe it).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

MANIFEST = ".cultivar-build.json"


class UnsafeOutputError(FileExistsError):
    """The output folder holds files this project did not write."""


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST
    return json.loads(path.read_text("utf-8")) if path.is_file() else None


def replace_folder(target: Path, write: Callable[[Path], None],
                   manifest: dict[str, Any] | None = None) -> None:
    """Run ``write(work)`` on a fresh sibling of ``target``, add the manifest, swap it in."""
    target = Path(target)
    if target.exists() and any(target.iterdir()) and read_manifest(target) is None:
        raise UnsafeOutputError(
            f"refusing to replace {target}: it is not empty and was not built by cultivar "
            f"(no {MANIFEST}); choose an empty or new folder"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    old = None
    try:
        write(work)
        (work / MANIFEST).write_text(json.dumps(manifest or {}, indent=1), "utf-8")
        if target.exists():
            old = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.old")
            target.rename(old)
        try:
            work.rename(target)
        except BaseException:
            if old is not None:
                old.rename(target)
                old = None
            raise
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in chunks."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def keep_file_copy(source: Path, folder: Path, name: str, replaces: str | None = None) -> Path:
    """Copy ``source`` to ``folder/name`` (written aside, then renamed into place); afterwards
    remove the other files of ``folder`` that match the glob ``replaces``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    work = folder / f".{name}.{uuid.uuid4().hex[:8]}.partial"
    try:
        shutil.copyfile(source, work)
        work.replace(target)
    finally:
        work.unlink(missing_ok=True)
    for old in folder.glob(replaces) if replaces else ():
        if old != target and old.is_file():
            old.unlink()
    return target
