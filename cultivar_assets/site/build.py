"""Building the static site from the DuckDB store.

Pages (all links relative, so the site works from ``file://`` and any static host):
``index.html`` (leaderboard: evaluated and reported, never merged; charts), ``locales.html``
(Tables 4 and 2, Fig. 3), ``locales/<locale>.html`` (instances with changed spans, provenance,
∆ of every model), ``models/<model>.html`` (model card, scores, ∆ per locale, word recall),
``browse.html`` (the segment browser: one page for every model and locale), ``compare.html``
(two models side by side), ``query.html`` (SQL in the browser, DuckDB-Wasm), ``dataset.html``
(the dataset card, Table 1, how the data was built), ``downloads/`` (:mod:`.downloads`) and
``data/`` (the shards the browser pages load: :mod:`.shards`).

What loads when: a page is plain HTML with its tables (sortable and filterable by
``static/cultivar.js``); charts are drawn after the page has loaded, from their spec shards
(the static SVG is there without JavaScript); the segment browser and the compare view load the
index shard, then the locale's shard (sources and references, once per locale) and one shard per
model and locale (its translations); the Query page loads DuckDB-Wasm (7.8 MB compressed) and the
published tables, translations model by model on request.

Every text from the data goes through Jinja2's HTML autoescaping, shards are JSON set into the
page with ``textContent``, and chart specs are drawn by Vega as text, so model names or outputs
such as ``</script>`` stay text. CSV cells go through :func:`cultivar_assets.tables.csv_safe`.

Incremental builds (ours): the build writes a fresh folder and swaps it in
(:func:`cultivar_assets.files.replace_folder`), but takes each model's files (its translation
shards, statistics shard and parquet file) from the previous build when nothing they depend on
has changed: the model's translations (a hash over its rows), the dataset, the originals policy
and the code (every module of the package and every SQL file:
:func:`cultivar_assets.site.incremental.reuse_key`). Pages, table downloads and
chart SVGs whose inputs are unchanged are taken likewise; the rest is written again. A file is
taken only while it is as the previous build wrote it, by hard link when it is read-only with
the mode this build gives its files, else as a copy (:mod:`.incremental`).

The parts: this module is the orchestration (the order of the steps, the two writer threads that
compress and write shards and parquet files beside the Python work, the two reader threads that run
the slowest queries once the published tables are read, the chart SVGs drawn in a child process
where no charts folder is given (the ``charts`` asset's), the static files, the shards and
downloads of the data); :mod:`.site_data` reads the store once; :mod:`.incremental` is the cache;
:mod:`.site_pages` holds every page's context.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cultivar_assets import __version__
from cultivar_assets.data.build_record import public_source
from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name
from cultivar_assets.files import (
    MANIFEST,
    clean_partial_files,
    disk_full_error,
    free_space,
    is_disk_full,
    read_manifest,
    replace_folder,
)
from cultivar_assets.metrics.registry import PAPER_METRICS
from cultivar_assets.site import compare_stats, shards
from cultivar_assets.site import downloads as dl
from cultivar_assets.site.config import default_web_cache
from cultivar_assets.site.downloads import HIDDEN_OUTPUT
from cultivar_assets.site.fonts import font_advice
from cultivar_assets.site.incremental import SITE_FORMAT, Cache
from cultivar_assets.site.pages import TEXTDIFF_STATIC, PageWriter, model_slug
from cultivar_assets.site.query_engine import QueryEngine, query_engine_for_build
from cultivar_assets.site.site_data import (
    chart_inputs,
    delta_digests,
    model_tables,
    page_digests,
    read_site_data,
    translation_digests,
)
from cultivar_assets.site.site_pages import SitePages
from cultivar_assets.site.svg_worker import SvgJob
from cultivar_assets.specs import REPORTED_SOURCE
from cultivar_assets.store.database import Reader, Store
from cultivar_assets.textdiff import mode_for_script

Progress = Callable[[str], None]
PUBLIC_STATIC = ("fonts.css", "style.css", "script-check.js", "cultivar.js", "cultivar-shards.js",
                 *TEXTDIFF_STATIC, "cultivar-csv.js", "cultivar-browse.js", "cultivar-query.js",
                 "favicon.svg")
__all__ = ["HIDDEN_OUTPUT", "MANIFEST", "SiteSummary", "build_site", "chart_inputs",
           "model_slug", "vega_bundle"]



def script_notes(locale_info: dict[str, dict], locales: list[str]) -> dict[str, dict]:
    """Per language code of ``locales`` (the pages' ``lang`` attributes): its name and what to
    install to see its script (site/fonts.py), for the pages' notice when the browser cannot
    draw its text (static/cultivar.js, checkScripts)."""
    return {locale_info[loc]["language"]: {"language": locale_info[loc]["language_name"],
                                           "advice": font_advice(locale_info[loc]["script"])}
            for loc in locales}

@dataclass(frozen=True)
class SiteSummary:
    path: Path
    pages: int
    files: int
    bytes: int
    seconds: float
    models: int
    locales: int
    reused_models: int = 0  # models whose files came from the previous build
    notes: tuple[str, ...] = ()  # what the build left out, and why
    sizes: dict[str, int] = field(default_factory=dict)  # bytes per part of the site
    largest_file: tuple[str, int] = ("", 0)


def build_site(store: Store, out_dir: Path, card_markdown: str | None = None,
               charts_dir: Path | None = None, include_database: bool | None = None,
               show_originals: bool | None = None, progress: Progress | None = None,
               query_page: str = "auto", web_cache: Path | None = None,
               reuse: bool = True) -> SiteSummary:
    """Build the whole site into ``out_dir`` (swapped in only when the build has succeeded).

    ``charts_dir``: charts written by :func:`charts.write_charts` (the ``charts`` asset); without
    it the charts are drawn here. ``show_originals``: show original FLORES sentences (and offer
    them in downloads); ``include_database``: offer a DuckDB file of the published tables. Both
    default to "only for the demo data": the FLORES maintainers ask that FLORES text not be
    re-hosted in crawlable plain form, and a public site is exactly that. ``query_page``: see
    :data:`cultivar_assets.site.config.QueryPageMode`; ``web_cache``: where DuckDB-Wasm and the
    Vega bundle are kept; ``reuse``: take unchanged models' files from the previous build.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    say = progress or (lambda _message: None)
    web_cache = Path(web_cache) if web_cache else default_web_cache()
    # before the store is opened: npm may take a while, and readers block the store's writers
    engine = query_engine_for_build(query_page, web_cache, say)
    vega_bundle(web_cache)
    with store.reader() as reader:
        dataset = (reader.rows("dataset") or [{}])[0]
        demo = bool(dataset.get("is_demo"))
        options = {"show_originals": demo if show_originals is None else show_originals,
                   "include_database": demo if include_database is None else include_database}
        previous = read_manifest(out_dir) if reuse and out_dir.is_dir() else None
        manifest: dict[str, Any] = {"kind": "site", "format": SITE_FORMAT,
                                    "dataset": dataset.get("fingerprint"), **options}
        build = _Build(reader, dataset, options, card_markdown, charts_dir, engine,
                       web_cache, previous, out_dir, manifest, say)
        replace_folder(out_dir, build.write, manifest)
    sizes, largest = dict(sorted(build.writer.sizes.items())), build.writer.largest
    return SiteSummary(out_dir, build.writer.pages, build.writer.files, build.writer.bytes,
                       time.perf_counter() - started, build.models_done, build.n_locales,
                       build.reused, tuple(build.notes), sizes, largest)


def _component(rel: str) -> str:
    """The part of a built site a file belongs to (SiteSummary.sizes)."""
    for prefix, name in (("data/hyp/", "translation shards"), ("data/locales/", "locale shards"),
                         ("data/models/", "model shards"),
                         ("data/stats/", "statistics shards (compare)"),
                         ("data/charts/", "chart specs"),
                         ("data/query/", "query tables"),
                         ("downloads/translations/", "translation parquet"),
                         ("downloads/", "downloads (tables)"),
                         ("static/query/", "query engine (DuckDB-Wasm)"),
                         ("static/vega-bundle.js", "Vega bundle"), ("static/", "static"),
                         ("charts/", "chart SVG and specs")):
        if rel.startswith(prefix):
            return name
    return "pages" if rel.endswith(".html") else "other"


class _Build:
    """One site build: reads the store once, writes the work folder (see :func:`build_site`)."""

    def __init__(self, reader: Reader, dataset: dict, options: dict[str, bool],
                 card_markdown: str | None, charts_dir: Path | None,
                 engine: tuple[QueryEngine | None, str | None], web_cache: Path,
                 previous: dict | None, out_dir: Path, manifest: dict[str, Any],
                 say: Progress) -> None:
        self.reader, self.dataset, self.options = reader, dataset, options
        self.card_markdown, self.charts_dir = card_markdown, charts_dir
        (self.engine, self.engine_note), self.web_cache = engine, web_cache
        self.out_dir, self.manifest, self.say = out_dir, manifest, say
        self.show = options["show_originals"]
        self.cache = Cache(out_dir, previous, manifest, dataset.get("fingerprint"), self.show)
        self.notes: list[str] = []
        self.models_done = self.reused = self.n_locales = 0

    # ---- the build -----------------------------------------------------------------------
    def write(self, work: Path) -> None:
        # without the charts asset's folder, the SVGs are drawn here, in a child process that
        # warms up while the store is read
        self.svg_job = SvgJob() if self.charts_dir is None else None
        # compressing and writing shards and parquet files release the GIL: two threads do it
        # beside the Python work
        self.background = ThreadPoolExecutor(2, thread_name_prefix="site-writer")
        self.reads = ThreadPoolExecutor(2, thread_name_prefix="site-reads")  # DuckDB's
        self.pending: list[Future] = []
        try:
            self._write(work)
        finally:
            if self.svg_job is not None:
                self.svg_job.cancel()
            self.reads.shutdown(wait=True, cancel_futures=True)
            self.background.shutdown(wait=True, cancel_futures=True)

    def _later(self, path: str, make: Callable[[], bytes]) -> None:
        """Write ``make()`` to ``path`` in a worker thread (:meth:`_settle` waits for them)."""
        self.pending.append(self.background.submit(lambda: self.writer.data(path, make())))

    def _settle(self) -> None:
        self.writer.wait_links()
        for future in self.pending:
            future.result()
        self.pending.clear()

    def _write(self, work: Path) -> None:
        # the slowest reads, on cursors of their own (made here, run in the reads pool) once
        # the published tables are read: DuckDB runs them beside the Python work that follows
        # instead of competing with those reads for the cores
        cursors = [self.reader.concurrent() for _ in range(4)]

        def start_reads(published: dict[str, pa.Table]) -> None:
            # what _translations needs first: the translations' digests
            self.digests = self.reads.submit(translation_digests, cursors[0])
            # the pages': the ∆ rows' and the model pages' digests of the published tables
            self.delta_digests = self.reads.submit(delta_digests, cursors[1], published)
            self.page_digests = self.reads.submit(page_digests, cursors[2], published)
            # the instance ids the compare view's bootstrap resamples: a DISTINCT over every
            # statistics row (19 million at 1,000 models)
            self.universe = self.reads.submit(cursors[3].rows, "site_stats_universe")

        self.data = data = read_site_data(self.reader, self.show, start_reads)
        self.n_locales = len(data.present_locales)
        signatures = sorted({(r["bleu_signature"], r["chrf_signature"],
                              r["bleu_tokenizer_sha256"]) for r in data.leaderboard}, key=repr)
        if self.engine_note:
            self.notes.append(self.engine_note)
            self.say(self.engine_note)
        more_signatures = [m for m in data.metrics if m["metric"] not in PAPER_METRICS]
        common = {"version": __version__, "dataset": self.dataset,
                  "data_source": public_source(self.dataset), "signatures": signatures,
                  "more_signatures": more_signatures,
                  "reported_source": REPORTED_SOURCE, "show_originals": self.show,
                  "query_included": self.engine is not None,
                  "script_notes": script_notes(data.locale_info, data.present_locales)}
        self.writer = PageWriter(work, common, component=_component,
                                 link_pool=self.background, own_files=True)
        self.cache.start(self.writer)
        self.say("static files")
        self._static()
        self.say("charts")
        self._charts()
        self.say("published tables")
        self._published()
        self.say("locale shards and pages")
        self._locale_shards()
        self.say("translations")
        self._translations()
        self.say("pages")
        data.page_digests = self.page_digests.result()
        data.delta_digests = self.delta_digests.result()
        SitePages(data, self.cache, dataset=self.dataset, show_originals=self.show,
                  include_database=self.options["include_database"],
                  card_markdown=self.card_markdown, engine=self.engine, notes=self.notes,
                  chart_entries=self.chart_entries, public_segments=self.public_segments,
                  locale_payloads=self.locale_payloads, model_locales=self.model_locales).write()
        self.say("chart SVGs")
        self._chart_svgs()
        self._settle()
        self.manifest["notes"] = self.notes
        self.manifest["files"] = self.writer.records

    def _static(self) -> None:
        self.writer.copy_static(list(PUBLIC_STATIC))
        # copies: a file of the site is never the web cache's own (a change to one is not the
        # other's)
        self.writer.copy(vega_bundle(self.web_cache), "static/vega-bundle.js")
        if self.engine is not None:
            for path in self.engine.files():
                self.writer.copy(path, f"static/query/{path.name}")

    def _charts(self) -> None:
        """Chart specs (shards, JSON) now; SVGs of changed specs in a child process (collected
        by :meth:`_chart_svgs`), unchanged ones from the previous build."""
        from cultivar_assets.site import charts

        if self.charts_dir is not None:
            entries = charts.read_charts(Path(self.charts_dir))
        else:
            data = self.data
            entries = charts.chart_entries(data.leaderboard, data.reported, data.deltas,
                                           data.locale_deltas)
        old = self.cache.previous.get("charts", {})
        self.manifest["charts"] = hashes = {}
        pending = []
        for entry in entries:
            chart_id = entry["id"]
            # serialised once (at 1,000 models a heatmap spec holds 27,000 rows): its digest,
            # its .vl.json and its shard, compressed in a writer thread
            data, key = shards.shard_json(entry["spec"]), f"chart/{chart_id}"
            hashes[chart_id] = digest = hashlib.sha256(data).hexdigest()
            self._later(shards.shard_path(key),
                        lambda key=key, data=data: shards.pack_shard(key, data))
            self.writer.data(f"charts/{chart_id}.vl.json", data)
            svg = f"charts/{chart_id}.svg"
            if not entry.get("static", True):  # drawn by the browser only (charts.py)
                continue
            if self.charts_dir is not None:
                self.writer.copy(Path(self.charts_dir) / f"{chart_id}.svg", svg)
            elif old.get(chart_id) == digest and self.cache.take_later(svg):
                pass  # the previous build's, as it wrote it
            else:
                pending.append((svg, data))
        self.svg_paths = [svg for svg, _ in pending]
        if self.svg_job is not None:
            self.svg_job.submit([data for _, data in pending])
        self.chart_entries = [{k: v for k, v in e.items() if k != "spec"} for e in entries]

    def _chart_svgs(self) -> None:
        svgs = self.svg_job.result() if self.svg_job is not None else []
        for path, svg in zip(self.svg_paths, svgs, strict=True):
            self.writer.text(path, svg)

    def _published(self) -> None:
        self.public_segments = dl.public_segments(self.data.segments, self.show)
        tables = [*self.data.published.items(), ("segments", self.public_segments)]
        for name, table in tables:
            self._later(f"downloads/{name}.parquet", lambda t=table: dl.parquet_bytes(t))
        if self.engine is not None:
            self._later("data/query/published.duckdb.gz",
                        lambda: dl.query_database_gz_bytes(tables))

    def _locale_shards(self) -> None:
        """One shard per locale (sources, references, their word diffs); reused when the
        dataset and policy are unchanged."""
        # locale -> its payload, made when asked for (a locale page whose instances part is
        # taken from the previous build does not need it)
        self.locale_payloads: dict[str, Callable[[], dict]] = {}
        reusable = self.cache.previous.get("locales") == self.data.present_locales
        for locale in self.data.present_locales:
            path = shards.shard_path(f"locale/{locale}")
            old = self.out_dir / path
            if reusable and self.cache.take_later(path):
                self.locale_payloads[locale] = lambda old=old: shards.decode_shard(
                    old.read_bytes())[1]
                continue
            payload = shards.locale_payload(
                locale, self.data.instances[locale], self.show,
                mode_for_script(self.data.locale_info[locale]["script"]))
            data, key = shards.shard_json(payload), f"locale/{locale}"
            self._later(path, lambda key=key, data=data: shards.pack_shard(key, data))
            self.locale_payloads[locale] = lambda payload=payload: payload
        self.manifest["locales"] = self.data.present_locales

    def _translations(self) -> None:
        """Per model: translation shards per locale and the parquet download (or the previous
        build's, when unchanged)."""
        self.data.digests = self.digests.result()
        old = self.cache.previous.get("models", {})
        present = self.cache.previous_files()
        self.manifest["models"] = entries = {}
        self.model_locales: dict[str, list[str]] = {}
        changed = []
        for model_id in self.data.board:
            key = self.data.digests.get(model_id)
            before = old.get(model_id)
            if key and before and before["key"] == key and all(
                    rel in present for rel in before["files"]):
                for rel in before["files"]:
                    self.cache.take_later(rel)
                entries[model_id] = before
                self.model_locales[model_id] = before["locales"]
                self.reused += 1
            elif key:
                changed.append(model_id)
        sources = {}
        if not self.show:
            segments = self.data.segments
            flores = segments.filter(pc.starts_with(segments["test_set"], "flores_"))
            sources = {(t, i): src for t, i, src in zip(
                flores["test_set"].to_pylist(), flores["segment_id"].to_pylist(),
                flores["source"].to_pylist(), strict=True)}
        for model_id, table in model_tables(self.reader, changed):
            entries[model_id] = self._model_files(model_id, table, sources)
            self.model_locales[model_id] = entries[model_id]["locales"]
        for model_id, table in model_tables(self.reader, changed, "site_model_stats"):
            if model_id not in entries:
                continue
            key = f"stats/{entries[model_id]['slug']}"
            payload = compare_stats.stats_payload(model_id, table, shards.FORMAT)
            self._later(shards.shard_path(key), lambda key=key, payload=payload:
                        shards.pack_shard(key, shards.shard_json(payload)))
            entries[model_id]["files"].append(shards.shard_path(key))
        self._bootstrap_shard()
        self.models_done = len(entries)
        if self.options["include_database"]:
            self._settle()  # the parquet files it is made from are written
            self.say("DuckDB download")
            files = [self.writer.root / f"downloads/translations/{entries[m]['slug']}.parquet"
                     for m in self.data.board if m in entries]
            target = self.writer.root / "downloads" / "cultivar.duckdb"
            dl.export_database(self.writer.root / "downloads",
                               [*self.data.published, "segments"], files, target)
            self.writer.counted(os.path.relpath(target, self.writer.root))

    def _bootstrap_shard(self) -> None:
        """The bootstrap's resampling for the compare view (:mod:`.compare_stats`)."""
        settings = (self.reader.rows("site_statistics_settings") or [{}])[0]
        universe = [r["segment_id"] for r in self.universe.result()]
        payload = compare_stats.bootstrap_payload(settings, universe, shards.FORMAT)
        if payload is not None:
            self.writer.data(shards.shard_path("bootstrap"),
                             shards.encode_shard("bootstrap", payload))

    def _model_files(self, model_id: str, table: pa.Table, sources: dict) -> dict:
        slug = model_slug(model_id)
        columns: dict[str, Any] = {name: table[name].to_pylist() for name in (
            "test_set", "segment_id", "hypothesis", "raw_output")}
        # each row's rules as an array of str (shards._output makes it a list): pyarrow's
        # to_pylist of a list<string> column took 50 ms per model, to_numpy 2 ms
        columns["cleaning_rules"] = table["cleaning_rules"].to_numpy(zero_copy_only=False)
        keys = list(zip(columns["test_set"], columns["segment_id"], strict=True))
        hypotheses, raws = columns["hypothesis"], columns["raw_output"]
        if not self.show:  # outputs that repeat a hidden FLORES source are hidden too
            changed = False
            for index, key in enumerate(keys):
                source = sources.get(key)
                if source is not None:
                    hypothesis, raw = dl.public_output(key[0], hypotheses[index], raws[index],
                                                       source, self.show)
                    if hypothesis is not hypotheses[index] or raw is not raws[index]:
                        hypotheses[index], raws[index], changed = hypothesis, raw, True
            if changed:
                table = table.set_column(table.schema.get_field_index("hypothesis"),
                                         "hypothesis", pa.array(hypotheses, pa.string()))
                table = table.set_column(table.schema.get_field_index("raw_output"),
                                         "raw_output", pa.array(raws, pa.string()))
        by_key = dict(zip(keys, zip(hypotheses, raws, columns["cleaning_rules"], strict=True),
                          strict=True))
        sets = []
        for locale in self.data.present_locales:
            info = self.data.locale_info[locale]
            sets.append((locale, self.data.instance_ids[locale],
                         flores_test_set_name(info["flores_plus_code"]),
                         cultivar_test_set_name(locale)))
        payload = shards.hyp_payload(model_id, sets, by_key)
        files, locales = [], [entry[0] for entry in payload["locales"]]
        if locales:
            key = f"hyp/{slug}"
            path, data = shards.shard_path(key), shards.shard_json(payload)
            self._later(path, lambda: shards.pack_shard(key, data))
            files.append(path)
        parquet = f"downloads/translations/{slug}.parquet"
        published = dl.translations_table(table)
        self._later(parquet, lambda: dl.parquet_bytes(published))
        files.append(parquet)
        return {"key": self.data.digests[model_id], "slug": slug, "locales": locales,
                "files": files}


def vega_bundle(cache: Path) -> Path:
    """Vega, Vega-Lite and vega-embed in one script (``vl_convert.javascript_bundle()``),
    generated once per vl-convert version into the web cache (it takes seconds).

    It is written to ``vega-bundle.<pid>.partial`` and renamed into place; a partial file of a
    process that is no longer running (a killed build) is removed first. On a full disk this
    raises :class:`~cultivar_assets.files.DiskFullError` naming the bundle's path and the space
    left on its filesystem, and leaves no partial file."""
    version = importlib.metadata.version("vl-convert-python")
    path = Path(cache) / f"vl-convert-{version}" / "vega-bundle.js"
    clean_partial_files(path.parent, "vega-bundle")
    if not path.is_file():
        import vl_convert

        bundle = vl_convert.javascript_bundle().encode("utf-8")
        partial = path.with_suffix(f".{os.getpid()}.partial")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(bundle)
            partial.replace(path)
        except OSError as error:
            full = is_disk_full(error)
            free = free_space(path) if full else None  # before the partial file goes
            partial.unlink(missing_ok=True)
            if full:
                raise disk_full_error(path, f"the web cache {cache} is as it was, with no "
                                      "partial file left", error, needed=len(bundle),
                                      free=free) from error
            raise
    return path
