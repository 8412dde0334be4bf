"""The OpenAI-compatible HTTP engine against a local fake server (tests/openai_server.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from conftest import write_models_file
from openai_server import FakeOpenAIServer, fast_client

from cultivar_assets.data.testsets import Segment, TestSet
from cultivar_assets.engines.base import EngineLoadError, EngineSettings, GenerationFailure
from cultivar_assets.engines.openai_engine import OpenAIEngine
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.models import load_models
from cultivar_assets.specs import ModelSpec
from cultivar_assets.translation import SegmentFailuresError, translate

KEY_ENV = "CULTIVAR_TEST_OPENAI_KEY"
KEY = "sk-test-secret-7f3a9c"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    fast_client(monkeypatch, KEY_ENV, KEY)


@pytest.fixture
def server():
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


def make_engine(base_url: str | None, **options) -> OpenAIEngine:
    engine_options = {"api_key_env": KEY_ENV, "max_retries": 2, "timeout": 5, **options}
    if base_url:
        engine_options["base_url"] = base_url
    spec = ModelSpec(id="api-model", hf_id="org/served-model", revision="rev1", type="LLM",
                     family="API", engine="openai", prompt_style="chat-instruction",
                     engine_options=engine_options)
    return OpenAIEngine(spec, EngineSettings())


def chat(text: str, stop: tuple[str, ...] = (), max_new_tokens: int = 32) -> GenerationRequest:
    messages = (("system", "You translate."), ("user", f"Translate:\n{text}"))
    return GenerationRequest(text, "deu_Latn", "chat", None, messages, stop, max_new_tokens)


def plain(text: str) -> GenerationRequest:
    return GenerationRequest(text, "deu_Latn", "plain", f"German: {text}\nEnglish:", None,
                             ("\n",), 16)


def test_chat_requests_return_the_server_text_in_order(server):
    engine = make_engine(server.url, max_concurrency=4,
                         extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    texts = [f"satz {i}" for i in range(10)]
    outputs = engine.generate([chat(t, stop=("\n\n",)) for t in texts])
    assert outputs == [f"EN: {t}" for t in texts]
    assert len(server.requests) == 10
    for seen in server.requests:
        assert seen.path == "/v1/chat/completions"
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        body = seen.body
        assert body["model"] == "org/served-model"
        assert body["temperature"] == 0
        assert body["max_tokens"] == 32
        assert body["stop"] == ["\n\n"]
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert body["messages"][0] == {"role": "system", "content": "You translate."}
        assert body["messages"][1]["role"] == "user"


def test_each_answer_is_reported_as_it_arrives(server):
    """Progress moves per answered request, not once when the batch returns."""
    engine = make_engine(server.url, max_concurrency=3)
    texts = [f"satz {i}" for i in range(7)]
    reported: list[int] = []
    outputs = engine.generate_reporting([chat(t) for t in texts], reported.append)
    assert outputs == [f"EN: {t}" for t in texts]
    assert reported == [1] * len(texts)


def test_plain_requests_use_completions_and_no_stop_is_omitted(server):
    engine = make_engine(server.url, model="served-name")
    outputs = engine.generate([plain("eins"), plain("zwei"), chat("drei")])
    assert outputs == ["EN: English:", "EN: English:", "EN: drei"]
    by_text = {r.text.splitlines()[0]: r for r in server.requests}
    completion = by_text["German: eins"]
    assert completion.path == "/v1/completions"
    assert completion.body["prompt"] == "German: eins\nEnglish:"
    assert completion.body["stop"] == ["\n"]
    assert completion.body["max_tokens"] == 16
    assert completion.body["model"] == "served-name"
    assert completion.body["temperature"] == 0
    assert "stop" not in by_text["Translate:"].body
    assert "chat_template_kwargs" not in completion.body


def test_rate_limit_then_success_is_retried(server):
    server.script("RATE", "429")
    outputs = make_engine(server.url).generate([chat("ok"), chat("RATE")])
    assert outputs == ["EN: ok", "EN: RATE"]
    assert server.seen("RATE") == 2


def test_retry_after_is_honoured(server):
    server.script("SLOW", "429:0.3")
    started = time.perf_counter()
    assert make_engine(server.url).generate([chat("SLOW")]) == ["EN: SLOW"]
    assert time.perf_counter() - started >= 0.3  # the backoff alone is a few ms here


def test_server_errors_then_success_is_retried(server):
    server.script("FLAKY", "500", "503")
    assert make_engine(server.url).generate([chat("FLAKY")]) == ["EN: FLAKY"]
    assert server.seen("FLAKY") == 3


def test_permanent_server_error_is_a_failure_not_a_text(server):
    server.always("BROKEN", "500")
    outputs = make_engine(server.url, max_retries=2).generate(
        [chat("a"), chat("BROKEN"), chat("b")])
    assert outputs[0] == "EN: a" and outputs[2] == "EN: b"
    assert isinstance(outputs[1], GenerationFailure)
    reason = outputs[1].reason
    assert reason.startswith("HTTP 500 ") and "2 retries" in reason
    assert "Internal server error" in reason  # the server's own text
    assert server.seen("BROKEN") == 3


@pytest.mark.parametrize("status", ["400", "404", "422"])
def test_client_errors_are_failures_without_retries(server, status):
    server.script("BAD", status)
    outputs = make_engine(server.url).generate([chat("fine"), chat("BAD")])
    assert outputs[0] == "EN: fine"
    assert isinstance(outputs[1], GenerationFailure)
    assert outputs[1].reason.startswith(f"HTTP {status}: ")
    assert server.seen("BAD") == 1


def test_timeout_is_retried_then_a_failure(server):
    server.always("HANG", "hang")
    engine = make_engine(server.url, timeout=0.3, max_retries=1)
    outputs = engine.generate([chat("HANG")])
    assert isinstance(outputs[0], GenerationFailure)
    assert "timed out" in outputs[0].reason
    assert server.seen("HANG") == 2


def test_empty_text_is_kept_but_missing_content_is_a_failure(server):
    server.script("EMPTY", "empty")
    server.script("NULL", "null")
    server.script("HTML", "html")
    outputs = make_engine(server.url).generate([chat("EMPTY"), chat("NULL"), plain("HTML")])
    assert outputs[0] == ""
    assert outputs[1] == GenerationFailure("no content (finish_reason=length)")
    assert outputs[2] == GenerationFailure("the server answered 200 with a body that is not "
                                           "JSON: '<html>gateway says hello</html>'")
    assert (outputs[1].prompt_tokens, outputs[1].completion_tokens) == (4, 0)  # server usage


def test_concurrency_is_bounded():
    server = FakeOpenAIServer(delay=0.05).start()
    try:
        outputs = make_engine(server.url, max_concurrency=2).generate(
            [chat(f"s{i}") for i in range(9)])
    finally:
        server.stop()
    assert outputs == [f"EN: s{i}" for i in range(9)]
    assert server.max_in_flight == 2


def test_authentication_error_ends_the_run_without_leaking_the_key(server):
    server.always("", "401")  # the fake echoes the key it got, as some servers do
    with pytest.raises(EngineLoadError, match="HTTP 401") as error:
        make_engine(server.url).generate([chat("a"), chat("b")])
    assert KEY not in str(error.value)
    assert len(server.requests) == 1  # the first request goes alone


def test_unknown_model_on_the_first_request_is_a_load_error(server):
    server.script("ALPHA", "404")
    with pytest.raises(EngineLoadError, match="HTTP 404: The model does not exist"):
        make_engine(server.url).generate([chat("ALPHA"), chat("b")])


def test_unreachable_server_is_a_load_error(server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EngineLoadError, match=rf"127\.0\.0\.1:{port}\b"):
        make_engine(f"http://127.0.0.1:{port}/v1", max_retries=1).generate([chat("a")])
    # a server that goes away mid-run ends the run too, instead of retrying every segment
    engine = make_engine(server.url, max_retries=1)
    assert engine.generate([chat("a")]) == ["EN: a"]
    server.stop()
    with pytest.raises(EngineLoadError, match=r"127\.0\.0\.1:\d+"):
        engine.generate([chat("b"), chat("c")])


def test_configuration(server, monkeypatch):
    with pytest.raises(EngineLoadError, match=r"base_url\b.*\$OPENAI_BASE_URL"):
        make_engine(None)
    with pytest.raises(EngineLoadError, match="max_concurrency"):
        make_engine(server.url, max_concurrency=0)
    with pytest.raises(EngineLoadError, match="max_concurency"):
        make_engine(server.url, max_concurency=4)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EngineLoadError, match=KEY_ENV):
        make_engine("https://api.openai.com/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    engine = make_engine(None, max_new_tokens=8, batch_size=16)  # no key, local server
    assert engine.batch_size == 16
    assert engine.generate([chat("x")]) == ["EN: x"]
    assert server.requests[-1].headers["authorization"] == "Bearer EMPTY"


def test_info_names_client_model_and_host_but_not_the_key(server, monkeypatch):
    import openai

    url = server.url.replace("http://", f"http://user:{KEY}@")
    # a URL with credentials is refused in engine_options (tests/test_secrets_misplaced.py);
    # from $OPENAI_BASE_URL, which is never stored, it is used in memory
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    info = make_engine(None).info()
    host = server.url.split("/")[2]
    assert info.engine == "openai"
    assert info.engine_version == (
        f"openai-python {openai.__version__}; server model org/served-model@{host}; "
        "registry revision rev1 (not reported by the server)")
    assert info.model_revision is None  # the server reports no revision; never claim one
    assert info.chat_template_hash is None
    assert KEY not in repr(info)


def test_module_import_does_not_import_openai():
    code = ("import sys, cultivar_assets.engines.openai_engine; "
            "assert 'openai' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_translate_reports_failed_segments_and_retries_only_those(server, tmp_path):
    models = write_models_file(tmp_path / "models.yaml", [{
        "id": "api-chat", "hf_id": "org/served-model", "revision": "rev1", "type": "LLM",
        "family": "API", "engine": "openai", "prompt_style": "chat-instruction",
        "engine_options": {"base_url": server.url, "api_key_env": KEY_ENV, "max_retries": 1,
                           "timeout": 5, "batch_size": 2, "max_new_tokens": 24},
    }])
    spec = load_models(models).get("api-chat")
    test_sets = [
        TestSet("flores_deu_Latn", "flores", "deu_Latn", None,
                (Segment(0, "Guten Morgen", "Good morning"),
                 Segment(1, "Das ist BROKEN kaputt", "That is broken"),
                 Segment(2, "Danke", "Thanks"))),
        TestSet("flores_spa_Latn", "flores", "spa_Latn", None,
                (Segment(0, "Hola", "Hello"), Segment(1, "Adiós amigo", "Goodbye friend"))),
    ]
    cache_dir = tmp_path / "cache"
    server.always("BROKEN", "500")
    with pytest.raises(SegmentFailuresError) as error:
        translate(spec, test_sets, cache_dir=cache_dir, show_progress_bar=False)
    assert [(t, i) for t, i, _ in error.value.failures] == [("flores_deu_Latn", 1)]
    assert "flores_deu_Latn:1 (HTTP 500" in str(error.value)
    assert KEY not in str(error.value)
    assert server.seen("BROKEN") == 2

    server.clear()  # the server recovers
    before = len(server.requests)
    run = translate(spec, test_sets, cache_dir=cache_dir, show_progress_bar=False)
    assert (run.n_generated, run.n_cached) == (1, 4)
    assert [r.text.splitlines()[-1] for r in server.requests[before:]] == [
        "Das ist BROKEN kaputt"]
    assert [row.raw_output for row in run.rows] == [
        f"EN: {s.source}" for t in test_sets for s in t.segments]
    assert run.info.engine == "openai" and KEY not in repr(run.info)
    assert run.info.chat_template_hash is None


def test_the_same_refusal_on_the_first_requests_stops_after_three():
    """A context too short for max_new_tokens: every request is refused, each with its own token
    count in vLLM's message; three are sent, and the error names the setting."""
    server = FakeOpenAIServer(context=20).start()
    try:
        with pytest.raises(EngineLoadError, match=r"\b3\b.*HTTP 400: This model's maximum context "
                           r"length is 20 tokens.*\bmax_new_tokens\b.*\b32\b"):
            make_engine(server.url).generate([chat(f"s{i} " * i) for i in range(6)])
        assert len(server.requests) == 3
    finally:
        server.stop()
