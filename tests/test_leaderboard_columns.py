"""The leaderboard's columns come from the metric registry's paper metrics: the table a run
prints and the leaderboard asset's Markdown name the columns the rendered ``leaderboard`` view
has, and a further paper metric would add its columns and signature without another list."""

from __future__ import annotations

import duckdb

from cultivar_assets.metrics.registry import BLEU, column_key, paper_metric_labels
from cultivar_assets.store.database import Store
from cultivar_assets.tables import leaderboard_columns, leaderboard_markdown

PAPER_HEADERS = ["model", "type", "∆BLEU", "∆chrF", "FLORES BLEU", "FLORES chrF", "Cultivar BLEU",
                 "Cultivar chrF", "FP rate", "FN rate"]  # the paper's Table 3


def test_the_paper_columns_are_table_3s_and_the_leaderboard_views(tmp_path):
    columns = leaderboard_columns(paper_metric_labels())
    assert [header for _, header in columns] == PAPER_HEADERS
    store = Store(tmp_path / "empty.duckdb")
    store.write([])  # sets the file up: schema and the rendered views
    with duckdb.connect(str(store.path), read_only=True) as con:
        view = {row[0] for row in con.execute("DESCRIBE leaderboard").fetchall()}
    assert [key for key, _ in columns if key not in view] == []
    for key, _ in columns[2:]:
        assert {f"{key}_low", f"{key}_high"} <= view, key


def _row(metrics: list[tuple[str, str]]) -> dict:
    row = {"model_id": "m", "type": "baseline", "false_positive_rate": 0.25,
           "false_negative_rate": 0.5, "rank_delta_bleu_label": "1–2", "flags": ["x"]}
    for number, (key, _) in enumerate(metrics, 1):
        row[f"{key}_signature"] = f"sig-{key}"
        for quantity in ("delta", "flores", "cultivar"):
            row[f"{quantity}_{key}"] = float(number)
            row[f"{quantity}_{key}_low"], row[f"{quantity}_{key}_high"] = number - 0.5, number + 0.5
    row["bleu_tokenizer_sha256"] = "abc"
    return row


def test_a_further_paper_metric_brings_its_columns_and_signature():
    metrics = [*paper_metric_labels(), ("ter", "TER")]
    text = leaderboard_markdown([_row(metrics)], metrics, column_key(BLEU))
    header = text.splitlines()[0]
    assert header.startswith(r"| model | rank \(∆BLEU\) | type | ∆BLEU | ∆chrF | ∆TER | FLORES")
    assert header.endswith("| Cultivar TER | FP rate | FN rate | flags |")
    cells = text.splitlines()[2].split(" | ")
    assert cells[5] == r"3.00 \[2.50, 3.50\]"  # ∆TER with its interval
    assert text.splitlines()[-1] == (
        r"Signatures: BLEU: sig-bleu \(SentencePiece model sha256 abc\); chrF: sig-chrf; "
        "TER: sig-ter")
