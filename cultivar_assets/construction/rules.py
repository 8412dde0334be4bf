"""Exclusion rules of the selection (paper §2.1), each named, configurable and reported.

The paper excludes "instances dominated by numerals or topics such as medicine and science, where
named entities are globally shared". Both rules are defined here, by us:

- ``numeral_share``: the share of an instance's entity mentions (after corrections; removed ones
  not counted; every label, counted or not) whose label is numeric (``numeric_labels``: CARDINAL,
  DATE, MONEY, ORDINAL, PERCENT, QUANTITY, TIME by default):
  ``share = |numeric mentions| / |mentions|``. Excluded when ``share > max_numeral_share``
  (default 0.5: more than half). An instance without entities has no share and is not excluded.
- ``topic``: the FLORES topic, normalised (:func:`topic_terms`), is excluded when one of its
  words is in ``excluded_topics`` (default: science, neuroscience, medicine, medical, health,
  disease, biology). An instance without a topic is not excluded, and its outcome says so.

Every enabled rule is evaluated for every instance, so the report says what each rule does to
each instance, including those that fall short of ``min_entities`` or that a person selected.
The rules are registered in ``RULES`` under the names that ``SelectionConfig.rules`` takes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cultivar_assets.construction.config import SelectionConfig
from cultivar_assets.construction.entities import Entity


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


def numeral_share(entities: Sequence[Entity], config: SelectionConfig) -> RuleOutcome:
    kept = [e for e in entities if not e.removed]
    if not kept:
        return RuleOutcome("numeral_share", False, None, "no entities")
    numeric = [e for e in kept if e.label in config.numeric_labels]
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
