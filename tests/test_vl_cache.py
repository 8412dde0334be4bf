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


def changed_copy(folder, old: str, new: str):
    """``vl_cache`` loaded from a copy of its source under ``folder`` with ``old`` replaced."""
    import importlib.util
    from pathlib import Path

    source = Path(vl_cache.__file__).read_text("utf-8")
    assert source.count(old) == 1, f"vl_cache.py: {old!r} occurs {source.count(old)} times"
    path = folder / "vl_cache_changed.py"
    path.write_text(source.replace(old, new), "utf-8")
    spec = importlib.util.spec_from_file_location("vl_cache_changed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_change_to_the_conversion_code_is_not_served_from_the_cache(isolated_home, tmp_path):
    first = vl_cache.vegalite_to_svg(SPEC)
    changed = changed_copy(tmp_path, "lambda: vl_convert.vegalite_to_svg(spec))",
                           "lambda: vl_convert.vegalite_to_svg(spec) + '<!-- changed -->')")
    assert changed.cache_dir() == vl_cache.cache_dir()  # the same folder: only the key differs
    assert changed.vegalite_to_svg(SPEC) == first + "<!-- changed -->"
    assert vl_cache.vegalite_to_svg(SPEC) == first


def test_the_key_holds_vl_converts_version_and_the_fonts(isolated_home, monkeypatch, tmp_path):
    first = vl_cache.producer()
    monkeypatch.setattr(vl_cache, "vl_convert_version", lambda: "0.0.0-other")
    vl_cache.producer.cache_clear()
    assert vl_cache.producer() != first
    monkeypatch.undo()
    vl_cache.producer.cache_clear()
    fonts = tmp_path / "fonts"
    fonts.mkdir()
    monkeypatch.setattr(vl_cache, "FONT_DIRS", (*vl_cache.FONT_DIRS, str(fonts)))
    assert vl_cache.producer() == first  # an empty folder adds no font
    (fonts / "Extra.ttf").write_bytes(b"\0" * 16)
    vl_cache.producer.cache_clear()
    assert vl_cache.producer() != first
    vl_cache.producer.cache_clear()
