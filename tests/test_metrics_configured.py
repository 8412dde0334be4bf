"""Settings choose the metrics (``metrics.metrics``): chrF++ and TER scored, stored in long form,
bootstrapped, ranked and shown, beside the paper's BLEU and chrF, which stay as they are."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest
import sacrebleu

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.metrics.configured import build_metric
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_dataset

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))
import fault_pipeline  # noqa: E402

FOUR = ["bleu", "chrf", "chrf++", "ter"]
MODELS = ("copy-source-baseline", "drop-words")


def _store(path: Path, cache: Path, metrics: list[str]) -> Store:
    """The demo data, two systems (fault_pipeline's), scored with ``metrics``, aggregated."""
    store = Store(path)
    fault_pipeline.translate_two_systems(
        store, write_dataset(store, load_benchmark(DataConfig())), cache)
    config = MetricConfig(bleu_tokenize="13a", metrics=metrics, bootstrap_replicates=200)
    for model in MODELS:
        score_model(store, model, config)
    aggregate(store, config=config)
    return store


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> tuple[Store, Store]:
    tmp = tmp_path_factory.mktemp("configured")
    return (_store(tmp / "four.duckdb", tmp / "cache", FOUR),
            _store(tmp / "paper.duckdb", tmp / "cache", ["bleu", "chrf"]))


def _rows(store: Store, sql: str) -> list[tuple]:
    with duckdb.connect(str(store.path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_unknown_metric_names_are_refused_naming_the_registry():
    with pytest.raises(ValueError, match=r"\['comet'\].*bleu, chrf, chrf\+\+, ter"):
        MetricConfig(metrics=["bleu", "comet"])
    with pytest.raises(ValueError, match="twice"):
        MetricConfig(metrics=["bleu", "bleu"])
    assert MetricConfig().metrics == ["bleu", "chrf"]


def test_chrfpp_and_ter_scores_equal_sacrebleus_corpus_score_with_its_signature(stores):
    four, _ = stores
    scores = _rows(four, "SELECT model_id, test_set, metric, score, signature FROM scores "
                         "WHERE metric IN ('chrf++', 'ter') ORDER BY ALL")
    texts: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for model, test_set, reference, hypothesis in _rows(
            four, "SELECT model_id, test_set, reference, hypothesis FROM translations "
                  "ORDER BY model_id, test_set, segment_id"):
        refs, hyps = texts.setdefault((model, test_set), ([], []))
        refs.append(reference)
        hyps.append(hypothesis)
    made = {"chrf++": lambda: sacrebleu.metrics.CHRF(word_order=2),
            "ter": lambda: sacrebleu.metrics.TER(case_sensitive=True)}
    assert {m for _, _, m, _, _ in scores} == {"chrf++", "ter"}
    assert len(scores) == 2 * len(texts)
    for model, test_set, metric, score, signature in scores:
        refs, hyps = texts[(model, test_set)]
        metric_object = made[metric]()
        assert score == metric_object.corpus_score(hyps, [refs]).score, (model, test_set, metric)
        assert signature == build_metric(metric, MetricConfig()).signature


def test_every_configured_metric_has_intervals_deltas_and_ranks_in_long_form(stores):
    four, _ = stores
    metrics = _rows(four, "SELECT metric, label, higher_is_better FROM statistics_metrics")
    # BLEU with tok:13a is not spBLEU: the label follows the stored signature
    assert metrics == [("bleu", "BLEU", True), ("chrf", "chrF", True),
                       ("chrf++", "chrF++", True), ("ter", "TER", False)]
    labels = _rows(four, "SELECT DISTINCT metric, label FROM leaderboard_metrics ORDER BY metric")
    assert labels == [("bleu", "BLEU"), ("chrf", "chrF"), ("chrf++", "chrF++"), ("ter", "TER")]
    model_rows = _rows(four, "SELECT model_id, metric, quantity, value, low, high, n "
                             "FROM leaderboard_metrics WHERE level = 'model'")
    assert {(m, q) for _, m, q, *_ in model_rows} == {
        (m, q) for m in FOUR for q in ("flores", "cultivar", "delta")}
    for model, metric, quantity, value, low, high, n in model_rows:
        assert low <= value <= high and n > 0, (model, metric, quantity)
    # ∆ = Cultivar − FLORES per model and locale, for TER too (lower is better: ∆ > 0 is worse)
    pairs = _rows(four, "SELECT model_id, locale, metric, "
                        "max(value) FILTER (quantity = 'cultivar') - "
                        "max(value) FILTER (quantity = 'flores'), "
                        "max(value) FILTER (quantity = 'delta') FROM leaderboard_metrics "
                        "WHERE level = 'model_locale' GROUP BY ALL")
    assert {m for _, _, m, *_ in pairs} == set(FOUR)
    for *key, difference, delta in pairs:
        assert delta == pytest.approx(difference, abs=1e-9), key
    ranks = {(q, m): (rank, higher) for m, q, rank, higher in _rows(
        four, "SELECT model_id, quantity, rank, higher_is_better FROM leaderboard_ranks")}
    for key in ("delta_chrfpp", "flores_chrfpp", "cultivar_ter", "delta_ter"):
        assert {ranks[(key, m)][0] for m in MODELS} == {1, 2}, key
    assert all(not ranks[(k, m)][1] for k in ("delta_ter", "cultivar_ter") for m in MODELS)
    # TER is lower-is-better: rank 1 holds the lower Cultivar TER
    cultivar_ter = {r[0]: r[3] for r in model_rows if r[1] == "ter" and r[2] == "cultivar"}
    assert cultivar_ter[MODELS[0]] != cultivar_ter[MODELS[1]]
    assert ranks[("cultivar_ter", min(MODELS, key=cultivar_ter.__getitem__))][0] == 1
    averages = {q for (q,) in _rows(four, "SELECT quantity FROM table_averages")}
    assert {"delta_chrfpp", "delta_ter", "flores_ter", "cultivar_chrfpp"} <= averages


def test_more_metrics_leave_the_papers_views_as_they_are(stores):
    four, paper = stores
    paper_only = {"table_averages": "NOT regexp_matches(quantity, '(chrfpp|ter)$')",
                  "leaderboard_ranks": "NOT regexp_matches(quantity, '(chrfpp|ter)$')",
                  "rank_agreement": "metric IN ('bleu', 'chrf')"}
    for view in ("model_locale_deltas", "locale_deltas", *paper_only):
        where = paper_only.get(view, "true")
        assert _rows(four, f"SELECT * FROM {view} WHERE {where} ORDER BY ALL") == _rows(
            paper, f"SELECT * FROM {view} ORDER BY ALL") != [], view
    assert _rows(four, "SELECT * EXCLUDE (seconds, computed_at) FROM statistics_settings") == \
        _rows(paper, "SELECT * EXCLUDE (seconds, computed_at) FROM statistics_settings")
    paper_columns = "model_id, delta_bleu, delta_bleu_low, delta_chrf_high, cultivar_chrf, flags"
    assert _rows(four, f"SELECT {paper_columns} FROM leaderboard") == _rows(
        paper, f"SELECT {paper_columns} FROM leaderboard")
    assert _rows(paper, "SELECT DISTINCT metric FROM leaderboard_metrics ORDER BY 1") == [
        ("bleu",), ("chrf",)]


def test_the_site_leaderboard_shows_chrfpp_and_ter_and_publishes_the_long_table(
        stores, tmp_path):
    import pyarrow.parquet as pq

    from cultivar_assets.site.build import build_site

    four, paper = stores
    build_site(four, tmp_path / "site", query_page="off")
    page = (tmp_path / "site" / "index.html").read_text("utf-8")
    for header in ("∆chrF++", "FLORES chrF++", "Cultivar TER", "∆TER", "∆BLEU", "∆chrF"):
        assert f">{header}<" in page, header
    assert "TER: lower is better" in page
    ter_signature = build_metric("ter", MetricConfig()).signature
    assert f"<li>TER: <code>{ter_signature}</code></li>" in page
    table = pq.read_table(tmp_path / "site" / "downloads" / "leaderboard_metrics.parquet")
    assert set(table.column("metric").to_pylist()) == set(FOUR)
    build_site(paper, tmp_path / "paper-site", query_page="off")
    assert ">∆TER<" not in (tmp_path / "paper-site" / "index.html").read_text("utf-8")
