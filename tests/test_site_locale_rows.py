"""The rows of a locale page's "∆ of every model" table (site_pages.locale_delta_rows): the
markup the page's row template defines, for hostile names, missing values and intervals."""

from cultivar_assets.site.pages import environment
from cultivar_assets.site.site_pages import (
    delta_columns,
    locale_delta_rows,
    score_columns,
    value_columns,
)

# The row as the locale page's template defined it (a macro per row): the reference markup.
ROW_TEMPLATE = """{% for row in rows -%}
<tr>
  <th scope="row" data-value="{{ row.model_id }}">{% if row.model_id in model_slugs %}<a href="../browse.html#model={{ model_slugs[row.model_id] | urlencode }}&amp;locale={{ locale | urlencode }}">{{ row.model_id }}</a>{% else %}{{ row.model_id }}{% endif %}</th>
  <td data-value="{{ row.type }}">{{ row.type }}</td>
  {% for c in delta_columns %}{{ row | num_interval(c) }}{% endfor %}{% for c in score_columns %}{{ row.get(c.key) | num }}{% endfor %}
</tr>
{% endfor %}"""  # noqa: E501


def _rows() -> list[dict]:
    base = {"delta_bleu": -1.25, "delta_bleu_low": -2.5, "delta_bleu_high": 0.125,
            "delta_bleu_excludes_zero": False, "delta_chrf": 3.0, "delta_chrf_low": 1.0,
            "delta_chrf_high": 5.0, "delta_chrf_excludes_zero": True, "flores_bleu": 30.0,
            "cultivar_bleu": 28.75, "flores_chrf": 55.5, "cultivar_chrf": 58.5}
    return [
        {**base, "model_id": "org/model <b>&\"x\"", "type": "llm"},
        {**base, "model_id": "plain", "type": "nmt", "delta_bleu": None,
         "delta_bleu_low": None, "delta_bleu_high": None, "flores_chrf": None},
        {**base, "model_id": "no slug", "type": "<i>odd</i>", "delta_chrf": 7,
         "cultivar_bleu": float("nan")},
    ]


def test_locale_rows_are_the_row_templates_markup():
    rows = _rows()
    slugs = {"org/model <b>&\"x\"": "org__model x&y", "plain": "plain"}
    deltas = value_columns(rows, delta_columns())
    scores = value_columns(rows, score_columns())
    context = {"rows": rows, "locale": "pt-BR&x", "model_slugs": slugs,
               "delta_columns": deltas, "score_columns": scores}
    expected = environment().from_string(ROW_TEMPLATE).render(**context)
    built = locale_delta_rows(rows, "pt-BR&x", slugs, deltas, scores)
    assert str(built) == expected
    assert "&lt;b&gt;&amp;&#34;x&#34;" in built  # the model's name escaped
    assert 'href="../browse.html#model=org__model%20x%26y&amp;locale=pt-BR%26x"' in built
    assert '<abbr class="excludes-zero"' in built and "[-2.50, 0.12]" in built
