"""Word-level differences as the site and the error tool highlight them.

Tokens and the alignment are :mod:`cultivar_assets.textdiff`'s (diff-match-patch on the tokens of
the text's mode: word mode, or character mode for scripts written without spaces), the same as
the post-editing tool's and Table 1's edit counts; the browser's twin is ``wordDiff`` in
``site/static/textdiff.js``. Callers choose the mode from the text's script: a source-language
text from its locale's script (the locale registry), English in word mode.

**Display rule** (ours): tokens outside the equal parts are changed; the whitespace between two
changed tokens is changed too, so a replaced multi-word name is one highlighted span; all other
whitespace is kept as it was (unchanged).

**One diff for the site and the tools** (ours): the site's highlights are made from the tokens and
the diff defined above, the tools' own, so a pair is highlighted the same on the site and in the
tools (words with Indic marks whole; Latin words inside Chinese or Japanese text per character).
"""

from __future__ import annotations

from dataclasses import dataclass

from cultivar_assets.textdiff import Mode, Token, token_flags, tokenize


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a text and whether it is highlighted as changed."""

    text: str
    changed: bool


def _spans(text: str, tokens: list[Token], changed: list[bool]) -> list[Span]:
    """Maximal runs of text with one flag: tokens keep theirs, whitespace is changed only
    between two changed tokens (one pass, no intermediate pieces)."""
    spans: list[Span] = []
    start, flag = 0, None
    position = 0
    for index, token in enumerate(tokens):
        token_flag = changed[index]
        if token.start > position:
            gap_flag = index > 0 and changed[index - 1] and token_flag
            if gap_flag is not flag:
                if flag is not None:
                    spans.append(Span(text[start:position], flag))
                start, flag = position, gap_flag
        if token_flag is not flag:
            if flag is not None:
                spans.append(Span(text[start:token.start], flag))
            start, flag = token.start, token_flag
        position = token.end
    if position < len(text) and flag is not False:
        if flag is not None:
            spans.append(Span(text[start:position], flag))
        start, flag = position, False
    if flag is not None:
        spans.append(Span(text[start:], flag))
    return spans


def word_diff(original: str, localised: str, mode: Mode) -> tuple[list[Span], list[Span]]:
    """Spans of ``original`` and of ``localised`` (tokenised in ``mode``), each marked changed or
    not (module docstring)."""
    tokens_a, tokens_b = tokenize(original, mode), tokenize(localised, mode)
    changed_a, changed_b = token_flags([t.text for t in tokens_a], [t.text for t in tokens_b])
    return _spans(original, tokens_a, changed_a), _spans(localised, tokens_b, changed_b)
