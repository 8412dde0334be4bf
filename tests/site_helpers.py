"""Shared by the site tests: a database with hostile names and outputs, a local server, Chromium.

The database holds the demo data translated by two systems whose names and outputs are hostile
(script tags, attribute breakers, template syntax, a spreadsheet formula): everything must show
as text, no dialog may open, no console error may appear, and no request may leave 127.0.0.1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import duckdb
from browser_helpers import NEEDS_CHROMIUM, NOT_LOCAL, chromium, serve  # noqa: F401 - shared
from conftest import COPY_ENTRY, REPO_ROOT, write_models_file

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import BenchmarkData
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import Engine, EngineInfo
from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import (
    read_test_sets,
    write_dataset,
    write_reported_results,
    write_translations,
)
from cultivar_assets.translation import translate

PAYLOADS = ["<script>alert(1)</script>", "</script><img src=x onerror=alert(1)>",
            '"><svg onload=alert(1)>', "{{7*7}}"]
HOSTILE_MODEL = '<script>alert(1)</script>"><svg onload=alert(2)>{{7*7}}'
HOSTILE_FAMILY = '=HYPERLINK("http://example.com") Hostile </script>'
# Where `cultivar fetch-query-engine` run from the checkout keeps DuckDB-Wasm (.ci/run does).
WEB_CACHE = REPO_ROOT / ".cultivar" / "cache" / "web"


class PayloadEngine(Engine):
    """Stands in for a model whose outputs are hostile HTML (raw) around a real translation."""

    name = "payload"
    prompt_kinds = ("source",)

    def info(self) -> EngineInfo:
        return EngineInfo(self.name, "test", None, None)

    def generate(self, requests):
        payloads = [PAYLOADS[i % len(PAYLOADS)] for i in range(len(requests))]
        return [f"<think>{p}</think>{p} {r.source}" for p, r in zip(payloads, requests,
                                                                      strict=True)]


def hostile_store(root: Path) -> Store:
    """Demo data, the copy baseline and a hostile model, scored, aggregated, reported results."""
    return systems_store(root, PayloadEngine, {"payload-model": (HOSTILE_MODEL, HOSTILE_FAMILY)})


def shared_hostile_store(base: Path) -> Path:
    """The database of :func:`hostile_store` built once in ``base`` (a folder every process of
    the session sees): the first caller builds it under the file lock ``hostile_store.lock``
    and renames its folder to ``hostile_store``; later callers find that folder. The database
    is read-only (tests copy it: :func:`copy_hostile_store`); a build that failed leaves no
    folder, and the next caller builds again."""
    import os
    import tempfile

    from filelock import FileLock

    done = base / "hostile_store"
    with FileLock(str(base / "hostile_store.lock")):
        if not done.is_dir():
            building = Path(tempfile.mkdtemp(prefix="hostile_store-", dir=base))
            store = hostile_store(building)
            store.path.chmod(0o444)
            os.rename(building, done)
    return done / "site.duckdb"


def copy_hostile_store(shared: Path, root: Path) -> Store:
    """A :class:`Store` of a copy of the shared :func:`hostile_store` database ``shared``
    (:func:`shared_hostile_store`) in ``root`` (created where missing), as ``site.duckdb``
    like :func:`hostile_store`'s own."""
    from conftest import copy_database

    root.mkdir(parents=True, exist_ok=True)
    return Store(copy_database(shared, root))


class CorpusEngine(Engine):
    """Answers each request with the next string of ``texts`` (in turn) before the source."""

    name = "corpus"
    prompt_kinds = ("source",)
    texts: tuple[str, ...] = ()

    def info(self) -> EngineInfo:
        return EngineInfo(self.name, "test", None, None)

    def generate(self, requests):
        start = getattr(self, "_next", 0)
        self._next = start + len(requests)
        return [f"{self.texts[(start + i) % len(self.texts)]} {r.source}"
                for i, r in enumerate(requests)]


def systems_store(root: Path, engine: type[Engine], systems: dict[str, tuple[str, str]],
                  data: BenchmarkData | None = None, config: MetricConfig | None = None) -> Store:
    """``data`` (default: the demo data) translated by the copy baseline and by ``systems``
    (registry id -> (the model id the store gets, family)) run with ``engine``; scored,
    aggregated (``config``: the metric settings, default the paper's metrics with the 13a
    tokenizer), with reported results.

    The ids are set in the store after translation: untrusted data can carry any model name,
    including ones the registry would refuse."""
    registry = engine_registry()
    registry.register(engine.name, engine, overwrite=True)
    try:
        models = write_models_file(root / "models.yaml", [COPY_ENTRY, *(
            {**COPY_ENTRY, "id": model_id, "engine": engine.name, "type": "LLM",
             "family": family, "params_total_b": 1.5 + n, "hf_id": f"test/{model_id}"}
            for n, (model_id, (_, family)) in enumerate(systems.items()))])
        store = Store(root / "site.duckdb")
        fingerprint = write_dataset(store, data or load_benchmark(DataConfig()))
        test_sets = read_test_sets(store)
        specs = load_models(models)
        for model_id in ("copy-source-baseline", *systems):
            run = translate(specs.get(model_id), test_sets, cache_dir=root / "cache",
                            show_progress_bar=False)
            write_translations(store, run, fingerprint)
    finally:
        registry._entries.pop(engine.name, None)
    with duckdb.connect(str(store.path)) as con:
        for model_id, (name, _) in systems.items():
            for table in ("translations", "models", "model_runs"):
                con.execute(f"UPDATE raw.{table} SET model_id = ? WHERE model_id = ?",
                            [name, model_id])
    for model_id in ("copy-source-baseline", *(name for name, _ in systems.values())):
        score_model(store, model_id, config or MetricConfig(bleu_tokenize="13a"))
    aggregate(store, config=config)
    write_reported_results(store, [load_models().get(m) for m in load_models()])
    return store


@contextlib.contextmanager
def watched_page(browser, **context_options) -> Iterator:
    """A page that records console errors, dialogs and the host of every request that goes
    neither to 127.0.0.1 nor to a file (:data:`browser_helpers.NOT_LOCAL`: aborted); on leaving,
    none may have happened."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    page.problems = []
    page.hosts = set()
    page.on("console", lambda m: page.problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))

    def record(route):
        url = urlparse(route.request.url)
        page.hosts.add(url.hostname or url.scheme)
        if url.hostname == "127.0.0.1" or url.scheme in ("file", "blob", "data"):
            route.continue_()
        else:
            route.abort()

    context.route(NOT_LOCAL, record)
    try:
        yield page
    finally:
        context.close()
    assert page.problems == [], page.problems
    assert page.hosts <= {"127.0.0.1", "file"}, page.hosts


# The per-model records that scoring writes; aggregation derives every other table from them.
SCORED_TABLES = ("models", "model_runs", "translations", "scores", "segment_stats",
                 "word_recall")


def widen_store(store: Store, template: str, names: list[str]) -> Store:
    """``store`` with ``names`` added as copies of the scored model ``template`` (its
    translations, scores and per-segment statistics under each new id), then re-aggregated: a
    leaderboard of many models without translating and scoring each (the layout and the
    controls are what such a site is for; the copies tie with ``template`` but get type LLM,
    and a family and a size that depend on the name's length)."""
    with duckdb.connect(str(store.path)) as con:
        for name in names:
            for table in SCORED_TABLES:
                con.execute(f"INSERT INTO raw.{table} SELECT * REPLACE (? AS model_id) "
                            f"FROM raw.{table} WHERE model_id = ?", [name, template])
            con.execute("UPDATE raw.models SET type = 'LLM', family = ?, params_total_b = ? "
                        "WHERE model_id = ?", [f"family-{len(name) % 4}", 0.5 * len(name), name])
    aggregate(store)
    return store
