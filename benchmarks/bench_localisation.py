"""How fast the demo localiser drafts, and how busy a localisation run keeps a server.

    python benchmarks/bench_localisation.py                       # the six demo locales
    python benchmarks/bench_localisation.py --locale deu_Latn_Germany --threads 1
    python benchmarks/bench_localisation.py --server fake --delay 0.5     # the test server
    python benchmarks/bench_localisation.py --server vllm                 # vLLM's CPU build

**Against a server** (``--server``): localises ``--requests`` demo pairs (64; the demo's pairs of
every locale, in order) through the ``openai`` engine into fresh caches, once submitting requests
continuously (``stream``, what the ``openai`` engine does now) and once by fixed chunks of
``--batch-size`` (``chunks``: one chunk sent and awaited at a time),
with ``--concurrency`` requests at most in flight, and reports for each the wall time and the mean
number of requests in flight at the server over the run. ``fake``: the local test server
(``tests/openai_server.py``), each answer after a delay drawn from the request text (uniform in
[0.5, 1.5] x ``--delay`` seconds, fixed per request: answers of different lengths); in flight
counted by the server itself. ``vllm``: ``python -m vllm.entrypoints.openai.api_server`` of
``--vllm-python`` (default ``.venv-vllm/bin/python``, else the main checkout's) serving a tiny
random Llama built here (2 layers, hidden 128, word-level tokenizer of the prompts' words, the
few-shot plain template: answers end at the template's stop strings or at ``--max-new-tokens``);
in flight sampled from its ``/metrics`` (``vllm:num_requests_running`` + ``waiting``, every
50 ms); the server runs in its own process group, stopped at the end.

**The demo localiser** (no ``--server``): localises the demo's selected instances with the
demo settings (``demo_localisation()``: Gemma 3 270M base through the transformers engine, the
few-shot prompt) into a fresh cache, so every draft is generated, and reports seconds, drafts per
second and generated tokens per second (tokens as the engine counts them), per locale and in
all. It then compares each locale's drafts hash with the shipped demo annotation file's:
``same`` means this machine, these libraries and this thread count reproduce the shipped drafts.
``--threads`` sets torch's CPU threads (default: torch's own choice). Runs through the engine
interface, so an engine or decoding option changed in ``demo_localisation()`` is measured as it
is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from cultivar_assets.construction.annotation.demo import environment
from cultivar_assets.construction.build import build_selection
from cultivar_assets.construction.config import demo_annotations_dir, demo_construction
from cultivar_assets.construction.localisation.localiser import (
    localisation_inputs,
    localise,
    make_localiser,
    shared_engines,
)
from cultivar_assets.construction.selection.store import read_selected_sources
from cultivar_assets.store.database import Store


def shipped_hashes() -> dict[str, str]:
    hashes = {}
    for path in demo_annotations_dir().glob("*.annotations.json"):
        task = json.loads(path.read_text("utf-8"))["task"]
        hashes[task["locale"]] = task["drafts_hash"]
    return hashes


ROOT = Path(__file__).resolve().parent.parent


def server_pairs(n: int) -> dict[str, list]:
    """The first ``n`` demo pairs, locale by locale (the shipped demo dataset)."""
    from cultivar_assets.construction.localisation.localiser import SourcePair
    from cultivar_assets.data.sources import demo_dataset_dir

    inputs: dict[str, list] = {}
    left = n
    for path in sorted(demo_dataset_dir().glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()][:left]
        if rows:
            inputs[path.stem] = [SourcePair(r["id"], r["source_original"], r["english_original"])
                                 for r in rows]
        left -= len(rows)
    if left > 0:
        raise SystemExit(f"the demo has only {n - left} pairs")
    return inputs


def localise_once(inputs, config, stream: bool, cache: Path) -> float:
    """Seconds to localise ``inputs``; ``stream`` False: the fixed-chunk path."""
    from cultivar_assets.construction.localisation.localiser import (
        LocalisationFailuresError,
        localise,
    )
    from cultivar_assets.engines.openai_engine import OpenAIEngine

    saved = OpenAIEngine.answers_alone
    OpenAIEngine.answers_alone = stream
    started = time.perf_counter()
    try:
        localise(inputs, config, cache_dir=cache, show_bar=False)
    except LocalisationFailuresError as error:
        raise SystemExit(f"the benchmark run failed: {error}") from None
    finally:
        OpenAIEngine.answers_alone = saved
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_llama(folder: Path, texts: list[str]) -> None:
    """A random 2-layer Llama with a word-level tokenizer of ``texts``' words (and whitespace
    runs as tokens, so the template's stop strings can be generated)."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = sorted({w for t in texts for w in pre_split(t)})
    vocab = {tok: i for i, tok in enumerate(["<unk>", "<s>", "</s>", *words])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"\s+"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=4096, bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)


def pre_split(text: str) -> list[str]:
    import re

    return [part for part in re.split(r"(\s+)", text) if part]


class MetricsSampler:
    """Mean of vLLM's running + waiting requests, sampled every 50 ms while active."""

    def __init__(self, url: str) -> None:
        self.url, self.samples, self._on = url, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            if self._on.is_set():
                text = urllib.request.urlopen(self.url, timeout=5).read().decode()
                self.samples.append(sum(float(line.rsplit(" ", 1)[1]) for line in
                                        text.splitlines() if line.startswith(
                                            ("vllm:num_requests_running{",
                                             "vllm:num_requests_waiting{"))))
            time.sleep(0.05)

    def measure(self, run):
        self.samples = []
        self._on.set()
        try:
            seconds = run()
        finally:
            self._on.clear()
        return seconds, sum(self.samples) / max(len(self.samples), 1)


def start_vllm(python: str, model: Path, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
               "--served-model-name", "tiny", "--max-model-len", "4096", "--dtype", "bfloat16",
               "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                              start_new_session=True)  # its own group: stopped together
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"vLLM exited ({server.returncode}); its log: {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return server
        except OSError:
            time.sleep(1)
    stop_group(server)
    raise SystemExit(f"vLLM did not answer within 600 s; its log: {log}")


def stop_group(server: subprocess.Popen) -> None:
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def server_main(args: argparse.Namespace) -> None:
    from cultivar_assets.construction.config import LocalisationConfig
    from cultivar_assets.construction.localisation.prompts import get_prompt, prompt_values

    inputs = server_pairs(args.requests)
    options = {"batch_size": args.batch_size, "max_concurrency": args.concurrency,
               "max_retries": 0, "timeout": 600}
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work_dir = Path(work)
        if args.server == "fake":
            sys.path.insert(0, str(ROOT / "tests"))
            from localisation_helpers import localising_answer
            from openai_server import FakeOpenAIServer

            def delay(text: str) -> float:  # uniform in [0.5, 1.5] x delay, fixed per request
                fraction = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
                return args.delay * (0.5 + fraction)

            fake = FakeOpenAIServer(delay=delay, answer=localising_answer).start()
            config = LocalisationConfig(model="bench", prompt="cultivar-paper",
                                        engine_options={**options, "base_url": fake.url})
            try:
                for mode in args.mode:
                    before = fake.busy_seconds()
                    seconds = localise_once(inputs, config, mode == "stream", work_dir / mode)
                    rows.append({"mode": mode, "seconds": round(seconds, 2), "mean_in_flight":
                                 round((fake.busy_seconds() - before) / seconds, 2)})
                    print(json.dumps(rows[-1]), flush=True)
            finally:
                fake.stop()
        else:
            prompt = get_prompt("cultivar-paper-fewshot", None)
            texts = [prompt.request(prompt_values(loc, p.source, p.english), 1, ()).prompt
                     for loc, pairs in inputs.items() for p in pairs]
            model = work_dir / "tiny-llama"
            tiny_llama(model, texts)
            port = free_port()
            python = args.vllm_python or next(
                (str(c) for c in (ROOT / ".venv-vllm/bin/python",
                                  Path("/work/main/.venv-vllm/bin/python")) if c.exists()), None)
            if python is None:
                raise SystemExit("no vLLM CPU build found: pass --vllm-python")
            started = time.perf_counter()
            server = start_vllm(python, model, port, work_dir / "vllm.log")
            print(json.dumps({"vllm_ready_seconds": round(time.perf_counter() - started, 1)}),
                  flush=True)
            try:
                sampler = MetricsSampler(f"http://127.0.0.1:{port}/metrics")
                config = LocalisationConfig(
                    model="tiny", prompt="cultivar-paper-fewshot",
                    max_new_tokens=args.max_new_tokens,
                    engine_options={**options, "base_url": f"http://127.0.0.1:{port}/v1"})
                localise_once(dict(list(inputs.items())[:1]), config, True, work_dir / "warm")
                for mode in args.mode:
                    seconds, mean = sampler.measure(lambda mode=mode: localise_once(
                        inputs, config, mode == "stream", work_dir / mode))
                    rows.append({"mode": mode, "seconds": round(seconds, 2),
                                 "mean_in_flight": round(mean, 2)})
                    print(json.dumps(rows[-1]), flush=True)
            finally:
                stop_group(server)
    summary = {"server": args.server, "requests": args.requests, "concurrency": args.concurrency,
               "batch_size": args.batch_size, "delay": args.delay if args.server == "fake"
               else None, "max_new_tokens": args.max_new_tokens if args.server == "vllm"
               else None, "runs": rows}
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1), "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locale", action="append", help="a demo locale (repeatable)")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--server", choices=("fake", "vllm"), help="benchmark a server run")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16, help="the chunk of --mode chunks")
    parser.add_argument("--delay", type=float, default=0.5, help="fake: mean seconds an answer")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="vllm: answer length")
    parser.add_argument("--vllm-python", help="the python of a venv with vllm-cpu")
    parser.add_argument("--mode", action="append", choices=("chunks", "stream"),
                        help="what to run (default both)")
    args = parser.parse_args()
    if args.server:
        args.mode = args.mode or ["chunks", "stream"]
        server_main(args)
        return
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    construction = demo_construction()
    config = construction.localisation
    locales = args.locale or config.locale_keys()
    shipped = shipped_hashes()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        store = Store(Path(work) / "bench.duckdb")
        build_selection(construction.source, construction.selection, store, show_bar=False)
        inputs = localisation_inputs(read_selected_sources(store), locales)
        with shared_engines() as pool:
            loaded = time.perf_counter()
            pool.get(make_localiser(config))
            load_seconds = time.perf_counter() - loaded
            for locale in locales:
                started = time.perf_counter()
                run = localise({locale: inputs[locale]}, config, cache_dir=Path(work) / "cache",
                               show_bar=False)
                seconds = time.perf_counter() - started
                drafts = run.locales[locale]
                totals = drafts.totals()
                rows.append({
                    "locale": locale, "drafts": totals["n_drafts"], "seconds": round(seconds, 1),
                    "drafts_per_second": round(totals["n_drafts"] / seconds, 3),
                    "completion_tokens": totals["completion_tokens"],
                    "tokens_per_second": round((totals["completion_tokens"] or 0) / seconds, 1),
                    "flagged": totals["n_flagged"], "unchanged": totals["n_unchanged"],
                    "same_as_shipped": shipped.get(locale) == drafts.drafts_hash,
                })
                print(json.dumps(rows[-1]), flush=True)
    seconds = sum(r["seconds"] for r in rows)
    drafts = sum(r["drafts"] for r in rows)
    summary = {"model_load_seconds": round(load_seconds, 1), "seconds": round(seconds, 1),
               "drafts": drafts, "drafts_per_second": round(drafts / seconds, 3),
               "all_same_as_shipped": all(r["same_as_shipped"] for r in rows),
               "environment": environment(), "locales": rows}
    print(json.dumps({k: v for k, v in summary.items() if k != "locales"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1), "utf-8")


if __name__ == "__main__":
    main()
