"""What leaves an asset carries no secret: errors and metadata are redacted at the edge.

:func:`redacting` wraps an asset (or check) function: an exception that carries a registered
secret is raised again redacted, without its original chain
(:func:`cultivar_assets.secrets.secrets_redacted`), and every text in the metadata of the
results it returns or yields is redacted (:func:`cultivar_assets.secrets.redact`). Log records are
redacted process-wide by :func:`cultivar_assets.secrets.install_log_redaction`, which the
definitions install.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg

from cultivar_assets.secrets import contains_secret, redact, secrets_redacted

F = TypeVar("F", bound=Callable[..., Any])


def _safe_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dg.MetadataValue) and contains_secret(repr(value)):
        raw = getattr(value, "value", None)
        if isinstance(raw, str):
            if isinstance(value, dg.MarkdownMetadataValue):
                return dg.MetadataValue.md(redact(raw))
            if isinstance(value, dg.UrlMetadataValue):
                return dg.MetadataValue.url(redact(raw))
            if isinstance(value, dg.PathMetadataValue):
                return dg.MetadataValue.path(redact(raw))
            return dg.MetadataValue.text(redact(raw))
        return dg.MetadataValue.json(json.loads(redact(json.dumps(raw, default=str))))
    if isinstance(value, list | dict) and contains_secret(json.dumps(value, default=str)):
        return json.loads(redact(json.dumps(value, default=str)))
    return value


def _safe_result(result: Any) -> Any:
    metadata = getattr(result, "metadata", None)
    if isinstance(result, dg.MaterializeResult | dg.AssetCheckResult) and metadata:
        return result._replace(metadata={k: _safe_value(v) for k, v in metadata.items()})
    return result


def redacting(fn: F) -> F:
    """Wrap an asset function (plain or generator) as the module docstring says."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any):
            with secrets_redacted():
                for item in fn(*args, **kwargs):
                    yield _safe_result(item)

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def function(*args: Any, **kwargs: Any):
        with secrets_redacted():
            return _safe_result(fn(*args, **kwargs))

    return function  # type: ignore[return-value]
