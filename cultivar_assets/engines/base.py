"""The engine interface: a batch of generation requests in, one raw text per request out."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from cultivar_assets.engines.prompts import GenerationRequest, PromptKind

if TYPE_CHECKING:
    from cultivar_assets.specs import ModelSpec


class EngineSettings(BaseModel):
    """Run-wide engine settings; a model's ``engine_options`` override them per model."""

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(default=8, ge=1)
    max_new_tokens: int = Field(default=128, ge=1)
    device: str = "auto"  # "auto", "cpu", "cuda", "cuda:1", ...
    dtype: str = "auto"  # "auto", "float32", "bfloat16", "float16"
    cache_dir: str | None = None  # translation cache; default $CULTIVAR_HOME/cache/translations


class EngineLoadError(RuntimeError):
    """A model could not be loaded (missing weights, out of memory, ...)."""


@dataclass(frozen=True)
class EngineInfo:
    """What produced a translation, stored with every model run."""

    engine: str
    engine_version: str
    model_revision: str | None
    chat_template_hash: str | None


@dataclass(frozen=True)
class GenerationFailure:
    """Returned by ``Engine.generate`` in place of a text when a request failed for good.

    The translation loop caches every text, stores no failure, and reports all failures at the
    end of the run (``SegmentFailuresError``). ``prompt_tokens`` / ``completion_tokens``: the
    usage the server reported with an answer it sent but that cannot be used (a 200 with no
    content: those tokens were spent); None when there was no answer or no usage. They are not
    part of a failure's identity (equality compares the reason).
    """

    reason: str
    prompt_tokens: int | None = field(default=None, compare=False)
    completion_tokens: int | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Generation:
    """One generated text with the token usage the engine reports for its request.

    ``prompt_tokens`` / ``completion_tokens``: the server's own ``usage`` for HTTP engines; a
    count by the model's tokenizer for local engines (see each engine); None when the engine
    cannot tell.
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def text_sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


class Engine(ABC):
    """Loads one model and generates for batches of requests (greedy decoding)."""

    name: ClassVar[str]
    prompt_kinds: ClassVar[tuple[PromptKind, ...]]
    # engine options that change how requests travel, not what comes back: left out of the
    # model fingerprint, so changing them keeps the translation cache
    transport_options: ClassVar[tuple[str, ...]] = ("batch_size",)
    # run-wide settings (EngineSettings) that can change the outputs; part of the cache key
    output_settings: ClassVar[tuple[str, ...]] = ("dtype", "device")
    # runs the model on this machine's GPUs unless its device option says "cpu" (run tags ask the
    # launcher for GPUs); False for engines that run on the CPU only or call a remote server
    uses_gpu: ClassVar[bool] = False
    # answers each request on its own, whatever was sent with it (a server that batches by
    # itself): callers may then submit requests continuously (generate_as_completed) instead of
    # in fixed batches, whose answers can depend on the other rows for local engines
    answers_alone: ClassVar[bool] = False
    # generates nothing: its translations were submitted (``outputs``); translation.translate
    # takes them from :meth:`outputs` instead of sending requests
    submitted: ClassVar[bool] = False

    def __init__(self, spec: ModelSpec, settings: EngineSettings) -> None:
        self.spec = spec
        self.settings = settings

    def options(self) -> dict[str, Any]:
        """Run-wide settings overridden by the model's own ``engine_options``."""
        return {**self.settings.model_dump(), **self.spec.engine_options}

    @abstractmethod
    def info(self) -> EngineInfo:
        """Engine name and version, model revision and chat-template hash."""

    @abstractmethod
    def generate(self, requests: Sequence[GenerationRequest]) -> list[str | GenerationFailure]:
        """Raw output text for each request, in order (a GenerationFailure where one failed)."""

    def generate_reporting(
        self, requests: Sequence[GenerationRequest], finished: Callable[[int], None]
    ) -> list[str | GenerationFailure]:
        """Like :meth:`generate`, calling ``finished(n)`` each time ``n`` more of ``requests``
        are done, ``len(requests)`` in all (default: once, when :meth:`generate` returns;
        engines that finish requests one by one within a batch report them as they finish)."""
        outputs = self.generate(requests)
        finished(len(requests))
        return outputs

    def generate_detailed(
        self, requests: Sequence[GenerationRequest]
    ) -> list[Generation | GenerationFailure]:
        """Like :meth:`generate`, with token usage where the engine knows it (default: none)."""
        return [raw if isinstance(raw, GenerationFailure) else Generation(raw)
                for raw in self.generate(requests)]

    def generate_as_completed(
        self, requests: Sequence[GenerationRequest]
    ) -> Iterator[tuple[int, Generation | GenerationFailure]]:
        """``(index in requests, result)`` as each request finishes (default: the whole batch,
        in order); engines with ``answers_alone`` yield each answer as soon as it arrives."""
        yield from enumerate(self.generate_detailed(requests))

    @classmethod
    def content_fingerprint(cls, spec: ModelSpec) -> str | None:
        """A hash of the files the outputs are read from, for engines whose outputs are files
        (part of :func:`~cultivar_assets.engines.fingerprint.run_fingerprint`; default: None,
        no such files)."""
        return None

    def outputs(self, test_sets: Sequence[Any]) -> dict[tuple[str, int], str]:
        """The submitted hypothesis of every (test set, segment id), for ``submitted``
        engines."""
        raise NotImplementedError(f"the {self.name} engine generates; it has no submitted outputs")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model (GPU memory, worker processes)."""
