"""vl-convert's SVG renderings, cached on disk (the Vega bundle: ``site.build.vega_bundle``).

An SVG is a function of its spec and of what draws it; drawing one is the slowest part of a
rebuild of an unchanged site. They are kept under
``$CULTIVAR_HOME/cache/vl-convert/<version>/svg/<key>.svg``. The key is the sha256 of the
spec's canonical JSON (sorted keys, no whitespace) together with :func:`producer`: vl-convert's
version, the sha256 of this module's source (the code that makes the SVG) and the font files
vl-convert can draw with (every file under :data:`FONT_DIRS`: path, size and mtime; the charts
pass no fonts of their own, their config names families only). A change to any of them gives
every chart a new key, so an SVG made otherwise is never served. Files are written to a
temporary name and renamed, so a reader never sees half a file; a cache that cannot be written
(read-only home) is not an error, the result is simply not kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from cultivar_assets.paths import cultivar_home

# The folders vl-convert (fontdb's system fonts) reads fonts from, where they exist.
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts",
             "/Library/Fonts", "/System/Library/Fonts", "~/Library/Fonts")


def vl_convert_version() -> str:
    import vl_convert

    return getattr(vl_convert, "__version__", None) or _package_version()


def cache_dir() -> Path:
    return cultivar_home() / "cache" / "vl-convert" / vl_convert_version()


def _package_version() -> str:
    from importlib.metadata import version

    return version("vl-convert-python")


def _font_files() -> list[list[Any]]:
    """[path, size, mtime in ns] of every file under :data:`FONT_DIRS`, sorted."""
    found = []
    for folder in FONT_DIRS:
        for root, _, names in os.walk(os.path.expanduser(folder)):
            for name in names:
                path = os.path.join(root, name)
                try:
                    status = os.stat(path)
                except OSError:  # a dangling link draws nothing
                    continue
                found.append([path, status.st_size, status.st_mtime_ns])
    return sorted(found)


@functools.cache
def producer() -> str:
    """The sha256 of what makes an SVG from a spec: vl-convert's version, this module's source
    and the font files (:func:`_font_files`)."""
    parts = {"vl_convert": vl_convert_version(), "code": hashlib.sha256(
        Path(__file__).read_bytes()).hexdigest(), "fonts": _font_files()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


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
    """``vl_convert.vegalite_to_svg(spec)``, cached by the spec's canonical JSON and
    :func:`producer`."""
    import vl_convert

    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = hashlib.sha256(f"{producer()}\n{canonical}".encode()).hexdigest()
    return _cached(cache_dir() / "svg" / f"{key}.svg", lambda: vl_convert.vegalite_to_svg(spec))
