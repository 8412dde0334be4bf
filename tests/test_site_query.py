"""The Query page in Chromium under ``cultivar serve``: DuckDB-Wasm from the site itself runs the
paper's tables as SQL, shows errors as text, loads translations, downloads formula-safe CSV, and
no request leaves 127.0.0.1 (not even for a query that asks for a URL or an extension).

Needs DuckDB-Wasm in the web cache of the checkout (``cultivar fetch-query-engine``, which runs
npm; ``.ci/run`` does it before the tests); skipped without it. Tests never run npm.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from site_helpers import (
    HOSTILE_MODEL,
    NEEDS_CHROMIUM,
    WEB_CACHE,
    watched_page,
)

from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.query_engine import cached_query_engine

pytestmark = [NEEDS_CHROMIUM, pytest.mark.slow, pytest.mark.skipif(
    cached_query_engine(WEB_CACHE) is None,
    reason=f"DuckDB-Wasm is not in {WEB_CACHE}: run `cultivar fetch-query-engine` from the "
           "checkout (needs npm)")]


@pytest.fixture(scope="module")
def site(tmp_path_factory, hostile_store_copy):
    root = tmp_path_factory.mktemp("query_site")
    store = hostile_store_copy(root)
    summary = build_site(store, root / "site", query_page="cached", web_cache=WEB_CACHE)
    assert summary.notes == ()
    return store, root / "site"


@pytest.fixture(scope="module")
def served(site):
    """``cultivar serve`` on a free port, stopped with SIGTERM afterwards."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "serve",
                                "--directory", str(site[1]), "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "Serving" in process.stdout.readline()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def ready(page, url: str) -> None:
    page.goto(f"{url}/query.html")
    page.locator("#query-app[data-ready=yes]").wait_for(timeout=90_000)


def run(page, sql: str) -> None:
    page.fill("#query-sql", sql)
    page.click("#query-run")
    page.wait_for_function("""() => document.getElementById('query-summary').textContent
        .includes('row') || !document.getElementById('query-error').hidden""")


def result(page) -> tuple[list[str], list[list[str]]]:
    headers = page.locator("#query-result thead th").all_inner_texts()
    rows = [r.locator("td").all_inner_texts() for r in page.locator("#query-result tbody tr").all()]
    return headers, rows


def test_queries_return_the_leaderboard_and_errors_as_text(browser, served, site):
    store, _ = site
    board = store.query("leaderboard")
    with watched_page(browser, accept_downloads=True) as page:
        ready(page, served)
        page.click("button.example[data-example='0']")  # Table 3
        page.wait_for_function("document.getElementById('query-summary').textContent"
                               ".includes('rows')")
        headers, rows = result(page)
        assert headers[:3] == ["model_id", "type", "delta_bleu"]
        assert [r[0] for r in rows] == [r["model_id"] for r in board]  # the leaderboard's rows
        exact = page.locator("#query-result tbody tr > :nth-child(3)").evaluate_all(
            "cells => cells.map(c => c.getAttribute('data-value'))")
        assert [round(float(v), 6) for v in exact] == [round(r["delta_bleu"], 6) for r in board]

        run(page, "SELEC nonsense FROM leaderboard")
        error = page.locator("#query-error")
        assert error.is_visible() and "syntax error" in error.inner_text()

        run(page, "SELECT '<img src=x onerror=alert(1)>' AS html, '=1+1' AS formula, "
                  "-2.5 AS n")
        assert result(page)[1] == [["<img src=x onerror=alert(1)>", "=1+1", "-2.5"]]
        assert page.locator("#query-result img").count() == 0
        with page.expect_download() as download:
            page.click("button[data-download=csv]")
        text = Path(download.value.path()).read_bytes().decode("utf-8")
        assert text == "html,formula,n\r\n<img src=x onerror=alert(1)>,'=1+1,-2.5\r\n"

        for sql in ("SELECT * FROM read_parquet('https://example.com/x.parquet')",
                    "SELECT * FROM 'http://127.0.0.1:9/x.csv'", "LOAD httpfs",
                    "SELECT * FROM read_json('https://example.com/x.json')",
                    "SET enable_external_access = true"):
            run(page, sql)
            assert page.locator("#query-error").is_visible(), sql  # refused, nothing fetched
        run(page, "INSTALL httpfs")  # a no-op in the browser: nothing is fetched either


def test_translations_load_model_by_model(browser, served, site):
    _, folder = site
    slug = model_slug(HOSTILE_MODEL)
    expected = pq.read_table(folder / "downloads" / "translations" / f"{slug}.parquet")
    with watched_page(browser) as page:
        ready(page, served)
        page.select_option("#translations-form select[name=models]", [slug])
        page.click("#translations-form button[type=submit]")
        page.wait_for_function("document.querySelector('#translations-form output')"
                               ".textContent.includes('loaded')")
        run(page, "SELECT model_id, test_set, segment_id, hypothesis, raw_output, source "
                  "FROM translations ORDER BY test_set, segment_id")
        _, rows = result(page)
        want = sorted(expected.to_pylist(), key=lambda r: (r["test_set"], r["segment_id"]))
        assert len(rows) == len(want) == 120
        for got, row in zip(rows, want, strict=True):
            assert got[:5] == [HOSTILE_MODEL, row["test_set"], str(row["segment_id"]),
                               row["hypothesis"], row["raw_output"] or row["hypothesis"]]
            assert got[5] != "NULL"  # joined with the segments (demo: originals shown)


def test_from_file_urls_the_page_says_to_serve_it(browser, site):
    with watched_page(browser) as page:
        start = time.perf_counter()
        page.goto((site[1] / "query.html").as_uri())
        status = page.locator("#query-status").inner_text()
        assert "cultivar serve" in status and "http://127.0.0.1:8000/query.html" in status
        assert time.perf_counter() - start < 30


def error_lines(page) -> list[str]:
    return page.locator("#query-error").inner_text().splitlines()


def test_default_query_runs_on_load_with_rounded_numbers(browser, served, site):
    store, _ = site
    board = store.query("leaderboard")
    with watched_page(browser, accept_downloads=True) as page:
        ready(page, served)  # no click: the default query has run
        page.wait_for_function("document.getElementById('query-summary').textContent"
                               ".includes('rows')")
        headers, rows = result(page)
        assert headers[0] == "model_id" and len(rows) == len(board)
        shown = [r[headers.index("false_negative_rate")] for r in rows]
        assert all(len(v.split(".")[-1]) <= 4 for v in shown), shown  # rounded for reading
        with page.expect_download() as download:
            page.click("button[data-download=csv]")
        text = Path(download.value.path()).read_text("utf-8")
        full = repr(board[0]["false_negative_rate"])
        assert full in text and len(full.split(".")[-1]) > 4  # the download keeps every digit


def test_an_error_shows_once_in_monospace_with_its_caret_and_clears_the_result(
        browser, served):
    with watched_page(browser) as page:
        ready(page, served)
        page.wait_for_function("document.querySelectorAll('#query-result tbody tr').length")
        for sql, token in (("SELECT model_id FROM leaderboard WHERE nonsense_column > 1",
                             "nonsense_column"), ("SELEC nonsense FROM leaderboard", "SELEC")):
            run(page, sql)
            lines = error_lines(page)
            text = "\n".join(lines)
            assert text.count("LINE 1:") == 1 and text.count("^") == 1, text
            line = next(i for i, t in enumerate(lines) if t.startswith("LINE 1:"))
            assert lines[line + 1].index("^") == lines[line].index(token), text
        font = page.locator("#query-error").evaluate("e => getComputedStyle(e).fontFamily")
        assert "monospace" in font
        widths = page.evaluate("""() => {  // the font in use is fixed-width
            const box = document.getElementById('query-error');
            const span = document.createElement('span');
            box.appendChild(span);
            const out = [];
            for (const t of ['iiiiiiiiii', 'WWWWWWWWWW']) {
              span.textContent = t;
              out.push(span.getBoundingClientRect().width);
            }
            span.remove();
            return out; }""")
        assert abs(widths[0] - widths[1]) < 0.5, widths
        assert page.locator("#query-result tbody tr").count() == 0  # the old result is gone
        assert "row" not in page.locator("#query-summary").inner_text()


def test_published_tables_are_read_only(browser, served, site):
    """The published tables are a database file attached READ_ONLY: DuckDB refuses every change
    to them, however the statement is written (a comment first, after another statement,
    qualified, quoted); the reader's own tables are theirs."""
    store, _ = site
    n = len(store.query("leaderboard"))
    with watched_page(browser) as page:
        ready(page, served)
        for sql in ("DROP TABLE leaderboard", "drop table if exists \"leaderboard\"",
                    "/* x */ DROP TABLE leaderboard", "SELECT 1; DROP TABLE leaderboard",
                    "-- a comment\nDROP TABLE published.main.leaderboard",
                    "DELETE FROM leaderboard", "UPDATE leaderboard SET delta_bleu = 0",
                    "INSERT INTO scores SELECT * FROM scores",
                    "WITH t AS (SELECT 1) DELETE FROM leaderboard",
                    "ALTER TABLE leaderboard RENAME TO gone",
                    "CREATE OR REPLACE TABLE published.leaderboard AS SELECT 1 AS x",
                    "DROP TABLE segments"):
            run(page, sql)
            assert "read-only" in page.locator("#query-error").inner_text(), sql
            run(page, "SELECT count(*) AS n FROM leaderboard")
            assert result(page)[1] == [[str(n)]], sql
        run(page, "CREATE TABLE mine AS SELECT * FROM leaderboard")  # the reader's own table
        assert page.locator("#query-error").is_hidden()
        run(page, "DELETE FROM mine")
        assert page.locator("#query-error").is_hidden()
        run(page, "DROP TABLE mine")
        assert page.locator("#query-error").is_hidden()
        # a table of the reader's named like a published one is theirs; dropping it drops it
        run(page, "CREATE TABLE leaderboard AS SELECT 1 AS x")
        assert page.locator("#query-error").is_hidden()
        run(page, "DROP TABLE leaderboard")
        assert page.locator("#query-error").is_hidden()
        run(page, "SELECT count(*) AS n FROM leaderboard")
        assert result(page)[1] == [[str(n)]]


def test_evaluated_against_reported_example_says_which_models_the_paper_has(browser, served,
                                                                            site):
    store, _ = site
    evaluated = {r["model_id"] for r in store.query("leaderboard")}
    reported = {r["model_id"] for r in store.query("site_reported_leaderboard")}
    with watched_page(browser) as page:
        ready(page, served)
        page.get_by_role("button", name="Evaluated here against reported in the paper").click()
        page.wait_for_function("document.querySelector('#query-result thead th:last-child')"
                               "?.textContent === 'in_paper'")
        _, rows = result(page)
        assert {r[0] for r in rows} == evaluated  # every evaluated model, not 0 rows
        for row in rows:
            assert row[-1] == ("yes" if row[0] in reported else
                               "no: the paper's Table 3 has no model with this id")
