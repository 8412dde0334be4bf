"""Device, dtype and memory helpers shared by the engines that run torch models in-process."""

from __future__ import annotations

from cultivar_assets.engines.base import EngineLoadError


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
