"""Reading an LLM's localisation answer: ``{src_name}: …`` then ``{tgt_name}: …``.

:func:`parse_answer` is strict about the structure and forgiving about its wrapping (our rules;
the paper only asks for "the exact same format"). Forgiven (removed before reading): anything
from the first of the template's stop strings on; Windows line ends, blank lines, spaces around
lines and texts; reasoning blocks ``<think>…</think>`` (also ``<thinking>``, ``<reasoning>``)
anywhere; one Markdown code fence around the answer; Markdown emphasis or a list marker around a
label (``**German:**``, ``- English:``), labels in another letter case, a full-width colon
(``：``); quotes wrapping a whole text (``"…"``, ``“…”``, ``„…“``, ``«…»``, ``‘…’``, ``'…'``,
``「…」``, ``『…』``) when the text holds no other quote of that kind.

Malformed (retried, then kept as a flagged draft with the reason): no line labelled with the
source language's name, or none labelled English; a label on more than one line; the English
line before the source line; any other non-blank text (a preamble, a note, a second paragraph,
an unclosed reasoning block, more than one code fence); an empty text after a label. A pair
identical to the original is *not* malformed: it is a valid (unchanged) draft.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_REASONING = re.compile(r"</?(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")
_QUOTES = {'"': '"', "“": "”", "„": "“", "«": "»", "‘": "’", "'": "'", "「": "」", "『": "』",
           "”": "”"}


@dataclass(frozen=True)
class ParsedAnswer:
    source: str
    english: str


@dataclass(frozen=True)
class MalformedAnswer:
    reason: str


def _label_pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        r"^(?:[-*>#]+\s*)?(?:\*\*|__|\*|_)?\s*" + re.escape(name)
        + r"\s*(?:\*\*|__|\*|_)?\s*[:：]\s*(?:\*\*|__|\*|_)?(?P<value>.*)$",
        re.IGNORECASE)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
        inner = text[1:-1]
        if text[0] not in inner and _QUOTES[text[0]] not in inner:
            return inner.strip()
    return text


def _strip_markup(value: str) -> str:
    value = value.strip()
    for mark in ("**", "__"):
        if value.endswith(mark) and not value.startswith(mark):
            value = value[: -len(mark)].rstrip()
    return value


def _unfence(lines: list[str]) -> list[str] | MalformedAnswer:
    fences = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    if not fences:
        return lines
    if len(fences) != 2:
        return MalformedAnswer(f"{len(fences)} code fence lines (one fenced block is read)")
    start, end = fences
    outside = [line for i, line in enumerate(lines) if (i < start or i > end) and line.strip()]
    if outside:
        return MalformedAnswer("text outside the code block")
    return lines[start + 1:end]


def parse_answer(answer: str, src_name: str, tgt_name: str,
                 stop: Sequence[str] = ()) -> ParsedAnswer | MalformedAnswer:
    """The localised pair in ``answer``, or why it cannot be read (module docstring)."""
    text = answer.replace("\r\n", "\n").replace("\r", "\n")
    cuts = [text.find(s) for s in stop if s and s in text]
    if cuts:
        text = text[:min(cuts)]
    text = _REASONING.sub("\n", text)
    if _OPEN_REASONING.search(text):
        return MalformedAnswer("an unclosed reasoning block (<think>)")
    lines = _unfence(text.split("\n"))
    if isinstance(lines, MalformedAnswer):
        return lines
    lines = [line.strip() for line in lines if line.strip()]
    if not lines:
        return MalformedAnswer("the answer is empty")
    patterns = {"source": _label_pattern(src_name), "english": _label_pattern(tgt_name)}
    found: dict[str, list[tuple[int, str]]] = {"source": [], "english": []}
    others = []
    for number, line in enumerate(lines):
        matches = {side: p.match(line) for side, p in patterns.items()}
        side = next((s for s, m in matches.items() if m), None)
        if side is None:
            others.append(line)
        else:
            found[side].append((number, _unquote(_strip_markup(matches[side]["value"]))))
    names = {"source": src_name, "english": tgt_name}
    for side in ("source", "english"):
        if not found[side]:
            return MalformedAnswer(f"no line starts with '{names[side]}:'")
        if len(found[side]) > 1:
            return MalformedAnswer(f"{len(found[side])} lines start with '{names[side]}:'")
    if others:
        shown = others[0] if len(others[0]) <= 60 else others[0][:57] + "..."
        return MalformedAnswer(f"{len(others)} unlabelled line{'s' if len(others) > 1 else ''} "
                               f"(first: {shown!r})")
    (source_line, source), (english_line, english) = found["source"][0], found["english"][0]
    if english_line < source_line:
        return MalformedAnswer(f"the '{tgt_name}:' line comes before the '{src_name}:' line")
    for side, value in (("source", source), ("english", english)):
        if not value:
            return MalformedAnswer(f"the '{names[side]}:' line is empty")
    return ParsedAnswer(source, english)
