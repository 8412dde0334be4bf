"""The built site in a real browser (Debian's Chromium driven by Playwright).

The site is built from the demo data translated by two systems whose names and outputs are
hostile (script tags, attribute breakers, template syntax): everything must show as text, no
dialog may open, no console error may appear, and no request may leave the local server.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import duckdb
import pytest
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import Engine, EngineInfo
from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.metrics.sacrebleu_metrics import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import (
    read_test_sets,
    write_dataset,
    write_reported_results,
    write_translations,
)
from cultivar_assets.translation import translate

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium "
                                "(apt-get install -y chromium; .ci/run installs it)")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAYLOADS = ["<script>alert(1)</script>", "</script><img src=x onerror=alert(1)>",
            '"><svg onload=alert(1)>', "{{7*7}}"]
HOSTILE_MODEL = '<script>alert(1)</script>"><svg onload=alert(2)>{{7*7}}'


class PayloadEngine(Engine):
    """Stands in for a model whose outputs are hostile HTML (raw) around a real translation."""

    name = "payload"
    prompt_kinds = ("source",)

    def info(self) -> EngineInfo:
        return EngineInfo(self.name, "test", None, None)

    def generate(self, requests):
        payloads = [PAYLOADS[i % len(PAYLOADS)] for i in range(len(requests))]
        return [f"<think>{p}</think>{p} {r.source}" for p, r in zip(payloads, requests,
                                                                      strict=True)]


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("site_build")
    registry = engine_registry()
    registry.register("payload", PayloadEngine, overwrite=True)
    try:
        models = write_models_file(root / "models.yaml", [
            COPY_ENTRY,
            {**COPY_ENTRY, "id": "payload-model", "engine": "payload", "type": "LLM",
             "family": "Hostile </script>", "params_total_b": 1.5, "hf_id": "test/payload"},
        ])
        store = Store(root / "site.duckdb")
        fingerprint = write_dataset(store, load_benchmark(DataConfig()))
        test_sets = read_test_sets(store)
        specs = load_models(models)
        for model_id in ("copy-source-baseline", "payload-model"):
            run = translate(specs.get(model_id), test_sets, cache_dir=root / "cache",
                            show_progress_bar=False)
            write_translations(store, run, fingerprint)
    finally:
        registry._entries.pop("payload", None)
    with duckdb.connect(str(store.path)) as con:  # untrusted data can carry any model name
        for table in ("translations", "models", "model_runs"):
            con.execute(f"UPDATE raw.{table} SET model_id = ? WHERE model_id = 'payload-model'",
                        [HOSTILE_MODEL])
    for model_id in ("copy-source-baseline", HOSTILE_MODEL):
        score_model(store, model_id, MetricConfig(bleu_tokenize="13a"))
    aggregate(store)
    write_reported_results(store, [load_models().get(m) for m in load_models()])
    card = "# Card\n\nA *card* with <script>alert(3)</script> and | pipes | {{7*7}}."
    build_site(store, root / "site", card_markdown=card)
    return root / "site"


@pytest.fixture(scope="module")
def server(site_dir):
    handler = functools.partial(QuietHandler, directory=str(site_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    """A page that records console errors, dialogs and every request's host."""
    context = browser.new_context()
    page = context.new_page()
    page.problems = []
    page.hosts = set()
    page.on("console", lambda m: page.problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))

    def record(route):
        page.hosts.add(urlparse(route.request.url).hostname)
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            route.abort()

    context.route("**/*", record)
    yield page
    context.close()
    assert page.problems == []
    assert page.hosts <= {"127.0.0.1"}, page.hosts


def rows(page, table_id):
    return page.locator(f"#{table_id} tbody tr").all()


def test_leaderboard_loads_sorts_and_filters(page, server):
    page.goto(f"{server}/index.html")
    table = page.locator("#leaderboard")
    assert table.locator("caption").is_visible()
    names = table.locator("tbody th").all_inner_texts()
    assert set(names) == {"copy-source-baseline", HOSTILE_MODEL}
    deltas = [float(v.split()[0])  # the value; its interval follows on the next line
              for v in table.locator("tbody tr td:nth-child(5)").all_inner_texts()]
    assert deltas == sorted(deltas, reverse=True)  # the paper's default order: ∆BLEU

    header = table.locator("thead th", has_text="Cultivar chrF")
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "descending"
    values = [float(v.split()[0])
              for v in table.locator("tbody tr td:nth-child(10)").all_inner_texts()]
    assert values == sorted(values, reverse=True)
    header.locator("button").press("Enter")  # keyboard works too
    assert header.get_attribute("aria-sort") == "ascending"
    values = [float(v.split()[0])
              for v in table.locator("tbody tr td:nth-child(10)").all_inner_texts()]
    assert values == sorted(values)

    page.select_option("form.filters select[name=type]", "baseline")
    visible = [r for r in rows(page, "leaderboard") if r.is_visible()]
    assert [r.locator("th").inner_text() for r in visible] == ["copy-source-baseline"]
    assert "1 of 2 models shown" in page.locator("form.filters output").inner_text()
    page.select_option("form.filters select[name=type]", "")
    page.fill("form.filters input[name=min_params]", "1")
    visible = [r for r in rows(page, "leaderboard") if r.is_visible()]
    assert [r.locator("th").inner_text() for r in visible] == [HOSTILE_MODEL]

    reported = page.locator("#reported tbody tr")
    assert reported.count() == 32  # the paper's table, apart from the evaluated one
    assert "Table 3" in page.locator("#reported caption").inner_text()
    assert "tok:13a" in page.locator("ul.signatures").inner_text()


def test_charts_render_with_marks_and_safe_tooltips(page, server):
    page.goto(f"{server}/index.html")
    heatmap = page.locator("#chart-heatmap-bleu svg")
    heatmap.wait_for()
    marks = page.locator("#chart-heatmap-bleu svg g.mark-rect.role-mark path")
    assert marks.count() == 2 * 6  # models × locales
    assert page.locator("#chart-size-bleu svg g.mark-symbol.role-mark path").count() == 1
    for index in range(marks.count()):  # find a cell of the hostile model; read its tooltip
        marks.nth(index).hover()
        tooltip = page.locator("#vg-tooltip-element")
        tooltip.wait_for(state="visible")
        if "svg onload" in tooltip.inner_text():
            break
    assert HOSTILE_MODEL in tooltip.inner_text()  # shown as text ...
    assert tooltip.locator("script, svg, img").count() == 0  # ... not as elements
    svg_text = page.locator("#chart-heatmap-bleu svg").inner_html()
    assert "&lt;script&gt;" in svg_text  # the hostile name is drawn as text
    assert page.locator("script:not([src]):not(.vl-spec)").count() == 0


def test_segment_browser_shows_both_versions_with_highlights(page, server):
    slug = model_slug("copy-source-baseline")
    page.goto(f"{server}/models/{slug}/deu_Latn_Germany.html")
    first = page.locator("article.instance").first
    assert first.locator("h2").inner_text() == "deu_Latn_Germany_0"
    cells = first.locator("table.pair tbody tr").first.locator("td")
    assert "Flamengo" in cells.nth(0).inner_text() and "Bayern" in cells.nth(1).inner_text()
    assert first.locator("mark.changed").count() >= 4
    assert "Flamengo" in first.locator("mark.changed").all_inner_texts()[0]
    page.fill("input.instance-filter", "Basel")
    assert page.locator("article.instance:visible").count() == 0
    page.fill("input.instance-filter", "3")
    assert page.locator("article.instance:visible").count() >= 1


def test_hostile_names_and_outputs_stay_text(page, server):
    page.goto(f"{server}/index.html")
    link = page.get_by_role("link", name=HOSTILE_MODEL)
    link.click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == HOSTILE_MODEL
    assert "Hostile </script>" in page.locator("dl.facts").inner_text()
    page.locator(".locale-links a").first.click()
    page.wait_for_load_state()
    raw = page.locator("tr.raw pre").all_inner_texts()
    assert any("<think><script>alert(1)</script></think>" in text for text in raw)
    assert any("{{7*7}}" in text for text in raw)
    hypotheses = page.locator("tr.hyp").all_inner_texts()
    assert any('"><svg onload=alert(1)>' in text for text in hypotheses)
    assert "reasoning_block" in page.locator("p.rules").first.inner_text()
    assert page.locator("img[src=x], svg[onload]").count() == 0
    page.check("input.raw-filter")
    assert page.locator("article.instance:visible").count() == 12  # every raw output differs

    page.goto(f"{server}/dataset.html")
    card = page.locator("div.card").inner_text()
    assert "<script>alert(3)</script>" in card and "{{7*7}}" in card


def test_site_works_from_file_urls(browser, site_dir):
    context = browser.new_context()
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto((site_dir / "index.html").as_uri())
    page.locator("#chart-heatmap-bleu svg").wait_for()
    page.locator("#leaderboard thead th button").first.click()
    page.goto((site_dir / "locales.html").as_uri())
    assert page.locator("#locale-deltas tbody tr").count() == 6
    context.close()
    assert problems == []


def test_downloads_are_linked_and_complete(site_dir):
    board = json.loads((site_dir / "downloads" / "leaderboard.json").read_text())
    assert {row["model_id"] for row in board} == {"copy-source-baseline", HOSTILE_MODEL}
    assert (site_dir / "downloads" / "leaderboard.csv").read_text().startswith("model_id,")
    jsonl = site_dir / "downloads" / "translations" / f"{model_slug(HOSTILE_MODEL)}.jsonl"
    assert len(jsonl.read_text().splitlines()) == 120
    with duckdb.connect(str(site_dir / "downloads" / "cultivar.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM leaderboard").fetchone()[0] == 2
    import pyarrow.parquet as pq

    assert pq.read_table(site_dir / "downloads" / "scores.parquet").num_rows == 2 * 10 * 2
    shutil.copytree(site_dir, site_dir.parent / "copy")  # self-contained: a plain copy works


def test_real_data_sites_do_not_show_flores_text(site_dir, tmp_path):
    """Outside the demo, original FLORES sentences stay off the public pages and downloads."""
    store = Store(site_dir.parent / "site.duckdb")
    out = tmp_path / "public"
    build_site(store, out, show_originals=False, include_database=False)
    page = (out / "locales" / "deu_Latn_Germany.html").read_text()
    assert "Flamengo" not in page and "Bayern" in page  # localised side stays, highlighted
    assert "not shown on public pages" in page
    segments = (out / "models" / "copy-source-baseline" / "deu_Latn_Germany.html").read_text()
    assert "Lucas Moreira" not in segments  # not even as the copy baseline's "translation"
    assert "Jonas Becker" in segments
    rows = [json.loads(line) for line in
            (out / "downloads" / "translations" / "copy-source-baseline.jsonl").open()]
    flores = [r for r in rows if r["test_set"].startswith("flores_")]
    assert flores and all(r["source"] is None and "Moreira" not in r["hypothesis"]
                          for r in flores)
    assert not (out / "downloads" / "cultivar.duckdb").exists()
    assert "cultivar.duckdb" not in (out / "index.html").read_text()
