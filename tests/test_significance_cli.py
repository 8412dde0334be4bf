"""``cultivar significance``: sacreBLEU's paired tests between stored models, per test set. The
copy baseline's translations and scores are those of the session's finished pipeline run
(``copy_baseline_run``); in a copy of it, ``cultivar score`` registers a submission that is the
reference on half the segments, and its ``translations``, ``scores`` and ``model_results`` (what
the command reads) are materialised. The command's figures are checked against sacreBLEU's
``PairedTest`` run here on the same texts, and its scores against the stored ones."""

from __future__ import annotations

import json
import os

import duckdb
import pytest
import yaml
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from cultivar_assets.cli import main
from cultivar_assets.data.sources import DataConfig, load_benchmark

MANIFEST = {"id": "half-references", "type": "LLM", "family": "Test", "params_total_b": None,
            "license": "MIT",
            "produced": {"system": "a test", "version": "1", "prompt": "none",
                         "date": "2026-12-02"}}


@pytest.fixture(scope="module")
def scored(copy_baseline_run, tmp_path_factory):
    """A copy of the session's finished ``cultivar run`` of the copy baseline
    (tests/pipeline_helpers.py) in which ``cultivar score`` has registered a submission that is
    the reference on the odd segments, and the run it starts materialises the submission's
    ``translations`` and ``scores`` and loads them (``model_results``), nothing else (the whole
    run, with the statistics and the site, is ``tests/test_submissions.py``'s): the settings
    file and the database."""
    import dagster as dg

    from cultivar_assets.assets.graph import ASSETS
    from cultivar_assets.cli import pipeline_run
    from cultivar_assets.resources import resources_from_settings

    def scores_alone(settings) -> int:
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions("models", settings.models)
            (model,) = settings.models
            resources = resources_from_settings(settings)
            results = [dg.materialize(ASSETS, selection=["translations", "scores"],
                                      partition_key=model, instance=instance,
                                      resources=resources),
                       dg.materialize(ASSETS, selection=["model_results"], instance=instance,
                                      resources=resources)]
        return 0 if all(result.success for result in results) else 1

    tmp_path = tmp_path_factory.mktemp("significance")
    run = copy_baseline_run.copy(tmp_path / "run")
    with pytest.MonkeyPatch.context() as monkeypatch:
        run.enter(monkeypatch)
        monkeypatch.setattr(pipeline_run, "run_and_report", scores_alone)
        folder = tmp_path / "submission"
        folder.mkdir()
        (folder / "manifest.yaml").write_text(yaml.safe_dump(MANIFEST), "utf-8")
        rows = [{"test_set": t.name, "id": s.segment_id,
                 "hypothesis": s.reference if s.segment_id % 2 else s.source}
                for t in load_benchmark(DataConfig(kind="demo")).test_sets() for s in t.segments]
        (folder / "outputs.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        assert main(["--config", str(run.config), "score", str(folder)]) == 0
    return run.config, run.database


def _float(value):
    return None if value is None else float(value)


def _texts(database, model, test_set):
    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute("SELECT reference, hypothesis FROM raw.translations WHERE model_id = ? "
                           "AND test_set = ? ORDER BY segment_id", [model, test_set]).fetchall()
    return [r for r, _ in rows], [h for _, h in rows]


def test_significance_is_sacrebleus_paired_test_on_the_stored_texts(scored, capsys):
    config, database = scored
    test_set = "cultivar_deu_Latn_Germany"
    assert main(["--config", str(config), "significance", "copy-source-baseline",
                 "half-references", "--test-set", test_set, "--samples", "200", "--seed", "7",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    refs, base = _texts(database, "copy-source-baseline", test_set)
    _, other = _texts(database, "half-references", test_set)
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = "7"
    try:
        bleu, chrf = BLEU(tokenize="13a"), CHRF()
        signatures, table = PairedTest(
            [("copy-source-baseline", base), ("half-references", other)],
            {"bleu": bleu, "chrf": chrf}, references=[refs], test_type="bs", n_samples=200)()
    finally:
        if previous is None:
            os.environ.pop("SACREBLEU_SEED")
        else:
            os.environ["SACREBLEU_SEED"] = previous
    names = [k for k in table if k != "System"]
    expected = [(metric, system, r.score, r.p_value, _float(r.mean), _float(r.ci))
                for metric, name in zip(("bleu", "chrf"), names, strict=True)
                for system, r in zip(table["System"], table[name], strict=True)]
    assert [(r["metric"], r["system"], r["score"], r["p_value"], r["mean"], r["ci"])
            for r in rows] == expected
    assert {r["test_set"] for r in rows} == {test_set}
    assert [r["signature"] for r in rows] == [signatures[name].format() for name in names
                                              for _ in table["System"]]
    assert all("bs:200" in r["signature"] and "seed:7" in r["signature"] for r in rows)
    # the half-reference system is better, and significantly so
    half = [r for r in rows if r["system"] == "half-references"]
    assert all(r["p_value"] < 0.05 for r in half)
    # its scores are the stored ones (same metric settings)
    with duckdb.connect(str(database), read_only=True) as con:
        stored = dict(con.execute("SELECT metric, score FROM raw.scores WHERE model_id = "
                                  "'half-references' AND test_set = ?", [test_set]).fetchall())
    assert {r["metric"]: r["score"] for r in half} == stored


def test_every_common_test_set_by_default_and_clear_refusals(scored, capsys):
    config, _ = scored
    assert main(["--config", str(config), "significance", "copy-source-baseline",
                 "half-references", "--metric", "chrf", "--samples", "20",
                 "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "test_set,metric,system,score,p_value,mean,ci,signature"
    test_sets = {t.name for t in load_benchmark(DataConfig(kind="demo")).test_sets()}
    assert {line.split(",")[0] for line in out[1:]} == test_sets
    assert len(out) - 1 == 2 * len(test_sets)

    assert main(["--config", str(config), "significance", "copy-source-baseline",
                 "nobody"]) == 1
    assert "no stored translations of nobody; translate them first" in capsys.readouterr().err
    assert main(["--config", str(config), "significance", "copy-source-baseline",
                 "copy-source-baseline"]) == 1
    assert "each once" in capsys.readouterr().err
    assert main(["--config", str(config), "significance", "copy-source-baseline",
                 "half-references", "--test-set", "cultivar_xxx"]) == 1
    assert "no model translated cultivar_xxx" in capsys.readouterr().err


def test_the_configured_metrics_are_the_default(scored, capsys, tmp_path):
    config, _ = scored
    settings = yaml.safe_load(config.read_text("utf-8"))
    settings["metrics"]["metrics"] = ["chrf", "ter"]
    other = tmp_path / "ter.yaml"
    other.write_text(yaml.safe_dump(settings), "utf-8")
    assert main(["--config", str(other), "significance", "copy-source-baseline",
                 "half-references", "--test-set", "cultivar_deu_Latn_Germany", "--samples", "20",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["metric"] for r in rows] == ["chrf", "chrf", "ter", "ter"]
