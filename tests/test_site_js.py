"""The browser's copies of Python definitions give the same answers (Chromium).

- ``site/static/textdiff.js`` ``wordDiff`` against :func:`cultivar_assets.site.diff.word_diff`
  in both modes (the segment browser highlights translations in the browser, sources in Python),
  loaded as the site's pages load it (:data:`cultivar_assets.site.pages.TEXTDIFF_STATIC`);
- ``site/static/cultivar-csv.js`` ``csvSafe`` against :func:`cultivar_assets.tables.csv_safe`
  (CSV downloads made in the browser: query results, the segment browser).
"""

from __future__ import annotations

import random

import pytest
from hostile_strings import ALL as HOSTILE
from site_helpers import NEEDS_CHROMIUM

from cultivar_assets.paths import resource_dir
from cultivar_assets.site.diff import word_diff
from cultivar_assets.site.pages import TEXTDIFF_STATIC
from cultivar_assets.tables import csv_safe

pytestmark = NEEDS_CHROMIUM
STATIC = resource_dir("site") / "static"
PAIRS = [
    ("Am Samstag gewann Flamengo in Rio.", "Am Samstag gewann Bayern in München."),
    ("北京是中国的首都。", "新加坡是一个城市国家。"),
    ("हिन्दी में लिखा गया वाक्य", "हिंदी में लिखा वाक्य है"),
    ("東京タワーに行きました", "大阪城に行きました"),
    ("مرحبا بالعالم الكبير", "مرحبا يا عالم"),
    ("ขอบคุณมาก ครับ", "ขอบคุณ ครับ"),
    ("a  b\u00a0c\u2028d \u001ce\u0085f", "a b c d e f"),
    ("😀 x 😀 𝒳", "😀 y 😀 𝒳"), ("", "x"), ("x", ""), ("", ""),
    ("the the the a", "a the the the"), ("don't stop-me now!!", "don't stop me now?"),
]


@pytest.fixture(scope="module")
def page(browser):
    page = browser.new_page()
    page.set_content("<!doctype html><meta charset=utf-8><title>js</title>")
    scripts = [name for name in TEXTDIFF_STATIC if name.endswith(".js")]
    for name in (*scripts, "cultivar-csv.js"):
        page.add_script_tag(content=(STATIC / name).read_text("utf-8"))
    yield page
    page.close()


def corpus() -> list[tuple[str, str]]:
    rng = random.Random(12)
    words = ["a", "b", "the", "x", "北", "京", "ab", "-", "!!", "é", "Ω", "١٢", "\t", "  "]
    pairs = list(PAIRS)
    pairs += [(h, h.replace("1", "2")) for h in HOSTILE]
    pairs += [(HOSTILE[i], HOSTILE[-1 - i]) for i in range(len(HOSTILE))]
    for _ in range(300):
        pairs.append((" ".join(rng.choices(words, k=rng.randint(0, 14))),
                      " ".join(rng.choices(words, k=rng.randint(0, 14)))))
    return pairs


@pytest.mark.parametrize("mode", ["word", "char"])
def test_word_diff_in_the_browser_matches_python(page, mode):
    pairs = corpus()
    expected = [[[[s.text, s.changed] for s in side] for side in word_diff(a, b, mode)]
                for a, b in pairs]
    actual = page.evaluate("""([pairs, mode]) => pairs.map(([a, b]) =>
        window.CultivarTextDiff.wordDiff(a, b, mode)
        .map(side => side.map(s => [s.text, s.changed])))""", [pairs, mode])
    mismatches = [(pair, e, a) for pair, e, a in zip(pairs, expected, actual, strict=True)
                  if e != a]
    assert mismatches == [], mismatches[:3]
    assert len(pairs) > 400


def test_csv_neutralisation_in_the_browser_matches_python(page):
    values = ["=1+1", "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "plain", "a=1", "", *HOSTILE]
    expected = [csv_safe(v) for v in values] + [csv_safe(-0.5), csv_safe(3), csv_safe(None)]
    actual = page.evaluate("values => values.map(v => window.CultivarCsv.csvSafe(v))",
                           [*values, -0.5, 3, None])
    assert actual == expected
    text = page.evaluate("""() => window.CultivarCsv.toCsv(["a", "b"],
        [{a: "=cmd|' /C calc'!A0", b: -1.5}, {a: 'x,"y"\\nz', b: null}])""")
    assert text == "a,b\r\n'=cmd|' /C calc'!A0,-1.5\r\n\"x,\"\"y\"\"\nz\",\r\n"
