"""Secrets never leave the core: servers that echo the request into their errors, then a search
of everything the run wrote (CULTIVAR_HOME, DAGSTER_HOME, the site, every DuckDB column) and of
everything it printed."""

from __future__ import annotations

import logging
import secrets as random_secrets
from pathlib import Path

import duckdb
import pytest
import yaml
from echo_server import EchoServer
from hub_server import use_hub

from cultivar_assets.cli import main
from cultivar_assets.secrets import (
    RedactedError,
    install_log_redaction,
    redact,
    register,
    secrets_redacted,
)

pytestmark = pytest.mark.dagster_instances


def _database_text(path: Path) -> str:
    """Every value of every column of every table of a DuckDB file, as text."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        parts = []
        for schema, table in tables:
            for row in con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall():
                parts.append(" ".join(map(str, row)))
        return "\n".join(parts)
    finally:
        con.close()


def assert_secret_nowhere(secret: str, printed: str, *roots: Path) -> int:
    """The secret is in no file under ``roots``, no DuckDB value and not in ``printed``."""
    assert secret not in printed
    n_files = 0
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            n_files += 1
            assert secret.encode() not in path.read_bytes(), path
            if path.suffix == ".duckdb":
                assert secret not in _database_text(path), path
    return n_files


@pytest.fixture
def homes(tmp_path, monkeypatch, isolated_home):
    dagster_home = tmp_path / "dagster-home"
    dagster_home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    return isolated_home, dagster_home


def _run(config: dict, tmp_path: Path, capfd) -> tuple[int, str]:
    path = tmp_path / "cultivar.yaml"
    path.write_text(yaml.safe_dump(config))
    code = main(["--config", str(path), "run"])
    out, err = capfd.readouterr()
    return code, out + err


def test_hub_push_to_a_server_that_echoes_the_token(homes, tmp_path, monkeypatch, capfd):
    token = "hf_" + random_secrets.token_hex(16)
    with EchoServer(status=403) as echo:
        use_hub(monkeypatch, echo.url, tmp_path, token=token)
        code, printed = _run({
            "models": ["copy-source-baseline"], "metrics": {"bleu_tokenize": "13a"},
            "publish": {"repo_id": "me/cultivar-test", "endpoint": echo.url,
                        "allow_demo_push": True},
        }, tmp_path, capfd)
        sent = [r["authorization"] for r in echo.requests]
    assert f"Bearer {token}" in sent  # the token really went to the server, which echoed it
    assert code == 1
    assert "hf_dataset_push" in printed and "HTTP 403" in printed and echo.url in printed
    assert "***" in printed  # the echoed header, redacted
    assert assert_secret_nowhere(token, printed, *homes) > 10


def test_openai_engine_against_a_server_that_echoes_the_key(homes, tmp_path, monkeypatch,
                                                           capfd):
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
        code, printed = _run({"models": ["served"], "models_file": str(models),
                              "metrics": {"bleu_tokenize": "13a"}}, tmp_path, capfd)
        sent = [r["authorization"] for r in echo.requests]
    assert f"Bearer {key}" in sent
    assert code == 1 and "HTTP 401" in printed and "served" in printed
    assert assert_secret_nowhere(key, printed, *homes) > 5


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
    assert assert_secret_nowhere(token, printed, *homes) > 5


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
