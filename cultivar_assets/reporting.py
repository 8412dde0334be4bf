"""Plain-text renderings of result tables (Markdown for Dagster metadata and the terminal)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LEADERBOARD_COLUMNS = (
    ("model_id", "model"),
    ("type", "type"),
    ("delta_bleu", "∆BLEU"),
    ("delta_chrf", "∆chrF"),
    ("flores_bleu", "FLORES BLEU"),
    ("flores_chrf", "FLORES chrF"),
    ("cultivar_bleu", "Cultivar BLEU"),
    ("cultivar_chrf", "Cultivar chrF"),
    ("false_positive_rate", "FP rate"),
    ("false_negative_rate", "FN rate"),
)


def format_value(value: Any, column: str) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}" if column.endswith("_rate") else f"{value:.2f}"
    return str(value)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A Markdown table of ``rows`` with (key, header) ``columns``; '|' in cells is escaped."""
    head = "| " + " | ".join(header for _, header in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = [
        "| " + " | ".join(format_value(row.get(key), key).replace("|", "\\|")
                          for key, _ in columns) + " |"
        for row in rows
    ]
    return "\n".join([head, rule, *body])


def leaderboard_markdown(rows: Sequence[dict[str, Any]]) -> str:
    table = markdown_table(rows, LEADERBOARD_COLUMNS)
    signatures = sorted({f"BLEU: {r['bleu_signature']}; chrF: {r['chrf_signature']}" for r in rows})
    return table + "\n\n" + "\n".join(f"Signatures: {s}" for s in signatures)
