"""files.replace_folder with ``detach_removal`` (the ``site`` asset's): it returns once the new
build is in place, the previous one removed by a detached process, not by the caller; where no
such process can be started, the caller removes it before returning."""

from __future__ import annotations

import time

import pytest

from cultivar_assets import files


def _build(text: str):
    def write(work):
        for i in range(50):
            (work / f"page{i}.html").write_text(f"{text} {i}", "utf-8")
    return write


def _leftovers(target):
    return sorted(p.name for p in target.parent.iterdir() if p.name != target.name)


def test_the_previous_build_is_removed_by_a_detached_process(tmp_path, monkeypatch):
    target = tmp_path / "site"
    files.replace_folder(target, _build("old"), {"kind": "site"})
    removed_here: list = []
    monkeypatch.setattr(files.shutil, "rmtree", lambda *a, **k: removed_here.append(a))
    files.replace_folder(target, _build("new"), {"kind": "site"}, detach_removal=True)
    assert (target / "page0.html").read_text("utf-8") == "new 0"
    assert removed_here == []  # not by this process
    deadline = time.monotonic() + 30
    while _leftovers(target) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _leftovers(target) == []


def test_without_a_detached_process_the_caller_removes_it(tmp_path, monkeypatch):
    target = tmp_path / "site"
    files.replace_folder(target, _build("old"), {"kind": "site"})

    def refused(*args, **kwargs):
        raise OSError("no processes left")

    monkeypatch.setattr(files.subprocess, "Popen", refused)
    files.replace_folder(target, _build("new"), {"kind": "site"}, detach_removal=True)
    assert (target / "page0.html").read_text("utf-8") == "new 0"
    assert _leftovers(target) == []  # removed before it returned


@pytest.mark.parametrize("detach", [False, True])
def test_a_failed_build_keeps_the_previous_one_either_way(tmp_path, detach):
    target = tmp_path / "site"
    files.replace_folder(target, _build("old"), {"kind": "site"})

    def failing(work):
        (work / "half.html").write_text("half", "utf-8")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        files.replace_folder(target, failing, {"kind": "site"}, detach_removal=detach)
    assert (target / "page0.html").read_text("utf-8") == "old 0"
    assert _leftovers(target) == []


