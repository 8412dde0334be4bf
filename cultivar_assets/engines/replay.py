"""The replay engine: answers recorded from another engine, played back (ours).

A recording is a JSON file (``engine_options.answers``: a path, relative ones under
``cultivar_assets/``) that names what it was recorded from and holds one answer per request::

    {"format": 1, "recorded_from": {"engine": ..., "model": ..., "revision": ..., ...},
     "answers": [{"key": <sha256>, "text": ..., "prompt_tokens": ..., "completion_tokens": ...,
                  "note": ...}, ...]}

``key`` is :func:`replay_key` of the request: the sha256 of the canonical JSON (sorted keys, no
whitespace) of :meth:`GenerationRequest.cache_payload`, i.e. of everything about the request that
can change an answer. A request without a recorded answer is an error naming the file (never a
made-up answer). The engine's version is the recording's sha256, so another recording is another
fingerprint (and another cache key).

The demo uses it for its weak localiser (``construction/config.py``, ``demo_localisation``): the
answers Gemma 3 270M gives on the CPU, recorded by ``scripts/regenerate_demo_annotations.py``,
whose ``--check`` runs the model again and compares. Every run that replays says so where its
drafts are recorded (the localiser's label, its engine ``replay``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from cultivar_assets.config_files import read_input_file
from cultivar_assets.engines.base import Engine, EngineInfo, EngineLoadError, Generation
from cultivar_assets.engines.prompts import GenerationRequest

FORMAT = 1
MAX_RECORDING_BYTES = 256_000_000  # a recording file (read_input_file's limit)


def replay_key(request: GenerationRequest) -> str:
    """sha256 of the request's canonical JSON (:meth:`GenerationRequest.cache_payload`)."""
    canonical = json.dumps(request.cache_payload(), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def recording_path(value: str | Path) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(__file__).resolve().parent.parent / path


def write_recording(path: Path, recorded_from: dict[str, Any],
                    answers: Sequence[tuple[GenerationRequest, Generation, str]]) -> None:
    """Write a recording: (request, its answer, a note naming the item) per request."""
    rows = sorted(({"key": replay_key(request), "text": answer.text,
                    "prompt_tokens": answer.prompt_tokens,
                    "completion_tokens": answer.completion_tokens, "note": note}
                   for request, answer, note in answers), key=lambda row: row["note"])
    document = {"format": FORMAT, "recorded_from": recorded_from, "answers": rows}
    Path(path).write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", "utf-8")


def read_recorded_from(value: str | Path) -> dict[str, Any] | None:
    """The ``recorded_from`` record of the recording at ``value`` (None: it holds none, or the
    file cannot be read: loading the engine reports that)."""
    try:
        document = json.loads(read_input_file(recording_path(value), "recording",
                                              MAX_RECORDING_BYTES))
    except ValueError:  # ConfigFileError too
        return None
    found = document.get("recorded_from") if isinstance(document, dict) else None
    return found if isinstance(found, dict) else None


class ReplayEngine(Engine):
    name = "replay"
    prompt_kinds = ("plain", "chat", "source")
    output_settings = ()

    @cached_property
    def _file(self) -> Path:
        value = self.spec.engine_options.get("answers")
        if not value:
            raise EngineLoadError(f"{self.spec.id}: the replay engine needs engine_options."
                                  "answers (a recording file)")
        return recording_path(value)

    @cached_property
    def _recording(self) -> tuple[str, dict[str, dict]]:
        try:
            raw = read_input_file(self._file, "recording", MAX_RECORDING_BYTES)
            document = json.loads(raw)
        except ValueError as error:  # ConfigFileError too
            raise EngineLoadError(f"{self.spec.id}: cannot read the recording {self._file}: "
                                  f"{error}") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise EngineLoadError(f"{self._file}: not a recording of format {FORMAT}")
        return hashlib.sha256(raw).hexdigest(), {row["key"]: row for row in document["answers"]}

    def info(self) -> EngineInfo:
        digest, _ = self._recording
        return EngineInfo(self.name, f"recording sha256 {digest[:16]}", self.spec.revision, None)

    def generate_detailed(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        _, answers = self._recording
        out = []
        for request in requests:
            row = answers.get(replay_key(request))
            if row is None:
                raise EngineLoadError(
                    f"{self._file.name} holds no answer for this request (its prompt or options "
                    "differ from the recorded ones); record the answers again: python "
                    "scripts/regenerate_demo_annotations.py")
            out.append(Generation(row["text"], row.get("prompt_tokens"),
                                  row.get("completion_tokens")))
        return out

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return [answer.text for answer in self.generate_detailed(requests)]
