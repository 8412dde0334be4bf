"""`cultivar query`: every value in full, as a wrapped table or as CSV, JSON or Markdown."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pytest

from cultivar_assets.cli import main

LONG = "deu_Latn_Switzerland " + "x" * 150 + " end-of-the-long-value"


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "q.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t (locale VARCHAR, note VARCHAR, n INTEGER)")
        con.execute("INSERT INTO t VALUES (?, ?, 1), ('=1+2', NULL, 2)", [LONG, "a,b \"c\""])
    return path


def run(database, capsys, *options, sql="SELECT * FROM t ORDER BY n") -> str:
    assert main(["query", sql, "--database", str(database), *options]) == 0
    return capsys.readouterr().out


def test_the_table_wraps_long_values_instead_of_cutting_them(database, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")  # it cut cells to "deu_Latn…", even with COLUMNS=250
    out = run(database, capsys, sql="SELECT locale FROM t WHERE n = 1")
    assert "…" not in out
    cells = "".join(ch for ch in out if ch not in "│┃┏┓┗┛┡┩└┘━─┼╇┳┻┬┴╋ \n")
    assert LONG.replace(" ", "") in cells
    assert max(len(line) for line in out.splitlines()) <= 60


def test_csv_is_complete_and_defuses_formulas(database, capsys):
    rows = list(csv.reader(io.StringIO(run(database, capsys, "--format", "csv"))))
    assert rows[0] == ["locale", "note", "n"]
    assert rows[1] == [LONG, 'a,b "c"', "1"]
    assert rows[2][0] != "=1+2" and rows[2][0].endswith("=1+2") and rows[2][1] == ""


def test_json_is_an_array_of_objects(database, capsys):
    assert json.loads(run(database, capsys, "--format", "json")) == [
        {"locale": LONG, "note": 'a,b "c"', "n": 1}, {"locale": "=1+2", "note": None, "n": 2}]


def test_markdown_is_a_table(database, capsys):
    lines = run(database, capsys, "--format", "markdown").splitlines()
    assert lines[0] == "| locale | note | n |" and lines[1] == "|---|---|---|"
    assert "end\\-of\\-the\\-long\\-value" in lines[2] or "end-of-the-long-value" in lines[2]
    assert lines[3].endswith("| NULL | 2 |")
