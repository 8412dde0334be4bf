"""Benchmark: building the site for 32 to 1,000 synthetic models × 48 test sets × 200 segments.

A synthetic database (27 locales + 21 languages = 48 test sets of 200 segments; hypotheses are
perturbed references; scores and word-recall counts computed for real) is written for each size:
the first 16 models (``POOL``) are translated and scored (seconds each), every further model is a
mixture of them (``mix_models``: instance i of model m is pool model p(m, i)'s, its translations,
statistics and word recall together, the corpus scores computed from the mixed statistics — equal
to scoring the mixture, checked by hand), so 1,000 models fill in minutes. Then what the
``charts``, ``locale_shards``, ``model_site`` and ``site`` assets run is timed three times
(:func:`timed_build`: the charts written to their folder by ``write_store_charts``; in the first
build the locale shards by ``write_locale_shards`` (made from the dataset alone, they are not
stale after new results); the model parts that Dagster would find stale or missing written by
``write_model_parts``, all in one call as the asset's one run of them does (the runner's stage,
a backfill); then what the ``site`` asset runs: the dataset card (``card_for_store``), the
checks of the parts and the locale shards (``current_parts``, ``current_locale_shards``) and
``build_site`` with the charts folder, every model's part and the locale shards, as
``assets/site_assets.py`` calls them (its data version is the build's digest); the site build
draws no SVG): the locale shards, every part and the site into empty folders, nothing changed
(no part written, the site rendered again), and one more model added (translated and scored
for real, aggregates recomputed: its part and the site; timed ``--repeat`` times, the chart SVGs
the first run rendered removed from vl-convert's cache before each further run, the median reported
and every run listed; the SVG cache is the run's own, empty at its start, so no chart comes from an
earlier run of the bench). A build's seconds are the parts' and the site's (the charts' are listed
apart). The site's size is measured per part and per folder, its largest file reported, and the
leaderboard page timed in Chromium from ``file://`` (Playwright, Debian's /usr/bin/chromium:
DOMContentLoaded, a sort, a name search). Targets: 1,000 models ≤ 1 GB, ≤ 20,000 files, no file
over 50 MB, a full build ≤ 4 min, one model added ≤ 5 s, the leaderboard interactive within 1 s,
sort and filter ≤ 100 ms; 32 models ≤ 60 MB, ≤ 10 s, one model added ≤ 2 s.

The Query page's DuckDB-Wasm is part of the site when it is in the web cache (the build fetches
it with npm once; ``--fetch`` does that before the timings, so they never include npm).
Not a test: run it by hand and record the figures in docs/performance.md.

    python benchmarks/bench_site.py                 # 32 and 320 models (a few GB in /tmp)
    python benchmarks/bench_site.py --models 1000 --no-browser --settle 30 --workdir DIR
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from cultivar_assets.data.locales import all_locales
from cultivar_assets.data.testsets import BenchmarkData, Instance
from cultivar_assets.engines.base import EngineInfo
from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import metric_registry
from cultivar_assets.publish.card import card_for_store
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.site import vl_cache
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.charts import write_store_charts
from cultivar_assets.site.config import default_web_cache
from cultivar_assets.site.locale_shards import current_locale_shards, write_locale_shards
from cultivar_assets.site.model_part import current_parts, write_model_parts
from cultivar_assets.site.query_engine import cached_query_engine, fetch_query_engine
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import read_test_sets, write_dataset, write_translations
from cultivar_assets.translation import TranslationRow, TranslationRun

sys.path.insert(0, str(Path(__file__).parent))
from bench_scoring import SYLLABLES


def synthetic_benchmark(n_ids: int, rng: random.Random) -> BenchmarkData:
    words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 3))) for _ in range(3000)]

    def sentence(entities: list[str]) -> str:
        body = rng.choices(words, k=rng.randint(12, 30))
        for entity in entities:
            body.insert(rng.randrange(len(body)), entity)
        return " ".join(body).capitalize() + "."

    english = {i: sentence(["Alpha City", "Beta Corp"]) for i in range(n_ids)}
    instances = {}
    for locale in all_locales():
        rows = []
        for i in range(n_ids):
            local = english[i].replace("Alpha City", f"{locale.location} Town")
            rows.append(Instance(locale.key, i, f"[{locale.language}] {local}", local,
                                 f"[{locale.language}] {english[i]}", english[i]))
        instances[locale.key] = rows
    return BenchmarkData("synthetic benchmark data", False, instances)


METRICS = MetricConfig(bleu_tokenize="13a")
POOL = 16  # models scored for real; the others are mixed from them (mix_models)


def perturbed_run(m: int, test_sets, rng: random.Random) -> TranslationRun:
    """Model ``m``'s synthetic translations: each segment's reference with 0 to 3 of its words
    replaced by another of its words (``rng`` decides which)."""
    spec = model_spec(m)
    rows = []
    for test_set in test_sets:
        for segment in test_set.segments:
            words = segment.reference.split()
            for _ in range(rng.randint(0, 3)):
                words[rng.randrange(len(words))] = rng.choice(words)
            hypothesis = " ".join(words)
            rows.append(TranslationRow(spec.id, test_set.name, segment.segment_id,
                                       segment.source, segment.reference, hypothesis,
                                       hypothesis, ()))
    return TranslationRun(spec, "0" * 64, EngineInfo("copy-source", "synthetic", None, None),
                          "0" * 64, rows, len(rows), 0, 0.0)


def add_model(store: Store, m: int, test_sets, fingerprint: str, rng: random.Random) -> None:
    """Model ``m``: translations (perturbed references), scored for real (BLEU, chrF, the
    per-segment statistics that the bootstrap intervals need, word recall)."""
    run = perturbed_run(m, test_sets, rng)
    write_translations(store, run, fingerprint)
    score_model(store, run.model.id, METRICS, processes=2)


def model_spec(m: int) -> ModelSpec:
    return ModelSpec(id=f"model-{m:03d}", hf_id=f"org/model-{m:03d}", type="LLM",
                     family=f"family-{m % 8}", params_total_b=0.5 * (1 + m % 40),
                     engine="copy-source", prompt_style="source")


def fill(store: Store, n_models: int, n_ids: int, seed: int = 7, pool: int = POOL,
         replicates: int = 1000) -> None:
    """The first ``pool`` models scored for real (:func:`add_model`), the rest mixed from them
    (:func:`mix_models`), then the aggregates."""
    rng = random.Random(seed)
    fingerprint = write_dataset(store, synthetic_benchmark(n_ids, rng))
    test_sets = read_test_sets(store)
    real = min(n_models, pool)
    for m in tqdm(range(real), desc=f"{real} models scored", unit="model"):
        add_model(store, m, test_sets, fingerprint, rng)
    if n_models > real:
        mix_models(store, range(real, n_models), real, seed)
    aggregate(store, config=aggregate_config(replicates))


def aggregate_config(replicates: int) -> MetricConfig:
    """The aggregates' settings: the bootstrap's replicates (1,000 by default) and BLEU's 13a
    tokenizer (the bench's models are scored with it: no SentencePiece model is needed)."""
    return MetricConfig(bleu_tokenize="13a", bootstrap_replicates=replicates)


def mix_models(store: Store, models: range, pool: int, seed: int) -> None:
    """Models ``models`` as mixtures of the ``pool`` scored models ``model-000``...: model ``m``
    takes instance ``i`` from pool model ``p(m, i)`` (drawn at random) on every test set — its
    translations, per-segment statistics and word-recall counts, so texts and statistics agree
    — and its corpus scores are computed from the mixed statistics (the registry's
    ``score_from_stats``). Seconds for 1,000 models, where scoring each takes seconds."""
    rng = np.random.default_rng(seed)
    pool_ids = [f"model-{p:03d}" for p in range(pool)]
    specs = [model_spec(m) for m in models]
    with store.connect() as con:
        segment_ids = [r[0] for r in con.execute(
            "SELECT DISTINCT segment_id FROM raw.translations ORDER BY 1").fetchall()]
        drawn = rng.integers(0, pool, size=(len(specs), len(segment_ids)))
        assign = pa.table({
            "model_id": np.repeat([s.id for s in specs], len(segment_ids)),
            "segment_id": np.tile(np.asarray(segment_ids, dtype=np.int32), len(specs)),
            "pool_id": np.asarray(pool_ids)[drawn.ravel()]})
        digests = pa.table({"model_id": [s.id for s in specs], "fingerprint": [
            hashlib.sha256(f"{s.id}:{row.tobytes().hex()}".encode()).hexdigest()
            for s, row in zip(specs, drawn, strict=True)]})
        model_rows = pa.Table.from_pylist([{
            "model_id": s.id, "hf_id": s.hf_id, "revision": s.revision, "weights": s.weights,
            "type": s.type, "family": s.family, "params_total_b": s.params_total_b,
            "params_active_b": s.params_active_b, "engine": s.engine,
            "prompt_style": s.prompt_style, "engine_options": "{}", "license": s.license}
            for s in specs])
        con.register("assign", assign)
        con.register("digests", digests)
        con.register("model_rows", model_rows)
        con.begin()
        con.execute("INSERT INTO raw.models BY NAME SELECT * FROM model_rows")
        con.execute("""INSERT INTO raw.model_runs BY NAME
            SELECT r.* REPLACE (d.model_id AS model_id, d.fingerprint AS translations_fingerprint)
            FROM digests d, raw.model_runs r WHERE r.model_id = 'model-000'""")
        for table, key in (("translations", "segment_id"), ("segment_stats", "segment_id"),
                           ("word_recall", "segment_id")):
            con.execute(f"""INSERT INTO raw.{table} BY NAME
                SELECT t.* REPLACE (a.model_id AS model_id) FROM assign a
                JOIN raw.{table} t ON t.model_id = a.pool_id AND t.{key} = a.segment_id""")
        stats = con.sql("""SELECT model_id, test_set, metric, segment_id, stats
            FROM raw.segment_stats WHERE list_contains($pool, model_id)
            ORDER BY metric, test_set, model_id, segment_id""", params={"pool": pool_ids}
                        ).to_arrow_table()
        templates = {(r["test_set"], r["metric"]): r for r in con.sql(
            "SELECT * FROM raw.scores WHERE model_id = 'model-000'").to_arrow_table(
            ).to_pylist()}
        position = {s: j for j, s in enumerate(segment_ids)}
        registry = metric_registry()
        fingerprints = digests["fingerprint"].to_pylist()
        score_rows = []
        columns = stats.to_pydict()
        groups: dict[tuple[str, str], list[int]] = {}
        for index, key in enumerate(zip(columns["test_set"], columns["metric"], strict=True)):
            groups.setdefault(key, []).append(index)
        for (test_set, metric), rows in groups.items():
            width = len(columns["stats"][rows[0]])
            table = np.zeros((pool, len(segment_ids), width), dtype=np.int64)
            present = np.zeros((pool, len(segment_ids)), dtype=bool)
            for index in rows:
                p, j = pool_ids.index(columns["model_id"][index]), position[
                    columns["segment_id"][index]]
                table[p, j] = columns["stats"][index]
                present[p, j] = True
            cols = np.arange(len(segment_ids))[None, :]
            summed = np.where(present[drawn, cols][..., None], table[drawn, cols], 0).sum(axis=1)
            n_segments = present[drawn, cols].sum(axis=1)
            scores = registry.get(metric).score_from_stats(summed.astype(np.float64))
            template = templates[(test_set, metric)]
            for s, score, n, fp in zip(specs, scores, n_segments, fingerprints, strict=True):
                score_rows.append({**template, "model_id": s.id, "score": float(score),
                                   "n_segments": int(n), "translations_fingerprint": fp})
        con.register("score_rows", pa.Table.from_pylist(score_rows))
        con.execute("INSERT INTO raw.scores BY NAME SELECT * FROM score_rows")
        con.commit()


def add_one(store: Store, m: int, replicates: int = 1000) -> None:
    """One more model in a filled database, aggregates recomputed (not part of the timings)."""
    test_sets = read_test_sets(store)
    fingerprint = store.query("dataset")[0]["fingerprint"]
    add_model(store, m, test_sets, fingerprint, random.Random(m))
    aggregate(store, config=aggregate_config(replicates))


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
_TIMED = """([selector, action]) => {
  const t0 = performance.now();
  if (action === "click") { document.querySelector(selector).click(); }
  else { const input = document.querySelector(selector); input.value = action;
         input.dispatchEvent(new Event("input", {bubbles: true})); }
  document.body.getBoundingClientRect(); void document.body.offsetHeight;  // layout included
  return new Promise(done => requestAnimationFrame(() => done(performance.now() - t0)));
}"""


def leaderboard_timings(site: Path) -> dict[str, float] | None:
    """The leaderboard in Chromium from ``file://`` (Playwright, Debian's chromium): ms from
    navigation to DOMContentLoaded (its scripts have run: the table sorts and filters) and to
    the load event; a sort (∆chrF header, twice) and a name search ("model-9") and its
    clearing, each up to the next frame with layout. The fastest of three page loads."""
    if not CHROMIUM.is_file():
        return None
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for _ in range(3):
                page = browser.new_page()
                page.goto((site / "index.html").as_uri(), wait_until="load")
                nav = page.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
                nav = json.loads(nav)
                out.setdefault("interactive_ms", []).append(nav["domContentLoadedEventEnd"])
                out.setdefault("load_ms", []).append(nav["loadEventEnd"])
                header = "#leaderboard thead th:nth-child(4) button"
                search = "form[data-table=leaderboard] input[name=q]"
                for name, args in (("sort_ms", [header, "click"]),
                                   ("sort_again_ms", [header, "click"]),
                                   ("search_ms", [search, "model-9"]),
                                   ("search_clear_ms", [search, ""])):
                    out.setdefault(name, []).append(page.evaluate(_TIMED, args))
                page.close()
        finally:
            browser.close()
    return {k: round(min(v), 1) for k, v in out.items()}


def part_files(site: Path) -> dict[str, int]:
    """Files per folder of the site (``data/hyp``, ``downloads/models``, ...; top level: ".")."""
    counts: dict[str, int] = {}
    for path in site.rglob("*"):
        if path.is_file():
            parts = path.relative_to(site).parts[:-1]
            key = "/".join(parts[:2]) if parts[:1] in (("data",), ("downloads",)) else (
                parts[0] if parts else ".")
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def cached_svgs() -> set[str]:
    """The SVG renderings in vl-convert's cache now (:mod:`cultivar_assets.site.vl_cache`)."""
    folder = vl_cache.cache_dir() / "svg"
    return set(os.listdir(folder)) if folder.is_dir() else set()


def forget_svgs(kept: set[str]) -> None:
    """Remove the renderings cached since ``kept`` was listed: a repeated one-model rebuild
    would otherwise take the new model's charts from the cache that its first run filled, which
    no real rebuild can (the charts are new)."""
    folder = vl_cache.cache_dir() / "svg"
    for name in cached_svgs() - kept:
        (folder / name).unlink(missing_ok=True)


def site_asset_run(store: Store, site: Path, charts_dir: Path, folders: dict[str, Path],
                   locales: Path, mode: str, web_cache: Path, card_markdown: str | None = None):
    """What the ``site`` asset runs (assets/site_assets.py: ``site``): the dataset card
    (``card_for_store``; ``card_markdown`` instead where given), the usable parts
    (``current_parts``) and locale shards (``current_locale_shards``), then ``build_site`` with
    the charts folder, every model's part and the locale shards, the previous build left to a
    detached process; its summary. Stops, naming them, where a part or the locale shards would
    be made by the build itself (the bench times the assembled path the asset takes)."""
    card = card_markdown if card_markdown is not None else card_for_store(
        store, PublishConfig()).page_body
    usable, unusable = current_parts(store, folders, None)
    if unusable:
        raise SystemExit(f"parts the site would make itself: {sorted(unusable)[:3]}")
    shards, why_not = current_locale_shards(store, locales, None)
    if why_not:
        raise SystemExit(f"locale shards the site would make itself: {why_not}")
    return build_site(store, site, card_markdown=card, charts_dir=charts_dir, query_page=mode,
                      web_cache=web_cache, model_parts=usable, locale_shards=shards,
                      detach_removal=True)


def previous_build_removed(site: Path, ended: float) -> float:
    """Seconds from ``ended`` (the site asset's end) until the previous build, removed by a
    detached process (not timed by the asset), is gone: waited for, so that no later timing
    overlaps it. Stops after 600 s, naming the folder."""
    global _REMOVED_AT
    while left := sorted(site.parent.glob(f".{site.name}.*")):
        if time.perf_counter() - ended > 600:
            raise SystemExit(f"the previous build {left[0]} was not removed within 600 s")
        time.sleep(0.01)
    _REMOVED_AT = time.perf_counter()
    return round(_REMOVED_AT - ended, 2)


_REMOVED_AT: float | None = None  # when the last previous build was gone (perf_counter)


def settle(seconds: float) -> float:
    """Wait until ``seconds`` have passed since the last previous build was removed
    (:func:`previous_build_removed`); the seconds waited. On ext4 without a journal (this
    development machine's filesystem) a file created within 30 s of the removal of many
    others costs kernel time (ext4's ``recently_deleted`` skips the recently freed inodes), so
    builds timed seconds after the previous one's removal pay for it; a site rebuilt after a
    model's translation and scoring follows the previous build by minutes. ``--settle 30``
    times the builds as those meet the filesystem, ``--settle 0`` back to back."""
    if _REMOVED_AT is None or seconds <= 0:
        return 0.0
    wait = max(0.0, seconds - (time.perf_counter() - _REMOVED_AT))
    time.sleep(wait)
    return round(wait, 2)


def timed_build(store: Store, site: Path, mode: str, web_cache: Path,
                models: list[str] | None = None):
    """What the ``charts``, ``locale_shards``, ``model_site`` and ``site`` assets run after new
    results (assets/site_assets.py): the charts written to their folder (``charts/`` beside the
    site); with ``models`` None (a first build: every part missing) the locale shards written
    to ``site-locales/`` beside the site (``locale_shards``: made from the dataset alone, so not
    stale after new results); the parts of ``models`` (None: every model with translations;
    the partitions Dagster finds stale or missing) written to ``site-models/`` beside the site
    in one call, as one run of ``model_site`` writes them (none: no run); then what the
    ``site`` asset runs: the dataset card (``card_for_store``), the usable parts
    (``current_parts``) and locale shards (``current_locale_shards``) and the site built with
    the charts folder, so no SVG is drawn by the site build, every model's part and the locale
    shards; its data version is the build's digest (no further step), the previous build removed
    by a detached process, as the asset leaves it. The build's summary, the charts' seconds, the
    parts' seconds (the locale shards' and the models'), the site asset's seconds (the card, the
    checks and the build), the CPU seconds of all of them (this process and its children, the
    removal's not counted), the load, and the seconds after the site asset's end until the
    previous build was removed (waited for before this returns)."""
    def cpu() -> float:
        own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                           resource.RUSAGE_CHILDREN))
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    before = cpu()
    charts_dir = site.parent / "charts"
    started = time.perf_counter()
    write_store_charts(store, charts_dir)
    charts_s = round(time.perf_counter() - started, 2)
    parts = site.parent / "site-models"
    locales = site.parent / "site-locales"
    every = [row["model_id"] for row in store.query("site_translated_models")]
    folders = {model_id: parts / model_slug(model_id) for model_id in every}
    started = time.perf_counter()
    wanted = every if models is None else models
    if models is None:  # the locale shards: stale only when the dataset or the code changed
        write_locale_shards(store, locales)
    if wanted:  # one run of model_site's stale partitions (the runner's stage, a backfill)
        write_model_parts(store, {model_id: folders[model_id] for model_id in wanted})
    parts_s = round(time.perf_counter() - started, 2)
    started = time.perf_counter()  # the site asset (assets/site_assets.py: site)
    summary = site_asset_run(store, site, charts_dir, folders, locales, mode, web_cache)
    ended = time.perf_counter()
    site_s = round(ended - started, 2)
    load = round(os.getloadavg()[0], 1)
    removed_s = previous_build_removed(site, ended)
    return (summary, charts_s, parts_s, site_s, round(cpu() - before, 2), load, removed_s)


def finish(folder: Path, keep: bool) -> str | None:
    """After one size's builds: with ``keep``, the line that says where its site and database
    are kept; without, ``folder`` is removed (None)."""
    if not keep:
        shutil.rmtree(folder)
        return None
    return (f"kept: the site in {folder / 'site'} (open {folder / 'site' / 'index.html'}), "
            f"its database {folder / 'bench.duckdb'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[32, 320])
    parser.add_argument("--segments", type=int, default=200, help="instances per test set")
    parser.add_argument("--keep", action="store_true", help="keep the built sites and their "
                        "databases (their folders are printed)")
    parser.add_argument("--fetch", action="store_true",
                        help="fetch DuckDB-Wasm with npm first if it is not in the web cache")
    parser.add_argument("--json", type=Path, help="write the figures to this file too")
    parser.add_argument("--replicates", type=int, default=1000,
                        help="bootstrap replicates of the aggregates (a database kept per count)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="time the one-model rebuild this many times from the same "
                        "previous build (the median is reported, every run listed)")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="before each timed build, wait until this many seconds have "
                        "passed since the previous build was removed (see settle(); 30 for "
                        "builds that do not follow each other within seconds)")
    parser.add_argument("--no-browser", action="store_true",
                        help="leave out the leaderboard's timings in Chromium")
    parser.add_argument("--workdir", type=Path, help="keep each size's filled database here "
                        "and reuse it in later runs (filling 320 models takes minutes)")
    parser.add_argument("--fill-only", action="store_true",
                        help="with --workdir: only fill the databases that are not kept yet "
                        "(untimed; e.g. at low priority), no builds")
    args = parser.parse_args(argv)
    if args.fill_only and not args.workdir:
        parser.error("--fill-only needs --workdir")
    cache = default_web_cache()
    if args.fetch and cached_query_engine(cache) is None:
        fetch_query_engine(cache)
    mode = "cached"
    print(f"Query page: {'included' if cached_query_engine(cache) else 'left out'} "
          f"(web cache {cache})", flush=True)
    # vl-convert's SVG cache (and the templates' bytecode) in a home of this run's own: the
    # synthetic models are the same at every run, so a chart rendered by an earlier run would
    # come from the cache instead of being rendered (the web cache stays: build(web_cache=))
    home = tempfile.mkdtemp(prefix="cultivar-bench-home-")
    os.environ["CULTIVAR_HOME"] = home
    results = []
    for n_models in args.models:
        folder = Path(tempfile.mkdtemp(prefix=f"cultivar-site-{n_models}-"))
        store = Store(folder / "bench.duckdb")
        start = time.perf_counter()
        suffix = "" if args.replicates == 1000 else f"-r{args.replicates}"
        kept = (args.workdir / f"bench-scored-{n_models}x{args.segments}{suffix}.duckdb"
                if args.workdir else None)
        pool_db = (args.workdir / f"bench-scored-{POOL}x{args.segments}.duckdb"
                   if args.workdir else None)
        if kept is not None and kept.is_file():
            shutil.copyfile(kept, store.path)
        elif n_models > POOL and pool_db is not None and pool_db.is_file():
            shutil.copyfile(pool_db, store.path)  # the scored pool, kept by an earlier run
            mix_models(store, range(POOL, n_models), POOL, seed=7)
            aggregate(store, config=aggregate_config(args.replicates))
            if kept is not None:
                shutil.copyfile(store.path, kept)
        else:
            fill(store, n_models, args.segments, replicates=args.replicates)
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(store.path, kept)
        filled = time.perf_counter() - start
        if args.fill_only:
            print(f"{kept}: filled in {filled:.0f} s", flush=True)
            shutil.rmtree(folder)
            continue
        site = folder / "site"
        # every model's part (all missing), then none (all fresh)
        full, full_charts, full_parts, full_site, full_cpu, full_load, _ = timed_build(
            store, site, mode, cache)
        browser = None if args.no_browser else leaderboard_timings(site)
        settle(args.settle)
        (_, again_charts, again_parts, again_site, again_cpu, again_load,
         again_removed) = timed_build(store, site, mode, cache, models=[])
        add_one(store, n_models, args.replicates)
        # one model added: its part (the one stale partition) and the site, timed --repeat
        # times; the median is reported
        svgs = cached_svgs()
        runs = []
        for attempt in range(args.repeat):
            if attempt:
                forget_svgs(svgs)  # each run renders the new model's charts, as the first did
            settle(args.settle)
            runs.append(timed_build(store, site, mode, cache,
                                    models=[model_spec(n_models).id]))
        plus, plus_charts, plus_parts, plus_site, plus_cpu, plus_load, plus_removed = sorted(
            runs, key=lambda run: run[2] + run[3])[len(runs) // 2]
        result = {"models": n_models, "database_s": round(filled, 1), "settle_s": args.settle,
                  "full_s": round(full_site + full_parts, 2),
                  "unchanged_s": round(again_site + again_parts, 2),
                  "plus_one_s": round(plus_site + plus_parts, 2),
                  "assembled_plus_one": plus.assembled_models,
                  "plus_one_runs_s": [round(run[2] + run[3], 2) for run in runs],
                  "site_s": {"full": full_site, "unchanged": again_site, "plus_one": plus_site},
                  "model_site_s": {"full": full_parts, "unchanged": again_parts,
                                   "plus_one": plus_parts},
                  "charts_s": {"full": full_charts, "unchanged": again_charts,
                               "plus_one": plus_charts},
                  "cpu_s": {"full": full_cpu, "unchanged": again_cpu, "plus_one": plus_cpu},
                  # after the site asset's end, until the previous build was removed
                  "previous_removed_after_s": {"unchanged": again_removed,
                                               "plus_one": plus_removed},
                  "load_1min": {"full": full_load, "unchanged": again_load,
                                "plus_one": plus_load},
                  "pages": full.pages, "files": full.files, "mb": round(full.bytes / 1e6, 1),
                  "largest": [full.largest_file[0], round(full.largest_file[1] / 1e6, 2)],
                  "parts_mb": {k: round(v / 1e6, 2) for k, v in full.sizes.items()},
                  "notes": list(full.notes), "leaderboard_browser": browser,
                  "files_per_part": part_files(site)}
        results.append(result)
        print(json.dumps(result, indent=1), flush=True)
        kept_note = finish(folder, args.keep)
        if kept_note:
            print(kept_note, flush=True)
    print("\n| models | pages | files | size (MB) | largest file (MB) | full build (s) | "
          "unchanged (s) | one model added (s) | previous build removed after (s): unchanged "
          "/ one model added | charts asset: full / unchanged / one model "
          "added (s) | leaderboard: interactive / sort / search (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        cpu, load, web = r["cpu_s"], r["load_1min"], r["leaderboard_browser"] or {}
        charts = r["charts_s"]
        print(f"| {r['models']} | {r['pages']} | {r['files']} | {r['mb']} | {r['largest'][1]} | "
              f"{r['full_s']} (CPU {cpu['full']}, load {load['full']}) | {r['unchanged_s']} | "
              f"{r['plus_one_s']} (CPU {cpu['plus_one']}, load {load['plus_one']}) | "
              f"{r['previous_removed_after_s']['unchanged']} / "
              f"{r['previous_removed_after_s']['plus_one']} | "
              f"{charts['full']} / {charts['unchanged']} / {charts['plus_one']} | "
              f"{web.get('interactive_ms', '–')} / {web.get('sort_ms', '–')} / "
              f"{web.get('search_ms', '–')} |")
    if len(results) >= 2:
        r1, r2 = results[0], results[-1]
        growth = (r2["full_s"] / r1["full_s"]) / (r2["models"] / r1["models"])
        print(f"\nbuild time grew {r2['full_s'] / r1['full_s']:.1f}x for "
              f"{r2['models'] / r1['models']:.0f}x the models ({growth:.2f} of linear)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), "utf-8")
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
