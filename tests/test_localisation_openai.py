"""LLM localisation through the OpenAI-compatible engine, against a local server on 127.0.0.1:
good and malformed answers, 429, 500, a time-out, the cache, usage and cost, and the API key."""

from __future__ import annotations

import json
import logging
import os
import re

import pytest
from localisation_helpers import demo_pairs, localising_answer, swap
from openai_server import FakeOpenAIServer, fast_client

from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.config import LocalisationConfig, demo_construction
from cultivar_assets.construction.localisation.localiser import (
    LocalisationFailuresError,
    localise,
)
from cultivar_assets.construction.localisation.store import read_drafts
from cultivar_assets.secrets import install_log_redaction
from cultivar_assets.store.database import Store

KEY_ENV = "CULTIVAR_TEST_LOCALISER_KEY"
KEY = "sk-localiser-secret-4be1d07c"
LOCALE = "deu_Latn_Switzerland"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    fast_client(monkeypatch, KEY_ENV, KEY)


@pytest.fixture
def server():
    fake = FakeOpenAIServer(answer=localising_answer).start()
    yield fake
    fake.stop()


def config(server, **changes) -> LocalisationConfig:
    options = {"base_url": server.url, "api_key_env": KEY_ENV, "max_retries": 2, "timeout": 5,
               "max_concurrency": 4, "batch_size": 4, **changes.pop("options", {})}
    return LocalisationConfig(model="gpt-test", engine_options=options,
                              price_input_per_million=2.0, price_output_per_million=8.0,
                              **changes)


def test_good_answers_become_drafts_with_usage_and_cost(server, tmp_path):
    pairs = demo_pairs(n=5)
    run = localise({LOCALE: pairs}, config(server), cache_dir=tmp_path, show_bar=False)
    drafts = run.locales[LOCALE]
    assert [d.draft.instance_id for d in drafts.drafts] == [p.instance_id for p in pairs]
    for item, pair in zip(drafts.drafts, pairs, strict=True):
        draft = item.draft
        assert not draft.flagged and item.attempts == 1
        assert (draft.source_draft, draft.english_draft) == (swap(pair.source), swap(pair.english))
        assert draft.raw_answer == f"German: {swap(pair.source)}\nEnglish: {swap(pair.english)}"
        assert draft.prompt_hash == run.localiser.prompt.prompt_hash
        assert item.prompt_tokens > 100 and item.completion_tokens > 10  # the server's usage
    totals = drafts.totals()
    assert totals["n_drafts"] == 5 and totals["n_flagged"] == 0
    assert totals["n_unchanged"] == sum(swap(p.source) == p.source and swap(p.english) ==
                                        p.english for p in pairs) > 0
    assert totals["prompt_tokens"] == sum(d.prompt_tokens for d in drafts.drafts)
    assert totals["estimated_cost"] == pytest.approx(
        (totals["prompt_tokens"] * 2.0 + totals["completion_tokens"] * 8.0) / 1e6)
    assert len(server.requests) == 5  # one request per instance
    body = server.requests[0].body
    assert body["model"] == "gpt-test" and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"

    again = localise({LOCALE: pairs}, config(server), cache_dir=tmp_path, show_bar=False)
    assert len(server.requests) == 5 and again.n_generated == 0  # all from the cache
    assert again.locales[LOCALE].records == drafts.records
    assert again.locales[LOCALE].totals()["estimated_cost_this_run"] == 0
    assert again.locales[LOCALE].totals()["estimated_cost"] == totals["estimated_cost"]


def test_a_malformed_answer_is_retried_with_the_reason(server, tmp_path):
    pairs = demo_pairs(n=3)
    marker = pairs[1].source.split()[2]  # a word of instance 1's sentence
    server.always(marker, "empty")  # every answer to instance 1 is empty text ...
    flaky = pairs[2].source.split()[1]
    server.script(flaky, "empty")  # ... instance 2's first answer only
    run = localise({LOCALE: pairs}, config(server, max_attempts=3), cache_dir=tmp_path,
                   show_bar=False)
    by_id = {d.draft.instance_id: d for d in run.locales[LOCALE].drafts}
    assert len(by_id) == 3  # never dropped
    flagged = by_id[pairs[1].instance_id]
    assert flagged.draft.flagged and flagged.attempts == 3
    assert flagged.draft.source_draft is None and flagged.draft.english_draft is None  # not the
    assert flagged.draft.raw_answer == ""  # original: nothing replaces a draft
    assert flagged.draft.flag_reason == "the answer is empty (after 3 attempts)"
    assert by_id[pairs[2].instance_id].attempts == 2
    assert not by_id[pairs[2].instance_id].draft.flagged
    retry = next(r for r in server.requests if flaky in r.text and len(r.body["messages"]) == 4)
    assert [m["role"] for m in retry.body["messages"]] == ["system", "user", "assistant", "user"]
    assert retry.body["messages"][3]["content"].startswith(
        "Your answer could not be read (the answer is empty).")
    assert server.seen(marker) == 3 and server.seen(flaky) == 2
    assert len(server.requests) == 1 + 3 + 2
    assert run.locales[LOCALE].totals()["n_retried"] == 2

    n = len(server.requests)
    again = localise({LOCALE: pairs}, config(server, max_attempts=3), cache_dir=tmp_path,
                     show_bar=False)
    assert len(server.requests) == n  # every attempt came from the cache
    assert again.locales[LOCALE].records == run.locales[LOCALE].records


def test_429_and_a_time_out_are_retried_by_the_client(server, tmp_path):
    pairs = demo_pairs(n=3)
    limited, slow = pairs[0].source.split()[1], pairs[1].source.split()[1]
    server.script(limited, "429", "429")
    server.script(slow, "hang")
    server.hang_seconds = 3
    cfg = config(server, options={"timeout": 0.5, "max_retries": 3})
    run = localise({LOCALE: pairs}, cfg, cache_dir=tmp_path, show_bar=False)
    assert all(not d.draft.flagged for d in run.locales[LOCALE].drafts)
    assert server.seen(limited) == 3 and server.seen(slow) == 2


def test_a_request_that_keeps_failing_writes_nothing_and_resumes(server, tmp_path):
    store = Store(tmp_path / "build.duckdb")
    construction = demo_construction()
    build_selection(construction.source, construction.selection, store, show_bar=False)
    broken = demo_pairs(n=4)[3].source.split()[1]
    server.always(broken, "500")
    cfg = config(server, locales=[LOCALE])
    with pytest.raises(LocalisationFailuresError,
                       match=r"^1 .*deu_Latn_Switzerland_3 \(HTTP 500\b.*\b2\b.*Internal server "
                       r"error\."):
        build_localisation(cfg, store, cache_dir=tmp_path / "cache", show_bar=False)
    with pytest.raises(LookupError, match=rf"{re.escape(str(store.path))}.*deu_Latn_Switzerland"):
        read_drafts(store, LOCALE)
    assert server.seen(broken) == 3  # the first try and the client's two retries
    n = len(server.requests)
    server.clear()
    build_localisation(cfg, store, cache_dir=tmp_path / "cache", show_bar=False)
    assert len(server.requests) == n + 1  # only the failed request was sent again
    assert len(read_drafts(store, LOCALE)) == 12


def test_concurrency_is_bounded(tmp_path):
    fake = FakeOpenAIServer(delay=0.05, answer=localising_answer).start()
    try:
        cfg = config(fake, options={"max_concurrency": 3, "batch_size": 12})
        localise({LOCALE: demo_pairs()}, cfg, cache_dir=tmp_path, show_bar=False)
        assert 1 < fake.max_in_flight <= 3
    finally:
        fake.stop()


def test_the_api_key_is_in_no_log_metadata_or_database(server, tmp_path, caplog):
    install_log_redaction()
    caplog.set_level(logging.DEBUG)
    store = Store(tmp_path / "build.duckdb")
    construction = demo_construction()
    build_selection(construction.source, construction.selection, store, show_bar=False)
    server.script(demo_pairs(n=2)[1].source.split()[1], "401")
    cfg = config(server, locales=[LOCALE], options={"max_retries": 0})
    with pytest.raises(Exception, match="HTTP 401") as error:
        build_localisation(cfg, store, cache_dir=tmp_path / "cache", show_bar=False)
    assert KEY not in str(error.value)  # the server echoed it; the message is redacted
    build_localisation(cfg, store, cache_dir=tmp_path / "cache", show_bar=False)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    assert KEY not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    (row,) = store.query("localisation_runs")
    assert row["engine_options"] == "{}"  # only options that change answers: no address, no key
    assert row["engine_version"].startswith("openai-python ")


def unique_word(pairs, i: int) -> str:
    """A word of pair ``i``'s source that no other pair's source holds (a marker)."""
    others = " ".join(p.source for j, p in enumerate(pairs) if j != i)
    return next(w for w in pairs[i].source.split() if len(w) > 3 and w not in others)


def failure_record(error: LocalisationFailuresError) -> dict:
    path = error.failures_file
    assert str(path) in str(error) and path.parent.name == "failures"
    return json.loads(path.read_text("utf-8"))


def test_identical_refusals_stop_the_run_and_name_the_setting(tmp_path):
    """A server whose context is 2048 with the paper's max_new_tokens 4096: every request is
    refused with HTTP 400 (vLLM's message, each with its own token count); the run stops after
    the probe's three, says to lower max_new_tokens, and does not claim anything is cached."""
    fake = FakeOpenAIServer(answer=localising_answer, context=2048).start()
    try:
        with pytest.raises(LocalisationFailuresError) as caught:
            localise({LOCALE: demo_pairs()}, config(fake, max_new_tokens=4096),
                     cache_dir=tmp_path, show_bar=False)
        assert len(fake.requests) == 3  # not all 12
    finally:
        fake.stop()
    message = str(caught.value)
    assert message.startswith("localisation stopped: ")
    assert "maximum context length is 2048 tokens" in message
    assert "max_new_tokens" in message and "4096" in message
    assert re.search(r"--max-model-len\b.*\b12\b.*\b3\b.*\b9\b", message)
    assert "other answers are cached" not in message
    assert "0 + 0 tokens" in message and "0.0000 USD" in message
    record = failure_record(caught.value)
    assert record["n_failures"] == 3 and record["stopped"] == caught.value.stopped
    assert [f["instance_id"] for f in record["failures"]] == [p.instance_id
                                                             for p in demo_pairs(n=3)]
    assert all(f["reason"].startswith("HTTP 400: This model's maximum context length")
               for f in record["failures"])
    assert record["spend"]["n_requests"] == 12 and record["spend"]["n_generated"] == 0

    # the same settings against a server with room: the run goes through
    roomy = FakeOpenAIServer(answer=localising_answer, context=8192).start()
    try:
        run = localise({LOCALE: demo_pairs()}, config(roomy, max_new_tokens=4096),
                       cache_dir=tmp_path, show_bar=False)
    finally:
        roomy.stop()
    assert run.n_generated == 12


def test_refusals_that_differ_are_not_a_configuration_error(server, tmp_path):
    pairs = demo_pairs()
    server.script(unique_word(pairs, 0), "400")
    server.script(unique_word(pairs, 1), "422")
    with pytest.raises(LocalisationFailuresError,
                       match=r"^2 .*\b10 of 12 .*\(10 .*, 0 .*\); 2 ") as caught:
        localise({LOCALE: pairs}, config(server), cache_dir=tmp_path, show_bar=False)
    assert caught.value.stopped is None and len(server.requests) == 12


def test_a_failed_run_reports_spend_cache_and_every_failure(server, tmp_path):
    pairs = demo_pairs()
    broken = [unique_word(pairs, i) for i in range(5, 12)]
    for marker in broken[:6]:
        server.always(marker, "500")
    server.always(broken[6], "null")  # answered (tokens spent) with no content
    cfg = config(server)
    localise({LOCALE: pairs[:2]}, cfg, cache_dir=tmp_path, show_bar=False)  # 2 cached before
    with pytest.raises(LocalisationFailuresError) as caught:
        localise({LOCALE: pairs}, cfg, cache_dir=tmp_path, show_bar=False)
    error = caught.value
    message = str(error)
    assert message.startswith("7 ")
    assert message.count("(HTTP 500 after 2 retries") == 5 and " and 2 more." in message
    assert re.search(r"\b5 of 12 .*\(3 .*, 2 .*\); 7 ", message)
    null = next(f for f in error.failures if f.reason.startswith("no content"))
    assert null.prompt_tokens > 100 and null.completion_tokens == 0  # the server's usage
    answered = [r for r in server.requests[2:] if not any(m in r.text for m in broken)]
    prompt = sum(len(" ".join(m["content"] for m in r.body["messages"]).split())
                 for r in answered) + null.prompt_tokens
    assert error.spend.prompt_tokens == prompt and error.spend.failed_prompt_tokens == \
        null.prompt_tokens
    cost = (prompt * 2.0 + error.spend.completion_tokens * 8.0) / 1e6
    assert f"{prompt} + {error.spend.completion_tokens} tokens" in message
    assert f"{null.prompt_tokens} + 0 " in message and f"{cost:.4f} USD" in message
    record = failure_record(error)
    assert len(record["failures"]) == 7  # the complete list, not the message's five
    assert {f["instance_id"] for f in record["failures"]} == {p.instance_id for p in pairs[5:]}
    assert record["spend"]["estimated_cost"] == pytest.approx(
        (prompt * 2.0 + error.spend.completion_tokens * 8.0) / 1e6)


def test_a_200_that_is_not_json_is_named_and_redacted(server, tmp_path):
    pairs = demo_pairs(n=4)
    server.script(unique_word(pairs, 2), "notjson")
    with pytest.raises(LocalisationFailuresError) as caught:
        localise({LOCALE: pairs}, config(server), cache_dir=tmp_path, show_bar=False)
    (failure,) = caught.value.failures
    assert "200" in failure.reason and "JSON" in failure.reason
    assert "'{\"error\": \"upstream closed\", \"auth\": \"" in failure.reason
    assert KEY not in str(caught.value) and KEY not in failure.reason
    assert KEY not in caught.value.failures_file.read_text("utf-8")

    # a base_url that answers every request with a web page: stopped after the probe
    server.always("", "html")
    with pytest.raises(LocalisationFailuresError,
                       match=r"engine_options\.base_url") as caught:
        localise({"deu_Latn_Germany": pairs}, config(server), cache_dir=tmp_path / "b",
                 show_bar=False)
    assert caught.value.stopped and len(caught.value.failures) == 3


def test_requests_are_submitted_as_others_finish(tmp_path):
    """One slow answer does not hold back the requests after it (chunks of 4 would)."""
    fake = FakeOpenAIServer(delay=0.02, answer=localising_answer, hang_seconds=1.5).start()
    pairs = demo_pairs()
    slow = unique_word(pairs, 1)
    fake.script(slow, "hang")
    try:
        localise({LOCALE: pairs}, config(fake, options={"max_concurrency": 4, "batch_size": 4}),
                 cache_dir=tmp_path, show_bar=False)
    finally:
        fake.stop()
    hung = next(r for r in fake.requests if slow in r.text)
    assert len(fake.requests) == 12
    assert max(r.at for r in fake.requests) - hung.at < 0.75  # all sent while it hung
    assert fake.max_in_flight == 4


def test_only_the_newest_failure_files_of_a_localiser_are_kept(tmp_path):
    """Each failed run writes its failure file; the folder keeps the newest KEEP_FAILURE_FILES of
    that localiser (older ones removed), and never touches another localiser's files."""
    from cultivar_assets.construction.localisation.localiser import KEEP_FAILURE_FILES

    fake = FakeOpenAIServer(answer=localising_answer, context=2048).start()
    try:
        with pytest.raises(LocalisationFailuresError) as first:
            localise({LOCALE: demo_pairs()}, config(fake, max_new_tokens=4096),
                     cache_dir=tmp_path, show_bar=False)
        folder = first.value.failures_file.parent
        own = failure_record(first.value)["localiser"]
        first.value.failures_file.unlink()
        old = [folder / f"{own}-2020010{i // 10}T0000{i % 10}0Z.json"
               for i in range(KEEP_FAILURE_FILES + 3)]
        other = folder / f"{own}-other-20200101T000000Z.json"
        for i, path in enumerate([*old, other]):
            path.write_text("{}", "utf-8")
            os.utime(path, ns=(10**18 + i * 10**9,) * 2)
        with pytest.raises(LocalisationFailuresError) as second:
            localise({LOCALE: demo_pairs()}, config(fake, max_new_tokens=4096),
                     cache_dir=tmp_path, show_bar=False)
    finally:
        fake.stop()
    kept = {p.name for p in folder.iterdir()}
    assert second.value.failures_file.name in kept
    assert other.name in kept
    assert {p.name for p in old} & kept == {p.name for p in old[-(KEEP_FAILURE_FILES - 1):]}
    assert len(kept) == KEEP_FAILURE_FILES + 1
