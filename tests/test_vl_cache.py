"""vl-convert's SVG renderings, cached under $CULTIVAR_HOME."""

from __future__ import annotations

import vl_convert

from cultivar_assets.site import vl_cache

SPEC = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": [{"x": 1, "y": 2}, {"x": 2, "y": 3}]},
        "mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"},
                                      "y": {"field": "y", "type": "quantitative"}}}


def test_svg_is_rendered_once_per_spec(monkeypatch, isolated_home):
    calls = []
    render = vl_convert.vegalite_to_svg

    def counting(spec):
        calls.append(spec)
        return render(spec)

    monkeypatch.setattr(vl_convert, "vegalite_to_svg", counting)
    first = vl_cache.vegalite_to_svg(SPEC)
    assert first == render(SPEC) and first.lstrip().startswith("<svg")
    reordered = dict(reversed(list(SPEC.items())))  # the same spec, keys in another order
    assert vl_cache.vegalite_to_svg(reordered) == first
    assert len(calls) == 1
    other = {**SPEC, "mark": "bar"}
    assert vl_cache.vegalite_to_svg(other) != first
    assert len(calls) == 2
    files = list((vl_cache.cache_dir() / "svg").glob("*.svg"))
    assert len(files) == 2 and vl_cache.cache_dir().is_relative_to(isolated_home)
