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


# --- read-only: `cultivar query` runs no COPY … TO and writes no file -----------------------

WRITING = {
    "copy to": "COPY (SELECT * FROM t) TO '{out}/copied.csv'",
    "export": "EXPORT DATABASE '{out}/exported'",
    "attach": "ATTACH '{out}/attached.duckdb'",
    "second statement": "SELECT 1; COPY t TO '{out}/second.csv'",
    "set": "SET enable_external_access = true",
    "create": "CREATE TEMP TABLE x AS SELECT 1",
    "pragma": "PRAGMA profile_output = '{out}/profile.json'",
    "install": "INSTALL httpfs",
}


@pytest.mark.parametrize("case", list(WRITING))
def test_a_statement_that_is_not_a_reading_one_is_refused_before_it_runs(database, tmp_path,
                                                                         capsys, case):
    out = tmp_path / "out"
    out.mkdir()
    sql = WRITING[case].format(out=out)
    before = database.read_bytes()
    assert main(["query", sql, "--database", str(database)]) == 1
    err = capsys.readouterr().err
    assert "read-only" in err
    assert err.count("\n") == 1
    assert list(out.iterdir()) == [] and database.read_bytes() == before


@pytest.mark.parametrize("sql", ["EXPLAIN ANALYZE COPY t TO '{out}/explained.csv'",
                                 "SELECT * FROM read_csv('{out}/../other.csv')"])
def test_the_query_connection_reaches_no_other_file(database, tmp_path, capsys, sql):
    """EXPLAIN ANALYZE is a reading statement to DuckDB's parser, and runs what it explains."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "other.csv").write_text("a\n1\n", "utf-8")
    assert main(["query", sql.format(out=out), "--database", str(database)]) == 1
    err = capsys.readouterr().err
    assert "file system operations are disabled by configuration" in err
    assert "(a query reads the database only, and writes no file)" in err
    assert err.count("\n") == 1 and list(out.iterdir()) == []


def test_every_public_view_reads_on_the_query_connection(tmp_path):
    """No view needs a file (an extension to load, say) that the query connection refuses."""
    from cultivar_assets.store.database import Store

    store = Store(tmp_path / "full.duckdb")
    with store.connect():
        pass
    _, views = store.read_only_sql("SELECT view_name FROM duckdb_views() WHERE NOT internal "
                                   "AND schema_name = 'main' ORDER BY 1")
    assert len(views) > 20
    for (view,) in views:
        store.read_only_sql(f'SELECT * FROM "{view}" LIMIT 1')
