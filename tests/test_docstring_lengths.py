"""scripts/docstring_lengths.py counts a module docstring's lines as written in the file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("docstring_lengths",
                                                  ROOT / "scripts" / "docstring_lengths.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lines_as_written_and_modules_without_a_docstring_left_out(tmp_path, capsys):
    script = _script()
    (tmp_path / "one.py").write_text('"""One line."""\nx = 1\n')
    (tmp_path / "three.py").write_text('"""First.\n\nThird.\n"""\n')
    (tmp_path / "none.py").write_text("x = 1\n")
    (tmp_path / "string_later.py").write_text('x = 1\n"""Not a docstring."""\n')
    (tmp_path / "empty.py").write_text("")
    assert script.docstring_lengths([tmp_path]) == {tmp_path / "one.py": 1,
                                                    tmp_path / "three.py": 4}
    assert script.main(["--under", str(tmp_path), "--limit", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("1 of 2 ") and out[-1].endswith(" 3 lines")
    assert out[0].split()[0] == "4" and out[0].endswith("three.py")


def test_a_path_that_does_not_exist_is_refused(tmp_path, capsys):
    assert _script().main(["--under", str(tmp_path / "gone")]) == 2
    assert str(tmp_path / "gone") in capsys.readouterr().err
