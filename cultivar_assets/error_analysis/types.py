"""The nine error types of the paper's manual error analysis (§5.1, Table 5), in two groups.

The paper: "Nine error types are pre-defined and grouped into two categories": four
*locale-specific* errors (named entities; idioms and culturally specific expressions; number or
unit; Pinyin, the romanisation of Mandarin names) and five *general* errors (semantic
mistranslation, omitted information, hallucinated or added information, original language
retained, unwanted reasoning or formatting tokens). "We classify errors based on their
manifestation rather than underlying cause, with errors directly concerning localised content
categorised as locale-specific. [...] Repeated errors of the same type within an instance are
counted only once, while different types are counted separately."

So an annotation is, per translation, the *set* of error types it shows; Table 5 counts, per
model and locale, the translations with each type. The codes NE, PY, IC, NU are the paper's
column names; the general types' codes (MT, OM, AD, UT, RF) and every description are ours.
"Pinyin" generalises to "romanisation" for other scripts (ours); the paper's analysis is of
Mandarin, where it is Pinyin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Group = Literal["locale_specific", "general"]
GROUPS: dict[Group, str] = {"locale_specific": "Locale-specific errors",
                            "general": "General errors"}


@dataclass(frozen=True)
class ErrorType:
    code: str  # the Table 5 column (the locale-specific ones are the paper's)
    group: Group
    label: str
    description: str


ERROR_TYPES: tuple[ErrorType, ...] = (
    ErrorType("NE", "locale_specific", "Named entity",
              "A localised name (person, place, organisation, team, event, product) is wrong, "
              "replaced by another entity, or left in a form the locale does not use."),
    ErrorType("PY", "locale_specific", "Pinyin / romanisation",
              "A name written in the source script is romanised wrongly (for Mandarin: wrong or "
              "garbled Pinyin), or translated word by word where it should be romanised."),
    ErrorType("IC", "locale_specific", "Idiom or culture-specific expression",
              "A local idiom, custom, dish, festival or institution is mistranslated, "
              "translated literally where an equivalent exists, or lost."),
    ErrorType("NU", "locale_specific", "Number or unit",
              "A number, date, currency, measure or unit of the localised content is wrong or "
              "wrongly converted."),
    ErrorType("MT", "general", "Mistranslation",
              "The meaning of a (non-localised) word or phrase is rendered wrongly."),
    ErrorType("OM", "general", "Omission",
              "Information of the source is missing from the translation."),
    ErrorType("AD", "general", "Addition / hallucination",
              "The translation adds information that is not in the source."),
    ErrorType("UT", "general", "Source language left untranslated",
              "Part or all of the translation is still in the source language."),
    ErrorType("RF", "general", "Unwanted reasoning or formatting tokens",
              "The output contains reasoning, explanations, notes, markup or other tokens "
              "that are not the translation."),
)
CODES: tuple[str, ...] = tuple(t.code for t in ERROR_TYPES)
LOCALE_SPECIFIC: tuple[str, ...] = tuple(t.code for t in ERROR_TYPES
                                         if t.group == "locale_specific")
GENERAL: tuple[str, ...] = tuple(t.code for t in ERROR_TYPES if t.group == "general")
BY_CODE: dict[str, ErrorType] = {t.code: t for t in ERROR_TYPES}
