"""Locale-specific word recall (paper §3.2): false positives and false negatives.

Terms of a text (our tokenisation; the paper defines none): the NFC-normalised, lower-cased text
(NFC first, so that a decomposed "Zürich" is one term) split into *words*, maximal runs of Unicode
word characters (letters, digits, underscore; Python's ``re`` with ``str`` patterns) joined by
single inner periods or apostrophes (``'`` or ``’``), so that "U.S." is the one term ``u.s``,
"d'Orsay" ``d'orsay`` and "3.14" ``3.14``; a word's possessive ending ``'s`` (``’s``) is dropped,
so that "Charité's" is ``charité``, the term of "Charité". Hyphens, other punctuation and spaces
separate words (``TERM_PATTERN``, :func:`terms`).

For one instance of locale l, with original English reference ``o``, localised English reference
``c`` and the model's translation ``h`` of the *localised* source:

- ``R = T(o) − T(c)``: terms removed by localisation,
- ``I = T(c) − T(o)``: terms introduced by localisation,
- ``H = T(h)``.

False-positive rate of locale l = ``Σ|H ∩ R| / Σ|R|`` (memorised FLORES terms that should no longer
appear); false-negative rate = ``Σ|I ∖ H| / Σ|I|`` (local terms the translation misses); sums run
over the locale's instances (pooled: the paper defines the terms counted, not how a locale's
instances are combined; pooling the counts is our choice). A model's rate is the unweighted mean
of its locale rates; a locale whose denominator is 0 has no rate and is left out of that mean
(the pipeline computes the model rates with their intervals in ``bootstrap.py``:
``model_false_positive_rate`` and ``model_false_negative_rate``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

TERM_PATTERN = re.compile(r"\w+(?:[.'’]\w+)*")
POSSESSIVE = re.compile(r"['’]s\Z")
POSSESSIVE_ENDINGS = ("'s", "’s")  # what POSSESSIVE matches, as str.endswith takes it


def terms(text: str) -> frozenset[str]:
    """The set of terms of ``text``: its NFC-normalised, lower-cased words (``TERM_PATTERN``:
    word characters joined by inner periods or apostrophes), each without a possessive
    ``'s``."""
    words = TERM_PATTERN.findall(unicodedata.normalize("NFC", text).lower())
    return frozenset(word[:-2] if word.endswith(POSSESSIVE_ENDINGS) else word  # POSSESSIVE
                     for word in words)


@dataclass(frozen=True)
class InstanceRecall:
    locale: str
    segment_id: int
    n_removed: int  # |R|
    n_removed_recalled: int  # |H ∩ R|
    n_introduced: int  # |I|
    n_introduced_missed: int  # |I \ H|


def instance_recall(
    locale: str, segment_id: int, original_ref: str, localised_ref: str, hypothesis: str
) -> InstanceRecall:
    original, localised, hyp = terms(original_ref), terms(localised_ref), terms(hypothesis)
    removed = original - localised
    introduced = localised - original
    return InstanceRecall(locale, segment_id, len(removed), len(hyp & removed),
                          len(introduced), len(introduced - hyp))


@dataclass(frozen=True)
class LocaleRates:
    false_positive_rate: float | None  # Σ|H ∩ R| / Σ|R|; None when Σ|R| = 0
    false_negative_rate: float | None  # Σ|I ∖ H| / Σ|I|; None when Σ|I| = 0
    n_removed_terms: int  # Σ|R|
    n_introduced_terms: int  # Σ|I|
    n_instances: int


def rates_from_sums(n_removed: int, n_removed_recalled: int, n_introduced: int,
                    n_introduced_missed: int, n_instances: int) -> LocaleRates:
    """The Σ-ratio rates of one locale from its summed counts (the one definition)."""
    return LocaleRates(n_removed_recalled / n_removed if n_removed else None,
                       n_introduced_missed / n_introduced if n_introduced else None,
                       n_removed, n_introduced, n_instances)
