"""Pushing the dataset folder to the Hugging Face Hub, or recording why it was not pushed.

A push needs a repo id and a token (read from the environment variable named by
``PublishConfig.token_env``; the value is passed to ``HfApi`` and nowhere else), and, for the
bundled demo data, ``allow_demo_push``. Otherwise :func:`push_dataset` makes no request and
returns a dry run: the files that would be uploaded (path, size, sha256) and the reasons.

A push creates the dataset repo if needed, reads the ``README.md`` already there (if any) and
uploads the folder with that card's front matter merged into ours
(:func:`~cultivar_assets.publish.card.merge_front_matter`): configurations of locales we do not
publish, and keys we do not set, stay. Nothing is deleted, so other locales' data files stay too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultivar_assets.files import MANIFEST, read_manifest
from cultivar_assets.publish.card import Card, merge_front_matter, parse_readme
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.publish.dataset_folder import FileEntry, list_files
from cultivar_assets.secrets import redact, register

REPO_TYPE = "dataset"


class PublishError(RuntimeError):
    """The dataset cannot be pushed as configured."""


@dataclass(frozen=True)
class PushResult:
    pushed: bool
    repo_id: str | None
    endpoint: str
    files: list[FileEntry]  # uploaded (README.md as merged), or that a push would upload
    reason: str | None = None  # why it did not push
    commit_url: str | None = None
    kept_configs: list[str] = field(default_factory=list)  # configs kept from the Hub's card

    def metadata(self) -> dict[str, Any]:
        """Plain values for the asset's metadata (no token: the result never holds one)."""
        return {
            "pushed": self.pushed,
            "repo_id": self.repo_id or "",
            "endpoint": self.endpoint,
            "reason": self.reason or "",
            "commit_url": self.commit_url or "",
            "kept_configs": list(self.kept_configs),
            "files": [f.as_dict() for f in self.files],
        }


def dry_run_reasons(config: PublishConfig, token: str | None, is_demo: bool) -> list[str]:
    """Why a push must not happen now; empty when it may."""
    from huggingface_hub import constants

    reasons = []
    if not config.repo_id:
        reasons.append("no repo_id configured")
    if not token:
        reasons.append(f"no token: the environment variable {config.token_env} is not set")
    if is_demo and not config.allow_demo_push:
        reasons.append("the data is the bundled demo data (set allow_demo_push to push it)")
    if constants.HF_HUB_OFFLINE:
        reasons.append("huggingface_hub is in offline mode (HF_HUB_OFFLINE)")
    return reasons


def push_dataset(
    folder: Path, config: PublishConfig, *, is_demo: bool, token: str | None,
    fingerprint: str | None = None,
) -> PushResult:
    """Push ``folder`` to ``config.repo_id``, or return the dry run (see the module docstring).

    ``fingerprint`` (the stored dataset's) must match the one the folder was built from, so a
    folder left by another data source (the demo, say) is never pushed as this one.
    """
    from huggingface_hub import HfApi, constants

    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise PublishError(f"no dataset folder at {folder}; materialise hf_dataset_folder first")
    manifest = read_manifest(folder) or {}
    if fingerprint is not None and manifest.get("fingerprint") != fingerprint:
        raise PublishError(
            f"the dataset folder {folder} was built from other data than the stored dataset "
            "(its build manifest does not match); materialise hf_dataset_folder first"
        )
    is_demo = bool(manifest.get("is_demo", is_demo))
    endpoint = (config.endpoint or constants.ENDPOINT).rstrip("/")
    reasons = dry_run_reasons(config, token, is_demo)
    if reasons:
        return PushResult(False, config.repo_id, endpoint, list_files(folder), "; ".join(reasons))

    repo_id = str(config.repo_id)
    api = HfApi(endpoint=endpoint, token=register(token))
    with _hub_errors(endpoint, repo_id):
        return _push(api, folder, config, repo_id, endpoint)


@contextmanager
def _hub_errors(endpoint: str, repo_id: str) -> Iterator[None]:
    """Name the endpoint and the repository in every failure; never the token."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        yield
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "?"
        raise PublishError(redact(f"the Hub at {endpoint} refused the push to {repo_id} "
                                  f"(HTTP {status}): {error}")) from None
    except _transport_errors() as error:
        raise PublishError(redact(f"cannot reach the Hub at {endpoint} to push {repo_id}: "
                                  f"{type(error).__name__}: {error}")) from None
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        if not _raised_in_huggingface_hub(error):
            raise
        raise PublishError(redact(
            f"the Hub at {endpoint} gave an answer that is not the Hub API's while pushing "
            f"{repo_id} (huggingface_hub could not read it: {type(error).__name__}: {error}); "
            "check publish.endpoint")) from None


def _raised_in_huggingface_hub(error: BaseException) -> bool:
    """Whether ``error`` was raised inside huggingface_hub (reading a server's answer)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and f"{os.sep}huggingface_hub{os.sep}" in frames[-1].filename


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Network failures: the socket's own, and those of the HTTP client huggingface_hub uses
    (``httpx2`` in huggingface_hub 2.x, ``httpx`` before)."""
    import importlib

    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _push(api: Any, folder: Path, config: PublishConfig, repo_id: str,
          endpoint: str) -> PushResult:
    api.create_repo(repo_id, repo_type=REPO_TYPE, exist_ok=True, private=config.private)
    with tempfile.TemporaryDirectory(prefix=f".{folder.name}.push-", dir=folder.parent) as tmp:
        existing = fetch_card(api, repo_id, Path(tmp) / "cache")
        ours = parse_readme((folder / "README.md").read_text(encoding="utf-8"))
        front_matter, kept = merge_front_matter(existing.front_matter if existing else {},
                                                ours.front_matter)
        staging = Path(tmp) / "repo"
        shutil.copytree(folder, staging, ignore=shutil.ignore_patterns(MANIFEST))
        (staging / "README.md").write_text(Card(front_matter, ours.body).to_readme(),
                                           encoding="utf-8")
        files = list_files(staging)
        info = api.upload_folder(repo_id=repo_id, repo_type=REPO_TYPE, folder_path=staging,
                                 commit_message=config.commit_message)
    return PushResult(True, repo_id, endpoint, files, commit_url=str(info.commit_url),
                      kept_configs=kept)


def fetch_card(api: Any, repo_id: str, cache_dir: Path) -> Card | None:
    """The card of the repo on the Hub, or None when it has no ``README.md`` (404)."""
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, RepositoryNotFoundError

    try:
        path = api.hf_hub_download(repo_id, "README.md", repo_type=REPO_TYPE,
                                   cache_dir=cache_dir)
    except EntryNotFoundError:
        return None
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else None
        if status == 404 and not isinstance(error, RepositoryNotFoundError):
            return None
        raise
    return parse_readme(Path(path).read_text(encoding="utf-8"))
