"""The paper's figures as Vega-Lite specs, with static SVG renderings (vl-convert).

Specs are written as plain Vega-Lite v6 dictionaries (the tests validate them against the
Vega-Lite schema that Altair ships); building them this way takes milliseconds where Altair's
objects took most of a second, which matters for a site rebuilt after every model.

- :func:`delta_heatmap` (paper, Fig. 6): ∆ per model × locale; models sorted by mean ∆ over
  locales (most negative at the bottom), locales by mean ∆ over models (most negative on the
  right). Diverging red–blue scale centred on 0 and symmetric (±max |∆|), so equal colours
  mean equal magnitudes. Cells are sized for reading: 26 px wide, labels of 11 px up to 40
  models, 10 px up to 150 and 9 px beyond, each row at least :data:`LINE_BOX` times its label
  size (18, 15 and 14 px), so rows never overlap whichever font draws them; locale labels
  and the legend sit on top, so a tall chart (320 models) is read from its head. Both axes are
  titled. The tooltip gives ∆ with its interval where the store has one.
- :func:`delta_vs_size` (Fig. 2): mean ∆ against total parameters (log axis over the data's
  range, not rounded out to powers of ten, with a margin of :data:`SIZE_PADDING` px), as wide as
  the pages' content (:data:`CONTENT_WIDTH`). One colour (:data:`FAMILY_COLOURS`, each at least
  3:1 against white, WCAG 2.1's contrast for graphics) and one shape per family, in one legend
  (colour and shape share the field and its title, and no layer turns its legend off, so
  Vega-Lite merges them). Lines (our reading of the figure): one line per family and prompt
  style, through its models in order of size; models of one family, style and size (e.g. two
  variants of one base model) are drawn as separate points, never joined by a vertical
  segment; a family's prompt styles are told apart by the line's dash. Error bars where the
  store has intervals.
- :func:`same_language` (Fig. 3): ∆BLEU and ∆chrF averaged over models for each location of
  the languages that were localised both where they are official and where they are not
  (Hindi and Chinese in Cultivar), bars coloured by official / not, error bars where present.

Static SVGs (vl-convert) are drawn for every chart a reader without JavaScript can use: a
heatmap of more than :data:`STATIC_HEATMAP_MAX_MODELS` models is drawn by the browser only (its
entry says ``"static": False``; ours: at 1,000 models one heatmap SVG took ~9 s to draw and is
tens of thousands of rectangles no reader takes in without the tooltips), so a new model does
not cost a redraw of two such SVGs.

All data is inlined in the specs, so charts render offline; Vega draws text from the data as
text (never as HTML). Every text of a chart is set in :data:`CHART_FONT` at an explicit size
(:func:`_config`), so its layout does not depend on the fonts a reader's system has.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from statistics import fmean
from typing import Any

from cultivar_assets.files import MANIFEST, replace_folder
from cultivar_assets.metrics.registry import PAPER_METRICS, table_label
from cultivar_assets.site.site_data import chart_inputs
from cultivar_assets.store.database import Store

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
METRICS = PAPER_METRICS
METRIC_LABEL = {metric: f"∆{table_label(metric)}" for metric in METRICS}
OFFICIAL_COLOURS = {"domain": ["yes", "no"], "range": ["#1f5f99", "#c2571a"]}
# Our choice: fonts with Arial's metrics first (Liberation Sans and Arimo are metric-compatible
# with Arial and free; one of the four is on nearly every system, and vl-convert, which draws the
# static SVGs, ships Liberation Sans), so a label is as wide in every browser as Vega measured it.
# "system-ui" is not in the list: it is Noto Sans where Noto is installed (a taller line box).
CHART_FONT = '"Liberation Sans", Arimo, Arial, Helvetica, sans-serif'
# The tallest line box (ascent + descent, as Chromium rounds them to whole pixels) of the common
# free fonts at 8-12 px, in em: Noto Sans CJK's 15 px at 10 px (Noto Sans: 1.4, DejaVu Sans and
# the Arial-metric fonts: 1.2; measured in Chromium, tests/test_site_charts.py). A row at least
# this many times its label size never overlaps the next, whichever font a system substitutes.
LINE_BOX = 1.5
# The pages' content width (site/static/style.css: main is at most 1400 px wide, less 1.5rem of
# padding on either side); the size charts fill it (autosize "fit-x": axes and legend included).
CONTENT_WIDTH = 1352
SIZE_PADDING = 24
# Our palette (Category10's hues, the light ones darkened): each has a contrast of at least 3:1
# against white (WCAG 2.1, 1.4.11; 4.2:1 or more). An ordinal scale cycles through it and the
# shapes (8) in step, so up to 40 families get a distinct (colour, shape) pair.
FAMILY_COLOURS = ("#1f77b4", "#c85a00", "#2a8a2a", "#d62728", "#9467bd", "#8c564b", "#c2338f",
                  "#6b6b6b", "#7d7d00", "#0f7f8c")
# Lines and error bars are drawn a little transparent (points are opaque); at this opacity every
# family colour still has 3:1 against white (3.3:1 at the least).
MARK_OPACITY = 0.85
# Heatmaps of more models than this get no static SVG (module docstring; ours).
STATIC_HEATMAP_MAX_MODELS = 200


def _config() -> dict[str, Any]:
    # labelLimit 0: labels are not truncated (model ids are at most 96 characters), which also
    # halves the time to draw a heatmap (truncating measures every label again and again)
    text = {"labelFont": CHART_FONT, "titleFont": CHART_FONT}
    return {"view": {"stroke": None}, "font": CHART_FONT,
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 0, **text},
            "legend": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 0,
                       "titleLimit": 0, **text},
            "header": {"labelFontSize": 12, "titleFontSize": 12, **text},
            "text": {"font": CHART_FONT, "fontSize": 11},
            "title": {"fontSize": 14, "subtitleFontSize": 12, "anchor": "start",
                      "font": CHART_FONT, "subtitleFont": CHART_FONT}}


def _order_by_mean(rows: Sequence[dict], key: str, value: str) -> list[str]:
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row[value] is not None:
            groups[row[key]].append(row[value])
    return sorted(groups, key=lambda k: (-fmean(groups[k]), k))


def _interval(row: dict, key: str) -> tuple[float, float] | None:
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    return (low, high) if low is not None and high is not None else None


def _interval_text(row: dict, key: str) -> str | None:
    bounds = _interval(row, key)
    return None if bounds is None else f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


def heatmap_steps(n_models: int) -> tuple[int, int, int]:
    """(cell width, cell height, label font size) for ``n_models`` rows (module docstring): the
    height is at least :data:`LINE_BOX` times the label size (up to 40 models: Fig. 6's 18 px)."""
    if n_models <= 40:
        return 26, 18, 11
    font = 10 if n_models <= 150 else 9
    return 24, math.ceil(LINE_BOX * font), font


def delta_heatmap(deltas: Sequence[dict], metric: str) -> dict[str, Any]:
    """Models (rows) × locales (columns); both sorted by mean ∆, most negative last."""
    key = f"delta_{metric}"
    rows = [{"model": r["model_id"], "locale": r["locale"], "delta": r[key],
             "interval": _interval_text(r, key), "flores": r[f"flores_{metric}"],
             "cultivar": r[f"cultivar_{metric}"]} for r in deltas if r[key] is not None]
    models = _order_by_mean(rows, "model", "delta")
    width, height, font = heatmap_steps(len(models))
    extent = max((abs(r["delta"]) for r in rows), default=1.0) or 1.0
    label = METRIC_LABEL[metric]
    tooltip = [{"field": "model", "type": "nominal"}, {"field": "locale", "type": "nominal"},
               {"field": "delta", "type": "quantitative", "format": ".2f", "title": label}]
    if any(r["interval"] for r in rows):
        tooltip.append({"field": "interval", "type": "nominal", "title": "95% interval"})
    tooltip += [{"field": "flores", "type": "quantitative", "format": ".2f", "title": "FLORES"},
                {"field": "cultivar", "type": "quantitative", "format": ".2f",
                 "title": "Cultivar"}]
    return {
        "$schema": SCHEMA, "config": _config(),
        # short axis titles: a rotated title longer than a few rows' height is cut off; room on
        # the left, where a browser's font can draw a long model name wider than vl-convert's
        "padding": {"left": 24, "top": 5, "right": 5, "bottom": 5},
        "title": {"text": f"{label} by model and locale",
                  "subtitle": "rows and columns sorted by mean ∆"},
        # no ARIA label per cell (8,640 of them at 320 models): the figure has its own text
        # alternative, and the values are in the tables; the SVG is 3.7 times smaller
        "data": {"values": rows}, "mark": {"type": "rect", "stroke": "#ffffff",
                                           "strokeWidth": 0.5, "aria": False},
        "width": {"step": width}, "height": {"step": height},
        "encoding": {
            "x": {"field": "locale", "type": "nominal", "sort": _order_by_mean(
                rows, "locale", "delta"), "title": "locale",
                  "axis": {"orient": "top", "labelAngle": -50, "labelFontSize": font}},
            "y": {"field": "model", "type": "nominal", "sort": models, "title": "model",
                  "axis": {"labelFontSize": font, "titleAnchor": "start"}},
            "color": {"field": "delta", "type": "quantitative", "title": label,
                      "scale": {"scheme": "redblue", "domain": [-extent, extent],
                                "domainMid": 0},
                      "legend": {"orient": "top", "direction": "horizontal",
                                 "gradientLength": 240}},
            "tooltip": tooltip,
        },
    }


def _size_rows(summary: Sequence[dict], metric: str) -> list[dict]:
    key = f"delta_{metric}"
    rows = [{"model": r["model_id"], "family": r["family"], "params": r["params_total_b"],
             "delta": r[key], "type": r.get("type"), "style": r.get("prompt_style") or "–",
             "low": (_interval(r, key) or (None, None))[0],
             "high": (_interval(r, key) or (None, None))[1],
             "interval": _interval_text(r, key)}
            for r in summary if r.get("params_total_b") and r.get(key) is not None]
    # Lines: (family, prompt style, track); the n-th model of one family, style and size goes
    # on track n, so no line joins two models of the same size.
    seen: dict[tuple, int] = defaultdict(int)
    for row in sorted(rows, key=lambda r: (r["family"], r["style"], r["params"], r["model"])):
        track = seen[row["family"], row["style"], row["params"]]
        seen[row["family"], row["style"], row["params"]] += 1
        # JSON: unambiguous and printable (an SVG is XML, which has no NUL character)
        row["line"] = json.dumps([row["family"], row["style"], track], ensure_ascii=False)
    return rows


def delta_vs_size(summary: Sequence[dict], metric: str, title: str) -> dict[str, Any]:
    """Mean pairwise ∆ against total parameters (log scale), by family (module docstring)."""
    rows = _size_rows(summary, metric)
    label = METRIC_LABEL[metric]
    families = sorted({r["family"] for r in rows})
    colour = {"field": "family", "type": "nominal", "title": "family",
              "scale": {"domain": families, "range": list(FAMILY_COLOURS)}}
    shape = {"field": "family", "type": "nominal", "title": "family",
             "scale": {"domain": families}}
    styles_per_family: dict[str, set] = defaultdict(set)
    for row in rows:
        styles_per_family[row["family"]].add(row["style"])
    variants = any(len(styles) > 1 for styles in styles_per_family.values())
    sizes = [r["params"] for r in rows]
    # the data's range (one size alone: a factor of 2 either side, a log scale needs a range)
    domain = ([min(sizes), max(sizes)] if len(set(sizes)) > 1
              else [sizes[0] / 2, sizes[0] * 2] if sizes else None)
    x = {"field": "params", "type": "quantitative",
         "scale": {"type": "log", "nice": False, "padding": SIZE_PADDING,
                   **({"domain": domain} if domain else {})},
         "title": "total parameters (B, log scale)"}
    y = {"field": "delta", "type": "quantitative", "title": label}
    # only the points are described to assistive technology (each one's text names the model,
    # its size, ∆ and interval): the lines through a family and the error bars repeat them
    # (a line's default description listed the internal "line" key), and were 1,200 of 2,200
    # described marks at 1,000 models
    line: dict[str, Any] = {
        "mark": {"type": "line", "opacity": MARK_OPACITY, "strokeWidth": 1.5, "aria": False},
        "encoding": {"x": x, "y": y, "color": colour,
                     "detail": {"field": "line", "type": "nominal"},
                     "order": {"field": "params", "type": "quantitative"}}}
    if variants:
        line["encoding"]["strokeDash"] = {"field": "style", "type": "nominal",
                                          "title": "prompt style"}
    tooltip = [{"field": "model", "type": "nominal"}, {"field": "family", "type": "nominal"},
               {"field": "type", "type": "nominal"},
               {"field": "style", "type": "nominal", "title": "prompt style"},
               {"field": "params", "type": "quantitative", "title": "parameters (B)"},
               {"field": "delta", "type": "quantitative", "format": ".2f", "title": label}]
    layers = [line]
    if any(r["interval"] for r in rows):
        tooltip.append({"field": "interval", "type": "nominal", "title": "95% interval"})
        layers.append({"mark": {"type": "rule", "opacity": MARK_OPACITY, "aria": False},
                       "encoding": {"x": x, "y": {"field": "low", "type": "quantitative"},
                                    "y2": {"field": "high"}, "color": colour}})
    layers.append({"mark": {"type": "point", "size": 70, "filled": True, "opacity": 1},
                   "encoding": {"x": x, "y": y, "color": colour, "shape": shape,
                                "tooltip": tooltip}})
    layers.append({"mark": {"type": "rule", "color": "#777", "strokeDash": [2, 2],
                            "aria": False},
                   "data": {"values": [{"zero": 0}]},
                   "encoding": {"y": {"field": "zero", "type": "quantitative"}}})
    return {"$schema": SCHEMA, "config": _config(), "title": title, "width": CONTENT_WIDTH,
            "autosize": {"type": "fit-x", "contains": "padding"},
            "height": 320, "data": {"values": rows}, "layer": layers}


def figure3_languages(locale_rows: Sequence[dict]) -> list[str]:
    """Languages localised both where they are official and where they are not (paper, §4.5)."""
    by_language: dict[str, set[bool]] = defaultdict(set)
    for row in locale_rows:
        by_language[row["language_name"]].add(bool(row["official_or_de_facto"]))
    return sorted(lang for lang, kinds in by_language.items() if kinds == {True, False})


def same_language(locale_deltas: Sequence[dict]) -> dict[str, Any] | None:
    """Fig. 3: ∆BLEU and ∆chrF by location for the languages of :func:`figure3_languages`.

    One panel per metric (as in the paper), in it one group of bars per language, locations
    sorted by ∆ (highest first); the y scale is shared within a metric."""
    languages = figure3_languages(locale_deltas)
    if not languages:
        return None
    groups = []
    for metric in METRICS:
        key = f"delta_{metric}"
        panels = []
        for language in languages:
            rows = sorted(({"language": r["language_name"], "location": r["location_short"],
                            "locale": r["locale"], "delta": r[key], "n_models": r.get("n_models"),
                            "official": "yes" if r["official_or_de_facto"] else "no",
                            "low": (_interval(r, key) or (None, None))[0],
                            "high": (_interval(r, key) or (None, None))[1],
                            "interval": _interval_text(r, key)}
                           for r in locale_deltas
                           if r["language_name"] == language and r[key] is not None),
                          key=lambda row: -row["delta"])
            x = {"field": "location", "type": "nominal", "title": None,
                 "sort": [row["location"] for row in rows], "axis": {"labelAngle": 0}}
            tooltip = [{"field": "locale", "type": "nominal"},
                       {"field": "delta", "type": "quantitative", "format": ".2f",
                        "title": METRIC_LABEL[metric]},
                       {"field": "n_models", "type": "quantitative", "title": "models"}]
            layers: list[dict[str, Any]] = [{
                "mark": {"type": "bar"},
                "encoding": {"x": x, "y": {"field": "delta", "type": "quantitative",
                                           "title": METRIC_LABEL[metric]},
                             "color": {"field": "official", "type": "nominal",
                                       "title": "official or de facto language there",
                                       "scale": OFFICIAL_COLOURS},
                             "tooltip": tooltip}}]
            if any(row["interval"] for row in rows):
                tooltip.append({"field": "interval", "type": "nominal", "title": "95% interval"})
                layers.append({"mark": {"type": "rule", "color": "#222"},
                               "encoding": {"x": x,
                                            "y": {"field": "low", "type": "quantitative"},
                                            "y2": {"field": "high"}}})
            panels.append({"title": {"text": language, "orient": "bottom", "fontSize": 12},
                           "data": {"values": rows}, "width": {"step": 42}, "height": 220,
                           "layer": layers})
        groups.append({"title": f"{METRIC_LABEL[metric]} by location", "hconcat": panels,
                       "resolve": {"scale": {"y": "shared"}}})
    return {"$schema": SCHEMA, "config": _config(), "hconcat": groups,
            "resolve": {"scale": {"y": "independent", "color": "shared"},
                        "legend": {"color": "shared"}}}


def chart_entries(leaderboard: Sequence[dict], reported: Sequence[dict], deltas: Sequence[dict],
                  locale_rows: Sequence[dict]) -> list[dict[str, Any]]:
    """(id, page, title, alt text, static, spec) of every chart the site shows (``static``:
    whether it has a static SVG, see the module docstring): the heatmaps
    (:func:`heatmap_entries`), then the other charts (:func:`other_entries`)."""
    return heatmap_entries(deltas) + other_entries(leaderboard, reported, locale_rows)


def heatmap_entries(deltas: Sequence[dict]) -> list[dict[str, Any]]:
    """The entries of :func:`chart_entries`' heatmaps (Fig. 6), one per metric."""
    entries = []
    n_models = len({r["model_id"] for r in deltas})
    for metric in METRICS:
        label = METRIC_LABEL[metric]
        if deltas:
            entries.append({"id": f"heatmap-{metric}", "page": "index",
                            "static": n_models <= STATIC_HEATMAP_MAX_MODELS,
                            "title": f"{label} per model and locale (paper, Fig. 6)",
                            "alt": f"Heatmap of {label} for every evaluated model (rows) and "
                                   "locale (columns), both sorted by mean ∆; blue is positive, "
                                   "red negative, white zero.",
                            "spec": delta_heatmap(deltas, metric)})
    return entries


def other_entries(leaderboard: Sequence[dict], reported: Sequence[dict],
                  locale_rows: Sequence[dict]) -> list[dict[str, Any]]:
    """The entries of :func:`chart_entries`' other charts: the sizes (Fig. 2), evaluated here
    and reported, and the same languages' locations (Fig. 3)."""
    entries = []
    for metric in METRICS:
        label = METRIC_LABEL[metric]
        if any(r.get("params_total_b") for r in leaderboard):
            entries.append({"id": f"size-{metric}", "page": "index",
                            "static": True,
                            "title": f"{label} against model size, evaluated here (Fig. 2)",
                            "alt": f"Mean {label} against total parameters on a log axis; one "
                                   "colour and shape per model family, a line through each "
                                   "family's models in order of size.",
                            "spec": delta_vs_size(
                                leaderboard, metric, f"{label} vs. size (evaluated here)")})
        if reported:
            entries.append({"id": f"reported-size-{metric}", "page": "index",
                            "static": True,
                            "title": f"{label} against model size, reported in the paper",
                            "alt": f"The paper's reported mean {label} against total "
                                   "parameters, one colour and shape per family.",
                            "spec": delta_vs_size(
                                reported, metric, f"{label} vs. size (reported, Table 3)")})
    same = same_language(locale_rows)
    if same:
        entries.append({"id": "same-language", "page": "locales",
                        "static": True,
                        "title": "∆ by location for languages localised where they are "
                                 "official and where they are not (Fig. 3)",
                        "alt": "Bar charts of ∆BLEU and ∆chrF averaged over models, per "
                               "location, for each language localised both where it is "
                               "official and where it is not; bars coloured by official or "
                               "not.",
                        "spec": same})
    return entries


def to_svg(spec: dict[str, Any]) -> str:
    from cultivar_assets.site.vl_cache import vegalite_to_svg

    return vegalite_to_svg(spec)  # cached: an unchanged chart is not rendered again


def write_charts(entries: Sequence[dict[str, Any]], folder: Path,
                 svgs: Mapping[str, Future[str]] | None = None) -> list[Path]:
    """Each chart as ``<id>.vl.json`` and, where it is ``static``, ``<id>.svg``, plus
    ``charts.json`` (the index). ``svgs``: chart id -> its SVG (:func:`to_svg` of its spec)
    being drawn already; the other static charts' SVGs are drawn here."""

    def write(work: Path) -> None:
        for entry in entries:
            (work / f"{entry['id']}.vl.json").write_text(json.dumps(entry["spec"]), "utf-8")
            if entry["static"]:
                drawn = (svgs or {}).get(entry["id"])
                svg = drawn.result() if drawn is not None else to_svg(entry["spec"])
                (work / f"{entry['id']}.svg").write_text(svg, "utf-8")
        index = [{k: v for k, v in entry.items() if k != "spec"} for entry in entries]
        (work / "charts.json").write_text(json.dumps(index, indent=1), "utf-8")

    replace_folder(Path(folder), write, {"kind": "charts"})
    return sorted(p for p in Path(folder).iterdir() if p.name != MANIFEST)


def _start_vl_convert() -> None:
    """vl-convert's JavaScript engine started (its first call starts it, about half a second;
    asking for its themes runs in it and draws nothing)."""
    import vl_convert

    vl_convert.get_themes()


def write_store_charts(store: Store, folder: Path) -> tuple[list[dict[str, Any]], list[Path]]:
    """The ``charts`` asset's work: the charts of ``store`` (:func:`chart_entries` of
    :func:`~cultivar_assets.site.site_data.chart_inputs`) written to ``folder``
    (:func:`write_charts`); the entries and the files written. vl-convert's engine is started
    in a thread of its own while the store is read (:func:`_start_vl_convert`), and the other
    charts' static SVGs are drawn there while the heatmaps' specs are built (vl-convert works
    outside Python's lock; one chart at a time, as :func:`write_charts` would)."""
    with ThreadPoolExecutor(max_workers=1) as drawing:
        started = drawing.submit(_start_vl_convert)
        leaderboard, reported, deltas, locale_rows = chart_inputs(store)
        others = other_entries(leaderboard, reported, locale_rows)
        svgs = {entry["id"]: drawing.submit(to_svg, entry["spec"])
                for entry in others if entry["static"]}
        started.result()
        entries = heatmap_entries(deltas) + others  # chart_entries' order
        return entries, write_charts(entries, Path(folder), svgs)


def read_charts(folder: Path) -> list[dict[str, Any]]:
    """Chart entries written by :func:`write_charts` (specs included)."""
    index = json.loads((folder / "charts.json").read_text("utf-8"))
    return [{**entry, "spec": json.loads((folder / f"{entry['id']}.vl.json").read_text("utf-8"))}
            for entry in index]
