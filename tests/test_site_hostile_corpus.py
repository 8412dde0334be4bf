"""The whole hostile-strings corpus (tests/hostile_strings.py) through every page of the site.

The demo data's localised texts (source and English) carry the corpus's strings; three systems
are named with hostile strings (a path, a spreadsheet formula, markup) and given hostile
families; their outputs cycle through all the corpus's strings; the card is the whole corpus.
Every page of the built site, and the segment browser of every model and locale, is opened in
Chromium: no dialog opens, no console error appears, no request leaves 127.0.0.1, no element
carries an event-handler attribute and the shown translations are the stored ones, as text.
Every chart SVG holds no script and no handler; every CSV download keeps formulas from starting a
cell; the JSON downloads keep the strings exactly.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import duckdb
import pytest
from hostile_strings import ALL, MARKDOWN_AND_YAML, PATHS, SCRIPT_AND_ATTRIBUTES, SPREADSHEET
from site_helpers import (
    NEEDS_CHROMIUM,
    CorpusEngine,
    chromium,
    serve,
    systems_store,
    watched_page,
)

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.tables import CSV_FORMULA_START

pytestmark = [NEEDS_CHROMIUM, pytest.mark.slow]
SYSTEMS = {"corpus-path": (PATHS[0], SPREADSHEET[0]),
           "corpus-formula": (SPREADSHEET[0], MARKDOWN_AND_YAML[0]),
           "corpus-markup": (SCRIPT_AND_ATTRIBUTES[1], SCRIPT_AND_ATTRIBUTES[0])}
HANDLERS = """() => [...document.querySelectorAll('*')].flatMap(e => [...e.attributes]
  .filter(a => a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value))
  .map(a => e.tagName + ' ' + a.name))"""


class Corpus(CorpusEngine):
    texts = tuple(ALL)


def hostile_data():
    """The demo data with a corpus string after each localised source and English text."""
    data = load_benchmark(DataConfig())
    k = 0
    for locale, rows in data.instances.items():
        for n, inst in enumerate(rows):
            rows[n] = replace(inst, source_localised=f"{inst.source_localised} {ALL[k % len(ALL)]}",
                              english_localised=f"{inst.english_localised} "
                                                f"{ALL[(k + 1) % len(ALL)]}")
            k += 2
        data.instances[locale] = rows
    return data


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus_site")
    store = systems_store(root, Corpus, SYSTEMS, hostile_data())
    build_site(store, root / "site", card_markdown="\n\n".join(ALL), query_page="off")
    with duckdb.connect(str(store.path), read_only=True) as con:
        rows = con.execute("SELECT model_id, test_set, hypothesis, raw_output "
                           "FROM translations").fetchall()
    return root / "site", rows


def test_every_page_and_segment_browser_keeps_the_corpus_as_text(built):
    site, rows = built
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert len(pages) >= 10
    cultivar = {}
    for model_id, test_set, hypothesis, _raw in rows:
        if test_set.startswith("cultivar_"):
            cultivar.setdefault((model_id, test_set.removeprefix("cultivar_")), []).append(
                hypothesis)
    shown_corpus: set[str] = set()
    shown_data: set[str] = set()
    with serve(site) as server, chromium() as browser:
        for name in pages:
            with watched_page(browser) as page:
                page.goto(f"{server}/{name}")
                page.wait_for_load_state("networkidle")
                assert page.evaluate(HANDLERS) == [], name
        for (model_id, locale), hypotheses in sorted(cultivar.items()):
            with watched_page(browser) as page:
                page.goto(f"{server}/browse.html#model={model_slug(model_id)}&locale={locale}")
                page.locator("article.instance").first.wait_for()
                assert page.evaluate(HANDLERS) == [], (model_id, locale)
                text = page.locator("main").text_content()
                shown_data.update(t for t in ALL if t.strip() and t.strip() in text)
                shown = page.locator("article.instance tr.hyp td").all_text_contents()
                # each instance shows the FLORES and the Cultivar translation: the Cultivar ones
                # are the stored hypotheses, character for character
                assert sorted(shown[1::2]) == sorted(hypotheses), (model_id, locale)
                if model_id in {name for name, _ in SYSTEMS.values()}:
                    heading = page.locator("#browser-pick select[name=model]").evaluate(
                        "s => s.options[s.selectedIndex].text")
                    assert heading == model_id
                    shown_corpus.update(t for t in ALL if any(t.strip() and t.strip() in h
                                                              for h in shown))
    # the corpus really reached the pages (cleaning may trim what surrounds a string)
    assert len(shown_corpus) >= 40, sorted(set(ALL) - shown_corpus)
    assert len(shown_data) >= 40, sorted(set(ALL) - shown_data)


def test_chart_svgs_hold_no_script_and_no_handler(built):
    site, _ = built
    svgs = sorted((site / "charts").glob("*.svg"))
    assert svgs
    for svg in svgs:
        for element in ET.parse(svg).iter():
            tag = element.tag.rsplit("}", 1)[-1]
            assert tag not in {"script", "foreignObject", "iframe"}, svg.name
            for key, value in element.attrib.items():
                assert not key.rsplit("}", 1)[-1].startswith("on"), (svg.name, key)
                assert not value.strip().lower().startswith("javascript:"), (svg.name, key)


def test_downloads_neutralise_formulas_and_keep_the_text(built):
    site, _ = built
    csvs = sorted((site / "downloads").rglob("*.csv"))
    assert csvs
    names = {name for name, _ in SYSTEMS.values()}
    seen = set()
    for file in csvs:
        for row in csv.reader(io.StringIO(file.read_text("utf-8"), newline="")):
            for cell in row:
                assert not cell.startswith(CSV_FORMULA_START) or _number(cell), (file.name, cell)
                seen.update(n for n in names if cell in (n, "'" + n))
    assert seen == names  # every hostile name reached a CSV, neutralised where needed
    board = json.loads((site / "downloads" / "leaderboard.json").read_text("utf-8"))
    assert names <= {row["model_id"] for row in board}  # JSON keeps them exactly
    assert {row["family"] for row in board} >= {family for _, family in SYSTEMS.values()}


def _number(cell: str) -> bool:
    """A negative number stays a number in a CSV (tables.csv_safe)."""
    try:
        float(cell)
    except ValueError:
        return False
    return True
