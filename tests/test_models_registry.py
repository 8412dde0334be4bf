"""The model registry: the paper's 32 models, validation, `cultivar models add`."""

from __future__ import annotations

import csv
import shutil

import pytest
import yaml
from conftest import SHARED

from cultivar_assets.cli import main
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.models import (
    ModelRegistryError,
    default_models_file,
    load_models,
    select_models,
)

TABLE3 = SHARED / "reference" / "paper-tables" / "table3_models.csv"


def paper_models():
    registry = load_models()
    return select_models(registry, ["suite:paper"])


def test_paper_suite_has_the_32_models_with_their_types():
    models = paper_models()
    assert len(models) == 32
    counts = {t: sum(1 for m in models if m.type == t) for t in ("LLM", "MT", "LLM+MT")}
    assert counts == {"LLM": 24, "MT": 4, "LLM+MT": 4}
    by_id = {m.id: m for m in models}
    for big in ("Llama-3.3-70B-Instruct", "Qwen3.5-122B-A10B-FP8"):
        assert by_id[big].engine_options["tensor_parallel_size"] == 2
    assert by_id["Qwen3.5-122B-A10B-FP8"].engine_options["quantization"] == "fp8"
    assert all(m.engine == "seq2seq" for m in models if m.type == "MT")
    assert by_id["Qwen3.5-9B"].engine_options["chat_template_kwargs"] == {"enable_thinking": False}
    assert all(m.params_active_b <= m.params_total_b for m in models)
    assert by_id["Qwen3.5-35B-A3B"].params_active_b == 3


@pytest.mark.skipif(not TABLE3.is_file(), reason="../shared/reference is not available")
def test_reported_figures_equal_the_papers_table_3():
    by_id = {m.id: m for m in paper_models()}
    with TABLE3.open() as handle:
        rows = list(csv.DictReader(handle))
    assert {row["model"] for row in rows} == set(by_id)
    for row in rows:
        spec = by_id[row["model"]]
        assert spec.type == row["type"]
        reported = spec.reported.model_dump()
        for key, value in reported.items():
            assert value == pytest.approx(float(row[key]), abs=1e-9), (spec.id, key)


def test_fingerprint_ignores_transport_options_only():
    spec = load_models().get("gemma-3-270m-fewshot")
    faster = spec.model_copy(update={"engine_options": {**spec.engine_options, "batch_size": 4}})
    longer = spec.model_copy(update={"engine_options": {**spec.engine_options,
                                                        "max_new_tokens": 99}})
    assert run_fingerprint(faster) == run_fingerprint(spec)
    assert run_fingerprint(longer) != run_fingerprint(spec)
    assert run_fingerprint(spec.model_copy(update={"revision": "x"})) != run_fingerprint(spec)


def test_fingerprint_includes_the_run_wide_settings_the_engine_declares():
    from cultivar_assets.engines.base import EngineSettings

    registry = load_models()
    local = registry.get("gemma-3-270m-fewshot")  # transformers: dtype and device matter
    assert run_fingerprint(local, EngineSettings(dtype="float16")) != run_fingerprint(local)
    assert run_fingerprint(local, EngineSettings(batch_size=2)) == run_fingerprint(local)
    # its own device option (cpu) overrides the run-wide one
    assert run_fingerprint(local, EngineSettings(device="cuda")) == run_fingerprint(local)
    copy = registry.get("copy-source-baseline")  # declares no output settings
    assert run_fingerprint(copy, EngineSettings(dtype="float16")) == run_fingerprint(copy)


def test_every_problem_of_a_bad_registry_is_reported(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [
        {"id": "a", "type": "LLM", "family": "F", "engine": "warp-drive",
         "prompt_style": "chat-instruction", "hf_id": "x/a"},
        {"id": "b", "type": "Robot", "family": "F", "engine": "vllm",
         "prompt_style": "chat-instruction", "hf_id": "x/b"},
        {"id": "c", "type": "MT", "family": "F", "engine": "seq2seq",
         "prompt_style": "chat-instruction", "hf_id": "x/c"},
        {"id": "d", "type": "LLM", "family": "F", "engine": "vllm", "prompt_style": "nope"},
        {"id": "a", "type": "LLM", "family": "F", "engine": "vllm",
         "prompt_style": "chat-instruction", "hf_id": "x/a", "colour": "red"},
    ]}))
    with pytest.raises(ModelRegistryError) as info:
        load_models(path)
    message = str(info.value)
    lines = [line.strip() for line in message.split("\n")]
    assert any(line.startswith("entry 1 (a): ") and "'warp-drive'" in line for line in lines)
    assert "entry 2 (b): type" in message
    assert any(line.startswith("entry 3 (c): ") and "'seq2seq'" in line and "'chat'" in line
               for line in lines)
    assert any(line.startswith("entry 4 (d): ") and "'nope'" in line for line in lines)
    assert "entry 5 (a): colour: " in message


def test_models_add_appends_a_validated_entry_and_keeps_comments(tmp_path, capsys):
    path = tmp_path / "models.yaml"
    shutil.copy(default_models_file(), path)
    before = path.read_text()
    assert main(["models", "add", "Qwen/Qwen3.5-4B", "--type", "LLM", "--engine", "vllm",
                 "--family", "Qwen 3.5", "--id", "qwen-extra", "--params-total", "4",
                 "--option", "tensor_parallel_size=1", "--option",
                 "chat_template_kwargs={enable_thinking: false}", "--suite", "paper",
                 "--file", str(path)]) == 0
    after = path.read_text()
    assert after.startswith(before.rstrip("\n"))  # comments and entries kept as they were
    spec = load_models(path).get("qwen-extra")
    assert spec.engine_options == {"tensor_parallel_size": 1,
                                   "chat_template_kwargs": {"enable_thinking": False}}
    assert spec.prompt_style == "chat-instruction"
    assert spec.params_total_b == 4 and spec.params_active_b is None  # not given: unknown
    assert len(select_models(load_models(path), ["suite:paper"])) == 33
    said = capsys.readouterr().out
    assert "active parameters: " in said and "unknown" in said
    assert "prompt style: chat-instruction (" in said and "vllm" in said
    # the demo settings' sensor watches suite:demo and another registry file
    # wording is the interface: docs/evaluating-models.md (whether the sensor runs the entry)
    assert "will not see this entry" in said and "will run it" not in said

    assert main(["models", "add", "x/y", "--type", "MT", "--engine", "seq2seq", "--family", "F",
                 "--id", "qwen-extra", "--file", str(path)]) == 1
    err = capsys.readouterr().err
    assert "'qwen-extra'" in err and str(path) in err
    assert path.read_text() == after  # a refused entry changes nothing


@pytest.mark.parametrize("layout", ["models: []\n", "models:\n- id: x0\n  type: baseline\n"
                                    "  family: B\n  engine: copy-source\n  prompt_style: source\n",
                                    "models:\n  - {id: x0, type: baseline, family: B, "
                                    "engine: copy-source, prompt_style: source}\nother: 1\n"])
def test_models_add_works_with_other_layouts(tmp_path, layout):
    path = tmp_path / "models.yaml"
    path.write_text(layout)
    assert main(["models", "add", "org/new", "--type", "MT", "--engine", "seq2seq",
                 "--family", "F", "--file", str(path)]) == 0
    assert "new" in load_models(path)
    assert not (tmp_path / "models.yaml.tmp").exists()
    if "other: 1" in layout:
        assert yaml.safe_load(path.read_text())["other"] == 1


FLOW_WITH_COMMENTS = """\
# our registry: the baseline first  (a comment the old rewrite dropped)
models: [{id: x0, type: baseline, family: B, engine: copy-source, prompt_style: source}]  # one
other: 1  # kept too
"""


def test_models_add_keeps_comments_where_appending_a_block_cannot(tmp_path):
    """A flow-style ``models`` list that is not the file's last key: no appended block reads
    back, so the file is edited as a round trip (ruamel.yaml), its comments kept."""
    path = tmp_path / "models.yaml"
    path.write_text(FLOW_WITH_COMMENTS)
    assert main(["models", "add", "org/new", "--type", "MT", "--engine", "seq2seq",
                 "--family", "F", "--option", "dtype=float32", "--file", str(path)]) == 0
    after = path.read_text()
    for comment in ("# our registry: the baseline first  (a comment the old rewrite dropped)",
                    "}] # one", "other: 1  # kept too"):
        assert comment in after
    assert load_models(path).names() == ["x0", "new"]
    assert yaml.safe_load(after)["other"] == 1


def test_a_refused_models_add_leaves_the_file_byte_identical(tmp_path, capsys):
    path = tmp_path / "models.yaml"
    path.write_bytes(FLOW_WITH_COMMENTS.encode())
    shutil.copy(default_models_file(), tmp_path / "bundled.yaml")
    duplicate = ["--engine", "seq2seq", "--id", "nllb-200-distilled-1.3B"]
    for file, bad in ((path, ["--engine", "nope"]), (tmp_path / "bundled.yaml", duplicate)):
        before = file.read_bytes()
        assert main(["models", "add", "org/new", "--type", "MT", "--family", "F", *bad,
                     "--file", str(file)]) == 1
        assert capsys.readouterr().err  # the reason is said
        assert file.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bundled.yaml", "models.yaml"]


def test_models_add_says_whether_the_sensor_will_run_the_model(tmp_path, capsys, monkeypatch):
    path = tmp_path / "models.yaml"
    shutil.copy(default_models_file(), path)
    config = tmp_path / "cultivar.yaml"
    config.write_text(f"models_file: {path}\nmodels: ['suite:paper']\n")
    monkeypatch.setenv("CULTIVAR_CONFIG", str(config))
    assert main(["models", "add", "org/in-suite", "--type", "MT", "--engine", "seq2seq",
                 "--family", "F", "--suite", "paper", "--params-total", "1",
                 "--params-active", "1"]) == 0
    said = capsys.readouterr().out
    # no Dagster instance has run here: the sensor is off, and the interval is said
    assert all(fact in said for fact in ("sensor", "off", "`cultivar ui`", "300 s"))
    assert "active parameters" not in said
    assert main(["models", "add", "org/outside", "--type", "MT", "--engine", "seq2seq",
                 "--family", "F"]) == 0
    said = capsys.readouterr().out
    # wording is the interface: docs/evaluating-models.md (whether the sensor runs the entry)
    assert "watches suite:paper, which does not include outside: it will not run it" in said
    assert {"in-suite", "outside"} <= set(load_models(path).names())


def test_the_sensor_interval_is_a_setting_that_models_add_names(tmp_path, capsys, monkeypatch):
    path = tmp_path / "models.yaml"
    shutil.copy(default_models_file(), path)
    config = tmp_path / "cultivar.yaml"
    config.write_text(f"models_file: {path}\nmodels: ['suite:paper']\n"
                      "automation: {registry_sensor_interval_seconds: 120}\n")
    assert main(["models", "add", "org/in-suite", "--type", "MT", "--engine", "seq2seq",
                 "--family", "F", "--suite", "paper", "--config", str(config)]) == 0
    assert "120 s" in capsys.readouterr().out


def test_the_next_tick_is_the_last_one_plus_the_interval():
    from cultivar_assets.cli.models import tick_note

    last = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
    note = tick_note(True, last, 300, now=last + 100)
    assert note.startswith("is on: ") and "08:05:00 UTC" in note and "(in 200 s)" in note
    assert "08:06:40 UTC (in 0 s)" in tick_note(True, last, 300, now=last + 400)
    first = tick_note(True, None, 60, now=last)
    assert first.startswith("is on") and "first" in first and "UTC" not in first
    assert tick_note(False, last, 60, now=last).startswith("is off")
