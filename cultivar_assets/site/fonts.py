"""Fonts for the scripts of the locale registry (``data/locales.csv``, column ``script``).

:data:`SCRIPT_FONTS` maps each ISO 15924 script code of the registry to its name and to the
common free fonts that draw it (our choice: the Noto families, under the names Debian's packages
and Google Fonts give them), with the Debian package that holds the first. The pages' font
stacks (``site/static/fonts.css``, linked by the site and the tools, ``--text-fonts``) name
every one of them, so a reader who has one installed sees it used; the tests hold the stacks,
the registry and this table together, and check with fontconfig that each family covers its script.

The annotation tools tell an annotator when the browser cannot draw the locale's script
(``site/static/tool-common.js``, ``checkScript``), and the site's pages tell a reader
(``site/static/cultivar.js``, ``checkScripts``): each draws each distinct letter of the page's
text in that language on a canvas and compares it with the drawing of an unassigned code point
(U+0378: every font draws its "missing glyph" box for it). ``document.fonts.check`` cannot answer
this: it says whether the web fonts a text needs are loaded, and is true when the fonts are
local, installed or not (CSS Font Loading, ``check()``; seen in Chromium).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScriptFonts:
    name: str                    # the script's English name, for messages
    families: tuple[str, ...]    # free fonts that draw it, in the order the stacks name them
    debian_package: str          # the Debian (and Ubuntu) package of the first family


SCRIPT_FONTS: dict[str, ScriptFonts] = {
    "Latn": ScriptFonts("Latin", ("Noto Sans", "DejaVu Sans"), "fonts-noto-core"),
    "Cyrl": ScriptFonts("Cyrillic", ("Noto Sans", "DejaVu Sans"), "fonts-noto-core"),
    "Arab": ScriptFonts("Arabic", ("Noto Sans Arabic", "Noto Naskh Arabic"), "fonts-noto-core"),
    "Beng": ScriptFonts("Bengali", ("Noto Sans Bengali",), "fonts-noto-core"),
    "Deva": ScriptFonts("Devanagari", ("Noto Sans Devanagari",), "fonts-noto-core"),
    "Telu": ScriptFonts("Telugu", ("Noto Sans Telugu",), "fonts-noto-core"),
    "Hans": ScriptFonts("Simplified Chinese (Han)", ("Noto Sans CJK SC", "Noto Sans SC"),
                        "fonts-noto-cjk"),
    "Jpan": ScriptFonts("Japanese (Han and kana)", ("Noto Sans CJK JP", "Noto Sans JP"),
                        "fonts-noto-cjk"),
}


def script_fonts(script: str) -> ScriptFonts:
    """The fonts of ``script`` (an ISO 15924 code of the locale registry); a clear error for a
    script the table does not have."""
    try:
        return SCRIPT_FONTS[script]
    except KeyError:
        raise KeyError(f"no fonts recorded for script {script!r}: add it to "
                       f"cultivar_assets/site/fonts.py SCRIPT_FONTS and to the stacks of "
                       f"site/static/fonts.css") from None


def font_advice(script: str) -> str:
    """What the tools tell an annotator to install for ``script``."""
    fonts = script_fonts(script)
    return (f"a font for the {fonts.name} script, e.g. {' or '.join(fonts.families)} (free; "
            f"on Debian and Ubuntu: apt install {fonts.debian_package})")
