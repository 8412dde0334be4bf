"""The locale registry: the paper's 27 locales, their source languages and FLORES file names."""

from __future__ import annotations

import csv
import re
from importlib import resources

import pytest
from data_helpers import PAPER_LOCALES, TABLE1

from cultivar_assets.data.locales import (
    all_locales,
    cultivar_test_set_name,
    flores_test_set_name,
    get_locale,
    locale_registry,
    source_languages,
)
from cultivar_assets.registry import UnknownEntryError


def paper_table1() -> dict[str, dict[str, str]]:
    """The paper's Table 1 by locale key, as the project ships it (``data/reported``)."""
    text = resources.files("cultivar_assets.data").joinpath(
        "reported", "table1_annotation.csv").read_text("utf-8")
    return {row["locale"]: row for row in csv.DictReader(text.splitlines())}


def test_shipped_table1_is_the_transcribed_one():
    if not TABLE1.is_file():
        pytest.skip(f"the transcribed paper tables are not at {TABLE1}")
    with TABLE1.open(encoding="utf-8") as handle:
        assert {row["locale"]: row for row in csv.DictReader(handle)} == paper_table1()


def test_registry_has_exactly_the_papers_27_locales():
    keys = [locale.key for locale in all_locales()]
    assert len(keys) == 27
    assert len(set(keys)) == 27
    expected = list(paper_table1())
    assert sorted(expected) == sorted(PAPER_LOCALES)
    assert sorted(keys) == sorted(expected)
    assert sorted(keys) == sorted(PAPER_LOCALES)
    assert len(locale_registry()) == 27


def test_locale_fields_agree_with_the_key_and_table1():
    table = paper_table1()
    for locale in all_locales():
        language, script, location = locale.key.split("_", 2)
        assert (locale.language, locale.script, locale.location) == (language, script, location)
        assert locale.flores_plus_code == f"{language}_{script}" == locale.source_language
        assert locale.test_set == cultivar_test_set_name(locale.key) == f"cultivar_{locale.key}"
        row = table[locale.key]
        assert (row["language"], row["script"], row["location"]) == (
            locale.language, locale.script, locale.location)


def test_21_distinct_source_languages_in_registry_order():
    grouped = source_languages()
    assert len(grouped) == 21
    assert sum(len(v) for v in grouped.values()) == 27
    assert [loc.key for loc in grouped["cmn_Hans"]] == [
        "cmn_Hans_China", "cmn_Hans_Singapore", "cmn_Hans_UK", "cmn_Hans_US"]
    assert [loc.key for loc in grouped["hin_Deva"]] == [
        "hin_Deva_Germany", "hin_Deva_India", "hin_Deva_US"]
    assert [loc.key for loc in grouped["deu_Latn"]] == ["deu_Latn_Germany", "deu_Latn_Switzerland"]
    assert flores_test_set_name("deu_Latn") == "flores_deu_Latn"


def test_source_languages_of_a_subset():
    subset = [get_locale("hin_Deva_US"), get_locale("spa_Latn_Spain"), get_locale("hin_Deva_India")]
    grouped = source_languages(subset)
    assert list(grouped) == ["hin_Deva", "spa_Latn"]
    assert [loc.key for loc in grouped["hin_Deva"]] == ["hin_Deva_US", "hin_Deva_India"]


@pytest.mark.parametrize(
    ("key", "flores200"),
    [
        ("cmn_Hans_China", "zho_Hans"),
        ("cmn_Hans_US", "zho_Hans"),
        ("fil_Latn_Philippines", "tgl_Latn"),
        ("gom_Deva_India", None),
        ("deu_Latn_Germany", "deu_Latn"),
        ("plt_Latn_Madagascar", "plt_Latn"),
    ],
)
def test_flores200_file_names(key, flores200):
    locale = get_locale(key)
    assert locale.flores200_code == flores200
    assert locale.flores_plus_code == "_".join(key.split("_")[:2])


def test_only_gom_has_no_flores200_file_and_only_two_are_renamed():
    without = [loc.key for loc in all_locales() if loc.flores200_code is None]
    assert without == ["gom_Deva_India"]
    renamed = {loc.flores_plus_code: loc.flores200_code for loc in all_locales()
               if loc.flores200_code and loc.flores200_code != loc.flores_plus_code}
    assert renamed == {"cmn_Hans": "zho_Hans", "fil_Latn": "tgl_Latn"}


def test_exactly_four_non_official_locales_matching_table1():
    non_official = sorted(loc.key for loc in all_locales() if not loc.official_or_de_facto)
    assert non_official == ["cmn_Hans_UK", "cmn_Hans_US", "hin_Deva_Germany", "hin_Deva_US"]
    table = paper_table1()
    for locale in all_locales():
        assert str(locale.official_or_de_facto) == table[locale.key]["official_or_de_facto"]


def test_unknown_locale_suggests_close_matches():
    with pytest.raises(UnknownEntryError) as info:
        get_locale("deu_Latn_Germny")
    message = str(info.value)
    assert re.search(r"'deu_Latn_Germny'.*'deu_Latn_Germany'", message)  # the key, a suggestion
    assert isinstance(info.value, KeyError)  # callers may catch it as a KeyError


def test_unknown_locale_far_from_everything_has_no_suggestion():
    with pytest.raises(UnknownEntryError) as info:
        get_locale("xyz")
    assert "did you mean" not in str(info.value)
    assert "deu_Latn_Germany" in str(info.value)  # the known keys are listed
