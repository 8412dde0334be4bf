"""Secrets: registered once when read, redacted wherever text leaves the core.

Every secret the project reads (the Hugging Face token, API keys, any configured ``*_token`` /
``*_key`` variable) is read through :func:`secret_from_env`, which registers it; :func:`redact`
replaces every registered value with ``***``: in every log record (:func:`install_log_redaction`,
a log-record factory), in exceptions at the edges (:func:`secrets_redacted` raises a
:class:`RedactedError` ``from None``, dropping the chain), and in any other text it is called on
(metadata, hand-built messages, model outputs before they are cached); a text cut to a length is
redacted first. Recognised (ours): the value, its ``Bearer`` header, percent-encodings and JSON
escape; the base64 of ``user:value`` and of the value (both alphabets, padded or not, embedded at
any byte alignment); and any run of :data:`WINDOW` (12) characters of the value or of its bare
base64. Values under 6 characters are not secrets; fragments count only for values of at least
12 characters and, for values found by :func:`register_environment`, only when they
:func:`looks_like_secret`. :func:`misplaced_secrets` refuses, naming the field and never the value,
a secret where a name belongs (``*_env`` fields), a key that names a secret with a value, any
value holding a registered secret, and a URL with credentials (refused, not stripped: ours).
The limits, and each form with its example: ``docs/secrets.md``.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, quote_plus, unquote

MASK = "***"
MIN_LENGTH = 6
WINDOW = 12  # fragments of at least this many characters are redacted
_PROBE = WINDOW // 2  # fragments are found from the PROBE-grams at multiples of PROBE
# environment variables whose names mark them as secrets (read by huggingface_hub or openai
# themselves, or configurable as token_env / api_key_env)
SECRET_NAME = re.compile(r"(^|_)(TOKEN|KEY|SECRET|PASSWORD)$", re.IGNORECASE)
NOT_SECRET_NAMES = frozenset({"HF_HUB_DISABLE_TELEMETRY"})

# --- what "looks like a key or token" means (ours) ----------------------------------------------
# Prefixes of the credentials of common services (OpenAI, Hugging Face, GitHub, GitLab, Slack,
# AWS, Google, JWTs), each followed by at least 16 more token characters.
CREDENTIAL_PREFIXES = ("sk-", "sk_", "pk_", "rk_", "hf_", "api_", "ghp_", "gho_", "ghu_", "ghs_",
                       "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "AKIA", "ASIA",
                       "AIza", "eyJ")
LONG_KEY = 32  # letters and digits alone, this many or more, with high entropy: a key
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+/=_.~-]+$")
_AUTH_SCHEME = re.compile(r"^(Bearer|Basic|Token)\s+\S{16,}$", re.IGNORECASE)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# keys of a settings or models file whose value would be a secret itself
# (``_`` and ``-`` both separate words: ``api-key``, ``x-api-key`` and ``key`` itself count)
SECRET_KEY_NAME = re.compile(
    r"^(token|key|api[_-]?key|secret|password|passwd|credentials?|authorization)$"
    r"|[_-](token|key|secret|password|passwd)$", re.IGNORECASE)
_URL_WITH_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#\s]*)@", re.ASCII)

_lock = threading.Lock()
_secrets: set[str] = set()
_fragments: set[str] = set()  # every WINDOW-character substring of the fragment sources
_probes: set[str] = set()  # every PROBE-character substring of the fragment sources
_pattern: re.Pattern[str] | None = None
_installed = False


class RedactedError(RuntimeError):
    """An error whose message contained a secret, raised again with the secret replaced."""


def looks_like_secret(value: object) -> bool:
    """Whether ``value`` looks like a key or token (ours): a known credential prefix
    (:data:`CREDENTIAL_PREFIXES`) followed by at least 16 token characters; an authorisation
    header value (``Bearer …``, ``Basic …``); a long random-looking string: at least 20 token
    characters (letters, digits, ``+/=_.~-``) with letters and digits, either both letter cases
    or at least a quarter digits (hex), and at least 3 bits of entropy per character; or at
    least :data:`LONG_KEY` (32) letters and digits alone, at least one a digit, in any case mix,
    with at least 3 bits of entropy per character (a key of one letter case and few digits: a
    random one of 38 characters has 3.5 or more; names are not written as such runs).
    Environment variable names (``OPENAI_API_KEY``, ``MY_TOKEN_2``) do not look like secrets."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if _AUTH_SCHEME.match(text):
        return True
    if not _TOKEN_CHARS.match(text):
        return False
    for prefix in CREDENTIAL_PREFIXES:
        if text.startswith(prefix) and len(text) >= len(prefix) + 16:
            return True
    if len(text) < 20:
        return False
    digits = sum(c.isdigit() for c in text)
    has_lower = any(c.islower() for c in text)
    has_upper = any(c.isupper() for c in text)
    if not digits or not (has_lower or has_upper):
        return False
    counts = Counter(text)
    entropy = -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
    if len(text) >= LONG_KEY and text.isalnum() and entropy >= 3.0:
        return True  # a long run of letters and digits of one case: no name is written so
    if not ((has_lower and has_upper) or digits >= len(text) / 4):
        return False
    return entropy >= 3.0


def _base64_forms(value: str) -> tuple[set[str], set[str]]:
    """(every registered base64 form, the bare encodings fragments are taken from)."""
    data = value.encode("utf-8")
    forms: set[str] = set()
    cores: set[str] = set()
    for shift in range(3):  # the value after 0, 1 or 2 other bytes of a longer base64 text
        encoded = base64.b64encode(b"\0" * shift + data).decode("ascii")
        if shift == 0:
            forms |= {encoded, encoded.rstrip("=")}
        # each group of 4 characters encodes 3 bytes: keep the groups of the value's bytes alone
        core = encoded[4 if shift else 0:4 * ((shift + len(data)) // 3)]
        cores.add(core)
    urlsafe = {form.replace("+", "-").replace("/", "_") for form in forms | cores}
    cores |= {core.replace("+", "-").replace("/", "_") for core in cores}
    return forms | cores | urlsafe, cores


def _variants(value: str) -> set[str]:
    percent = quote(value, safe="")
    forms = {value, percent, quote(value), quote_plus(value), f"Bearer {value}",
             re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), percent),
             json.dumps(value)[1:-1]}
    for user in ("", "user", "api", "__token__"):  # basic-auth pairs that echo back encoded
        forms.add(base64.b64encode(f"{user}:{value}".encode()).decode())
    forms |= _base64_forms(value)[0]
    return {form for form in forms if len(form) >= MIN_LENGTH}


def _windows(text: str, size: int) -> set[str]:
    return {text[i:i + size] for i in range(len(text) - size + 1)}


def register(value: str | None, fragments: bool = True) -> str | None:
    """Treat ``value`` as a secret from now on (and return it, for chaining). ``fragments``:
    also redact every run of :data:`WINDOW` of its characters (see the module docstring)."""
    global _pattern
    if value and isinstance(value, str) and len(value) >= MIN_LENGTH:
        with _lock:
            before = len(_secrets)
            _secrets.update(_variants(value))
            if fragments and len(value) >= WINDOW:
                for source in {value, *_base64_forms(value)[1]}:
                    _fragments.update(_windows(source, WINDOW))
                    _probes.update(_windows(source, _PROBE))
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
    on their own. Their fragments count only when the value looks like a credential."""
    for name, value in os.environ.items():
        if SECRET_NAME.search(name) and name not in NOT_SECRET_NAMES:
            register(value, fragments=looks_like_secret(value))


def _fragment_spans(text: str) -> list[tuple[int, int]]:
    """Merged spans of ``text`` covered by WINDOW-character fragments of registered secrets.

    A fragment of WINDOW or more characters holds a PROBE-gram at a multiple of PROBE, so only
    those positions are probed; around a hit every WINDOW-window is checked."""
    if not _fragments:
        return []
    covered: list[tuple[int, int]] = []
    for probe in range(0, len(text) - _PROBE + 1, _PROBE):
        if text[probe:probe + _PROBE] not in _probes:
            continue
        for start in range(max(0, probe - (WINDOW - _PROBE)), probe + 1):
            if text[start:start + WINDOW] in _fragments:
                covered.append((start, start + WINDOW))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(covered):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def redact(text: str) -> str:
    """``text`` with every registered secret (in every registered form, and every fragment of
    :data:`WINDOW` characters or more) replaced by ``***``: the one redaction function."""
    pattern = _pattern
    if pattern is None or not isinstance(text, str):
        return text
    text = pattern.sub(MASK, text)
    spans = _fragment_spans(text)
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], MASK]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def contains_secret(text: object) -> bool:
    pattern = _pattern
    if pattern is None:
        return False
    text = str(text)
    return bool(pattern.search(text)) or bool(_fragment_spans(text))


def redact_cut(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters (never the other way round)."""
    return redact(text)[:limit]


# --- secrets in the wrong place -------------------------------------------------------------------


_REGISTERED_PROBLEM = (
    "holds a value registered as a secret (the value of a *_TOKEN / *_KEY / *_SECRET / "
    "*_PASSWORD environment variable or of a key refused before; not repeated here): a secret is "
    "never written in a settings or models file; name the environment variable that holds it in "
    "token_env (the Hub) or api_key_env (an API)")


def _name_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return "must be the name of an environment variable (a string)"
    if contains_secret(value):
        return _REGISTERED_PROBLEM
    if looks_like_secret(value):
        register(value)
        register(value.strip())
        return ("holds what looks like a key or token itself, not the name of the environment "
                "variable that holds it (the value is not repeated here): put the value in an "
                "environment variable and write that variable's name here")
    if not ENV_NAME.match(value):
        register(value)
        return ("is not the name of an environment variable (letters, digits and _, not "
                "starting with a digit; the value is not repeated here)")
    return None


def _url_problem(value: str) -> str | None:
    match = _URL_WITH_USERINFO.match(value.strip())
    if not match:
        return None
    userinfo = match.group(1)
    register(userinfo)
    register(unquote(userinfo))
    for part in unquote(userinfo).split(":"):
        register(part)
    return ("is a URL with credentials (user:password@host; not repeated here): write the URL "
            "without them and put the key in the environment variable named by api_key_env "
            "(token_env for the Hub)")


def misplaced_secrets(tree: object, where: str = "") -> list[str]:
    """Problems of secrets written where they do not belong in a settings or registry tree
    (see the module docstring); each names the field (``where`` + the key path) and never the
    value, and every value refused is registered as a secret."""
    problems: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                name = str(key)
                if contains_secret(name):
                    problems.append(f"{path or '(top level)'}: a key {_REGISTERED_PROBLEM}")
                    continue
                here = f"{path}.{name}" if path else name
                if name.lower().endswith("_env"):
                    problem = _name_problem(value) if value is not None else None
                    if problem:
                        problems.append(f"{here} {problem}")
                    continue
                if SECRET_KEY_NAME.search(name) and value not in (None, "", {}, []):
                    for item in _strings(value):  # "Bearer <key>": the key is the secret
                        parts = [part for part in item.split() if looks_like_secret(part)]
                        for part in parts or [item]:
                            register(part)
                    problems.append(
                        f"{here}: a key or token is never written in a settings or models file "
                        "(it would be stored and published with it; the value is not repeated "
                        "here): put it in an environment variable and name that variable in "
                        "token_env (the Hub) or api_key_env (an API)")
                    continue
                walk(value, here)
        elif isinstance(node, list | tuple):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")
        elif isinstance(node, str):
            problem = _REGISTERED_PROBLEM if contains_secret(node) else _url_problem(node)
            if problem:
                problems.append(f"{path} {problem}")

    walk(tree, "")
    prefix = f"{where}: " if where else ""
    return [prefix + problem for problem in problems]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


def refuse_misplaced_secrets(tree: Any, where: str = "") -> Any:
    """``tree`` unchanged, or ValueError listing :func:`misplaced_secrets` (for validators)."""
    problems = misplaced_secrets(tree, where)
    if problems:
        raise ValueError("; ".join(problems))
    return tree


def env_name(value: str, field: str) -> str:
    """``value`` when it is an environment variable's name that does not look like a secret,
    else ValueError naming ``field`` and not the value (a validator of ``*_env`` fields)."""
    problem = _name_problem(value)
    if problem:
        raise ValueError(f"{field} {problem}")
    return value


def url_without_credentials(value: str | None, field: str) -> str | None:
    """``value`` when it is no URL with credentials, else ValueError naming ``field`` only."""
    problem = _url_problem(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(f"{field} {problem}")
    return value


# --- exceptions and logs ------------------------------------------------------------------------


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
