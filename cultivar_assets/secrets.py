"""Secrets: registered once when read, redacted wherever text leaves the core.

Every secret the project reads (the Hugging Face token, OpenAI-style API keys, any configured
``*_token`` / ``*_key`` variable) is read through :func:`secret_from_env`, which registers its
value. Three mechanisms then keep registered values out of everything the project writes:

- :func:`install_log_redaction` replaces Python's log-record factory, so every log record (ours,
  Dagster's, huggingface_hub's, openai's) has the secrets replaced by ``***`` in its message and
  arguments before any handler sees it;
- :func:`secrets_redacted` (a context manager, used at the edges: the CLI, every asset, the push,
  the engines) turns an exception whose message or cause chain contains a secret into a
  :class:`RedactedError` with the redacted text, raised ``from None`` so the original chain (and
  the secret in it) is not kept by Dagster's run database or printed in a traceback;
- :func:`redact` for any other text (metadata values, messages built by hand).

A secret also hides in the forms servers echo back: its ``Bearer`` header, its percent-encoded
form and the base64 of ``user:secret`` (HTTP basic authentication); all are registered. Values
shorter than 6 characters (such as the dummy key ``EMPTY``) are not treated as secrets: redacting
them would garble ordinary text.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

MASK = "***"
MIN_LENGTH = 6
# environment variables whose names mark them as secrets (read by huggingface_hub or openai
# themselves, or configurable as token_env / api_key_env)
SECRET_NAME = re.compile(r"(^|_)(TOKEN|KEY|SECRET|PASSWORD)$", re.IGNORECASE)
NOT_SECRET_NAMES = frozenset({"HF_HUB_DISABLE_TELEMETRY"})

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_installed = False


class RedactedError(RuntimeError):
    """An error whose message contained a secret, raised again with the secret replaced."""


def _variants(value: str) -> set[str]:
    forms = {value, quote(value, safe=""), f"Bearer {value}"}
    for user in ("", "user", "api", "__token__"):  # basic-auth pairs that echo back encoded
        forms.add(base64.b64encode(f"{user}:{value}".encode()).decode())
    return {form for form in forms if len(form) >= MIN_LENGTH}


def register(value: str | None) -> str | None:
    """Treat ``value`` as a secret from now on (and return it, for chaining)."""
    global _pattern
    if value and len(value) >= MIN_LENGTH:
        with _lock:
            before = len(_secrets)
            _secrets.update(_variants(value))
            if len(_secrets) != before:
                ordered = sorted(_secrets, key=len, reverse=True)  # longest first
                _pattern = re.compile("|".join(re.escape(s) for s in ordered))
    return value


def secret_from_env(name: str) -> str | None:
    """The value of environment variable ``name`` (None when unset or empty), registered."""
    return register(os.environ.get(name) or None)


def register_environment() -> None:
    """Register every environment variable whose name marks it as a secret (``*_TOKEN``,
    ``*_KEY``, ``*_SECRET``, ``*_PASSWORD``): libraries such as huggingface_hub read some of them
    on their own."""
    for name, value in os.environ.items():
        if SECRET_NAME.search(name) and name not in NOT_SECRET_NAMES:
            register(value)


def redact(text: str) -> str:
    """``text`` with every registered secret (in every registered form) replaced by ``***``."""
    pattern = _pattern
    if pattern is None or not isinstance(text, str):
        return text
    return pattern.sub(MASK, text)


def contains_secret(text: object) -> bool:
    pattern = _pattern
    return pattern is not None and bool(pattern.search(str(text)))


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__
                                        else current.__context__)


def _describe(error: BaseException) -> str:
    parts = []
    for item in _chain(error):
        text = f"{type(item).__name__}: {item}" if str(item) else type(item).__name__
        parts.append(text)
    return " <- caused by: ".join(parts)


def safe_exception(error: BaseException) -> BaseException:
    """``error`` itself when no secret is in it or its chain, else a :class:`RedactedError`."""
    if not any(contains_secret(_describe(item)) or contains_secret(repr(item.args))
               for item in _chain(error)):
        return error
    return RedactedError(redact(_describe(error)))


@contextmanager
def secrets_redacted() -> Iterator[None]:
    """Re-raise any exception that carries a secret as a redacted :class:`RedactedError`."""
    try:
        yield
    except Exception as error:  # KeyboardInterrupt and SystemExit pass through untouched
        safe = safe_exception(error)
        if safe is error:
            raise
        raise safe from None


def install_log_redaction() -> None:
    """Make every log record redact registered secrets (idempotent; process-wide).

    When a record is created its message is formatted with its arguments and redacted, and a
    traceback it carries (``exc_info``) is formatted and redacted into ``exc_text``, which
    formatters print instead of formatting the exception again.
    """
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if _pattern is not None:
                try:
                    message = record.getMessage()
                except Exception:  # a bad format string: leave it to logging to report
                    return record
                if contains_secret(message):
                    record.msg, record.args = redact(message), ()
                if record.exc_info and record.exc_info[1] is not None:
                    text = logging.Formatter().formatException(record.exc_info)
                    if contains_secret(text):
                        record.exc_text = redact(text)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
