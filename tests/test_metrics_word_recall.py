"""word_recall.py: terms, per-instance counts, Σ-ratio locale rates, model means."""

from __future__ import annotations

import pytest

from cultivar_assets.metrics.word_recall import (
    InstanceRecall,
    LocaleRates,
    instance_recall,
    rates_from_sums,
    terms,
)


def locale_rates(items: list[InstanceRecall]) -> dict[str, LocaleRates]:
    """Each locale's rates through :func:`rates_from_sums` (what the pipeline calls on the
    summed ``word_recall`` counts, ``evaluation/aggregates.py``), its counts summed here."""
    sums: dict[str, list[int]] = {}
    for item in items:
        total = sums.setdefault(item.locale, [0, 0, 0, 0, 0])
        for i, value in enumerate((item.n_removed, item.n_removed_recalled, item.n_introduced,
                                   item.n_introduced_missed, 1)):
            total[i] += value
    return {locale: rates_from_sums(*total) for locale, total in sums.items()}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The THE the", {"the"}),
        ("Hello, world! Hello.", {"hello", "world"}),
        # inner apostrophes and periods join a word, a possessive 's is dropped; hyphens split
        ("Don't stop-over", {"don't", "stop", "over"}),
        ("Zürich's Mölders-Straße", {"zürich", "mölders", "straße"}),
        ("Charité's Charité’s U.S. d'Orsay", {"charité", "u.s", "d'orsay"}),
        ("the players' club. Next", {"the", "players", "club", "next"}),
        # digits and underscores are word characters; "," splits numbers, an inner "." does not
        ("COVID-19 in 2020, 3.14 and snake_case", {"covid", "19", "in", "2020", "3.14",
                                                   "and", "snake_case"}),
        ("ÉCOLE École école", {"école"}),
        ("Μόναχο München MÜNCHEN", {"μόναχο", "münchen"}),
        ("", set()),
        ("... --- !!!", set()),
        ("tab\tnew\nline", {"tab", "new", "line"}),
    ],
)
def test_terms(text, expected):
    result = terms(text)
    assert isinstance(result, frozenset)
    assert result == expected


def test_a_correct_possessive_is_no_false_positive_of_a_removed_abbreviation():
    """The held cases: "U.S." removed by localisation is one term, not "u" and "s", so the
    translation's correct "Charité's" recalls nothing of it; the possessive is the entity's term."""
    original = "The U.S. hospital opened a new wing."
    localised = "The Charité in Berlin opened a new wing."
    hypothesis = "Charité's new wing opened in Berlin."
    # R = {u.s, hospital}, I = {charité, in, berlin}, H = {charité, new, wing, opened, in,
    # berlin}: with \w+ terms, R and H would both hold "s" (a false positive of 1)
    item = instance_recall("deu_Latn_Germany", 0, original, localised, hypothesis)
    assert (item.n_removed, item.n_removed_recalled) == (2, 0)
    assert (item.n_introduced, item.n_introduced_missed) == (3, 0)


def test_instance_recall_hand_computed():
    original = "We met in Berlin on Sunday."
    localised = "We met in Zürich on Saturday."
    hypothesis = "We met in Berlin on saturday!"
    # T(o) = {we, met, in, berlin, on, sunday}; T(c) = {we, met, in, zürich, on, saturday}
    # R = T(o) - T(c) = {berlin, sunday}            |R| = 2
    # I = T(c) - T(o) = {zürich, saturday}          |I| = 2
    # H = {we, met, in, berlin, on, saturday}
    # H ∩ R = {berlin}                              1
    # I \ H = {zürich}                              1
    r = instance_recall("deu_Latn_Switzerland", 7, original, localised, hypothesis)
    assert r == InstanceRecall("deu_Latn_Switzerland", 7, 2, 1, 2, 1)


def test_instance_recall_case_and_punctuation_insensitive():
    # o: "Tickets cost $5 at Walmart's store"; c: "Tickets cost ₹400 at Big-Bazaar's store"
    # T(o) = {tickets, cost, 5, at, walmart, s, store}
    # T(c) = {tickets, cost, 400, at, big, bazaar, s, store}
    # R = {5, walmart} (2); I = {400, big, bazaar} (3)
    # H = T("TICKETS COST 400 AT BIG BAZAAR") = {tickets, cost, 400, at, big, bazaar}
    # H ∩ R = {} (0); I \ H = {} (0)
    r = instance_recall(
        "hin_Deva_India", 0, "Tickets cost $5 at Walmart's store",
        "Tickets cost ₹400 at Big-Bazaar's store", "TICKETS COST 400 AT BIG BAZAAR",
    )
    assert (r.n_removed, r.n_removed_recalled, r.n_introduced, r.n_introduced_missed) == (
        2, 0, 3, 0
    )


def test_locale_rates_are_ratios_of_sums_not_means_of_ratios():
    items = [
        # locale A: instance 1 |R| = 1, recalled 1 (ratio 1); instance 2 |R| = 3, recalled 0
        InstanceRecall("A", 0, 1, 1, 4, 1),
        InstanceRecall("A", 1, 3, 0, 1, 1),
        # locale B: nothing removed or introduced anywhere
        InstanceRecall("B", 0, 0, 0, 0, 0),
        # locale C: only introduced terms
        InstanceRecall("C", 0, 0, 0, 2, 2),
    ]
    rates = locale_rates(items)
    # A: FP = (1 + 0) / (1 + 3) = 1/4 (mean of ratios would be (1 + 0) / 2 = 1/2)
    #    FN = (1 + 1) / (4 + 1) = 2/5 (mean of ratios would be (1/4 + 1) / 2 = 5/8)
    assert rates["A"].false_positive_rate == pytest.approx(1 / 4)
    assert rates["A"].false_negative_rate == pytest.approx(2 / 5)
    assert rates["A"].false_positive_rate != pytest.approx(1 / 2)
    # B: both denominators 0 -> None
    assert rates["B"] == LocaleRates(None, None, 0, 0, 1)
    assert (rates["A"].n_removed_terms, rates["A"].n_introduced_terms,
            rates["A"].n_instances) == (4, 5, 2)
    # C: Σ|R| = 0 -> FP None; FN = 2/2
    assert rates["C"].false_positive_rate is None
    assert rates["C"].false_negative_rate == pytest.approx(1.0)
    assert set(rates) == {"A", "B", "C"}


def test_locale_rates_from_instance_recall_end_to_end():
    items = [
        # R = {berlin} recalled; I = {zürich} missed
        instance_recall("L", 0, "in Berlin", "in Zürich", "in Berlin"),
        # R = {euro, 10}, none recalled; I = {chf, 12}, both produced
        instance_recall("L", 1, "10 euro", "12 CHF", "CHF 12"),
        # R = {dollars, 5, walmart}, only "dollars" recalled; I = {francs, 6, migros}, 0 missed
        instance_recall("L", 2, "5 dollars at Walmart", "6 francs at Migros",
                        "6 francs dollars at Migros"),
    ]
    # FP = (1 + 0 + 1) / (1 + 2 + 3) = 2/6; FN = (1 + 0 + 0) / (1 + 2 + 3) = 1/6
    rates = locale_rates(items)["L"]
    assert rates.false_positive_rate == pytest.approx(2 / 6)
    assert rates.false_negative_rate == pytest.approx(1 / 6)
