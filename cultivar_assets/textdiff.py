"""Tokens and token diffs: the one definition for the site, the annotation tools and Table 1.

Mirrored line by line in the browser (``site/static/textdiff.js``), so a highlight or an edit
count is the same wherever it is computed (``tests/test_site_js.py`` runs both on the same cases).

**Tokenisation** (ours; the paper says "string" without defining it). Text is read as a sequence
of Unicode code points; *whitespace* is the Unicode ``White_Space`` property, listed explicitly in
:data:`WHITESPACE` (the same list in the JavaScript), and is never a token.

- *word mode* (scripts written with spaces between words: Latin, Cyrillic, Arabic, Devanagari,
  Bengali, Telugu, ...): a token is a maximal run of *word characters* — general categories L
  (letters), M (marks: Indic vowel signs and viramas belong to the word) and N (numbers), plus
  ZERO WIDTH NON-JOINER and ZERO WIDTH JOINER (U+200C, U+200D), which occur inside Indic and
  Persian words — or one single other non-whitespace code point (punctuation, symbols: ``"9:30"``
  is ``9``, ``:``, ``30``);
- *character mode* (scripts written without spaces: :data:`UNSEGMENTED_SCRIPTS`, e.g. ``Hans``,
  ``Jpan``, ``Thai``): every non-whitespace code point is a token (Latin words inside such a text
  too).

The mode is chosen by the text's script code (:func:`mode_for_script`: the locale's script for a
source-language text, from the locale registry); English is always word mode. Categories come
from Python's ``unicodedata`` and the browser's ``\\p{..}`` classes; they can differ only for code
points assigned in a Unicode version one of them does not know yet.

**Diff.** Two token sequences are aligned with Google's diff-match-patch: ``diff_main`` on the
tokens encoded one per character (distinct tokens get distinct code points from U+0100, in order
of first appearance), without line mode, without a time limit (``Diff_Timeout = 0``, so no
machine-dependent cut-off) and without the optional semantic cleanups afterwards. The JavaScript
side runs Google's JavaScript port (vendored, ``site/static/vendor/diff-match-patch/``, with its
licence); the Python side runs its C++ port (PyPI ``fast-diff-match-patch``, the STL port of
Google's C++ code), which implements the same algorithm line by line, so both sides find the
same alignment.
``tests/test_annotation_edits.py`` checks the C++ port against the pure-Python port and against
the JavaScript on the same cases. Tokens outside the equal parts are *changed*
(:func:`token_flags`).

**Cost** (what ``benchmarks/bench_ingest.py`` measures). Tokenising and encoding are linear in
the text's length (one regular expression, run in C). The diff is Myers's O((N + M) D)
algorithm (N, M the token counts, D the tokens changed): linear for a text with few edits,
quadratic only when two long texts share almost nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from fast_diff_match_patch import diff as _dmp_diff

Mode = Literal["word", "char"]

# Unicode White_Space (PropList.txt), the same list as WHITESPACE in textdiff.js.
WHITESPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
JOINERS = frozenset("\u200c\u200d")
# ISO 15924 codes of scripts written without spaces between words (character mode).
UNSEGMENTED_SCRIPTS = frozenset(
    {"Hans", "Hant", "Hani", "Jpan", "Hira", "Kana", "Thai", "Laoo", "Khmr", "Mymr"})
_FIRST_CODE = 0x100  # tokens are encoded as code points from here, below the surrogates
_LAST_CODE = 0xD7FF


@dataclass(frozen=True, slots=True)
class Token:
    """A token and where it is in its text (``text[start:end]``)."""

    text: str
    start: int
    end: int


def mode_for_script(script: str) -> Mode:
    """``"char"`` for :data:`UNSEGMENTED_SCRIPTS`, else ``"word"``."""
    return "char" if script in UNSEGMENTED_SCRIPTS else "word"


def _is_word_char(char: str) -> bool:
    return char in JOINERS or unicodedata.category(char)[0] in "LMN"


@cache
def _is_word_char_cached(char: str) -> bool:
    return _is_word_char(char)


_NOT_WHITESPACE = "[^" + "".join(map(re.escape, sorted(WHITESPACE))) + "]"


def _token_pattern(text: str, mode: Mode) -> re.Pattern[str]:
    """A regular expression whose matches in ``text`` are its tokens: in word mode, a run of the
    word characters that occur in ``text`` (listed in one character class), or one other
    non-whitespace code point; in character mode, every non-whitespace code point. Matching it
    is one pass over the text in C: linear in its length."""
    if mode not in ("word", "char"):
        raise ValueError(f"unknown token mode {mode!r} (expected 'word' or 'char')")
    words = sorted(c for c in set(text) if _is_word_char_cached(c)) if mode == "word" else []
    if not words:
        return re.compile(_NOT_WHITESPACE)
    return re.compile("[" + "".join(map(re.escape, words)) + "]+|" + _NOT_WHITESPACE)


def tokenize(text: str, mode: Mode) -> list[Token]:
    """The tokens of ``text`` in ``mode`` (see the module docstring)."""
    return [Token(m.group(), m.start(), m.end()) for m in _token_pattern(text, mode).finditer(text)]


def token_texts(text: str, mode: Mode) -> list[str]:
    """The tokens of ``text`` as strings (:func:`tokenize` without the offsets)."""
    return _token_pattern(text, mode).findall(text)


def _encode(a: Sequence[str], b: Sequence[str]) -> tuple[str, str]:
    distinct = dict.fromkeys([*a, *b])  # in order of first appearance
    if len(distinct) > _LAST_CODE - _FIRST_CODE + 1:
        raise ValueError("too many distinct tokens to diff (more than 55,000)")
    codes = {token: chr(_FIRST_CODE + index) for index, token in enumerate(distinct)}
    return "".join(map(codes.__getitem__, a)), "".join(map(codes.__getitem__, b))


_OPS = {"-": -1, "=": 0, "+": 1}


def diff_ops(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """``(operation, number of tokens)`` from diff-match-patch: -1 delete, 0 equal, 1 insert."""
    left, right = _encode(a, b)
    # timelimit=0: no time limit (the same result on every machine); no line mode, no cleanup
    return [(_OPS[op], count) for op, count in _dmp_diff(
        left, right, timelimit=0, checklines=False, cleanup="No", counts_only=True)]


def token_flags(a: Sequence[str], b: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """For each token of ``a`` and of ``b``: is it outside the equal parts of their diff?"""
    flags_a: list[bool] = []
    flags_b: list[bool] = []
    for op, count in diff_ops(a, b):
        if op <= 0:
            flags_a += [op != 0] * count
        if op >= 0:
            flags_b += [op != 0] * count
    return flags_a, flags_b


def changed_flags(before: str, after: str, mode: Mode) -> tuple[list[bool], list[bool]]:
    """:func:`token_flags` of the tokens of ``before`` and of ``after``."""
    return token_flags(token_texts(before, mode), token_texts(after, mode))
