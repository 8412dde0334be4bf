"""Submitted outputs (engine ``outputs``, ``cultivar score``): the format's reader and validator,
the fingerprint as the submission's content hash, the model files' data version as the outputs'
content, and scoring end to end on the demo data (rescoring a changed submission and the
registry of a run without a models file: slow; fast with the run recorded)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml

from cultivar_assets.cli import main
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.engines import submission as submission_module
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.engines.submission import (
    MAX_HYPOTHESIS_CHARS,
    SubmissionError,
    check_coverage,
    read_submission,
)
from cultivar_assets.models import ModelRegistryError, parse_models
from cultivar_assets.specs import ModelSpec

MANIFEST = {"id": "copied-sources", "type": "LLM", "family": "Copy", "params_total_b": 0.001,
            "license": "MIT",
            "produced": {"system": "mytool", "version": "1.2", "prompt": "none (sources copied)",
                         "date": "2026-12-01"}}


@pytest.fixture(scope="module")
def test_sets():
    return load_benchmark(DataConfig(kind="demo")).test_sets()


def _rows(test_sets, hypothesis=lambda segment: segment.source):
    return [{"test_set": t.name, "id": s.segment_id, "hypothesis": hypothesis(s)}
            for t in test_sets for s in t.segments]


def write_submission(folder: Path, rows: list[dict] | None = None, manifest: dict | None = None,
                     raw_lines: list[bytes] | None = None) -> Path:
    """A submission folder: ``manifest.yaml`` and ``outputs.jsonl`` (``rows`` as JSON lines,
    then ``raw_lines`` as they are)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest or MANIFEST), "utf-8")
    lines = [json.dumps(row, ensure_ascii=False).encode("utf-8") for row in rows or []]
    (folder / "outputs.jsonl").write_bytes(b"\n".join([*lines, *(raw_lines or [])]) + b"\n")
    return folder


def _problems(folder: Path, test_sets) -> list[str]:
    with pytest.raises(SubmissionError) as caught:
        check_coverage(read_submission(folder), test_sets)
    return caught.value.problems


def test_a_good_submission_reads_in_either_form(tmp_path, test_sets):
    rows = _rows(test_sets)
    by_name = read_submission(write_submission(tmp_path / "a", rows))
    check_coverage(by_name, test_sets)
    assert len(by_name.hypotheses) == sum(len(t.segments) for t in test_sets) == 120
    # the same hypotheses named by locale and side
    locale_rows = []
    for t in test_sets:
        locales = [u.locale for u in test_sets if u.kind == "cultivar" and u.language == t.language]
        where = ({"locale": t.locale, "side": "cultivar"} if t.kind == "cultivar"
                 else {"locale": locales[0], "side": "flores"})
        locale_rows += [{**where, "id": s.segment_id, "hypothesis": s.source} for s in t.segments]
    by_locale = read_submission(write_submission(tmp_path / "b", locale_rows))
    check_coverage(by_locale, test_sets)
    assert by_locale.hypotheses == by_name.hypotheses
    # a JSON manifest
    as_json = write_submission(tmp_path / "c", rows)
    (as_json / "manifest.yaml").rename(as_json / "manifest.json")
    (as_json / "manifest.json").write_text(json.dumps(MANIFEST), "utf-8")
    assert read_submission(as_json).manifest == MANIFEST
    assert by_name.registry_entry()["engine"] == "outputs"


def test_missing_duplicate_and_extra_ids_and_test_sets_are_each_reported(tmp_path, test_sets):
    rows = _rows(test_sets)
    first, second = rows[0], rows[1]
    rows = [row for row in rows if row is not first]  # missing id
    rows.append(dict(second))  # duplicate id
    rows.append({"test_set": "cultivar_fra_Latn_France", "id": 1, "hypothesis": "x"})
    rows.append({"test_set": second["test_set"], "id": 9999, "hypothesis": "x"})
    folder = write_submission(tmp_path / "s", rows)
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    outputs = folder / "outputs.jsonl"
    assert caught.value.problems == [
        f"{outputs}:{len(rows) - 2}: duplicate {second['test_set']} id {second['id']} "
        "(first on line 1)"]
    rows.pop(-3)  # without the duplicate: the coverage problems, all at once
    problems = _problems(write_submission(tmp_path / "s", rows), test_sets)
    assert problems[0].startswith(f"{outputs}:{len(rows) - 1}: ")
    assert "'cultivar_fra_Latn_France'" in problems[0]
    assert any(p.startswith(f"{outputs}: {first['test_set']}: 1 ") and "missing" in p
               and p.endswith(f": {first['id']}") for p in problems)
    assert any(p.startswith(f"{outputs}:{len(rows)}: {second['test_set']} ") and "9999" in p
               for p in problems)
    assert len(problems) == 3


def test_encoding_problems_are_reported_with_their_lines(tmp_path, test_sets):
    rows = _rows(test_sets)
    bad = [b'{"test_set": "x", "id": 1, "hypothesis": "caf\xe9"}',  # Latin-1, not UTF-8
           b'{"test_set": "x", "id": 2, "hypothesis": "\\ud800 lone"}',
           b'{"test_set": "x", "id": 3, "hypothesis": "nul \\u0000"}',
           b'not json']
    folder = write_submission(tmp_path / "s", rows, raw_lines=bad)
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    outputs = folder / "outputs.jsonl"
    n = len(rows)
    problems = caught.value.problems
    assert problems[0].startswith(f"{outputs}:{n + 1}: ") and "UTF-8" in problems[0]
    assert "byte 46" in problems[0]
    assert problems[1].startswith(f"{outputs}:{n + 2}: hypothesis ")
    assert "surrogate" in problems[1]
    assert problems[2].startswith(f"{outputs}:{n + 3}: hypothesis ") and "NUL" in problems[2]
    assert problems[3].startswith(f"{outputs}:{n + 4}: ") and "JSON" in problems[3]
    assert len(problems) == 4


def write_tsv(folder: Path, rows: list[dict], raw_lines: list[bytes] = (),
              header: bytes = b"test_set\tid\thypothesis") -> Path:
    """A submission folder with ``outputs.tsv`` (the header, ``rows``, then ``raw_lines``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(yaml.safe_dump(MANIFEST), "utf-8")
    lines = [f"{r['test_set']}\t{r['id']}\t{r['hypothesis']}".encode() for r in rows]
    (folder / "outputs.tsv").write_bytes(b"\n".join([header, *lines, *raw_lines]) + b"\n")
    return folder


def test_a_tsv_submission_reads_as_its_jsonl_twin(tmp_path, test_sets):
    rows = _rows(test_sets)
    as_tsv = read_submission(write_tsv(tmp_path / "tsv", rows), test_sets)
    assert as_tsv.outputs_path.name == "outputs.tsv"
    assert as_tsv.hypotheses == read_submission(write_submission(tmp_path / "jsonl", rows)
                                                ).hypotheses
    assert as_tsv.lines[(rows[0]["test_set"], rows[0]["id"])] == 2  # line 1 is the header
    # named by the manifest, with Windows line ends
    named = write_tsv(tmp_path / "named", rows)
    (named / "outputs.tsv").rename(named / "mine.tsv")
    (named / "mine.tsv").write_bytes((named / "mine.tsv").read_bytes().replace(b"\n", b"\r\n"))
    (named / "manifest.yaml").write_text(yaml.safe_dump({**MANIFEST, "outputs": "mine.tsv"}))
    assert read_submission(named, test_sets).hypotheses == as_tsv.hypotheses


def test_tsv_problems_are_reported_with_their_lines(tmp_path, test_sets):
    rows = _rows(test_sets)
    bad = [b"cultivar_deu_Latn_Germany\t1", b"cultivar_deu_Latn_Germany\tone\tx",
           b"cultivar_deu_Latn_Germany\t2\ta\ttab", b"cultivar_deu_Latn_Germany\t3\tcaf\xe9",
           f"{rows[0]['test_set']}\t{rows[0]['id']}\tagain".encode()]
    folder = write_tsv(tmp_path / "s", rows, bad, header=b"test_set,id,hypothesis")
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    outputs = folder / "outputs.tsv"
    n = len(rows) + 1
    assert caught.value.problems == [
        f"{outputs}:1: the header must be test_set<TAB>id<TAB>hypothesis (one tab between names)",
        f"{outputs}:{n + 1}: 2 tab-separated field(s), not 3 (test_set, id, hypothesis; a "
        "hypothesis holds no tab)",
        f"{outputs}:{n + 3}: 4 tab-separated field(s), not 3 (test_set, id, hypothesis; a "
        "hypothesis holds no tab)",
        f"{outputs}:{n + 4}: not UTF-8 (byte 32 of the line)",
        f"{outputs}:{n + 2}: id must be an integer (the instance id)",
        f"{outputs}:{n + 5}: duplicate {rows[0]['test_set']} id {rows[0]['id']} (first on line 2)"]


def test_oversized_hypotheses_and_files_are_refused(tmp_path, test_sets, monkeypatch):
    rows = _rows(test_sets)
    rows[5]["hypothesis"] = "a" * (MAX_HYPOTHESIS_CHARS + 1)
    folder = write_submission(tmp_path / "s", rows)
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    assert caught.value.problems == [
        f"{folder / 'outputs.jsonl'}:6: hypothesis of {MAX_HYPOTHESIS_CHARS + 1} characters, "
        f"over the limit of {MAX_HYPOTHESIS_CHARS}"]
    monkeypatch.setattr(submission_module, "MAX_OUTPUTS_BYTES", 1000)
    folder = write_submission(tmp_path / "t", _rows(test_sets))
    size = (folder / "outputs.jsonl").stat().st_size
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    assert caught.value.problems == [f"outputs file {folder / 'outputs.jsonl'} is {size} bytes, "
                                     "over the limit of 1000 bytes"]


@pytest.mark.parametrize(("change", "message"), [
    ({"type": "NMT"}, "type 'NMT' is not one of the registry's types (LLM, MT, LLM+MT, "
                      "baseline)"),
    ({"type": "baseline", "family": "Baseline", "params_total_b": 8},
     "type 'baseline' is not a model and has no parameters; a system with parameters is an LLM, "
     "MT or LLM+MT"),
    ({"type": "baseline", "params_total_b": None},
     "type 'baseline' has family 'Baseline', not 'Copy'"),
    ({"produced": {"system": "mytool"}}, "missing field 'produced.version'"),
    ({"license": None}, "missing field 'license'"),
])
def test_a_manifest_that_lies_about_its_type_or_misses_fields_is_refused(tmp_path, test_sets,
                                                                         change, message):
    folder = write_submission(tmp_path / "s", _rows(test_sets), {**MANIFEST, **change})
    with pytest.raises(SubmissionError) as caught:
        read_submission(folder)
    assert f"{folder / 'manifest.yaml'}: {message}" in caught.value.problems


def test_the_fingerprint_is_the_submissions_content_hash(tmp_path, test_sets):
    folder = write_submission(tmp_path / "s", _rows(test_sets))
    entry = read_submission(folder).registry_entry()
    spec = ModelSpec.model_validate(entry)
    before = run_fingerprint(spec)
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    assert run_fingerprint(spec.model_copy(update={"path": str(moved)})) == before
    write_submission(folder, _rows(test_sets, lambda s: s.reference))
    assert run_fingerprint(spec) != before


def test_path_goes_with_the_outputs_engine_only():
    base = {"id": "x", "type": "LLM", "family": "F", "prompt_style": "source"}
    with pytest.raises(ModelRegistryError, match=r"\bpath\b.*'outputs'"):
        parse_models([{**base, "engine": "outputs"}], "test")
    with pytest.raises(ModelRegistryError, match=r"\bpath\b.*'outputs'"):
        parse_models([{**base, "engine": "copy-source", "path": "/x"}], "test")


def _scores(database: Path, model_id: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute("SELECT test_set, metric, score FROM raw.scores WHERE model_id = ? "
                           "ORDER BY ALL", [model_id]).fetchall()


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "dagster" not in p.parts}


def test_cultivar_score_scores_a_submission_through_the_pipeline(tmp_path, copy_baseline_home,
                                                                 test_sets, capsys):
    """``cultivar score`` in a copy of the session's finished ``cultivar run`` of the copy
    baseline (tests/pipeline_helpers.py)."""
    config = copy_baseline_home.config
    folder = write_submission(tmp_path / "submission", _rows(test_sets))
    assert main(["--config", str(config), "score", str(folder)]) == 0
    out = capsys.readouterr().out
    database = copy_baseline_home.database
    # the sources copied score exactly as the copy-source baseline does
    assert _scores(database, "copied-sources") == _scores(database, "copy-source-baseline")
    assert len(_scores(database, "copied-sources")) > 0
    note = "outputs submitted, produced with mytool 1.2, not run here"
    site = copy_baseline_home.home / "site"
    assert note in (site / "index.html").read_text("utf-8")
    page = (site / "models" / "copied-sources.html").read_text("utf-8")
    assert note in page
    # a submitted model's card: its weights are not recorded (it is a model, not run here), and
    # its 0.001 B parameters are not rounded to 0.00
    assert "<dt>Weights</dt><dd>not recorded (outputs submitted, not run here)</dd>" in page
    assert "not a model" not in page
    assert "<dt>Parameters (B)</dt><dd>0.001</dd>" in page
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute("SELECT engine_version FROM models WHERE model_id = "
                           "'copied-sources'").fetchone()[0].startswith(note + "; dated 2026-12-01")
        version, = con.execute("SELECT engine_version FROM models WHERE model_id = "
                               "'copied-sources'").fetchone()
        assert version.endswith("; prompt: none (sources copied)")  # the manifest's prompt
    assert f"copied-sources: {note}" in out

    # scored again unchanged, its assets fresh, and after a change: test_a_changed_submission_
    # is_scored_again_through_the_pipeline (slow); fast: the same entry and data version
    # (test_the_submitted_outputs_are_the_model_files_version)

    # a bad submission: every problem listed, exit status 1, nothing written
    rows = _rows(test_sets)
    bad = write_submission(tmp_path / "bad", [*rows[1:], rows[2]],
                           {**MANIFEST, "id": "bad-one", "type": "NMT"})
    before = _tree(tmp_path)
    assert main(["--config", str(config), "score", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "'NMT'" in err and "type" in err
    assert f"{bad / 'outputs.jsonl'}:{len(rows)}: duplicate" in err
    assert f"{bad / 'outputs.jsonl'}: {rows[0]['test_set']}: 1 missing id(s)" in err
    assert "Nothing was written." in err
    assert _tree(tmp_path) == before

    # an id the registry gives another model, a manifest that no longer matches its entry
    taken = write_submission(tmp_path / "taken", rows, {**MANIFEST, "id": "copy-source-baseline"})
    assert main(["--config", str(config), "score", str(taken)]) == 1
    err = capsys.readouterr().err
    assert "'copy-source-baseline'" in err and "registry" in err
    write_submission(folder, rows, {**MANIFEST, "type": "MT"})
    before = _tree(tmp_path)
    assert main(["--config", str(config), "score", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "'copied-sources'" in err and "manifest" in err and "type" in err
    assert _tree(tmp_path) == before


@pytest.mark.slow  # runs again through the pipeline; fast: the entry and data version (below)
def test_a_changed_submission_is_scored_again_through_the_pipeline(tmp_path, copy_baseline_home,
                                                                   test_sets, capsys):
    """``cultivar score`` in a copy of the session's finished run, again unchanged (Dagster
    reports the model's assets fresh), then again after a change of the hypotheses: the model's
    assets are materialised again and the scores change."""
    config = copy_baseline_home.config
    database = copy_baseline_home.database
    folder = write_submission(tmp_path / "submission", _rows(test_sets))
    assert main(["--config", str(config), "score", str(folder)]) == 0
    assert _scores(database, "copied-sources") == _scores(database, "copy-source-baseline")
    capsys.readouterr()
    assert main(["--config", str(config), "score", str(folder)]) == 0
    assert "scores [copied-sources]: fresh, skipped" in capsys.readouterr().out
    write_submission(folder, _rows(test_sets, lambda s: s.reference))
    assert main(["--config", str(config), "score", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "translations [copied-sources]: " in out and "materialising" in out
    assert _scores(database, "copied-sources") != _scores(database, "copy-source-baseline")


def test_the_submitted_outputs_are_the_model_files_version(tmp_path, isolated_home, test_sets,
                                                           monkeypatch):
    """The data version the source asset ``model_files`` observes for a submitted model
    (:func:`~cultivar_assets.versions.inputs.model_files_digest` of the entry ``cultivar score``
    registers): the same while the outputs are written again unchanged and the submission is
    scored again (its entry written again, the same), another after one hypothesis changed
    (what makes the model's translations stale). (The runs through the pipeline, fresh when
    unchanged: test_a_changed_submission_is_scored_again_through_the_pipeline, slow.)"""
    from cultivar_assets.cli import pipeline_run
    from cultivar_assets.models import load_models
    from cultivar_assets.versions.inputs import model_files_digest

    monkeypatch.setattr(pipeline_run, "run_and_report", lambda settings: 0)
    from conftest import COPY_ENTRY, write_models_file

    models_file = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"database": str(tmp_path / "results.duckdb"),
                                      "models_file": str(models_file),
                                      "data": {"kind": "demo"}}), "utf-8")
    rows = _rows(test_sets)
    folder = write_submission(tmp_path / "submission", rows)
    assert main(["--config", str(config), "score", str(folder)]) == 0

    def version() -> str:
        return model_files_digest(load_models(models_file).get("copied-sources"))

    first = version()
    registered = models_file.read_bytes()
    write_submission(folder, rows)
    assert version() == first
    assert main(["--config", str(config), "score", str(folder)]) == 0  # scored again, unchanged
    assert models_file.read_bytes() == registered and version() == first
    write_submission(folder, [{**rows[0], "hypothesis": rows[0]["hypothesis"] + "!"}, *rows[1:]])
    changed = version()
    assert changed != first
    write_submission(folder, rows)
    assert version() == first


def test_without_a_models_file_the_run_reads_the_entry_in_a_copy_of_the_bundled_registry(
        tmp_path, isolated_home, test_sets, monkeypatch):
    """``cultivar score`` with settings that name no models file: the entry goes to
    ``$CULTIVAR_HOME/submitted-models.yaml``, a copy of the bundled registry, and the run it
    starts (:func:`~cultivar_assets.cli.pipeline_run.run_and_report`, here recorded, not run)
    reads that file for the submitted model alone."""
    from cultivar_assets.cli import pipeline_run
    from cultivar_assets.models import load_models

    started = []
    monkeypatch.setattr(pipeline_run, "run_and_report",
                        lambda settings: started.append(settings.model_copy(deep=True)) or 0)
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"database": str(tmp_path / "results.duckdb"),
                                      "data": {"kind": "demo"}}), "utf-8")
    folder = write_submission(tmp_path / "submission", _rows(test_sets))
    assert main(["--config", str(config), "score", str(folder)]) == 0
    registry_file = isolated_home / "submitted-models.yaml"
    registry = load_models(registry_file)
    assert registry.get("copied-sources").path == str(folder / "manifest.yaml")
    assert set(load_models()) < set(registry)
    (settings,) = started
    assert settings.models_file == str(registry_file) and settings.models == ["copied-sources"]


@pytest.mark.slow  # the run itself: the fast test above records what the run is given
def test_without_a_models_file_the_entry_goes_to_a_copy_of_the_bundled_registry(
        tmp_path, copy_baseline_home, test_sets):
    """``cultivar score`` in a copy of the session's finished run whose settings then name no
    models file."""
    from cultivar_assets.models import load_models

    settings = copy_baseline_home.config_values()
    del settings["models_file"]
    config = copy_baseline_home.write_config(settings)
    folder = write_submission(tmp_path / "submission", _rows(test_sets))
    assert main(["--config", str(config), "score", str(folder)]) == 0
    registry = load_models(copy_baseline_home.home / "submitted-models.yaml")
    assert registry.get("copied-sources").path == str(folder / "manifest.yaml")
    assert set(load_models()) < set(registry)
    assert len(_scores(copy_baseline_home.database, "copied-sources")) > 0


@pytest.mark.dagster_instances
def test_the_registry_sensor_picks_up_new_and_changed_submissions(tmp_path, test_sets):
    import dagster as dg

    from cultivar_assets.assets.graph import ASSETS, JOBS
    from cultivar_assets.automation import model_registry_sensor
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.models import add_model_entry
    from cultivar_assets.resources import resources_from_settings
    from cultivar_assets.settings import Settings

    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [
        {"id": "copy-source-baseline", "type": "baseline", "family": "Baseline",
         "engine": "copy-source", "prompt_style": "source", "suites": ["watched"]}]}), "utf-8")
    settings = Settings(database=str(tmp_path / "db.duckdb"), models_file=str(models),
                        models=["suite:watched"],
                        metrics=MetricConfig(bleu_tokenize="13a"))
    defs = dg.Definitions(assets=ASSETS, jobs=JOBS, sensors=[model_registry_sensor],
                          resources=resources_from_settings(settings))

    def tick(instance, cursor):
        context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                                          resources=defs.resources)
        result = model_registry_sensor(context)
        for request in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(request.partitions_def_name,
                                            list(request.partition_keys))
        return result

    with dg.instance_for_test() as instance:
        first = tick(instance, None)
        folder = write_submission(tmp_path / "submission", _rows(test_sets))
        add_model_entry(models, {**read_submission(folder).registry_entry(),
                                 "suites": ["watched"]})
        added = tick(instance, first.cursor)
        assert [(r.partition_key, r.tags["cultivar/reason"]) for r in added.run_requests] == [
            ("copied-sources", "new in registry")]
        assert tick(instance, added.cursor).run_requests == []  # unchanged: not run again
        write_submission(folder, _rows(test_sets, lambda s: s.reference))
        changed = tick(instance, added.cursor)
        assert [(r.partition_key, r.tags["cultivar/reason"]) for r in changed.run_requests] == [
            ("copied-sources", "changed in registry")]


def test_scoring_against_a_dataset_not_yet_built_says_how_to_build_it(tmp_path, homes, test_sets,
                                                                      capsys):
    """``data: built`` before ``cultivar build dataset``: exit 1 with the way to build it, and
    nothing written (no database, no registry copy, no run)."""
    folder = write_submission(tmp_path / "submission", _rows(test_sets))
    missing = tmp_path / "not-built"
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump({"data": {"kind": "built", "cultivar_path": str(missing)},
                                      "database": str(tmp_path / "results.duckdb")}), "utf-8")
    before = _tree(tmp_path)
    home_before = _tree(homes[0])
    assert main(["--config", str(config), "score", str(folder)]) == 1
    err = capsys.readouterr().err
    assert str(missing) in err
    assert "cultivar build dataset" in err
    assert _tree(tmp_path) == before
    assert _tree(homes[0]) == home_before
