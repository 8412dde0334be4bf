"""What a model's outputs depend on, as one hash: the translation cache, the stored run record,
the registry sensor and the nightly schedule all use :func:`run_fingerprint`.

``run_fingerprint(spec, settings)`` is the sha256 of

- the model's weights (``weights``, ``hf_id``, ``revision``), its ``engine`` and its
  ``engine_options`` except the engine's *transport options* (how requests travel: batch size,
  server address, concurrency, retries), which do not change outputs;
- the prompt style's template hash (its wording, examples and stop strings);
- the run-wide settings that the engine declares as output settings (``Engine.output_settings``,
  e.g. ``dtype`` and ``device`` for local engines), a model's own option overriding the run-wide
  value; ``auto`` is hashed as ``auto``;
- for an engine whose outputs are files (``content_fingerprint``: the ``outputs`` engine, a
  submission's content hash), that hash, in place of the file's path.

``engine_fingerprint(spec, settings)`` is the same hash without the prompt style: what an engine's
answer to a given request depends on, for callers that build their own requests (the localisation
step of building Cultivar keys its cache by it, its prompt's hash and the request).
"""

from __future__ import annotations

import hashlib
import json

from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.engines.prompts import get_prompt_style
from cultivar_assets.specs import ModelSpec


def _engine_payload(spec: ModelSpec, settings: EngineSettings) -> dict:
    engine = engine_registry().get(spec.engine)
    payload = {
        "hf_id": spec.hf_id,
        "revision": spec.revision,
        "weights": spec.weights,
        "engine": spec.engine,
        "engine_options": {k: v for k, v in spec.engine_options.items()
                           if k not in engine.transport_options},
        "output_settings": {name: spec.engine_options.get(name, getattr(settings, name))
                            for name in engine.output_settings},
    }
    content = engine.content_fingerprint(spec)
    if content is not None:  # the files' bytes, not where they are
        payload["content_sha256"] = content
    return payload


def _sha256(payload: dict) -> str:
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def run_fingerprint(spec: ModelSpec, settings: EngineSettings | None = None) -> str:
    """The hash of everything a run's outputs depend on (see the module docstring)."""
    payload = _engine_payload(spec, settings or EngineSettings())
    payload["prompt_template_hash"] = get_prompt_style(spec.prompt_style).template_hash
    return _sha256(payload)


def engine_fingerprint(spec: ModelSpec, settings: EngineSettings | None = None) -> str:
    """The hash of what an engine's answers depend on, without a prompt style (docstring)."""
    return _sha256(_engine_payload(spec, settings or EngineSettings()))
