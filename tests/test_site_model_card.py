"""Model cards and charts as a reader sees them (Chromium), on the demo site and on a 32-model
site: the engine named once with its version, evaluation times to the second in UTC, no
dangling dash after a rule that did not fire, the size charts as wide as the page's content and
spanning the data, both heatmap axes titled."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import duckdb
import pytest
from site_helpers import HOSTILE_MODEL, NEEDS_CHROMIUM, serve, widen_store

from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.model_card import engine_text, utc_time
from cultivar_assets.store.database import Store

EVALUATED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")


def test_engine_is_named_once_with_its_version():
    assert engine_text("transformers", "transformers 5.24.0") == "transformers 5.24.0"
    assert engine_text("seq2seq", "transformers 5.24.0") == "seq2seq (transformers 5.24.0)"
    assert engine_text("vllm", "vllm") == "vllm"
    assert engine_text("copy", None) == "copy"
    assert engine_text(None, None) == "–"
    # a longer engine name that merely starts like the version's library is not swallowed
    assert engine_text("transformers-chat", "transformers 5.2") == (
        "transformers-chat (transformers 5.2)")


def test_evaluation_times_are_shown_to_the_second_in_utc():
    naive = datetime(2025, 6, 1, 14, 3, 52, 123456)  # as stored: UTC without a zone
    assert utc_time(naive) == "2025-06-01 14:03:52 UTC"
    assert utc_time("2025-06-01T14:03:52.123456") == "2025-06-01 14:03:52 UTC"
    aware = datetime(2025, 6, 1, 16, 3, 52, tzinfo=timezone(timedelta(hours=2)))
    assert utc_time(aware) == "2025-06-01 14:03:52 UTC" == utc_time(aware.astimezone(UTC))
    assert utc_time(None) == "–"
    with pytest.raises(TypeError, match="not a time"):
        utc_time(3)


@pytest.fixture(scope="module")
def sites(tmp_path_factory, hostile_store_copy):
    """The demo site (copy baseline and a hostile model whose run record names its engine's
    library, as the real engines do) and the same widened to 32 models."""
    root = tmp_path_factory.mktemp("card_sites")
    store = hostile_store_copy(root)
    shutil.copy(store.path, root / "demo.duckdb")  # what the test reads the ranks from
    with duckdb.connect(str(store.path)) as con:
        con.execute("UPDATE raw.model_runs SET engine_version = 'payload 1.0' "
                    "WHERE model_id = ?", [HOSTILE_MODEL])
    build_site(store, root / "demo", query_page="off")
    shutil.copy(store.path, root / "wide.duckdb")
    wide = widen_store(Store(root / "wide.duckdb"), "copy-source-baseline",
                       [f"model-{n:02d}-wide" for n in range(30)])
    build_site(wide, root / "wide", query_page="off")
    with serve(root) as url:
        yield SimpleNamespace(url=url, root=root)


@NEEDS_CHROMIUM
@pytest.mark.parametrize("site", ["demo", "wide"])
def test_model_card_reads_cleanly(site, sites, browser):
    page = browser.new_page()
    page.goto(f"{sites.url}/{site}/models/{model_slug(HOSTILE_MODEL)}.html")
    facts = dict(zip(page.locator("dl.facts dt").all_inner_texts(),
                     page.locator("dl.facts dd").all_inner_texts(), strict=True))
    assert facts["Engine"] == "payload 1.0"  # not "payload payload 1.0"
    assert EVALUATED.match(facts["Evaluated"]), facts["Evaluated"]
    flags = page.locator("ul.flags li").all_inner_texts()
    assert flags, "the demo site's model cards list the contamination rules"
    assert not [f for f in flags if re.search(r"—\s*\(", f)], flags  # no dangling dash
    board = {r["model_id"]: r for r in Store(sites.root / f"{site}.duckdb").query("leaderboard")}
    label = board[HOSTILE_MODEL]["rank_delta_bleu_label"]
    assert label  # the rank interval, from the ranks shard (data/ranks.js)
    assert facts["∆BLEU / ∆chrF"].endswith(
        f"; {label} by ∆BLEU (rank interval over the bootstrap resamples)"), facts
    page.close()


@NEEDS_CHROMIUM
@pytest.mark.parametrize("site", ["demo", "wide"])
def test_charts_on_the_leaderboard_use_the_page_and_title_their_axes(site, sites, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(f"{sites.url}/{site}/index.html")
    content = page.evaluate("""() => { const m = document.querySelector('main');
        const s = getComputedStyle(m);
        return m.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }""")
    for chart in ("size-bleu", "heatmap-bleu"):
        page.locator(f"#chart-{chart} svg").wait_for()
    size = page.evaluate("() => document.querySelector('#chart-size-bleu svg')"
                         ".getBoundingClientRect().width")
    assert size >= 0.95 * content, (size, content)  # was 500 of 1,350 px
    ticks = [float(t) for t in page.locator("#chart-size-bleu svg g.role-axis-label").first
             .locator("text").all_text_contents() if t]
    spec = json.loads((sites.root / site / "charts" / "size-bleu.vl.json").read_text("utf-8"))
    sizes = [row["params"] for row in spec["data"]["values"]]
    low, high = (min(sizes), max(sizes)) if len(set(sizes)) > 1 else (sizes[0] / 2, sizes[0] * 2)
    assert ticks and low / 1.2 <= min(ticks) and max(ticks) <= high * 1.2, (ticks, sizes)
    titles = page.locator("#chart-heatmap-bleu svg g.role-axis-title text").all_text_contents()
    assert sorted(titles) == ["locale", "model"]
    page.close()
