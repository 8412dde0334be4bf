"""Writing output folders safely, and hashing files.

Every folder the project builds (charts, the site, the dataset folder) is written into a fresh
sibling folder and swapped in only when complete, so readers never see half a build (and, on
Linux, never a missing folder: :func:`replace_folder`). Each build
leaves a small manifest, ``.cultivar-build.json``; a folder that exists, is not empty and has no
manifest was not written by this project and is never replaced (so pointing an output at, say, a
Git checkout cannot wipe it).
"""

from __future__ import annotations

import ctypes
import errno
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

MANIFEST = ".cultivar-build.json"
_DISK_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_DISK_FULL_TEXTS = ("no space left on device", "database or disk is full", "disk quota exceeded")


class DiskFullError(OSError):
    """Out of disk space while writing a file or folder. The message names the file or folder,
    the space left (and what was needed, when known) and what was kept as it was."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return str(self.strerror)


def is_disk_full(error: BaseException | None, path: Path | None = None) -> bool:
    """Whether ``error`` (or an error it was raised from) says the disk or a quota is full: an
    ``OSError`` with ``ENOSPC``/``EDQUOT``, or the text by which DuckDB and SQLite report it.
    With ``path``, SQLite's vaguer "disk I/O error" counts too when the filesystem holding
    ``path`` has less than 1 MB free (our rule: SQLite reports a failed journal write on a full
    disk that way)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _DISK_FULL_ERRNOS:
            return True
        text = str(error).lower()
        if any(t in text for t in _DISK_FULL_TEXTS):
            return True
        if path is not None and "disk i/o error" in text:
            free = free_space(path)
            if free is not None and free < 1_000_000:
                return True
        error = error.__cause__ or error.__context__
    return False


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.1f} kB"


def free_space(path: Path) -> int | None:
    """Bytes free for this user on the filesystem that holds ``path`` (its nearest existing
    folder), or None when no folder above it exists."""
    for folder in [Path(path), *Path(path).parents]:
        if folder.exists():
            return shutil.disk_usage(folder).free
    return None


def disk_full_error(path: Path, kept: str, error: BaseException | None = None,
                    needed: int | None = None, free: int | None = None) -> DiskFullError:
    """The error to raise when writing ``path`` ran out of space: names ``path`` (and the file
    the operating system named, when it is another one), the free space (``free``, measured
    when the write failed, else now), ``needed`` bytes when known, and ``kept``: what is as it
    was (say exactly what, e.g. "the previous folder is unchanged")."""
    where = f"writing {path}"
    named = getattr(error, "filename", None)
    if named and Path(named) != Path(path):
        where += f" (the file {named})"
    free = free_space(path) if free is None else free
    space = [f"{_size(free)} free on its filesystem" if free is not None else None,
             f"at least {_size(needed)} needed" if needed is not None else None]
    amounts = "; ".join(s for s in space if s)
    return DiskFullError(f"out of disk space {where}{f' ({amounts})' if amounts else ''}. "
                         f"Nothing was lost: {kept}. Free some space and run again.")


class UnsafeOutputError(FileExistsError):
    """The output folder holds files this project did not write."""


def manifest_bytes(manifest: dict[str, Any] | None) -> bytes:
    """The bytes of the manifest file (:data:`MANIFEST`) that :func:`replace_folder` writes."""
    # one line: the C encoder (a site manifest lists 13,000 files at 1,000 models)
    return json.dumps(manifest or {}).encode("utf-8")


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST
    return json.loads(path.read_text("utf-8")) if path.is_file() else None


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# what replace_folder leaves beside a target while it works: ``.<name>.<pid>-<8 hex>.partial``
# (and ``.old``); older releases wrote ``.<name>.<8 characters>.partial`` (tempfile.mkdtemp)
# and ``.<name>.<8 hex>.old``
_WORK_NAME = re.compile(r"\.(?:(?P<pid>\d+)-[0-9a-f]{8}|[a-z0-9_]{8})\.(?:partial|old)")


def clean_leftovers(target: Path) -> list[Path]:
    """Remove the work folders that an interrupted :func:`replace_folder` of ``target`` left
    beside it (a run killed mid-build or mid-swap), except those of a process that is still
    running (it may be building now); returns what was removed."""
    target = Path(target)
    removed = []
    prefix = f".{target.name}"
    for path in target.parent.glob(f".{glob.escape(target.name)}.*"):
        match = _WORK_NAME.fullmatch(path.name[len(prefix):])
        if not match or not path.is_dir() or path.is_symlink():
            continue
        if match["pid"] and _alive(int(match["pid"])):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def clean_partial_files(folder: Path, stem: str) -> list[Path]:
    """Remove the files ``<stem>.<pid>.partial`` in ``folder`` of processes that are no longer
    running (a write killed or failed before its rename); returns what was removed."""
    removed = []
    for path in Path(folder).glob(f"{glob.escape(stem)}.*.partial"):
        pid = path.name[len(stem) + 1:-len(".partial")]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)) and (
                path.is_file() and not path.is_symlink()):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where
    the system or the filesystem cannot, and nothing was changed."""
    renameat2 = getattr(_libc(), "renameat2", None) if sys.platform == "linux" else None
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


@cache
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def current_umask() -> int:
    """The process's umask, read without changing it (Linux: ``/proc/self/status``; elsewhere
    set and restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def own_parents(target: Path) -> list[Path]:
    """The folders between ``$CULTIVAR_HOME`` and ``target`` (both excluded): made by the
    project for its default outputs (``publish/`` of ``publish/hf_dataset``); none when
    ``target`` is outside the home."""
    from cultivar_assets.paths import cultivar_home

    home, target = cultivar_home(), Path(os.path.abspath(target))
    if not target.is_relative_to(home):
        return []
    return [folder for folder in target.parents if folder != home and folder.is_relative_to(home)]


def _tree_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def replace_folder(target: Path, write: Callable[[Path], None],
                   manifest: dict[str, Any] | None = None, detach_removal: bool = False
                   ) -> None:
    """Run ``write(work)`` on a fresh sibling of ``target``, add the manifest, swap it in.

    The work folder is ``.<name>.<pid>-<random>.partial`` beside ``target``, created with the
    process's umask (0755 under the usual 022, so a web server running as another user can read the
    result); the folders between ``$CULTIVAR_HOME`` and ``target`` (:func:`own_parents`, e.g.
    ``publish/``) get the mode the umask gives a new folder too. Leftovers of an interrupted earlier
    call are removed first (:func:`clean_leftovers`). The swap (our choice): on Linux both folders
    are exchanged in one ``renameat2(RENAME_EXCHANGE)`` call, so ``target`` always exists and is
    always a complete build -- a static web server sees the old tree or the new one at every
    instant, never a missing folder (a page being fetched while the swap happens may still get an
    old file and then a new one); the old build is removed afterwards. Where the exchange is not
    available (macOS, some network filesystems) the old folder is renamed aside and the new one
    renamed in: two renames, between which ``target`` is missing for that instant. A folder is never
    turned into a symlink (servers configured not to follow links keep working).

    With ``detach_removal`` the previous build is removed by a detached process
    (:func:`remove_detached`) and this returns as soon as the new one is in place; the previous
    build's folder (``.<name>.<pid>-<random>.partial`` beside ``target``) is gone once that
    process ends, and one it could not finish is removed by the next call's
    :func:`clean_leftovers`. Without it, the previous build is removed before this returns.

    On a full disk this raises :class:`DiskFullError` naming ``target``; the previous build is
    unchanged and the partial one is removed.
    """
    target = Path(target)
    if target.exists() and any(target.iterdir()) and read_manifest(target) is None:
        raise UnsafeOutputError(
            f"refusing to replace {target}: it is not empty and was not built by cultivar "
            f"(no {MANIFEST}); choose an empty or new folder"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o777 & ~current_umask()
    for folder in own_parents(target):  # made under another umask by an earlier build
        if folder.stat().st_mode & 0o777 != mode:
            folder.chmod(mode)
    clean_leftovers(target)
    work = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    work.mkdir()
    old = None
    try:
        write(work)
        (work / MANIFEST).write_bytes(manifest_bytes(manifest))
        if not target.exists():
            work.rename(target)
        elif _exchange(work, target):
            old = work  # it now holds the previous build
        else:
            old = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.old")
            target.rename(old)
            try:
                work.rename(target)
            except BaseException:
                old.rename(target)
                old = None
                raise
    except BaseException as error:
        full = is_disk_full(error)
        free = free_space(target.parent) if full else None  # before the partial build goes
        shutil.rmtree(work, ignore_errors=True)
        if full:
            kept = (f"the previous {target} ({_size(_tree_size(target))}) is unchanged"
                    if target.exists() else f"{target} did not exist before and was not created")
            raise disk_full_error(target, f"{kept}, and the partial build was removed",
                                  error, free=free) from error
        raise
    if old is not None and not (detach_removal and remove_detached(old)):
        shutil.rmtree(old, ignore_errors=True)


def remove_detached(folder: Path) -> bool:
    """Start removing ``folder`` in a process of its own session (``rm -rf``, started by a shell
    that exits at once, so nothing waits for it and no signal to the caller's process group
    reaches it); False, with nothing started, where no such process can be started."""
    try:
        shell = subprocess.Popen(["/bin/sh", "-c", 'rm -rf -- "$1" &', "sh", os.fspath(folder)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return False
    return shell.wait() == 0


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
    except OSError as error:
        if is_disk_full(error):
            kept = (f"the previous {target} is unchanged" if target.exists()
                    else f"{target} was not created")
            raise disk_full_error(target, kept, error, needed=Path(source).stat().st_size
                                  ) from error
        raise
    finally:
        work.unlink(missing_ok=True)
    for old in folder.glob(replaces) if replaces else ():
        if old != target and old.is_file():
            old.unlink()
    return target
