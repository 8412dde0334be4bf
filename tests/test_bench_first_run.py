"""benchmarks/bench_first_run.py: cutting a demo run's timestamped output into phases."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_first_run import Timed, demo_phases, run_timed

LINES = [
    (0.5, "Cultivar demo: bundled DEMO data"),
    (3.0, "[1/3] test sets (demo data) -> x.duckdb"),
    (5.0, "[2/3] 2 model(s), one run each"),
    (6.0, "model 1/2: gemma-3-270m-fewshot (LLM, engine transformers, ...)"),
    (30.0, "translate gemma-3-270m-fewshot:   0%|          | 0/120 [00:00<?, ?seg/s]"),
    (70.0, "translate gemma-3-270m-fewshot: 100%|##########| 120/120 [00:40<00:00, 3.0seg/s]"),
    (73.0, "model 2/2: copy-source-baseline (baseline, engine copy-source, ...)"),
    (75.0, "[3/3] leaderboard, per-locale ∆, ..."),
    (84.0, "Finished in 84 s."),
]


def test_phases_are_cut_at_the_step_lines_and_the_progress_bar():
    run = Timed("cultivar demo, run 1", 85.0, 900.0, (1.0, 1.0), 0, LINES)
    assert demo_phases(run) == [
        ("start-up (imports, Dagster instance)", 3.0),
        ("[1/3] test sets", 2.0),
        ("[2/3] 2 model(s), one run each", 1.0),
        ("gemma-3-270m-fewshot: translation (progress bar's elapsed)", 40),
        ("gemma-3-270m-fewshot: load (conversion on a first run) and the rest", 27.0),
        ("copy-source-baseline (no generation)", 2.0),
        ("[3/3] leaderboard, per-locale ∆, ...", 10.0),
    ]


def test_output_fragments_split_at_carriage_returns(tmp_path):
    script = "import sys; sys.stdout.write('a\\rb\\nc'); sys.stdout.flush()"
    run = run_timed("x", [sys.executable, "-c", script], tmp_path, {}, echo=False)
    assert [text for _, text in run.lines] == ["a", "b", "c"]
    assert run.returncode == 0 and run.peak_rss_mb > 1


@pytest.mark.parametrize("lines", [[], [(1.0, "no steps here")]])
def test_output_without_steps_has_no_phases(lines):
    assert demo_phases(Timed("x", 1.0, 1.0, (0, 0), 0, lines)) == []
