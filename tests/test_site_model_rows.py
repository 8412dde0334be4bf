# ruff: noqa: E501 (the reference loops are the template's lines, verbatim)
"""A model page's table rows (built in Python, :func:`site_pages.model_table_rows`) are the
markup of the template loops that define them: the reference loops below, rendered by the
site's Jinja environment with its ``num``/``num_interval``/``urlencode`` filters, on rows with
markup in their text, missing values, integers, NaN and infinities."""

from __future__ import annotations

import math

from cultivar_assets.site.pages import environment
from cultivar_assets.site.site_pages import model_table_rows

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


def test_model_table_rows_are_the_markup_of_the_reference_loops():
    tables = _tables()
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
        assert "&lt;b&gt;x&lt;/b&gt; &amp; &#34;q&#34; &#39;a&#39;" in rows["deltas"]
        assert "<b>" not in rows["deltas"] + rows["scores"] + rows["cleaning"] + rows["recall"]


def test_model_table_rows_of_empty_tables_are_empty():
    rows = model_table_rows("m", {"deltas": [], "scores": [], "cleaning": [], "recall": []},
                            [], [], [])
    assert {name: str(text) for name, text in rows.items()} == {
        "deltas": "", "scores": "", "cleaning": "", "recall": ""}
