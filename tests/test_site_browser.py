"""The built site in a real browser (Debian's Chromium driven by Playwright).

Built from the demo data translated by two systems whose names and outputs are hostile (see
``site_helpers``): sorting, filters, the segment browser and the compare view work; everything
shows as text; no dialog opens, no console error appears and no request leaves 127.0.0.1; the
site works from ``file://``.
"""

from __future__ import annotations

import csv
import io
import json
import shutil

import duckdb
import pyarrow.parquet as pq
import pytest
from site_helpers import (
    HOSTILE_FAMILY,
    HOSTILE_MODEL,
    NEEDS_CHROMIUM,
    serve,
    watched_page,
    widen_store,
)

from cultivar_assets.engines.outputs import SUBMITTED_PREFIX
from cultivar_assets.metrics.bootstrap import (
    BootstrapConfig,
    difference_interval,
    paired_bootstrap,
)
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import stats_from_table
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.shards import decode_shard
from cultivar_assets.store.database import Store

pytestmark = [NEEDS_CHROMIUM, pytest.mark.usefixtures("shared_site_caches")]
CARD = "# Card\n\nA *card* with <script>alert(3)</script> and | pipes | {{7*7}}."


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory, hostile_store_copy):
    root = tmp_path_factory.mktemp("site_build")
    store = hostile_store_copy(root)
    summary = build_site(store, root / "site", card_markdown=CARD, query_page="off")
    assert summary.notes == ("the Query page was left out: site.query_page is off",)
    return root / "site"


@pytest.fixture(scope="module")
def server(site_dir):
    with serve(site_dir) as url:
        yield url


@pytest.fixture
def page(browser, server):
    with watched_page(browser) as page:
        yield page


def column(page, table_id: str, header: str) -> list[str]:
    """The texts of one column, found by its header (the Rank column is optional)."""
    headers = page.locator(f"#{table_id} thead th").all_inner_texts()
    index = next(i for i, h in enumerate(headers)
                 if " ".join(h.split()).rstrip(" ▲▼") == header) + 1
    return page.locator(f"#{table_id} tbody tr > :nth-child({index})").all_inner_texts()


def number(text: str) -> float:
    return float(text.split()[0].replace("−", "-"))


def test_leaderboard_loads_sorts_and_filters(page, server):
    page.goto(f"{server}/index.html")
    table = page.locator("#leaderboard")
    assert "sorted by ∆BLEU" in page.locator("#leaderboard-caption").inner_text()
    assert set(column(page, "leaderboard", "Model")) == {"copy-source-baseline", HOSTILE_MODEL}
    deltas = [number(v) for v in column(page, "leaderboard", "∆BLEU")]
    assert deltas == sorted(deltas, reverse=True)  # the paper's default order: ∆BLEU

    header = table.locator("thead th", has_text="Cultivar chrF")
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "descending"
    values = [number(v) for v in column(page, "leaderboard", "Cultivar chrF")]
    assert values == sorted(values, reverse=True)
    header.locator("button").press("Enter")  # keyboard works too
    assert header.get_attribute("aria-sort") == "ascending"
    values = [number(v) for v in column(page, "leaderboard", "Cultivar chrF")]
    assert values == sorted(values)

    page.select_option("form.filters select[name=type]", "baseline")
    visible = [r for r in page.locator("#leaderboard tbody tr").all() if r.is_visible()]
    assert [r.locator("th").inner_text() for r in visible] == ["copy-source-baseline"]
    assert "1 of 2 models shown" in page.locator("form.filters output").inner_text()
    page.select_option("form.filters select[name=type]", "")
    page.fill("form.filters input[name=min_params]", "1")
    visible = [r for r in page.locator("#leaderboard tbody tr").all() if r.is_visible()]
    assert [r.locator("th").inner_text() for r in visible] == [HOSTILE_MODEL]

    reported = page.locator("#reported tbody tr")
    assert reported.count() == 32  # the paper's table, apart from the evaluated one
    assert "Table 3" in page.locator("#reported caption").inner_text()
    assert "tok:13a" in page.locator("ul.signatures").inner_text()
    links = page.locator("p.table-downloads a").all()
    assert {link.get_attribute("href") for link in links} >= {
        "downloads/leaderboard.csv", "downloads/leaderboard.json"}


def test_charts_render_with_marks_and_safe_tooltips(page, server):
    page.goto(f"{server}/index.html")
    heatmap = page.locator("#chart-heatmap-bleu svg")
    heatmap.wait_for()
    marks = page.locator("#chart-heatmap-bleu svg g.mark-rect.role-mark path")
    assert marks.count() == 2 * 6  # models × locales
    page.locator("#chart-size-bleu svg").wait_for()
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
    assert page.locator("script:not([src])").count() == 0  # no inline script at all


def test_the_charts_script_loads_after_the_page_is_interactive(page, server):
    """Vega's bundle (0.9 MB) is loaded once the DOM is ready, not parsed before it: the
    leaderboard sorts and filters before the charts are drawn; every chart is drawn then."""
    page.add_init_script("document.addEventListener('DOMContentLoaded', () => {"
                         " window.vegaAtReady = typeof window.vegaEmbed; });")
    for name in ("index.html", "locales.html"):
        page.goto(f"{server}/{name}")
        charts = page.locator("div.vega[data-chart]")
        assert charts.count() >= 1
        for index in range(charts.count()):
            charts.nth(index).locator("svg").first.wait_for()
        assert page.evaluate("window.vegaAtReady") == "undefined", name


def test_segment_browser_shows_both_versions_with_highlights(page, server):
    slug = model_slug("copy-source-baseline")
    page.goto(f"{server}/browse.html#model={slug}&locale=deu_Latn_Germany")
    first = page.locator("article.instance").first
    first.wait_for()
    assert first.locator("h2").inner_text() == "deu_Latn_Germany_0"
    cells = first.locator("table.pair tbody tr").first.locator("td")
    assert "Flamengo" in cells.nth(0).inner_text() and "Bayern" in cells.nth(1).inner_text()
    assert first.locator("mark.changed").count() >= 4
    assert "Flamengo" in first.locator("mark.changed").all_inner_texts()[0]
    translation = first.locator("tr.hyp td")  # the copy baseline "translates" the source
    assert "Flamengo" in translation.nth(0).inner_text()
    assert "Bayern" in translation.nth(1).locator("mark.changed").all_inner_texts()[0]
    assert "12 of 12 instances shown" in page.locator(".browser-controls output").inner_text()
    page.fill("input.instance-filter", "Basel")
    assert page.locator("article.instance:visible").count() == 0
    page.fill("input.instance-filter", "3")
    assert page.locator("article.instance:visible").count() >= 1
    page.fill("input.instance-filter", "")
    page.select_option("#browser-pick select[name=locale]", "hin_Deva_US")  # another shard
    page.wait_for_function("document.querySelector('article.instance h2').textContent"
                           ".startsWith('hin_Deva_US')")
    assert "locale=hin_Deva_US" in page.url


def test_compare_view_puts_two_models_side_by_side(page, server):
    a, b = model_slug("copy-source-baseline"), model_slug(HOSTILE_MODEL)
    page.goto(f"{server}/compare.html#a={a}&b={b}")
    rows = page.locator("#compare-table tbody tr")
    rows.first.wait_for()
    assert rows.count() == 6
    headers = page.locator("#compare-table thead th").all_inner_texts()
    assert f"∆BLEU: {HOSTILE_MODEL}" in headers  # the hostile id as text in a header
    link = rows.first.locator("a")
    link.click()
    page.locator("article.instance").first.wait_for()
    hyp_rows = page.locator("article.instance").first.locator("tr.hyp")
    assert hyp_rows.count() == 2  # both models' translations of the instance
    assert HOSTILE_MODEL in hyp_rows.nth(1).locator("th").inner_text()


def test_hostile_names_and_outputs_stay_text(page, server):
    page.goto(f"{server}/index.html")
    link = page.get_by_role("link", name=HOSTILE_MODEL)
    link.click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == HOSTILE_MODEL
    assert HOSTILE_FAMILY in page.locator("dl.facts").inner_text()
    page.locator(".locale-links a").first.click()
    page.locator("article.instance").first.wait_for()
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
    page.goto(f"{server}/query.html")
    assert "left out" in page.locator("main").inner_text()


def test_a_request_leaving_the_machine_is_recorded_aborted_and_fails_the_page(browser, server):
    """``watched_page`` intercepts only requests that go neither to the local server nor to a
    file: one to another host is recorded and aborted, and leaving the page fails on it."""
    with (pytest.raises(AssertionError, match=r"example\.com|Failed to load"),
          watched_page(browser) as page):
        page.goto(f"{server}/index.html")
        outcome = page.evaluate("fetch('http://example.com/x').then(() => 'loaded', "
                                "() => 'aborted')")
        hosts = set(page.hosts)
    assert outcome == "aborted"
    assert hosts == {"example.com"}  # the local server's requests were not intercepted


def test_site_works_from_file_urls(browser, site_dir):
    with watched_page(browser) as page:
        page.goto((site_dir / "index.html").as_uri())
        page.locator("#chart-heatmap-bleu svg").wait_for()  # chart shards load from disk
        page.locator("#leaderboard thead th button").first.click()
        page.goto((site_dir / "locales.html").as_uri())
        assert page.locator("#locale-deltas tbody tr").count() == 6
        page.goto((site_dir / "browse.html").as_uri() + "#locale=spa_Latn_Spain")
        page.locator("article.instance").first.wait_for()  # so does the segment browser
        assert page.locator("article.instance").count() == 12


def test_downloads_are_linked_and_complete(site_dir):
    board = json.loads((site_dir / "downloads" / "leaderboard.json").read_text())
    assert {row["model_id"] for row in board} == {"copy-source-baseline", HOSTILE_MODEL}
    text = (site_dir / "downloads" / "leaderboard.csv").read_text()
    assert text.startswith("model_id,")
    families = {row["family"] for row in csv.DictReader(io.StringIO(text))}
    assert "'" + HOSTILE_FAMILY in families  # a formula opens as text in a spreadsheet
    translations = pq.read_table(site_dir / "downloads" / "translations"
                                 / f"{model_slug(HOSTILE_MODEL)}.parquet")
    assert translations.num_rows == 120
    assert set(translations["model_id"].to_pylist()) == {HOSTILE_MODEL}

    with duckdb.connect(str(site_dir / "downloads" / "cultivar.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM leaderboard").fetchone()[0] == 2
        assert con.execute("SELECT count(*) FROM translations").fetchone()[0] == 240
    assert pq.read_table(site_dir / "downloads" / "scores.parquet").num_rows == 2 * 10 * 2
    for name in ("models/copy-source-baseline.scores", "locales/deu_Latn_Germany.deltas",
                 "locale_deltas", "rank_agreement", "annotation_summary"):
        assert (site_dir / "downloads" / f"{name}.csv").is_file()
        assert isinstance(json.loads((site_dir / "downloads" / f"{name}.json").read_text()),
                          list)
    shutil.copytree(site_dir, site_dir.parent / "copy")  # self-contained: a plain copy works


def test_real_data_sites_do_not_show_flores_text(site_dir, tmp_path):
    """Outside the demo, original FLORES sentences stay off the public pages and downloads."""
    store = Store(site_dir.parent / "site.duckdb")
    out = tmp_path / "public"
    build_site(store, out, show_originals=False, include_database=False, query_page="off")
    page = (out / "locales" / "deu_Latn_Germany.html").read_text()
    assert "Flamengo" not in page and "Bayern" in page  # localised side stays, highlighted
    assert "not shown on public pages" in page
    everything = b"".join(p.read_bytes() for p in out.rglob("*.js") if "data" in p.parts)
    shards = [decode_shard(p.read_bytes())[1] for p in (out / "data").rglob("*.js")]
    text = json.dumps(shards, ensure_ascii=False)
    assert "Lucas Moreira" not in text and "Flamengo" not in text  # not in any shard either
    assert "Jonas Becker" in text and everything
    rows = pq.read_table(out / "downloads" / "translations" / "copy-source-baseline.parquet")
    flores = [r for r in rows.to_pylist() if r["test_set"].startswith("flores_")]
    assert flores and all("Moreira" not in r["hypothesis"] for r in flores)
    segments = pq.read_table(out / "downloads" / "segments.parquet").to_pylist()
    assert all(r["source"] is None and r["reference"] is None
               for r in segments if r["test_set"].startswith("flores_"))
    assert not (out / "downloads" / "cultivar.duckdb").exists()
    assert "cultivar.duckdb" not in (out / "index.html").read_text()


# ---- the leaderboard at many models ----------------------------------------------------------

# two long names alike but for their end (a truncated name would make them the same)
TWINS = ["google/gemma-3-270m-fewshot-instruct-q4", "google/gemma-3-270m-fewshot-instruct-q8"]
WIDE_NAMES = [*TWINS, *(f"org-model-{m:03d}-instruct" for m in range(28))]


@pytest.fixture(scope="module")
def wide_site(site_dir, tmp_path_factory):
    """The demo site's database plus 30 more models (copies: see ``widen_store``), built
    without reported results: a 32-model leaderboard."""
    root = tmp_path_factory.mktemp("wide_site")
    shutil.copyfile(site_dir.parent / "site.duckdb", root / "site.duckdb")
    store = widen_store(Store(root / "site.duckdb"), "copy-source-baseline", WIDE_NAMES)
    with duckdb.connect(str(store.path)) as con:
        con.execute("DELETE FROM raw.reported_results")
        # one twin's outputs were submitted (its row carries the "outputs submitted" tag)
        con.execute("UPDATE raw.models SET engine = 'outputs' WHERE model_id = ?", [TWINS[0]])
        con.execute("UPDATE raw.model_runs SET engine = 'outputs', engine_version = ? "
                    "WHERE model_id = ?", [f"{SUBMITTED_PREFIX}sacre-harness 1.0; digest x",
                                           TWINS[0]])
    build_site(store, root / "site", query_page="off")
    return root / "site"


def board_geometry(page) -> dict:
    return page.evaluate("""() => {
      const wrap = document.querySelector('.table-wrap.board');
      const table = document.getElementById('leaderboard');
      // a row whose name is of ordinary length (a long one wraps: names are never cut)
      const row = table.querySelector('tbody th[data-value="org-model-000-instruct"]').parentNode;
      const line = parseFloat(getComputedStyle(row.cells[1]).lineHeight);
      return {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
              wrap: wrap.clientWidth, table: table.scrollWidth,
              row: row.getBoundingClientRect().height, line: line};
    }""")


def test_default_sort_is_shown(page, server):
    page.goto(f"{server}/index.html")
    header = page.locator("#leaderboard thead th", has_text="∆BLEU").first
    assert header.get_attribute("aria-sort") == "descending"
    arrow = header.locator("button").evaluate(
        "b => getComputedStyle(b, '::after').content")
    assert "▼" in arrow  # shown, not only announced
    others = page.locator("#leaderboard thead th[aria-sort=descending], "
                          "#leaderboard thead th[aria-sort=ascending]")
    assert others.count() == 1


def test_text_columns_sort_ascending_first(page, server):
    page.goto(f"{server}/index.html")
    header = page.locator("#leaderboard thead th", has_text="Model")
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    names = column(page, "leaderboard", "Model")
    assert names == sorted(names, key=str.lower)
    number_header = page.locator("#leaderboard thead th", has_text="FN rate")
    number_header.locator("button").click()
    assert number_header.get_attribute("aria-sort") == "descending"  # numbers: best first


def test_search_sort_and_filters_live_in_the_hash(page, server):
    page.goto(f"{server}/index.html")
    page.fill("form.filters input[name=q]", "COPY")
    visible = [r.locator("th").inner_text() for r in page.locator("#leaderboard tbody tr").all()
               if r.is_visible()]
    assert visible == ["copy-source-baseline"]
    assert "q=COPY" in page.url
    page.fill("form.filters input[name=q]", "")
    page.locator("#leaderboard thead th", has_text="Cultivar BLEU").locator("button").click()
    assert "sort=cultivar_bleu&dir=descending" in page.url
    page.select_option("form.filters select[name=type]", "baseline")
    assert "type=baseline" in page.url
    page.go_back()  # the filter goes, the sort stays
    page.wait_for_function("!location.hash.includes('type=')")
    assert page.locator("form.filters select[name=type]").input_value() == ""
    assert page.locator("#leaderboard tbody tr:visible").count() == 2
    header = page.locator("#leaderboard thead th", has_text="Cultivar BLEU")
    assert header.get_attribute("aria-sort") == "descending"
    page.go_back()  # back to the default sort
    page.wait_for_function("!location.hash.includes('sort=')")
    assert header.get_attribute("aria-sort") == "none"
    delta = page.locator("#leaderboard thead th", has_text="∆BLEU").first
    assert delta.get_attribute("aria-sort") == "descending"
    # a shared address opens the same view; an edited hash changes it
    page.goto(f"{server}/index.html#sort=model_id&dir=descending&q=e&type=LLM")
    assert page.locator("#leaderboard thead th", has_text="Model").get_attribute(
        "aria-sort") == "descending"
    assert page.locator("form.filters input[name=q]").input_value() == "e"
    assert [r.locator("th").inner_text() for r in page.locator("#leaderboard tbody tr").all()
            if r.is_visible()] == [HOSTILE_MODEL]
    page.evaluate("location.hash = '#type=baseline'")
    page.wait_for_function("document.querySelector('form.filters select[name=type]').value"
                           " === 'baseline'")
    assert "1 of 2 models shown" in page.locator("form.filters output").inner_text()
    page.goto(f"{server}/index.html#sort=nonsense&q=%E0%A4%A")  # a broken hash: the defaults
    assert delta.get_attribute("aria-sort") == "descending"


def test_not_separable_list_opens_by_keyboard(page, server):
    page.goto(f"{server}/index.html")
    summary = page.locator("#leaderboard details.separable summary").first
    popover = page.locator("#leaderboard details.separable .popover").first
    assert not popover.is_visible()
    summary.focus()
    page.keyboard.press("Enter")
    assert popover.is_visible()
    # the names come from the separable shard (data/separable.js), loaded on first opening
    page.wait_for_function("""() => document.querySelector('#leaderboard details.separable '
        + '.popover').textContent.startsWith('Not separable from: ')""")
    model = summary.locator("xpath=..").get_attribute("data-separable")
    names = popover.inner_text().removeprefix("Not separable from: ").split(", ")
    assert names and model not in names and all(names)
    summary.click()  # a click closes it again
    assert not popover.is_visible()


def test_intervals_on_demand_and_remembered(browser, server):
    with watched_page(browser) as page:
        page.goto(f"{server}/index.html")
        interval = page.locator("#leaderboard .interval").first
        assert not interval.is_visible()
        page.check("form.filters input[name=intervals]")
        assert interval.is_visible() and interval.inner_text().strip().startswith("[")
        page.reload()
        assert page.locator("form.filters input[name=intervals]").is_checked()
        assert page.locator("#leaderboard .interval").first.is_visible()


def test_paper_notes_are_with_the_reported_figures(page, server):
    page.goto(f"{server}/index.html")
    assert "printed" not in page.locator("#averages-table3").inner_text()
    notes = page.locator("section[aria-labelledby=reported-heading] #paper-notes-table3")
    assert "the paper's printed Average of this column" in notes.inner_text()


@pytest.mark.parametrize("width", [1280, 1440, 1920])
def test_wide_leaderboard_fits_with_one_line_rows(browser, wide_site, width):
    with watched_page(browser, viewport={"width": width, "height": 1000}) as page:
        page.goto((wide_site / "index.html").as_uri())
        box = board_geometry(page)
        assert box["table"] <= box["wrap"], box  # every column, n included, in view
        assert box["page"] <= box["viewport"], box
        assert box["row"] < 2 * box["line"], box  # one line per model
        assert page.locator("#leaderboard tbody tr").count() == 32
        rows_in_view = page.evaluate("""() => {  // a screenful of the table: rows in view
            document.querySelector('.table-wrap.board').scrollIntoView();
            return [...document.querySelectorAll('#leaderboard tbody tr')]
              .filter(r => r.getBoundingClientRect().bottom <= innerHeight).length; }""")
        assert rows_in_view >= 20, rows_in_view
        # the header stays in view as the page scrolls: no box of its own to scroll as well
        page.locator("#leaderboard tbody tr").last.scroll_into_view_if_needed()
        top = page.locator("#leaderboard thead th").first.bounding_box()
        assert abs(top["y"]) <= 1, top
        assert page.locator(".table-wrap.board").evaluate(
            "w => w.scrollHeight <= w.clientHeight + 1")
        text = page.locator("main").inner_text()
        assert "materialise" not in text and "asset" not in text  # no operator instructions
        # a table that does not fit after all (narrowed here) scrolls in its box again
        page.evaluate("document.querySelector('main').style.maxWidth = '40rem';"
                      "dispatchEvent(new Event('resize'))")
        box = board_geometry(page)
        assert box["table"] > box["wrap"] and box["page"] <= box["viewport"], box


def test_narrow_screen_scrolls_the_table_not_the_page(browser, wide_site):
    with watched_page(browser, viewport={"width": 390, "height": 844}, has_touch=True,
                      is_mobile=True) as page:
        page.goto((wide_site / "index.html").as_uri())
        box = board_geometry(page)
        assert box["page"] <= box["viewport"], box  # the page does not scroll sideways ...
        assert box["table"] > box["wrap"]  # ... the table does, inside its box
        name = page.locator("#leaderboard tbody th").first
        before = name.bounding_box()["x"]
        page.locator(".table-wrap.board").evaluate("w => { w.scrollLeft = w.scrollWidth; }")
        after = name.bounding_box()
        assert abs(after["x"] - before) < 1 and after["width"] > 40  # the model stays in view
        summary = page.locator("#leaderboard details.separable summary").first
        summary.tap()  # the not-separable list by touch
        assert page.locator("#leaderboard details.separable .popover").first.is_visible()


# ---- the leaderboard for readers at 390, 1440 and 1920 px -------------------------------------

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
WIDTHS = {390: PHONE, 1440: {"viewport": {"width": 1440, "height": 900}},
          1920: {"viewport": {"width": 1920, "height": 1080}}}


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_model_names_are_whole_and_the_delta_comes_first(browser, wide_site, width):
    """No name is cut (two names alike but for their end stay two names) and each has its
    tooltip; on a phone the model and its ∆BLEU are in view before any sideways scrolling."""
    with watched_page(browser, **WIDTHS[width]) as page:
        page.goto((wide_site / "index.html").as_uri())
        names = page.locator("#leaderboard tbody th").evaluate_all("""ths => ths.map(th => ({
            name: th.getAttribute('data-value'), title: th.title,
            cut: th.scrollWidth > th.clientWidth + 1 ||
                 [...th.querySelectorAll('a')].some(a => a.scrollWidth > a.clientWidth + 1),
            text: th.querySelector('a') ? th.querySelector('a').innerText : th.innerText}))""")
        assert {n["name"] for n in names} >= set(TWINS)
        for n in names:
            assert not n["cut"] and n["title"] == n["name"], n
            assert n["text"].replace("\n", "") == n["name"], n
        tag = page.locator("#leaderboard tbody th small.submitted")  # never cut either
        assert tag.count() == 1 and tag.inner_text().startswith("outputs submitted")
        assert tag.evaluate("t => t.scrollWidth <= t.clientWidth + 1 && "
                            "t.getBoundingClientRect().right <= "
                            "t.closest('th').getBoundingClientRect().right + 1")
        headers = page.locator("#leaderboard thead th").all_inner_texts()
        assert [" ".join(h.split()).rstrip(" ▲▼") for h in headers[:3]] == [
            "Model", "∆BLEU", "∆chrF"]
        delta = page.locator("#leaderboard thead th").nth(1).bounding_box()
        assert delta["x"] + delta["width"] <= width, delta


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_filters_fold_on_a_phone_and_captions_fit(browser, server, width):
    with watched_page(browser, **WIDTHS[width]) as page:
        page.goto(f"{server}/index.html")
        form = page.locator("form.filters[data-table=leaderboard]").bounding_box()
        family = page.locator("form.filters select[name=family]")
        if width == 390:
            assert form["height"] < 0.15 * 844, form  # the search, and the rest folded
            assert not family.is_visible()
            page.locator("details.more-filters > summary").tap()
            assert family.is_visible()
        else:
            assert family.is_visible()
        captions = page.locator(".table-wrap caption:not(.visually-hidden)").evaluate_all(
            "cs => cs.map(c => c.getBoundingClientRect().right)")
        assert captions and all(right <= width for right in captions), captions
        # a filter in force is never folded away, even on a phone
        page.goto(f"{server}/index.html#type=baseline")
        page.reload()
        assert family.is_visible()


def test_no_model_matching_says_so_and_clears_the_filters(page, server):
    page.goto(f"{server}/index.html#type=baseline&q=no-such-model")
    message = page.locator("p.no-match")
    assert message.is_visible() and "No model matches" in message.inner_text()
    assert page.locator("#leaderboard tbody tr:visible").count() == 0
    message.get_by_role("button", name="Clear the search and filters").click()
    assert message.is_hidden()
    assert page.locator("#leaderboard tbody tr:visible").count() == 2
    assert page.locator("form.filters input[name=q]").input_value() == ""
    assert "q=" not in page.url and "type=" not in page.url


def test_escape_closes_the_not_separable_list(page, server):
    page.goto(f"{server}/index.html")
    summary = page.locator("#leaderboard details.separable summary").first
    popover = page.locator("#leaderboard details.separable .popover").first
    summary.focus()
    page.keyboard.press("Enter")
    assert popover.is_visible()
    page.keyboard.press("Escape")
    assert not popover.is_visible()
    assert summary.evaluate("s => document.activeElement === s")


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_long_board_more_button_downloads_and_lists_do_not_overlap(browser, long_site, width):
    """Past 100 models: "Show … more" and "Download this table" do not overlap, and the long
    "not separable" list of the last row shown stays inside the table's box (or the window)."""
    with watched_page(browser, **WIDTHS[width]) as page:
        page.goto((long_site / "index.html").as_uri())
        more = page.locator("button.more-rows").bounding_box()
        downloads = page.locator(".table-wrap.board ~ .table-downloads").first.bounding_box()
        assert more["y"] + more["height"] <= downloads["y"], (more, downloads)
        page.locator(".table-wrap.board").evaluate("w => { w.scrollTop = w.scrollHeight; }")
        last = page.locator("#leaderboard tbody tr").last
        last.scroll_into_view_if_needed()
        page.evaluate("scrollBy(0, 0)")
        last.locator("details.separable summary").click()
        popover = last.locator("details.separable .popover")
        page.wait_for_function("p => p.textContent.startsWith('Not separable from: ')",
                               arg=popover.element_handle())
        box = popover.evaluate("""p => {
            const r = p.getBoundingClientRect(), w = p.closest('.table-wrap');
            const scrolls = getComputedStyle(w).overflowY !== 'visible';
            const a = scrolls ? w.getBoundingClientRect() : {top: 0, bottom: innerHeight};
            return {top: r.top, bottom: r.bottom, areaTop: Math.max(a.top, 0),
                    areaBottom: Math.min(a.bottom, innerHeight)};
        }""")
        assert box["areaTop"] - 1 <= box["top"] and box["bottom"] <= box["areaBottom"] + 1, box


# ---- segments and compare follow the hash ----------------------------------------------------

def first_instance(page) -> str:
    return page.locator("article.instance h2").first.inner_text()


def test_segment_browser_follows_the_hash(page, server):
    page.goto(f"{server}/browse.html#locale=deu_Latn_Germany")
    page.wait_for_function("document.querySelector('article.instance h2')")
    assert first_instance(page).startswith("deu_Latn_Germany")
    page.select_option("#browser-pick select[name=locale]", "spa_Latn_Spain")
    page.wait_for_function("document.querySelector('article.instance h2').textContent"
                           ".startsWith('spa_Latn_Spain')")
    assert "locale=spa_Latn_Spain" in page.url
    page.go_back()  # the URL and the view go back together
    page.wait_for_function("document.querySelector('article.instance h2').textContent"
                           ".startsWith('deu_Latn_Germany')")
    assert "locale=deu_Latn_Germany" in page.url
    assert page.locator("#browser-pick select[name=locale]").input_value() == "deu_Latn_Germany"
    page.go_forward()
    page.wait_for_function("document.querySelector('article.instance h2').textContent"
                           ".startsWith('spa_Latn_Spain')")
    page.evaluate("location.hash = '#locale=hin_Deva_US'")  # an edited address
    page.wait_for_function("document.querySelector('article.instance h2').textContent"
                           ".startsWith('hin_Deva_US')")
    assert page.locator("#browser-pick select[name=locale]").input_value() == "hin_Deva_US"


def test_compare_follows_the_hash_has_an_overall_row_and_refuses_one_model(page, server):
    a, b = model_slug("copy-source-baseline"), model_slug(HOSTILE_MODEL)
    page.goto(f"{server}/compare.html#a={a}&b={b}")
    overall = page.locator("#compare-table tfoot tr")
    overall.wait_for()
    cells = overall.locator("td").all_inner_texts()
    board = {r["model_id"]: r for r in json.loads(
        (page.context.request.get(f"{server}/downloads/leaderboard.json")).text())}
    assert cells[0].split()[0] == f"{board['copy-source-baseline']['delta_bleu']:.2f}"
    assert cells[1].split()[0] == f"{board[HOSTILE_MODEL]['delta_bleu']:.2f}"
    difference = board["copy-source-baseline"]["delta_bleu"] - board[HOSTILE_MODEL]["delta_bleu"]
    assert cells[2] == f"{difference:.2f}"
    page.select_option("#compare-pick select[name=b]", a)  # the same model twice
    status = page.locator("#compare-status")
    assert "same model" in status.inner_text()
    assert page.locator("#compare-table tbody tr").count() == 0
    assert page.locator("#compare-table tfoot tr").count() == 0  # no Overall row left behind
    assert page.locator("#compare-table thead th").count() == 0
    page.go_back()  # back to the two models, in the view as in the address
    page.locator("#compare-table tbody tr").first.wait_for()
    assert page.locator("#compare-pick select[name=b]").input_value() == b
    assert f"b={b}" in page.url
    page.evaluate(f"location.hash = '#a={b}&b={a}'")
    page.wait_for_function(f"document.querySelector('#compare-pick select[name=a]').value"
                           f" === {json.dumps(b)}")
    page.locator("#compare-table tfoot tr").wait_for()
    assert page.locator("#compare-table tfoot td").nth(0).inner_text().split()[0] == \
        f"{board[HOSTILE_MODEL]['delta_bleu']:.2f}"


def test_compare_difference_interval_is_the_paired_bootstrap_of_python(page, server, site_dir):
    """The difference column's interval, recomputed in the browser from the shipped resampling
    and per-instance statistics, equals metrics/bootstrap.py's for the pair (both metrics,
    every locale)."""
    store = Store(site_dir.parent / "site.duckdb")
    settings = store.query("site_statistics_settings")[0]
    models = sorted({r["model_id"] for r in store.query("all_scores")})
    locales = sorted({t["locale"] for t in store.query("test_set_index") if t["locale"]})
    result = paired_bootstrap(
        {m: t for m, t in stats_from_table(store.arrow("all_segment_stats")).items()
         if m in ("bleu", "chrf")}, models, locales,
        config=BootstrapConfig(n_replicates=settings["n_replicates"], seed=settings["seed"],
                               confidence=settings["confidence"]),
        score_functions=score_functions(("bleu", "chrf")))
    assert result.n_instances == settings["n_instances"]
    a_id, b_id = "copy-source-baseline", HOSTILE_MODEL
    page.goto(f"{server}/compare.html#a={model_slug(a_id)}&b={model_slug(b_id)}")
    page.wait_for_selector("#compare-table[data-intervals=done]")
    checked = spread = 0
    for row in page.locator("#compare-table tbody tr").all():
        locale = row.locator("th").inner_text()
        for metric in ("bleu", "chrf"):
            cell = row.locator(f"td[data-difference=delta_{metric}]")
            python = difference_interval(result.quantities[f"pair_delta_{metric}"],
                                         (a_id, locale), (b_id, locale))
            assert float(cell.get_attribute("data-value")) == pytest.approx(python.value,
                                                                            abs=1e-9)
            assert float(cell.get_attribute("data-low")) == pytest.approx(python.low, abs=1e-9)
            assert float(cell.get_attribute("data-high")) == pytest.approx(python.high, abs=1e-9)
            assert cell.inner_text() == f"{python.value:.2f} [{python.low:.2f}, {python.high:.2f}]"
            checked += 1
            spread += python.low < python.high
    assert checked == 12  # 6 locales × 2 metrics
    assert spread >= 6  # intervals, not points (some are: both models score 0 on a locale)


LONG_NAMES = [f"bulk-model-{m:03d}" for m in range(148)]


@pytest.fixture(scope="module")
def long_site(site_dir, tmp_path_factory):
    """The demo site's database plus 148 copies (``widen_store``): a 150-model leaderboard."""
    root = tmp_path_factory.mktemp("long_site")
    shutil.copyfile(site_dir.parent / "site.duckdb", root / "site.duckdb")
    store = widen_store(Store(root / "site.duckdb"), "copy-source-baseline", LONG_NAMES)
    build_site(store, root / "site", query_page="off")
    return root / "site"


def test_long_leaderboard_renders_100_rows_and_sorts_and_searches_all(browser, long_site):
    """Past 100 models the page lays out 100 rows at a time (the rest are parsed in a template,
    never laid out); sorting and the search still cover every model, from ``file://``."""
    html = (long_site / "index.html").read_text()
    assert html.count('<template data-rows="more">') == 1
    with watched_page(browser) as page:
        page.goto((long_site / "index.html").as_uri())
        rows = page.locator("#leaderboard tbody tr")
        more = page.locator("button.more-rows")
        assert rows.count() == 100
        assert more.inner_text() == "Show 50 more (100 of 150 shown)"
        page.locator("#leaderboard thead th", has_text="Model").locator("button").click()
        names = column(page, "leaderboard", "Model")
        everyone = sorted(["copy-source-baseline", HOSTILE_MODEL, *LONG_NAMES], key=str.lower)
        assert names == everyone[:100]  # the first 100 of all 150, not of the shown ones
        page.locator("#leaderboard thead th", has_text="Model").locator("button").click()
        assert column(page, "leaderboard", "Model") == everyone[::-1][:100]
        more.click()
        assert rows.count() == 150 and more.is_hidden()
        assert column(page, "leaderboard", "Model") == everyone[::-1]
        page.fill("form[data-table=leaderboard] input[name=q]", "bulk-model-14")
        assert sorted(column(page, "leaderboard", "Model")) == [
            f"bulk-model-{m}" for m in range(140, 148)]
        assert "8 of 150 models shown" in page.locator(
            "form[data-table=leaderboard] output.count").inner_text()
        page.fill("form[data-table=leaderboard] input[name=q]", "")
        assert rows.count() == 100  # back to the first page of rows
