"""A small real filesystem that runs out of space, for the disk-full tests.

``small_disk(folder, megabytes)`` mounts a tmpfs of that size at ``folder`` (root only; the test
is skipped where mounting is not permitted) and unmounts it afterwards; ``fill(folder)`` writes
a filler file until the filesystem is full and returns it (delete it to free the space again).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(folder: Path, megabytes: int = 8) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs",
                              str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Write zeros to ``folder/filler`` until the filesystem is full."""
    filler = folder / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    try:
        with open(filler, "ab") as handle:  # the last few bytes too
            while True:
                handle.write(b"\0" * 512)
                handle.flush()
    except OSError:
        pass
    return filler
