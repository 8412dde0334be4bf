"""The registry of the 27 Cultivar locales (paper, Table 1), read from ``locales.csv``.

A locale key is ``<language>_<script>_<Location>`` with FLORES+ language and script codes, e.g.
``deu_Latn_Germany``. Its *source language* is the FLORES+ code ``<language>_<script>``; the
FLORES-200 release names two of them differently (``cmn_Hans`` is ``zho_Hans``, ``fil_Latn`` is
``tgl_Latn``) and has no ``gom_Deva`` at all (added in FLORES+ 2.0).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

from cultivar_assets.registry import Registry


@dataclass(frozen=True)
class Locale:
    key: str
    language: str  # ISO 639-3, as in the paper ("cmn", "fil")
    script: str  # ISO 15924
    location: str
    location_short: str  # the paper's figure labels: US, UK, DE, IN, CN, SG, ...
    flores_plus_code: str  # source language code in FLORES+
    flores200_code: str | None  # file name stem in the FLORES-200 release; None: not in FLORES-200
    language_name: str  # English name of the language
    official_or_de_facto: bool  # is the language official or de facto at the location?

    @property
    def source_language(self) -> str:
        """The FLORES+ code of the source language (``deu_Latn``)."""
        return self.flores_plus_code

    @property
    def test_set(self) -> str:
        """``cultivar_<locale>``."""
        return cultivar_test_set_name(self.key)


def flores_test_set_name(language: str) -> str:
    """``flores_<FLORES+ code>``: original FLORES source, original English reference."""
    return f"flores_{language}"


def cultivar_test_set_name(locale: str) -> str:
    """``cultivar_<locale>``: localised source, localised English reference."""
    return f"cultivar_{locale}"


@cache
def locale_registry() -> Registry[Locale]:
    registry: Registry[Locale] = Registry("locale")
    text = resources.files("cultivar_assets.data").joinpath("locales.csv").read_text("utf-8")
    for row in csv.DictReader(text.splitlines()):
        locale = Locale(
            key=row["locale"],
            language=row["language"],
            script=row["script"],
            location=row["location"],
            location_short=row["location_short"],
            flores_plus_code=row["flores_plus_code"],
            flores200_code=row["flores200_code"] or None,
            language_name=row["language_name"],
            official_or_de_facto=row["official_or_de_facto"] == "True",
        )
        registry.register(locale.key, locale)
    return registry


def get_locale(key: str) -> Locale:
    """The locale registered under ``key``; an unknown key raises with close matches."""
    return locale_registry().get(key)


def all_locales() -> list[Locale]:
    registry = locale_registry()
    return [registry.get(name) for name in registry]


def source_languages(locales: list[Locale] | None = None) -> dict[str, list[Locale]]:
    """FLORES+ source-language code -> its locales, in registry order."""
    grouped: dict[str, list[Locale]] = {}
    for locale in locales if locales is not None else all_locales():
        grouped.setdefault(locale.source_language, []).append(locale)
    return grouped
