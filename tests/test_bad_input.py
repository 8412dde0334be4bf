"""Bad input stops the pipeline with a message naming the problem; the database stays as it was."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import COPY_ENTRY, isolate_home, write_models_file
from pydantic import ValidationError

from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.data.sources import DataConfig, demo_dataset_dir
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import Engine, EngineInfo
from cultivar_assets.evaluation import score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.scoring import HypothesisCountError
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

pytestmark = pytest.mark.dagster_instances

TABLES = ["raw.dataset", "raw.instances", "raw.segments", "raw.translations", "raw.scores",
          "raw.segment_stats", "raw.word_recall", "raw.model_summary"]


def snapshot(db) -> dict[str, list]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES}


def materialise(instance, settings, selection, partition=None):
    import dagster as dg

    return dg.materialize(ASSETS, selection=selection, partition_key=partition,
                          resources=resources_from_settings(settings), instance=instance,
                          raise_on_error=False)


def failure_message(result) -> str:
    event = next(e for e in result.all_events if e.is_step_failure)
    return str(event.step_failure_data.error)


@pytest.fixture(scope="session")
def demo_run_database(tmp_path_factory) -> Path:
    """A database holding the demo data, translated and scored by the copy baseline (the
    ``test_sets``, ``translations``/``scores`` and ``leaderboard`` assets), built once a session;
    tests change copies of it."""
    import dagster as dg

    folder = tmp_path_factory.mktemp("bad_input_demo_run")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_home(monkeypatch, folder / "home")
        settings = _copy_baseline_settings(folder)
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions("models", ["copy-source-baseline"])
            for selection, partition in ((["test_sets"], None),
                                         (["translations", "scores"], "copy-source-baseline"),
                                         (["model_results", "leaderboard"], None)):
                assert materialise(instance, settings, selection, partition).success
    return settings.database_path


def _copy_baseline_settings(folder: Path) -> Settings:
    models = write_models_file(folder / "models.yaml", [COPY_ENTRY])
    return Settings(database=str(folder / "db.duckdb"), models_file=str(models),
                    models=["copy-source-baseline"], metrics=MetricConfig(bleu_tokenize="13a"))


@pytest.fixture
def demo_run(demo_run_database, tmp_path):
    """Settings naming a copy of :func:`demo_run_database` in ``tmp_path``, and a Dagster
    instance of the test's own with the copy baseline's partition."""
    import dagster as dg

    settings = _copy_baseline_settings(tmp_path)
    shutil.copyfile(demo_run_database, settings.database_path)
    # the storage root next to the database (storage.root's default): the models' files
    storage = demo_run_database.with_name(f"{demo_run_database.stem}-storage")
    shutil.copytree(storage, settings.database_path.with_name(
        f"{settings.database_path.stem}-storage"))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", ["copy-source-baseline"])
        yield settings, instance


def _local_copy_of_demo(tmp_path):
    folder = tmp_path / "cultivar_data"
    shutil.copytree(demo_dataset_dir(), folder)
    return folder


def test_unknown_locale_is_rejected_with_a_suggestion():
    with pytest.raises(ValidationError,
                       match=r"'deu_Latn_Germny'.*'deu_Latn_Germany'"):
        DataConfig(locales=["deu_Latn_Germny"])


def test_missing_column_fails_and_leaves_the_database_unchanged(demo_run, tmp_path):
    settings, instance = demo_run
    before = snapshot(settings.database_path)
    folder = _local_copy_of_demo(tmp_path)
    path = folder / "spa_Latn_Spain.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "english_localised"})
                            + "\n" for r in rows))
    bad = settings.model_copy(update={"data": DataConfig(kind="local", cultivar_path=str(folder))})
    result = materialise(instance, bad, ["test_sets"])
    assert not result.success
    message = failure_message(result)
    assert "english_localised" in message and "spa_Latn_Spain" in message
    assert snapshot(settings.database_path) == before


def test_unreadable_file_fails_and_leaves_the_database_unchanged(demo_run, tmp_path):
    settings, instance = demo_run
    before = snapshot(settings.database_path)
    folder = _local_copy_of_demo(tmp_path)
    (folder / "deu_Latn_Germany.jsonl").unlink()
    (folder / "deu_Latn_Germany.parquet").write_bytes(b"not a parquet file at all")
    bad = settings.model_copy(update={"data": DataConfig(kind="local", cultivar_path=str(folder))})
    result = materialise(instance, bad, ["test_sets"])
    assert not result.success
    assert "deu_Latn_Germany.parquet" in failure_message(result)
    assert snapshot(settings.database_path) == before


def test_missing_language_fails_when_configured_to(demo_run, tmp_path):
    settings, instance = demo_run
    before = snapshot(settings.database_path)
    flores = tmp_path / "flores" / "dev"
    flores.mkdir(parents=True)
    # a FLORES directory with English and German only: Hindi, Spanish, Chinese are missing
    (flores / "eng_Latn.dev").write_text("".join(f"English line {i}\n" for i in range(20)))
    (flores / "deu_Latn.dev").write_text("".join(f"Deutsche Zeile {i}\n" for i in range(20)))
    data = DataConfig(kind="demo", flores="local", flores_path=str(flores.parent),
                      on_missing="fail")
    result = materialise(instance, settings.model_copy(update={"data": data}), ["test_sets"])
    assert not result.success
    message = failure_message(result)
    assert "hin_Deva" in message and str(flores) in message
    assert snapshot(settings.database_path) == before


def test_mismatched_hypothesis_count_fails_and_keeps_scores(demo_run):
    settings, _ = demo_run
    store = Store(settings.database_path)
    with duckdb.connect(str(settings.database_path)) as con:
        con.execute("DELETE FROM raw.translations WHERE model_id = 'copy-source-baseline' "
                    "AND test_set = 'cultivar_hin_Deva_US' AND segment_id = 3")
    before = snapshot(settings.database_path)
    with pytest.raises(HypothesisCountError, match=r"\b11\b.*\b12\b.*cultivar_hin_Deva_US"):
        score_model(store, "copy-source-baseline", MetricConfig(bleu_tokenize="13a"))
    assert snapshot(settings.database_path) == before


def test_unknown_model_partition_names_the_registry(demo_run):
    settings, instance = demo_run
    instance.add_dynamic_partitions("models", ["no-such-model"])
    result = materialise(instance, settings, ["translations"], "no-such-model")
    assert not result.success
    assert "'no-such-model'" in failure_message(result)


class EmptyEveryThirdEngine(Engine):
    """Stands in for a model that sometimes answers nothing."""

    name = "empty-every-third"
    prompt_kinds = ("source",)

    def info(self) -> EngineInfo:
        return EngineInfo(self.name, "test", None, None)

    def generate(self, requests):
        return ["" if i % 3 == 0 else r.source for i, r in enumerate(requests)]


def test_empty_hypotheses_are_counted_and_flagged(demo_run, tmp_path, monkeypatch):
    settings, instance = demo_run
    registry = engine_registry()
    monkeypatch.setitem(registry._entries, "empty-every-third", EmptyEveryThirdEngine)
    entry = {**COPY_ENTRY, "id": "sometimes-empty", "engine": "empty-every-third"}
    models = write_models_file(tmp_path / "models2.yaml", [entry])
    settings = settings.model_copy(update={"models_file": str(models)})
    instance.add_dynamic_partitions("models", ["sometimes-empty"])
    result = materialise(instance, settings, ["translations", "scores"], "sometimes-empty")
    assert result.success
    check = next(c for c in result.get_asset_check_evaluations()
                 if c.check_name == "no_empty_hypotheses")
    assert check.passed is False
    assert check.metadata["empty"].value > 0
    assert materialise(instance, settings, ["model_results"], None).success
    with duckdb.connect(str(settings.database_path), read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM translations WHERE model_id = "
                             "'sometimes-empty' AND hypothesis = ''").fetchone()[0]
    assert stored == check.metadata["empty"].value


# --- the bad-input table: each names the file and the problem; nothing is written -------------

def _break_row(folder, locale: str, line: int, change) -> str:
    """Apply ``change`` to row ``line`` (1-based) of a demo locale file; return the file path."""
    path = folder / f"{locale}.jsonl"
    rows = [json.loads(text) for text in path.read_text("utf-8").splitlines()]
    change(rows[line - 1])
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(path)


BAD_DATA = {
    "missing column": (lambda r: r.pop("english_localised"), "has no 'english_localised'"),
    "text is a list": (lambda r: r.update(source_localised=["x"]),
                       "has a list in 'source_localised', not a text"),
    "text is a number": (lambda r: r.update(english_localised=3),
                         "has a int in 'english_localised', not a text"),
    "blank text": (lambda r: r.update(english_localised="  "), "has a blank 'english_localised'"),
    "duplicate id": (lambda r: r.update(id=0), "repeats id 0"),
    "negative id": (lambda r: r.update(id=-1), "has a negative id -1"),
}


def test_bad_data_names_file_line_and_problem_and_changes_nothing(demo_run, tmp_path):
    """Each case of BAD_DATA breaks its own row of one file (lines 2, 3, …; the duplicate repeats
    row 1's id 0): one run of the asset names every file:line with its problem, and writes
    nothing. (The loader lists every bad row at once: tests/test_data_cultivar_files.py.)"""
    settings, instance = demo_run
    before = snapshot(settings.database_path)
    folder = _local_copy_of_demo(tmp_path)
    lines = {case: line for line, case in enumerate(BAD_DATA, start=2)}
    for case, line in lines.items():
        path = _break_row(folder, "hin_Deva_US", line, BAD_DATA[case][0])
    bad = settings.model_copy(update={"data": DataConfig(kind="local", cultivar_path=str(folder))})
    result = materialise(instance, bad, ["test_sets"])
    assert not result.success
    message = failure_message(result)
    for case, line in lines.items():
        assert f"{path}:{line}: {BAD_DATA[case][1]}" in message, case
    assert snapshot(settings.database_path) == before


def test_an_id_outside_flores_names_the_cultivar_file_that_holds_it(demo_run, tmp_path):
    settings, instance = demo_run
    before = snapshot(settings.database_path)
    folder = _local_copy_of_demo(tmp_path)
    path = _break_row(folder, "spa_Latn_Spain", 3, lambda r: r.update(id=40))
    flores = tmp_path / "flores" / "dev"
    flores.mkdir(parents=True)
    for code in ("eng_Latn", "deu_Latn", "spa_Latn", "hin_Deva", "cmn_Hans"):
        (flores / f"{code}.dev").write_text("".join(f"{code} line {i}\n" for i in range(20)))
    bad = settings.model_copy(update={"data": DataConfig(
        kind="local", cultivar_path=str(folder), flores="local", flores_path=str(flores.parent))})
    result = materialise(instance, bad, ["test_sets"])
    assert not result.success
    message = failure_message(result)
    assert f"{path}:3: id 40" in message and re.search(r"\b20\b.*FLORES", message)
    assert snapshot(settings.database_path) == before


@pytest.mark.parametrize("on_missing", ["skip", "fail"])
def test_a_file_for_an_unknown_locale_is_reported(demo_run, tmp_path, on_missing):
    settings, instance = demo_run
    folder = _local_copy_of_demo(tmp_path)
    shutil.copy(folder / "deu_Latn_Germany.jsonl", folder / "deu_Latn_Austria.jsonl")
    data = DataConfig(kind="local", cultivar_path=str(folder), on_missing=on_missing)
    result = materialise(instance, settings.model_copy(update={"data": data}), ["test_sets"])
    if on_missing == "fail":
        assert not result.success
        assert "deu_Latn_Austria.jsonl" in failure_message(result)
        assert "locales.csv" in failure_message(result)  # the registry of locales
    else:
        assert result.success
        notes = result.asset_materializations_for_node("test_sets")[0].metadata["notes"]
        assert "deu\\_Latn\\_Austria.jsonl" in notes.value  # recorded and shown, not ignored
        with duckdb.connect(str(settings.database_path), read_only=True) as con:
            [stored] = con.execute("SELECT notes FROM raw.dataset").fetchone()
        assert any("deu_Latn_Austria.jsonl" in note for note in stored)


def test_a_very_long_model_id_is_refused_where_ids_are_validated(tmp_path):
    from cultivar_assets.models import ModelRegistryError, load_models

    models = write_models_file(tmp_path / "models.yaml", [{**COPY_ENTRY, "id": "m" * 250}])
    with pytest.raises(ModelRegistryError, match=r"\b96\b") as info:
        load_models(models)
    assert str(models) in str(info.value)


def test_a_damaged_translation_cache_is_named(tmp_path):
    from cultivar_assets.data.sources import load_benchmark
    from cultivar_assets.models import load_models
    from cultivar_assets.translation import TranslationCacheError, translate

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "copy-source-baseline.sqlite").write_bytes(b"garbage" * 1000)
    named = re.escape(str(cache / "copy-source-baseline.sqlite"))
    with pytest.raises(TranslationCacheError, match=named):
        translate(load_models().get("copy-source-baseline"),
                  load_benchmark(DataConfig()).test_sets(), cache_dir=cache,
                  show_progress_bar=False)


def test_the_cli_prints_one_clear_error_without_dagster_tracebacks(copy_baseline_home, tmp_path,
                                                                   capfd, monkeypatch):
    """``cultivar run`` in a copy of the session's finished run (tests/pipeline_helpers.py), its
    data a copy of the demo data with a broken row: the test sets, made again from it in a
    Dagster run, fail."""
    from cultivar_assets.cli import main

    monkeypatch.setenv("COLUMNS", "1000")  # lines as printed, however long tmp_path's name is

    folder = _local_copy_of_demo(tmp_path)
    path = _break_row(folder, "deu_Latn_Germany", 2, lambda r: r.update(id=-1))
    config = copy_baseline_home.write_config({
        **copy_baseline_home.config_values(),
        "data": {"kind": "local", "cultivar_path": str(folder)}})
    assert main(["--config", str(config), "run"]) == 1
    out, err = capfd.readouterr()
    assert f"{path}:2: " in err and "-1" in err
    assert "Traceback" not in out + err and "dagster._core" not in out + err
    assert len((out + err).strip().split("\n")) <= 8  # progress lines, then the one error


def test_the_cli_run_names_the_test_sets_it_could_not_evaluate(copy_baseline_run):
    """A test set the data lacks was recorded, but `cultivar run` exited 0 printing nothing about
    it (its ∆ shown as '–', unexplained). The session's finished `cultivar run`
    (tests/pipeline_helpers.py) reads all locales from a copy of the demo data that has no file
    of pol_Latn_Poland and one, deu_Latn_Austria.jsonl, that names no known locale."""
    folder = copy_baseline_run.data
    out = copy_baseline_run.printed  # the console 1,000 columns wide: lines as printed
    assert "Not evaluated: " in out
    [line] = [line for line in out.splitlines() if line.startswith("  cultivar_pol_Latn_Poland:")]
    assert f"no data file in {folder}" in line  # the reason, as recorded
    # a file that names no locale was recorded in the notes, but not said
    assert any(line.startswith("Data note: files that name no known locale") and
               "deu_Latn_Austria.jsonl" in line for line in out.splitlines())


# --- settings and model registry files: named, in one or two lines --------------------------


def _settings_error(path) -> str:
    from cultivar_assets.settings import SettingsError, load_settings

    with pytest.raises(SettingsError) as info:
        load_settings(path)
    return str(info.value)


def test_a_settings_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "cultivar.yaml"
    path.write_bytes("models: [caf\u00e9]\n".encode("latin-1"))
    message = _settings_error(path)
    assert str(path) in message and "0xe9" in message and "offset 12" in message
    assert "\n" not in message


def test_a_models_file_that_is_not_utf8_is_named(tmp_path):
    from cultivar_assets.models import ModelRegistryError, load_models

    path = tmp_path / "models.yaml"
    path.write_bytes("models:\n  - id: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ModelRegistryError, match=rf"{re.escape(str(path))}.*0xe9"):
        load_models(path)


def test_a_duplicate_key_in_the_settings_is_refused(tmp_path):
    """PyYAML keeps the last of two equal keys without a word: the first models list never ran."""
    path = tmp_path / "cultivar.yaml"
    path.write_text("models: [copy-source-baseline]\nmetrics: {bleu_tokenize: 13a}\n"
                    "models: [suite:demo]\n", "utf-8")
    message = _settings_error(path)
    assert str(path) in message and re.search(r"'models'.*\b1\b.*\b3\b", message)
    assert "\n" not in message


def test_a_duplicate_key_in_the_model_registry_is_refused(tmp_path):
    from cultivar_assets.models import ModelRegistryError, load_models

    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - id: a\n    type: baseline\n    type: LLM\n", "utf-8")
    with pytest.raises(ModelRegistryError, match=r"'type'.*\b3\b.*\b4\b"):
        load_models(path)


def test_an_empty_settings_file_is_refused(tmp_path):
    """It ran with the paper's defaults (not the demo's) and failed minutes later on the missing
    spBLEU model."""
    path = tmp_path / "cultivar.yaml"
    path.write_text("# nothing yet\n", "utf-8")
    message = _settings_error(path)
    assert str(path) in message and "empty" in message


def test_a_directory_given_as_the_settings_file_is_named(tmp_path):
    message = _settings_error(tmp_path)
    assert str(tmp_path) in message and "directory" in message and "\n" not in message


def test_a_yaml_syntax_error_is_one_line(tmp_path):
    path = tmp_path / "cultivar.yaml"
    path.write_text("data:\n  kind: [demo\n", "utf-8")
    message = _settings_error(path)
    assert message.startswith(f"settings file {path}: line ") and "\n" not in message


def test_a_validation_error_is_one_line_naming_the_key_without_the_value(tmp_path):
    path = tmp_path / "cultivar.yaml"
    path.write_text("data: {kind: hubb}\nmodels: [copy-source-baseline]\n", "utf-8")
    message = _settings_error(path)
    assert str(path) in message and "data.kind: " in message
    assert "\n" not in message and "hubb" not in message and "pydantic" not in message


def test_two_validation_errors_take_a_line_each(tmp_path):
    path = tmp_path / "cultivar.yaml"
    path.write_text("data: {kind: hubb}\nmodel: [x]\n", "utf-8")
    lines = _settings_error(path).split("\n")
    assert lines[0] == f"invalid settings in {path}: 2 problems:"
    assert sorted(line.strip().split(":")[0] for line in lines[1:]) == ["data.kind", "model"]


def test_a_local_source_without_its_path_is_refused_when_the_settings_are_read(tmp_path):
    path = tmp_path / "cultivar.yaml"
    path.write_text("data: {kind: local}\n", "utf-8")
    message = _settings_error(path)
    assert all(fact in message for fact in (str(path), "'local'", "cultivar_path"))
    assert "\n" not in message


@pytest.mark.parametrize(("settings", "inside", "folder", "kind", "where"), [
    # the site rebuild deleted this database, and the next steps read an empty new one
    ("database: HOME/site/results.duckdb\n", "database", "site.output_dir", "output",
     "is inside"),
    ("publish: {folder: HOME/out}\nconstruction: {annotation: {folder: HOME/out/returned}}\n",
     "construction.annotation.folder", "publish.folder", "input", "is inside"),
    ("site: {web_cache_dir: HOME/charts/web}\n", "site.web_cache_dir", "site.charts_dir",
     "output", "is inside"),
    ("site: {output_dir: HOME/www, charts_dir: HOME/www}\n", "site.charts_dir",
     "site.output_dir", "output", "is"),
    ("site: {output_dir: HOME/www, model_parts_dir: HOME/www/parts}\n",
     "site.model_parts_dir", "site.output_dir", "output", "is inside"),
    ("site: {output_dir: HOME/www, locale_shards_dir: HOME/www/locales}\n",
     "site.locale_shards_dir", "site.output_dir", "output", "is inside"),
])
def test_a_path_inside_an_output_folder_is_refused(tmp_path, monkeypatch, settings, inside,
                                                   folder, kind, where):
    home = tmp_path / "home"
    monkeypatch.setenv("CULTIVAR_HOME", str(home))
    path = tmp_path / "cultivar.yaml"
    path.write_text(settings.replace("HOME", str(home)), "utf-8")
    message = _settings_error(path)
    assert all(fact in message for fact in (str(path), f"{inside} (", f"{folder} (", kind))
    assert "\n" not in message and not home.exists()  # nothing was written


def test_outputs_apart_and_the_built_dataset_read_from_its_folder_are_accepted(tmp_path,
                                                                               monkeypatch):
    from cultivar_assets.settings import demo_settings, load_settings

    monkeypatch.setenv("CULTIVAR_HOME", str(tmp_path / "home"))
    demo_settings()  # the built data kind reads construction.dataset.folder, its own output
    path = tmp_path / "cultivar.yaml"
    path.write_text(f"database: {tmp_path}/db/results.duckdb\n"
                    f"site: {{output_dir: {tmp_path}/www/site, charts_dir: {tmp_path}/charts}}\n"
                    f"publish: {{folder: {tmp_path}/www/hub}}\n", "utf-8")
    assert load_settings(path).site.output_dir == f"{tmp_path}/www/site"


def test_an_unknown_model_names_the_registry_file(tmp_path):
    from cultivar_assets.models import load_models, select_models

    path = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    with pytest.raises(ValueError, match=rf"'x'.*{re.escape(str(path))}"):
        select_models(load_models(path), ["x"])


@pytest.mark.parametrize("written", ["off", "no", "false", "'off'"])
def test_query_page_off_as_yaml_reads_it(tmp_path, written):
    """`query_page: off` is YAML's boolean false: it failed with a message that did not say why."""
    from cultivar_assets.settings import load_settings

    path = tmp_path / "cultivar.yaml"
    path.write_text(f"site: {{query_page: {written}}}\n", "utf-8")
    assert load_settings(path).site.query_page == "off"


def test_query_page_on_says_how_to_write_a_mode(tmp_path):
    path = tmp_path / "cultivar.yaml"
    path.write_text("site: {query_page: on}\n", "utf-8")
    message = _settings_error(path)
    assert all(fact in message for fact in (str(path), "site.query_page", "boolean",
                                            "auto, cached, required, off", "query_page: 'auto'"))
    assert "\n" not in message


# --- malformed inputs: each refused in one or two lines, nothing changed ---------------------


def _cli(argv: list[str], capfd) -> tuple[int, str]:
    """``cultivar`` ``argv`` in this process: its exit status and what it printed to stderr."""
    from cultivar_assets.cli import main

    code = main(argv)
    return code, capfd.readouterr().err


def test_an_empty_model_selection_is_refused(tmp_path):
    """`models: []` ran no model and published a site without one."""
    path = tmp_path / "cultivar.yaml"
    path.write_text("models: []\n", "utf-8")
    message = _settings_error(path)
    assert all(fact in message for fact in (str(path), "models", "suite:<name>", "suite:demo"))
    assert "\n" not in message


@pytest.mark.parametrize("written", ["''", "'  '"])
def test_an_empty_database_path_in_the_settings_is_refused(tmp_path, written):
    """`database: ''` fell back to the default database without a word."""
    path = tmp_path / "cultivar.yaml"
    path.write_text(f"database: {written}\n", "utf-8")
    message = _settings_error(path)
    assert str(path) in message and "database" in message and "\n" not in message


def _commands_with_database(parser, prefix=()) -> list[tuple[str, ...]]:
    """Every ``cultivar`` subcommand (as its words) that takes ``--database``."""
    import argparse

    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if any("--database" in a.option_strings for a in child._actions):
                    found.append((*prefix, name))
                found += _commands_with_database(child, (*prefix, name))
    return found


def test_an_empty_database_option_is_refused_by_every_command_that_takes_it(capfd):
    """`--database ''` was taken as "not given": the command used the default database."""
    import argparse

    from cultivar_assets.cli import build_parser
    from cultivar_assets.cli.common import _settings

    commands = _commands_with_database(build_parser())
    assert {"demo", "run", "leaderboard", "query", "score", "significance"} <= {
        c[0] for c in commands}
    for words in commands:  # the options _settings reads, as each command's parser gives them
        args = argparse.Namespace(command=words[0], config=None, database="",
                                  live_localiser=False)
        with pytest.raises(ValueError, match=r"^--database ''"):
            _settings(args)
    code, err = _cli(["leaderboard", "--database", ""], capfd)
    # wording is the interface: the command's error prefix (cli/common.py: print_error)
    assert code == 1 and err.startswith("cultivar leaderboard: error: ") and err.count("\n") == 1
    assert "--database ''" in err


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-3"])
def test_a_parameter_count_must_be_a_finite_positive_number(tmp_path, value):
    """`params_total_b: .inf` (and .nan) were stored and shown; -3 was already refused."""
    from cultivar_assets.models import ModelRegistryError, load_models

    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - id: m\n    hf_id: org/m\n    type: LLM\n    family: F\n"
                    f"    params_total_b: {value}\n    engine: transformers\n"
                    "    prompt_style: chat-instruction\n", "utf-8")
    with pytest.raises(ModelRegistryError, match=r"entry 1 \(m\): params_total_b: ") as info:
        load_models(path)
    assert str(path) in str(info.value) and len(str(info.value).split("\n")) == 2


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1.5])
def test_a_submissions_parameter_count_must_be_finite_and_positive(tmp_path, value):
    from test_submissions import MANIFEST, write_submission

    from cultivar_assets.engines.submission import SubmissionError, read_submission

    folder = write_submission(tmp_path / "s", [{"test_set": "flores_deu_Latn", "id": 0,
                                                "hypothesis": "x"}],
                              {**MANIFEST, "params_total_b": value})
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    assert caught.value.problems == [f"{folder / 'manifest.yaml'}: params_total_b must be a "
                                     "positive, finite number of billions"]


@pytest.mark.parametrize("hf_id", ["../../x", "org/../m", "./m", "org//m", "~/m", "org\\m",
                                   "org/m\n", ""])
def test_an_hf_id_that_is_a_relative_path_is_refused(hf_id):
    """`models add ../../x` stored hf_id '../../x': the engine loads whatever folder is there."""
    from cultivar_assets.models import ModelRegistryError, parse_models

    entry = {**COPY_ENTRY, "id": "m", "type": "LLM", "family": "F", "hf_id": hf_id}
    with pytest.raises(ModelRegistryError, match=r"entry 1 \(m\): hf_id: "):
        parse_models([entry], "models.yaml")


@pytest.mark.parametrize("hf_id", ["org/m", "Qwen/Qwen3.5-4B", "gpt-4o-mini", "/abs/folder/m",
                                   "accounts/org/models/m"])
def test_hub_ids_api_names_and_absolute_folders_are_hf_ids(hf_id):
    from cultivar_assets.models import parse_models

    entry = {**COPY_ENTRY, "id": "m", "type": "LLM", "family": "F", "hf_id": hf_id}
    assert parse_models([entry], "models.yaml")[0].hf_id == hf_id


def test_models_add_of_a_relative_path_changes_nothing(tmp_path, capfd):
    path = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    before = path.read_bytes()
    code, err = _cli(["models", "add", "../../x", "--type", "LLM", "--engine", "transformers",
                      "--family", "F", "--file", str(path)], capfd)
    assert code == 1 and path.read_bytes() == before
    assert "entry 2 (x): hf_id: " in err and str(path) in err
    assert len(err.strip().split("\n")) == 2


@pytest.mark.parametrize("samples", [-5, 0])
def test_significance_needs_at_least_one_resample(tmp_path, capfd, samples):
    """`--samples -5` ran sacreBLEU with no resample at all; 0 meant its default."""
    from cultivar_assets.evaluation.paired_tests import PairedTestError, paired_tests

    database = tmp_path / "none.duckdb"
    with pytest.raises(PairedTestError, match=rf"^{samples} .*\b1\b"):
        paired_tests(Store(database), ["a", "b"], n_samples=samples)
    code, err = _cli(["significance", "a", "b", "--samples", str(samples), "--database",
                      str(database)], capfd)
    assert code == 1 and err.count("\n") == 1 and re.search(rf"{samples} .*\b1\b", err)
    assert not database.exists()


def test_a_repeated_key_in_an_outputs_line_is_refused(tmp_path):
    """JSON keeps the last of two keys: the first hypothesis was dropped without a word."""
    from test_submissions import write_submission

    from cultivar_assets.engines.submission import SubmissionError, read_submission

    folder = write_submission(tmp_path / "s", raw_lines=[
        b'{"test_set": "flores_deu_Latn", "id": 0, "hypothesis": "a", "hypothesis": "b"}'])
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    assert caught.value.problems == [f"{folder / 'outputs.jsonl'}:1: key 'hypothesis' is written "
                                     "twice in one object; keep one"]
    assert "\n" not in str(caught.value)


def test_a_repeated_key_in_an_annotation_files_final_is_refused(tmp_path):
    """An annotation item's `final` with `source` twice was ingested with the last one."""
    from annotation_helpers import annotation_document, demo_drafts

    from cultivar_assets.construction.annotation.file import (
        AnnotationFileError,
        read_annotation_file,
    )
    from cultivar_assets.construction.annotation.task import AnnotationTask

    task = AnnotationTask.from_drafts(demo_drafts(flagged=True))
    text = json.dumps(annotation_document(task, {}), ensure_ascii=False)
    assert text.count('"final": {') == len(task.drafts)
    second = task.drafts[1].instance_id
    head, tail = text.split('"final": {', 2)[:2], text.split('"final": {', 2)[2]
    text = '"final": {'.join(head) + '"final": {"source": "not this one", ' + tail
    path = tmp_path / "file.json"
    path.write_text(text, "utf-8")
    with pytest.raises(AnnotationFileError) as caught:
        read_annotation_file(path, task)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}: instance {second}, final.source: is written twice in one object (a JSON reader "
        "keeps one of the two values); keep the one you mean"]


def test_a_directory_named_like_an_error_file_is_refused(tmp_path):
    """A directory `x.errors.json` was left out of the error analysis without a word."""
    from cultivar_assets.error_analysis.file import ErrorFileError, find_error_files

    (tmp_path / "deu_Latn_Germany-1.errors.json").mkdir()
    with pytest.raises(ErrorFileError) as caught:
        find_error_files(tmp_path)
    problem = str(caught.value.problems[0])
    assert problem.startswith(f"{tmp_path / 'deu_Latn_Germany-1.errors.json'}: (file): ")
    assert "directory" in problem and "*.errors.json" in problem and "\n" not in problem


def test_a_directory_named_like_an_annotation_file_is_refused(tmp_path):
    from cultivar_assets.construction.annotation.file import (
        AnnotationFileError,
        find_annotation_file,
    )

    (tmp_path / "deu_Latn_Germany-1.annotations.json").mkdir()
    named = re.escape(str(tmp_path / "deu_Latn_Germany-1.annotations.json"))
    with pytest.raises(AnnotationFileError, match=rf"{named}.*directory"):
        find_annotation_file(tmp_path, "deu_Latn_Germany")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_utf16_outputs_file_is_one_problem(tmp_path, encoding):
    """Every line of a UTF-16 file was "not UTF-8": 135 lines for the demo's submission."""
    from test_submissions import write_submission

    from cultivar_assets.engines.submission import SubmissionError, read_submission

    folder = write_submission(tmp_path / "s")
    outputs = folder / "outputs.jsonl"
    outputs.write_bytes("".join(json.dumps({"test_set": "flores_deu_Latn", "id": i,
                                            "hypothesis": "x"}) + "\n"
                                for i in range(12)).encode(encoding))
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    [problem] = caught.value.problems
    assert problem.startswith(f"{outputs}: ") and encoding.upper()[:6] in problem
    assert "UTF-8" in problem
    assert "\n" not in str(caught.value)


def test_score_with_a_directory_as_its_database_registers_nothing(tmp_path, capfd):
    """`score --database <a directory>` failed only after adding its entry to the registry."""
    from conftest import copy_baseline_config_file
    from test_submissions import _rows, write_submission

    from cultivar_assets.data.sources import load_benchmark

    config = copy_baseline_config_file(tmp_path)
    folder = write_submission(tmp_path / "submission",
                              _rows(load_benchmark(DataConfig(kind="demo")).test_sets()))
    registry = tmp_path / "models.yaml"
    before = registry.read_bytes()
    code, err = _cli(["--config", str(config), "score", str(folder), "--database",
                      str(tmp_path)], capfd)
    assert code == 1 and registry.read_bytes() == before
    # wording is the interface: the command's error prefix (cli/common.py: print_error)
    assert err.startswith("cultivar score: error: ") and err.count("\n") == 1
    assert str(tmp_path) in err and "directory" in err


HOSTILE = "a\x1b[2J\x1b]0;owned\x07\u202eb\u2066c\rd\x9be"
ESCAPED = "a\\x1b[2J\\x1b]0;owned\\x07\\u202eb\\u2066c\\rd\\x9be"


def test_escape_sequences_and_bidi_overrides_in_an_error_are_printed_escaped(tmp_path, capfd):
    """A settings path (or any input) holding ESC, CR, C1 or U+202E reached the terminal raw."""
    config = tmp_path / f"{HOSTILE}.yaml"
    config.write_text("models: []\n", "utf-8")
    code, err = _cli(["--config", str(config), "leaderboard"], capfd)
    assert code == 1 and f"{tmp_path}/{ESCAPED}.yaml" in err
    assert not any(ch in err for ch in "\x1b\x07\r\x9b\u202e\u2066")


def test_argparse_errors_are_printed_escaped(capfd):
    from cultivar_assets.cli import main

    with pytest.raises(SystemExit):
        main(["query", "SELECT 1", HOSTILE])  # "unrecognized arguments: <them>", unquoted
    err = capfd.readouterr().err
    assert ESCAPED in err and not any(ch in err for ch in "\x1b\x07\r\x9b\u202e\u2066")


def test_the_commands_own_error_lines_are_printed_escaped(tmp_path, capfd):
    """`cultivar score` and `cultivar significance` printed their errors themselves, raw."""
    from conftest import copy_baseline_config_file

    config = copy_baseline_config_file(tmp_path)
    folder = tmp_path / HOSTILE
    code, err = _cli(["--config", str(config), "score", str(folder)], capfd)
    assert code == 1 and ESCAPED in err and "\x1b" not in err and "\u202e" not in err
    with Store(tmp_path / "x.duckdb").connect():  # a database without translations
        pass
    code, err = _cli(["significance", HOSTILE, "b", "--database", str(tmp_path / "x.duckdb")],
                     capfd)
    assert code == 1 and err.startswith(f"cultivar significance: no stored translations of "
                                        f"{ESCAPED}, b")
    assert "\x1b" not in err and "\u202e" not in err


def test_a_localiser_model_that_is_a_relative_path_is_refused_with_the_settings(tmp_path):
    """The localiser's model becomes its entry's hf_id: refused when the settings are read, not
    as a pydantic traceback when localisation starts."""
    path = tmp_path / "cultivar.yaml"
    path.write_text("construction: {localisation: {model: ../weights}}\n", "utf-8")
    message = _settings_error(path)
    assert str(path) in message and "construction.localisation.model: " in message
