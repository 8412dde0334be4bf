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
shards and parquet file) from the previous build by hard link when nothing they depend on has
changed: the model's translations (a hash over its rows), the dataset, the originals policy and
the code that writes them (:func:`reuse_key`). Everything that depends on several models
(leaderboard, charts, locale pages) is written again; chart SVGs are reused when their spec is
unchanged.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from markupsafe import Markup, escape

from cultivar_assets import __version__, textdiff
from cultivar_assets.data.build_record import method_lead, method_sections, table1_scope
from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name
from cultivar_assets.files import MANIFEST, read_manifest, replace_folder
from cultivar_assets.site import diff, shards
from cultivar_assets.site import downloads as dl
from cultivar_assets.site.config import default_web_cache
from cultivar_assets.site.downloads import HIDDEN_OUTPUT
from cultivar_assets.site.failures import failure_rows
from cultivar_assets.site.pages import TEXTDIFF_STATIC, PageWriter, model_slug
from cultivar_assets.site.query_engine import QueryEngine, query_engine_for_build
from cultivar_assets.site.svg_worker import SvgJob
from cultivar_assets.specs import REPORTED_SOURCE
from cultivar_assets.sqlfiles import statement_text
from cultivar_assets.store.database import Reader, Store
from cultivar_assets.tables import csv_text, json_text
from cultivar_assets.textdiff import mode_for_script

Progress = Callable[[str], None]
SITE_FORMAT = 2  # the site's layout; a change rebuilds every file
HIDDEN_ORIGINAL = ("Original FLORES text not shown on public pages (the FLORES maintainers ask "
                   "that it not be re-hosted); its localised counterpart is on the right, "
                   "changes highlighted.")
# The Query page's examples: (named block of sql/query_examples.sql, title).
QUERY_EXAMPLES = (
    ("example_table3", "Table 3: the leaderboard, by ∆BLEU"),
    ("example_table4", "Table 4: ∆ per locale, averaged over models"),
    ("example_table2", "Table 2: rank agreement between FLORES and Cultivar"),
    ("example_table1", "Table 1: post-editing statistics (where annotation files were ingested)"),
    ("example_figure3", "Figure 3: the same language, official and not"),
    ("example_worst_locale", "Each model's worst locale and its number of negative ∆"),
    ("example_evaluated_vs_reported", "Evaluated here against reported in the paper"),
    ("example_translations", "Translations (load some models below first)"),
)
PUBLIC_STATIC = ("fonts.css", "style.css", "cultivar.js", "cultivar-shards.js", *TEXTDIFF_STATIC,
                 "cultivar-csv.js", "cultivar-browse.js", "cultivar-query.js", "favicon.svg")
__all__ = ["HIDDEN_OUTPUT", "MANIFEST", "SiteSummary", "build_site", "chart_inputs",
           "component_sizes", "model_slug", "reuse_key", "vega_bundle"]


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


def _reported_csv(name: str) -> list[dict[str, str]]:
    import csv
    import io

    text = resources.files("cultivar_assets.data").joinpath("reported", name).read_text("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _chart_inputs(reader: Reader) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    locale_info = {row["locale"]: row for row in reader.rows("site_locales")}
    styles = {row["model_id"]: row["prompt_style"] for row in reader.rows("site_models")}
    locale_deltas = [{**row, "location_short": locale_info[row["locale"]]["location_short"],
                      "language_name": locale_info[row["locale"]]["language_name"]}
                     for row in reader.rows("site_locale_deltas")]
    leaderboard = [{**row, "prompt_style": styles.get(row["model_id"])}
                   for row in reader.rows("leaderboard")]
    return (leaderboard, reader.rows("site_reported_leaderboard"),
            reader.rows("site_model_locale_deltas"), locale_deltas)


def chart_inputs(store: Store) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """What the charts are drawn from: leaderboard, reported results, ∆ rows, locale rows."""
    with store.reader() as reader:
        return _chart_inputs(reader)


def reuse_key(dataset_fingerprint: str | None, show_originals: bool) -> str:
    """What every per-model file depends on besides the model's own rows (module docstring)."""
    code = b"".join(Path(module.__file__).read_bytes()
                    for module in (shards, dl, diff, textdiff))
    parts = [SITE_FORMAT, shards.FORMAT, dataset_fingerprint, show_originals, duckdb.__version__,
             hashlib.sha256(code).hexdigest()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


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
    sizes, largest = component_sizes(out_dir)
    return SiteSummary(out_dir, build.writer.pages, build.writer.files, build.writer.bytes,
                       time.perf_counter() - started, build.models_done, build.n_locales,
                       build.reused, tuple(build.notes), sizes, largest)


def component_sizes(folder: Path) -> tuple[dict[str, int], tuple[str, int]]:
    """Bytes per part of a built site (pages, shards, downloads, engine, ...) and its largest
    file."""
    parts: dict[str, int] = defaultdict(int)
    largest = ("", 0)
    for path, _dirs, files in os.walk(folder):
        for name in files:
            full = Path(path) / name
            rel = full.relative_to(folder).as_posix()
            size = full.stat().st_size
            parts[_component(rel)] += size
            if size > largest[1]:
                largest = (rel, size)
    return dict(sorted(parts.items())), largest


def _component(rel: str) -> str:
    for prefix, name in (("data/hyp/", "translation shards"), ("data/locales/", "locale shards"),
                         ("data/models/", "model shards"), ("data/charts/", "chart specs"),
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
        self.key = reuse_key(dataset.get("fingerprint"), self.show)
        self.templates = _template_digest(*TEMPLATES)
        manifest["reuse_key"] = self.key
        usable = previous is not None and previous.get("reuse_key") == self.key
        self.previous = previous if usable else {}
        self.notes: list[str] = []
        self.models_done = self.reused = self.n_locales = 0

    # ---- reading -------------------------------------------------------------------------
    def _read(self) -> None:
        r = self.reader
        self.views = {row["view_name"] for row in r.rows("site_views")}
        self.leaderboard, self.reported, self.deltas, self.locale_deltas = _chart_inputs(r)
        self.locales = r.rows("site_locales")
        self.locale_info = {row["locale"]: row for row in self.locales}
        self.agreement = r.rows("site_rank_agreement")
        self.models = {row["model_id"]: row for row in r.rows("site_models")}
        self.published = {t.name: r.arrow(t.query) for t in dl.PUBLISHED_TABLES
                          if t.name != "annotation_summary" or "annotation_summary" in self.views}
        self.scores = self.published["scores"].to_pylist()
        self.recall = self.published["word_recall"].to_pylist()
        self.cleaning = self.published["cleaning_counts"].to_pylist()
        self.missing = self.published["missing_test_sets"].to_pylist()
        self.annotation_summary = (self.published["annotation_summary"].to_pylist()
                                   if "annotation_summary" in self.published else [])
        self.annotations: dict[str, dict[int, dict]] = defaultdict(dict)
        if "annotations" in self.views:
            for row in r.rows("site_annotations"):
                self.annotations[row["locale"]][row["instance_id"]] = _provenance(row, self.show)
        # statistics and the error analysis (issue 11): intervals and ranks are columns of the
        # rows above; these views are what the statistics_macros.html.j2 blocks show
        self.statistics = {name: r.rows(f"site_{name}") if name in self.views else []
                           for name in STATISTICS_VIEWS}
        self.instances: dict[str, list[dict]] = defaultdict(list)
        for row in r.rows("instances"):
            self.instances[row["locale"]].append(row)
        self.present_locales = sorted(self.instances)
        self.instance_ids = {locale: [inst["instance_id"] for inst in items]
                             for locale, items in self.instances.items()}
        self.n_locales = len(self.present_locales)
        self.segments = r.arrow("site_segments")
        self.board = {row["model_id"]: row for row in self.leaderboard}
        self.failed = failure_rows(r.rows("site_failed_models"), set(self.board))
        self.digests = {row["model_id"]: f"{row['n_rows']}:{row['digest']}"
                        for row in r.rows("site_translation_digests")}

    # ---- the build -----------------------------------------------------------------------
    def write(self, work: Path) -> None:
        self.svg_job = SvgJob(start=self.charts_dir is None)  # warms up while the store is read
        # compressing and writing shards and parquet files release the GIL: two threads do it
        # beside the Python work
        self.background = ThreadPoolExecutor(2, thread_name_prefix="site-writer")
        self.pending: list[Future] = []
        try:
            self._write(work)
        finally:
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
        self._read()
        signatures = sorted({(r["bleu_signature"], r["chrf_signature"],
                              r["bleu_tokenizer_sha256"]) for r in self.leaderboard}, key=repr)
        if self.engine_note:
            self.notes.append(self.engine_note)
            self.say(self.engine_note)
        common = {"version": __version__, "dataset": self.dataset, "signatures": signatures,
                  "reported_source": REPORTED_SOURCE, "show_originals": self.show,
                  "query_included": self.engine is not None}
        self.writer = PageWriter(work, common)
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
        self._pages()
        self.say("chart SVGs")
        self._chart_svgs()
        self._settle()
        self.manifest["notes"] = self.notes

    def _static(self) -> None:
        self.writer.copy_static(list(PUBLIC_STATIC))
        self.writer.link(vega_bundle(self.web_cache), "static/vega-bundle.js")
        if self.engine is not None:
            for path in self.engine.files():
                self.writer.link(path, f"static/query/{path.name}")

    def _charts(self) -> None:
        """Chart specs (shards, JSON) now; SVGs of changed specs in a child process (collected
        by :meth:`_chart_svgs`), unchanged ones from the previous build."""
        from cultivar_assets.site import charts

        if self.charts_dir is not None:
            entries = charts.read_charts(Path(self.charts_dir))
        else:
            entries = charts.chart_entries(self.leaderboard, self.reported, self.deltas,
                                           self.locale_deltas)
        old = self.previous.get("charts", {})
        self.manifest["charts"] = hashes = {}
        pending = []
        for entry in entries:
            chart_id = entry["id"]
            hashes[chart_id] = digest = charts.spec_hash(entry["spec"])
            self.writer.data(shards.shard_path(f"chart/{chart_id}"),
                             shards.encode_shard(f"chart/{chart_id}", entry["spec"]))
            self.writer.text(f"charts/{chart_id}.vl.json", json.dumps(entry["spec"]))
            svg = f"charts/{chart_id}.svg"
            if self.charts_dir is not None:
                self.writer.copy(Path(self.charts_dir) / f"{chart_id}.svg", svg)
            elif old.get(chart_id) == digest and (self.out_dir / svg).is_file():
                self.writer.link(self.out_dir / svg, svg)
            else:
                pending.append(entry)
        self.svg_paths = [f"charts/{entry['id']}.svg" for entry in pending]
        self.svg_job.submit([entry["spec"] for entry in pending])
        self.chart_entries = [{k: v for k, v in e.items() if k != "spec"} for e in entries]

    def _chart_svgs(self) -> None:
        for path, svg in zip(self.svg_paths, self.svg_job.result(), strict=True):
            self.writer.text(path, svg)

    def _published(self) -> None:
        self.public_segments = dl.public_segments(self.segments, self.show)
        tables = [*self.published.items(), ("segments", self.public_segments)]
        for name, table in tables:
            self._later(f"downloads/{name}.parquet", lambda t=table: dl.parquet_bytes(t))
            if self.engine is not None:
                self._later(f"data/query/{name}.arrow.gz", lambda t=table: dl.ipc_gz_bytes(t))
        board = self.published["leaderboard"]  # with latest_run_failed (sql/site.sql)
        rows = board.to_pylist()
        self.writer.text("downloads/leaderboard.csv", csv_text(rows, board.column_names))
        self.writer.text("downloads/leaderboard.json", json_text(rows, board.column_names))

    def _locale_shards(self) -> None:
        """One shard per locale (sources, references, their word diffs); reused when the
        dataset and policy are unchanged."""
        self.locale_payloads: dict[str, dict] = {}
        reusable = self.previous.get("locales") == self.present_locales
        for locale in self.present_locales:
            path = shards.shard_path(f"locale/{locale}")
            old = self.out_dir / path
            if reusable and old.is_file():
                self.writer.link(old, path)
                self.locale_payloads[locale] = shards.decode_shard(old.read_bytes())[1]
                continue
            payload = shards.locale_payload(
                locale, self.instances[locale], self.show,
                mode_for_script(self.locale_info[locale]["script"]))
            data, key = shards.shard_json(payload), f"locale/{locale}"
            self._later(path, lambda key=key, data=data: shards.pack_shard(key, data))
            self.locale_payloads[locale] = payload
        self.manifest["locales"] = self.present_locales

    def _translations(self) -> None:
        """Per model: translation shards per locale and the parquet download (or the previous
        build's, when unchanged)."""
        old = self.previous.get("models", {})
        self.manifest["models"] = entries = {}
        self.model_locales: dict[str, list[str]] = {}
        changed = []
        for model_id in self.board:
            key = self.digests.get(model_id)
            before = old.get(model_id)
            if key and before and before["key"] == key and all(
                    (self.out_dir / rel).is_file() for rel in before["files"]):
                for rel in before["files"]:
                    self.writer.link(self.out_dir / rel, rel)
                entries[model_id] = before
                self.model_locales[model_id] = before["locales"]
                self.reused += 1
            elif key:
                changed.append(model_id)
        sources = {}
        if not self.show:
            flores = self.segments.filter(pc.starts_with(self.segments["test_set"], "flores_"))
            sources = {(t, i): src for t, i, src in zip(
                flores["test_set"].to_pylist(), flores["segment_id"].to_pylist(),
                flores["source"].to_pylist(), strict=True)}
        for model_id, table in _model_tables(self.reader, changed):
            entries[model_id] = self._model_files(model_id, table, sources)
            self.model_locales[model_id] = entries[model_id]["locales"]
        self.models_done = len(entries)
        self._settle()
        if self.options["include_database"]:
            self.say("DuckDB download")
            files = [self.writer.root / f"downloads/translations/{entries[m]['slug']}.parquet"
                     for m in self.board if m in entries]
            target = self.writer.root / "downloads" / "cultivar.duckdb"
            dl.export_database(self.writer.root / "downloads", files, target)
            self.writer.counted(target)

    def _model_files(self, model_id: str, table: pa.Table, sources: dict) -> dict:
        slug = model_slug(model_id)
        columns = {name: table[name].to_pylist() for name in (
            "test_set", "segment_id", "hypothesis", "raw_output", "cleaning_rules")}
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
        files, locales = [], []
        for locale in self.present_locales:
            info = self.locale_info[locale]
            cultivar = cultivar_test_set_name(locale)
            flores = flores_test_set_name(info["flores_plus_code"])
            ids = self.instance_ids[locale]
            payload = shards.hyp_payload(model_id, locale, ids, flores, cultivar, by_key)
            if not payload["items"]:
                continue
            path = shards.shard_path(f"hyp/{slug}/{locale}")
            data, key = shards.shard_json(payload), f"hyp/{slug}/{locale}"
            self._later(path, lambda key=key, data=data: shards.pack_shard(key, data))
            files.append(path)
            locales.append(locale)
        parquet = f"downloads/translations/{slug}.parquet"
        published = dl.translations_table(table)
        self._later(parquet, lambda: dl.parquet_bytes(published))
        files.append(parquet)
        return {"key": self.digests[model_id], "slug": slug, "locales": locales, "files": files}

    # ---- pages ---------------------------------------------------------------------------
    def _unchanged(self, path: str, key: str) -> bool:
        """Record ``key`` for ``path``; link the previous build's file when it had the same key
        (the same inputs: the same bytes)."""
        outputs = self.manifest.setdefault("outputs", {})
        if path in outputs:
            raise ValueError(f"the site build writes {path} twice")
        outputs[path] = key
        old = self.out_dir / path
        if self.previous.get("outputs", {}).get(path) == key and old.is_file():
            self.writer.link(old, path)
            return True
        return False

    def _key(self, *parts: Any) -> str:
        blob = json.dumps([self.key, self.templates, self.writer.common, parts],
                          sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _page(self, path: str, template: str, keyed_by: dict | None = None,
              **context: Any) -> None:
        """A page, rendered only when its template or data changed since the previous build
        (``keyed_by``: what stands for the context in that comparison, when it is cheaper)."""
        key = self._key(path, template, context if keyed_by is None else keyed_by)
        if self._unchanged(path, key):
            self.writer.pages += 1
        else:
            self.writer.page(path, template, **context)

    def _table(self, name: str, rows: list[dict], columns: list[str] | None = None) -> dict:
        """Write ``downloads/<name>.csv`` and ``.json``; the links for the page's template."""
        columns = columns or (list(rows[0]) if rows else [])
        key = self._key(name, rows, columns)
        for suffix, write in (("csv", csv_text), ("json", json_text)):
            path = f"downloads/{name}.{suffix}"
            if not self._unchanged(path, key):
                self.writer.text(path, write(rows, columns))
        return {"csv": f"downloads/{name}.csv", "json": f"downloads/{name}.json"}

    def _pages(self) -> None:
        w = self.writer
        shown = [*self.leaderboard, *self.failed]  # failed models have rows too (failures.py)
        families = sorted({r["family"] for r in shown if r.get("family")})
        types = sorted({r["type"] for r in shown if r.get("type")})
        flags = self._flags()
        failed = {row["model_id"]: row for row in self.failed}
        failed_columns = ["model_id", "run_id", "step", "error", "failed_at", "last_success_at"]
        self._page("index.html", "index.html.j2", leaderboard=self.leaderboard,
               failed=failed, failed_only=[row for row in self.failed if not row["on_board"]],
               reported=self.reported, families=families, types=types, missing=self.missing,
               include_database=self.options["include_database"],
               charts=[c for c in self.chart_entries if c["page"] == "index"],
               columns=leaderboard_columns(self.leaderboard), flags=flags,
               reported_columns=leaderboard_columns(self.reported, reported=True),
               statistics=self.statistics,
               downloads={"leaderboard": {"csv": "downloads/leaderboard.csv",
                                          "json": "downloads/leaderboard.json"},
                          "reported": self._table("reported_leaderboard", self.reported),
                          "failed": self._table("failed_models", self.failed, failed_columns),
                          **self._statistics_tables()},
               model_slugs={m: e["slug"] for m, e in self.manifest["models"].items()})
        reported_locales = {r["locale"]: r for r in _reported_csv("table4_locales.csv")}
        reported_agreement = {r["locale"]: r for r in _reported_csv(
            "table2_rank_correlation.csv")}
        self._page("locales.html", "locales.html.j2", locale_deltas=self.locale_deltas,
               agreement=self.agreement, reported_locales=reported_locales,
               reported_agreement=reported_agreement, locale_info=self.locale_info,
               present_locales=self.present_locales,
               delta_columns=value_columns(self.locale_deltas, DELTA_COLUMNS),
               charts=[c for c in self.chart_entries if c["page"] == "locales"],
               statistics=self.statistics,
               downloads={"deltas": self._table("locale_deltas", self.locale_deltas),
                          "agreement": self._table("rank_agreement", self.agreement),
                          **self._statistics_tables()})
        self._dataset_page()
        deltas_by_locale: dict[str, list[dict]] = defaultdict(list)
        deltas_by_model: dict[str, list[dict]] = defaultdict(list)
        for row in self.deltas:
            deltas_by_locale[row["locale"]].append(row)
            deltas_by_model[row["model_id"]].append(row)
        slugs = {m: e["slug"] for m, e in self.manifest["models"].items()}
        self.manifest["fragments"] = fragments = {}
        for locale in self.present_locales:
            rows = sorted(deltas_by_locale[locale], key=lambda r: -(r["delta_bleu"] or 0))
            path = f"locales/{locale}.html"
            provenance = self.annotations.get(locale, {})
            fragments[locale] = key = hashlib.sha256(json.dumps(
                [self.key, self.templates,
                 sorted(provenance.items())], default=str).encode()).hexdigest()
            old = self.out_dir / path
            reused = (_between(old.read_text("utf-8"), INSTANCES_MARKERS)
                      if self.previous.get("fragments", {}).get(locale) == key
                      and old.is_file() else None)
            self._page(path, "locale.html.j2", keyed_by={"instances": key, "deltas": rows,
                                                         "slugs": slugs},
                       locale=self.locale_info[locale],
                   entries=[] if reused is not None else _locale_entries(
                       self.locale_payloads[locale]),
                   instances_html=reused, n_instances=len(self.instance_ids[locale]),
                   deltas=rows, provenance=provenance, model_slugs=slugs,
                   delta_columns=value_columns(rows, DELTA_COLUMNS),
                   downloads={"deltas": self._table(f"locales/{locale}.deltas", rows)})
        by_model: dict[str, dict[str, list[dict]]] = {
            name: defaultdict(list) for name in ("scores", "recall", "cleaning")}
        for name, rows in (("scores", self.scores), ("recall", self.recall),
                           ("cleaning", self.cleaning)):
            for row in rows:
                by_model[name][row["model_id"]].append(row)
        for model_id, row in self.board.items():
            if model_id not in self.manifest["models"]:
                continue
            slug = slugs[model_id]
            base = f"models/{slug}"
            pivot = _pivot_scores(by_model["scores"][model_id])
            model_deltas = deltas_by_model[model_id]
            shard = shards.shard_path(f"model/{slug}")
            overall = {k: row[k] for k in OVERALL_KEYS if k in row}  # the compare view's total
            if not self._unchanged(shard, self._key(shard, model_id, model_deltas, overall)):
                w.data(shard, shards.encode_shard(f"model/{slug}", {
                    "v": shards.FORMAT, "model": model_id, "deltas": _json_rows(model_deltas),
                    "overall": _json_rows([overall])[0]}))
            # the lists of models it cannot be separated from are shown on the leaderboard,
            # not here: left out, so that a new model does not re-render every model's page
            shown = {k: v for k, v in row.items() if not k.startswith("not_separable_")}
            self._page(f"{base}.html", "model.html.j2", model=shown,
                       card=self.models.get(model_id, {}), failure=failed.get(model_id),
                   slug=slug, scores=pivot, deltas=model_deltas,
                   delta_columns=value_columns(model_deltas, DELTA_COLUMNS),
                   recall=by_model["recall"][model_id], cleaning=by_model["cleaning"][model_id],
                   segment_locales=self.model_locales.get(model_id, []),
                   flags=[f for f in flags if f["model_id"] == model_id],
                   downloads={"deltas": self._table(f"{base}.deltas", model_deltas),
                              "scores": self._table(f"{base}.scores", pivot),
                              "recall": self._table(f"{base}.word_recall",
                                                    by_model["recall"][model_id]),
                              "cleaning": self._table(f"{base}.cleaning",
                                                      by_model["cleaning"][model_id])})
        index = {"v": shards.FORMAT, "originals": self.show, "hidden_output": HIDDEN_OUTPUT,
                 "hidden_original": HIDDEN_ORIGINAL,
                 "models": [{"id": m, "slug": slugs[m], "type": self.board[m]["type"],
                             "family": self.board[m]["family"],
                             "params": self.board[m]["params_total_b"],
                             "locales": self.model_locales.get(m, [])}
                            for m in self.board if m in slugs],
                 "locales": [{"locale": loc, "language": self.locale_info[loc]["language"],
                              "language_name": self.locale_info[loc]["language_name"],
                              "location": self.locale_info[loc]["location"]}
                             for loc in self.present_locales]}
        w.data(shards.shard_path("index"), shards.encode_shard("index", index))
        self._page("browse.html", "browse.html.j2")
        self._page("compare.html", "compare.html.j2")
        self._page("query.html", "query.html.j2", tables=self._query_tables(),
               note=next((n for n in self.notes if "Query page" in n), None),
               model_slugs=[(m, slugs[m]) for m in self.board if m in slugs],
               examples=[{"title": title, "sql": statement_text(name).strip()}
                         for name, title in QUERY_EXAMPLES],
               engine_version=self.engine.version if self.engine else None,
               lock_sql=statement_text("query_page_lock"),
               translations_sql=statement_text("query_page_translations"),
               insert_sql=statement_text("query_page_insert_translations"),
               translations_description=dl.TRANSLATIONS_DESCRIPTION)

    def _flags(self) -> list[dict]:
        """Per (rule, model) of the evaluated models: rule, rule_text, fired (model pages)."""
        return [{"model_id": model, "rule": r["rule"], "rule_text": r["rule_text"],
                 "fired": model in (r.get("fired_for") or []),
                 "detail": r.get("note") or ""}
                for r in self.statistics["contamination_rules"] if r.get("source") == "evaluated"
                for model in self.board]

    def _statistics_tables(self) -> dict[str, dict]:
        """CSV and JSON of the statistics tables (issue 11) that the pages show (written once;
        two pages link them)."""
        if not hasattr(self, "statistics_links"):
            self.statistics_links = {name: self._table(name, rows)
                                     for name, rows in self.statistics.items()
                                     if rows and name != "statistics_settings"}
        return self.statistics_links

    def _query_tables(self) -> list[dict]:
        tables = [{"name": t.name, "description": t.description,
                   "columns": self.published[t.name].column_names,
                   "rows": self.published[t.name].num_rows}
                  for t in dl.PUBLISHED_TABLES if t.name in self.published]
        tables.append({"name": "segments", "description": dl.SEGMENTS_DESCRIPTION,
                       "columns": self.public_segments.column_names,
                       "rows": self.public_segments.num_rows})
        return tables

    def _dataset_page(self) -> None:
        """The dataset page: the card's text (without the sections the page shows itself),
        each Table 1 once, and how the data was made from the same facts as the card's
        (:func:`cultivar_assets.data.build_record.method_sections`)."""
        reported = _reported_csv("table1_annotation.csv")
        counts = {row["locale"]: row.get("n_instances") for row in self.locales}
        kind = self.dataset.get("kind")
        raw = self.dataset.get("build_provenance")
        provenance = json.loads(raw) if raw else None
        self._page(
            "dataset.html", "dataset.html.j2", card_html=_markdown(self.card_markdown),
            locales=self.locales, present_locales=self.present_locales,
            table1=self.annotation_summary, table1_reported=reported,
            table1_scope=table1_scope(provenance) if kind == "built" else None,
            method=method_sections(kind, bool(self.dataset.get("is_demo")), provenance),
            method_lead=method_lead(kind, bool(self.dataset.get("is_demo"))), counts=counts,
            downloads={"locales": self._table("dataset.locales", self.locales),
                       "table1": self._table("annotation_summary", self.annotation_summary),
                       "table1_reported": self._table("table1_reported", reported)})


def _model_tables(reader: Reader, models: list[str]) -> Iterator[tuple[str, pa.Table]]:
    """(model, its translations as Arrow) for ``models``, one model at a time."""
    if not models:
        return
    current, pieces = None, []
    for batch in reader.batches("site_model_translations", models=models):
        runs = pc.run_end_encode(batch["model_id"])
        start = 0
        for model_id, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist(),
                                 strict=True):
            if model_id != current and pieces:
                yield current, pa.Table.from_batches(pieces)
                pieces = []
            current = model_id
            pieces.append(batch.slice(start, end - start))
            start = end
    if pieces:
        yield current, pa.Table.from_batches(pieces)


def vega_bundle(cache: Path) -> Path:
    """Vega, Vega-Lite and vega-embed in one script (``vl_convert.javascript_bundle()``),
    generated once per vl-convert version into the web cache (it takes seconds)."""
    version = importlib.metadata.version("vl-convert-python")
    path = Path(cache) / f"vl-convert-{version}" / "vega-bundle.js"
    if not path.is_file():
        import vl_convert

        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(vl_convert.javascript_bundle(), "utf-8")
        partial.replace(path)
    return path


def value_columns(rows: list[dict], columns: list[tuple[str, str, int, str | None]],
                  reported: bool = False) -> list[dict]:
    """Value columns of a table (key, label, digits, title); a column shows its 95 % interval
    where the rows have ``<key>_low``/``<key>_high`` and is marked where ``<key>_excludes_zero``
    (the statistics views add these columns; without them the table shows the values only)."""
    present = set(rows[0]) if rows else set()
    return [{"key": key, "label": label, "digits": digits, "title": title,
             "interval": f"{key}_low" in present and f"{key}_high" in present,
             "excludes_zero": f"{key}_excludes_zero" in present, "reported": reported}
            for key, label, digits, title in columns]


DELTA_COLUMNS = [("delta_bleu", "∆BLEU", 2, None), ("delta_chrf", "∆chrF", 2, None)]


# The leaderboard's overall ∆ of a model, with its interval, as the compare view shows it.
OVERALL_KEYS = tuple(f"delta_{m}{part}" for m in ("bleu", "chrf") for part in ("", "_low", "_high"))


def leaderboard_columns(rows: list[dict], reported: bool = False) -> list[dict]:
    """The leaderboard's value columns (see :func:`value_columns`)."""
    return value_columns(rows, [("params_total_b", "Params (B)", 2, None),
               ("delta_bleu", "∆BLEU", 2, None), ("delta_chrf", "∆chrF", 2, None),
               ("flores_bleu", "FLORES BLEU", 2, None), ("flores_chrf", "FLORES chrF", 2, None),
               ("cultivar_bleu", "Cultivar BLEU", 2, None),
               ("cultivar_chrf", "Cultivar chrF", 2, None),
               ("false_positive_rate", "FP rate", 4,
                "false-positive rate of locale-specific word recall"),
               ("false_negative_rate", "FN rate", 4,
                "false-negative rate of locale-specific word recall")], reported)


def _provenance(row: dict, show_originals: bool) -> dict:
    """An instance's post-editing record as a locale page shows it: without the FLORES
    originals, and without a draft that merely repeats one, unless originals are shown."""
    out = {k: v for k, v in row.items() if k not in ("source_original", "english_original")}
    for side in ("source", "english"):
        original, draft = row.get(f"{side}_original"), row.get(f"{side}_draft")
        hidden = not show_originals and bool(original and draft and original.strip() in draft)
        out[f"{side}_draft_hidden"] = hidden
        if hidden:
            out[f"{side}_draft"] = None
    return out


STATISTICS_VIEWS = ("contamination_rules", "table_averages", "statistics_settings",
                    "error_table5", "error_correlations", "error_files")
INSTANCES_MARKERS = ("<!--instances-->", "<!--/instances-->")
TEMPLATES = ("base.html.j2", "macros.html.j2", "index.html.j2", "locales.html.j2",
             "locale.html.j2", "model.html.j2", "browse.html.j2", "compare.html.j2",
             "query.html.j2", "dataset.html.j2", "postedit_instructions.html.j2")


def _between(text: str, markers: tuple[str, str]) -> Markup | None:
    """The HTML between two markers of a page this build wrote before (data is escaped, so no
    text from the data can contain a marker)."""
    start, end = text.find(markers[0]), text.find(markers[1])
    if start < 0 or end < start or text.count(markers[0]) != 1:
        return None
    return Markup(text[start + len(markers[0]):end])


def _template_digest(*names: str) -> str:
    from cultivar_assets.paths import resource_dir

    folder = resource_dir("site") / "templates"
    return hashlib.sha256(b"".join((folder / n).read_bytes() for n in names)).hexdigest()


def _locale_entries(payload: dict) -> list[dict]:
    def html(pieces: list[str] | None) -> Markup | None:
        if pieces is None:
            return None
        return Markup("".join(
            f'<mark class="changed">{escape(text)}</mark>' if i % 2 else str(escape(text))
            for i, text in enumerate(pieces) if text))

    return [{"id": item[0], "src_o": html(item[1]), "src_l": html(item[2]),
             "ref_o": html(item[3]), "ref_l": html(item[4])} for item in payload["items"]]


def _json_rows(rows: list[dict]) -> list[dict]:
    return json.loads(json_text(rows))


def _pivot_scores(rows: list[dict]) -> list[dict]:
    table: dict[str, dict] = {}
    for row in rows:
        entry = table.setdefault(row["test_set"], {"test_set": row["test_set"],
                                                   "kind": row["kind"], "locale": row["locale"],
                                                   "language": row["language"]})
        entry[row["metric"]] = row["score"]
    return list(table.values())


def _markdown(text: str | None) -> str | None:
    """The card's Markdown as HTML: CommonMark and tables, no raw HTML, and no images (an image
    is a request to wherever it points, made by every reader's browser; a link is only followed
    when clicked). markdown-it refuses ``javascript:``, ``vbscript:`` and ``data:`` links."""
    if text is None:
        return None
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("image").render(text)
