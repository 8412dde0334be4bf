"""Fonts for every script of the locale registry: the pages' stacks name them (site/fonts.py),
fontconfig says they cover their languages, and the annotation tools tell an annotator when the
browser cannot draw the locale's script (Chromium, with the system's fonts less Noto and with
Noto: browser_helpers.FONT_SETUPS)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from annotation_helpers import demo_drafts
from browser_helpers import NEEDS_CHROMIUM, FontBrowsers, ToolPage, serve

from cultivar_assets.construction.annotation.postedit_tool import build_postedit_tool
from cultivar_assets.construction.annotation.task import AnnotationTask
from cultivar_assets.data.locales import all_locales
from cultivar_assets.paths import resource_dir
from cultivar_assets.site.fonts import SCRIPT_FONTS, font_advice, script_fonts

FONT_SHEET = "fonts.css"  # the stacks, linked by the site (style.css) and the tools (tool.css)
# fontconfig's language (orthography) names for the registry's languages (ISO 639-3)
FC_LANG = {"acm": "ar", "apc": "ar", "ben": "bn", "bul": "bg", "cat": "ca", "ces": "cs",
           "cmn": "zh-cn", "deu": "de", "fil": "fil", "gom": "kok", "hin": "hi", "jpn": "ja",
           "khk": "mn-mn", "plt": "mg", "pol": "pl", "rus": "ru", "slk": "sk", "spa": "es",
           "tel": "te", "tur": "tr", "yor": "yo"}


@pytest.fixture(scope="module")
def fonts(tmp_path_factory):
    """The module's font setups and their browsers (browser_helpers.FontBrowsers): each test
    opens its own browser contexts (fresh profiles) in them."""
    browsers = FontBrowsers(tmp_path_factory.mktemp("font_setups"))
    try:
        yield browsers
    finally:
        browsers.close()


def stack(sheet: str, name: str) -> list[str]:
    text = (resource_dir("site") / "static" / sheet).read_text("utf-8")
    value = re.search(rf"--{name}:([^;]*);", text).group(1)
    return [family.strip().strip('"') for family in value.split(",")]


def test_every_script_of_the_registry_has_fonts_and_the_stacks_name_them():
    scripts = {locale.script for locale in all_locales()}
    assert scripts <= set(SCRIPT_FONTS), scripts - set(SCRIPT_FONTS)
    declared = stack(FONT_SHEET, "ui-fonts") + stack(FONT_SHEET, "script-fonts")
    for script in scripts:
        missing = set(script_fonts(script).families) - set(declared)
        assert not missing, (script, missing)
    for sheet in ("style.css", "tool.css"):  # one definition: the page sheets only use it
        text = (resource_dir("site") / "static" / sheet).read_text("utf-8")
        assert "--script-fonts:" not in text and "var(--text-fonts)" in text, sheet
    assert "apt install fonts-noto-core" in font_advice("Deva")
    with pytest.raises(KeyError, match="no fonts recorded for script 'Zzzz'"):
        script_fonts("Zzzz")


@pytest.mark.skipif(shutil.which("fc-list") is None, reason="needs fontconfig's fc-list")
def test_fontconfig_says_each_scripts_fonts_cover_its_languages(fonts):
    conf = fonts.conf("with Noto")
    assert {locale.language for locale in all_locales()} <= set(FC_LANG)
    for locale in all_locales():
        listed = subprocess.run(["fc-list", f":lang={FC_LANG[locale.language]}", "family"],
                                env={"FONTCONFIG_FILE": str(conf), "PATH": "/usr/bin:/bin"},
                                capture_output=True, text=True, check=True).stdout
        families = {name for line in listed.splitlines() for name in line.split(",")}
        assert families & set(script_fonts(locale.script).families), (locale.key, families)


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    root = tmp_path_factory.mktemp("font_tools")
    for name, locale in (("hi", "hin_Deva_India"), ("zh", "cmn_Hans_China"),
                         ("de", "deu_Latn_Germany")):
        build_postedit_tool(AnnotationTask.from_drafts(demo_drafts(locale)), root / name)
    with serve(root) as url:
        yield url


def notice(browser, url: str) -> dict:
    tool = ToolPage(browser, url)
    box = tool.page.locator("#script-notice")
    assert box.get_attribute("data-checked") == "true"
    family = tool.page.evaluate("getComputedStyle(document.body).fontFamily")
    assert "Noto Sans Devanagari" in family, family  # the stacks of fonts.css apply
    state = {"hidden": box.is_hidden(), "text": box.text_content(),
             "letters": int(box.get_attribute("data-letters")),
             "missing": int(box.get_attribute("data-missing"))}
    tool.close()
    return state


def fc_has(conf, lang: str) -> bool:
    if shutil.which("fc-list") is None:
        pytest.skip("needs fontconfig's fc-list to know which scripts have a font")
    return bool(subprocess.run(["fc-list", f":lang={lang}"], capture_output=True, text=True,
                               env={"FONTCONFIG_FILE": str(conf), "PATH": "/usr/bin:/bin"},
                               check=True).stdout.strip())


@NEEDS_CHROMIUM
def test_tool_tells_the_annotator_when_the_browser_has_no_font_for_the_script(tools, fonts):
    conf = fonts.conf("without Noto")
    if fc_has(conf, "hi"):
        pytest.skip("this system has a Devanagari font besides Noto")
    browser = fonts.browser("without Noto")
    hindi = notice(browser, f"{tools}/hi/index.html")
    german = notice(browser, f"{tools}/de/index.html")
    chinese = notice(browser, f"{tools}/zh/index.html") if not fc_has(conf, "zh-cn") else None
    assert not hindi["hidden"] and hindi["missing"] > 20  # the Devanagari letters
    assert hindi["missing"] == hindi["letters"]  # every letter of the Hindi text
    assert "cannot draw" in hindi["text"] and "Hindi" in hindi["text"]
    assert "Noto Sans Devanagari" in hindi["text"] and "fonts-noto-core" in hindi["text"]
    assert german["hidden"] and german["missing"] == 0 and german["letters"] > 20
    if chinese:
        assert not chinese["hidden"] and "Noto Sans CJK SC" in chinese["text"]
        assert chinese["missing"] > 100 and "fonts-noto-cjk" in chinese["text"]


@NEEDS_CHROMIUM
def test_tool_says_nothing_when_the_script_can_be_drawn(tools, fonts):
    browser = fonts.browser("with Noto")  # skips where Noto is not to be had
    for name in ("hi", "zh", "de"):
        state = notice(browser, f"{tools}/{name}/index.html")
        assert state["hidden"] and state["missing"] == 0 and state["letters"] > 20, name


def test_every_page_family_ships_and_links_the_one_font_sheet(tmp_path):
    """The site, the selection review and the annotation tools link static/fonts.css before their
    own sheet, and ship it."""
    from cultivar_assets.site.build import PUBLIC_STATIC
    from cultivar_assets.site.tool_pages import COMMON_STATIC

    assert "fonts.css" in PUBLIC_STATIC and "fonts.css" in COMMON_STATIC
    build_postedit_tool(AnnotationTask.from_drafts(demo_drafts("hin_Deva_India")), tmp_path)
    html = (tmp_path / "index.html").read_text("utf-8")
    assert (tmp_path / "static" / "fonts.css").is_file()
    assert html.index("static/fonts.css") < html.index("static/tool.css")
    for name in ("base.html.j2", "selection_review.html.j2"):
        template = (resource_dir("site") / "templates" / name).read_text("utf-8")
        assert template.index("static/fonts.css") < template.index("static/style.css"), name


# ---- the site tells a reader too -------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory, hostile_store_copy):
    from cultivar_assets.site.build import build_site

    root = tmp_path_factory.mktemp("font_site")
    build_site(hostile_store_copy(root), root / "site", query_page="off")
    with serve(root / "site") as url:
        yield url


def site_notice(browser, url: str, ready: str | None = None) -> dict:
    from site_helpers import watched_page

    with watched_page(browser) as page:
        page.goto(url)
        if ready:
            page.wait_for_selector(ready)
        box = page.locator("#script-notice")
        page.wait_for_function("document.getElementById('script-notice')"
                               ".getAttribute('data-checked') === 'true'")
        return {"hidden": box.is_hidden(), "text": box.text_content(),
                "missing": int(box.get_attribute("data-missing"))}


@NEEDS_CHROMIUM
def test_site_tells_the_reader_when_the_browser_has_no_font_for_a_script(site, fonts):
    conf = fonts.conf("without Noto")
    if fc_has(conf, "hi"):
        pytest.skip("this system has a Devanagari font besides Noto")
    browser = fonts.browser("without Noto")
    hindi = site_notice(browser, f"{site}/locales/hin_Deva_India.html")
    german = site_notice(browser, f"{site}/locales/deu_Latn_Germany.html")
    segments = site_notice(browser, f"{site}/browse.html#locale=hin_Deva_India",
                           ready="article.instance")
    chinese = (site_notice(browser, f"{site}/locales/cmn_Hans_China.html")
               if not fc_has(conf, "zh-cn") else None)
    assert not hindi["hidden"] and hindi["missing"] > 20
    assert "cannot draw" in hindi["text"] and "Hindi" in hindi["text"]
    assert "Noto Sans Devanagari" in hindi["text"] and "fonts-noto-core" in hindi["text"]
    assert german["hidden"] and german["missing"] == 0
    assert not segments["hidden"] and "Hindi" in segments["text"]  # text the page adds later
    if chinese:
        assert not chinese["hidden"] and "fonts-noto-cjk" in chinese["text"]


@NEEDS_CHROMIUM
def test_site_says_nothing_when_every_script_can_be_drawn(site, fonts):
    browser = fonts.browser("with Noto")  # skips where Noto is not to be had
    for page in ("locales/hin_Deva_India.html", "locales/cmn_Hans_China.html", "index.html"):
        state = site_notice(browser, f"{site}/{page}")
        assert state["hidden"] and state["missing"] == 0, page
