"""OpenAI-compatible HTTP engine: a vLLM / SGLang / llama.cpp server, or the OpenAI API itself.

Chat prompts go to ``POST {base_url}/chat/completions`` (the server applies its chat template:
``EngineInfo.chat_template_hash`` is None), plain prompts to ``POST {base_url}/completions``; both
with ``temperature=0``, ``max_tokens``, the request's stop strings and ``extra_body`` merged in.
Options (``engine_options``): ``base_url`` (else ``$OPENAI_BASE_URL``; no default), ``api_key_env``
(``OPENAI_API_KEY``; unset: the dummy key ``EMPTY``, an error for api.openai.com), ``model``
(``hf_id``), ``max_concurrency`` (8), ``max_retries`` (5), ``timeout`` (120 s), ``extra_body``,
``temperature`` (0; ``server-default`` sends none), ``top_p``, ``seed``, ``max_tokens_param``
(``max_tokens``), ``batch_size`` (64, the translation loop's cached chunk). Each request is
answered alone (``answers_alone``); retries and backoff are the openai client's own.

A request that fails for good, a 200 without content or whose body is not JSON is a
``GenerationFailure`` (status, the server's short message, the usage it reported), never an empty
text. A configuration error raises ``EngineLoadError`` naming the setting: 401/403; 404 or no
connection on the first request; three results in a row that could not connect; and **the
probe** (ours): until the server has answered once, requests go one at a time, and when three are
refused the same way (the same 4xx and message but for numbers, or a 200 that is not JSON),
nothing more is sent (:func:`_setting_hint`: the setting). See ``docs/evaluating-models.md``.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
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
# ours: until the server has answered once, requests go one at a time, at most this many; this
# many refused the same way (the same 4xx and message but for numbers, or 200s that are not
# JSON) is a configuration error, and the run stops instead of sending every request
_PROBE = 3


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
    answers_alone = True
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
        parts = urlsplit(base_url)
        self.address = f"{parts.scheme}://{self.host}{parts.path}"  # no user info
        self.key_env = options.api_key_env
        self._checked = False  # has the server answered a request?
        self._sent = False  # has a first request been sent?
        self._probed = 0  # requests sent one at a time so far (the probe)
        self._refusals: list[str | None] = []  # what the probe's failed requests say

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

    def generate_reporting(
        self, requests: Sequence[GenerationRequest], finished: Callable[[int], None]
    ) -> list[str | GenerationFailure]:
        """:meth:`generate`, reporting each request as its answer arrives."""
        results = self._detailed(requests, finished)
        return [r.text if isinstance(r, Generation) else r for r in results]

    def generate_detailed(
        self, requests: Sequence[GenerationRequest]
    ) -> list[Generation | GenerationFailure]:
        return self._detailed(requests, lambda _count: None)

    def _detailed(self, requests: Sequence[GenerationRequest], finished: Callable[[int], None]
                  ) -> list[Generation | GenerationFailure]:
        results: list[Generation | GenerationFailure | None] = [None] * len(requests)
        for index, result in self.generate_as_completed(requests):
            results[index] = result
            finished(1)
        return [r for r in results if r is not None]

    def generate_as_completed(
        self, requests: Sequence[GenerationRequest]
    ) -> Iterator[tuple[int, Generation | GenerationFailure]]:
        """Each request's result as it finishes: up to ``max_concurrency`` in flight, the next
        request sent as soon as the caller has taken a result (so requests sent and not yet
        taken are never more than ``max_concurrency``: a caller that stores each result before
        taking the next loses at most those to a kill). Until the server has answered once,
        requests go one at a time (the probe, see the module docstring)."""
        queue = list(range(len(requests)))
        while queue and self._probing():
            index = queue.pop(0)
            result, refusal = self._attempt(requests[index], first=not self._sent)
            self._sent = True
            yield index, result  # the caller records it before a configuration error is raised
            self._probe(requests[index], result, refusal)
        if not queue:
            return
        workers = min(self.max_concurrency, len(queue))
        waiting = deque(queue)
        running: dict[Future, int] = {}
        error: EngineLoadError | None = None
        unreachable = 0
        pool = ThreadPoolExecutor(workers, "openai-engine")
        try:
            while True:
                # the next request goes out once the caller has taken the last result (and
                # stored it): requests sent but not yet taken are at most max_concurrency
                while waiting and error is None and len(running) < workers:
                    index = waiting.popleft()
                    running[pool.submit(self._attempt, requests[index])] = index
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    index = running.pop(future)
                    try:
                        result, _ = future.result()
                    except EngineLoadError as stop:  # 401/403: the others in flight still end
                        error = error or stop
                        continue
                    yield index, result
                    unreachable = unreachable + 1 if _is_unreachable(result) else 0
                    if error is None and unreachable >= min(_PROBE, len(queue)):
                        error = EngineLoadError(  # the server went away mid-run
                            f"{self.spec.id}: cannot reach {self.host}: {result}")
        finally:
            pool.shutdown(cancel_futures=True)
        if error is not None:
            raise error

    def close(self) -> None:
        self.client.close()

    def _probing(self) -> bool:
        return not self._checked and self._probed < _PROBE

    def _probe(self, request: GenerationRequest, result: Generation | GenerationFailure,
               refusal: _Refusal | None) -> None:
        """After a request of the probe: raise when the server refuses the settings."""
        self._probed += 1
        if isinstance(result, Generation):
            self._checked = True
            return
        if self._probed == 1 and _is_unreachable(result):
            raise EngineLoadError(f"{self.spec.id}: cannot reach {self.host}: {result}")
        self._refusals.append(refusal.signature if refusal else None)
        same = len(set(self._refusals)) == 1 and self._refusals[0] is not None
        if refusal and same and len(self._refusals) == _PROBE:
            raise EngineLoadError(
                f"{self.spec.id} at {self.host}: the first {len(self._refusals)} request(s) were "
                f"all refused the same way ({result.reason}): the server refuses a setting, not "
                f"single requests, so no other request was sent. "
                f"{_setting_hint(refusal, request, self)}")

    def _attempt(self, request: GenerationRequest, first: bool = False
                 ) -> tuple[Generation | GenerationFailure, _Refusal | None]:
        """One request, with the client's retries; a failure becomes a GenerationFailure, and
        when the server refused the request outright (a 4xx that is not retried, a 200 that is
        not JSON) the refusal comes with it."""
        import openai

        try:
            return self._call(request), None
        except openai.APIStatusError as error:
            reason = self._redact(self._status_reason(error))
            status = error.status_code
            refusal = _Refusal(status, self._redact(str(self._message(error))))
            if status in (401, 403) or (first and status == 404):
                raise EngineLoadError(f"{self.spec.id} at {self.host}: {reason}. "
                                      f"{_setting_hint(refusal, request, self)}") from None
            refused = 400 <= status < 500 and status not in _RETRIED_STATUSES
            return GenerationFailure(reason), refusal if refused else None
        except openai.APITimeoutError:
            return GenerationFailure(
                f"timed out after {self.timeout:g} s ({self.max_retries} retries)"
            ), None
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            return GenerationFailure(self._redact(
                f"{_UNREACHABLE} ({self.max_retries} retries): {type(cause).__name__}: {cause}"
            )[:300]), None
        except json.JSONDecodeError as error:  # sent as JSON, but it is not
            return self._not_json(error.doc)
        except _NotJSON as error:
            return self._not_json(error.body)
        except openai.OpenAIError as error:  # e.g. a response that is not OpenAI-shaped
            return GenerationFailure(self._redact(f"{type(error).__name__}: {error}")[:300]), None

    def _not_json(self, body: object) -> tuple[GenerationFailure, _Refusal]:
        snippet = self._redact(" ".join(str(body).split()))[:200]
        return (GenerationFailure(f"the server answered 200 with a body that is not JSON: "
                                  f"{snippet!r}"), _Refusal(200, "not JSON"))

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
        if isinstance(response, str | bytes) and not _is_json(response):
            raise _NotJSON(response)
        usage = getattr(response, "usage", None)
        spent = {"prompt_tokens": _count(usage, "prompt_tokens"),
                 "completion_tokens": _count(usage, "completion_tokens")}
        choices = getattr(response, "choices", None)
        if not choices:
            return GenerationFailure("no choices in the response", **spent)
        choice = choices[0]
        part = getattr(choice, "message", None) if request.kind == "chat" else choice
        text = getattr(part, "content" if request.kind == "chat" else "text", None)
        if not isinstance(text, str):
            return GenerationFailure(
                f"no content (finish_reason={getattr(choice, 'finish_reason', None)})", **spent
            )
        return Generation(text, **spent)

    @staticmethod
    def _message(error: Any) -> str:
        body = error.body
        message = body.get("message") if isinstance(body, dict) else body
        return str(message or error.message)

    def _status_reason(self, error: Any) -> str:
        status = error.status_code
        retried = status in _RETRIED_STATUSES or status >= 500
        after = f" after {self.max_retries} retries" if retried and self.max_retries else ""
        # redacted before it is cut: a key that straddles the cut would leak its first part
        return f"HTTP {status}{after}: {redact_cut(self._message(error), 200)}"

    def _redact(self, text: str) -> str:
        return redact(text)


class _NotJSON(Exception):
    def __init__(self, body: str | bytes) -> None:
        super().__init__("not JSON")
        self.body = body.decode("utf-8", "replace") if isinstance(body, bytes) else body


def _is_json(text: str | bytes) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _is_unreachable(result: Generation | GenerationFailure) -> bool:
    return isinstance(result, GenerationFailure) and result.reason.startswith(_UNREACHABLE)


@dataclass(frozen=True)
class _Refusal:
    """The server refused a request outright: its status and its message (redacted)."""

    status: int
    message: str

    @property
    def signature(self) -> str:
        """What two refusals for the same setting share: the numbers blanked (a context-length
        refusal states each request's own token count)."""
        return f"{self.status}: {re.sub(r'[0-9]+', 'N', self.message)}"


# (words in the refusal, the setting to change): the first that matches; ours
_CONTEXT_WORDS = ("context length", "context window", "maximum context", "max_tokens",
                  "max_completion_tokens", "too many tokens", "too large", "reduce the length")


def _setting_hint(refusal: _Refusal, request: GenerationRequest, engine: OpenAIEngine) -> str:
    """Which setting a refusal points at (the status and the message; our reading)."""
    status, text = refusal.status, refusal.message.lower()
    if status in (401, 403):
        return (f"Check the API key: the variable engine_options.api_key_env names "
                f"(${engine.key_env}), and that it may use model {engine.model!r}.")
    if status == 200:
        return (f"Check engine_options.base_url ({engine.address}): it should be the API's "
                "address (for vLLM http://host:port/v1), not a web page or a proxy's.")
    if any(word in text for word in _CONTEXT_WORDS):
        return (f"Lower max_new_tokens (each request asks for {request.max_new_tokens} new "
                "tokens) so that the prompt and the answer fit the model's context, or serve "
                "the model with a longer context (vLLM: --max-model-len).")
    if "model" in text or status == 404:
        return (f"Check the model name: engine_options.model, or model when that is not set "
                f"(now {engine.model!r}; the server's served name, e.g. vLLM "
                f"--served-model-name), and engine_options.base_url ({engine.address}).")
    sent = [name for name in ("temperature", "top_p", "seed", "stop", engine.max_tokens_param,
                              *engine.extra_body) if name in text]
    if sent:
        return (f"Check engine_options ({', '.join(sent)}): the server refuses "
                f"{'it' if len(sent) == 1 else 'them'}.")
    return ("Check the settings sent with every request: max_new_tokens and engine_options "
            "(model, temperature, top_p, seed, max_tokens_param, extra_body).")


def _count(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
