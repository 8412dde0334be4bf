"""The paper's figures as Vega-Lite charts (Altair), with static SVG renderings (vl-convert).

- ``delta_heatmap``: ∆ per model × locale, models and locales sorted by mean ∆ (paper, Fig. 6).
- ``delta_vs_size``: mean ∆ against total parameters on a log axis, one colour and shape per family
  (Fig. 2); drawn for evaluated and, separately, for reported results.
- ``same_language``: mean ∆ over models for each location of a language that has several (Fig. 3).

All data is inlined in the specs, so charts render offline; text from the data is set as text
by Vega (never as HTML).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import altair as alt

from cultivar_assets.files import MANIFEST, replace_folder

METRIC_LABEL = {"bleu": "∆BLEU", "chrf": "∆chrF"}
DIVERGING = alt.Scale(scheme="redblue", domainMid=0)


def _order_by_mean(rows: Sequence[dict], key: str, value: str) -> list[str]:
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row[value])
    return sorted(groups, key=lambda k: -fmean(groups[k]))


def delta_heatmap(deltas: Sequence[dict], metric: str) -> dict[str, Any]:
    """Models (rows) × locales (columns); both sorted by mean ∆, most negative last."""
    value = f"delta_{metric}"
    rows = [{"model": r["model_id"], "locale": r["locale"], "delta": r[value],
             "flores": r[f"flores_{metric}"], "cultivar": r[f"cultivar_{metric}"]}
            for r in deltas]
    chart = alt.Chart(alt.Data(values=rows)).mark_rect().encode(
        x=alt.X("locale:N", sort=_order_by_mean(rows, "locale", "delta"), title="locale"),
        y=alt.Y("model:N", sort=_order_by_mean(rows, "model", "delta"), title="model"),
        color=alt.Color("delta:Q", scale=DIVERGING, title=METRIC_LABEL[metric]),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("locale:N"),
                 alt.Tooltip("delta:Q", format=".2f", title=METRIC_LABEL[metric]),
                 alt.Tooltip("flores:Q", format=".2f", title="FLORES"),
                 alt.Tooltip("cultivar:Q", format=".2f", title="Cultivar")],
    ).properties(
        title=f"{METRIC_LABEL[metric]} by model and locale (sorted by mean ∆)",
        width=alt.Step(22), height=alt.Step(16),
    )
    return chart.to_dict()


def delta_vs_size(summary: Sequence[dict], metric: str, title: str) -> dict[str, Any]:
    """Mean pairwise ∆ against total parameters (log scale), by family."""
    rows = [{"model": r["model_id"], "family": r["family"], "params": r["params_total_b"],
             "delta": r[f"delta_{metric}"], "type": r["type"]}
            for r in summary if r.get("params_total_b") and r.get(f"delta_{metric}") is not None]
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("params:Q", scale=alt.Scale(type="log"), title="total parameters (B)"),
        y=alt.Y("delta:Q", title=METRIC_LABEL[metric]),
        color=alt.Color("family:N", title="family"),
    )
    points = base.mark_point(size=70, filled=True).encode(
        shape=alt.Shape("family:N", title="family"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("family:N"), alt.Tooltip("type:N"),
                 alt.Tooltip("params:Q", title="parameters (B)"),
                 alt.Tooltip("delta:Q", format=".2f", title=METRIC_LABEL[metric])],
    )
    lines = base.mark_line(opacity=0.5).encode(detail="family:N")
    return (lines + points).properties(title=title, width=420, height=260).to_dict()


def same_language(locale_deltas: Sequence[dict], metric: str) -> dict[str, Any] | None:
    """∆ averaged over models for each location of languages with several locales (Fig. 3)."""
    by_language: dict[str, list[dict]] = defaultdict(list)
    for row in locale_deltas:
        by_language[row["language_name"]].append(row)
    rows = [{"language": lang, "location": r["location_short"], "locale": r["locale"],
             "delta": r[f"delta_{metric}"], "official": bool(r["official_or_de_facto"])}
            for lang, group in by_language.items() if len(group) > 1 for r in group]
    if not rows:
        return None
    chart = alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("location:N", title=None, sort="-y"),
        y=alt.Y("delta:Q", title=METRIC_LABEL[metric]),
        color=alt.Color("official:N", title="official / de facto",
                        scale=alt.Scale(domain=[True, False], range=["#1f5f99", "#c2571a"])),
        column=alt.Column("language:N", title=None),
        tooltip=[alt.Tooltip("locale:N"), alt.Tooltip("delta:Q", format=".2f")],
    ).properties(title=f"{METRIC_LABEL[metric]} by location, same language", width=160,
                 height=200).resolve_scale(x="independent")
    return chart.to_dict()


def chart_entries(leaderboard: Sequence[dict], reported: Sequence[dict], deltas: Sequence[dict],
                  locale_rows: Sequence[dict]) -> list[dict[str, Any]]:
    """(id, title, description, spec) of every chart the site shows."""
    entries = []
    for metric in ("bleu", "chrf"):
        label = METRIC_LABEL[metric]
        if deltas:
            entries.append({"id": f"heatmap-{metric}", "page": "index",
                            "title": f"{label} per model and locale",
                            "alt": f"Heatmap of {label} for every evaluated model (rows) and "
                                   "locale (columns), both sorted by mean ∆; blue is positive, "
                                   "red negative.",
                            "spec": delta_heatmap(deltas, metric)})
        if leaderboard:
            entries.append({"id": f"size-{metric}", "page": "index",
                            "title": f"{label} against model size (evaluated)",
                            "alt": f"Scatter plot of mean {label} against total parameters on a "
                                   "log axis, one colour and shape per model family.",
                            "spec": delta_vs_size(
                                leaderboard, metric, f"{label} vs. size (evaluated here)")})
        if reported:
            entries.append({"id": f"reported-size-{metric}", "page": "index",
                            "title": f"{label} against model size (reported in the paper)",
                            "alt": f"Scatter plot of the paper's reported mean {label} against "
                                   "total parameters, one colour and shape per family.",
                            "spec": delta_vs_size(
                                reported, metric, f"{label} vs. size (reported, Table 3)")})
        same = same_language(locale_rows, metric)
        if same:
            entries.append({"id": f"same-language-{metric}", "page": "locales",
                            "title": f"{label} by location for languages with several locales",
                            "alt": f"Bar chart of {label} averaged over models, per location, "
                                   "for each language localised to several locations.",
                            "spec": same})
    return entries


def to_svg(spec: dict[str, Any]) -> str:
    from cultivar_assets.site.vl_cache import vegalite_to_svg

    return vegalite_to_svg(spec)  # cached: an unchanged chart is not rendered again


def write_charts(entries: Sequence[dict[str, Any]], folder: Path) -> list[Path]:
    """Each chart as ``<id>.vl.json`` and ``<id>.svg``, plus ``charts.json`` (the index)."""

    def write(work: Path) -> None:
        for entry in entries:
            (work / f"{entry['id']}.vl.json").write_text(json.dumps(entry["spec"]), "utf-8")
            (work / f"{entry['id']}.svg").write_text(to_svg(entry["spec"]), "utf-8")
        index = [{k: v for k, v in entry.items() if k != "spec"} for entry in entries]
        (work / "charts.json").write_text(json.dumps(index, indent=1), "utf-8")

    replace_folder(Path(folder), write, {"kind": "charts"})
    return sorted(p for p in Path(folder).iterdir() if p.name != MANIFEST)


def read_charts(folder: Path) -> list[dict[str, Any]]:
    """Chart entries written by :func:`write_charts` (specs included)."""
    index = json.loads((folder / "charts.json").read_text("utf-8"))
    return [{**entry, "spec": json.loads((folder / f"{entry['id']}.vl.json").read_text("utf-8"))}
            for entry in index]
