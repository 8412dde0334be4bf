# ruff: noqa: E501 (the reference loops are the template's lines, verbatim)
"""The model pages' bytes built in bulk are the markup and text of their definitions: a model
page's table rows (built in Python, :func:`site_pages.model_table_rows`) are the
markup of the template loops that define them: the reference loops below, rendered by the
site's Jinja environment with its ``num``/``num_interval``/``urlencode`` filters, on rows with
markup in their text, missing values, integers, NaN and infinities."""

from __future__ import annotations

import csv
import io
import math
from datetime import date, datetime

import numpy as np

from cultivar_assets.site.pages import environment
from cultivar_assets.site.site_pages import locale_links, model_table_rows
from cultivar_assets.tables import csv_safe, csv_text, float_texts

REFERENCE = """\
{% for row in deltas %}
<tr><th scope="row" data-value="{{ row.locale }}"><a href="../browse.html#model={{ slug | urlencode }}&amp;locale={{ row.locale | urlencode }}">{{ row.locale }}</a></th>
  {% for c in delta_columns %}{{ row | num_interval(c) }}{% endfor %}{% for c in score_columns %}{{ row.get(c.key) | num }}{% endfor %}</tr>
{% endfor %}
|
{% for row in scores %}
<tr><th scope="row" data-value="{{ row.test_set }}">{{ row.test_set }}</th><td data-value="{{ row.kind }}">{{ row.kind }}</td>{% for m in metrics %}{{ row.get(m.metric) | num }}{% endfor %}</tr>
{% endfor %}
|
{% for row in cleaning %}
<tr><th scope="row" data-value="{{ row.test_set }}">{{ row.test_set }}</th><td data-value="{{ row.rule }}">{{ row.rule }}</td>{{ row.n_segments | num(0) }}</tr>
{% endfor %}
|
{% for row in recall %}
<tr><th scope="row" data-value="{{ row.locale }}">{{ row.locale }}</th>{{ row.false_positive_rate | num(4) }}{{ row.false_negative_rate | num(4) }}{{ row.n_removed_terms | num(0) }}{{ row.n_introduced_terms | num(0) }}</tr>
{% endfor %}
"""

HOSTILE = "<b>x</b> & \"q\" 'a' é/ü?#"


def _tables() -> dict[str, list[dict]]:
    deltas = [
        {"locale": "ar_SA", "delta_bleu": 1.25, "delta_bleu_low": -0.5, "delta_bleu_high": 2.0,
         "delta_bleu_excludes_zero": False, "delta_chrf": -3.0, "delta_chrf_low": -4.5,
         "delta_chrf_high": -1.0, "delta_chrf_excludes_zero": True,
         "flores_bleu": 12.345, "cultivar_bleu": None, "flores_chrf": math.nan,
         "cultivar_chrf": 7},
        {"locale": HOSTILE, "delta_bleu": None, "delta_bleu_low": None,
         "delta_bleu_high": None, "delta_bleu_excludes_zero": None, "delta_chrf": math.inf,
         "delta_chrf_low": 1.0, "delta_chrf_high": None, "delta_chrf_excludes_zero": False,
         "flores_bleu": -0.0, "cultivar_bleu": 1e-7, "flores_chrf": 3, "cultivar_chrf": "n/a<"},
    ]
    scores = [{"test_set": "flores_arb_Arab", "kind": "flores", "bleu": 10.5, "chrf": None},
              {"test_set": HOSTILE, "kind": "<k>", "bleu": 2, "chrf": -math.inf}]
    cleaning = [{"test_set": "cultivar_ar_SA", "rule": HOSTILE, "n_segments": 3},
                {"test_set": HOSTILE, "rule": "strip", "n_segments": None}]
    recall = [{"locale": "ar_SA", "false_positive_rate": 0.123456, "false_negative_rate": None,
               "n_removed_terms": 4, "n_introduced_terms": 0},
              {"locale": HOSTILE, "false_positive_rate": math.nan, "false_negative_rate": 1,
               "n_removed_terms": None, "n_introduced_terms": 2.5}]
    return {"deltas": deltas, "scores": scores, "cleaning": cleaning, "recall": recall}


def _columns(keys: list[str], interval: bool) -> list[dict]:
    return [{"key": key, "label": key, "digits": 2, "title": None, "interval": interval,
             "excludes_zero": interval, "reported": False} for key in keys]


def _float_tables() -> dict[str, list[dict]]:
    """Tables whose numeric columns hold floats only (the common case, built in bulk)."""
    odd = [1.25, -0.0, 0.0, 1e-7, 1e16, math.nan, math.inf, -math.inf, 0.1 + 0.2, 99.995]
    deltas = [{"locale": f"loc{i}", **{f"{q}_{m}{part}": odd[(i + j + k) % len(odd)]
                                       for j, q in enumerate(("delta", "flores", "cultivar"))
                                       for k, m in enumerate(("bleu", "chrf"))
                                       for part in ("", "_low", "_high")},
               "delta_bleu_excludes_zero": i % 2 == 0, "delta_chrf_excludes_zero": None}
              for i in range(12)]
    scores = [{"test_set": f"t{i}", "kind": "cultivar", "bleu": odd[i % len(odd)],
               "chrf": odd[-1 - i % len(odd)]} for i in range(12)]
    recall = [{"locale": f"loc{i}", "false_positive_rate": odd[i % len(odd)],
               "false_negative_rate": odd[(i + 3) % len(odd)], "n_removed_terms": 2.0 * i,
               "n_introduced_terms": odd[(i + 5) % len(odd)]} for i in range(12)]
    return {"deltas": deltas, "scores": scores, "cleaning": [], "recall": recall}


def test_model_table_rows_are_the_markup_of_the_reference_loops():
    for tables in (_tables(), _float_tables()):
        metrics = [{"metric": "bleu", "key": "bleu", "label": "BLEU"},
                   {"metric": "chrf", "key": "chrf", "label": "chrF"}]
        delta_cols = _columns(["delta_bleu", "delta_chrf"], True)
        score_cols = _columns(["flores_bleu", "cultivar_bleu", "flores_chrf", "cultivar_chrf"],
                              False)
        for slug in ("model-1", "odd slug/é?-0a1b2c3d"):
            reference = environment().from_string(REFERENCE).render(
                slug=slug, metrics=metrics, delta_columns=delta_cols, score_columns=score_cols,
                **tables).split("|\n")
            rows = model_table_rows(slug, tables, metrics, delta_cols, score_cols)
            assert [str(rows[name]) for name in ("deltas", "scores", "cleaning", "recall")] == (
                reference)
            assert "<b>" not in "".join(rows.values())
    assert "&lt;b&gt;x&lt;/b&gt; &amp; &#34;q&#34; &#39;a&#39;" in model_table_rows(
        "m", _tables(), metrics, delta_cols, score_cols)["deltas"]


def test_model_table_rows_of_empty_tables_are_empty():
    rows = model_table_rows("m", {"deltas": [], "scores": [], "cleaning": [], "recall": []},
                            [], [], [])
    assert {name: str(text) for name, text in rows.items()} == {
        "deltas": "", "scores": "", "cleaning": "", "recall": ""}


def _reference_csv(rows: list[dict], columns: list[str]) -> str:
    """csv_text's definition: csv.writer (excel dialect) over csv_safe of each value."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow([csv_safe(column) for column in columns])
    writer.writerows([csv_safe(row.get(column)) for column in columns] for row in rows)
    return buffer.getvalue()


def test_csv_text_is_what_csv_writer_writes_for_the_safe_values():
    odd = ["", None, "a,b", 'say "hi"', "line\nbreak", "cr\rhere", "=1+1", "+x", "-3", "@a",
           "\tx", " lead", "é ü", True, False, 0, 1, -7, 2**70, 0.0, -0.0, 1.0, 1e16, 1e-7,
           math.nan, math.inf, -math.inf, 0.1 + 0.2, np.float64(1.5), np.int64(4),
           [1, "a,b"], ("t",), date(2025, 1, 2), datetime(2025, 1, 2, 3, 4, 5)]
    columns = ["text", "float", "mixed", "missing", "=formula,col"]
    rows = [{"text": str(value), "float": float(i) / 3 - 5, "mixed": value,
             "=formula,col": odd[-1 - i] if i % 2 else None}
            for i, value in enumerate(odd)]
    assert csv_text(rows, columns) == _reference_csv(rows, columns)
    # columns of one type: all floats (some equal but differently signed), all text
    floats = [{"a": v, "b": w} for v, w in [(0.0, "x"), (-0.0, "x"), (1.0, "a,b"), (1e-7, "")]]
    assert csv_text(floats, ["a", "b"]) == _reference_csv(floats, ["a", "b"])
    # text columns: plain text (written as it is), text a NUL precedes, one value to change
    for texts in (["x", "é ü", " lead", "a b", "x"], ["a\0=b", "c"], ["x", "y", "-1"],
                  ["x", 'q"'], ["", ""]):
        text_rows = [{"t": text, "n": float(i)} for i, text in enumerate(texts)]
        assert csv_text(text_rows, ["t", "n"]) == _reference_csv(text_rows, ["t", "n"])
    # one column (a row of one empty field is quoted), no rows, rows given as an iterator
    for one in ([{"a": ""}, {"a": None}, {"a": 1.5}, {"a": "q,"}], []):
        assert csv_text(one, ["a"]) == _reference_csv(one, ["a"])
    assert csv_text([], ["a", "b"]) == "a,b\r\n"
    assert csv_text(iter(floats), ["b", "a"]) == _reference_csv(floats, ["b", "a"])


def test_float_texts_are_the_floats_str_over_every_magnitude():
    rng = np.random.default_rng(7)
    doubles = rng.integers(0, 2**64, 300_000, dtype=np.uint64).view(np.float64)  # every bit pattern
    edges = [0.0, -0.0, 1e-4, -1e-4, np.nextafter(1e-4, 0), 9.999999999999999e14, 1e15,
             -1e15, np.nextafter(1e15, 0), 1e16, 1e-5, 5e-324, 1.7976931348623157e308,
             math.nan, math.inf, -math.inf, 0.1 + 0.2, 123.0, 2.5, 100.0]
    values = [*doubles.tolist(), *(rng.random(100_000) * 100).tolist(),
              *rng.normal(0, 10, 100_000).tolist(), *map(float, edges)]
    assert float_texts(values) == [str(value) for value in values]
    assert float_texts([]) == []


def test_locale_links_are_the_markup_of_the_reference_loop():
    loop = ('{% for locale in segment_locales %}<li><a href="../browse.html#model='
            '{{ slug | urlencode }}&amp;locale={{ locale | urlencode }}">{{ locale }}</a></li>'
            '{% endfor %}')
    for slug, locales in (("model-1", ["ar_SA", "es_MX"]), ("odd slug/é?", [HOSTILE, "a b"]),
                          ("m", [])):
        reference = environment().from_string(loop).render(slug=slug, segment_locales=locales)
        assert str(locale_links(slug, locales)) == reference
