"""Exclusion rules of the selection (paper §2.1), each named, configurable and reported.

The paper excludes "instances dominated by numerals or topics such as medicine and science"; our
rules (``RULES``, named as in ``SelectionConfig.rules``) are each evaluated for every instance.

- ``numeral_share``: ``share = |numeral mentions| / |mentions|`` over an instance's entity mentions
  after corrections (every label, counted or not); excluded when ``share > max_numeral_share``
  (0.5). No entities: no share, not excluded. A mention is a numeral (``numeral_mentions``) under
  ``label_and_text`` (default) when its label is numeric (``numeric_labels``: CARDINAL, DATE,
  MONEY, ORDINAL, PERCENT, QUANTITY, TIME) *and* its text holds a digit or an English number word
  (:data:`NUMBER_WORDS`, whole word, any case; ``twenty-one`` is two): "2010", "about one",
  "28-year-old" are numerals, "Monday" (DATE) is not; under ``label``, when its label is numeric.
- ``topic``: excluded when a word of the normalised FLORES topic (:func:`topic_terms`) is in
  ``excluded_topics`` (science, neuroscience, medicine, medical, disease, biology); an instance
  without a topic is not excluded, and its outcome says so.

The defaults keep the four instances of the paper's Figure 1 (:data:`PAPER_FIGURE_1_IDS`) as
candidates; the readings that figure rules out, with their candidates on FLORES dev, are in
``docs/building-a-benchmark.md`` (from ``python scripts/selection_readings.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cultivar_assets.construction.config import SelectionConfig
from cultivar_assets.construction.selection.entities import Entity

# English number words (ours): cardinals, the scales and their plurals, ordinals, dozen, half.
_UNITS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen"
)
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ("hundred", "thousand", "million", "billion", "trillion", "dozen")
_ORDINALS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
    "eighteenth", "nineteenth", "twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth",
    "seventieth", "eightieth", "ninetieth", "hundredth", "thousandth", "millionth", "billionth",
    "trillionth"
)
NUMBER_WORDS = frozenset((*_UNITS, *_TENS, *_SCALES, *(w + "s" for w in _SCALES), *_ORDINALS,
                          "half"))
_WORD = re.compile(r"[^\W\d_]+")

# The FLORES dev instances that the paper's Figure 1 shows in Cultivar (deu_Latn_Germany_<id>).
PAPER_FIGURE_1_IDS = (0, 2, 3, 5)


@dataclass(frozen=True)
class RuleOutcome:
    rule: str
    excluded: bool
    value: float | None  # numeral_share: the share; topic: None
    detail: str


def topic_terms(topic: str | None, spellings: Mapping[str, str]) -> tuple[str, ...]:
    """A FLORES topic as normalised terms.

    FLORES-200 spells topics inconsistently (``Science/Earth Science``, ``science``,
    ``Crime and Law``, ``crime and law``, ``World_War_II/Submarines``, ``Antartica, Travel``).
    Normalisation (ours): lower-case; ``_`` becomes a space; split into terms at ``/`` and ``,``;
    whitespace collapsed; each word respelled by ``spellings`` (misspellings of the metadata);
    empty terms dropped; duplicates dropped, order kept. ``"Antartica, Travel"`` ->
    ``("antarctica", "travel")``.
    """
    if not topic:
        return ()
    terms: list[str] = []
    for piece in re.split(r"[/,]", topic.lower().replace("_", " ")):
        words = [spellings.get(word, word) for word in piece.split()]
        term = " ".join(words)
        if term and term not in terms:
            terms.append(term)
    return tuple(terms)


def has_numeral(text: str) -> bool:
    """Whether ``text`` holds a digit or a whole English number word (:data:`NUMBER_WORDS`)."""
    return any(ch.isdigit() for ch in text) or any(
        word.lower() in NUMBER_WORDS for word in _WORD.findall(text))


def is_numeral(entity: Entity, config: SelectionConfig) -> bool:
    """Whether a mention is a numeral under ``config.numeral_mentions`` (module docstring)."""
    if entity.label not in config.numeric_labels:
        return False
    return config.numeral_mentions == "label" or has_numeral(entity.text)


def numeral_share(entities: Sequence[Entity], config: SelectionConfig) -> RuleOutcome:
    kept = [e for e in entities if not e.removed]
    if not kept:
        return RuleOutcome("numeral_share", False, None, "no entities")
    numeric = [e for e in kept if is_numeral(e, config)]
    share = len(numeric) / len(kept)
    excluded = share > config.max_numeral_share
    return RuleOutcome("numeral_share", excluded, share,
                       f"{len(numeric)} of {len(kept)} entities are numeric ({share:.0%}"
                       f"{' >' if excluded else ' ≤'} {config.max_numeral_share:.0%})")


def topic(terms: Sequence[str], config: SelectionConfig) -> RuleOutcome:
    if not terms:
        return RuleOutcome("topic", False, None, "no topic in the source metadata")
    words = {word for term in terms for word in term.split()}
    hits = [t for t in config.excluded_topics if t.lower() in words]
    shown = "; ".join(terms)
    if hits:
        return RuleOutcome("topic", True, None, f"topic '{shown}' is {', '.join(hits)}")
    return RuleOutcome("topic", False, None, f"topic '{shown}'")


RULES: dict[str, Callable[[Sequence[Entity], Sequence[str], SelectionConfig], RuleOutcome]] = {
    "numeral_share": lambda entities, _terms, config: numeral_share(entities, config),
    "topic": lambda _entities, terms, config: topic(terms, config),
}


def evaluate_rules(entities: Sequence[Entity], terms: Sequence[str],
                   config: SelectionConfig) -> tuple[RuleOutcome, ...]:
    """The outcome of every enabled rule, in configuration order."""
    return tuple(RULES[name](entities, terms, config) for name in config.rules)
