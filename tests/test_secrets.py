"""Secrets never leave the core: servers that echo the request into their errors (as sent,
base64-encoded, split in two, cut in the middle) or into their answers, then a search of
everything the run wrote (CULTIVAR_HOME, DAGSTER_HOME: the caches, the database, the site's
shards, parquet and downloadable database, the error tool pages, Dagster's run storage and
compute logs; gzip, Parquet, Arrow, DuckDB and SQLite decoded) and of everything it printed, for
every form of the secret (``tests/secret_search.py``). Secrets written where names or URLs belong:
``tests/test_secrets_misplaced.py``."""

from __future__ import annotations

import base64
import json
import logging
import secrets as random_secrets
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from echo_server import EchoServer
from hub_server import use_hub
from openai_server import FakeOpenAIServer, fast_client
from secret_search import assert_secret_nowhere, file_texts, found_forms

from cultivar_assets.cli import main
from cultivar_assets.engines.base import EngineLoadError, EngineSettings
from cultivar_assets.engines.openai_engine import OpenAIEngine
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.secrets import (
    RedactedError,
    install_log_redaction,
    redact,
    register,
    secrets_redacted,
)
from cultivar_assets.specs import ModelSpec

KEY_ENV = "CULTIVAR_TEST_API_KEY"
STATUS_CUT = 200  # openai_engine cuts a server's message to this many characters


def b64(data: str | bytes, urlsafe: bool = False, pad: bool = True) -> str:
    raw = data.encode() if isinstance(data, str) else data
    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
    return text if pad else text.rstrip("=")


def served_models_file(path: Path, url: str) -> Path:
    path.write_text(yaml.safe_dump({"models": [{
        "id": "served", "hf_id": "org/served", "type": "LLM", "family": "Served",
        "engine": "openai", "prompt_style": "chat-instruction",
        "engine_options": {"base_url": url, "api_key_env": KEY_ENV, "max_retries": 0,
                           "timeout": 5},
    }]}))
    return path

pytestmark = pytest.mark.dagster_instances



def _run(config: dict, tmp_path: Path, capfd) -> tuple[int, str]:
    path = tmp_path / "cultivar.yaml"
    path.write_text(yaml.safe_dump(config))
    code = main(["--config", str(path), "run"])
    out, err = capfd.readouterr()
    return code, out + err


def _run_in_copy(run, changes: dict, capfd) -> tuple[int, str]:
    """``cultivar run`` in ``run`` (a copy of the session's finished run of the copy baseline,
    tests/pipeline_helpers.py) with its settings' sections ``changes`` replaced: what reads
    them is made again."""
    code = main(["--config", str(run.write_config({**run.config_values(), **changes})), "run"])
    out, err = capfd.readouterr()
    return code, out + err


def _push_in_copy(run, publish: dict, capfd) -> tuple[int, str]:
    """:func:`_run_in_copy` with the ``publish`` section ``publish``: the dataset folder, its
    push and the site are made again."""
    return _run_in_copy(run, {"publish": publish}, capfd)


# a live push (CI): the fast suite's push test is the encoded and split echo below
@pytest.mark.slow
def test_hub_push_to_a_server_that_echoes_the_token(copy_baseline_home, tmp_path, monkeypatch,
                                                    capfd):
    token = "hf_" + random_secrets.token_hex(16)
    with EchoServer(status=403) as echo:
        use_hub(monkeypatch, echo.url, tmp_path, token=token)
        code, printed = _push_in_copy(copy_baseline_home, {
            "repo_id": "me/cultivar-test", "endpoint": echo.url, "allow_demo_push": True}, capfd)
        sent = [r["authorization"] for r in echo.requests]
    assert f"Bearer {token}" in sent  # the token really went to the server, which echoed it
    assert code == 1
    assert "hf_dataset_push" in printed and "HTTP 403" in printed and echo.url in printed
    assert "***" in printed  # the echoed header, redacted
    # the run's folder: its homes (CULTIVAR_HOME, DAGSTER_HOME), database and settings
    assert assert_secret_nowhere(token, printed, copy_baseline_home.folder)["files"] > 10


# a live run (CI): the fast suite's test is the engine's error against the encoded echo below
@pytest.mark.slow
def test_openai_engine_against_a_server_that_echoes_the_key(copy_baseline_home, tmp_path,
                                                           monkeypatch, capfd):
    """In a copy of the session's finished run (in ``tmp_path``), its registry and models the
    served model's."""
    key = "sk-" + random_secrets.token_hex(16)
    monkeypatch.setenv("CULTIVAR_TEST_API_KEY", key)
    with EchoServer(status=401) as echo:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"models": [{
            "id": "served", "hf_id": "org/served", "type": "LLM", "family": "Served",
            "engine": "openai", "prompt_style": "chat-instruction",
            "engine_options": {"base_url": f"{echo.url}/v1", "api_key_env": "CULTIVAR_TEST_API_KEY",
                               "max_retries": 0, "timeout": 5},
        }]}))
        code, printed = _run_in_copy(copy_baseline_home, {
            "models": ["served"], "models_file": str(models)}, capfd)
        sent = [r["authorization"] for r in echo.requests]
    assert f"Bearer {key}" in sent
    assert code == 1 and "HTTP 401" in printed and "served" in printed
    assert assert_secret_nowhere(key, printed, tmp_path)["files"] > 5  # the run's homes, …


def test_hub_data_source_against_a_server_that_echoes_the_token(homes, tmp_path, monkeypatch,
                                                               capfd):
    token = "hf_" + random_secrets.token_hex(16)
    with EchoServer(status=401) as echo:
        use_hub(monkeypatch, echo.url, tmp_path, token=token)
        code, printed = _run({"data": {"kind": "hub", "cultivar_repo": "me/cultivar-data"},
                              "models": ["copy-source-baseline"],
                              "metrics": {"bleu_tokenize": "13a"}}, tmp_path, capfd)
        sent = [r["authorization"] for r in echo.requests]
    assert f"Bearer {token}" in sent
    assert code == 1 and "me/cultivar-data" in printed
    assert assert_secret_nowhere(token, printed, *homes)["files"] > 5


# --- the mechanism itself ----------------------------------------------------------------------


def test_every_registered_form_is_redacted():
    import base64
    from urllib.parse import quote

    secret = "tok/" + random_secrets.token_hex(8) + "+="
    register(secret)
    basic = base64.b64encode(f"user:{secret}".encode()).decode()
    text = f"a {secret} b {quote(secret, safe='')} c Basic {basic} d"
    assert redact(text) == "a *** b *** c Basic *** d"
    register("EMPTY")  # too short to be a secret: ordinary words stay
    assert redact("EMPTY results") == "EMPTY results"


def test_an_exception_chain_with_a_secret_is_replaced_without_its_cause():
    secret = register("sk-" + random_secrets.token_hex(12))
    with pytest.raises(RedactedError) as info, secrets_redacted():
        try:
            raise ValueError(f"server said: you sent {secret}")
        except ValueError as inner:
            raise RuntimeError("the push failed") from inner
    assert secret not in str(info.value) and "***" in str(info.value)
    assert "the push failed" in str(info.value) and "ValueError" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(KeyError), secrets_redacted():  # errors without secrets pass unchanged
        raise KeyError("plain")


def test_log_records_are_redacted_before_any_handler_sees_them(caplog):
    secret = register("hf_" + random_secrets.token_hex(12))
    install_log_redaction()
    logger = logging.getLogger("some.library")
    with caplog.at_level(logging.INFO):
        logger.info("sending %s", f"Bearer {secret}")
        try:
            raise RuntimeError(f"echo {secret}")
        except RuntimeError:
            logger.exception("failed")
    text = caplog.text + "".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert secret not in text and "***" in text


def test_the_search_finds_a_secret_in_every_container(tmp_path):
    """The search of tests/secret_search.py is not vacuous: it finds the secret in a gzip file, a
    site shard, Parquet, an Arrow IPC file and a gzip-compressed stream, DuckDB (also
    gzip-compressed, as the Query page's file) and SQLite."""
    import gzip
    import sqlite3

    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cultivar_assets.site.downloads import ipc_gz_bytes, query_database_gz_bytes
    from cultivar_assets.site.shards import encode_shard

    secret = "sk-" + random_secrets.token_hex(16)
    table = pa.table({"text": [f"said {secret}"]})
    (tmp_path / "a.gz").write_bytes(gzip.compress(secret.encode()))
    (tmp_path / "b.js").write_bytes(encode_shard("hyp/x", {"items": [secret]}))
    pq.write_table(table, tmp_path / "c.parquet", compression="zstd")
    with pa.ipc.new_file(str(tmp_path / "d.arrow"), table.schema) as writer:
        writer.write_table(table)
    (tmp_path / "e.arrow.gz").write_bytes(ipc_gz_bytes(table))
    con = duckdb.connect(str(tmp_path / "f.duckdb"))
    con.execute("CREATE TABLE t AS SELECT ? AS v", [secret])
    con.close()
    (tmp_path / "h.duckdb.gz").write_bytes(query_database_gz_bytes([("t", table)]))
    with sqlite3.connect(tmp_path / "g.sqlite") as lite:
        lite.execute("CREATE TABLE t (v BLOB)")
        lite.execute("INSERT INTO t VALUES (?)", [gzip.compress(b"x")])
        lite.execute("INSERT INTO t VALUES (?)", [secret])
    lite.close()
    expected = {"a.gz": "gzip", "b.js": "shard", "c.parquet": "parquet", "d.arrow": "arrow",
                "e.arrow.gz": "arrow stream", "f.duckdb": "duckdb", "g.sqlite": "sqlite",
                "h.duckdb.gz": "duckdb"}
    for name, kind in expected.items():
        found = [k for k, text in file_texts(tmp_path / name) if found_forms(secret, text)]
        assert kind in found, (name, found)


# --- every form a server echoes the bare value in --------------------------------------------

# (name, how a server echoes the secret): each is redacted so that no form of the secret that
# tests/secret_search.py looks for remains (raw, base64 forms, percent-encoding, 12-character
# windows).
ECHOES = {
    "raw": lambda k: k,
    "Bearer header": lambda k: f"Authorization: Bearer {k}",
    "percent-encoded": lambda k: quote(k, safe=""),
    "basic auth of user:key": lambda k: "Basic " + b64(f"user:{k}"),
    "* base64": b64,
    "* base64 unpadded": lambda k: b64(k, pad=False),
    "* base64 url-safe": lambda k: b64(k, urlsafe=True),
    "* base64 url-safe unpadded": lambda k: b64(k, urlsafe=True, pad=False),
    "* base64 inside a longer base64 text, aligned": lambda k: b64(b"abc" + k.encode() + b"!!"),
    "* base64 inside a longer base64 text, 1 byte off": lambda k: b64(b"a" + k.encode() + b"!"),
    "* base64 inside a longer base64 text, 2 bytes off": lambda k: b64(b"ab" + k.encode()),
    "* url-safe base64 inside a longer one, 1 byte off": lambda k: b64(b"{" + k.encode() + b"}",
                                                                      urlsafe=True),
    "* the header's base64 (Bearer key)": lambda k: b64(f"Bearer {k}"),
    "* split across two lines": lambda k: f"first line {k[:20]}\nsecond line {k[20:]}",
    "* split across two JSON fields": lambda k: json.dumps({"a": k[:14], "b": k[14:]}),
    "* line-wrapped base64 (MIME, 76 columns)": lambda k: base64.encodebytes(
        b"x" * 45 + k.encode()).decode(),
    "* cut in the middle (the first 25 characters)": lambda k: k[:25] + "…",
}


@pytest.mark.parametrize("name", list(ECHOES))
@pytest.mark.parametrize("kind", ["openai", "hf"])
def test_every_echoed_form_of_a_registered_secret_is_redacted(name, kind):
    secret = register(("sk-proj-" if kind == "openai" else "hf_")
                      + random_secrets.token_urlsafe(30).replace("-", "x"))
    echoed = ECHOES[name](secret)
    # the echo does hold the secret, in that form (a reader joins split lines again)
    assert found_forms(secret, echoed) or found_forms(secret, echoed.replace("\n", ""))
    text = redact(f"the server said: {echoed} (status 401)")
    assert "***" in text and "the server said: " in text and "(status 401)" in text
    assert not found_forms(secret, text) and not found_forms(secret, text.replace("\n", "")), text


def test_a_piece_shorter_than_the_window_is_not_caught():
    """The documented limit: of a secret split in two, a piece of fewer than 12 characters stays
    (here the last 8 of 38); the longer piece is redacted."""
    secret = register("sk-" + random_secrets.token_hex(16) + "abc")
    text = redact(f"part one: {secret[:30]}; part two: {secret[30:]}")
    assert text == f"part one: ***; part two: {secret[30:]}"


def test_fragments_of_environment_values_that_are_no_credentials_are_left(monkeypatch):
    """A path in some *_KEY variable is redacted where it appears whole, but its fragments are
    not (they would garble every path sharing 12 characters with it)."""
    from cultivar_assets.secrets import register_environment

    path = "/srv/" + random_secrets.token_hex(2) + "/deploy/keys/service.pem"
    monkeypatch.setenv("CULTIVAR_TEST_SIGNING_KEY", path)
    register_environment()
    assert redact(f"reading {path}") == "reading ***"
    assert redact(f"reading {path[:-4]}.crt") == f"reading {path[:-4]}.crt"


def _chat(text: str) -> GenerationRequest:
    return GenerationRequest(text, "deu_Latn", "chat", None, (("user", text),), (), 16)


def _served_engines_401(key: str, echo) -> str:
    """The error the served model's engine raises (with ``key`` sent as its bearer token)
    against a server answering 401 with ``echo(key)``: its message."""
    server = FakeOpenAIServer(echo=echo).start()
    try:
        server.always("", "401")
        spec = ModelSpec(id="served", hf_id="org/served", type="LLM", family="Served",
                         engine="openai", prompt_style="chat-instruction",
                         engine_options={"base_url": server.url, "api_key_env": KEY_ENV,
                                         "max_retries": 0, "timeout": 5})
        engine = OpenAIEngine(spec, EngineSettings())
        with pytest.raises(EngineLoadError) as info:
            engine.generate([_chat("Hallo")])
        engine.close()
    finally:
        server.stop()
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    return str(info.value)


def test_a_key_that_straddles_the_cut_of_a_status_message_is_redacted(monkeypatch):
    """openai_engine cuts a server's message to 200 characters: the key is redacted first, so a
    key that straddles the cut leaves none of its characters."""
    key = "sk-" + random_secrets.token_hex(20)
    fast_client(monkeypatch, KEY_ENV, key)
    prefix = "Incorrect API key provided: "
    pad = "x" * (STATUS_CUT - len(prefix) - 20)  # the cut falls 20 characters into the key
    message = _served_engines_401(key, lambda sent: pad + sent)
    # the cut falls inside the key: the redaction stands at the cut (a hint may follow it)
    assert "HTTP 401" in message and f"{pad}***" in message
    assert not found_forms(key, message), message


def _encoded_and_past_the_cut(sent: str) -> str:
    """A 401 message holding the key ``sent`` base64-encoded (bare, and url-safe inside a longer
    base64 text), then raw, straddling the 200-character cut."""
    forms = f"{b64(sent)} {b64(b'ab' + sent.encode(), urlsafe=True)} "
    return forms + "x" * (STATUS_CUT - 28 - len(forms) - 16) + sent


def test_a_key_echoed_encoded_and_past_the_cut_is_redacted_in_the_engines_error(monkeypatch):
    """The served model's engine against the server of the run below: the error it raises (what
    the run prints and Dagster stores) holds the server's message with every form of the key
    redacted. (The whole run, everything it wrote searched: the slow test below.)"""
    key = "sk-" + random_secrets.token_hex(16)
    fast_client(monkeypatch, KEY_ENV, key)
    message = _served_engines_401(key, _encoded_and_past_the_cut)
    assert "HTTP 401" in message and "***" in message
    assert not found_forms(key, message), message


# the whole run (CI): the fast suite's test of the same message is the one above
@pytest.mark.slow
def test_a_run_against_a_server_that_echoes_the_key_encoded_and_past_the_cut(
        copy_baseline_home, tmp_path, monkeypatch, capfd):
    """The whole run (stderr, Dagster's run storage and compute logs, every file): the 401
    message holds the key base64-encoded (bare and inside a longer base64 text) and then raw,
    straddling the 200-character cut. The run is made in a copy of the session's finished run
    (in ``tmp_path``), its registry and models the served model's."""
    key = "sk-" + random_secrets.token_hex(16)
    fast_client(monkeypatch, KEY_ENV, key)
    server = FakeOpenAIServer(echo=_encoded_and_past_the_cut).start()
    try:
        server.always("", "401")
        models = served_models_file(tmp_path / "served.yaml", server.url)
        code, printed = _run_in_copy(copy_baseline_home, {
            "models": ["served"], "models_file": str(models)}, capfd)
    finally:
        server.stop()
    assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert code == 1 and "HTTP 401" in printed and "served" in printed and "***" in printed
    counts = assert_secret_nowhere(key, printed, tmp_path)  # the run's homes, database, …
    assert counts["files"] > 5 and counts["sqlite"] > 0  # Dagster's run storage was searched


def test_a_key_in_the_model_output_is_redacted_as_the_cache_stores_it(tmp_path, monkeypatch):
    """The served model whose answers hold the request's key (raw and base64), translated by the
    core (``translate``): the translation cache stores each answer with the key redacted and the
    run's rows (what the database, the site and the dataset are made from) hold the stored text,
    from the server and again from the cache; no form of the key is in the cache's files. (The
    whole run, every store searched: the slow test below.)"""
    from cultivar_assets.data.testsets import Segment, TestSet
    from cultivar_assets.models import load_models
    from cultivar_assets.translation import translate

    key = "sk-" + random_secrets.token_hex(16)
    fast_client(monkeypatch, KEY_ENV, key)
    server = FakeOpenAIServer(echo=lambda sent: f" (sent with {sent}; {b64(sent)})").start()
    segments = (Segment(0, "Guten Morgen", "Good morning"), Segment(1, "Danke", "Thanks"))
    test_sets = [TestSet("flores_deu_Latn", "flores", "deu_Latn", None, segments)]
    cache = tmp_path / "cache"
    try:
        spec = load_models(served_models_file(tmp_path / "models.yaml", server.url)).get("served")
        runs = [translate(spec, test_sets, cache_dir=cache, show_progress_bar=False)
                for _ in range(2)]
    finally:
        server.stop()
    assert len(server.requests) == 2 and all(
        r.headers["authorization"] == f"Bearer {key}" for r in server.requests)
    assert [(run.n_generated, run.n_cached) for run in runs] == [(2, 0), (0, 2)]
    for run in runs:
        assert [row.raw_output for row in run.rows] == [
            f"EN: {text} (sent with ***; ***)" for text in ("Guten Morgen", "Danke")]
        assert all(not found_forms(key, f"{row.raw_output} {row.hypothesis}") for row in run.rows)
    counts = assert_secret_nowhere(key, "", cache)
    assert counts.get("sqlite", 0) > 0  # the cache's database, decoded and searched
    assert any("(sent with ***; ***)" in text for path in cache.rglob("*") if path.is_file()
               for _, text in file_texts(path))


# the whole run (CI): the fast suite's test of the same redaction is the one above
@pytest.mark.slow
def test_a_key_in_the_model_output_is_redacted_before_anything_stores_it(
        copy_baseline_home, tmp_path, monkeypatch, capfd):
    """A server that puts the request's key into its answers (raw and base64): the run succeeds,
    and neither form is in the translation cache, the database, the site's shards, parquet files
    and downloadable database, the error tool pages, or anything else under the homes. The run
    is made in a copy of the session's finished run (in ``tmp_path``), its registry and models
    the served model's and its error-analysis sample one German locale: the served model's
    translations reach every store, the error tool pages included."""
    key = "sk-" + random_secrets.token_hex(16)
    fast_client(monkeypatch, KEY_ENV, key)
    server = FakeOpenAIServer(echo=lambda sent: f" (sent with {sent}; {b64(sent)})").start()
    try:
        models = served_models_file(tmp_path / "models.yaml", server.url)
        code, printed = _run_in_copy(copy_baseline_home, {
            "models": ["served"], "models_file": str(models),
            "error_analysis": {"locales": ["deu_Latn_Germany"], "n_instances": 2},
        }, capfd)
    finally:
        server.stop()
    assert code == 0, printed
    assert server.requests and all(r.headers["authorization"] == f"Bearer {key}"
                                   for r in server.requests)
    home = copy_baseline_home.home
    database = copy_baseline_home.database
    assert any("(sent with ***; ***)" in text for _, text in file_texts(database))
    tools = list((home / "analysis" / "errors").rglob("*.html"))
    assert tools and any("sent with ***" in p.read_text("utf-8") for p in tools)
    counts = assert_secret_nowhere(key, printed, tmp_path)  # the run's homes, database, …
    for kind in ("duckdb", "sqlite", "parquet", "shard"):
        assert counts.get(kind, 0) > 0, (kind, counts)  # each kind of file was decoded


def test_a_hub_push_whose_server_echoes_the_token_encoded_and_split(
        copy_baseline_home, tmp_path, monkeypatch, capfd):
    """The Hub token echoed base64-encoded (standard and url-safe, unpadded) and in two parts of
    the message: the push fails, and no form of the token is printed or stored."""
    token = "hf_" + random_secrets.token_hex(16)

    def echo(sent: str) -> str:
        bare = sent.removeprefix("Bearer ")
        return (f"{b64(bare)} / {b64(bare, urlsafe=True, pad=False)} / parts: "
                f"[{bare[:17]}] [{bare[17:]}]")

    with EchoServer(status=403, echo=echo) as hub:
        use_hub(monkeypatch, hub.url, tmp_path, token=token)
        code, printed = _push_in_copy(copy_baseline_home, {
            "repo_id": "me/cultivar-test", "endpoint": hub.url, "allow_demo_push": True}, capfd)
        sent = [r["authorization"] for r in hub.requests]
    assert f"Bearer {token}" in sent
    assert code == 1 and "HTTP 403" in printed and "parts: [***] [***]" in printed
    # tmp_path holds the run's folder (its homes, database and settings)
    assert assert_secret_nowhere(token, printed, tmp_path)["files"] > 10
