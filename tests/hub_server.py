"""A small Hugging Face Hub emulator on 127.0.0.1, for tests that must not touch the network.

It answers the requests that ``huggingface_hub`` 2.x makes for ``snapshot_download`` and
``hf_hub_download`` (read from the installed sources: ``_snapshot_download.py``,
``file_download.py``, ``hf_api.py``, ``utils/_http.py``)::

    GET  /api/{type}s/{ns}/{name}                     repo info (revision None)
    GET  /api/{type}s/{ns}/{name}/revision/{rev}      repo info: JSON with "id" and "sha"
    GET  /api/{type}s/{ns}/{name}/tree/{rev}[/{dir}]  file listing (?recursive=true): JSON list
    HEAD /{prefix}{ns}/{name}/resolve/{rev}/{path}    file metadata, in headers:
         X-Repo-Commit (required), ETag (git blob sha1), Content-Length; for LFS files also
         X-Linked-Etag (sha256) and X-Linked-Size, which the client prefers
    GET  /{prefix}{ns}/{name}/resolve/{rev}/{path}    the file's bytes

    GET  /api/agent-harnesses                         best-effort telemetry, fetched once per
                                                      process: answered with an empty registry

and the writes of ``HfApi.create_repo`` and ``HfApi.upload_folder`` (``hf_api.py``,
``_commit_api.py``, ``_upload_pipeline.py``; the same requests with or without ``hf_xet``)::

    POST /api/repos/create                            {"name", "organization", "type", ...}:
         200 {"url"}, or 409 (with "url") when the repo exists (``exist_ok=True`` accepts it)
    POST /api/validate-yaml                           {"content", "repoType"}: 400 with
         {"errors"} when the README's front matter is not a YAML mapping; called by
         upload_folder before hashing, and again by the single-commit path (create_commit,
         taken when hf_xet is not installed or HF_HUB_DISABLE_XET is set)
    POST /api/{type}s/{ns}/{name}/preupload/{rev}     {"files": [{"path", "sample", "size"}]}:
         every file "regular" (sent inline in the commit: no LFS, no Xet), with the git oid of
         the file already there, so the client skips unchanged files as with the Hub
    POST /api/{type}s/{ns}/{name}/commit/{rev}        NDJSON: a "header" line (summary,
         description), then "file" lines (base64 content), "deletedFile", "deletedFolder";
         applied to the repo and recorded in ``HubServer.commits``

Writes need an ``Authorization: Bearer <token>`` header (401 without); when ``write_tokens``
is not empty, the token must be one of them (403).

``{type}`` is model, dataset or space; ``{prefix}`` is "" for models, "datasets/" or "spaces/".
``{rev}`` is "main" or the repo's commit sha (``snapshot_download`` asks for repo info on "main",
then lists the tree and downloads every file at the sha).

Errors follow the Hub: the client reads the ``X-Error-Code`` header to choose the exception
(``RepoNotFound`` -> RepositoryNotFoundError, ``RevisionNotFound``, ``EntryNotFound`` ->
RemoteEntryNotFoundError, ``GatedRepo`` -> GatedRepoError). A gated repo answers 401 without an
``Authorization`` header and 403 with a token that is not in its ``allowed_tokens``.
``HubServer.fail`` forces a status on one file path (e.g. a plain 403 without error code).
There is no Xet (no ``X-Xet-Hash`` header): files download over plain HTTP.

Use::

    with HubServer() as hub:
        hub.add_repo("me/data", {"data/x/train.parquet": b"..."}, repo_type="dataset")
        use_hub(monkeypatch, hub.url, tmp_path)   # point huggingface_hub at it
        ...
        hub.seen("GET", "/resolve/")  # requests to repos: method, path, headers, status
        hub.commits[-1].files          # what the last commit uploaded: path -> bytes
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

_API_INFO = re.compile(r"^/api/(model|dataset|space)s/([^/]+/[^/]+)(?:/revision/([^/]+))?$")
_API_TREE = re.compile(r"^/api/(model|dataset|space)s/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$")
_RESOLVE = re.compile(r"^/(datasets/|spaces/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_API_WRITE = re.compile(r"^/api/(model|dataset|space)s/([^/]+/[^/]+)/(preupload|commit)/([^/]+)$")
_URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass
class HubRepo:
    repo_id: str
    repo_type: str
    files: dict[str, bytes]
    sha: str  # the commit of "main"
    lfs_suffixes: tuple[str, ...] = (".parquet",)  # stored in LFS on the real Hub
    gated: bool = False
    allowed_tokens: set[str] = field(default_factory=set)
    private: bool | None = None  # as asked by create_repo

    def is_lfs(self, path: str) -> bool:
        return path.endswith(self.lfs_suffixes)


@dataclass
class SeenRequest:
    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # lower-case names
    status: int | None = None  # the status answered
    body: bytes = b""  # the request body (POST)

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class HubCommit:
    repo_id: str
    repo_type: str
    revision: str
    summary: str
    description: str
    files: dict[str, bytes]  # added or replaced: path -> content
    deleted: list[str]  # deleted files and folders
    sha: str  # the new commit


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubServer:
    """A threaded HTTP server emulating the Hub's read endpoints; a context manager."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], HubRepo] = {}
        self.requests: list[SeenRequest] = []
        self.failures: dict[str, int] = {}  # "<repo_id>/<path>" -> forced status, no error code
        self.commits: list[HubCommit] = []
        self.validated: list[str] = []  # README contents sent to /api/validate-yaml
        self.write_tokens: set[str] = set()  # empty: any token may write
        # POST path -> (status, JSON payload) answered instead of the Hub's (a server that is
        # not the Hub)
        self.posts_answered: dict[str, tuple[int, object]] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)  # short poll: quick shutdown

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        repo_type: str = "dataset",
        *,
        gated: bool = False,
        allowed_tokens: tuple[str, ...] = (),
    ) -> HubRepo:
        digest = hashlib.sha1(repo_id.encode())
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + files[path])
        sha = digest.hexdigest()
        repo = HubRepo(repo_id, repo_type, dict(files), sha, gated=gated,
                       allowed_tokens=set(allowed_tokens))
        self.repos[(repo_type, repo_id)] = repo
        return repo

    def fail(self, repo_id: str, path: str, status: int) -> None:
        """Answer ``status`` (no X-Error-Code) for one file of a repo."""
        self.failures[f"{repo_id}/{path}"] = status

    def seen(self, method: str | None = None, contains: str = "") -> list[SeenRequest]:
        """Requests to repos (not the telemetry one), by method and a substring of the path."""
        with self._lock:
            return [r for r in self.requests
                    if (method is None or r.method == method) and contains in r.path
                    and r.path != "/api/agent-harnesses"]

    def _record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)


def _make_handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 with a Content-Length on every answer, but one request per connection: the
        # client's connection pool is shared by the whole test session, and a kept-alive
        # connection must never outlive this server (a later server may get the same port).
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            pass

        def do_GET(self):
            self._dispatch(send_body=True)

        def do_HEAD(self):
            self._dispatch(send_body=False)

        def do_POST(self):
            self._dispatch(send_body=True)

        # -- plumbing ---------------------------------------------------------------------

        def _answer(self, status: int, body: bytes = b"", headers: dict | None = None,
                    send_body: bool = True, content_type: str = "application/json") -> None:
            self.seen_request.status = status
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.close_connection = True
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if send_body and body:
                self.wfile.write(body)

        def _json(self, status: int, payload, headers: dict | None = None, send_body=True):
            self._answer(status, json.dumps(payload).encode(), headers, send_body)

        def _error(self, status: int, code: str | None, message: str, send_body=True,
                   headers: dict | None = None) -> None:
            extra = dict(headers or {})
            if code:
                extra["X-Error-Code"] = code
            extra["X-Error-Message"] = message
            self._json(status, {"error": message}, extra, send_body)

        def _repo(self, repo_type: str, repo_id: str, send_body: bool) -> HubRepo | None:
            """The repo, or None after answering 404 / 401 / 403 as the Hub would."""
            repo = hub.repos.get((repo_type, repo_id))
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found", send_body)
                return None
            if repo.gated:
                auth = self.headers.get("Authorization") or ""
                token = auth.removeprefix("Bearer ").strip()
                if not auth:
                    self._error(401, "GatedRepo", f"Access to {repo_id} is restricted. You must "
                                "be authenticated to access it.", send_body)
                    return None
                if token not in repo.allowed_tokens:
                    self._error(403, "GatedRepo", f"Access to {repo_id} is restricted and you "
                                "are not in the authorized list.", send_body)
                    return None
            return repo

        def _revision_ok(self, repo: HubRepo, revision: str, send_body: bool) -> bool:
            if unquote(revision) in ("main", repo.sha):
                return True
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", send_body)
            return False

        def _dispatch(self, send_body: bool) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            self.seen_request = SeenRequest(self.command, path, parts.query,
                                            {k.lower(): v for k, v in self.headers.items()})
            hub._record(self.seen_request)
            if self.command == "POST":
                self.seen_request.body = self.rfile.read(int(self.headers["Content-Length"] or 0))
                return self._dispatch_post(path)
            if send_body and path == "/api/agent-harnesses":
                return self._json(200, {"standardEnvVars": [], "harnesses": {}})
            if send_body and (m := _API_INFO.match(path)):
                return self._repo_info(m.group(1), m.group(2), m.group(3) or "main")
            if send_body and (m := _API_TREE.match(path)):
                return self._tree(m.group(1), m.group(2), m.group(3), m.group(4) or "",
                                  "recursive=true" in parts.query.lower())
            if m := _RESOLVE.match(path):
                repo_type = {"datasets/": "dataset", "spaces/": "space"}.get(m.group(1), "model")
                return self._resolve(repo_type, m.group(2), m.group(3), m.group(4), send_body)
            self._error(404, None, f"no route for {self.command} {path}", send_body)

        def _dispatch_post(self, path: str) -> None:
            if path in hub.posts_answered:
                return self._json(*hub.posts_answered[path])
            if path == "/api/validate-yaml":
                return self._validate_yaml()
            if not self._write_allowed():
                return
            if path == "/api/repos/create":
                return self._create_repo()
            if m := _API_WRITE.match(path):
                repo_type, repo_id, action, revision = m.groups()
                repo = self._repo(repo_type, repo_id, True)
                if repo is None or not self._revision_ok(repo, revision, True):
                    return
                if action == "preupload":
                    return self._preupload(repo)
                return self._commit(repo, unquote(revision))
            self._error(404, None, f"no route for POST {path}")

        def _write_allowed(self) -> bool:
            """Writes need a token (401 without; 403 when it is not in ``write_tokens``)."""
            auth = self.headers.get("Authorization") or ""
            if not auth.startswith("Bearer "):
                self._error(401, None, "Invalid credentials in Authorization header")
                return False
            if hub.write_tokens and auth.removeprefix("Bearer ").strip() not in hub.write_tokens:
                self._error(403, None, "You don't have the rights to write to this namespace")
                return False
            return True

        # -- endpoints --------------------------------------------------------------------

        def _create_repo(self) -> None:
            payload = json.loads(self.seen_request.body or b"{}")
            if not payload.get("organization"):
                return self._error(400, None, "the fake hub needs a namespace in the repo id")
            repo_type = payload.get("type") or "model"
            repo_id = f"{payload['organization']}/{payload['name']}"
            url = f"{hub.url}/{_URL_PREFIX[repo_type]}{repo_id}"
            if (repo_type, repo_id) in hub.repos:
                return self._json(409, {"error": f"You already created this {repo_type} repo",
                                        "url": url})
            repo = hub.add_repo(repo_id, {}, repo_type)
            repo.private = {"private": True, "public": False}.get(payload.get("visibility"))
            self._json(200, {"url": url, "name": repo_id, "id": repo.sha[:24]})

        def _validate_yaml(self) -> None:
            content = json.loads(self.seen_request.body or b"{}").get("content", "")
            hub.validated.append(content)
            match = _FRONT_MATTER.match(content)
            try:
                metadata = yaml.safe_load(match.group(1)) if match else {}
            except yaml.YAMLError as error:
                return self._json(400, {"errors": [{"message": f"invalid YAML: {error}"}]})
            if not isinstance(metadata, dict | None):
                return self._json(400, {"errors": [{"message": "metadata must be a mapping"}]})
            self._json(200, {"errors": [], "warnings": []})

        def _preupload(self, repo: HubRepo) -> None:
            files = json.loads(self.seen_request.body or b"{}").get("files", [])
            self._json(200, {"files": [
                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                 "oid": git_blob_sha1(repo.files[f["path"]]) if f["path"] in repo.files else None}
                for f in files], "commitOid": repo.sha})

        def _commit(self, repo: HubRepo, revision: str) -> None:
            lines = [json.loads(line) for line in self.seen_request.body.splitlines() if line]
            header = next((line["value"] for line in lines if line["key"] == "header"), {})
            files: dict[str, bytes] = {}
            deleted: list[str] = []
            for line in lines:
                key, value = line["key"], line["value"]
                if key == "file":
                    if value.get("encoding") != "base64":
                        return self._error(400, None, "file content must be base64")
                    files[value["path"]] = base64.b64decode(value["content"])
                elif key in ("deletedFile", "deletedFolder"):
                    deleted.append(value["path"])
                elif key != "header":
                    return self._error(400, None, f"the fake hub does not accept {key!r} lines")
            for gone in deleted:
                repo.files = {p: d for p, d in repo.files.items()
                              if p != gone and not p.startswith(gone.rstrip("/") + "/")}
            repo.files.update(files)
            digest = hashlib.sha1(repo.sha.encode())
            for path in sorted(repo.files):
                digest.update(path.encode() + b"\0" + repo.files[path])
            repo.sha = digest.hexdigest()
            hub.commits.append(HubCommit(repo.repo_id, repo.repo_type, revision,
                                         header.get("summary", ""), header.get("description", ""),
                                         files, deleted, repo.sha))
            self._json(200, {"success": True, "commitOid": repo.sha, "hookOutput": "",
                             "commitUrl": f"{hub.url}/{_URL_PREFIX[repo.repo_type]}"
                                          f"{repo.repo_id}/commit/{repo.sha}"})

        def _repo_info(self, repo_type: str, repo_id: str, revision: str) -> None:
            repo = self._repo(repo_type, repo_id, True)
            if repo is None or not self._revision_ok(repo, revision, True):
                return
            self._json(200, {
                "id": repo_id, "_id": repo.sha[:24], "author": repo_id.split("/")[0],
                "sha": repo.sha, "private": False, "gated": "manual" if repo.gated else False,
                "disabled": False, "tags": [], "downloads": 0, "likes": 0,
                "lastModified": "2026-01-01T00:00:00.000Z",
                "siblings": [{"rfilename": p} for p in sorted(repo.files)],
            })

        def _tree(self, repo_type: str, repo_id: str, revision: str, folder: str,
                  recursive: bool) -> None:
            repo = self._repo(repo_type, repo_id, True)
            if repo is None or not self._revision_ok(repo, revision, True):
                return
            prefix = folder.strip("/") + "/" if folder.strip("/") else ""
            entries, folders = [], set()
            for path in sorted(repo.files):
                if not path.startswith(prefix):
                    continue
                rest = path[len(prefix):]
                if "/" in rest and not recursive:
                    folders.add(prefix + rest.split("/")[0])
                    continue
                if recursive:  # the Hub lists the folders too when recursing
                    pieces = rest.split("/")[:-1]
                    folders.update(prefix + "/".join(pieces[: i + 1]) for i in range(len(pieces)))
                data = repo.files[path]
                entry = {"type": "file", "path": path, "size": len(data),
                         "oid": git_blob_sha1(data)}
                if repo.is_lfs(path):
                    entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                    "pointerSize": 134}
                entries.append(entry)
            entries += [{"type": "directory", "path": f, "oid": git_blob_sha1(f.encode()),
                         "size": 0} for f in sorted(folders)]
            self._json(200, entries)

        def _resolve(self, repo_type: str, repo_id: str, revision: str, filename: str,
                     send_body: bool) -> None:
            repo = self._repo(repo_type, repo_id, send_body)
            if repo is None or not self._revision_ok(repo, revision, send_body):
                return
            forced = hub.failures.get(f"{repo_id}/{filename}")
            if forced is not None:
                return self._error(forced, None, "forced failure", send_body)
            commit = {"X-Repo-Commit": repo.sha}
            data = repo.files.get(filename)
            if data is None:
                return self._error(404, "EntryNotFound", f"{filename} does not exist",
                                   send_body, commit)
            headers = {**commit, "ETag": f'"{git_blob_sha1(data)}"', "Accept-Ranges": "bytes"}
            if repo.is_lfs(filename):
                sha256 = hashlib.sha256(data).hexdigest()
                headers.update({"ETag": f'"{sha256}"', "X-Linked-Etag": f'"{sha256}"',
                                "X-Linked-Size": str(len(data))})
            self._answer(200, data, headers, send_body, "application/octet-stream")

    return Handler


def use_hub(monkeypatch, endpoint: str, tmp_path: Path, token: str | None = None) -> None:
    """Point ``huggingface_hub`` at ``endpoint`` for one test, offline mode off, no stored token.

    ``huggingface_hub`` reads ``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` at import time into
    ``huggingface_hub.constants``, so the constants are patched as well as the environment.
    """
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    # no token from the environment or from a file in the user's home
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-hf-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-stored-tokens"))
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "agent-harnesses.json"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    if token is not None:
        monkeypatch.setenv("HF_TOKEN", token)
