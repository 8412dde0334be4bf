"""A site built with ``metrics: [bleu, chrf, chrf++, ter]`` shows every metric on every page that
shows scores (Chromium): its label and a value stored in the database for it."""

from __future__ import annotations

import duckdb
import pytest
from site_helpers import HOSTILE_MODEL, NEEDS_CHROMIUM, PayloadEngine, systems_store, watched_page

from cultivar_assets.metrics.bootstrap import (
    BootstrapConfig,
    difference_interval,
    paired_bootstrap,
)
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import column_key, score_functions
from cultivar_assets.metrics.segment_stats import stats_from_table
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.store.database import Store
from cultivar_assets.tables import format_value

pytestmark = NEEDS_CHROMIUM
METRICS = ["bleu", "chrf", "chrf++", "ter"]
LABELS = {"bleu": "BLEU", "chrf": "chrF", "chrf++": "chrF++", "ter": "TER"}
MODEL = "copy-source-baseline"


@pytest.fixture(scope="module")
def four_metric_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("four_metrics")
    config = MetricConfig(bleu_tokenize="13a", metrics=METRICS, bootstrap_replicates=20)
    store = systems_store(root, PayloadEngine, {"payload-model": (HOSTILE_MODEL, "hostile")},
                          config=config)
    build_site(store, root / "site", query_page="off")
    with duckdb.connect(str(store.path), read_only=True) as con:
        def values(sql: str, *args) -> dict[str, float]:
            return dict(con.execute(sql, list(args)).fetchall())
        locale = con.execute("SELECT min(locale) FROM model_locale_deltas WHERE model_id = ?",
                             [MODEL]).fetchone()[0]
        stored = {
            "model": values("SELECT metric, value FROM leaderboard_metrics WHERE level = 'model' "
                            "AND quantity = 'delta' AND model_id = ?", MODEL),
            "locale": values("SELECT metric, value FROM leaderboard_metrics WHERE level = "
                             "'locale' AND quantity = 'delta' AND locale = ?", locale),
            "model_locale": values("SELECT metric, value FROM leaderboard_metrics WHERE level = "
                                   "'model_locale' AND quantity = 'cultivar' AND model_id = ? "
                                   "AND locale = ?", MODEL, locale),
            "score": values("SELECT metric, score FROM scores WHERE model_id = ? AND test_set = "
                            "?", MODEL, f"cultivar_{locale}"),
        }
    assert set(stored["model"]) == set(METRICS), stored  # every metric was aggregated
    return root / "site", stored, locale


@pytest.fixture
def page(browser):
    with watched_page(browser) as page:
        yield page


def _shown(value: float) -> str:
    return format_value(value, digits=2)


def _table(page, selector: str) -> tuple[str, str]:
    return (" ".join(page.locator(f"{selector} thead").inner_text().split()),
            " ".join(page.locator(f"{selector} tbody").inner_text().split()))


def test_every_page_with_scores_shows_every_configured_metric(page, four_metric_site):
    site, stored, locale = four_metric_site
    url = site.as_uri()
    slug = model_slug(MODEL)

    page.goto(f"{url}/models/{slug}.html")
    card = " ".join(page.locator(".model-card dl").inner_text().split())
    assert "∆BLEU / ∆chrF / ∆chrF++ / ∆TER" in card
    assert " / ".join(_shown(stored["model"][m]) for m in METRICS) in card
    head, _ = _table(page, "#model-deltas")
    for m in METRICS:
        assert f"∆{LABELS[m]}" in head and f"Cultivar {LABELS[m]}" in head
    row = " ".join(page.locator("#model-deltas tbody tr", has_text=locale).inner_text().split())
    for m in METRICS:
        assert _shown(stored["model_locale"][m]) in row.split(), (m, row)
    scores = page.locator("table", has=page.locator("caption", has_text="on every test set"))
    caption = scores.locator("caption").inner_text()
    assert "BLEU, chrF, chrF++ and TER on every test set." in caption
    score_row = " ".join(scores.locator("tbody tr", has_text=f"cultivar_{locale}")
                         .inner_text().split())
    for m in METRICS:
        assert LABELS[m] in scores.locator("thead").inner_text()
        assert _shown(stored["score"][m]) in score_row.split(), (m, score_row)

    page.goto(f"{url}/locales/{locale}.html")
    head, _ = _table(page, "#locale-model-deltas")
    row = " ".join(page.locator("#locale-model-deltas tbody tr", has_text=MODEL)
                   .inner_text().split())
    for m in METRICS:
        assert f"∆{LABELS[m]}" in head and f"FLORES {LABELS[m]}" in head
        assert _shown(stored["model_locale"][m]) in row.split(), (m, row)

    page.goto(f"{url}/locales.html")
    head, _ = _table(page, "#locale-deltas")
    row = " ".join(page.locator("#locale-deltas tbody tr", has_text=locale).first
                   .inner_text().split())
    for m in METRICS:
        assert f"∆{LABELS[m]}" in head
        assert _shown(stored["locale"][m]) in row.split(), (m, row)

    page.goto(f"{url}/compare.html#a={slug}&b={model_slug(HOSTILE_MODEL)}")
    page.wait_for_selector("#compare-table[data-intervals=done]")
    head = " ".join(page.locator("#compare-table thead").inner_text().split())
    overall = " ".join(page.locator("#compare-table tfoot").inner_text().split())
    for m in METRICS:
        assert f"∆{LABELS[m]}: {MODEL}" in head and f"∆{LABELS[m]} difference" in head
        assert _shown(stored["model"][m]) in overall.split(), (m, overall)
    assert "no interval" not in page.locator("#compare-table caption").inner_text()
    assert not page.problems, page.problems


def test_compare_difference_intervals_of_every_metric_are_python_s(page, four_metric_site):
    """The compare view's difference interval of every metric (chrF++ and TER by the browser's
    twins of their scoring functions) equals metrics/bootstrap.py's for the pair."""
    site, _, _ = four_metric_site
    store = Store(site.parent / "site.duckdb")
    settings = store.query("site_statistics_settings")[0]
    models = sorted({r["model_id"] for r in store.query("all_scores")})
    locales = sorted({t["locale"] for t in store.query("test_set_index") if t["locale"]})
    result = paired_bootstrap(
        stats_from_table(store.arrow("all_segment_stats")), models, locales,
        config=BootstrapConfig(n_replicates=settings["n_replicates"], seed=settings["seed"],
                               confidence=settings["confidence"]),
        score_functions=score_functions(METRICS))
    a_id, b_id = MODEL, HOSTILE_MODEL
    page.goto(f"{site.as_uri()}/compare.html#a={model_slug(a_id)}&b={model_slug(b_id)}")
    page.wait_for_selector("#compare-table[data-intervals=done]")
    checked = spread = 0
    for row in page.locator("#compare-table tbody tr").all():
        locale = row.locator("th").inner_text()
        for metric in METRICS:
            cell = row.locator(f"td[data-difference=delta_{column_key(metric)}]")
            python = difference_interval(result.quantities[f"pair_delta_{metric}"],
                                         (a_id, locale), (b_id, locale))
            assert float(cell.get_attribute("data-low")) == pytest.approx(python.low, abs=1e-9)
            assert float(cell.get_attribute("data-high")) == pytest.approx(python.high, abs=1e-9)
            assert cell.inner_text() == f"{python.value:.2f} [{python.low:.2f}, {python.high:.2f}]"
            checked += 1
            spread += python.low < python.high
    assert checked == len(locales) * len(METRICS)
    assert spread >= len(locales) * 2  # intervals, not points
    assert not page.problems, page.problems
