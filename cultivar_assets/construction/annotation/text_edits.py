"""Edit counts of post-edited text (paper §2.3, Table 1).

Tokens and the token diff are :mod:`cultivar_assets.textdiff`'s (the one definition the site and
the tools use too); the post-editing tool computes the same counts in the browser
(``site/static/textdiff.js``, ``compare``), so the counts the tool shows while the annotator
types are the counts Table 1 is computed with. Tests run both on the same cases
(``tests/test_annotation_edits.py``). The source side is tokenised in the mode of the locale's
script (:func:`mode_for_locale`), the English side in word mode.

**Edit** (paper: "a modified continuous string surrounded by original strings"): a maximal run of
changed tokens — deletions, insertions or replacements — between two unchanged tokens (or the
text's ends). :func:`count_edits` counts them. The per-item "diff" figure of the paper's
Figure 1, the tokens removed plus the tokens added, is the post-editing tool's
(``site/static/textdiff.js``), from the same flags as :func:`cultivar_assets.textdiff.
changed_flags`.

**Cost**: that of the diff (:mod:`cultivar_assets.textdiff`: linear for a text with few edits,
quadratic only when two long texts share almost nothing); the annotation file's per-text limit
(``annotation.file.IngestLimits``) bounds it.
"""

from __future__ import annotations

import re

from cultivar_assets.textdiff import Mode, diff_ops, mode_for_script, token_texts

_LOCALE_SCRIPT = re.compile(r"^[a-z]{3}_([A-Z][a-z]{3})(?:_|$)")


def mode_for_locale(locale: str) -> Mode:
    """Source-side mode of a locale key ``<lang>_<Script>_<Location>`` (or ``<lang>_<Script>``)."""
    match = _LOCALE_SCRIPT.match(locale)
    if not match:
        raise ValueError(f"cannot read a script code from locale {locale!r} "
                         "(expected <lang>_<Script>_<Location>, e.g. deu_Latn_Germany)")
    return mode_for_script(match.group(1))


def count_edits(before: str, after: str, mode: Mode) -> int:
    """Edits from ``before`` to ``after``: maximal runs of changed tokens (module docstring)."""
    edits, in_run = 0, False
    for op, _ in diff_ops(token_texts(before, mode), token_texts(after, mode)):
        if op != 0 and not in_run:
            edits += 1
        in_run = op != 0
    return edits
