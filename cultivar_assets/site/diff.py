"""Word-level differences between an original and a localised sentence.

Tokens are runs of word characters and runs of other non-space characters; CJK ideographs and
kana are single tokens (those scripts do not separate words by spaces). ``difflib.SequenceMatcher``
(no junk heuristic) aligns the two token sequences; tokens outside the matching blocks are marked
changed. The whitespace between two changed tokens is marked changed too, so a replaced
multi-word name is one highlighted span; all other whitespace is kept as it was.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]+")


@dataclass(frozen=True, slots=True)
class Span:
    text: str
    changed: bool


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _spans(text: str, bounds: list[tuple[int, int]], changed: list[bool]) -> list[Span]:
    """Maximal runs of text with one flag: tokens keep theirs, whitespace is changed only
    between two changed tokens (one pass, no intermediate pieces)."""
    spans: list[Span] = []
    start, flag = 0, None
    position = 0
    for index, (token_start, token_end) in enumerate(bounds):
        token_flag = changed[index]
        if token_start > position:
            gap_flag = index > 0 and changed[index - 1] and token_flag
            if gap_flag is not flag:
                if flag is not None:
                    spans.append(Span(text[start:position], flag))
                start, flag = position, gap_flag
        if token_flag is not flag:
            if flag is not None:
                spans.append(Span(text[start:token_start], flag))
            start, flag = token_start, token_flag
        position = token_end
    if position < len(text) and flag is not False:
        if flag is not None:
            spans.append(Span(text[start:position], flag))
        start, flag = position, False
    if flag is not None:
        spans.append(Span(text[start:], flag))
    return spans


def word_diff(original: str, localised: str) -> tuple[list[Span], list[Span]]:
    """Spans of ``original`` and of ``localised``, each marked changed or not."""
    bounds_a = [m.span() for m in TOKEN.finditer(original)]
    bounds_b = [m.span() for m in TOKEN.finditer(localised)]
    a = [original[s:e] for s, e in bounds_a]
    b = [localised[s:e] for s, e in bounds_b]
    changed_a, changed_b = [True] * len(a), [True] * len(b)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for block in matcher.get_matching_blocks():
        changed_a[block.a:block.a + block.size] = [False] * block.size
        changed_b[block.b:block.b + block.size] = [False] * block.size
    return _spans(original, bounds_a, changed_a), _spans(localised, bounds_b, changed_b)

