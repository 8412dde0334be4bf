"""``scripts/message_assertions.py``: which assertions it lists as pinning a message's wording."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from message_assertions import file_checks, main

SAMPLE = '''
import re
import pytest

def test_a(path, capsys):
    with pytest.raises(ValueError, match=r"cannot read \\(the file\\)"):
        int("x")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        int("x")
    with pytest.raises(ValueError, match="'x'"):
        int("x")
    err = capsys.readouterr().err
    assert "line 3" in err and f"{path} is not UTF-8" in err
    assert "a published sentence" in page_html
    # wording is the interface: docs/x.md
    assert str(path) == "the usage line"
    assert err.startswith("usage: cultivar run")
    assert re.search("no such file", err)
'''


def test_prose_checks_on_messages_are_listed_and_facts_are_not(tmp_path):
    path = tmp_path / "test_sample.py"
    path.write_text(SAMPLE, "utf-8")
    found = [(check.line, check.kind, check.text, check.kept) for check in file_checks(path)]
    assert found == [
        (6, "raises(match=)", "cannot read (the file)", False),
        (13, "in", "{} is not UTF-8", False),
        (16, "==", "the usage line", True),
        (17, ".startswith()", "usage: cultivar run", False),
        (18, "re.search", "no such file", False),
    ]


def test_the_totals_and_a_missing_folder(tmp_path, capsys):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_one.py").write_text(SAMPLE, "utf-8")
    assert main(["--list", str(tmp_path / "tests")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "tests/test_one.py:16 == kept 'the usage line'" in out
    assert out[-3:] == ["message assertions 5", "kept 1", "files 1"]
    # three words in a row: "is not UTF", "the usage line", "no such file"
    assert main(["--words", "3", str(tmp_path / "tests")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "message assertions 3"
    with pytest.raises(SystemExit, match=f"no tests directory at {tmp_path / 'none'}"):
        main([str(tmp_path / "none")])
