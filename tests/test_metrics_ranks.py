"""ranks.py: rank intervals and separability on hand-made replicates and on a real bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from metrics_helpers import (
    PAIRED_LOCALES,
    paired_benchmark,
    reference_metrics,
    sacrebleu_segment_rows,
)

from cultivar_assets.metrics import ranks as ranks_module
from cultivar_assets.metrics.bootstrap import BootstrapConfig, Quantity, paired_bootstrap
from cultivar_assets.metrics.ranks import RANK_SENTENCE, rank_intervals
from cultivar_assets.metrics.registry import score_functions
from cultivar_assets.metrics.segment_stats import SegmentStats


def quantity(point, replicates, keys=("a", "b", "c", "d")) -> Quantity:
    replicates = np.asarray(replicates, dtype=float)
    return Quantity("model_delta_bleu", tuple(keys), np.asarray(point, dtype=float), replicates,
                    np.ones(len(keys), dtype=np.int64), 0.95)


def test_hand_made_replicates():
    # 100 replicates: a always clearly first; b and c swap places in half of them (their
    # difference is +1 or -1 with equal frequency); d always last, 0.5 below c and b, except
    # in 1 replicate
    b = np.where(np.arange(100) % 2 == 0, 5.0, 4.0)
    c = np.where(np.arange(100) % 2 == 0, 4.0, 5.0)
    a = np.full(100, 9.0)
    d = np.minimum(b, c) - 0.5
    d[0] = 10.0  # one replicate where d is best (below the 2.5 % tail of 100: k = 2)
    q = quantity([9.0, 4.6, 4.5, 3.0], np.column_stack([a, b, c, d]))
    ranks = {r.key: r for r in rank_intervals(q)}
    assert [r.key for r in rank_intervals(q)] == ["a", "b", "c", "d"]
    assert (ranks["a"].rank, ranks["a"].rank_low, ranks["a"].rank_high) == (1, 1, 1)
    assert (ranks["b"].rank, ranks["b"].rank_low, ranks["b"].rank_high) == (2, 2, 3)
    assert (ranks["c"].rank, ranks["c"].rank_low, ranks["c"].rank_high) == (3, 2, 3)
    assert (ranks["d"].rank_low, ranks["d"].rank_high) == (4, 4)
    assert ranks["b"].label == "rank 2–3" and ranks["a"].label == "rank 1"
    assert ranks["b"].not_separable_from == ("c",) and ranks["c"].not_separable_from == ("b",)
    assert ranks["a"].not_separable_from == () and ranks["d"].not_separable_from == ()
    assert "95 %" in RANK_SENTENCE


def test_ties_lower_is_better_and_undefined_models():
    reps = np.array([[1.0, 1.0, 2.0, np.nan]] * 10)
    q = quantity([1.0, 1.0, 2.0, np.nan], reps)
    ranks = rank_intervals(q)
    assert [r.key for r in ranks] == ["c", "a", "b"]  # d has no point estimate: left out
    by = {r.key: r for r in ranks}
    assert (by["a"].rank, by["b"].rank, by["c"].rank) == (2, 2, 1)  # ties share the best rank
    assert by["a"].not_separable_from == ("b",)
    low = {r.key: r for r in rank_intervals(q, higher_is_better=False)}
    assert (low["a"].rank, low["b"].rank, low["c"].rank) == (1, 1, 3)
    assert rank_intervals(quantity([np.nan] * 4, np.full((5, 4), np.nan))) == []


def test_rank_intervals_of_a_bootstrap():
    """Two copies of one model are never separable and share rank intervals."""
    metrics = reference_metrics("13a")
    references, hypotheses = paired_benchmark(5, ("m1", "m2", "m3"))
    hypotheses["copy"] = hypotheses["m1"]
    raw = sacrebleu_segment_rows(metrics, references, hypotheses)
    stats = {m: {k: SegmentStats.build(*v) for k, v in t.items()} for m, t in raw.items()}
    result = paired_bootstrap(stats, list(hypotheses), list(PAIRED_LOCALES),
                              config=BootstrapConfig(n_replicates=300),
                              score_functions=score_functions(stats))
    ranks = {r.key: r for r in rank_intervals(result["model_cultivar_bleu"])}
    assert "copy" in ranks["m1"].not_separable_from
    assert (ranks["m1"].rank_low, ranks["m1"].rank_high) == (ranks["copy"].rank_low,
                                                             ranks["copy"].rank_high)
    for r in ranks.values():
        assert 1 <= r.rank_low <= r.rank_high <= 4


def _pairwise_rank_intervals(q: Quantity, higher_is_better: bool) -> list[tuple]:
    """The definitions of the module docstring computed literally, pair by pair in memory
    (B × M × M): every replicate's ranks by counting better values, every pair's difference
    interval from the sorted differences."""
    from cultivar_assets.metrics.bootstrap import percentile_interval

    keep = [i for i, v in enumerate(q.point) if np.isfinite(v)]
    point, rep = q.point[keep], q.replicates[:, keep]
    sign = 1 if higher_is_better else -1

    def ranks(values):
        x = np.where(np.isnan(values), -np.inf, sign * values)
        return 1 + (x[..., None, :] > x[..., :, None]).sum(axis=-1)

    rank = ranks(point)
    low, high = percentile_interval(ranks(rep).astype(float), q.confidence)
    d_low, d_high = percentile_interval(rep[:, :, None] - rep[:, None, :], q.confidence)
    order = sorted(range(len(keep)), key=lambda i: (rank[i], q.keys[keep[i]]))
    return [(q.keys[keep[i]], float(point[i]), int(rank[i]), int(low[i]), int(high[i]),
             tuple(q.keys[keep[j]] for j in order
                   if j != i and not (d_low[i, j] > 0 or d_high[i, j] < 0)))
            for i in order]


def test_ranks_and_separability_equal_the_pairwise_definitions_on_many_models():
    rng = np.random.default_rng(7)
    n_models, n_replicates = 120, 300
    keys = tuple(f"m{i:03d}" for i in range(n_models))
    skill = rng.normal(20, 3, n_models)
    # rounded to 0.1 so that many replicates tie; some undefined replicates and models
    replicates = np.round(skill + rng.normal(0, 1.5, (n_replicates, n_models)), 1)
    replicates[rng.random(replicates.shape) < 0.02] = np.nan
    replicates[:, 5] = np.nan  # a model undefined in every replicate
    replicates[::3, 9] = np.nan
    point = np.round(skill, 1)
    point[[3, 17]] = np.nan  # models without a point estimate are not ranked
    for confidence in (0.95, 0.9):
        q = Quantity("model_delta_bleu", keys, point, replicates,
                     np.ones(n_models, dtype=np.int64), confidence)
        for higher_is_better in (True, False):
            ours = [(r.key, r.value, r.rank, r.rank_low, r.rank_high, r.not_separable_from)
                    for r in rank_intervals(q, higher_is_better=higher_is_better)]
            assert ours == _pairwise_rank_intervals(q, higher_is_better)
            assert any(r[5] for r in ours) and any(len(r[5]) < n_models - 3 for r in ours)


def _changed_quantities(rng):
    """A quantity of 60 models (ties, undefined replicates, a model undefined everywhere, one
    without a point estimate), then the same with one model's values changed, one removed, a
    model without a point estimate gaining one and two added (one between the others, one
    last)."""
    n_models, n_replicates = 60, 200
    keys = [f"m{i:03d}" for i in range(n_models)]
    skill = rng.normal(20, 3, n_models)
    replicates = np.round(skill + rng.normal(0, 1.5, (n_replicates, n_models)), 1)
    replicates[rng.random(replicates.shape) < 0.02] = np.nan
    replicates[:, 5] = np.nan
    point = np.round(skill, 1)
    point[17] = np.nan
    before = Quantity("model_delta_bleu", tuple(keys), point, replicates,
                      np.ones(n_models, dtype=np.int64), 0.95)
    after_keys = [k for k in keys if k != "m030"] + ["m030b", "m999"]
    columns = {k: (point[i], replicates[:, i]) for i, k in enumerate(keys)}
    columns["m011"] = (point[11], replicates[:, 11] + 0.1 * (np.arange(n_replicates) % 3))
    columns["m017"] = (19.0, replicates[:, 17])
    columns["m030b"] = (point[30], replicates[:, 30])  # ties with a model that is gone
    columns["m999"] = (21.0, np.round(rng.normal(21, 1.5, n_replicates), 1))
    after_keys.sort()
    after = Quantity("model_delta_bleu", tuple(after_keys),
                     np.asarray([columns[k][0] for k in after_keys]),
                     np.column_stack([columns[k][1] for k in after_keys]),
                     np.ones(len(after_keys), dtype=np.int64), 0.95)
    return before, after


def test_ranks_updated_from_a_kept_state_equal_ranks_computed_afresh(monkeypatch):
    """``ranked`` with the state of an earlier quantity updates only the changed, removed and
    added models (no full separability matrix is computed) and gives what is computed afresh,
    state included; a changed model's kept values are never reused."""
    from cultivar_assets.metrics import ranks

    before, after = _changed_quantities(np.random.default_rng(3))
    full: list[int] = []
    real = ranks.separable
    for higher_is_better in (True, False):
        _, state = ranks.ranked(before, higher_is_better)
        fresh, fresh_state = ranks.ranked(after, higher_is_better)
        calls = len(full)
        monkeypatch.setattr(ranks, "separable", lambda r, c: full.append(1) or real(r, c))
        updated, updated_state = ranks.ranked(after, higher_is_better, previous=state)
        monkeypatch.setattr(ranks, "separable", real)
        assert len(full) == calls  # updated, not recomputed
        assert updated == fresh
        assert updated_state.keys == fresh_state.keys
        for kind in ("values", "better", "apart"):
            np.testing.assert_array_equal(getattr(updated_state, kind),
                                          getattr(fresh_state, kind), strict=True)
        assert updated == _pairwise_ranks_of(after, higher_is_better)


def _pairwise_ranks_of(q, higher_is_better):
    return [ranks_module.RankInterval(key, value, rank, low, high, tied)
            for key, value, rank, low, high, tied in _pairwise_rank_intervals(q, higher_is_better)]


def test_a_kept_rank_state_of_other_settings_or_many_changes_is_not_used(monkeypatch):
    """A state of another direction or confidence is ignored, and so is one from which more
    than a quarter of the models changed: the ranks are computed in full."""
    from cultivar_assets.metrics import ranks

    before, after = _changed_quantities(np.random.default_rng(4))
    _, state = ranks.ranked(before, True)
    full: list[int] = []
    real = ranks.separable
    monkeypatch.setattr(ranks, "separable", lambda r, c: full.append(1) or real(r, c))
    assert ranks.ranked(after, False, previous=state)[0] == _pairwise_ranks_of(after, False)
    assert ranks.ranked(after, True, 0.9, previous=state)[0] == _pairwise_ranks_of(
        Quantity(after.name, after.keys, after.point, after.replicates, after.n, 0.9), True)
    shuffled = Quantity(after.name, after.keys, after.point, after.replicates[:, ::-1],
                        after.n, 0.95)  # every model's replicates changed
    assert ranks.ranked(shuffled, True, previous=state)[0] == _pairwise_ranks_of(shuffled, True)
    assert full == [1, 1, 1]


def test_kept_rank_states_are_read_back_only_under_their_key(tmp_path):
    from cultivar_assets.metrics import ranks

    before, _ = _changed_quantities(np.random.default_rng(5))
    _, state = ranks.ranked(before, False)
    path = tmp_path / "kept" / "_ranks.state"
    ranks.save_rank_states(path, "key-1", {"model_delta_bleu": state})
    assert ranks.load_rank_states(path, "key-2") == (
        {}, "the rank states were kept under other settings")
    assert ranks.load_rank_states(tmp_path / "none", "key-1") == ({}, "no rank states kept")
    other = tmp_path / "other.state"
    other.write_bytes(path.read_bytes()[:100])  # cut short
    found, why = ranks.load_rank_states(other, "key-1")
    assert found == {} and why.startswith(f"{other} is not a file of rank states (")
    states, why = ranks.load_rank_states(path, "key-1")
    assert why is None and list(states) == ["model_delta_bleu"]
    back = states["model_delta_bleu"]
    assert (back.keys, back.higher_is_better, back.confidence) == (
        state.keys, False, 0.95)
    for kind in ("values", "better", "apart"):
        np.testing.assert_array_equal(getattr(back, kind), getattr(state, kind), strict=True)


@pytest.mark.parametrize("n_models", [0, 1, 2, 7, 40])
def test_rank_columns_equal_ranked(n_models):
    """The columns of ``rank_columns`` (what the ranks' rows are built from) hold the same
    values, in the same order, as ``ranked``'s intervals: a NaN point estimate left out, NaN
    replicates, both directions, kept states."""
    from cultivar_assets.metrics import ranks

    rng = np.random.default_rng(n_models)
    point = rng.normal(size=n_models) * 0.05
    replicates = point[None, :] + rng.normal(size=(200, n_models)) * 0.2
    if n_models > 3:
        replicates[:5, 2] = np.nan
        point[3] = np.nan
    quantity = Quantity("q", tuple(f"m{i}" for i in range(n_models)), point, replicates,
                        np.ones(n_models, dtype=np.int64), 0.95)
    for higher_is_better in (True, False):
        intervals, state = ranks.ranked(quantity, higher_is_better)
        columns, again = ranks.rank_columns(quantity, higher_is_better, previous=state)
        assert [(r.key, r.value, r.rank, r.rank_low, r.rank_high, list(r.not_separable_from))
                for r in intervals] == list(zip(
            columns.keys.to_pylist(), columns.value.tolist(), columns.rank.tolist(),
            columns.rank_low.tolist(), columns.rank_high.tolist(),
            columns.not_separable_from.to_pylist(), strict=True))
        np.testing.assert_array_equal(again.apart, state.apart, strict=True)
