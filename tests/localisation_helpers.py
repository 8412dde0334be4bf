"""Helpers for the localisation tests: demo pairs, a localising answerer for the fake server.

The demo data (written for the toolkit) gives the original pairs; the fake OpenAI server's
answerer "localises" a pair by swapping known names for others, in the paper's answer format.
"""

from __future__ import annotations

import json
import re

from cultivar_assets.construction.localisation.localiser import SourcePair
from cultivar_assets.data.sources import demo_dataset_dir

SWAPS = {"Toronto": "Bern", "Ottawa": "Basel", "Flamengo": "FC Basel", "Lyon": "Luzern"}


def demo_pairs(locale: str = "deu_Latn_Switzerland", n: int | None = None) -> list[SourcePair]:
    rows = [json.loads(line) for line in
            (demo_dataset_dir() / f"{locale}.jsonl").read_text("utf-8").splitlines()]
    return [SourcePair(r["id"], r["source_original"], r["english_original"]) for r in rows[:n]]


def swap(text: str) -> str:
    for old, new in SWAPS.items():
        text = text.replace(old, new)
    return text


def localising_answer(text: str) -> str:
    """The answer to a chat request whose last user message is "<Lang>: …\\nEnglish: …"; a
    retry message (asking for the format again) is answered with the last pair seen."""
    lines = [line for line in text.splitlines() if re.match(r"^[A-Z][\w ]*: ", line)]
    source, english = lines[0].split(": ", 1), lines[1].split(": ", 1)
    return f"{source[0]}: {swap(source[1])}\n{english[0]}: {swap(english[1])}"
