"""Building the static site from the DuckDB store.

Pages (all links relative, so the site works from ``file://`` and any static host):
``index.html`` (leaderboard: evaluated and reported, never merged; charts), ``locales.html``
(Tables 4 and 2), ``locales/<locale>.html`` (instances with changed spans, ∆ of every model),
``models/<model>.html`` (scores per test set, ∆ per locale) and
``models/<model>/<locale>.html`` (per-segment browser), ``dataset.html`` (dataset card), and
``downloads/`` (CSV, JSON, JSONL, parquet, the DuckDB file).

Every text from the data goes through Jinja2's HTML autoescaping, and chart specs are embedded
with ``tojson`` (which escapes ``<``, ``>``, ``&`` and quotes), so model names or outputs such as
``</script>`` stay text. The build writes into a temporary folder and swaps it in at the end.
Translations are streamed model by model in one ordered query, so the build time grows linearly
with the number of models.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cultivar_assets import __version__
from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name
from cultivar_assets.files import MANIFEST, replace_folder
from cultivar_assets.models import REPORTED_SOURCE
from cultivar_assets.site.diff import diff_html
from cultivar_assets.site.pages import PageWriter, model_slug
from cultivar_assets.store.database import Store

Progress = Callable[[str], None]
HIDDEN_OUTPUT = "(output identical to the original FLORES source; not shown)"


@dataclass(frozen=True)
class SiteSummary:
    path: Path
    pages: int
    files: int
    bytes: int
    seconds: float
    models: int
    locales: int


def _reported_csv(name: str) -> list[dict[str, str]]:
    text = resources.files("cultivar_assets.data").joinpath("reported", name).read_text("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _stream_by_model(rows: Iterable[dict]) -> Iterator[tuple[str, list[dict]]]:
    current, batch = None, []
    for row in rows:
        if row["model_id"] != current and batch:
            yield current, batch
            batch = []
        current = row["model_id"]
        batch.append(row)
    if batch:
        yield current, batch


def _instance_diffs(instances: dict[str, list[dict]]) -> dict[tuple[str, int], dict]:
    """Word diffs of each instance's sources and references (the same for every model)."""
    diffs = {}
    for locale, items in instances.items():
        for inst in items:
            src_o, src_l = diff_html(inst["source_original"] or "", inst["source_localised"])
            ref_o, ref_l = diff_html(inst["english_original"] or "", inst["english_localised"])
            diffs[locale, inst["instance_id"]] = {"id": inst["instance_id"], "src_o": src_o,
                                                  "src_l": src_l, "ref_o": ref_o, "ref_l": ref_l}
    return diffs


def _segment_pages(rows: list[dict], instances: dict[str, list[dict]],
                   locale_info: dict[str, dict],
                   diffs: dict[tuple[str, int], dict]) -> dict[str, list[dict]]:
    """Per locale of the model: the browser entries (original/localised, refs, hyps, diffs)."""
    hyps = {(r["test_set"], r["segment_id"]): r for r in rows}
    pages: dict[str, list[dict]] = {}
    for locale, items in instances.items():
        language = locale_info[locale]["flores_plus_code"]
        entries = []
        for inst in items:
            local = hyps.get((cultivar_test_set_name(locale), inst["instance_id"]))
            if local is None:
                continue
            original = hyps.get((flores_test_set_name(language), inst["instance_id"]))
            hyp_o, hyp_l = diff_html(original["hypothesis"] if original else "",
                                     local["hypothesis"])
            entries.append({
                **diffs[locale, inst["instance_id"]], "hyp_o": hyp_o, "hyp_l": hyp_l,
                "has_original": original is not None,
                "raw_o": original["raw_output"] if original else None,
                "raw_l": local["raw_output"],
                "raw_differs_o": bool(original and original["raw_output"].strip()
                                      != original["hypothesis"]),
                "raw_differs_l": local["raw_output"].strip() != local["hypothesis"],
                "rules_l": list(local["cleaning_rules"]),
            })
        if entries:
            pages[locale] = entries
    return pages


def chart_inputs(store: Store) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """What the charts are drawn from: leaderboard, reported results, ∆ rows, locale rows."""
    locale_info = {row["locale"]: row for row in store.query("site_locales")}
    locale_deltas = [{**row, "location_short": locale_info[row["locale"]]["location_short"],
                      "language_name": locale_info[row["locale"]]["language_name"]}
                     for row in store.query("site_locale_deltas")]
    return (store.query("leaderboard"), store.query("site_reported_leaderboard"),
            store.query("site_model_locale_deltas"), locale_deltas)


def build_site(store: Store, out_dir: Path, card_markdown: str | None = None,
               charts_dir: Path | None = None, include_database: bool | None = None,
               show_originals: bool | None = None,
               progress: Progress | None = None) -> SiteSummary:
    """Build the whole site into ``out_dir`` (swapped in only when the build has succeeded).

    ``charts_dir``: charts written by :func:`charts.write_charts` (the ``charts`` asset); without
    it the charts are drawn here. ``show_originals``: show original FLORES sentences (and offer
    them in downloads); ``include_database``: offer the DuckDB file, which holds them too. Both
    default to "only for the demo data": the FLORES maintainers ask that FLORES text not be
    re-hosted in crawlable plain form, and a public site is exactly that.
    """
    started = time.perf_counter()
    dataset = (store.query("dataset") or [{}])[0]
    demo = bool(dataset.get("is_demo"))
    options = {"show_originals": demo if show_originals is None else show_originals,
               "include_database": demo if include_database is None else include_database}
    counts: dict[str, int] = {}

    def write(work: Path) -> None:
        counts.update(_write_site(work, store, dataset, card_markdown, charts_dir, options,
                                  progress or (lambda _message: None)))

    replace_folder(Path(out_dir), write, {"kind": "site", "dataset": dataset.get("fingerprint"),
                                          **options})
    return SiteSummary(Path(out_dir), counts["pages"], counts["files"], counts["bytes"],
                       time.perf_counter() - started, counts["models"], counts["locales"])


def _write_site(work: Path, store: Store, dataset: dict, card_markdown: str | None,
                charts_dir: Path | None, options: dict[str, bool],
                say: Progress) -> dict[str, int]:
    from cultivar_assets.site import charts  # altair: imported only when a site is built


    leaderboard, reported, deltas, locale_deltas = chart_inputs(store)
    locales = store.query("site_locales")
    locale_info = {row["locale"]: row for row in locales}
    agreement = store.query("site_rank_agreement")
    scores = store.query("site_scores")
    recall = store.query("site_word_recall")
    missing = store.query("site_missing")
    cleaning = store.query("cleaning_counts")
    instances: dict[str, list[dict]] = defaultdict(list)
    for row in store.query("instances"):
        instances[row["locale"]].append(row)
    present_locales = sorted(instances)
    signatures = sorted({(r["bleu_signature"], r["chrf_signature"]) for r in leaderboard})
    show_originals = options["show_originals"]

    if charts_dir is not None:
        chart_entries = charts.read_charts(Path(charts_dir))
    else:
        chart_entries = charts.chart_entries(leaderboard, reported, deltas, locale_deltas)
    common = {"version": __version__, "dataset": dataset, "signatures": signatures,
              "reported_source": REPORTED_SOURCE, "show_originals": show_originals}
    writer = PageWriter(work, common)

    say("static files and charts")
    writer.copy_static()
    from cultivar_assets.site.vl_cache import javascript_bundle

    writer.text("static/vega-bundle.js", javascript_bundle())  # cached per vl-convert version
    if charts_dir is not None:
        for file in sorted(Path(charts_dir).iterdir()):
            if file.name != MANIFEST:
                writer.copy(file, f"charts/{file.name}")
    else:
        for entry in chart_entries:
            writer.text(f"charts/{entry['id']}.svg", charts.to_svg(entry["spec"]))
            writer.text(f"charts/{entry['id']}.vl.json", json.dumps(entry["spec"]))

    say("downloads")
    _downloads(writer, store, leaderboard, scores, options["include_database"])

    reported_locales = {r["locale"]: r for r in _reported_csv("table4_locales.csv")}
    reported_agreement = {r["locale"]: r for r in _reported_csv("table2_rank_correlation.csv")}
    families = sorted({r["family"] for r in leaderboard if r.get("family")})
    types = sorted({r["type"] for r in leaderboard if r.get("type")})

    say("leaderboard, locales and dataset pages")
    writer.page("index.html", "index.html.j2", leaderboard=leaderboard, reported=reported,
                charts=[c for c in chart_entries if c["page"] == "index"], families=families,
                types=types, missing=missing, include_database=options["include_database"])
    writer.page("locales.html", "locales.html.j2", locale_deltas=locale_deltas,
                agreement=agreement, reported_locales=reported_locales,
                reported_agreement=reported_agreement, locale_info=locale_info,
                present_locales=present_locales,
                charts=[c for c in chart_entries if c["page"] == "locales"])
    writer.page("dataset.html", "dataset.html.j2", card_html=_markdown(card_markdown),
                locales=locales, present_locales=present_locales)

    deltas_by_locale: dict[str, list[dict]] = defaultdict(list)
    deltas_by_model: dict[str, list[dict]] = defaultdict(list)
    for row in deltas:
        deltas_by_locale[row["locale"]].append(row)
        deltas_by_model[row["model_id"]].append(row)
    diffs = _instance_diffs(instances)
    for locale in present_locales:
        entries = [diffs[locale, inst["instance_id"]] for inst in instances[locale]]
        writer.page(f"locales/{locale}.html", "locale.html.j2", locale=locale_info[locale],
                    entries=entries,
                    deltas=sorted(deltas_by_locale[locale], key=lambda r: -r["delta_bleu"]))

    say("model pages and segment browsers")
    board = {row["model_id"]: row for row in leaderboard}
    by_model = {name: defaultdict(list) for name in ("scores", "recall", "cleaning")}
    for name, rows in (("scores", scores), ("recall", recall), ("cleaning", cleaning)):
        for row in rows:
            by_model[name][row["model_id"]].append(row)
    models_done = 0
    for model_id, raw_rows in _stream_by_model(store.stream("site_translations")):
        if model_id not in board:
            continue  # translated but not on the leaderboard (not aggregated)
        rows = [_public_row(row, show_originals) for row in raw_rows]
        slug = model_slug(model_id)
        pages = _segment_pages(rows, instances, locale_info, diffs)
        writer.page(f"models/{slug}.html", "model.html.j2", model=board[model_id],
                    scores=_pivot_scores(by_model["scores"][model_id]),
                    deltas=deltas_by_model[model_id], recall=by_model["recall"][model_id],
                    cleaning=by_model["cleaning"][model_id], segment_locales=list(pages))
        for locale, entries in pages.items():
            writer.page(f"models/{slug}/{locale}.html", "segments.html.j2",
                        model=board[model_id], locale=locale_info[locale], entries=entries)
        writer.text(f"downloads/translations/{slug}.jsonl", "".join(
            json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        models_done += 1
        if models_done % 10 == 0:
            say(f"{models_done}/{len(board)} models")
    return {"pages": writer.pages, "files": writer.files, "bytes": writer.bytes,
            "models": models_done, "locales": len(present_locales)}


def _public_row(row: dict, show_originals: bool) -> dict:
    """A translation as the site shows it: without FLORES text where originals are hidden.

    FLORES text is the source and reference of a ``flores_*`` segment, and an output that merely
    repeats that source (the copy baseline's).
    """
    out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in row.items()}
    if not show_originals and row["test_set"].startswith("flores_"):
        source = (row["source"] or "").strip()
        for key in ("hypothesis", "raw_output"):
            if (out[key] or "").strip() == source:
                out[key] = HIDDEN_OUTPUT
        out["source"] = out["reference"] = None
    return out


def _pivot_scores(rows: list[dict]) -> list[dict]:
    table: dict[str, dict] = {}
    for row in rows:
        entry = table.setdefault(row["test_set"], {"test_set": row["test_set"],
                                                   "kind": row["kind"], "locale": row["locale"],
                                                   "language": row["language"]})
        entry[row["metric"]] = row["score"]
    return list(table.values())


def _markdown(text: str | None) -> str | None:
    if text is None:
        return None
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def _downloads(writer: PageWriter, store: Store, leaderboard: list[dict], scores: list[dict],
               include_database: bool) -> None:
    columns = list(leaderboard[0]) if leaderboard else []
    buffer = io.StringIO()
    csv_writer = csv.DictWriter(buffer, fieldnames=columns)
    csv_writer.writeheader()
    csv_writer.writerows(leaderboard)
    writer.text("downloads/leaderboard.csv", buffer.getvalue())
    writer.text("downloads/leaderboard.json",
                json.dumps(leaderboard, ensure_ascii=False, indent=1, default=str))
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(scores) if scores else pa.table({}), sink)
    writer.data("downloads/scores.parquet", sink.getvalue())
    if include_database:
        writer.copy(store.path, "downloads/cultivar.duckdb")
