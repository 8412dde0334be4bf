"""The site shows the statistics: intervals, rank intervals, flags (evaluated and
reported, with the rules that could not be applied), averages with n, and Table 5."""

from __future__ import annotations

import html
import re

import pytest
from error_helpers import error_document, evaluated_store, sample_config, write_document

from cultivar_assets.error_analysis.sample import build_error_sample
from cultivar_assets.error_analysis.store import ingest_error_files
from cultivar_assets.evaluation.contamination import write_reported_flags
from cultivar_assets.models import load_models
from cultivar_assets.site.build import build_site
from cultivar_assets.store.records import write_reported_results

pytestmark = pytest.mark.usefixtures("shared_site_caches")  # charts and templates: once a session


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site_statistics")
    store = evaluated_store(folder)
    sample = build_error_sample(store, sample_config(folder / "files"))
    for task in sample.tasks:
        write_document(folder / "files", error_document(task, demo=True))
    ingest_error_files(store, sample, sample_config(folder / "files"))
    registry = load_models()
    specs = [registry.get(m) for m in registry]
    write_reported_results(store, specs)
    write_reported_flags(store, specs)
    build_site(store, folder / "site")
    return store, folder / "site"


def text(path) -> str:
    """The page's text: tags dropped, entities decoded, whitespace folded."""
    raw = re.sub(r"<script.*?</script>", " ", path.read_text("utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def test_the_leaderboard_shows_intervals_ranks_and_flags(site):
    store, folder = site
    page = text(folder / "index.html")
    board = {r["model_id"]: r for r in store.query("leaderboard")}
    memoriser = board["memoriser"]
    shown = f"{memoriser['delta_bleu']:.2f} [{memoriser['delta_bleu_low']:.2f}, " \
            f"{memoriser['delta_bleu_high']:.2f}] *"
    assert shown in page
    assert memoriser["rank_delta_bleu_label"] == "rank 6" and "rank 6" in page
    assert "Rank a–b: in 95 % of the bootstrap resamples" in page
    assert "200 replicates, seed 12345" in page
    assert "delta_outlier_bleu" in page and "Fired for" in page
    # the reported Table 3's rules: what could not be applied, and why
    assert "no per-locale ∆ in the data" in page
    assert "The Average row: each column's mean over the models evaluated here" in page
    assert "rank 6 delta_outlier_bleu" in page  # the memoriser's rank and first flag
    assert page.count("6/4/6/6/6") == 6  # every model's n: pairs, languages, locales
    # each model's card gives its rank interval too, read from the ranks shard (so that a new
    # model does not rewrite every card whose rank moved; Chromium: test_site_model_card.py)
    from cultivar_assets.site.pages import model_slug
    from cultivar_assets.site.shards import decode_shard

    key, payload = decode_shard((folder / "data" / "ranks.js").read_bytes())
    assert key == "ranks"
    assert payload["rank_delta_bleu"] == {m: r["rank_delta_bleu_label"] for m, r in board.items()}
    for model_id in board:
        card = (folder / "models" / f"{model_slug(model_id)}.html").read_text("utf-8")
        assert f'data-rank-of="{html.escape(model_id)}"' in card, model_id
        assert "rank_delta_bleu" not in card and "rank 6" not in card


def test_the_locales_page_shows_table4_averages_agreement_ns_and_table5(site):
    store, folder = site
    page = text(folder / "locales.html")
    assert "The Average row of Table 4: the mean over locales" in page
    assert "model_averages (default, the paper's)" in page
    assert "Error analysis (paper §5, Table 5)" in page
    assert "Demo annotations: written for this toolkit" in page
    rows = store.query("error_table5")
    assert len(rows) == 9
    for r in rows:  # every Table 5 row, as a row of the page's table
        cells = [r["model_id"], r["locale"], *(r[k] for k in (
            "ne", "py", "ic", "nu", "locale_specific_total", "general_total", "total")),
                 f"{r['bleu']:.2f}", r["n_translations"]]
        assert " ".join(map(str, cells)) in page, cells
    correlations = {r["language"]: r for r in store.query("error_correlations")}
    assert f"{correlations['deu']['r_including']:.2f}" in page
