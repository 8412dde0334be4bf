"""vl-convert's SVG renderings, cached on disk (the Vega bundle: ``site.build.vega_bundle``).

An SVG is a pure function of its spec and of vl-convert's version, and slow enough to dominate a
rebuild of an unchanged site (~0.3–0.5 s each on a 2-core machine). They are kept under
``$CULTIVAR_HOME/cache/vl-convert/<version>/svg/<sha256>.svg``, keyed by the sha256 of the spec's
canonical JSON (sorted keys, no whitespace). A new vl-convert version starts an empty
folder. Files are written to a temporary name and renamed, so a reader never sees half a
file; a cache that cannot be written (read-only home) is not an error, the result is simply
not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from cultivar_assets.paths import cultivar_home


def cache_dir() -> Path:
    import vl_convert

    version = getattr(vl_convert, "__version__", None) or _package_version()
    return cultivar_home() / "cache" / "vl-convert" / version


def _package_version() -> str:
    from importlib.metadata import version

    return version("vl-convert-python")


def _cached(path: Path, produce) -> str:
    if path.is_file():
        return path.read_text("utf-8")
    text = produce()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError:
        pass  # not kept; the result is still correct
    return text


def vegalite_to_svg(spec: dict[str, Any]) -> str:
    """``vl_convert.vegalite_to_svg(spec)``, cached by the spec's canonical JSON."""
    import vl_convert

    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return _cached(cache_dir() / "svg" / f"{key}.svg", lambda: vl_convert.vegalite_to_svg(spec))
