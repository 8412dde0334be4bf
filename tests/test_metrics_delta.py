"""delta.py's ∆ as the pipeline computes it (``paired_bootstrap``'s point estimate, weights 1):
each locale paired with its own language's FLORES test set, and the ∆ averages, against
hand-worked chrF values."""

from __future__ import annotations

import numpy as np
import pytest

from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.delta import PairDelta, paired_delta
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import SegmentStats
from cultivar_assets.registry import UnknownEntryError

H = 200  # hypothesis = reference n-grams of every order in every segment


def chrf_table(scores: dict[tuple[str, str], float]) -> dict[str, dict]:
    """(model, test set) -> chrF, as one segment (id 0) whose 6 orders each have H hypothesis
    and H reference n-grams and 2·score matches: P = R = score/100, so chrF = 100·5P²/5P = score.
    """
    table = {key: SegmentStats.build([0], np.tile([H, H, 2 * score], 6)[None, :])
             for key, score in scores.items()}
    return {"chrf": table}


def point(scores, models, locales):
    return paired_bootstrap(chrf_table(scores), models, locales,
                            config=BootstrapConfig(n_replicates=1),
                            score_functions=score_functions(["chrf"]))


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
    rows = point(scores, ["m"], locales).pair_rows()
    got = {r["locale"]: (r["language"], r["flores_chrf"], r["cultivar_chrf"], r["delta_chrf"])
           for r in rows}
    expected = {
        "hin_Deva_US": ("hin_Deva", 30.0, 25.0, -5.0),
        "hin_Deva_India": ("hin_Deva", 30.0, 33.0, 3.0),
        # FLORES+ codes, not the FLORES-200 file names (zho_Hans, tgl_Latn)
        "cmn_Hans_China": ("cmn_Hans", 20.0, 21.5, 1.5),
        "fil_Latn_Philippines": ("fil_Latn", 10.0, 7.0, -3.0),
    }
    assert got.keys() == expected.keys()
    for locale, (language, *values) in expected.items():
        assert got[locale][0] == language
        assert got[locale][1:] == pytest.approx(tuple(values), abs=1e-12)
    assert all(r["model_id"] == "m" and r["n_instances"] == 1 for r in rows)


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
    result = point(scores, ["a", "b", "nobody"],
                   ["hin_Deva_US", "hin_Deva_India", "deu_Latn_Germany"])
    assert {(r["model_id"], r["locale"]) for r in result.pair_rows()} == {
        ("a", "hin_Deva_US"), ("a", "hin_Deva_India"), ("b", "deu_Latn_Germany")
    }
    # a model with no scores at all has no ∆ and no pair
    nobody = {r["model_id"]: r for r in result.model_rows()}["nobody"]
    assert nobody["delta_chrf"] is None and nobody["n_locale_pairs"] == 0
    assert nobody["flores_chrf"] is None and nobody["cultivar_chrf"] is None


def test_unknown_locale_raises():
    with pytest.raises(UnknownEntryError, match="xxx_Latn_Nowhere"):
        point({("m", "flores_hin_Deva"): 1.0}, ["m"], ["xxx_Latn_Nowhere"])


def test_mean_pairwise_delta_differs_from_difference_of_averages():
    # language hin_Deva has two locales, deu_Latn one
    scores = {
        ("m", "flores_hin_Deva"): 30.0,
        ("m", "flores_deu_Latn"): 40.0,
        ("m", "cultivar_hin_Deva_US"): 20.0,
        ("m", "cultivar_hin_Deva_India"): 26.0,
        ("m", "cultivar_deu_Latn_Germany"): 43.0,
        ("other", "flores_hin_Deva"): 1.0,  # other models' scores are not m's
    }
    rows = point(scores, ["m", "other"],
                 ["hin_Deva_US", "hin_Deva_India", "deu_Latn_Germany"]).model_rows()
    m = {r["model_id"]: r for r in rows}["m"]
    # pairwise ∆: 20-30 = -10, 26-30 = -4, 43-40 = +3 -> mean = -11/3
    assert m["delta_chrf"] == pytest.approx(-11 / 3, abs=1e-12)
    # FLORES average = (30 + 40) / 2 = 35; Cultivar average = (20 + 26 + 43) / 3 = 89/3
    assert m["flores_chrf"] == pytest.approx(35.0, abs=1e-12)
    assert m["cultivar_chrf"] == pytest.approx(89 / 3, abs=1e-12)
    # Cultivar average - FLORES average = 89/3 - 35 = -16/3, not -11/3
    assert m["cultivar_chrf"] - m["flores_chrf"] == pytest.approx(-16 / 3, abs=1e-12)
    assert (m["n_locale_pairs"], m["n_flores_test_sets"], m["n_cultivar_test_sets"]) == (3, 2, 3)


def test_locale_mean_deltas_average_over_models():
    scores = {
        ("m1", "flores_hin_Deva"): 30.0, ("m1", "cultivar_hin_Deva_US"): 25.0,  # -5
        ("m2", "flores_hin_Deva"): 20.0, ("m2", "cultivar_hin_Deva_US"): 22.0,  # +2
        ("m3", "flores_hin_Deva"): 10.0, ("m3", "cultivar_hin_Deva_US"): 9.0,  # -1
        ("m1", "flores_cmn_Hans"): 15.0, ("m1", "cultivar_cmn_Hans_China"): 19.0,  # +4
    }
    rows = point(scores, ["m1", "m2", "m3"], ["hin_Deva_US", "cmn_Hans_China"]).locale_rows()
    result = {r["locale"]: (r["delta_chrf"], r["n_models"]) for r in rows}
    # hin_Deva_US: (-5 + 2 - 1) / 3 = -4/3 over 3 models; cmn_Hans_China: 4 over 1 model
    assert set(result) == {"hin_Deva_US", "cmn_Hans_China"}
    assert result["hin_Deva_US"] == (pytest.approx(-4 / 3, abs=1e-12), 3)
    assert result["cmn_Hans_China"] == (pytest.approx(4.0, abs=1e-12), 1)


def test_delta_is_cultivar_minus_flores():
    assert PairDelta("m", "l", "L", flores=12.5, cultivar=10.0).delta == -2.5
    assert paired_delta(np.array([1.0, 30.0]), np.array([0.5, 33.0])).tolist() == [-0.5, 3.0]
