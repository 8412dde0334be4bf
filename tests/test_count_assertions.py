"""``scripts/count_assertions.py``: what it counts in a test folder (not collected tests)."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from count_assertions import count_file, main

SAMPLE = '''
import pytest

def test_a():
    assert 1 + 1 == 2  # assert in a comment is not counted
    text = "assert inside a string"
    with pytest.raises(ValueError):
        int("x")
    for value in (1, 2):
        assert value

def test_b():
    pytest.raises(KeyError, {}.__getitem__, "k")
    raises = object()  # a name, not pytest.raises
'''


def test_asserts_and_pytest_raises_are_counted_from_the_syntax_tree(tmp_path):
    path = tmp_path / "test_sample.py"
    path.write_text(SAMPLE, "utf-8")
    assert count_file(path) == (2, 2)


def test_the_totals_cover_every_python_file_below_the_folder(tmp_path, capsys):
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "test_one.py").write_text(SAMPLE, "utf-8")
    (tmp_path / "tests" / "sub" / "helpers.py").write_text("assert True\n", "utf-8")
    assert main([str(tmp_path / "tests")]) == 0
    assert capsys.readouterr().out.splitlines() == ["asserts 3", "pytest.raises 2", "files 2"]


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(SystemExit, match=f"no tests directory at {tmp_path / 'nothing'}"):
        main([str(tmp_path / "nothing")])
