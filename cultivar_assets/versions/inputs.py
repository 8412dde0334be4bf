"""Digests of what the assets read besides their upstream assets: the data versions of the
pipeline's observable source assets (:mod:`cultivar_assets.assets.sources`).

Every function gives one sha256 hex digest (a string) from the settings (and a locale or a
model's registry entry) and the files they name:

- :func:`section_digest`: a settings section by its place in the settings file (``metrics``,
  ``construction.localisation``) as JSON, without the folders of caches (:data:`CACHE_FIELDS`:
  caches are not inputs: an asset's outputs are what it computes whether the cache holds them
  or not);
- :func:`entry_digest`: a model's registry entry as JSON, without cache folders;
- file digests: a file's bytes or a folder's files (relative path and bytes:
  :func:`content_digest`); a weights folder by its listing (each file's path, size and
  modification time: :func:`listing_digest`), as the translation cache keys it, by its path.

Each labelled part that does not apply is stated as such (``"none"``), a path that does not
exist as ``"missing"``: the digest changes when the thing appears.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cultivar_assets.config_files import not_a_regular_file
from cultivar_assets.construction.annotation.file import locale_annotation_files
from cultivar_assets.error_analysis.file import find_error_files
from cultivar_assets.metrics.sacrebleu_metrics import SPM_TOKENIZERS, spm_model_location
from cultivar_assets.settings import Settings
from cultivar_assets.specs import ModelSpec

MISSING = "missing"
NONE = "none"
CACHE_FIELDS = frozenset({"cache_dir", "hub_cache_dir", "web_cache_dir"})
SETTINGS_SECTIONS = (
    "data", "metrics", "engine", "storage", "site", "publish", "error_analysis",
    "construction.source",
    "construction.selection", "construction.localisation", "construction.annotation",
    "construction.dataset")
_SKIPPED_DIRS = {"__pycache__", "node_modules"}


def _files(folder: Path) -> Iterator[Path]:
    """Every file below ``folder``, in a fixed order (skipping byte code and node_modules)."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(names):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(root) / name


def file_sha256(path: Path) -> bytes:
    """The sha256 of a regular file's bytes (read in blocks). Anything else (a FIFO, a device,
    a link to one) is not read: its digest is that of the words naming what it is (``missing``
    for a link to nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return hashlib.sha256(MISSING.encode()).digest()
    try:
        kind = not_a_regular_file(os.fstat(fd).st_mode)
        if kind:
            return hashlib.sha256(f"not a regular file: {kind}".encode()).digest()
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.digest()
    finally:
        os.close(fd)


def _add_files(digest, folder: Path, paths: Iterable[Path]) -> None:
    for path in paths:
        digest.update(f"{path.relative_to(folder).as_posix()}\0".encode())
        digest.update(file_sha256(path))


def content_digest(path: str | Path | None) -> str:
    """sha256 of a file's bytes or of a folder's files; ``missing``; ``none`` for no path."""
    if path is None:
        return NONE
    path = Path(path).expanduser()
    if path.is_dir():
        digest = hashlib.sha256()
        _add_files(digest, path, _files(path))
        return digest.hexdigest()
    if not path.exists():
        return MISSING
    return file_sha256(path).hex()


def files_digest(folder: Path, paths: Iterable[Path]) -> str:
    """sha256 over ``paths`` (files inside ``folder``), by relative path and content."""
    digest = hashlib.sha256()
    _add_files(digest, folder, sorted(paths))
    return digest.hexdigest()


def listing_digest(path: str | Path) -> str:
    """sha256 of a folder's listing (each file's path, size and modification time in ns)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        return MISSING
    digest = hashlib.sha256()
    for file in _files(path):
        stat = file.stat()
        digest.update(f"{file.relative_to(path).as_posix()}\0{stat.st_size}:"
                      f"{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def combined(parts: dict[str, Any]) -> str:
    """One sha256 over labelled parts (JSON, keys sorted)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude=CACHE_FIELDS & set(type(model).model_fields))


def settings_value(settings: Settings, dotted: str) -> Any:
    """The settings' value at ``dotted`` (``construction.selection``)."""
    value: Any = settings
    for name in dotted.split("."):
        value = getattr(value, name)
    return value


def section_digest(settings: Settings, dotted: str) -> str:
    """A settings section without cache folders (module docstring)."""
    if dotted not in SETTINGS_SECTIONS:
        raise KeyError(f"{dotted!r} is not a settings section with a source asset "
                       f"({', '.join(SETTINGS_SECTIONS)})")
    return combined({dotted: _dump(settings_value(settings, dotted))})


def entry_digest(spec: ModelSpec) -> str:
    """A model's registry entry (module docstring)."""
    return combined(_dump(spec))


def model_files_digest(spec: ModelSpec) -> str:
    """What a model's engine reads from disk besides caches: its recorded answers
    (``replay``), its local weights folder (listed), its submitted outputs."""
    location = spec.hf_id if spec.weights == "hub" else None
    parts = _engine_files(spec.engine, location, spec.engine_options)
    if spec.engine == "outputs" and spec.path:
        from cultivar_assets.engines.submission import content_sha256

        parts["submitted outputs"] = content_sha256(spec.path)
    return combined(parts)


def _engine_files(engine: str, location: str | None, options: dict[str, Any]) -> dict[str, str]:
    parts = {"recorded answers": NONE, "weights folder (listing)": NONE}
    if engine == "replay" and options.get("answers"):
        from cultivar_assets.engines.replay import recording_path

        parts["recorded answers"] = content_digest(recording_path(options["answers"]))
    if location and Path(location).expanduser().is_dir():
        parts["weights folder (listing)"] = listing_digest(location)
    return parts


def localiser_files_digest(settings: Settings) -> str:
    """The localisation prompts file, the localiser's recorded answers or weights folder."""
    config = settings.construction.localisation
    return combined({"prompts file": content_digest(config.prompts_file),
                     **_engine_files(config.engine, config.model, config.engine_options)})


def annotation_files_digest(settings: Settings, locale: str) -> str:
    """A locale's own returned annotation files (by name and content); ``none`` when it has
    none (yet)."""
    folder = settings.construction.annotation.folder_path()
    found = locale_annotation_files(folder, locale) if Path(folder).is_dir() else []
    return files_digest(Path(folder), found) if found else NONE


def source_benchmark_digest(settings: Settings) -> str:
    """The source benchmark's files (``none`` for the bundled demo source)."""
    source = settings.construction.source
    return content_digest(source.path) if source.kind != "demo" else NONE


def selection_files_digest(settings: Settings) -> str:
    """The selection's corrections file and selection file."""
    selection = settings.construction.selection
    return combined({"corrections file": content_digest(selection.corrections_file),
                     "selection file": content_digest(selection.selection_file)})


def unpinned_hub_repos(settings: Settings) -> list[str]:
    """The Hub datasets the settings read at no pinned revision (their main branch)."""
    data = settings.data
    return [repo for repo, uses, revision in (
        (data.cultivar_repo, data.kind == "hub", data.cultivar_revision),
        (data.flores_repo, data.flores == "hub", data.flores_revision)) if uses and not revision]


def data_files_digest(settings: Settings) -> str:
    """The local FLORES release and the local Cultivar data folder, where the settings read
    them (a built dataset is the upstream asset ``cultivar_dataset``, not a source); the pinned
    Hub revisions. A Hub dataset read at no pinned revision may have changed at any time: its
    part is the time of the observation, so every observation makes ``test_sets`` stale (what
    is below it follows only when the test sets' content changed)."""
    data = settings.data
    unpinned = unpinned_hub_repos(settings)
    return combined({
        "FLORES files": content_digest(data.flores_path) if data.flores == "local" else NONE,
        "Cultivar data files": (content_digest(data.cultivar_path) if data.kind == "local"
                                else NONE),
        "Hub revisions": [data.cultivar_revision, data.flores_revision],
        "unpinned Hub data": ({"repos": unpinned, "observed at (ns)": time.time_ns()}
                              if unpinned else NONE)})


def query_page_digest(settings: Settings) -> str:
    """Whether the site gets its Query page: DuckDB-Wasm in the web cache, or npm there to
    fetch it (``site.query_page`` itself is in the ``site`` section)."""
    from cultivar_assets.site.query_engine import cached_query_engine, npm_executable

    site = settings.site
    gets = site.query_page != "off" and (
        cached_query_engine(site.web_cache_path()) is not None
        or (site.query_page != "cached" and npm_executable() is not None))
    return combined({"query page": gets})


def spm_model_digest(settings: Settings) -> str:
    """The flores200 SentencePiece model, when the BLEU tokenizer needs one."""
    metrics = settings.metrics
    return (content_digest(spm_model_location(metrics))
            if metrics.bleu_tokenize in SPM_TOKENIZERS else NONE)


def error_annotation_files_digest(settings: Settings) -> str:
    """The returned error-annotation files (``*.errors.json``) of ``annotations_dir``."""
    folder = settings.error_analysis.annotations_dir
    if folder is None:
        return NONE
    path = Path(folder).expanduser()
    return files_digest(path, find_error_files(path)) if path.is_dir() else MISSING


def registry_file_digest(settings: Settings) -> str:
    """The model registry file (the bundled one when the settings name none)."""
    from cultivar_assets.models import default_models_file

    return content_digest(settings.models_file or default_models_file())
