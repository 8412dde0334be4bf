"""OpenAI-compatible HTTP engine: a vLLM / SGLang / llama.cpp server, or the OpenAI API itself.

Chat prompts go to ``POST {base_url}/chat/completions`` (the *server* applies its chat template,
which this engine cannot see: ``EngineInfo.chat_template_hash`` is None), plain prompts to
``POST {base_url}/completions``; both with ``temperature=0``, ``max_tokens`` and the request's stop
strings (omitted when there are none), plus ``extra_body`` merged into the JSON body as it is.

Options (``engine_options`` in ``models.yaml``; every one is optional except where noted):

- ``base_url``: e.g. ``http://host:8000/v1`` for vLLM. Falls back to ``$OPENAI_BASE_URL``; with
  neither the model does not load. There is deliberately no silent default to api.openai.com (a
  benchmark run should never reach a paid API by accident): write
  ``https://api.openai.com/v1`` to use it.
- ``api_key_env`` (``OPENAI_API_KEY``): the *name* of the environment variable holding the key.
  When it is unset or empty, a local server gets the dummy key ``EMPTY`` (vLLM without
  ``--api-key`` ignores it); api.openai.com without a key is a load error. The key is never
  logged, never put into ``EngineInfo``, and redacted from every failure reason and error.
- ``model``: the served model name (vLLM ``--served-model-name``); default ``hf_id``.
- ``max_concurrency`` (8): requests of one chunk in flight at once (a thread pool over one
  thread-safe client); results keep request order.
- ``max_retries`` (5), ``timeout`` (120 s per attempt), ``extra_body`` ({}), e.g.
  ``{"chat_template_kwargs": {"enable_thinking": false}}`` to turn thinking off on vLLM.
- Sampling: ``temperature`` (0, greedy; ``server-default`` sends none, for models that accept
  only their default, such as OpenAI's reasoning models), ``top_p`` and ``seed`` (sent only when
  set);
  ``max_tokens_param`` (``max_tokens``; ``max_completion_tokens`` for OpenAI models that refuse
  the older name) names the field that carries the request's ``max_new_tokens``.
- ``batch_size`` (64): the chunk size of the translation loop (a chunk is cached as a whole). The
  run-wide ``EngineSettings.batch_size`` is for local GPUs and is not used here.

Retries are the openai client's own (``OpenAI(max_retries=..., timeout=...)``; openai-python
``_base_client.py``, ``_should_retry`` / ``_calculate_retry_timeout``): it retries connection
errors, timeouts and the statuses 408, 409, 429 and >= 500 (a server's ``x-should-retry`` header
overrides that). The delay is the server's ``Retry-After`` / ``retry-after-ms`` when that is
between 0 and 120 s exclusive (a longer one means no retry), otherwise exponential backoff
``min(0.5 * 2**n, 8)`` seconds less a random 0-25% jitter.

Token usage: ``generate_detailed`` returns the response's ``usage`` (``prompt_tokens``,
``completion_tokens``) with each text; None when the server sends none.

Errors: a request that fails for good (retries exhausted, or a non-retryable status such as 400
or 404) becomes a ``GenerationFailure`` with the status and the server's short message, never an
empty text; the translation loop reports it and a re-run retries it. An empty string is returned
only when the server returned empty text; missing content (``null``, e.g. a reasoning model that
spent every token thinking) is ``GenerationFailure("no content ...")``. Configuration errors
raise ``EngineLoadError`` and end the run instead: 401/403 on any request (wrong or missing key),
404 or a connection failure on the engine's first request (wrong URL or model name, server down;
that request is sent alone before the others), and a chunk whose every request could not connect
(the server went away mid-run; whatever was cached stays cached).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cultivar_assets.engines.base import (
    Engine,
    EngineInfo,
    EngineLoadError,
    EngineSettings,
    Generation,
    GenerationFailure,
)
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.secrets import redact, redact_cut, register, secret_from_env

if TYPE_CHECKING:
    from cultivar_assets.specs import ModelSpec

OPENAI_HOST = "api.openai.com"
DUMMY_KEY = "EMPTY"
_UNREACHABLE = "connection error"
_RETRIED_STATUSES = (408, 409, 429)  # and >= 500: what the openai client retries
# engine_options read elsewhere (the translation loop) or meant for local engines: ignored here
_NOT_OURS = ("max_new_tokens", "device", "dtype", "cache_dir")


class OpenAIOptions(BaseModel):
    """``engine_options`` of an ``openai`` model (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    model: str | None = None
    max_concurrency: int = Field(default=8, ge=1)
    max_retries: int = Field(default=5, ge=0)
    timeout: float = Field(default=120.0, gt=0)
    extra_body: dict[str, Any] = {}
    batch_size: int = Field(default=64, ge=1)
    temperature: float | Literal["server-default"] = 0.0
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"


def _host(url: str) -> str:
    """``host[:port]`` of a URL, without any user info."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


class OpenAIEngine(Engine):
    name = "openai"
    prompt_kinds = ("chat", "plain")
    output_settings = ()
    transport_options = ("batch_size", "base_url", "api_key_env", "max_concurrency",
                         "max_retries", "timeout")

    def __init__(self, spec: ModelSpec, settings: EngineSettings) -> None:
        super().__init__(spec, settings)
        raw = {k: v for k, v in spec.engine_options.items() if k not in _NOT_OURS}
        try:
            options = OpenAIOptions.model_validate(raw)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()
            )
            raise EngineLoadError(f"{spec.id}: bad engine_options: {problems}") from None
        base_url = options.base_url or os.environ.get("OPENAI_BASE_URL")
        if base_url and urlsplit(base_url).password:  # only from the environment: used in memory
            register(urlsplit(base_url).password)
        if not base_url:
            raise EngineLoadError(
                f"{spec.id}: the openai engine needs engine_options.base_url or $OPENAI_BASE_URL "
                f"(e.g. http://host:8000/v1 for vLLM, https://{OPENAI_HOST}/v1 for OpenAI)"
            )
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise EngineLoadError(f"{spec.id}: base_url must be an http(s) URL")
        self.host = _host(base_url)
        self.model = options.model or spec.hf_id
        if not self.model:
            raise EngineLoadError(f"{spec.id}: set engine_options.model (the served model name)")
        self._key = secret_from_env(options.api_key_env)
        if self._key is None:
            if urlsplit(base_url).hostname == OPENAI_HOST:
                raise EngineLoadError(f"{spec.id}: set ${options.api_key_env} to the API key")
            self._key = DUMMY_KEY
        try:
            import openai
        except ImportError as error:
            raise EngineLoadError("the openai engine needs the openai package") from error
        self._version = openai.__version__
        self.client = openai.OpenAI(
            api_key=self._key,
            base_url=base_url,
            max_retries=options.max_retries,
            timeout=options.timeout,
        )
        self.batch_size = options.batch_size
        self.max_concurrency = options.max_concurrency
        self.max_retries = options.max_retries
        self.timeout = options.timeout
        self.extra_body = options.extra_body
        if isinstance(options.temperature, float) and options.temperature < 0:
            raise EngineLoadError(f"{spec.id}: temperature must be 0 or more")
        temperature = None if options.temperature == "server-default" else options.temperature
        self.sampling = {key: value for key, value in (
            ("temperature", temperature), ("top_p", options.top_p),
            ("seed", options.seed)) if value is not None}
        self.max_tokens_param = options.max_tokens_param
        self._checked = False  # has a first request reached the server?

    def info(self) -> EngineInfo:
        claimed = (f"; registry revision {self.spec.revision} (not reported by the server)"
                   if self.spec.revision else "")
        return EngineInfo(
            engine=self.name,
            engine_version=(f"openai-python {self._version}; server model {self.model}@"
                            f"{self.host}{claimed}"),
            model_revision=None,  # the server does not say which weights it serves
            chat_template_hash=None,  # the server applies a template we cannot see
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str | GenerationFailure]:
        results = self.generate_detailed(requests)
        return [r.text if isinstance(r, Generation) else r for r in results]

    def generate_detailed(
        self, requests: Sequence[GenerationRequest]
    ) -> list[Generation | GenerationFailure]:
        pending = list(requests)
        results: list[Generation | GenerationFailure] = []
        if pending and not self._checked:  # alone, so a bad URL or key fails once, quickly
            results.append(self._complete(pending.pop(0), first=True))
            self._raise_if_unreachable(results)
            self._checked = True
        if pending:
            pool = ThreadPoolExecutor(min(self.max_concurrency, len(pending)), "openai-engine")
            try:
                chunk = list(pool.map(self._complete, pending))
            finally:
                pool.shutdown(cancel_futures=True)
            self._raise_if_unreachable(chunk)
            results += chunk
        return results

    def close(self) -> None:
        self.client.close()

    def _raise_if_unreachable(self, results: list[Generation | GenerationFailure]) -> None:
        if results and all(
            isinstance(r, GenerationFailure) and r.reason.startswith(_UNREACHABLE) for r in results
        ):
            raise EngineLoadError(f"{self.spec.id}: cannot reach {self.host}: {results[0]}")

    def _complete(self, request: GenerationRequest,
                  first: bool = False) -> Generation | GenerationFailure:
        """One request, with the client's retries; a failure becomes a GenerationFailure."""
        import openai

        try:
            return self._call(request)
        except openai.APIStatusError as error:
            reason = self._redact(self._status_reason(error))
            if error.status_code in (401, 403) or (first and error.status_code == 404):
                raise EngineLoadError(f"{self.spec.id} at {self.host}: {reason}") from None
            return GenerationFailure(reason)
        except openai.APITimeoutError:
            return GenerationFailure(
                f"timed out after {self.timeout:g} s ({self.max_retries} retries)"
            )
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            return GenerationFailure(self._redact(
                f"{_UNREACHABLE} ({self.max_retries} retries): {type(cause).__name__}: {cause}"
            )[:300])
        except openai.OpenAIError as error:  # e.g. a response that is not OpenAI-shaped
            return GenerationFailure(self._redact(f"{type(error).__name__}: {error}")[:300])

    def _call(self, request: GenerationRequest) -> Generation | GenerationFailure:
        options: dict[str, Any] = {
            "model": self.model, **self.sampling, self.max_tokens_param: request.max_new_tokens,
        }
        if request.stop:
            options["stop"] = list(request.stop)
        if self.extra_body:
            options["extra_body"] = self.extra_body
        if request.kind == "chat":
            messages = [{"role": role, "content": text} for role, text in request.messages or ()]
            response = self.client.chat.completions.create(messages=messages, **options)
        elif request.kind == "plain":
            response = self.client.completions.create(prompt=request.prompt or "", **options)
        else:
            raise EngineLoadError(f"the openai engine takes chat or plain prompts: {request.kind}")
        # the client does not validate responses: a proxy's HTML page arrives as a str
        choices = getattr(response, "choices", None)
        if not choices:
            return GenerationFailure("no choices in the response")
        choice = choices[0]
        part = getattr(choice, "message", None) if request.kind == "chat" else choice
        text = getattr(part, "content" if request.kind == "chat" else "text", None)
        if not isinstance(text, str):
            return GenerationFailure(
                f"no content (finish_reason={getattr(choice, 'finish_reason', None)})"
            )
        usage = getattr(response, "usage", None)
        return Generation(text, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))

    def _status_reason(self, error: Any) -> str:
        body = error.body
        message = body.get("message") if isinstance(body, dict) else body
        status = error.status_code
        retried = status in _RETRIED_STATUSES or status >= 500
        after = f" after {self.max_retries} retries" if retried and self.max_retries else ""
        # redacted before it is cut: a key that straddles the cut would leak its first part
        return f"HTTP {status}{after}: {redact_cut(str(message or error.message), 200)}"

    def _redact(self, text: str) -> str:
        return redact(text)


def _count(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
