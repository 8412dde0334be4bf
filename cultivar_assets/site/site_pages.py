"""The site's pages and their contexts: what each page shows, from the store's rows.

:class:`SitePages` writes the leaderboard (``index.html``), ``locales.html``, ``dataset.html``,
one page per locale and per model (with the model's shard for the compare view), the browser
pages' index shard, ``browse.html``, ``compare.html`` and ``query.html``, with the table
downloads each page links, every one rendered in full by every build.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from jinja2.filters import do_urlencode
from jinja2.utils import url_quote
from markupsafe import Markup, escape

from cultivar_assets.data.build_record import method_lead, method_sections, table1_scope
from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name
from cultivar_assets.metrics.registry import PAPER_METRICS, column_key, table_label
from cultivar_assets.site import compare_stats, shards
from cultivar_assets.site import downloads as dl
from cultivar_assets.site.downloads import HIDDEN_OUTPUT
from cultivar_assets.site.pages import (
    PageWriter,
    SharedItems,
    interval_column,
    num_column,
    num_td,
)
from cultivar_assets.site.query_engine import QueryEngine
from cultivar_assets.site.site_data import OWN_MODEL_TABLES, SiteData, board_table, reported_csv
from cultivar_assets.sqlfiles import statement_text
from cultivar_assets.tables import csv_text, json_text

HIDDEN_ORIGINAL = ("Original FLORES text not shown on public pages (the FLORES maintainers ask "
                   "that it not be re-hosted); its localised counterpart is on the right, "
                   "changes highlighted.")
# The Query page's examples: (named block of sql/query_examples.sql, title).
QUERY_EXAMPLES = (
    ("example_table3", "Table 3: the leaderboard, by ∆BLEU"),
    ("example_metrics", "Every configured metric per model (chrF++, TER, ...), long form"),
    ("example_table4", "Table 4: ∆ per locale, averaged over models"),
    ("example_table2", "Table 2: rank agreement between FLORES and Cultivar"),
    ("example_table1", "Table 1: post-editing statistics (where annotation files were ingested)"),
    ("example_figure3", "Figure 3: the same language, official and not"),
    ("example_worst_locale", "Each model's worst locale and its number of negative ∆"),
    ("example_evaluated_vs_reported", "Evaluated here against reported in the paper"),
    ("example_translations", "Translations (load some models below first)"),
)
FAILED_COLUMNS = ["model_id", "run_id", "step", "error", "failed_at", "last_success_at"]


class SitePages:
    """The pages of one build. Besides the store's rows (``data``) they show what the build
    wrote before them: the chart entries (without specs), the published segments table, the
    locale shards' payloads (the locale pages' highlighted instances) and each model's part
    (``models``: model -> its ``slug`` and the ``locales`` of its translations shard:
    :mod:`cultivar_assets.site.model_part`). The model pages need only the parts (and the
    rows): :meth:`start_model_pages` may run before the chart entries, the published segments
    and the locale payloads are set; :meth:`write` needs them."""

    def __init__(self, data: SiteData, writer: PageWriter, *, dataset: dict,
                 show_originals: bool, include_database: bool, card_markdown: str | None,
                 engine: QueryEngine | None, notes: list[str], chart_entries: list[dict] | None,
                 public_segments: Any, locale_payloads: dict[str, dict] | None,
                 models: dict[str, dict]) -> None:
        self.data, self.writer = data, writer
        self.dataset, self.show, self.include_database = dataset, show_originals, include_database
        self.card_markdown, self.engine, self.notes = card_markdown, engine, notes
        self.chart_entries, self.public_segments = chart_entries, public_segments
        self.locale_payloads = locale_payloads
        self.model_locales = {m: e["locales"] for m, e in models.items()}
        self.slugs = {m: e["slug"] for m, e in models.items()}
        self.statistics_links: dict[str, dict] | None = None
        self.model_items: SharedItems | None = None

    def table(self, name: str, rows: list[dict], columns: list[str] | None = None) -> dict:
        """Write ``downloads/<name>.csv`` and ``.json``; the links for the page's template."""
        files = table_files(name)
        for path in files.values():
            write_table(self.writer, path, rows, columns)
        return files

    def start_model_pages(self) -> None:
        """Start the model pages (:meth:`model_pages`): a forked child begins them now, and
        :meth:`write` finishes them beside this process (``locale_payloads`` may be set in
        between)."""
        failed = {row["model_id"]: row for row in self.data.failed}
        deltas_by_model: dict[str, list[dict]] = defaultdict(list)
        for row in self.data.deltas:
            deltas_by_model[row["model_id"]].append(row)
        self.writer.env.get_template("model.html.j2")  # compiled once, before the child
        self.model_items = self.model_pages(deltas_by_model, self._flags(), failed)

    def cancel(self) -> None:
        """Stop the model pages' child, if one is running (the build failed)."""
        if self.model_items is not None:
            self.model_items.cancel()

    def write(self) -> None:
        """Every page: the model pages by a child process and this one side by side
        (:meth:`start_model_pages`, unless started already) while this one writes the
        others."""
        if self.model_items is None:
            self.start_model_pages()
        try:
            flags = self._flags()
            failed = {row["model_id"]: row for row in self.data.failed}
            deltas_by_locale: dict[str, list[dict]] = defaultdict(list)
            for row in self.data.deltas:
                deltas_by_locale[row["locale"]].append(row)
            self.index_page(flags, failed)
            self.separable_shard()
            self.locales_page()
            self.dataset_page()
            self.locale_pages(deltas_by_locale)
            self.browser_pages()
            self.query_page()
            self.model_items.finish()
        finally:
            self.cancel()

    def index_page(self, flags: list[dict], failed: dict[str, dict]) -> None:
        """The leaderboard: evaluated and reported (never merged), failed models, charts."""
        data = self.data
        shown = [*data.leaderboard, *data.failed]  # failed models have rows too (failures.py)
        families = sorted({r["family"] for r in shown if r.get("family")})
        types = sorted({r["type"] for r in shown if r.get("type")})
        self.writer.page(
            "index.html", "index.html.j2", leaderboard=data.leaderboard,
            failed=failed, failed_only=[row for row in data.failed if not row["on_board"]],
            reported=data.reported, families=families, types=types, missing=data.missing,
            include_database=self.include_database,
            charts=[c for c in self.chart_entries if c["page"] == "index"],
            columns=leaderboard_columns(data.leaderboard, metrics=data.metrics), flags=flags,
            reported_columns=leaderboard_columns(data.reported, reported=True),
            statistics=data.statistics,
            downloads={"leaderboard": self.table(  # lists as lengths (board_table)
                           "leaderboard", board_table(data.published["leaderboard"]).to_pylist()),
                       "reported": self.table("reported_leaderboard", data.reported),
                       "failed": self.table("failed_models", data.failed,
                                                  FAILED_COLUMNS),
                       **self._statistics_tables()},
            model_slugs=self.slugs)

    def locales_page(self) -> None:
        """Tables 4 and 2 (evaluated beside reported) and Fig. 3."""
        data = self.data
        reported_locales = {r["locale"]: r for r in reported_csv("table4_locales.csv")}
        reported_agreement = {r["locale"]: r for r in reported_csv(
            "table2_rank_correlation.csv")}
        self.writer.page(
            "locales.html", "locales.html.j2", locale_deltas=data.locale_deltas,
            agreement=data.agreement, reported_locales=reported_locales,
            reported_agreement=reported_agreement, locale_info=data.locale_info,
            present_locales=data.present_locales,
            delta_columns=value_columns(data.locale_deltas, delta_columns(data.metrics)),
            charts=[c for c in self.chart_entries if c["page"] == "locales"],
            statistics=data.statistics,
            downloads={"deltas": self.table("locale_deltas", data.locale_deltas),
                       "agreement": self.table("rank_agreement", data.agreement),
                       **self._statistics_tables()})

    def dataset_page(self) -> None:
        """The dataset page: the card's text (without the sections the page shows itself),
        each Table 1 once, and how the data was made from the same facts as the card's
        (:func:`cultivar_assets.data.build_record.method_sections`)."""
        data = self.data
        reported = reported_csv("table1_annotation.csv")
        counts = {row["locale"]: row.get("n_instances") for row in data.locales}
        kind = self.dataset.get("kind")
        raw = self.dataset.get("build_provenance")
        provenance = json.loads(raw) if raw else None
        self.writer.page(
            "dataset.html", "dataset.html.j2", card_html=_markdown(self.card_markdown),
            locales=data.locales, present_locales=data.present_locales,
            table1=data.annotation_summary, table1_reported=reported,
            table1_scope=table1_scope(provenance) if kind == "built" else None,
            method=method_sections(kind, bool(self.dataset.get("is_demo")), provenance),
            method_lead=method_lead(kind, bool(self.dataset.get("is_demo"))), counts=counts,
            downloads={"locales": self.table("dataset.locales", data.locales),
                       "table1": self.table("annotation_summary",
                                                  data.annotation_summary),
                       "table1_reported": self.table("table1_reported", reported)})

    def locale_pages(self, deltas_by_locale: dict[str, list[dict]]) -> None:
        """Per locale: its instances with changed spans and provenance, ∆ of every model."""
        data, slugs = self.data, self.slugs
        for locale in data.present_locales:
            rows = sorted(deltas_by_locale[locale], key=lambda r: -(r["delta_bleu"] or 0))
            deltas = value_columns(rows, delta_columns(data.metrics))
            scores = value_columns(rows, score_columns(data.metrics))
            self.writer.page(
                f"locales/{locale}.html", "locale.html.j2", delta_columns=deltas,
                score_columns=scores,
                delta_rows=locale_delta_rows(rows, locale, slugs, deltas, scores),
                locale=data.locale_info[locale],
                entries=_locale_entries(self.locale_payloads[locale]),
                n_instances=len(data.instance_ids[locale]),
                provenance=data.annotations.get(locale, {}),
                downloads={"deltas": self.table(f"locales/{locale}.deltas", rows)})

    def model_pages(self, deltas_by_model: dict[str, list[dict]], flags: list[dict],
                    failed: dict[str, dict]) -> SharedItems:
        """Per model with a part (:mod:`cultivar_assets.site.model_part`): its page (card,
        scores, ∆ per locale, word recall, cleaning), its ∆ and word-recall table downloads
        (those of its scores and cleaning tables are in its part: :func:`own_table_files`) and
        its shard for the compare view, written by this process and a child side by side
        (:class:`SharedItems`, started here; the caller finishes it). What moves when another
        model is added stays off the page (the lists of models it cannot be separated from,
        shown by the leaderboard; its ranks, which the card reads from the ranks shard:
        :meth:`ranks_shard`)."""
        data, slugs = self.data, self.slugs
        flags_by_model: dict[str, list[dict]] = defaultdict(list)
        for flag in flags:
            flags_by_model[flag["model_id"]].append(flag)
        metrics = [{"metric": m, "key": column_key(m), "label": label}
                   for m, label, _ in shown_metrics(data.metrics)]
        tables = data.model_rows(set(slugs))
        sort_header = _memoised(self.writer.env.get_template("macros.html.j2").module.sort_header)

        def write(model_id: str, writer: PageWriter) -> None:
            row, slug = data.board[model_id], slugs[model_id]
            shown = {k: v for k, v in row.items() if not k.startswith(RANK_PREFIXES)}
            overall = {k: row[k] for k in overall_keys(data.metrics) if k in row}  # compare view
            model_deltas = deltas_by_model[model_id]
            writer.data(shards.shard_path(f"model/{slug}"), shards.encode_shard(
                f"model/{slug}", {"v": shards.FORMAT, "model": model_id,
                                  # the rows as they are: json_bytes writes what a JSON
                                  # round trip of them would hold (NaN as null, times as text)
                                  "deltas": model_deltas, "overall": overall}))
            downloads = model_downloads(f"models/{slug}")
            rows = {name: tables[name].get(model_id, []) for name in tables}
            page_tables = {"deltas": model_deltas, "scores": _pivot_scores(rows["scores"]),
                           "recall": rows["recall"], "cleaning": rows["cleaning"]}
            for name, links in downloads.items():
                if name in OWN_MODEL_TABLES:  # in the model's part (own_table_files)
                    continue
                for path in links.values():
                    write_table(writer, path, page_tables[name])
            columns = (value_columns(model_deltas, delta_columns(data.metrics)),
                       value_columns(model_deltas, score_columns(data.metrics)))
            writer.page(
                f"models/{slug}.html", "model.html.j2", model=shown,
                ranked=row.get("rank_delta_bleu_label") is not None,
                card=data.models.get(model_id, {}), failure=failed.get(model_id), slug=slug,
                segment_links=locale_links(slug, self.model_locales.get(model_id, [])),
                flags=flags_by_model.get(model_id, []), metrics=metrics,
                delta_columns=columns[0], score_columns=columns[1],
                cleaning=page_tables["cleaning"], downloads=downloads, sort_header=sort_header,
                rows=model_table_rows(slug, page_tables, metrics, *columns))

        return SharedItems([m for m in data.board if m in slugs], write, self.writer)

    def browser_pages(self) -> None:
        """The index shard (what the pickers list), the segment browser and the compare view."""
        data, slugs = self.data, self.slugs
        index = {"v": shards.FORMAT, "originals": self.show, "hidden_output": HIDDEN_OUTPUT,
                 # the compare view's metrics: [column key, label, name, the browser's formula
                 # of its score or None] of every shown one
                 "metrics": [[column_key(m), label, m, compare_stats.browser_formula(m)]
                             for m, label, _ in shown_metrics(data.metrics)],
                 "hidden_original": HIDDEN_ORIGINAL,
                 "models": [{"id": m, "slug": slugs[m], "type": data.board[m]["type"],
                             "family": data.board[m]["family"],
                             "params": data.board[m]["params_total_b"],
                             "locales": self.model_locales.get(m, [])}
                            for m in data.board if m in slugs],
                 "locales": [{"locale": loc, "language": data.locale_info[loc]["language"],
                              "language_name": data.locale_info[loc]["language_name"],
                              "location": data.locale_info[loc]["location"],
                              "flores": flores_test_set_name(
                                  data.locale_info[loc]["flores_plus_code"]),
                              "cultivar": cultivar_test_set_name(loc)}
                             for loc in data.present_locales]}
        self.writer.data(shards.shard_path("index"), shards.encode_shard("index", index))
        self.ranks_shard()
        self.writer.page("browse.html", "browse.html.j2")
        self.writer.page("compare.html", "compare.html.j2", without_intervals=[
            label for m, label, _ in shown_metrics(data.metrics)
            if compare_stats.browser_formula(m) is None])

    def _board_shard(self, key: str, column: str, field: str) -> None:
        """Shard ``key``: ``{"v", field: {model: its leaderboard value of column}}`` for the
        evaluated models that have one."""
        values = {m: row[column] for m, row in self.data.board.items() if row.get(column)}
        self.writer.data(shards.shard_path(key), shards.encode_shard(
            key, {"v": shards.FORMAT, field: values}))

    def ranks_shard(self) -> None:
        """``data/ranks.js``: every evaluated model's rank interval by ∆BLEU (its label, e.g.
        "rank 3–5"), which the model cards show; one small file rewritten by every build
        instead of every card whose rank moved."""
        self._board_shard("ranks", "rank_delta_bleu_label", "rank_delta_bleu")

    def separable_shard(self) -> None:
        """``data/separable.js``: each evaluated model's "not separable from" list by ∆BLEU,
        which the leaderboard shows when a reader opens it (at 1,000 models the lists, which
        grow with the square of the models, were most of ``index.html``'s 11.7 MB). The lists are
        read from the published leaderboard: the pages' rows hold only their lengths
        (``site_leaderboard_rows``)."""
        board = self.data.published["leaderboard"]
        lists = dict(zip(board["model_id"].to_pylist(),
                         board["not_separable_delta_bleu"].to_pylist(), strict=True))
        values = {m: lists[m] for m in self.data.board if lists.get(m)}
        self.writer.data(shards.shard_path("separable"), shards.encode_shard(
            "separable", {"v": shards.FORMAT, "delta_bleu": values}))

    def query_page(self) -> None:
        """SQL in the browser: the published tables, examples, the statements the page runs."""
        slugs = self.slugs
        self.writer.page(
            "query.html", "query.html.j2", tables=self._query_tables(),
            note=next((n for n in self.notes if "Query page" in n), None),
            model_slugs=[(m, slugs[m]) for m in self.data.board if m in slugs],
            examples=[{"title": title, "sql": statement_text(name).strip()}
                      for name, title in QUERY_EXAMPLES],
            engine_version=self.engine.version if self.engine else None,
            lock_sql=statement_text("query_page_lock"),
            attach_sql=statement_text("query_page_attach"),
            translations_sql=statement_text("query_page_translations"),
            insert_sql=statement_text("query_page_insert_translations"),
            translations_description=dl.TRANSLATIONS_DESCRIPTION)

    def _flags(self) -> list[dict]:
        """Per (rule, model) of the evaluated models: rule, rule_text, fired (model pages)."""
        rules = [(r, set(r.get("fired_for") or ()))  # a rule fires for up to every model
                 for r in self.data.statistics["contamination_rules"]
                 if r.get("source") == "evaluated"]
        return [{"model_id": model, "rule": r["rule"], "rule_text": r["rule_text"],
                 "fired": model in fired, "detail": r.get("note") or ""}
                for r, fired in rules for model in self.data.board]

    def _statistics_tables(self) -> dict[str, dict]:
        """CSV and JSON of the statistics tables that the pages show (written once;
        two pages link them)."""
        if self.statistics_links is None:
            self.statistics_links = {name: self.table(name, rows)
                                     for name, rows in self.data.statistics.items()
                                     if rows and name != "statistics_settings"}
        return self.statistics_links

    def _query_tables(self) -> list[dict]:
        published = self.data.published
        tables = [{"name": t.name, "description": t.description,
                   "columns": published[t.name].column_names,
                   "rows": published[t.name].num_rows}
                  for t in dl.PUBLISHED_TABLES if t.name in published]
        tables.append({"name": "segments", "description": dl.SEGMENTS_DESCRIPTION,
                       "columns": self.public_segments.column_names,
                       "rows": self.public_segments.num_rows})
        return tables


def table_files(name: str) -> dict[str, str]:
    """The download files of table ``name``: {"csv": path, "json": path}."""
    return {"csv": f"downloads/{name}.csv", "json": f"downloads/{name}.json"}


def table_text(path: str, rows: list[dict], columns: list[str] | None = None) -> str:
    """``rows`` as CSV or JSON (by ``path``'s suffix; ``columns``: the first row's keys where
    not given)."""
    columns = columns or (list(rows[0]) if rows else [])
    write = csv_text if path.endswith(".csv") else json_text
    return write(rows, columns)


def write_table(writer: PageWriter, path: str, rows: list[dict],
                columns: list[str] | None = None) -> None:
    """:func:`table_text` of ``rows`` written to ``path``."""
    writer.text(path, table_text(path, rows, columns))


def model_downloads(base: str) -> dict[str, dict[str, str]]:
    """A model page's table downloads (``base``: ``models/<slug>``): name -> {"csv", "json"}."""
    return {name: table_files(f"{base}.{file}") for name, file in MODEL_TABLE_FILES.items()}


def own_table_files(slug: str, rows: dict[str, list[dict]]) -> dict[str, bytes]:
    """The download files of a model page's tables made from the model's own rows alone
    (:data:`~.site_data.OWN_MODEL_TABLES`: ``rows``, its rows of the published ``scores`` and
    ``cleaning_counts``): path -> bytes. Its part of the site holds them
    (:mod:`cultivar_assets.site.model_part`); the model page links them."""
    downloads = model_downloads(f"models/{slug}")
    tables = {"scores": _pivot_scores(rows["scores"]), "cleaning": rows["cleaning"]}
    return {path: table_text(path, tables[name]).encode("utf-8")
            for name in OWN_MODEL_TABLES for path in downloads[name].values()}


def model_table_rows(slug: str, tables: dict[str, list[dict]], metrics: list[dict],
                     delta_cols: list[dict], score_cols: list[dict]) -> dict[str, Markup]:
    """The body rows of a model page's tables (``tables``: "deltas", "scores", "cleaning",
    "recall"), each row a line: ∆ per locale (a link to the segment browser, the ∆ columns with
    their intervals, the score columns), scores per test set (one column per shown metric),
    output cleaning per test set and rule, word recall per locale. Built here rather than by
    the template's loops (a 1,000-model site has 360,000 such cells); cells as
    :func:`.pages.num_td` and :func:`.pages.interval_td` write them, text escaped."""
    quoted = _quoted(slug)
    rows = tables["deltas"]
    cells = [*(interval_column(rows, c["key"], c["digits"]) for c in delta_cols),
             *(num_column([r.get(c["key"]) for r in rows], c["digits"]) for c in score_cols)]
    deltas = [f'<tr><th scope="row" data-value="{loc}"><a href="../browse.html#model={quoted}'
              f'&amp;locale={_quoted(r["locale"])}">{loc}</a></th>\n{row}</tr>\n'
              for r, row in zip(rows, _joined(cells, len(rows)), strict=True)
              for loc in (escape(r["locale"]),)]
    rows = tables["scores"]
    cells = [num_column([r.get(m["metric"]) for r in rows]) for m in metrics]
    scores = [f'<tr><th scope="row" data-value="{ts}">{ts}</th><td data-value="{kind}">{kind}'
              f'</td>{row}</tr>\n'
              for r, row in zip(rows, _joined(cells, len(rows)), strict=True)
              for ts, kind in ((escape(r["test_set"]), escape(r["kind"])),)]
    cleaning = [f'<tr><th scope="row" data-value="{ts}">{ts}</th><td data-value="{rule}">{rule}'
                f'</td>{num_td(r["n_segments"], 0)}</tr>\n'
                for r in tables["cleaning"]
                for ts, rule in ((escape(r["test_set"]), escape(r["rule"])),)]
    rows = tables["recall"]
    cells = [num_column([r[key] for r in rows], digits) for key, digits in RECALL_CELLS]
    recall = [f'<tr><th scope="row" data-value="{loc}">{loc}</th>{row}</tr>\n'
              for r, row in zip(rows, _joined(cells, len(rows)), strict=True)
              for loc in (escape(r["locale"]),)]
    return {name: Markup("".join(lines)) for name, lines in (
        ("deltas", deltas), ("scores", scores), ("cleaning", cleaning), ("recall", recall))}


def _memoised(macro: Callable[..., Markup]) -> Callable[..., Markup]:
    """``macro`` (a template macro whose output depends on its arguments alone) rendered once
    per distinct arguments: the model pages' table headers, the same on every page, rendered
    once per build instead of 19 times per page."""
    made: dict[tuple, Markup] = {}

    def call(*args: Any) -> Markup:
        if (markup := made.get(args)) is None:
            markup = made[args] = macro(*args)
        return markup

    return call


def locale_links(slug: str, locales: Sequence[str]) -> Markup:
    """A model page's links to its translations in the segment browser, one list item per
    locale (``slug``: the model's)."""
    quoted = _quoted(slug)
    return Markup("".join([f'<li><a href="../browse.html#model={quoted}&amp;locale='
                           f'{_quoted(locale)}">{escape(locale)}</a></li>'
                           for locale in locales]))


def _joined(columns: list[list[str]], n_rows: int) -> list[str]:
    """Each row's cells (``columns``: a list of cells per column), joined."""
    return list(map("".join, zip(*columns, strict=True))) if columns else [""] * n_rows


# The word recall table's numeric columns, in order, and their digits.
RECALL_CELLS = (("false_positive_rate", 4), ("false_negative_rate", 4), ("n_removed_terms", 0),
                ("n_introduced_terms", 0))


@cache
def _quoted(text: str) -> str:
    """``text`` as the template's ``urlencode`` filter writes it in a link (percent-encoded,
    ``/`` kept; nothing left to escape)."""
    return str(escape(url_quote(text)))


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


# A model page's tables: the name its template links them by -> their download's file name.
MODEL_TABLE_FILES = {"deltas": "deltas", "scores": "scores", "recall": "word_recall",
                     "cleaning": "cleaning"}
# Leaderboard columns that move when another model is added, left out of model pages.
RANK_PREFIXES = ("not_separable_", "rank_")


SIDE_LABELS = {"delta": "∆{}", "flores": "FLORES {}", "cultivar": "Cultivar {}"}


def shown_metrics(metrics: Sequence[dict] = ()) -> list[tuple[str, str, bool]]:
    """(metric, label, higher_is_better) of the metrics the pages show: BLEU and chrF (the
    paper's, :data:`PAPER_METRICS`, with their table labels), then every other aggregated metric
    (``metrics``: rows of ``statistics_metrics``, the stored label and direction)."""
    return [(m, table_label(m), True) for m in PAPER_METRICS] + [
        (m["metric"], m["label"], m["higher_is_better"]) for m in metrics
        if m["metric"] not in PAPER_METRICS]


def _metric_column(side: str, metric: str, name: str, higher: bool
                   ) -> tuple[str, str, int, str | None]:
    return (f"{side}_{column_key(metric)}", SIDE_LABELS[side].format(name), 2,
            None if higher else f"{name}: lower is better (∆ = Cultivar − FLORES)")


def metric_columns(metrics: Sequence[dict] = ()) -> list[tuple[str, str, int, str | None]]:
    """The leaderboard's metric columns: ∆, FLORES and Cultivar of every shown metric
    (:func:`shown_metrics`; a lower-is-better one, such as TER, says so in its title)."""
    chosen = shown_metrics(metrics)
    return [_metric_column(side, metric, name, higher)
            for side in SIDE_LABELS for metric, name, higher in chosen]


def delta_columns(metrics: Sequence[dict] = ()) -> list[tuple[str, str, int, str | None]]:
    """The ∆ columns of the ∆ tables (model, locale and locales pages), one per shown metric."""
    return [_metric_column("delta", *shown) for shown in shown_metrics(metrics)]


def score_columns(metrics: Sequence[dict] = ()) -> list[tuple[str, str, int, str | None]]:
    """The FLORES and Cultivar score columns of the per-locale ∆ tables: per shown metric, its
    FLORES score, then its Cultivar score."""
    return [_metric_column(side, *shown) for shown in shown_metrics(metrics)
            for side in ("flores", "cultivar")]


def overall_keys(metrics: Sequence[dict] = ()) -> tuple[str, ...]:
    """The leaderboard's overall ∆ of a model with its interval, per shown metric, as the
    compare view shows it."""
    return tuple(f"{key}{part}" for key, *_ in delta_columns(metrics)
                 for part in ("", "_low", "_high"))


def leaderboard_columns(rows: list[dict], reported: bool = False,
                        metrics: Sequence[dict] = ()) -> list[dict]:
    """The leaderboard's value columns (see :func:`value_columns`; ``metrics``: see
    :func:`metric_columns`)."""
    return value_columns(rows, [("params_total_b", "Params (B)", 2, None),
               *metric_columns(metrics),
               ("false_positive_rate", "FP rate", 4,
                "false-positive rate of locale-specific word recall"),
               ("false_negative_rate", "FN rate", 4,
                "false-negative rate of locale-specific word recall")], reported)


def locale_delta_rows(rows: Sequence[dict], locale: str, model_slugs: dict[str, str],
                      delta_columns: Sequence[dict], score_columns: Sequence[dict]) -> Markup:
    """The rows of a locale page's "∆ of every model" table, one ``<tr>`` per row of
    ``rows``: the model (linked to the segment browser at the model and ``locale`` where it has
    a slug), its type, the ∆ cells with their intervals (:func:`.pages.interval_cell`) and the
    score cells (:func:`.pages.num_cell`), each column's cells made in bulk
    (:func:`.pages.interval_column`, :func:`.pages.num_column`: the same text). Built in Python,
    not by a template macro per row: a locale page has a row per model."""
    rows = list(rows)
    locale_query = escape(do_urlencode(locale))
    cells = [*(interval_column(rows, c["key"], c["digits"]) for c in delta_columns),
             *(num_column([row.get(c["key"]) for row in rows]) for c in score_columns)]
    out: list[str] = []
    for row, values in zip(rows, _joined(cells, len(rows)), strict=True):
        model = escape(row["model_id"])
        name = model
        if row["model_id"] in model_slugs:
            slug = escape(do_urlencode(model_slugs[row["model_id"]]))
            name = f'<a href="../browse.html#model={slug}&amp;locale={locale_query}">{model}</a>'
        kind = escape(row["type"])
        out.append(f'<tr>\n  <th scope="row" data-value="{model}">{name}</th>\n'
                   f'  <td data-value="{kind}">{kind}</td>\n{values}</tr>\n')
    return Markup("".join(out))


def _locale_entries(payload: dict) -> list[dict]:
    def html(pieces: list[str] | None) -> Markup | None:
        if pieces is None:
            return None
        return Markup("".join(
            f'<mark class="changed">{escape(text)}</mark>' if i % 2 else str(escape(text))
            for i, text in enumerate(pieces) if text))

    return [{"id": item[0], "src_o": html(item[1]), "src_l": html(item[2]),
             "ref_o": html(item[3]), "ref_l": html(item[4])} for item in payload["items"]]


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
