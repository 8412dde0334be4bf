"""What the site build reads from the store, read once per build (:func:`read_site_data`).

Rows come from the site's named statements (``sql/site.sql``) and the published tables
(:data:`cultivar_assets.site.downloads.PUBLISHED_TABLES`); translations and per-segment
statistics are read later, one model at a time (:func:`model_tables`), and only for the models
whose part of the site is not taken from a folder of its own
(:mod:`cultivar_assets.site.model_part`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources

import pyarrow as pa
import pyarrow.compute as pc

from cultivar_assets.engines.outputs import submitted_note
from cultivar_assets.metrics.registry import PAPER_METRICS, column_key
from cultivar_assets.site import downloads as dl
from cultivar_assets.site.failures import failure_rows
from cultivar_assets.store.database import Reader, Store

# The statistics views the statistics_macros.html.j2 blocks show.
STATISTICS_VIEWS = ("contamination_rules", "table_averages", "statistics_settings",
                    "error_table5", "error_correlations", "error_files")


@dataclass
class SiteData:
    """The store's rows the pages, shards and downloads are made from."""

    views: set[str]
    leaderboard: list[dict]
    reported: list[dict]
    deltas: list[dict]  # per model and locale
    locale_deltas: list[dict]
    locales: list[dict]
    locale_info: dict[str, dict]
    agreement: list[dict]
    models: dict[str, dict]  # the model cards' rows
    published: dict[str, pa.Table]
    missing: list[dict]
    annotation_summary: list[dict]
    annotations: dict[str, dict[int, dict]]  # locale -> instance -> provenance as shown
    statistics: dict[str, list[dict]]  # intervals and ranks are columns of the rows above
    instances: dict[str, list[dict]]
    present_locales: list[str]
    instance_ids: dict[str, list[int]]
    segments: pa.Table
    board: dict[str, dict]  # the leaderboard by model
    failed: list[dict]
    metrics: list[dict]  # the aggregated metrics in order: metric, label, higher_is_better,
    # signature, tokenizer_sha256

    def model_rows(self, models: set[str], names: Sequence[str] | None = None
                   ) -> dict[str, dict[str, list[dict]]]:
        """The model pages' rows of ``models``, by table (of ``names``; None: every table of
        :data:`MODEL_PAGE_TABLES`) and model, in the published tables' order (one filter of
        each table, not one per model)."""
        out: dict[str, dict[str, list[dict]]] = {}
        for name in MODEL_PAGE_TABLES if names is None else names:
            table = MODEL_PAGE_TABLES[name]
            by_model: dict[str, list[dict]] = defaultdict(list)
            if models:
                published = self.published[table]
                wanted = published.filter(pc.is_in(published["model_id"],
                                                   pa.array(sorted(models), pa.string())))
                for row in wanted.to_pylist():
                    by_model[row["model_id"]].append(row)
            out[name] = by_model
        return out


# The published wide tables that get the columns of the other stored metrics: name, level of
# raw.metric_values, the columns that name a row.
MORE_METRIC_TABLES = (("model_locale_deltas", "model_locale", ("model_id", "locale")),
                      ("locale_deltas", "locale", ("locale",)))
# A model page's tables read from the published tables: its name for them -> the table.
MODEL_PAGE_TABLES = {"scores": "scores", "recall": "word_recall", "cleaning": "cleaning_counts"}
# Those of them made from the model's own rows and the dataset alone (the scores of its current
# run with their test sets' kind, language and locale; the counts of its outputs' cleaning
# rules): a model's part of the site writes their downloads (model_part.py). Name -> the named
# query of sql/site.sql that reads the given models' rows of the published table, in its order.
OWN_MODEL_TABLES = {"scores": "site_model_scores", "cleaning": "site_model_cleaning_counts"}


def own_model_rows(reader: Reader, models: Sequence[str]) -> dict[str, dict[str, list[dict]]]:
    """The rows of :data:`OWN_MODEL_TABLES` of ``models``, by table and model: the same rows
    as :meth:`SiteData.model_rows` takes from the published tables, read for these models
    alone (one query per table)."""
    out: dict[str, dict[str, list[dict]]] = {}
    for name, query in OWN_MODEL_TABLES.items():
        by_model: dict[str, list[dict]] = defaultdict(list)
        if models:
            for row in reader.arrow(query, models=sorted(models)).to_pylist():
                by_model[row["model_id"]].append(row)
        out[name] = by_model
    return out


def reported_csv(name: str) -> list[dict[str, str]]:
    """A CSV of the paper's reported results (``cultivar_assets/data/reported/``)."""
    import csv
    import io

    text = resources.files("cultivar_assets.data").joinpath("reported", name).read_text("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


# The quantities of raw.metric_values in the order of the wide views' columns (sql/views.sql).
SIDES = ("flores", "cultivar", "delta")


def more_metric_names(metrics: Sequence[str]) -> list[str]:
    """The columns of ``metrics`` (those the wide views have no columns for) in the wide views'
    order: per metric and side (:data:`SIDES`) ``<side>_<column key>``, ``_low``, ``_high``
    and, for ∆, ``_excludes_zero``."""
    names = []
    for metric in metrics:
        for side in SIDES:
            name = f"{side}_{column_key(metric)}"
            names += [name, f"{name}_low", f"{name}_high"]
            if side == "delta":
                names.append(f"{name}_excludes_zero")
    return names


def more_metric_columns(rows: list[dict], keys: Sequence[str] = ("model_id",)
                        ) -> dict[tuple, dict]:
    """(values of ``keys``) -> the columns (:func:`more_metric_names`) of the metrics the wide
    views have no columns for (every one but :data:`PAPER_METRICS`), from ``leaderboard_metrics``'
    rows of one level (``site_more_metric_rows``)."""
    columns: dict[tuple, dict] = defaultdict(dict)
    for row in rows:
        if row["metric"] in PAPER_METRICS:
            continue
        name = f"{row['quantity']}_{column_key(row['metric'])}"
        item = columns[tuple(row[k] for k in keys)]
        item.update({name: row["value"], f"{name}_low": row["low"], f"{name}_high": row["high"]})
        if row["quantity"] == "delta":
            item[f"{name}_excludes_zero"] = row["excludes_zero"]
    return dict(columns)


def with_more_metrics(table: pa.Table, reader: Reader, level: str, keys: Sequence[str],
                      metrics: Sequence[str]) -> pa.Table:
    """``table`` (a wide view's rows of ``level``) with the columns of the stored ``metrics``
    that it has none for (:func:`more_metric_names`) appended, each row's from
    ``leaderboard_metrics`` (NULL where none is stored)."""
    more = [m for m in metrics if m not in PAPER_METRICS]
    if not more:
        return table
    extra = more_metric_columns(reader.rows("site_more_metric_rows", level=level,
                                            wide=list(PAPER_METRICS)), keys)
    items = list(zip(*(table[k].to_pylist() for k in keys), strict=True))
    for name in more_metric_names(more):
        kind = pa.bool_() if name.endswith("_excludes_zero") else pa.float64()
        values = [extra.get(item, {}).get(name) for item in items]
        table = table.append_column(name, pa.array(values, kind))
    return table


def board_table(published: pa.Table) -> pa.Table:
    """The published leaderboard (``site_leaderboard``) with each "not separable from" list
    (``not_separable_<column>``) replaced by its length (``not_separable_<column>_count``): the
    leaderboard's CSV and JSON downloads, our choice. The lists grow with the square of the
    models (at 1,000 models 937,000 names, 28 MB of the two files, most of a rebuild's text);
    they stay in the parquet download, the Query page's table and ``data/separable.js``."""
    lists = [name for name in published.column_names if name.startswith("not_separable_")]
    table = published.drop_columns(lists)
    for name in lists:
        table = table.append_column(f"{name}_count", pc.list_value_length(published[name]))
    return table


def board_rows(published: pa.Table) -> list[dict]:
    """``site_leaderboard_rows`` (the leaderboard without its "not separable from" lists, with
    their lengths) made from the published leaderboard (``site_leaderboard``, read anyway, in
    the same order) instead of evaluating the view again: at 1,000 models that took 0.4 s."""
    return board_table(published).drop_columns(["latest_run_failed"]).to_pylist()


def read_chart_inputs(reader: Reader, published: dict[str, pa.Table] | None = None
                      ) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """:func:`chart_inputs` from an open reader; the leaderboard rows (:func:`board_rows`) and
    the ∆ rows from the ``published`` tables where given."""
    published = published or {}
    locale_info = {row["locale"]: row for row in reader.rows("site_locales")}
    models = reader.rows("site_models")
    styles = {row["model_id"]: row["prompt_style"] for row in models}
    # "outputs submitted, produced with ..., not run here": from the stored run record
    submitted = {row["model_id"]: submitted_note(row["engine"], row["engine_version"])
                 for row in models}
    locale_deltas = [{**row, "location_short": locale_info[row["locale"]]["location_short"],
                      "language_name": locale_info[row["locale"]]["language_name"]}
                     for row in (published["locale_deltas"].to_pylist()
                                 if "locale_deltas" in published
                                 else reader.rows("site_locale_deltas"))]
    extra = more_metric_columns(reader.rows("site_more_metric_rows", level="model",
                                            wide=list(PAPER_METRICS)))
    leaderboard = [{**row, "prompt_style": styles.get(row["model_id"]),
                    "submitted": submitted.get(row["model_id"]),
                    **extra.get((row["model_id"],), {})}
                   for row in (board_rows(published["leaderboard"]) if "leaderboard" in published
                               else reader.rows("site_leaderboard_rows"))]
    register_published(reader, published, ("model_locale_deltas",))
    deltas = reader.rows("site_model_locale_deltas")
    return leaderboard, reader.rows("site_reported_leaderboard"), deltas, locale_deltas


def register_published(reader: Reader, published: dict[str, pa.Table],
                       names: Sequence[str]) -> None:
    """The published tables ``names`` readable as ``published_<name>`` by ``reader``'s queries
    (:meth:`Reader.register`): from ``published`` where they are in it, else read now."""
    by_name = {t.name: t for t in dl.PUBLISHED_TABLES}
    for name in names:
        table = published[name] if name in published else reader.arrow(by_name[name].query)
        reader.register(f"published_{name}", table)


def chart_inputs(store: Store) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """What the charts are drawn from: leaderboard, reported results, ∆ rows, locale rows."""
    with store.reader() as reader:
        return read_chart_inputs(reader)


def read_site_data(reader: Reader, show_originals: bool) -> SiteData:
    """Everything but the translations and statistics (:func:`model_tables`);
    ``show_originals``: the originals policy the annotations are shown under
    (:func:`provenance`)."""
    r = reader
    views = {row["view_name"] for row in r.rows("site_views")}
    published = {t.name: r.arrow(t.query) for t in dl.PUBLISHED_TABLES
                 if t.name != "annotation_summary" or "annotation_summary" in views}
    metrics = r.rows("site_statistics_metrics")
    # the wide tables with the columns of every other stored metric (the pages show them all)
    stored = [m["metric"] for m in metrics]
    for name, level, keys in MORE_METRIC_TABLES:
        published[name] = with_more_metrics(published[name], r, level, keys, stored)
    leaderboard, reported, deltas, locale_deltas = read_chart_inputs(r, published)
    locales = r.rows("site_locales")
    locale_info = {row["locale"]: row for row in locales}
    agreement = r.rows("site_rank_agreement")
    models = {row["model_id"]: row for row in r.rows("site_models")}
    missing = published["missing_test_sets"].to_pylist()
    annotation_summary = (published["annotation_summary"].to_pylist()
                          if "annotation_summary" in published else [])
    annotations: dict[str, dict[int, dict]] = defaultdict(dict)
    if "annotations" in views:
        for row in r.rows("site_annotations"):
            annotations[row["locale"]][row["instance_id"]] = provenance(row, show_originals)
    statistics = {name: r.rows(f"site_{name}") if name in views else []
                  for name in STATISTICS_VIEWS}
    instances: dict[str, list[dict]] = defaultdict(list)
    for row in r.rows("instances"):
        instances[row["locale"]].append(row)
    instance_ids = {locale: [inst["instance_id"] for inst in items]
                    for locale, items in instances.items()}
    segments = r.arrow("site_segments")
    board = {row["model_id"]: row for row in leaderboard}
    failed = failure_rows(r.rows("site_failed_models"), set(board))
    return SiteData(
        views=views, leaderboard=leaderboard, reported=reported, deltas=deltas,
        locale_deltas=locale_deltas, locales=locales, locale_info=locale_info,
        agreement=agreement, models=models, published=published, missing=missing,
        annotation_summary=annotation_summary,
        annotations=annotations, statistics=statistics, instances=instances,
        present_locales=sorted(instances), instance_ids=instance_ids, segments=segments,
        board=board, failed=failed, metrics=metrics)


def provenance(row: dict, show_originals: bool) -> dict:
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


def model_tables(reader: Reader, models: list[str], query: str = "site_model_translations"
                 ) -> Iterator[tuple[str, pa.Table]]:
    """(model, its rows as Arrow) for ``models``, one model at a time: its translations, or the
    rows of another named query ordered by model (``site_model_stats``)."""
    if not models:
        return
    current, pieces = None, []
    for batch in reader.batches(query, models=models):
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
