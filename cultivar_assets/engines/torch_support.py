"""Start-up, device, dtype and memory helpers shared by the engines that run torch models
in-process (transformers, seq2seq, vLLM).

Every such engine starts the same way (:func:`start_engine`): import its packages (a missing one
is an :class:`EngineLoadError` saying what to install), take its options (the run-wide settings
overridden by the model's ``engine_options``), and find the model's weights
(:func:`~cultivar_assets.engines.weights.resolve_weights`); then it loads the model inside
:func:`loading`, which turns a loader's error into ``EngineLoadError("cannot load <model> from
<weights>: <error>")``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cultivar_assets.engines.base import EngineLoadError
from cultivar_assets.engines.weights import Weights, resolve_weights

if TYPE_CHECKING:
    from cultivar_assets.engines.base import Engine
    from cultivar_assets.specs import ModelSpec


@dataclass
class EngineStart:
    """What :func:`start_engine` found: the imported packages (in the order asked) and the
    engine's options; :attr:`weights` resolves the model's weights when first read (after the
    engine has checked its options: resolving can convert a checkpoint, which takes a while)."""

    modules: tuple[ModuleType, ...]
    options: dict[str, Any]
    spec: ModelSpec

    @cached_property
    def weights(self) -> Weights:
        return resolve_weights(self.spec.weights, self.spec.hf_id, self.spec.revision)


def start_engine(engine: Engine, packages: Sequence[str], install: str) -> EngineStart:
    """Import ``packages`` and read ``engine``'s options (run-wide settings overridden by the
    model's ``engine_options``); the weights follow from the result.

    A package that does not import raises ``EngineLoadError("the <engine> engine needs <packages>
    <install>")``; ``install`` says how to get them (e.g. ``": pip install -e '.[cpu]'"``).
    """
    try:
        modules = tuple(import_module(name) for name in packages)
    except ImportError as error:
        raise EngineLoadError(
            f"the {engine.name} engine needs {' and '.join(packages)}{install}"
        ) from error
    return EngineStart(modules, engine.options(), engine.spec)


@contextmanager
def loading(model_id: str, weights: Weights, errors: tuple[type[BaseException], ...],
            via: str = "") -> Iterator[None]:
    """Turn ``errors`` raised inside into ``EngineLoadError("cannot load <model_id> from
    <weights.location><via>: <error>")``; an :class:`EngineLoadError` passes as it is."""
    try:
        yield
    except EngineLoadError:
        raise
    except errors as error:
        raise EngineLoadError(
            f"cannot load {model_id} from {weights.location}{via}: {error}"
        ) from error


def torch_load_errors() -> tuple[type[BaseException], ...]:
    """What ``from_pretrained`` raises for a missing or broken checkpoint or too little memory."""
    import torch

    return (OSError, ValueError, RuntimeError, torch.OutOfMemoryError)


def load_pretrained(auto_class: Any, weights: Weights, **kwargs: Any) -> Any:
    """``auto_class.from_pretrained`` of the weights' location at their revision."""
    return auto_class.from_pretrained(weights.location, revision=weights.revision, **kwargs)


def load_torch_model(auto_class: Any, weights: Weights, dtype: str, device: str) -> Any:
    """A model in eval mode on ``device``, loaded with :func:`resolve_dtype` of ``dtype``."""
    model = load_pretrained(auto_class, weights, dtype=resolve_dtype(dtype, device)).to(device)
    model.eval()
    return model


def resolve_device(requested: str) -> str:
    """``auto`` is the first CUDA device when there is one, else the CPU."""
    import torch

    if requested != "auto":
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(requested: str, device: str):
    """``auto`` is bfloat16 on CUDA and float32 on the CPU; otherwise a torch dtype name."""
    import torch

    if requested == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return getattr(torch, requested)
    except AttributeError:
        raise EngineLoadError(f"unknown dtype {requested!r}") from None


def release_memory() -> None:
    """Collect garbage and return cached CUDA memory, after a model was deleted."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
