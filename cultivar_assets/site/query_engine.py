"""DuckDB-Wasm for the Query page: fetched with npm at site-build time, kept in the web cache.

What is fetched is pinned by ``site/query-engine/package.json`` and its ``package-lock.json``
(``npm ci``: exact versions, integrity hashes): ``@duckdb/duckdb-wasm`` 1.32.0, the
``apache-arrow`` it imports, and ``esbuild``, which bundles the two into one script
(``duckdb.js``: ``window.CultivarDuckDB``, from ``site/query-engine/entry.mjs``). The engine is
the "eh" build (WebAssembly exceptions; every current browser): ``duckdb-eh.wasm`` and its worker
are stored gzip-compressed (34.2 MB → 7.6 MB) and decompressed in the browser with
``DecompressionStream``, so the site stays small on any static host. Nothing is loaded from a
CDN, ever: the page runs what the build put beside it.

The cache folder (``<web cache>/duckdb-wasm-<version>/``) is written by
:func:`fetch_query_engine` through :func:`cultivar_assets.files.replace_folder` (complete or
absent) and read by :func:`cached_query_engine`. npm is ``$CULTIVAR_NPM`` (an empty value: no
npm; the tests set that) or ``npm`` on the ``PATH``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cultivar_assets.files import read_manifest, replace_folder
from cultivar_assets.paths import resource_dir

DUCKDB_WASM_VERSION = "1.32.0"
ENGINE_FILES = ("duckdb.js", "duckdb-browser-eh.worker.js.gz", "duckdb-eh.wasm.gz",
                "LICENSES.txt")
NPM_TIMEOUT_S = 600
# Measured: `npm ci` of site/query-engine/package-lock.json into an empty npm cache downloaded
# 49 MB of packages (2026-12-01); said before a run reaches the network for them.
NPM_DOWNLOAD_MB = 49


class QueryEngineError(RuntimeError):
    """DuckDB-Wasm could not be fetched or bundled."""


@dataclass(frozen=True)
class QueryEngine:
    folder: Path
    version: str

    def files(self) -> list[Path]:
        return [self.folder / name for name in ENGINE_FILES]


def engine_folder(cache: Path) -> Path:
    return Path(cache) / f"duckdb-wasm-{DUCKDB_WASM_VERSION}"


def cached_query_engine(cache: Path) -> QueryEngine | None:
    """The engine in the web cache, or ``None`` when it has not been fetched (completely)."""
    folder = engine_folder(cache)
    manifest = read_manifest(folder) if folder.is_dir() else None
    if not manifest or manifest.get("version") != DUCKDB_WASM_VERSION:
        return None
    if not all((folder / name).is_file() for name in ENGINE_FILES):
        return None
    return QueryEngine(folder, DUCKDB_WASM_VERSION)


def npm_executable() -> str | None:
    """``$CULTIVAR_NPM`` (empty: none) or ``npm`` on the PATH; ``None`` when there is none."""
    configured = os.environ.get("CULTIVAR_NPM", "npm")
    return shutil.which(configured) if configured else None


def npm_registry(npm: str) -> str:
    """The registry npm will fetch from (``npm config get registry``), or "npm's registry"."""
    try:
        result = subprocess.run([npm, "config", "get", "registry"], capture_output=True,
                                text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "npm's configured registry"
    return result.stdout.strip() or "npm's configured registry"


def network_notice(cache: Path, npm: str) -> str:
    """What fetching the engine will take from the network, from where, and where it is kept:
    said once, before npm runs."""
    return (f"reaching the network: npm ci fetches @duckdb/duckdb-wasm {DUCKDB_WASM_VERSION}, "
            f"apache-arrow and esbuild (about {NPM_DOWNLOAD_MB} MB, pinned by "
            f"site/query-engine/package-lock.json) from {npm_registry(npm)} for the site's Query "
            f"page, kept in {engine_folder(cache)}; to keep unattended runs off the network, "
            "run `cultivar fetch-query-engine` once and set site: {query_page: cached}")


def will_fetch(mode: str, cache: Path) -> str | None:
    """The network notice when a site build under ``mode`` would fetch the engine now (mode
    auto or required, not in the cache, npm there), else None."""
    npm = npm_executable()
    if mode in ("auto", "required") and cached_query_engine(cache) is None and npm:
        return network_notice(cache, npm)
    return None


def fetch_query_engine(cache: Path, say: Callable[[str], None] = print) -> QueryEngine:
    """Fetch DuckDB-Wasm with npm (``npm ci``), bundle it and store it in the web cache."""
    npm = npm_executable()
    if npm is None:
        raise QueryEngineError("npm is not available (install Node.js and npm, or set "
                               "$CULTIVAR_NPM to its path)")
    spec = resource_dir("site") / "query-engine"
    folder = engine_folder(cache)
    with tempfile.TemporaryDirectory(prefix="cultivar-npm-") as tmp:
        work = Path(tmp)
        for name in ("package.json", "package-lock.json", "entry.mjs"):
            shutil.copyfile(spec / name, work / name)
        say(network_notice(cache, npm))
        _run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], work)
        dist = work / "node_modules" / "@duckdb" / "duckdb-wasm" / "dist"
        esbuild = work / "node_modules" / ".bin" / "esbuild"
        _run([str(esbuild), "entry.mjs", "--bundle", "--format=iife",
              "--global-name=CultivarDuckDB", "--minify", "--legal-comments=eof",
              "--metafile=meta.json", "--outfile=duckdb.js"], work)

        def write(out: Path) -> None:
            shutil.copyfile(work / "duckdb.js", out / "duckdb.js")
            for name in ("duckdb-browser-eh.worker.js", "duckdb-eh.wasm"):
                with open(dist / name, "rb") as source, \
                        gzip.open(out / f"{name}.gz", "wb", compresslevel=9) as target:
                    shutil.copyfileobj(source, target, 1 << 20)
            (out / "LICENSES.txt").write_text(_licences(work), "utf-8")

        say("bundling and compressing DuckDB-Wasm")
        replace_folder(folder, write, {"kind": "query-engine", "version": DUCKDB_WASM_VERSION,
                                       "bundle": "eh"})
    return QueryEngine(folder, DUCKDB_WASM_VERSION)


def _run(command: list[str], cwd: Path) -> None:
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                                timeout=NPM_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise QueryEngineError(f"{' '.join(command[:2])} timed out after {NPM_TIMEOUT_S} s") \
            from error
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise QueryEngineError(f"{' '.join(command[:2])} failed ({result.returncode}): "
                               + " / ".join(tail))


def _licences(work: Path) -> str:
    """Licence texts of every npm package whose code the site ships (bundle, worker, wasm)."""
    meta = json.loads((work / "meta.json").read_text("utf-8"))
    packages = {"@duckdb/duckdb-wasm"}
    for source in meta["inputs"]:
        parts = source.split("node_modules/")[-1].split("/")
        if "node_modules/" in source:
            packages.add("/".join(parts[:2]) if parts[0].startswith("@") else parts[0])
    sections = ["Third-party code in this folder (bundled by esbuild from the npm packages "
                "below; DuckDB-Wasm's worker and WebAssembly module as published).\n"]
    for name in sorted(packages):
        folder = work / "node_modules" / name
        info = json.loads((folder / "package.json").read_text("utf-8"))
        texts = [p for p in sorted(folder.iterdir())
                 if p.is_file() and p.name.lower().startswith(("licen", "notice", "copyright"))]
        sections.append(f"== {name} {info.get('version')} (licence: {info.get('license')}; "
                        f"{_repository(info)})\n")
        sections += [p.read_text("utf-8", errors="replace").strip() + "\n" for p in texts]
        if not texts:
            sections.append("(the package ships no licence file; its licence is the one named "
                            "above, at the repository)\n")
    return "\n".join(sections)


def _repository(info: dict) -> str:
    repository = info.get("repository")
    if isinstance(repository, dict):
        repository = repository.get("url")
    return repository or info.get("homepage") or "no repository named"


def query_engine_for_build(mode: str, cache: Path,
                           say: Callable[[str], None]) -> tuple[QueryEngine | None, str | None]:
    """The engine for a site build under ``mode``, and a note when the Query page is left out."""
    if mode == "off":
        return None, "the Query page was left out: site.query_page is off"
    engine = cached_query_engine(cache)
    if engine is not None:
        return engine, None
    if mode == "cached":
        return None, (f"the Query page was left out: DuckDB-Wasm is not in the web cache "
                      f"({engine_folder(cache)}); run `cultivar fetch-query-engine`")
    try:
        return fetch_query_engine(cache, say), None
    except QueryEngineError as error:
        if mode == "required":
            raise
        return None, f"the Query page was left out: {error}"
