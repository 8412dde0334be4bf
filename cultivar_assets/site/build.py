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

Every build renders every page and shard in full, except each model's part (its translations
shard, its statistics shard, its translations download and its scores and cleaning table
downloads: :mod:`.model_part`, most of the site's bytes), which is taken from a folder of its
own where ``model_parts`` names one (the asset ``model_site``, one partition per model, writes
them; Dagster's stale status decides when), its files hard-linked into the site (copied where
the filesystem refuses a link: counted in :class:`SiteSummary`, the reason in its notes), and
made here from the store's rows otherwise.
Either way the files are the same bytes. The locale shards (sources, references and their word
diffs: the dataset's alone) likewise come from a folder of their own where ``locale_shards``
names one (the asset ``locale_shards``: :mod:`.locale_shards`), hard-linked, and are made here
otherwise.

The parts: this module is the orchestration (the order of the steps, the two writer threads that
compress and write shards and parquet files beside the Python work, the model pages written by a
forked child beside this process (:class:`.pages.SharedItems`), the chart SVGs drawn in a
child process where no charts folder is given (the ``charts`` asset's), the static files, the
shards and downloads of the data); :mod:`.site_data` reads the store once; :mod:`.model_part`
is a model's part; :mod:`.site_pages` holds every page's context.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultivar_assets import __version__
from cultivar_assets.data.build_record import public_source
from cultivar_assets.files import (
    MANIFEST,
    clean_partial_files,
    disk_full_error,
    free_space,
    is_disk_full,
    manifest_bytes,
    replace_folder,
)
from cultivar_assets.metrics.registry import PAPER_METRICS
from cultivar_assets.site import compare_stats, shards
from cultivar_assets.site import downloads as dl
from cultivar_assets.site.config import default_web_cache
from cultivar_assets.site.downloads import HIDDEN_OUTPUT
from cultivar_assets.site.fonts import font_advice
from cultivar_assets.site.locale_shards import LocaleShardsError, read_locale_shards
from cultivar_assets.site.locale_shards import made_from as locale_made_from
from cultivar_assets.site.locale_shards import shard_files as locale_shard_files
from cultivar_assets.site.model_part import (
    ModelPartError,
    dataset_view,
    model_files,
    part_sources,
    read_model_part,
    stats_file,
)
from cultivar_assets.site.pages import TEXTDIFF_STATIC, PageWriter, model_slug, tree_digest
from cultivar_assets.site.query_engine import QueryEngine, query_engine_for_build
from cultivar_assets.site.site_data import (
    OWN_MODEL_TABLES,
    chart_inputs,
    model_tables,
    read_site_data,
)
from cultivar_assets.site.site_pages import SitePages
from cultivar_assets.site.svg_worker import SvgJob
from cultivar_assets.specs import REPORTED_SOURCE
from cultivar_assets.store.database import Reader, Store

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
    assembled_models: int = 0  # models whose part came from a folder of its own (model_parts)
    linked_files: int = 0  # the assembled parts' files hard-linked into the site
    copied_files: int = 0  # ... copied where the filesystem refused a link (notes say why)
    notes: tuple[str, ...] = ()  # what the build left out, and why
    sizes: dict[str, int] = field(default_factory=dict)  # bytes per part of the site
    largest_file: tuple[str, int] = ("", 0)
    # the sha256 of the built folder (as versions.rows.folder_digest of it), from the digests
    # of the bytes the build wrote and of the parts' files as their manifests record them
    digest: str = ""


def build_site(store: Store, out_dir: Path, card_markdown: str | None = None,
               charts_dir: Path | None = None, include_database: bool | None = None,
               show_originals: bool | None = None, progress: Progress | None = None,
               query_page: str = "auto", web_cache: Path | None = None,
               model_parts: Mapping[str, Path] | None = None,
               locale_shards: Path | None = None,
               detach_removal: bool = False) -> SiteSummary:
    """Build the whole site into ``out_dir`` (swapped in only when the build has succeeded).

    ``charts_dir``: charts written by :func:`charts.write_charts` (the ``charts`` asset); without
    it the charts are drawn here. ``show_originals``: show original FLORES sentences (and offer
    them in downloads); ``include_database``: offer a DuckDB file of the published tables. Both
    default to "only for the demo data": the FLORES maintainers ask that FLORES text not be
    re-hosted in crawlable plain form, and a public site is exactly that. ``query_page``: see
    :data:`cultivar_assets.site.config.QueryPageMode`; ``web_cache``: where DuckDB-Wasm and the
    Vega bundle are kept; ``model_parts``: model id -> the folder of its part
    (:func:`.model_part.write_model_part`), taken instead of made here (a part made from other
    rows than the store holds is refused: :func:`.model_part.read_model_part`);
    ``locale_shards``: the folder of the locale shards (:mod:`.locale_shards`), hard-linked
    instead of made here (shards made from another dataset or policy than the store holds are
    refused: :func:`.locale_shards.read_locale_shards`); ``detach_removal``: the previous build
    removed by a detached process after the swap (:func:`cultivar_assets.files.replace_folder`).
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
        manifest: dict[str, Any] = {"kind": "site", "dataset": dataset.get("fingerprint"),
                                    **options}
        build = _Build(reader, dataset, options, card_markdown, charts_dir, engine,
                       web_cache, model_parts, manifest, say, locale_shards)
        replace_folder(out_dir, build.write, manifest, detach_removal=detach_removal)
    sizes, largest = dict(sorted(build.writer.sizes.items())), build.writer.largest
    digests = {**build.writer.digests,
               MANIFEST: hashlib.sha256(manifest_bytes(manifest)).digest()}
    return SiteSummary(out_dir, build.writer.pages, build.writer.files, build.writer.bytes,
                       time.perf_counter() - started, build.models_done, build.n_locales,
                       build.assembled, build.linked, build.copied, tuple(build.notes), sizes,
                       largest, tree_digest(digests))


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
                 model_parts: Mapping[str, Path] | None, manifest: dict[str, Any],
                 say: Progress, locale_shards: Path | None = None) -> None:
        self.reader, self.dataset, self.options = reader, dataset, options
        self.card_markdown, self.charts_dir = card_markdown, charts_dir
        (self.engine, self.engine_note), self.web_cache = engine, web_cache
        self.model_parts = dict(model_parts or {})
        self.locale_folder = None if locale_shards is None else os.fspath(locale_shards)
        self.locale_links: list[Future] = []  # the locale shards linked (_locale_shards)
        self.manifest, self.say = manifest, say
        self.show = options["show_originals"]
        self.notes: list[str] = []
        self.models_done = self.assembled = self.n_locales = self.linked = self.copied = 0

    # ---- the build -----------------------------------------------------------------------
    def write(self, work: Path) -> None:
        # without the charts asset's folder, the SVGs are drawn here, in a child process that
        # warms up while the store is read
        self.svg_job = SvgJob() if self.charts_dir is None else None
        # compressing and writing shards and parquet files release the GIL: two threads do it
        # beside the Python work
        self.background = ThreadPoolExecutor(2, thread_name_prefix="site-writer")
        self.pending: list[Future] = []
        self.links: list[Future] = []  # the parts' files linked (_link_part)
        self.part_folders: list[tuple[str, str, tuple[int, int] | None]] = []  # (model, folder, id)
        try:
            self._write(work)
        finally:
            if self.svg_job is not None:
                self.svg_job.cancel()
            self.background.shutdown(wait=True, cancel_futures=True)

    def _later(self, path: str, make: Callable[[], bytes]) -> None:
        """Write ``make()`` to ``path`` in a worker thread (:meth:`_settle` waits for them)."""
        self.pending.append(self.background.submit(lambda: self.writer.data(path, make())))

    def _settle(self) -> None:
        for future in self.pending:
            future.result()
        self.pending.clear()

    def _write(self, work: Path) -> None:
        self.data = data = read_site_data(self.reader, self.show)
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
        self.writer = PageWriter(work, common, component=_component)
        self.say("translations")
        self._translations()
        self.say("pages")
        pages = SitePages(data, self.writer, dataset=self.dataset, show_originals=self.show,
                          include_database=self.options["include_database"],
                          card_markdown=self.card_markdown, engine=self.engine,
                          notes=self.notes, chart_entries=None, public_segments=None,
                          locale_payloads=None, models=self.models)
        # a child begins the model pages (they need the models' parts alone) beside the steps
        # below, whose results the other pages take
        pages.start_model_pages()
        try:
            self.say("static files")
            self._static()
            self.say("charts")
            self._charts()
            self.say("published tables")
            self._published()
            self._database()
            self.say("locale shards and pages")
            self._locale_shards()
            pages.chart_entries, pages.public_segments = self.chart_entries, self.public_segments
            pages.locale_payloads = self.locale_payloads
            pages.write()
        finally:
            pages.cancel()
        self.say("chart SVGs")
        self._chart_svgs()
        self._settle()
        self._count_links()
        self.manifest["notes"] = self.notes

    def _static(self) -> None:
        self.writer.copy_static(list(PUBLIC_STATIC))
        # copies: a file of the site is never the web cache's own (a change to one is not the
        # other's)
        self.writer.copy(vega_bundle(self.web_cache), "static/vega-bundle.js")
        if self.engine is not None:
            for path in self.engine.files():
                self.writer.copy(path, f"static/query/{path.name}")

    def _charts(self) -> None:
        """Chart specs (shards, JSON) now; the SVGs copied from the charts folder, or drawn in a
        child process (collected by :meth:`_chart_svgs`) where none is given."""
        from cultivar_assets.site import charts

        if self.charts_dir is not None:
            entries = charts.read_charts(Path(self.charts_dir))
        else:
            data = self.data
            entries = charts.chart_entries(data.leaderboard, data.reported, data.deltas,
                                           data.locale_deltas)
        pending = []
        for entry in entries:
            chart_id = entry["id"]
            # serialised once (at 1,000 models a heatmap spec holds 27,000 rows): its .vl.json
            # and its shard, compressed in a writer thread
            data, key = shards.shard_json(entry["spec"]), f"chart/{chart_id}"
            self._later(shards.shard_path(key),
                        lambda key=key, data=data: shards.pack_shard(key, data))
            self.writer.data(f"charts/{chart_id}.vl.json", data)
            svg = f"charts/{chart_id}.svg"
            if not entry.get("static", True):  # drawn by the browser only (charts.py)
                continue
            if self.charts_dir is not None:
                self.writer.copy(Path(self.charts_dir) / f"{chart_id}.svg", svg)
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
        """One shard per locale (sources, references, their word diffs): hard-linked from the
        ``locale_shards`` folder where one is given (checked against the database first:
        :func:`.locale_shards.read_locale_shards`; the locale pages' texts decoded from its
        files), else made here."""
        self.locale_payloads: dict[str, dict] = {}
        data = self.data
        scripts = {loc: data.locale_info[loc]["script"] for loc in data.present_locales}
        if self.locale_folder is not None:
            folder = self.locale_folder
            self.locale_identity = _identity(folder)
            found = read_locale_shards(folder, locale_made_from(self.dataset, scripts, self.show))
            for path in found["files"]:
                with open(os.path.join(folder, path), "rb") as handle:
                    payload = shards.decode_shard(handle.read())[1]
                self.locale_payloads[payload["locale"]] = payload
            self.locale_links.append(self.background.submit(self._link_part, folder, found))
            self.pending.append(self.locale_links[-1])
            return
        instances = {loc: data.instances[loc] for loc in data.present_locales}
        for path, (payload, content) in locale_shard_files(instances, scripts, self.show).items():
            self.writer.data(path, content)
            self.locale_payloads[payload["locale"]] = payload

    def _translations(self) -> None:
        """Every model's part (:mod:`.model_part`): taken from its folder where ``model_parts``
        names one (checked against the database: :func:`~.model_part.read_model_part`), else
        made here from the store's rows, one model at a time."""
        data = self.data
        view = dataset_view(data.instance_ids, data.locale_info, data.segments, self.show)
        self.models: dict[str, dict] = {}
        sources = part_sources(self.reader, self.show)  # the models with translations
        on_board = [m for m in data.board if m in sources]
        made_from = {m: sources[m] for m in on_board if m in self.model_parts}
        taken = [m for m in on_board if m in made_from]

        def checked(model_id: str) -> tuple[str, tuple[int, int] | None, dict[str, Any]]:
            folder = os.fspath(self.model_parts[model_id])
            # the folder as its manifest is read: the same one once its files are linked
            # (_count_links), or the build fails (a part replaced meanwhile)
            identity = _identity(folder)
            return folder, identity, read_model_part(folder, model_id, made_from[model_id])

        # the manifests read and checked by threads (file system calls, beside each other), in
        # the leaderboard's order: the first part refused is the first in that order
        with ThreadPoolExecutor(4, thread_name_prefix="site-parts") as readers:
            for model_id, (folder, identity, part) in zip(taken, readers.map(checked, taken),
                                                          strict=True):
                self.part_folders.append((model_id, folder, identity))
                # hard links (a part's folder is replaced whole), made by the writer threads
                # (system calls: beside the Python work); counted by _count_links
                self.links.append(self.background.submit(self._link_part, folder, part))
                self.pending.append(self.links[-1])
                self.models[model_id] = {k: part[k] for k in ("slug", "locales", "files")}
                self.assembled += 1
        made = [m for m in on_board if m not in made_from]
        own = data.model_rows(set(made), tuple(OWN_MODEL_TABLES))
        # translations of every model, then statistics of every model (one query at a time on
        # the reader)
        for model_id, table in model_tables(self.reader, made):
            entry, makers = model_files(model_id, table, None, view,
                                        {name: own[name].get(model_id, []) for name in own})
            for path, make in makers.items():
                self._later(path, make)
            self.models[model_id] = entry
        for model_id, table in model_tables(self.reader, made, "site_model_stats"):
            if model_id in self.models:
                path, make = stats_file(model_id, table)
                self._later(path, make)
                self.models[model_id]["files"].append(path)
        # in the leaderboard's order, whichever way each part came
        self.models = {m: self.models[m] for m in data.board if m in self.models}
        self._bootstrap_shard()
        self.models_done = len(self.models)

    def _database(self) -> None:
        """The DuckDB download (``include_database``), from the published tables' and the
        models' parquet files."""
        if self.options["include_database"]:
            self._settle()  # the parquet files it is made from are written
            self.say("DuckDB download")
            files = [self.writer.root / f"downloads/translations/{entry['slug']}.parquet"
                     for entry in self.models.values()]
            target = self.writer.root / "downloads" / "cultivar.duckdb"
            dl.export_database(self.writer.root / "downloads",
                               [*self.data.published, "segments"], files, target)
            self.writer.counted(os.path.relpath(target, self.writer.root))

    def _link_part(self, folder: str, part: dict[str, Any]) -> list[str | None]:
        """A part's files into the site: hard-linked, or copied where the filesystem refuses a
        link (:meth:`PageWriter.link`), each with its sha256 as the part's manifest records
        it; per file, None or why it was copied."""
        return [self.writer.link(os.path.join(folder, rel), rel,
                                 bytes.fromhex(part["digests"][rel])) for rel in part["files"]]

    def _count_links(self) -> None:
        """Count the parts' files linked and copied (:meth:`_link_part`, all done), and note
        the first reason for a copy. A part's folder replaced since its manifest was read (its
        ``model_site`` partition written while the site was built) fails the build: its files
        and the recorded digests could come from two different writes."""
        jobs = [job.result() for job in self.links]
        locale_jobs = [job.result() for job in self.locale_links]
        if self.locale_folder is not None and _identity(self.locale_folder) != (
                self.locale_identity):
            raise LocaleShardsError(
                f"{self.locale_folder}: the locale shards were replaced while the site was "
                "built (locale_shards ran meanwhile); build the site again")
        for reasons in locale_jobs:
            for reason in reasons:
                if reason is not None:
                    note = f"locale shards copied, not hard-linked: {reason}"
                    self.notes.append(note)
                    self.say(note)
                    break
        for model_id, folder, identity in self.part_folders:
            if _identity(folder) != identity:
                raise ModelPartError(
                    f"model {model_id!r}: its part {folder} was replaced while the site was "
                    f"built (its model_site partition ran meanwhile); build the site again")
        for reasons in jobs:
            for reason in reasons:
                if reason is None:
                    self.linked += 1
                    continue
                self.copied += 1
                if self.copied == 1:
                    note = f"model parts' files copied, not hard-linked: {reason}"
                    self.notes.append(note)
                    self.say(note)

    def _bootstrap_shard(self) -> None:
        """The bootstrap's resampling for the compare view (:mod:`.compare_stats`)."""
        settings = (self.reader.rows("site_statistics_settings") or [{}])[0]
        universe = [r["segment_id"] for r in self.reader.rows("site_stats_universe")]
        payload = compare_stats.bootstrap_payload(settings, universe, shards.FORMAT)
        if payload is not None:
            self.writer.data(shards.shard_path("bootstrap"),
                             shards.encode_shard("bootstrap", payload))


def _identity(folder: str) -> tuple[int, int] | None:
    """(device, inode) of ``folder``, None where there is none: a folder replaced whole
    (``files.replace_folder``) has another."""
    try:
        found = os.stat(folder)
    except FileNotFoundError:
        return None  # read_model_part says so
    return found.st_dev, found.st_ino


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
