"""The charts: valid Vega-Lite, the paper's figures as described, and readable in Chromium at 3,
32 and 320 models (one legend per field, nothing blank, heatmap labels that do not overlap),
with the system's fonts less Noto and with Noto (browser_helpers.FONT_SETUPS): every text in the
charts' own font, so the layout is the same whichever fonts a system has."""

from __future__ import annotations

import base64
import functools
import itertools
from collections import defaultdict

import pytest
from browser_helpers import FONT_SETUPS, font_setup
from chart_helpers import chart_inputs
from site_helpers import NEEDS_CHROMIUM, chromium

from cultivar_assets.site import charts
from cultivar_assets.site.build import vega_bundle


@functools.cache
def vega_lite_validator():
    """A validator of Vega-Lite's schema (as Altair ships it), the schema itself checked once:
    ``jsonschema.validate`` checks the schema again at every call (a fifth of a second)."""
    import jsonschema
    from altair.vegalite.v6.schema import core

    schema = core.load_schema()
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)


def validate(spec: dict) -> None:
    vega_lite_validator().validate(spec)


def test_the_validator_refuses_what_vega_lite_does_not_define():
    import jsonschema

    entry = charts.chart_entries(*chart_inputs(3, True))[0]
    validate(entry["spec"])
    for broken in ({**entry["spec"], "mark": "no-such-mark"},
                   {**entry["spec"], "encoding": {"x": {"field": "a", "type": "no-such-type"}}}):
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)


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
    for n_models in (3, 40, 41, 150, 151, 320, 1000):
        _, height, font = charts.heatmap_steps(n_models)
        assert font >= 9 and height >= charts.LINE_BOX * font, n_models  # room for any font
    assert spec["encoding"]["y"]["title"] == "model"  # the model axis is titled


def wcag_contrast(colour: str, opacity: float = 1.0) -> float:
    """WCAG 2.1 contrast of ``colour`` drawn at ``opacity`` over white."""
    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    shown = [opacity * c + (1 - opacity) for c in rgb]
    luminance = sum(w * linear(c) for w, c in zip((0.2126, 0.7152, 0.0722), shown, strict=True))
    return 1.05 / (luminance + 0.05)


def test_size_chart_spans_the_data_in_colours_that_stand_out_on_white():
    board, _, _, _ = chart_inputs(32)
    spec = charts.delta_vs_size(board, "bleu", "t")
    point = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    scale = point["encoding"]["x"]["scale"]
    sizes = [r["params_total_b"] for r in board]
    assert scale["type"] == "log" and scale["nice"] is False
    assert scale["domain"] == [min(sizes), max(sizes)]  # 0.5-4, not 0.1-10
    assert wcag_contrast("#aec7e8") < 3  # tableau20's light blue, which the old charts used
    colours = point["encoding"]["color"]["scale"]["range"]
    assert len(colours) == len(set(colours)) >= 9
    for layer in spec["layer"]:
        if "color" in layer["encoding"]:
            opacity = layer["mark"].get("opacity", 1)
            assert all(wcag_contrast(c, opacity) >= 3 for c in colours), layer["mark"]
    assert spec["width"] == charts.CONTENT_WIDTH and spec["autosize"]["type"] == "fit-x"
    one_size = charts.delta_vs_size([{**r, "params_total_b": 8} for r in board], "bleu", "t")
    assert one_size["layer"][0]["encoding"]["x"]["scale"]["domain"] == [4, 16]


def test_size_chart_describes_each_model_once_to_assistive_technology():
    """In the static SVG only the points have a description (model, size, ∆, interval): the
    family lines, the error bars and the zero line had one each too, a line's naming the
    internal "line" key, so a screen reader stepped through three marks per model."""
    import re

    import vl_convert

    board, _, _, _ = chart_inputs(32)
    svg = vl_convert.vegalite_to_svg(charts.delta_vs_size(board, "bleu", "t"))
    described = re.findall(r'aria-label="([^"]*)"[^>]*aria-roledescription="([^"]*)"', svg)
    marks = [(label, role) for label, role in described if role not in ("axis", "legend",
                                                                         "title")]
    assert sorted({role for _, role in marks}) == ["point"]
    assert len(marks) == sum(1 for r in board if r.get("params_total_b"))
    assert all("model: " in label and "95% interval" in label for label, _ in marks)
    assert "line: " not in svg and "zero: " not in svg


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
def bundle(tmp_path_factory):
    return vega_bundle(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module", params=FONT_SETUPS)
def chart_page(request, bundle, tmp_path_factory):
    fonts = font_setup(request.param, tmp_path_factory.mktemp("fonts"))
    with chromium(fonts) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.problems = []
        page.on("console", lambda m: page.problems.append(m.text)
                if m.type in ("error", "warning") else None)
        page.bundle = bundle
        yield page


def draw(page, spec: dict, width: int | None = None) -> None:
    """``spec`` drawn (SVG) into #c, a block ``width`` px wide (default: the page's)."""
    style = f' style="width:{width}px"' if width else ""
    page.set_content(f"<!doctype html><meta charset=utf-8><body><div id=c{style}></div>")
    page.add_script_tag(path=str(page.bundle))
    page.evaluate("spec => vegaEmbed('#c', spec, {actions: false, renderer: 'svg'})"
                  ".then(result => { window.view = result.view; })", spec)
    page.locator("#c svg").wait_for()


@NEEDS_CHROMIUM
@pytest.mark.parametrize("n_models", [3, 32, pytest.param(320, marks=pytest.mark.slow)])
def test_charts_are_readable_in_chromium(n_models, chart_page):
    page = chart_page
    entries = charts.chart_entries(*chart_inputs(n_models))
    for entry in entries:
        draw(page, entry["spec"])
        fonts = set(page.evaluate("""() => Array.from(document.querySelectorAll('#c svg text'))
            .map(t => t.getAttribute('font-family'))"""))
        assert fonts == {charts.CHART_FONT}, (entry["id"], fonts)  # set, not left to a system
        legends = page.locator("#c svg g.role-legend").count()
        expected = {"heatmap": 1, "size": 2 if n_models > 10 else 1, "same": 1}
        assert legends == expected[entry["id"].split("-")[0]], (entry["id"], legends)
        png = page.locator("#c").screenshot()
        ink = page.evaluate(COUNT_INK, base64.b64encode(png).decode())
        assert ink > 0.02, (entry["id"], ink)  # drawn, not blank (3 points on 1,352 px: 3 %)
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
            titles = page.locator("#c svg g.role-axis-title text").all_text_contents()
            assert sorted(titles) == ["locale", "model"], titles
    assert page.problems == []


@NEEDS_CHROMIUM
def test_size_chart_in_chromium_fills_the_width_spans_the_data_and_stands_out(chart_page):
    page = chart_page
    board, _, _, _ = chart_inputs(32)
    sizes = [r["params_total_b"] for r in board]
    spec = charts.delta_vs_size(board, "bleu", "t")
    draw(page, spec, width=charts.CONTENT_WIDTH)
    low, high = page.evaluate("() => view.scale('x').domain()")
    assert min(sizes) / 1.2 < low <= min(sizes) and max(sizes) <= high < max(sizes) * 1.2
    ticks = [float(t) for t in page.locator(
        "#c svg g.role-axis-label").first.locator("text").all_text_contents() if t]
    assert ticks and min(ticks) >= low and max(ticks) <= high  # no 0.1 or 10 on the axis
    width = page.evaluate("() => document.querySelector('#c svg').getBoundingClientRect().width")
    assert charts.CONTENT_WIDTH * 0.98 <= width <= charts.CONTENT_WIDTH  # the page's width
    marks = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#c svg g.role-mark path')).map(p => [p.getAttribute('fill'), p.getAttribute('stroke'),
        getComputedStyle(p).opacity])""")
    drawn = [(colour, float(opacity))
             for fill, stroke, opacity in marks
             for colour in (fill, stroke) if colour and colour.startswith("#")
             and colour.lower() not in ("#777", "#777777")]  # the zero line
    assert len({c for c, _ in drawn}) >= 9  # every family's colour
    assert all(wcag_contrast(c, o) >= 3 for c, o in drawn), sorted(set(drawn))
    assert page.problems == []


def test_heatmaps_of_many_models_are_drawn_by_the_browser_only(tmp_path):
    limit = charts.STATIC_HEATMAP_MAX_MODELS
    for n_models, static in ((limit, True), (limit + 1, False)):
        entries = charts.chart_entries(*chart_inputs(n_models))
        flags = {e["id"]: e["static"] for e in entries}
        assert {k: v for k, v in flags.items() if k.startswith("heatmap")} == {
            "heatmap-bleu": static, "heatmap-chrf": static}, n_models
        assert all(v for k, v in flags.items() if not k.startswith("heatmap"))
    small = [e for e in entries if not e["id"].startswith("size")]  # no size charts: faster
    charts.write_charts(small, tmp_path / "charts")
    written = {p.name for p in (tmp_path / "charts").iterdir()}
    assert "heatmap-bleu.vl.json" in written and "heatmap-bleu.svg" not in written
    assert "same-language.svg" in written
    index = charts.read_charts(tmp_path / "charts")
    assert {e["id"]: e["static"] for e in index}["heatmap-chrf"] is False
