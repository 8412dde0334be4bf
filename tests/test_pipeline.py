"""The Dagster assets in process, on the demo data, with tiny random models built in the test."""

from __future__ import annotations

import hashlib

import duckdb
import pytest

from cultivar_assets.assets.graph import ASSETS, JOBS
from cultivar_assets.definitions import build_definitions
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.evaluation import AggregationError, aggregate
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store
from cultivar_assets.versions.inputs import SETTINGS_SECTIONS

pytestmark = pytest.mark.dagster_instances

MODELS = ["tiny-base", "tiny-chat", "copy-source-baseline"]
N_SEGMENTS = 4 * 12 + 6 * 12  # 4 flores test sets and 6 cultivar test sets of 12 instances


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One translation cache for the module: tiny models translate the demo data once."""
    return tmp_path_factory.mktemp("translation_cache")


@pytest.fixture
def settings(tmp_path, tiny_models_file, shared_cache) -> Settings:
    return Settings(database=str(tmp_path / "results.duckdb"), models_file=str(tiny_models_file),
                    models=MODELS, metrics=MetricConfig(bleu_tokenize="13a"),
                    engine=EngineSettings(cache_dir=str(shared_cache)))


@pytest.fixture(scope="module")
def materialisations(tmp_path_factory, tiny_model_dir, tiny_chat_model_dir, shared_cache):
    """The three systems on the demo data, once for the module (with a CULTIVAR_HOME of its
    own): the assets the tests read (``test_sets``, each model's ``translations`` and
    ``scores``, ``model_results``, ``leaderboard``) materialised in a Dagster instance of their
    own, torch on one thread (``one_torch_thread``, tests/pipeline_helpers.py); the settings,
    and the result of each materialisation (``test_sets``, then one per model, then the
    results'). Tests change copies of its database (:func:`pipeline_copy`).
    (The whole pipeline, stage by stage: tests/test_runner_stale.py; with real models:
    tests/test_demo_cli.py.)"""
    import dagster as dg
    from conftest import isolate_home, tiny_model_entries, write_models_file
    from pipeline_helpers import one_torch_thread

    folder = tmp_path_factory.mktemp("materialised")
    models = write_models_file(folder / "models.yaml",
                               tiny_model_entries(tiny_model_dir, tiny_chat_model_dir))
    settings = Settings(database=str(folder / "results.duckdb"), models_file=str(models),
                        models=MODELS, metrics=MetricConfig(bleu_tokenize="13a"),
                        engine=EngineSettings(cache_dir=str(shared_cache)))
    with (pytest.MonkeyPatch.context() as monkeypatch, dg.instance_for_test() as instance,
          one_torch_thread()):
        isolate_home(monkeypatch, folder / "home")
        instance.add_dynamic_partitions("models", MODELS)
        results = [_materialise(instance, settings, ["test_sets"])]
        for model in MODELS:
            results.append(_materialise(instance, settings, ["translations", "scores"], model))
        results.append(_materialise(instance, settings, ["model_results", "leaderboard"]))
    return settings, results


@pytest.fixture(scope="module")
def materialised(materialisations) -> Settings:
    """The settings of :func:`materialisations`."""
    return materialisations[0]


@pytest.fixture
def pipeline_copy(materialised, tmp_path):
    """:func:`materialised`'s settings naming a copy of its database in ``tmp_path``."""
    from conftest import copy_database

    copy = copy_database(materialised.database_path, tmp_path)
    return materialised.model_copy(update={"database": str(copy)})


def _materialise(instance, settings, selection, partition=None):
    import dagster as dg

    result = dg.materialize(ASSETS, selection=selection, partition_key=partition,
                            resources=resources_from_settings(settings), instance=instance)
    assert result.success
    return result


def _count(db, sql):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchone()[0]


def test_definitions_load():
    import dagster as dg

    with dg.instance_for_test():  # Dagster keeps global state tied to the latest live instance
        defs = build_definitions()
        keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert keys == {"selected_instances", "localised_drafts", "postedit_tools", "annotations",
                    "cultivar_dataset", "test_sets", "translations", "scores", "model_results",
                    "leaderboard",
                    "reported_results", "error_annotation_tool", "error_analysis", "charts",
                    "hf_dataset_folder", "hf_dataset_push", "model_site", "locale_shards", "site",
                    "run_failures",  # external: the failure sensor reports it (the site reads it)
                    # the source assets (assets/sources.py): what the assets read besides them
                    *(f"settings/{section.replace('.', '_')}" for section in SETTINGS_SECTIONS),
                    "model_entries", "model_files", "annotation_files", "localiser_files",
                    "source_benchmark_files", "selection_files", "data_files", "spm_model",
                    "error_annotation_files", "model_registry", "query_page_engine"}
    assert {job.name for job in JOBS} == {"evaluate_model", "build_model_site", "refresh_results",
                                          "publish_dataset", "build_benchmark", "build_dataset",
                                          "analyse_errors"}


def test_assets_materialise_and_rematerialising_replaces_rows(materialisations, pipeline_copy):
    """The module's materialisations (:func:`materialisations`), then, in a copy of their
    database (its storage root with it) and a Dagster instance of its own, one model's again."""
    import dagster as dg

    _, (test_sets, *model_results, _) = materialisations
    checks = {c.check_name: c.passed for c in test_sets.get_asset_check_evaluations()}
    assert checks == {"instance_counts": True, "nothing_missing": True}
    assert len(model_results) == len(MODELS)
    for result in model_results:
        checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
        assert checks["all_test_sets_scored"] is True
        meta = result.asset_materializations_for_node("translations")[0].metadata
        assert meta["segments"].value == N_SEGMENTS
    settings = pipeline_copy
    db = settings.database_path
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", MODELS)
        assert _count(db, "SELECT count(*) FROM translations") == 3 * N_SEGMENTS
        assert _count(db, "SELECT count(*) FROM scores") == 3 * 10 * 2
        assert _count(db, "SELECT count(*) FROM leaderboard") == 3
        assert _count(db, "SELECT count(*) FROM locale_deltas") == 6
        assert _count(db, "SELECT count(*) FROM segment_stats") == 3 * N_SEGMENTS * 2
        # 6 locales x 2 metrics, plus 2 labelled averages x 2 metrics; each has a value or a note
        assert _count(db, "SELECT count(*) FROM rank_agreement") == 6 * 2 + 2 * 2
        assert _count(db, "SELECT count(*) FROM rank_agreement "
                      "WHERE spearman IS NULL AND note IS NULL") == 0

        # a second materialisation of one partition replaces its rows (and uses the cache)
        result = _materialise(instance, settings, ["translations", "scores"], "tiny-base")
        meta = result.asset_materializations_for_node("translations")[0].metadata
        assert meta["generated"].value == 0 and meta["from_cache"].value == N_SEGMENTS
        _materialise(instance, settings, ["test_sets"])
        _materialise(instance, settings, ["model_results", "leaderboard"])
        assert _count(db, "SELECT count(*) FROM translations") == 3 * N_SEGMENTS
        assert _count(db, "SELECT count(*) FROM scores") == 3 * 10 * 2
        assert _count(db, "SELECT count(*) FROM word_recall") == 3 * 6
        assert _count(db, "SELECT count(*) FROM leaderboard") == 3
        assert _count(db, "SELECT count(DISTINCT signature) FROM scores WHERE metric = 'bleu'") == 1


def test_views_hold_what_the_pipeline_computed(pipeline_copy):
    settings = pipeline_copy
    db = settings.database_path
    leaderboard = Store(db).query("leaderboard")  # what a run prints (run_pipeline's result)
    with duckdb.connect(str(db), read_only=True) as con:
        # the leaderboard's order is by mean pairwise ∆BLEU, recomputed here from the scores view
        recomputed = dict(con.execute("""
            SELECT c.model_id, avg(c.score - f.score) FROM scores c
            JOIN scores f ON f.model_id = c.model_id AND f.metric = c.metric
                         AND f.test_set = 'flores_' || c.language
            WHERE c.kind = 'cultivar' AND c.metric = 'bleu' GROUP BY c.model_id
        """).fetchall())
        assert sorted(recomputed) == sorted(MODELS)
        assert [row["model_id"] for row in leaderboard] == sorted(
            recomputed, key=lambda m: (-recomputed[m], m))
        # the copy baseline's hypotheses are its sources, stored verbatim
        assert con.execute("SELECT count(*) FROM translations WHERE model_id = "
                           "'copy-source-baseline' AND hypothesis <> source").fetchone()[0] == 0
        # leaderboard ∆ = mean over locales of (cultivar − paired flores), from the scores view
        expected = con.execute("""
            SELECT avg(c.score - f.score) FROM scores c
            JOIN scores f ON f.model_id = c.model_id AND f.metric = c.metric
                         AND f.test_set = 'flores_' || c.language
            WHERE c.kind = 'cultivar' AND c.metric = 'bleu' AND c.model_id = 'tiny-chat'
        """).fetchone()[0]
        got = con.execute("SELECT delta_bleu FROM leaderboard WHERE model_id = 'tiny-chat'"
                          ).fetchone()[0]
        assert got == pytest.approx(expected, abs=1e-9)
        types = dict(con.execute("SELECT model_id, type FROM leaderboard").fetchall())
        assert types["copy-source-baseline"] == "baseline"
        hindi = con.execute("SELECT locale FROM locale_deltas WHERE language = 'hin' "
                            "ORDER BY locale").fetchall()
        assert hindi == [("hin_Deva_India",), ("hin_Deva_US",)]
        assert con.execute("SELECT count(*) FROM models WHERE prompt_template_hash IS NULL"
                           ).fetchone()[0] == 0


def test_leaderboard_refuses_mixed_signatures(pipeline_copy):
    settings = pipeline_copy
    store = Store(settings.database_path)
    from cultivar_assets.evaluation import score_model

    score_model(store, "tiny-base", MetricConfig(bleu_tokenize="char"))
    with pytest.raises(AggregationError, match="different signatures"):
        aggregate(store, MODELS)
    # the leaderboard tables are unchanged by the refused aggregation
    assert len(store.query("leaderboard")) == 3


def test_leaderboard_refuses_scores_from_different_sentencepiece_models(pipeline_copy,
                                                                           tmp_path):
    from metrics_helpers import train_tiny_spm

    from cultivar_assets.evaluation import score_model

    settings = pipeline_copy
    store = Store(settings.database_path)
    model_a = train_tiny_spm(tmp_path / "a", name="a", seed=0)
    model_b = train_tiny_spm(tmp_path / "b", name="b", vocab_size=40, seed=1)
    a = score_model(store, "tiny-base", MetricConfig(spm_model_path=str(model_a)))
    b = score_model(store, "tiny-chat", MetricConfig(spm_model_path=str(model_b)))
    assert a.signatures == b.signatures  # the same sacreBLEU signature (tok:flores200) ...
    with pytest.raises(AggregationError, match="different signatures or tokenizer models"):
        aggregate(store, ["tiny-base", "tiny-chat"])  # ... but different tokenizer models
    score_model(store, "tiny-chat", MetricConfig(spm_model_path=str(model_a)))
    aggregate(store, ["tiny-base", "tiny-chat"])
    hashes = {row["bleu_tokenizer_sha256"] for row in store.query("leaderboard")}
    assert hashes == {hashlib.sha256(model_a.read_bytes()).hexdigest()}


def test_failed_model_load_fails_only_its_partition(settings, tmp_path, tiny_model_dir):
    import dagster as dg
    from conftest import COPY_ENTRY, tiny_entry, write_models_file

    models_file = write_models_file(tmp_path / "broken.yaml", [
        tiny_entry("tiny-base", tiny_model_dir, "base-fewshot"),
        tiny_entry("broken", tmp_path / "no-weights-here", "base-fewshot"),
        COPY_ENTRY,
    ])
    settings = settings.model_copy(update={"models_file": str(models_file)})
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", ["tiny-base", "broken"])
        _materialise(instance, settings, ["test_sets"])
        bad = dg.materialize(ASSETS, selection=["translations"], partition_key="broken",
                             resources=resources_from_settings(settings), instance=instance,
                             raise_on_error=False)
        assert not bad.success
        failure = next(e for e in bad.all_events if e.is_step_failure)
        assert "broken" in str(failure.step_failure_data.error)  # the model id
        _materialise(instance, settings, ["translations", "scores"], "tiny-base")
        _materialise(instance, settings, ["model_results"])  # "broken" has no folder: left out
    assert _count(settings.database_path, "SELECT count(DISTINCT model_id) FROM translations") == 1
