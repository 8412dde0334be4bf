"""benchmarks/bench_one_model.py: its main path at a tiny size, so that it cannot rot."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))


@pytest.mark.slow
def test_the_bench_adds_one_model_and_times_every_stage(tmp_path, monkeypatch):
    """Three models with five segments per test set and 20 replicates: the leaderboard before
    is made once, the added model goes through every stage the assets run (the leaderboard
    taking the others' replicates from the kept pack and writing the added model's rows
    only), each stage is timed, and a second run reuses the leaderboard before."""
    import bench_one_model

    monkeypatch.setenv("CULTIVAR_HOME", str(tmp_path / "home"))
    figures = tmp_path / "figures.json"
    args = ["--models", "3", "--segments", "5", "--replicates", "20", "--workdir",
            str(tmp_path / "work"), "--web-cache", str(tmp_path / "web"), "--json", str(figures)]
    assert bench_one_model.main(args) == 0
    (result,) = json.loads(figures.read_text())
    assert result["added"] == "model-003"
    for stage in bench_one_model.STAGES:
        assert result[stage]["wall_s"] > 0 and result[stage]["peak_mb"] > 0, stage
    assert result["leaderboard_rewritten"] == ["model-003"]
    assert result["leaderboard_kept"]["replicates"] == "3 models' kept, 1 computed (model-003)"
    assert result["site_models"] == [4, 4]
    assert result["total_wall_s"] == pytest.approx(
        sum(result[stage]["wall_s"] for stage in bench_one_model.STAGES), abs=0.05)
    made = tmp_path / "work" / "one-model-3x5-r20" / "done"
    before = made.stat().st_mtime_ns
    assert bench_one_model.main(args) == 0  # the leaderboard before is reused, not made again
    assert made.stat().st_mtime_ns == before
    assert [p.name for p in (tmp_path / "work").iterdir()] == ["one-model-3x5-r20"]


def test_runs_on_one_workdir_each_copy_into_a_folder_of_their_own_removed_after(tmp_path):
    """Two runs at once on one workdir: each copy of the leaderboard before is its own folder
    (the two used to share ``scratch-<models>``), and each is removed when its run ends, also
    when the run fails."""
    import bench_one_model

    before = tmp_path / "work" / "before"
    (before / "root").mkdir(parents=True)
    (before / "root" / "test_sets.json").write_text("{}", "utf-8")
    workdir = tmp_path / "work"
    with bench_one_model.scratch_copy(before, workdir, 3) as first:
        with (pytest.raises(RuntimeError, match="the timed stages failed"),
              bench_one_model.scratch_copy(before, workdir, 3) as second):
            assert second != first and second.parent == first.parent == workdir
            (second / "root" / "test_sets.json").write_text("changed", "utf-8")
            raise RuntimeError("the timed stages failed")
        assert not second.exists()
        assert (first / "root" / "test_sets.json").read_text("utf-8") == "{}"
    assert sorted(p.name for p in workdir.iterdir()) == ["before"]
