"""``cultivar serve-model``: the vLLM server command for a registry entry and the ``openai`` entry
it prints, without vLLM (a stand-in python records the command). The real server runs in
tests/test_vllm_server.py (slow)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import write_models_file

from cultivar_assets.cli import main
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.engines.openai_engine import OpenAIEngine
from cultivar_assets.engines.vllm_serve import (
    ServeError,
    check_python,
    openai_entry,
    serve_command,
    server_options,
)
from cultivar_assets.models import load_models
from cultivar_assets.specs import ModelSpec

BUNDLED = load_models()


def _spec(**changes) -> ModelSpec:
    entry = {"id": "org-model", "hf_id": "org/model", "revision": "abc123", "type": "LLM",
             "family": "Org", "params_total_b": 7.0, "engine": "vllm",
             "prompt_style": "chat-instruction", "license": "apache-2.0",
             "engine_options": {"dtype": "bfloat16", "max_model_len": 2048,
                                "max_new_tokens": 96, "batch_size": 32}}
    entry.update(changes)
    return ModelSpec.model_validate(entry)


def test_every_option_the_vllm_engine_passes_is_a_server_flag():
    """Options the engine passes to vllm.LLM (EngineArgs fields) become the flags of the same
    names; the engine's own options do not; model and revision come from the entry."""
    spec = _spec(engine_options={
        "pipeline_parallel_size": 2, "data_parallel_size": 4, "enable_expert_parallel": True,
        "max_num_seqs": 64, "tokenizer_mode": "mistral", "distributed_executor_backend": "ray",
        "compilation_config": {"level": 0}, "chat_template_kwargs": {"enable_thinking": False},
        "batch_size": 8, "max_new_tokens": 96, "use_tqdm": False, "device": "cuda"})
    assert server_options(spec) == [
        "--dtype", "auto", "--pipeline-parallel-size", "2", "--data-parallel-size", "4",
        "--enable-expert-parallel", "--max-num-seqs", "64", "--tokenizer-mode", "mistral",
        "--distributed-executor-backend", "ray", "--compilation-config", '{"level": 0}',
        "--default-chat-template-kwargs", '{"enable_thinking": false}']
    with pytest.raises(ServeError, match=r"^org-model: engine_options 'revision'"):
        server_options(_spec(engine_options={"revision": "main"}))


def test_command_carries_the_vllm_engines_options():
    command = serve_command(BUNDLED.get("Qwen3.5-122B-A10B-FP8"), "/x/python", "127.0.0.1", 8123)
    assert command[:7] == ["/x/python", "-m", "vllm.entrypoints.openai.api_server", "--model",
                           "Qwen/Qwen3.5-122B-A10B-FP8", "--served-model-name",
                           "Qwen3.5-122B-A10B-FP8"]
    text = " ".join(command)
    for flag in ("--dtype auto", "--max-model-len 4096", "--tensor-parallel-size 2",
                 "--quantization fp8", "--gpu-memory-utilization 0.92",
                 '--default-chat-template-kwargs {"enable_thinking": false}',
                 "--generation-config vllm", "--host 127.0.0.1", "--port 8123"):
        assert flag in text, flag
    # engine-side options are not server flags
    spec = _spec(engine_options={"enforce_eager": False, "trust_remote_code": True, "seed": 3,
                                 "batch_size": 4, "use_tqdm": True})
    options = server_options(spec)
    assert options == ["--dtype", "auto", "--no-enforce-eager", "--trust-remote-code",
                       "--seed", "3"]
    command = serve_command(spec, "py", "0.0.0.0", 9000, ["--max-num-seqs", "4"])
    assert command[command.index("--revision") + 1] == "abc123"
    assert command[-2:] == ["--max-num-seqs", "4"]


def test_a_transformers_entry_is_served_with_its_dtype_only():
    spec = _spec(engine="transformers", engine_options={"dtype": "float32", "batch_size": 120,
                                                        "max_new_tokens": 64})
    assert server_options(spec) == ["--dtype", "float32"]
    assert openai_entry(spec, "http://h:1/v1")["engine_options"] == {
        "base_url": "http://h:1/v1", "model": "org-model", "max_new_tokens": 64}


def test_the_openai_entry_is_a_valid_registry_entry_for_the_server(tmp_path):
    spec = _spec(engine_options={"chat_template_kwargs": {"enable_thinking": False},
                                 "max_new_tokens": 96})
    entry = openai_entry(spec, "http://127.0.0.1:8123/v1")
    served = load_models(write_models_file(tmp_path / "m.yaml", [entry])).get("org-model-served")
    assert served.engine == "openai" and served.prompt_style == "chat-instruction"
    assert (served.hf_id, served.revision, served.type, served.family, served.license,
            served.params_total_b) == ("org/model", "abc123", "LLM", "Org", "apache-2.0", 7.0)
    assert served.engine_options == {
        "base_url": "http://127.0.0.1:8123/v1", "model": "org-model", "max_new_tokens": 96,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    engine = OpenAIEngine(served, EngineSettings())  # no request is sent
    try:
        assert engine.model == "org-model" and engine.host == "127.0.0.1:8123"
    finally:
        engine.close()


def test_entries_without_weights_and_pythons_without_vllm_are_refused():
    with pytest.raises(ServeError, match=r"'copy-source'.*\bvLLM\b"):
        serve_command(BUNDLED.get("copy-source-baseline"), "py", "127.0.0.1", 1)
    with pytest.raises(ServeError, match=rf"{re.escape(sys.executable)}.*\bvllm\b"):
        check_python(sys.executable)  # the main virtualenv has no vLLM
    with pytest.raises(ServeError, match="/nowhere/python"):
        check_python("/nowhere/python")


def _stand_in_python(folder: Path) -> Path:
    """A 'python' that finds vllm and, run as the server, records its arguments and exits 3."""
    script = folder / "python"
    record = folder / "argv.json"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-c" ]; then exit 0; fi\n'
        f'{sys.executable} -c "import json, sys; json.dump(sys.argv[1:], '
        f"open('{record}', 'w'))\" \"$@\"\n"
        "exit 3\n")
    script.chmod(0o755)
    return script


def test_cli_prints_the_entry_and_runs_the_server_command(tmp_path, capsys):
    models = write_models_file(tmp_path / "models.yaml", [_spec().model_dump(exclude_none=True)])
    python = _stand_in_python(tmp_path)
    code = main(["serve-model", "org-model", "--models-file", str(models), "--port", "8765",
                 "--python", str(python), "--max-num-seqs", "4"])
    assert code == 3  # the server's exit status
    printed = capsys.readouterr().out
    assert printed.startswith("base_url: http://127.0.0.1:8765/v1\n")
    assert "- id: org-model-served\n" in printed and "  engine: openai\n" in printed
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[:3] == ["-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert argv[-6:] == ["--host", "127.0.0.1", "--port", "8765", "--max-num-seqs", "4"]
    assert f"Starting: {python} -m vllm.entrypoints.openai.api_server" in printed


def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CULTIVAR_VLLM_PYTHON", raising=False)
    assert main(["serve-model", "copy-source-baseline"]) == 1
    err = capsys.readouterr().err
    assert "'copy-source'" in err and "vLLM" in err
    assert main(["serve-model", "Qwen3.5-35B"]) == 1
    err = capsys.readouterr().err
    # wording is the interface: the command's error prefix (cli/common.py: print_error)
    assert err.startswith("cultivar serve-model: error:") and "Qwen3.5-35B-A3B" in err
    assert main(["serve-model", "Qwen3.5-35B-A3B"]) == 1  # this python has no vllm
    err = capsys.readouterr().err
    assert sys.executable in err and "vllm" in err
