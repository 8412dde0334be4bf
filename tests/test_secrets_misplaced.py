"""Secrets written where a name or a plain URL belongs are refused, and never repeated.

A key's value in ``api_key_env``, a token's in ``token_env``, ``publish: {token: …}`` and a URL
with credentials are each refused before anything runs or is stored, with a message that names
the file and the field and holds no form of the value (``tests/secret_search.py``: raw, base64,
percent-encoded, 12-character windows); pydantic's ``input_value`` is never echoed.
"""

from __future__ import annotations

import secrets as random_secrets
import string
from pathlib import Path

import pytest
import yaml
from openai_server import FakeOpenAIServer, fast_client
from pydantic import ValidationError
from secret_search import assert_secret_nowhere, found_forms

from cultivar_assets import secrets
from cultivar_assets.cli import main
from cultivar_assets.construction.config import LocalisationConfig
from cultivar_assets.models import ModelRegistryError, load_models
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.secrets import redact
from cultivar_assets.settings import SettingsError, load_settings
from cultivar_assets.specs import ModelSpec

pytestmark = pytest.mark.dagster_instances


def openai_key() -> str:
    return "sk-proj-" + random_secrets.token_urlsafe(30)


def hf_token() -> str:
    return "hf_" + random_secrets.token_hex(17)


def lower_case_key() -> str:
    """A key of 38 random lower-case characters of which two are digits."""
    chars = [random_secrets.choice(string.ascii_lowercase) for _ in range(36)]
    for digit in (random_secrets.choice(string.digits) for _ in range(2)):
        chars.insert(random_secrets.randbelow(len(chars) + 1), digit)
    return "".join(chars)


# --- what "looks like a key or token" means ----------------------------------------------------

LOOK_LIKE = {
    "OpenAI project key": lambda: openai_key(),
    "OpenAI key": lambda: "sk-" + random_secrets.token_hex(24),
    "Hugging Face token": hf_token,
    "GitHub token": lambda: "ghp_" + random_secrets.token_hex(18),
    "AWS access key id": lambda: "AKIA" + random_secrets.token_hex(8).upper(),
    "Bearer header": lambda: "Bearer " + random_secrets.token_hex(16),
    "long hex": lambda: random_secrets.token_hex(20),
    "long base64url": lambda: random_secrets.token_urlsafe(32).replace("-", "a") + "9Zz",
    "38 lower-case characters, two of them digits": lambda: lower_case_key(),
}
NAMES = ["OPENAI_API_KEY", "HF_TOKEN", "CULTIVAR_TEST_API_KEY", "MY_TOKEN_2", "hf_token",
         "OPENROUTER_API_KEY_FOR_CULTIVAR_RUNS", "sk_live", "X"]


@pytest.mark.parametrize("kind", list(LOOK_LIKE))
def test_values_that_look_like_keys_or_tokens(kind):
    assert secrets.looks_like_secret(LOOK_LIKE[kind]())


@pytest.mark.parametrize("name", NAMES)
def test_environment_variable_names_do_not_look_like_secrets(name):
    assert not secrets.looks_like_secret(name)


# --- refused in the files ------------------------------------------------------------------------


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _entry(**engine_options) -> dict:
    return {"id": "served", "hf_id": "org/served", "type": "LLM", "family": "Served",
            "engine": "openai", "prompt_style": "chat-instruction",
            "engine_options": {"max_retries": 0, "timeout": 5, **engine_options}}



@pytest.fixture
def server():
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


def _cli_run(config: Path, capfd) -> tuple[int, str]:
    code = main(["--config", str(config), "run"])
    out, err = capfd.readouterr()
    return code, out + err


@pytest.mark.parametrize("where", ["api_key_env", "base_url"])
def test_a_key_in_the_models_file_is_refused_before_anything_runs(where, homes, tmp_path,
                                                                  server, monkeypatch, capfd):
    """Refused, not run against the local server: the key would be stored in
    raw.models.engine_options, the model page, models.parquet and the downloadable database."""
    key = openai_key()
    fast_client(monkeypatch, "OPENAI_API_KEY", "unused-" + random_secrets.token_hex(4))
    options = ({"base_url": server.url, "api_key_env": key} if where == "api_key_env" else
               {"base_url": server.url.replace("http://", f"http://user:{key}@")})
    models = _write(tmp_path / "models.yaml", {"models": [_entry(**options)]})
    config = _write(tmp_path / "cultivar.yaml", {"models": ["served"],
                                                 "models_file": str(models),
                                                 "metrics": {"bleu_tokenize": "13a"}})
    code, printed = _cli_run(config, capfd)
    assert code == 1 and not server.requests  # refused before any request
    assert str(models) in printed and f"engine_options.{where}" in printed
    assert "not repeated" in printed
    assert_secret_nowhere(key, printed, *homes)


# (engine options of the served entry, given the key): each would be stored in
# raw.models.engine_options, models.parquet, the downloadable database and the model page
KEY_PLACES = {
    "extra_body api-key": lambda key: {"extra_body": {"api-key": key}},
    "extra_body x-api-key": lambda key: {"extra_body": {"x-api-key": key}},
    "extra_body key": lambda key: {"extra_body": {"key": key}},
    "the registered value under any other name": lambda key: {
        "extra_body": {"metadata": {"client": key}}},
    "api_key_env holding a lower-case key": lambda key: {"api_key_env": key},
}
KEY_ENV = "CULTIVAR_TEST_API_KEY"


@pytest.mark.parametrize("place", list(KEY_PLACES))
def test_the_environment_key_written_in_the_models_file_is_refused_and_stored_nowhere(
        place, homes, tmp_path, server, monkeypatch, capfd):
    """The key is also the value of an environment variable (so registered as a secret):
    wherever it is written in the entry, the run is refused before any request and no form of
    the key is in anything written under the homes or printed."""
    key = lower_case_key() if "lower-case" in place else openai_key()
    fast_client(monkeypatch, KEY_ENV, key)
    options = {"base_url": server.url, "api_key_env": KEY_ENV, **KEY_PLACES[place](key)}
    models = _write(tmp_path / "models.yaml", {"models": [_entry(**options)]})
    config = _write(tmp_path / "cultivar.yaml", {"models": ["served"],
                                                 "models_file": str(models),
                                                 "metrics": {"bleu_tokenize": "13a"}})
    code, printed = _cli_run(config, capfd)
    assert code == 1 and not server.requests, printed  # refused before any request
    assert str(models) in printed and "engine_options." in printed and "not repeated" in printed
    assert_secret_nowhere(key, printed, *homes)


def test_a_registered_secret_under_any_name_is_refused_without_its_value():
    value = random_secrets.token_hex(4) + "-" + random_secrets.token_hex(8)  # no key's look
    assert not secrets.misplaced_secrets({"engine_options": {"extra_body": {"note": value}}})
    secrets.register(value)
    tree = {"engine_options": {"extra_body": {"note": value, "tags": [f"run {value}"]}},
            value: 1}
    problems = secrets.misplaced_secrets(tree, "models.yaml")
    assert [p.split(" ", 2)[:2] for p in problems] == [
        ["models.yaml:", "engine_options.extra_body.note"],
        ["models.yaml:", "engine_options.extra_body.tags[0]"],
        ["models.yaml:", "(top"]], problems
    assert not any(found_forms(value, problem) for problem in problems)


def test_engine_options_are_stored_after_redaction(tmp_path):
    """An option whose value became a secret after the entry was read (registered later, under
    a name that is no secret's) is stored as ``***`` in raw.models.engine_options."""
    import duckdb

    from cultivar_assets.engines.base import EngineInfo
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.records import write_translations
    from cultivar_assets.translation import TranslationRun

    value = "opt-" + random_secrets.token_hex(10)
    spec = ModelSpec(**_entry(extra_body={"route": value}))
    secrets.register(value)
    info = EngineInfo("openai", "1", None, None)
    store = Store(tmp_path / "options.duckdb")
    write_translations(store, TranslationRun(spec, "f", info, "h", [], 0, 0, 0.0), "d")
    with duckdb.connect(str(store.path), read_only=True) as con:
        stored = con.execute("SELECT engine_options FROM raw.models").fetchone()[0]
    assert not found_forms(value, stored) and '"route": "***"' in stored, stored


def test_a_token_in_token_env_is_refused_before_anything_runs(homes, tmp_path, capfd):
    """Refused, not a silent dry run with the token in Dagster's run config and event log."""
    token = hf_token()
    config = _write(tmp_path / "cultivar.yaml", {
        "models": ["copy-source-baseline"], "metrics": {"bleu_tokenize": "13a"},
        "publish": {"repo_id": "me/cultivar-test", "token_env": token}})
    code, printed = _cli_run(config, capfd)
    assert code == 1 and str(config) in printed and "publish.token_env" in printed
    assert_secret_nowhere(token, printed, *homes)


# (settings written, the field the message names): each refused by load_settings
SETTINGS = {
    "publish token": (lambda s: {"publish": {"token": s}}, "publish.token"),
    "publish hf_token": (lambda s: {"publish": {"repo_id": "me/x", "hf_token": s}},
                         "publish.hf_token"),
    "token_env holding the token": (lambda s: {"publish": {"token_env": s}}, "publish.token_env"),
    "token_env that is no name": (lambda s: {"publish": {"token_env": f"{s} "}},
                                  "publish.token_env"),
    "publish endpoint with credentials": (
        lambda s: {"publish": {"endpoint": f"https://__token__:{s}@hub.example"}},
        "publish.endpoint"),
    "localiser api_key_env": (
        lambda s: {"construction": {"localisation": {"engine_options": {"api_key_env": s}}}},
        "construction.localisation.engine_options.api_key_env"),
    "localiser api_key": (
        lambda s: {"construction": {"localisation": {"engine_options": {"api_key": s}}}},
        "construction.localisation.engine_options.api_key"),
    "localiser base_url with credentials": (
        lambda s: {"construction": {"localisation": {"engine_options": {
            "base_url": f"http://me:{s}@127.0.0.1:9/v1"}}}},
        "construction.localisation.engine_options.base_url"),
    "a key in extra_body": (
        lambda s: {"construction": {"localisation": {"engine_options": {
            "extra_body": {"headers": {"authorization": f"Bearer {s}"}}}}}},
        "engine_options.extra_body.headers.authorization"),
}


@pytest.mark.parametrize("case", list(SETTINGS))
def test_a_secret_in_the_settings_file_is_refused_and_never_repeated(case, tmp_path):
    secret = hf_token() if "publish" in case or "token" in case else openai_key()
    make, field = SETTINGS[case]
    path = _write(tmp_path / "cultivar.yaml", make(secret))
    with pytest.raises(SettingsError) as info:
        load_settings(path)
    message = str(info.value)
    assert str(path) in message and field in message
    assert "input_value" not in message and not found_forms(secret, message), message
    assert redact(f"echo {secret}") == "echo ***"  # refused values are registered as secrets


def test_a_key_in_the_registry_is_refused_by_load_models(tmp_path):
    key = openai_key()
    path = _write(tmp_path / "models.yaml", {"models": [
        _entry(api_key_env=key), {**_entry(token=key), "id": "other"}]})
    with pytest.raises(ModelRegistryError) as info:
        load_models(path)
    message = str(info.value)
    assert "2 problem(s)" in message and "entry 1 (served): engine_options.api_key_env" in message
    assert "entry 2 (other): engine_options.token" in message
    assert not found_forms(key, message), message


# --- the configuration models themselves (Dagster resources, code) --------------------------------


def test_the_models_refuse_without_echoing_the_input():
    """pydantic's own message (``input_value=…``) never repeats a refused secret: the records
    hide their inputs, and the Dagster resources built on them too."""
    from cultivar_assets.resources import HubPublishResource, LocalisationResource

    token, key = hf_token(), openai_key()
    attempts = [
        lambda: PublishConfig(token_env=token),
        lambda: PublishConfig(token=token),
        lambda: HubPublishResource(token_env=token),
        lambda: LocalisationConfig(engine_options={"api_key_env": key}),
        lambda: LocalisationResource(engine_options={"base_url": f"http://u:{key}@h/v1"}),
        lambda: ModelSpec(**_entry(api_key_env=key)),
        lambda: ModelSpec(**_entry(base_url=f"https://user:{key}@api.example/v1")),
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError) as info:
            attempt()
        text = str(info.value) + repr(info.value)
        assert not found_forms(token, text) and not found_forms(key, text), text


def test_openai_base_url_from_the_environment_keeps_its_credentials_in_memory(server,
                                                                              monkeypatch):
    """``$OPENAI_BASE_URL`` is never stored: a password in it is registered (redacted wherever
    it would be echoed) and not part of what the engine reports."""
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.engines.openai_engine import OpenAIEngine

    password = random_secrets.token_hex(12)
    fast_client(monkeypatch, "OPENAI_API_KEY", openai_key())
    monkeypatch.setenv("OPENAI_BASE_URL", server.url.replace("http://", f"http://u:{password}@"))
    entry = _entry()
    engine = OpenAIEngine(ModelSpec(**entry), EngineSettings())
    engine.close()
    assert password not in repr(engine.info())
    assert redact(f"proxy says {password}") == "proxy says ***"


def test_a_registered_secret_in_a_submission_manifest_is_refused_without_its_value(tmp_path):
    """A manifest's fields are stored with the run's record (``produced`` becomes its
    engine version): a registered secret under any of them is refused, named by field only."""
    from cultivar_assets.engines.submission import SubmissionError, read_submission

    key = "sk-" + "".join(random_secrets.choice(string.ascii_lowercase) for _ in range(36)) + "42"
    secrets.register(key)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "outputs.jsonl").write_text(
        '{"test_set": "flores_deu_Latn", "id": 0, "hypothesis": "x"}\n', "utf-8")
    (folder / "manifest.yaml").write_text(yaml.safe_dump({
        "id": "sub", "type": "baseline", "family": "Copy", "license": "MIT",
        "outputs": "outputs.jsonl", "produced": {"system": f"harness {key}", "version": "1"}}),
        "utf-8")
    with pytest.raises(SubmissionError) as raised:
        read_submission(folder)
    assert "produced.system" in str(raised.value) and key not in str(raised.value)
