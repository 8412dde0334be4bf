"""The site's data: shards, the originals policy on outputs, formula-safe CSV, published tables,
the Query page's example SQL and the query engine's build modes (no browser)."""

from __future__ import annotations

import base64
import csv
import io
import json

import numpy as np
import pyarrow as pa
import pytest
from hostile_strings import ALL as HOSTILE

from cultivar_assets.site import downloads as dl
from cultivar_assets.site import shards
from cultivar_assets.site.diff import word_diff
from cultivar_assets.site.query_engine import (
    QueryEngineError,
    cached_query_engine,
    fetch_query_engine,
    query_engine_for_build,
)
from cultivar_assets.site.site_pages import QUERY_EXAMPLES
from cultivar_assets.sqlfiles import statement_text
from cultivar_assets.tables import csv_safe, csv_text, json_text
from cultivar_assets.textdiff import token_texts

pytestmark = pytest.mark.usefixtures("shared_site_caches")  # charts and templates: once a session


def test_shards_round_trip_and_hold_only_base64():
    payload = {"items": HOSTILE, "nested": [{"a": "</script><!--", "b": None}]}
    content = shards.encode_shard("hyp/model-1/deu_Latn_Germany", payload)
    text = content.decode("ascii")
    prefix, rest = text.split('","', 1)
    assert prefix == 'Cultivar.shard("hyp/model-1/deu_Latn_Germany'
    body = rest.removesuffix('");\n')
    assert set(body) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
    base64.b64decode(body, validate=True)
    assert shards.decode_shard(content) == ("hyp/model-1/deu_Latn_Germany", payload)
    assert shards.shard_path("hyp/model-1/deu_Latn_Germany") == \
        "data/hyp/model-1/deu_Latn_Germany.js"
    assert shards.shard_path("index") == "data/index.js"
    with pytest.raises(ValueError, match="shard key"):
        shards.encode_shard('x"); alert(1); ("', {})


def test_shards_hold_json_without_nan_and_with_text_for_what_json_lacks():
    """A shard's payload is JSON as browsers parse it: NaN and infinities are null (the json
    module's encoder, which the shards used before, refused them and stopped the build), times
    ISO 8601, numpy numbers numbers, keys that are not strings their text, integers past 64
    bits exact; the same as the JSON downloads' values (tables.json_text)."""
    from datetime import UTC, datetime

    payload = {"scores": [1.5, float("nan"), float("inf"), -float("inf")],
               "at": datetime(2026, 12, 4, 21, 0, tzinfo=UTC),
               "numpy": [np.float64(0.25), np.int64(3)], 7: "seven", "big": 2 ** 70,
               "text": "é</script>\u2028"}
    data = shards.shard_json(payload)
    assert json.loads(data) == {"scores": [1.5, None, None, None],
                                "at": "2026-12-04T21:00:00+00:00", "numpy": [0.25, 3],
                                "7": "seven", "big": 2 ** 70, "text": "é</script>\u2028"}
    assert b"NaN" not in data and b"Infinity" not in data and b" " not in data
    key, decoded = shards.decode_shard(shards.encode_shard("index", payload))
    assert key == "index" and decoded["scores"] == [1.5, None, None, None]
    record = json.loads(json_text([payload])[2:-2])
    assert record == json.loads(data)


def test_shard_diffs_alternate_and_rebuild_the_text():
    original = "Am Montag gewann Flamengo in Rio."
    localised = "Am Montag gewann Bayern in München."
    _, b = word_diff(original, localised, "word")
    pieces = shards.alternating(b)
    assert "".join(pieces) == localised
    assert pieces[1::2] == [s.text for s in b if s.changed]
    assert shards.alternating(word_diff("x", "y z", "word")[1]) == ["", "y z"]


def test_a_devanagari_word_with_vowel_signs_is_one_token_and_one_highlight():
    """The site's diff is the tools' (textdiff.py): marks (vowel signs, viramas, anusvara) belong
    to their word. The site's old tokeniser (runs of ``\\w``) split किताबें into क, ि, त, ा, ब, ें
    and highlighted only the new vowel signs."""
    assert token_texts("किताबें पढ़ीं", "word") == ["किताबें", "पढ़ीं"]
    original, localised = word_diff("उसने किताब पढ़ी।", "उसने किताबें पढ़ीं।", "word")
    assert [(s.text, s.changed) for s in original] == [
        ("उसने ", False), ("किताब पढ़ी", True), ("।", False)]
    assert [(s.text, s.changed) for s in localised] == [
        ("उसने ", False), ("किताबें पढ़ीं", True), ("।", False)]


def test_locale_shard_diffs_the_source_in_the_mode_of_its_script():
    """Character mode for a script written without spaces (a Latin word inside Chinese text is
    diffed per character too); the English references always in word mode."""
    inst = {"instance_id": 1, "source_original": "我用iPhone。", "source_localised": "我用iPad。",
            "english_original": "I use an iPhone.", "english_localised": "I use an iPad."}
    char = shards.locale_payload("cmn_Hans_China", [inst], True, "char")["items"][0]
    word = shards.locale_payload("cmn_Hans_China", [inst], True, "word")["items"][0]
    assert char[2] == ["我用iP", "ad", "。"]
    assert word[2] == ["", "我用iPad", "。"]  # word mode: one run of letters, one token
    assert char[4] == word[4] == ["I use an ", "iPad", "."]


def test_the_built_sites_locale_shards_use_the_mode_of_the_locales_script(tmp_path,
                                                                          hostile_store_copy):
    """The build diffs each locale's sources in the mode of its script (the store's locale
    rows, from the registry): characters for cmn_Hans_China, words for hin_Deva_India."""
    from cultivar_assets.site.build import build_site

    store = hostile_store_copy(tmp_path / "store")
    build_site(store, tmp_path / "site", query_page="off")
    instances = store.query("instances")
    for locale, mode, other in (("cmn_Hans_China", "char", "word"),
                                ("hin_Deva_India", "word", "char")):
        rows = [r for r in instances if r["locale"] == locale]
        built = shards.decode_shard(
            (tmp_path / "site" / shards.shard_path(f"locale/{locale}")).read_bytes())[1]
        assert built == shards.locale_payload(locale, rows, True, mode)
        assert built != shards.locale_payload(locale, rows, True, other)


def test_locale_shard_hides_originals_but_keeps_the_highlights():
    inst = {"instance_id": 3, "source_original": "Flamengo gewann.",
            "source_localised": "Bayern gewann.", "english_original": "Flamengo won.",
            "english_localised": "Bayern won."}
    shown = shards.locale_payload("deu_Latn_Germany", [inst], True, "word")["items"][0]
    hidden = shards.locale_payload("deu_Latn_Germany", [inst], False, "word")["items"][0]
    assert "".join(shown[1]) == "Flamengo gewann." and "".join(shown[3]) == "Flamengo won."
    assert hidden[1] is None and hidden[3] is None
    assert hidden[2] == shown[2] == ["", "Bayern", " gewann."]
    assert "Flamengo" not in json.dumps(hidden)


def test_hypothesis_shard_pairs_flores_and_cultivar_outputs_instance_major():
    rows = {("cultivar_x", 1): ("loc one", None, ["strip_prefix"]),
            ("flores_y", 1): ("orig one", "raw <b>", []),
            ("cultivar_x", 2): ("loc two", None, []),
            ("cultivar_z", 1): ("z one", None, [])}
    payload = shards.hyp_payload("m", [("x", [1, 2, 3], "flores_y", "cultivar_x"),
                                       ("w", [1, 2], "flores_y", "cultivar_w"),  # no outputs
                                       ("z", [1], "flores_y", "cultivar_z")], rows)
    assert payload["locales"] == [["x", "flores_y", "cultivar_x"], ["z", "flores_y", "cultivar_z"]]
    # one file for the model: each instance once, its outputs in every locale beside each other
    assert payload["items"] == [
        [1, [[0, "orig one", "raw <b>", None, "loc one", None, ["strip_prefix"]],
             [1, "orig one", "raw <b>", None, "z one", None, None]]],
        [2, [[0, None, None, None, "loc two", None, None]]]]


@pytest.mark.parametrize(("hypothesis", "raw", "expected"), [
    ("Die Quelle.", None, (dl.HIDDEN_OUTPUT, None)),
    ("<think>x</think> Die Quelle.", "<think>x</think> Die Quelle.",
     (dl.HIDDEN_OUTPUT, dl.HIDDEN_OUTPUT)),
    ("The source.", "<think>Die Quelle.</think>The source.", ("The source.", dl.HIDDEN_OUTPUT)),
    ("The source.", None, ("The source.", None)),
])
def test_outputs_that_contain_a_hidden_flores_source_are_hidden(hypothesis, raw, expected):
    assert dl.public_output("flores_deu_Latn", hypothesis, raw, " Die Quelle. ", False) == \
        expected
    assert dl.public_output("flores_deu_Latn", hypothesis, raw, "Die Quelle.", True) == \
        (hypothesis, raw)  # shown where originals are shown
    assert dl.public_output("cultivar_x", hypothesis, raw, "Die Quelle.", False) == \
        (hypothesis, raw)  # localised sources are Cultivar's, not FLORES


@pytest.mark.parametrize(("value", "expected"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("plain", "plain"), ("a=1", "a=1"), ("", ""),
    (-0.5, -0.5), (3, 3), (None, None), (True, True), (["=x"], '["=x"]'),
])
def test_csv_cells_that_start_a_formula_are_neutralised(value, expected):
    assert csv_safe(value) == expected


def test_csv_and_json_tables_keep_every_string_as_text():
    rows = [{"name": text, "value": -1.5} for text in HOSTILE]
    parsed = list(csv.DictReader(io.StringIO(csv_text(rows, ["name", "value"]), newline="")))
    assert [r["name"].removeprefix("'") if r["name"][:2] in {"'" + c for c in "=+-@\t\r"}
            else r["name"] for r in parsed] == [r["name"] for r in rows]
    assert all(not r["name"].startswith(("=", "+", "-", "@", "\t", "\r")) for r in parsed)
    assert {r["value"] for r in parsed} == {"-1.5"}
    assert json.loads(json_text(rows)) == rows


def test_json_tables_have_one_record_per_line_and_no_nan():
    from datetime import date, datetime

    rows = [{"a": 1.5, "b": float("nan"), "c": [1, float("-inf")],
             "d": datetime(2025, 1, 2, 3, 4, 5)},
            {"a": None, "b": "x\n</script>", "c": (1, 2), "d": date(2025, 1, 1)}]
    text = json_text(rows, ["d", "a", "b", "c"])
    lines = text.split("\n")
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == 4
    assert json.loads(lines[1].rstrip(",")) == {"d": "2025-01-02T03:04:05", "a": 1.5,
                                                "b": None, "c": [1, None]}
    assert list(json.loads(text)[1]) == ["d", "a", "b", "c"]  # the columns' order
    assert json.loads(text)[1] == {"d": "2025-01-01", "a": None, "b": "x\n</script>",
                                   "c": [1, 2]}
    assert json_text([]) == "[]" and "NaN" not in text and "Infinity" not in text


def test_published_tables_are_the_documented_views(tmp_path):
    from doc_helpers import doc_text

    database = doc_text("database")
    for table in dl.PUBLISHED_TABLES:
        assert f"`{table.name}`" in database, table.name
        statement_text(table.query)


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory, hostile_store_copy):
    return hostile_store_copy(tmp_path_factory.mktemp("site_data"))


def test_query_examples_run_on_the_published_tables(demo_store):
    """The Query page's examples are valid SQL over tables of the documented names."""
    import duckdb

    with duckdb.connect(str(demo_store.path), read_only=True) as con:
        for name, title in QUERY_EXAMPLES:
            rows = con.execute(statement_text(name)).fetchall()
            if name in ("example_table3", "example_metrics", "example_table4",
                        "example_worst_locale",
                        "example_evaluated_vs_reported"):  # rows even where the paper has none
                assert rows, title
        board = con.execute(statement_text("example_table3")).fetchall()
        assert len(board) == 2


def test_the_duckdb_download_holds_every_published_table(demo_store, tmp_path):
    """downloads/cultivar.duckdb holds each published table (PUBLISHED_TABLES, one list), the
    segments and the translations, and the Query page's examples run on it as they are."""
    import duckdb

    from cultivar_assets.site.build import build_site

    build_site(demo_store, tmp_path / "site", include_database=True, query_page="off")
    with duckdb.connect(str(tmp_path / "site" / "downloads" / "cultivar.duckdb"),
                        read_only=True) as con:
        tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()")
                  .fetchall()}
        assert tables == {t.name for t in dl.PUBLISHED_TABLES} | {"segments", "translations"}
        for name, _title in QUERY_EXAMPLES:
            con.execute(statement_text(name)).fetchall()
        assert con.execute("SELECT count(*) FROM leaderboard_metrics").fetchone()[0] > 0


def test_query_engine_modes_say_why_the_page_is_left_out(tmp_path, monkeypatch):
    engine, note = query_engine_for_build("off", tmp_path, print)
    assert engine is None and "site.query_page is off" in note
    engine, note = query_engine_for_build("cached", tmp_path, print)
    assert engine is None and "fetch-query-engine" in note
    monkeypatch.setenv("CULTIVAR_NPM", "")  # the tests' setting: no npm
    engine, note = query_engine_for_build("auto", tmp_path, print)
    assert engine is None and "npm is not available" in note
    with pytest.raises(QueryEngineError, match="npm is not available"):
        query_engine_for_build("required", tmp_path, print)
    with pytest.raises(QueryEngineError, match="npm is not available"):
        fetch_query_engine(tmp_path)
    assert cached_query_engine(tmp_path) is None


def test_compare_statistics_compact_form_gives_sacrebleus_statistics_back():
    """The statistics shard's compact form (site/compare_stats.py) expands to sacreBLEU's own
    per-segment statistics; a block the form cannot hold is shipped whole."""
    from cultivar_assets.metrics.configured import build_statistics
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.site import compare_stats

    refs = ["The cat sat on the mat in Rio.", "A b", "Ein Satz, mit Komma; und mehr."]
    hyps = ["The cat sat on a mat in Rio de Janeiro.", "", "Ein Satz mit Komma und mehr!"]
    built = build_statistics(MetricConfig(bleu_tokenize="13a"), ("bleu", "chrf"))
    for metric in ("bleu", "chrf"):
        stats = built[metric].segment_statistics(refs, hyps)
        short = compare_stats.compact(metric, stats)
        assert short is not None and short.shape[1] == {"bleu": 6, "chrf": 8}[metric]
        assert np.array_equal(compare_stats.expand(metric, short), stats)
    odd = built["bleu"].segment_statistics(refs, hyps).copy()
    odd[0, -1] += 1  # a 4-gram total that does not follow from the length
    assert compare_stats.compact("bleu", odd) is None
    table = pa.table({"metric": ["bleu"] * 3, "test_set": ["flores_x"] * 3,
                      "segment_id": [0, 1, 2], "stats": odd.tolist()})
    payload = compare_stats.stats_payload("m", table, 2)
    assert payload["blocks"] == [["bleu", "flores_x", [0, 1, 2], "x", odd.ravel().tolist()]]
