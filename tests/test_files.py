"""Output folders are swapped in whole and never replace folders this project did not write."""

from __future__ import annotations

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
