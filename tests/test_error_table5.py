"""Table 5 and its correlations through the store's views, on the paper's own Table 5.

Annotation rows are made that give exactly the paper's counts per model and locale (its general
errors are not broken down by type, so they are all written as mistranslations here), with the
paper's BLEU as the models' Cultivar BLEU; the views must give back the table and the paper's
Pearson r_incl = −0.64, r_excl = −0.86 (Seed-X-PPO-7B left out).
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from importlib import resources

import numpy as np
import pytest

from cultivar_assets.data.locales import all_locales, get_locale
from cultivar_assets.error_analysis.table import read_table5
from cultivar_assets.store.database import Store, WriteBlock

OUTLIER = "Seed-X-PPO-7B"
NOW = datetime(2026, 1, 1)


def reported_table5() -> list[dict]:
    """The paper's Table 5 as published (``data/reported/table5_errors.csv``), typed."""
    text = resources.files("cultivar_assets.data").joinpath(
        "reported", "table5_errors.csv").read_text("utf-8")
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        rows.append({k: (float(v) if k == "bleu" else v if k in ("model_id", "locale")
                         else int(v)) for k, v in row.items()})
    return rows


def annotation_rows(cell: dict) -> list[dict]:
    """As many translations as the largest count; translation i shows type T when i < count."""
    counts = {"NE": cell["ne"], "PY": cell["py"], "IC": cell["ic"], "NU": cell["nu"],
              "MT": cell["general_total"]}
    n = max(max(counts.values()), 1)
    return [{"locale": cell["locale"], "instance_id": i, "model_id": cell["model_id"],
             "item_key": f"{cell['locale']}_{i}:{cell['model_id']}", "system": cell["model_id"],
             "errors": [code for code, c in counts.items() if i < c], "note": "", "done": True,
             "hypothesis_sha256": "0" * 64, "translation_matches": True, "updated_at": NOW,
             "done_at": NOW} for i in range(n)]


def paper_store(path, outlier: str | None) -> Store:
    table = reported_table5()
    store = Store(path)
    locales = sorted({r["locale"] for r in table})
    store.write([
        WriteBlock("insert_locales", rows=[{"locale": loc.key, **{
            k: getattr(loc, k) for k in ("language", "script", "location", "location_short",
                                         "flores_plus_code", "flores200_code", "language_name",
                                         "official_or_de_facto")}} for loc in all_locales()]),
        WriteBlock("insert_model_locale_deltas", rows=[{
            "model_id": r["model_id"], "locale": r["locale"],
            "language": get_locale(r["locale"]).source_language} for r in table]),
        WriteBlock("insert_metric_values", rows=[{  # the FLORES side is not part of Table 5
            "level": "model_locale", "model_id": r["model_id"], "locale": r["locale"],
            "metric": "bleu", "quantity": "cultivar", "value": r["bleu"]} for r in table]),
        WriteBlock("insert_error_files", rows=[{
            "locale": loc, "task_id": f"{loc}-errors-000000000000", "annotator": "paper",
            "tool_version": "-", "schema_version": 1, "saved_at": NOW, "file_name": "-",
            "file_sha256": None, "is_demo": False, "n_items": 1, "n_translation_changed": 0,
            "ingested_at": NOW} for loc in locales]),
        WriteBlock("insert_error_annotations", rows=[r for cell in table
                                               for r in annotation_rows(cell)]),
        WriteBlock("insert_error_analysis_settings", rows=[{
            "outlier_model": outlier, "seed": "-", "n_instances": None, "locales": locales,
            "models": None, "blind": False, "annotations_dir": None, "n_files": 3,
            "ingested_at": NOW}]),
    ])
    return store


def test_table5_view_gives_back_the_papers_counts_and_correlations(tmp_path):
    store = paper_store(tmp_path / "paper.duckdb", OUTLIER)
    table5, correlations = read_table5(store)
    reported = {(r["model_id"], r["locale"]): r for r in reported_table5()}
    assert len(table5) == len(reported) == 30
    for row in table5:
        want = reported[row["model_id"], row["locale"]]
        for column in ("ne", "py", "ic", "nu", "locale_specific_total", "general_total",
                       "total"):
            assert row[column] == want[column], (row["model_id"], row["locale"], column)
        assert row["bleu"] == want["bleu"] and row["language"] == "cmn"
    [chinese] = correlations
    assert (chinese["language"], chinese["n_including"], chinese["n_excluding"]) == ("cmn", 30,
                                                                                     27)
    assert (chinese["n_models"], chinese["n_locales"], chinese["outlier_present"]) == (10, 3,
                                                                                       True)
    assert round(chinese["r_including"], 2) == -0.64
    assert round(chinese["r_excluding"], 2) == -0.86
    # the same coefficients by numpy from the transcribed table
    x = np.array([r["bleu"] for r in reported.values()])
    y = np.array([r["total"] for r in reported.values()])
    keep = np.array([m != OUTLIER for m, _ in reported])
    assert chinese["r_including"] == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    assert chinese["r_excluding"] == pytest.approx(np.corrcoef(x[keep], y[keep])[0, 1],
                                                   abs=1e-12)


def test_without_an_outlier_there_is_no_second_coefficient(tmp_path):
    store = paper_store(tmp_path / "no-outlier.duckdb", None)
    [chinese] = read_table5(store)[1]
    assert chinese["r_excluding"] is None and chinese["n_excluding"] is None
    assert chinese["r_including"] is not None


def test_the_transcribed_table_adds_up():
    for row in reported_table5():
        assert row["locale_specific_total"] == row["ne"] + row["py"] + row["ic"] + row["nu"]
        assert row["total"] == row["locale_specific_total"] + row["general_total"]
    totals = {}
    for row in reported_table5():  # the paper's column sums (Table 5's bottom row)
        totals.setdefault(row["locale"], []).append(row["total"])
    assert {k: sum(v) for k, v in totals.items()} == {
        "cmn_Hans_China": 277, "cmn_Hans_UK": 279, "cmn_Hans_US": 199}
