"""Output folders are swapped in whole and never replace folders this project did not write."""

from __future__ import annotations

import os
import signal
import stat
import sys
from pathlib import Path

import pytest

from cultivar_assets.files import MANIFEST, UnsafeOutputError, read_manifest, replace_folder


def test_replace_folder_swaps_complete_builds_only(tmp_path):
    target = tmp_path / "out"
    replace_folder(target, lambda work: (work / "a.txt").write_text("one"), {"build": 1})
    assert (target / "a.txt").read_text() == "one" and read_manifest(target) == {"build": 1}

    def failing(work):
        (work / "a.txt").write_text("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        replace_folder(target, failing)
    assert (target / "a.txt").read_text() == "one"  # the previous build is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no leftovers


def test_a_foreign_folder_is_never_replaced(tmp_path):
    target = tmp_path / "website"
    target.mkdir()
    (target / ".git").mkdir()
    with pytest.raises(UnsafeOutputError, match=MANIFEST):
        replace_folder(target, lambda work: None)
    assert (target / ".git").is_dir()


def test_published_folders_get_the_process_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        replace_folder(tmp_path / "site", lambda work: (work / "index.html").write_text("x"))
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "site").stat().st_mode) == 0o755  # not mkdtemp's 0700
    assert stat.S_IMODE((tmp_path / "site" / "index.html").stat().st_mode) == 0o644


def test_the_folders_made_for_an_output_in_the_home_follow_the_umask(tmp_path, monkeypatch):
    """``$CULTIVAR_HOME/publish/`` made under umask 077 stayed 0700 at every later build (a web
    server could not read ``publish/hf_dataset``); a folder outside the home is not changed."""
    home = tmp_path / "home"
    monkeypatch.setenv("CULTIVAR_HOME", str(home))
    outside = tmp_path / "www"
    outside.mkdir(mode=0o700)
    write = lambda work: (work / "README.md").write_text("x")  # noqa: E731
    previous = os.umask(0o077)
    try:
        replace_folder(home / "publish" / "hf_dataset", write)
        assert stat.S_IMODE((home / "publish").stat().st_mode) == 0o700
        os.umask(0o022)
        replace_folder(home / "publish" / "hf_dataset", write)
        replace_folder(outside / "site", write)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((home / "publish").stat().st_mode) == 0o755
    assert stat.S_IMODE((home / "publish" / "hf_dataset").stat().st_mode) == 0o755
    assert stat.S_IMODE(outside.stat().st_mode) == 0o700  # the user's own folder


@pytest.mark.skipif(sys.platform != "linux", reason="the one-step exchange is Linux's")
def test_the_swap_never_leaves_the_target_missing(tmp_path, monkeypatch):
    """Every rename the swap makes is checked: the target exists after each (a static server
    never sees it missing), and it is always a complete build."""
    target = tmp_path / "site"
    replace_folder(target, lambda work: (work / "index.html").write_text("build 1"))
    seen = []
    rename = Path.rename

    def checked_rename(self, to):
        result = rename(self, to)
        seen.append((target / "index.html").read_text() if target.exists() else None)
        return result

    monkeypatch.setattr(Path, "rename", checked_rename)
    for build in (2, 3):
        replace_folder(target, lambda work, b=build: (work / "index.html").write_text(f"build {b}"))
        assert (target / "index.html").read_text() == f"build {build}"
    assert None not in seen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


KILLED_SWAP = """
import os, shutil, signal, sys
from pathlib import Path
from cultivar_assets import files
from cultivar_assets.files import replace_folder

target, where = Path(sys.argv[1]), sys.argv[2]
def write(work):
    (work / "index.html").write_text("new build")
    if where == "build":
        os.kill(os.getpid(), signal.SIGKILL)
exchange = files._exchange
def exchange_then_die_at_the_next_removal(a, b):
    done = exchange(a, b)
    shutil.rmtree = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
    return done
if where == "swap":  # killed after the swap, before the old build is removed
    files._exchange = exchange_then_die_at_the_next_removal
replace_folder(target, write)
"""


def test_the_next_build_removes_what_a_killed_one_left(tmp_path):
    import subprocess

    target = tmp_path / "site"
    replace_folder(target, lambda work: (work / "index.html").write_text("old build"))
    for where in ("build", "swap"):
        killed = subprocess.run([sys.executable, "-c", KILLED_SWAP, str(target), where],
                                timeout=60, capture_output=True, text=True)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (target / "index.html").read_text() == "new build"  # the swap had happened
    # the second run removed what the first (killed mid-build) left; it left the old build
    (left,) = [p for p in tmp_path.iterdir() if p.name != "site"]
    assert left.name.startswith(".site.") and left.name.endswith(".partial")
    assert (left / "index.html").read_text() == "old build"
    for name in (".site.k3j_x9ab.partial", ".site.0123abcd.old"):  # names older releases left
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.html").write_text("leftover")
    running = tmp_path / f".site.{os.getpid()}-0123abcd.partial"  # a live process's build
    running.mkdir()
    (tmp_path / ".site_data.k3j_x9ab.partial").mkdir()  # another folder's name: not ours

    replace_folder(target, lambda work: (work / "index.html").write_text("next build"))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["site", running.name, ".site_data.k3j_x9ab.partial"])
    assert (target / "index.html").read_text() == "next build"
