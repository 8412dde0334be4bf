"""Output cleaning: from a model's raw text to the hypothesis that is scored.

Rules run in this order; each one that changes the text is recorded by name, so the counts per
model and test set show how often a model needed cleaning (the paper's "unwanted reasoning or
formatting tokens"). The raw text is always kept beside the cleaned one.

- ``reasoning_block``: remove ``<think>…</think>`` blocks (an unclosed ``<think>`` runs to the end).
- ``first_line``: for prompts that stop at a newline, keep the first non-empty line.
- ``preamble``: drop a leading "Here is the translation:", "Translation:" or "English:" label.
- ``trailing_note``: drop a trailing line or parenthesis starting with "Note:"/"Explanation:"
  (never a "note:" inside a sentence).
- ``wrapping_quotes``: remove quotes around the whole output when the source is not quoted.
Surrounding whitespace is always stripped (not counted as a rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_PREAMBLE = re.compile(
    r"^\s*(?:(?:sure|certainly|okay|ok)[,!.]?\s*)?"
    r"(?:here(?:'s| is) (?:the|an|my) (?:english )?translation(?: in(?:to)? english)?"
    r"|(?:english )?translation|english)\s*:\s*",
    re.IGNORECASE,
)
# a note starts a new line, or is a parenthesis at the end: "…\n\nNote: …", "… (Note: …)"
_NOTE = re.compile(r"(?:\s*\n\s*|\s+\()(?:note|explanation)\s*:.*\Z", re.DOTALL | re.IGNORECASE)
_QUOTES = [('"', '"'), ("“", "”"), ("'", "'"), ("«", "»"), ("„", "“"), ("「", "」")]
RULES = ("reasoning_block", "first_line", "preamble", "trailing_note", "wrapping_quotes")


@dataclass(frozen=True)
class Cleaned:
    text: str
    rules: tuple[str, ...]  # names of the rules that changed the text


def _unquote(text: str, source: str) -> str:
    for left, right in _QUOTES:
        quoted = len(text) >= 2 and text.startswith(left) and text.endswith(right)
        if quoted and not source.strip().startswith(left):
            inner = text[len(left):-len(right)]
            if left not in inner and right not in inner:
                return inner.strip()
    return text


def clean_output(raw: str, source: str, single_line: bool) -> Cleaned:
    """The hypothesis for ``raw``; ``single_line`` for prompts whose stop string is a newline."""
    text = raw
    fired: list[str] = []

    def apply(name: str, new: str) -> None:
        nonlocal text
        if new.strip() != text.strip():
            fired.append(name)
        text = new

    apply("reasoning_block", _THINK.sub("", text))
    if single_line:
        lines = [line for line in text.split("\n") if line.strip()]
        apply("first_line", lines[0] if lines else "")
    apply("preamble", _PREAMBLE.sub("", text, count=1))
    apply("trailing_note", _NOTE.sub("", text.strip()))
    apply("wrapping_quotes", _unquote(text.strip(), source))
    return Cleaned(text.strip(), tuple(fired))
