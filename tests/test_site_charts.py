"""The charts: valid Vega-Lite, the paper's figures as described, and readable in Chromium at 3,
32 and 320 models (one legend per field, nothing blank, heatmap labels that do not overlap)."""

from __future__ import annotations

import base64
import itertools
from collections import defaultdict

import pytest
from chart_helpers import chart_inputs
from site_helpers import NEEDS_CHROMIUM, chromium

from cultivar_assets.site import charts
from cultivar_assets.site.build import vega_bundle


def validate(spec: dict) -> None:
    import jsonschema
    from altair.vegalite.v6.schema import core

    jsonschema.validate(spec, core.load_schema())


@pytest.mark.parametrize("n_models", [3, 32, pytest.param(320, marks=pytest.mark.slow)])
@pytest.mark.parametrize("intervals", [True, False])
def test_every_chart_is_valid_vega_lite(n_models, intervals):
    entries = charts.chart_entries(*chart_inputs(n_models, intervals))
    assert {e["id"] for e in entries} == {"heatmap-bleu", "heatmap-chrf", "size-bleu",
                                          "size-chrf", "same-language"}
    for entry in entries:
        validate(entry["spec"])
        tooltips = repr(entry["spec"])
        assert ("95% interval" in tooltips) == intervals, entry["id"]


def test_heatmap_sorts_by_mean_delta_on_a_symmetric_scale_centred_on_zero():
    _, _, deltas, _ = chart_inputs(32)
    spec = charts.delta_heatmap(deltas, "bleu")
    means = defaultdict(list)
    for row in deltas:
        means[row["model_id"]].append(row["delta_bleu"])
    order = sorted(means, key=lambda m: -sum(means[m]) / len(means[m]))
    assert spec["encoding"]["y"]["sort"] == order  # most negative at the bottom
    scale = spec["encoding"]["color"]["scale"]
    assert scale["domainMid"] == 0 and scale["domain"][0] == -scale["domain"][1]
    assert max(abs(r["delta_bleu"]) for r in deltas) == scale["domain"][1]
    assert charts.heatmap_steps(32) == (26, 18, 11)  # Fig. 6 size: 32 × 27 cells of 26 × 18
    assert charts.heatmap_steps(320)[1] >= 11 and charts.heatmap_steps(320)[2] >= 9


def test_size_chart_never_joins_two_models_of_one_size():
    board = [
        {"model_id": "g-270m-a", "family": "G", "params_total_b": 0.27, "type": "LLM",
         "prompt_style": "base-fewshot", "delta_bleu": 1.0, "delta_chrf": 1.0},
        {"model_id": "g-270m-b", "family": "G", "params_total_b": 0.27, "type": "LLM",
         "prompt_style": "base-fewshot-unnamed", "delta_bleu": 2.0, "delta_chrf": 2.0},
        {"model_id": "g-1b", "family": "G", "params_total_b": 1.0, "type": "LLM",
         "prompt_style": "base-fewshot", "delta_bleu": 0.5, "delta_chrf": 0.5},
        {"model_id": "e-mono", "family": "E", "params_total_b": 8, "type": "LLM",
         "prompt_style": "base-fewshot", "delta_bleu": -1.0, "delta_chrf": -1.0},
        {"model_id": "e-bi", "family": "E", "params_total_b": 8, "type": "LLM",
         "prompt_style": "base-fewshot", "delta_bleu": -2.0, "delta_chrf": -2.0},
        {"model_id": "copy", "family": "Baseline", "params_total_b": None, "type": "baseline",
         "prompt_style": "source", "delta_bleu": 0.0, "delta_chrf": 0.0},
    ]
    spec = charts.delta_vs_size(board, "bleu", "t")
    rows = spec["data"]["values"]
    assert {r["model"] for r in rows} == {"g-270m-a", "g-270m-b", "g-1b", "e-mono", "e-bi"}
    lines = defaultdict(list)
    for row in rows:
        lines[row["line"]].append(row["params"])
    assert all(len(sizes) == len(set(sizes)) for sizes in lines.values())
    assert len({r["line"] for r in rows if r["model"].startswith("g-270m")}) == 2
    line_layer = spec["layer"][0]
    assert line_layer["encoding"]["strokeDash"]["field"] == "style"  # variants told apart
    assert line_layer["encoding"]["order"]["field"] == "params"  # lines in order of size


def test_figure3_shows_languages_localised_where_official_and_where_not():
    _, _, _, locale_rows = chart_inputs(5)
    assert charts.figure3_languages(locale_rows) == ["Hindi", "Mandarin Chinese"]
    spec = charts.same_language(locale_rows)
    bleu, chrf = spec["hconcat"]
    assert bleu["title"] == "∆BLEU by location" and chrf["title"] == "∆chrF by location"
    hindi = bleu["hconcat"][0]
    assert {r["location"] for r in hindi["data"]["values"]} == {"IN", "US", "DE"}
    values = [r["delta"] for r in hindi["data"]["values"]]
    assert values == sorted(values, reverse=True)
    assert [layer["mark"]["type"] for layer in hindi["layer"]] == ["bar", "rule"]  # error bars
    assert charts.same_language([r for r in locale_rows
                                 if r["language_name"] == "German"]) is None


COUNT_INK = """async (png) => {
  const image = new Image();
  image.src = "data:image/png;base64," + png;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  let ink = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i] < 235 || data[i + 1] < 235 || data[i + 2] < 235) { ink += 1; }
  }
  return ink / (image.width * image.height);
}"""


@pytest.fixture(scope="module")
def chart_page(tmp_path_factory):
    bundle = vega_bundle(tmp_path_factory.mktemp("web"))
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.problems = []
        page.on("console", lambda m: page.problems.append(m.text)
                if m.type in ("error", "warning") else None)
        page.bundle = bundle
        yield page


@NEEDS_CHROMIUM
@pytest.mark.parametrize("n_models", [3, 32, pytest.param(320, marks=pytest.mark.slow)])
def test_charts_are_readable_in_chromium(n_models, chart_page):
    page, bundle = chart_page, chart_page.bundle
    entries = charts.chart_entries(*chart_inputs(n_models))
    for entry in entries:
        page.set_content("<!doctype html><meta charset=utf-8><body><div id=c></div>")
        page.add_script_tag(path=str(bundle))
        page.evaluate("spec => vegaEmbed('#c', spec, {actions: false, renderer: 'svg'})"
                      ".then(() => true)", entry["spec"])
        page.locator("#c svg").wait_for()
        legends = page.locator("#c svg g.role-legend").count()
        expected = {"heatmap": 1, "size": 2 if n_models > 10 else 1, "same": 1}
        assert legends == expected[entry["id"].split("-")[0]], (entry["id"], legends)
        png = page.locator("#c").screenshot()
        ink = page.evaluate(COUNT_INK, base64.b64encode(png).decode())
        assert ink > 0.05, (entry["id"], ink)  # drawn, not blank
        if entry["id"].startswith("heatmap"):
            boxes = page.evaluate("""() => Array.from(document.querySelectorAll(
                '#c svg g.role-axis-label')).map(g => Array.from(g.querySelectorAll('text'))
                .map(t => { const b = t.getBoundingClientRect();
                            return [b.top, b.bottom, t.textContent]; }))""")
            rows = next(group for group in boxes if group[0][2].startswith("model-"))
            assert len(rows) == n_models  # every model labelled
            tops = sorted(rows)
            assert all(a[1] <= b[0] + 0.5 for a, b in itertools.pairwise(tops)), entry["id"]
            assert min(b[1] - b[0] for b in rows) >= 9  # label height in px
    assert page.problems == []
