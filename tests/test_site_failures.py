"""Models whose latest run failed are on the leaderboard page as failed (step, the error's first
line, time, run id), not missing; scores they still have are marked as from an earlier run
(cultivar_assets/site/failures.py). HTML, the downloads, and the page in Chromium."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime

import pytest
from site_helpers import HOSTILE_MODEL, NEEDS_CHROMIUM, serve, watched_page

from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.site_data import board_rows
from cultivar_assets.store.database import WriteBlock

pytestmark = pytest.mark.usefixtures("shared_site_caches")  # charts and templates: once a session

ERROR = 'RuntimeError: CUDA out of memory <script>alert("e")</script>'
NOW = datetime(2999, 1, 1, 12, 30, 5)  # newer than any finished run
LONG_AGO = datetime(2000, 1, 1)  # older than every stored run: not the latest


def _failure(run_id: str, model_id: str, step: str | None, failed_at: datetime) -> WriteBlock:
    return WriteBlock("record_run_failure", {"run_id": run_id, "job": "evaluate_model",
                                       "model_id": model_id, "step": step, "error": ERROR,
                                       "failed_at": failed_at})


@pytest.fixture(scope="module")
def failing_store(tmp_path_factory, hostile_store_copy):
    root = tmp_path_factory.mktemp("site_failures")
    store = hostile_store_copy(root)  # the copy baseline and a hostile model, scored and aggregated
    store.write([
        _failure("run-copy-1", "copy-source-baseline", "translations", NOW),  # after its run
        _failure("run-new-1", "never-finished", "scores", NOW),  # no run of it ever finished
        _failure("run-old-1", HOSTILE_MODEL, "translations", LONG_AGO),  # its run came later
    ])
    return store


@pytest.fixture(scope="module")
def site_dir(failing_store):
    site = failing_store.path.parent / "site"
    build_site(failing_store, site, query_page="off")
    return site


def test_the_pages_leaderboard_rows_are_the_published_leaderboard_without_its_lists(
        failing_store):
    # the builder makes them from the published table (board_rows) instead of reading the view
    # again; they are what site_leaderboard_rows reads, with a failed model among them
    with failing_store.reader() as reader:
        expected = reader.rows("site_leaderboard_rows")
        made = board_rows(reader.arrow("site_leaderboard"))
    assert [list(row) for row in made] == [list(row) for row in expected]
    assert made == expected
    assert any(row["not_separable_delta_bleu_count"] for row in made)
    assert {row["model_id"] for row in made} >= {"copy-source-baseline", HOSTILE_MODEL}


def _rows(html: str, table_id: str) -> list[str]:
    table = html[html.index(f'<table id="{table_id}"'):]
    body = table[table.index("<tbody>"):table.index("</tbody>")]
    return [row for row in body.split("<tr")[1:]]


def _row(rows: list[str], model_id: str) -> str:
    [row] = [r for r in rows if f'data-value="{model_id}"' in r]
    return row


def test_failed_models_are_shown_as_failed_not_missing(site_dir):
    html = (site_dir / "index.html").read_text("utf-8")
    board = _rows(html, "leaderboard")
    assert len(board) == 3  # two evaluated models and the one that never finished a run

    stale = _row(board, "copy-source-baseline")
    assert 'class="stale" data-run="failed"' in stale
    assert "latest run failed; scores from an earlier run" in stale
    assert re.search(r'<td[^>]*data-value="-?\d', stale)  # its earlier scores are still shown

    never = _row(board, "never-finished")
    assert 'class="failed" data-run="failed"' in never and "failed: no scores" in never
    assert not re.search(r'<td data-value="-?\d', never)  # no values of its own

    assert "data-run" not in _row(board, "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;"
                                         "svg onload=alert(2)&gt;{{7*7}}")  # failed long ago

    failed = _rows(html, "failed-models")
    assert len(failed) == 2
    copy = _row(failed, "copy-source-baseline")
    for text in ("<code>translations</code>", "2999-01-01 12:30:05 UTC", "<code>run-copy-1</code>",
                 "RuntimeError: CUDA out of memory &lt;script&gt;alert(&#34;e&#34;)&lt;/script&gt;",
                 "from an earlier run (finished "):
        assert text in copy, text
    assert "<script>alert(" not in html  # the error stays text
    new = _row(failed, "never-finished")
    assert "<code>scores</code>" in new and "<code>run-new-1</code>" in new and ">none<" in new


def test_the_model_page_says_its_latest_run_failed(site_dir):
    page = (site_dir / "models" / f"{model_slug('copy-source-baseline')}.html").read_text("utf-8")
    note = page[page.index('<p class="run-failed-note"'):]
    note = note[:note.index("</p>")]
    assert "The latest run of this model failed" in note and "run-copy-1" in note
    assert "The scores on this page are from an earlier run, finished " in note
    other = (site_dir / "models" / f"{model_slug(HOSTILE_MODEL)}.html").read_text("utf-8")
    assert "run-failed-note" not in other


def test_the_failures_are_downloadable(site_dir):
    rows = list(csv.DictReader(io.StringIO(
        (site_dir / "downloads" / "failed_models.csv").read_text("utf-8"))))
    assert [(r["model_id"], r["run_id"], r["step"]) for r in rows] == [
        ("copy-source-baseline", "run-copy-1", "translations"),
        ("never-finished", "run-new-1", "scores")]
    assert rows[0]["error"] == ERROR  # a CSV cell, not HTML


@NEEDS_CHROMIUM
def test_failed_rows_in_the_browser(browser, site_dir):
    with serve(site_dir) as url, watched_page(browser) as page:
        page.goto(f"{url}/index.html")
        assert "3 of 3 models shown" in page.locator("form.filters output").inner_text()
        names = page.locator("#leaderboard tbody th").all_inner_texts()
        assert names[-1] == "never-finished failed: no scores"  # no values: sorted last
        stale = page.locator("#leaderboard tbody tr.stale")
        assert stale.count() == 1 and "latest run failed" in stale.inner_text()
        assert stale.locator("a.run-failed").get_attribute("title").startswith(
            "latest run failed in step translations: RuntimeError: CUDA out of memory")
        page.locator("#leaderboard thead th", has_text="Cultivar chrF").locator(
            "button").click()  # the failed row stays last whichever way the table is sorted
        assert page.locator("#leaderboard tbody th").all_inner_texts()[-1].startswith(
            "never-finished")
        stale.locator("a.run-failed").click()
        assert page.url.endswith("#failed-runs")
        table = page.locator("#failed-models")
        assert table.is_visible()
        assert ERROR in table.inner_text()  # shown as text; watched_page: no dialog opened


def test_the_leaderboard_downloads_mark_a_failed_models_earlier_scores(site_dir):
    """The published leaderboard (CSV, JSON) says which rows are scores of a model whose latest
    run failed: the downloads must not present them as current either."""
    import json

    rows = {r["model_id"]: r for r in csv.DictReader(io.StringIO(
        (site_dir / "downloads" / "leaderboard.csv").read_text("utf-8")))}
    assert rows["copy-source-baseline"]["latest_run_failed"] == "True"  # as bools are in the CSV
    assert rows[HOSTILE_MODEL]["latest_run_failed"] == "False"  # its failure predates its run
    records = {r["model_id"]: r for r in json.loads(
        (site_dir / "downloads" / "leaderboard.json").read_text("utf-8"))}
    assert records["copy-source-baseline"]["latest_run_failed"] is True
    assert records[HOSTILE_MODEL]["latest_run_failed"] is False
