"""delta.py: pairing locales with their language's FLORES test set, and the ∆ averages."""

from __future__ import annotations

import pytest

from cultivar_assets.metrics.delta import (
    PairDelta,
    locale_mean_deltas,
    model_averages,
    pair_deltas,
)
from cultivar_assets.registry import UnknownEntryError


def test_each_locale_pairs_with_its_own_language():
    scores = {
        ("m", "flores_hin_Deva"): 30.0,
        ("m", "flores_cmn_Hans"): 20.0,
        ("m", "flores_fil_Latn"): 10.0,
        ("m", "flores_deu_Latn"): 99.0,  # no locale of deu asked for: unused
        ("m", "cultivar_hin_Deva_US"): 25.0,
        ("m", "cultivar_hin_Deva_India"): 33.0,
        ("m", "cultivar_cmn_Hans_China"): 21.5,
        ("m", "cultivar_fil_Latn_Philippines"): 7.0,
    }
    locales = ["hin_Deva_US", "hin_Deva_India", "cmn_Hans_China", "fil_Latn_Philippines"]
    pairs = pair_deltas(scores, ["m"], locales)
    got = {p.locale: (p.language, p.flores, p.cultivar, p.delta) for p in pairs}
    assert got == {
        "hin_Deva_US": ("hin_Deva", 30.0, 25.0, -5.0),
        "hin_Deva_India": ("hin_Deva", 30.0, 33.0, 3.0),
        # FLORES+ codes, not the FLORES-200 file names (zho_Hans, tgl_Latn)
        "cmn_Hans_China": ("cmn_Hans", 20.0, 21.5, 1.5),
        "fil_Latn_Philippines": ("fil_Latn", 10.0, 7.0, -3.0),
    }
    assert all(p.model == "m" for p in pairs)


def test_missing_score_drops_only_that_pair():
    scores = {
        ("a", "flores_hin_Deva"): 30.0,
        ("a", "cultivar_hin_Deva_US"): 25.0,
        ("a", "cultivar_hin_Deva_India"): 33.0,
        # model b: no flores_hin_Deva -> no hin pair; deu pair complete
        ("b", "cultivar_hin_Deva_US"): 20.0,
        ("b", "flores_deu_Latn"): 40.0,
        ("b", "cultivar_deu_Latn_Germany"): 41.0,
        # model a has no cultivar_deu_Latn_Germany -> no deu pair for a
        ("a", "flores_deu_Latn"): 50.0,
    }
    pairs = pair_deltas(scores, ["a", "b"], ["hin_Deva_US", "hin_Deva_India", "deu_Latn_Germany"])
    assert {(p.model, p.locale) for p in pairs} == {
        ("a", "hin_Deva_US"), ("a", "hin_Deva_India"), ("b", "deu_Latn_Germany")
    }
    # a model with no scores at all contributes nothing
    assert pair_deltas(scores, ["nobody"], ["hin_Deva_US"]) == []


def test_unknown_locale_raises():
    with pytest.raises(UnknownEntryError, match="xxx_Latn_Nowhere"):
        pair_deltas({}, ["m"], ["xxx_Latn_Nowhere"])


def test_mean_pairwise_delta_differs_from_difference_of_averages():
    # language hin_Deva has two locales, deu_Latn one
    scores = {
        ("m", "flores_hin_Deva"): 30.0,
        ("m", "flores_deu_Latn"): 40.0,
        ("m", "cultivar_hin_Deva_US"): 20.0,
        ("m", "cultivar_hin_Deva_India"): 26.0,
        ("m", "cultivar_deu_Latn_Germany"): 43.0,
        ("other", "flores_hin_Deva"): 1.0,  # other models' scores are ignored
    }
    pairs = pair_deltas(scores, ["m", "other"],
                        ["hin_Deva_US", "hin_Deva_India", "deu_Latn_Germany"])
    averages = model_averages(scores, "m", pairs)
    # pairwise ∆: 20-30 = -10, 26-30 = -4, 43-40 = +3 -> mean = -11/3
    assert averages.mean_delta == pytest.approx(-11 / 3)
    # FLORES average = (30 + 40) / 2 = 35; Cultivar average = (20 + 26 + 43) / 3 = 89/3
    assert averages.flores_average == pytest.approx(35.0)
    assert averages.cultivar_average == pytest.approx(89 / 3)
    # Cultivar average - FLORES average = 89/3 - 35 = -16/3, not -11/3
    difference = averages.cultivar_average - averages.flores_average
    assert difference == pytest.approx(-16 / 3)
    assert averages.mean_delta != pytest.approx(difference)
    assert (averages.n_pairs, averages.n_flores, averages.n_cultivar) == (3, 2, 3)
    assert averages.model == "m"


def test_model_averages_without_scores():
    averages = model_averages({}, "m", [])
    assert averages.mean_delta is None
    assert averages.flores_average is None and averages.cultivar_average is None
    assert (averages.n_pairs, averages.n_flores, averages.n_cultivar) == (0, 0, 0)


def test_locale_mean_deltas_average_over_models():
    pairs = [
        PairDelta("m1", "hin_Deva_US", "hin_Deva", flores=30.0, cultivar=25.0),  # -5
        PairDelta("m2", "hin_Deva_US", "hin_Deva", flores=20.0, cultivar=22.0),  # +2
        PairDelta("m3", "hin_Deva_US", "hin_Deva", flores=10.0, cultivar=9.0),  # -1
        PairDelta("m1", "cmn_Hans_China", "cmn_Hans", flores=15.0, cultivar=19.0),  # +4
    ]
    result = locale_mean_deltas(pairs)
    # hin_Deva_US: (-5 + 2 - 1) / 3 = -4/3 over 3 models; cmn_Hans_China: 4 over 1 model
    assert set(result) == {"hin_Deva_US", "cmn_Hans_China"}
    assert result["hin_Deva_US"][0] == pytest.approx(-4 / 3)
    assert result["hin_Deva_US"][1] == 3
    assert result["cmn_Hans_China"] == (pytest.approx(4.0), 1)
    assert locale_mean_deltas([]) == {}


def test_pair_delta_is_cultivar_minus_flores():
    assert PairDelta("m", "l", "L", flores=12.5, cultivar=10.0).delta == pytest.approx(-2.5)
