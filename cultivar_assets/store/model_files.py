"""The models' outputs as files under the storage root (``storage.root``: a local folder or any
``fsspec`` location, :class:`upath.UPath`), so that a model's partition needs no database file:

- ``<root>/test_sets.json``: the loaded test sets and instances with the dataset fingerprint;
- ``<root>/models/<model_id>/translations.json``: the rows of ``raw.models``, ``raw.model_runs``
  and ``raw.translations`` of the model (entry, run record, raw and cleaned outputs);
- ``<root>/models/<model_id>/scores.json``: its rows of ``raw.scores`` (with signatures),
  ``raw.segment_stats``, ``raw.segment_scores`` and ``raw.word_recall``.

Each file is one JSON document ``{"format", "kind", "digest", "content", "run"}``: ``content``
holds the rows, ``run`` the values that depend on when or how fast the run went (the run
record's ``finished_at``, ``seconds``, ``n_generated``, ``n_cached``), and ``digest`` is the
sha256 of ``content`` alone (canonical JSON): the same outputs give the same digest however they
were made (from the cache or generated). A file is written aside (a hidden name in the same
folder) and renamed into place, so a reader sees the old file or the new one, never part of one.
A missing, unreadable or partial file (its content does not give its digest) is a
:class:`ModelFilesError` naming the file.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upath import UPath

FORMAT = 1
TEST_SETS_FILE = "test_sets.json"
MODELS_FOLDER = "models"
TRANSLATIONS_FILE = "translations.json"
SCORES_FILE = "scores.json"
# the run record's values that depend on when or how fast the run went, not on its outputs
VOLATILE_RUN_COLUMNS = ("finished_at", "seconds", "n_generated", "n_cached")
_TIMESTAMPS = ("finished_at",)


class ModelFilesError(ValueError):
    """A file under the storage root is missing, unreadable or partial (module docstring)."""


@dataclass(frozen=True)
class Document:
    """One file's document: what it holds (``content``), its digest and the run's volatile
    values (``run``)."""

    path: str
    kind: str
    digest: str
    content: dict[str, Any]
    run: dict[str, Any]


def content_digest(content: dict[str, Any]) -> str:
    """sha256 of ``content`` as canonical JSON (sorted keys, no spaces)."""
    blob = json.dumps(content, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def root_path(root: str) -> UPath:
    """The storage root as a path (a local folder or an ``fsspec`` URL)."""
    return UPath(root)


def model_folder(root: str, model_id: str) -> UPath:
    return root_path(root) / MODELS_FOLDER / model_id


def model_folder_names(root: str) -> set[str]:
    """The names in the storage root's models folder (one listing; empty when it does not
    exist): ``model_id in model_folder_names(root)`` is ``model_folder(root,
    model_id).exists()`` for an id without ``/``."""
    try:
        return {path.name for path in (root_path(root) / MODELS_FOLDER).iterdir()}
    except (FileNotFoundError, NotADirectoryError):
        return set()


def test_sets_path(root: str) -> UPath:
    return root_path(root) / TEST_SETS_FILE


def translations_path(root: str, model_id: str) -> UPath:
    return model_folder(root, model_id) / TRANSLATIONS_FILE


def scores_path(root: str, model_id: str) -> UPath:
    return model_folder(root, model_id) / SCORES_FILE


def remove_model_folder(root: str, model_id: str) -> bool:
    """Delete the model's folder under the storage root with its files; False when there was
    none."""
    folder = model_folder(root, model_id)
    if not folder.exists():
        return False
    folder.fs.rm(folder.path, recursive=True)
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def write_document(path: UPath, kind: str, content: dict[str, Any],
                   run: dict[str, Any] | None = None) -> str:
    """Write ``content`` (and the run's volatile values ``run``) to ``path`` atomically (module
    docstring); returns the content's digest."""
    content = json.loads(json.dumps(content, default=_plain, allow_nan=False))
    digest = content_digest(content)
    document = {"format": FORMAT, "kind": kind, "digest": digest, "content": content,
                "run": run or {}}
    blob = json.dumps(document, ensure_ascii=False, sort_keys=True, default=_plain,
                      allow_nan=False).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    aside.write_bytes(blob)
    try:
        aside.rename(path)
    except BaseException:
        if aside.exists():
            aside.unlink()
        raise
    return digest


def read_document(path: UPath, kind: str) -> Document:
    """The document at ``path`` of ``kind``; a :class:`ModelFilesError` naming the file when it
    is missing, not a document of that kind, or partial (its content does not give its
    digest)."""
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise ModelFilesError(f"{path}: missing") from None
    except OSError as error:
        raise ModelFilesError(f"{path}: cannot be read ({error})") from None
    try:
        document = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFilesError(f"{path}: not a JSON document, corrupt or partial ({error})"
                              ) from None
    if not isinstance(document, dict) or document.get("kind") != kind or (
            document.get("format") != FORMAT):
        got = (document.get("kind"), document.get("format")) if isinstance(document, dict) else (
            type(document).__name__, None)
        raise ModelFilesError(f"{path}: not a {kind} file of format {FORMAT} (kind, format: "
                              f"{got})")
    content = document.get("content")
    if not isinstance(content, dict) or content_digest(content) != document.get("digest"):
        raise ModelFilesError(f"{path}: its content does not give its digest "
                              f"{document.get('digest')!r} (corrupt or partial)")
    return Document(str(path), kind, document["digest"], content, document.get("run") or {})


def run_record(document: Document) -> dict[str, Any]:
    """A translations document's run record as ``raw.model_runs`` holds it: its content's row
    with the run's volatile values (``finished_at`` as a timestamp)."""
    row = {**document.content["run"], **document.run}
    for column in _TIMESTAMPS:
        if isinstance(row.get(column), str):
            row[column] = datetime.fromisoformat(row[column])
    return row


def split_run_record(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``raw.model_runs`` row as (its outputs' values, the run's volatile values)."""
    return ({k: v for k, v in row.items() if k not in VOLATILE_RUN_COLUMNS},
            {k: v for k, v in row.items() if k in VOLATILE_RUN_COLUMNS})
