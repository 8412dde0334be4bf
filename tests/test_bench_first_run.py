"""benchmarks/bench_first_run.py: cutting a demo run's timestamped output into phases."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_first_run import Timed, demo_phases, run_timed

# What `cultivar demo` prints now, line by line as the benchmark reads it (stripped, split at
# carriage returns; rich wraps at 80 columns when stdout is not a terminal), taken from a first
# run on the 2-core machine (times rounded); the progress bars of Dagster's steps arrive in
# bursts at a step's end, which is why a model's translation is read from its bar's elapsed.
HOME = "/tmp/one/home"
LINES = [
    (2.5, "Cultivar demo: DEMO data (written for this project, not FLORES or Cultivar), built "
          "here from its original sentences (selection, drafts: recorded answers played"),
    (2.5, "back (recorded from google/gemma-3-270m (transformers, revision "
          "gguf-q4_k_m-sha256-a5fd3b62230aa5ec)), the shipped demo annotation files) and "
          "evaluated with the"),
    (2.5, "models of suite:demo"),
    (9.0, f"[1/6] selection of named-entity-rich instances (demo source benchmark, spaCy NER) "
          f"-> {HOME}/db/demo.duckdb"),
    (20.1, "spaCy NER: 100%|██████████| 12/12 [00:00<00:00, 27.97sent/s]"),
    (21.7, "[2/6] for 6 locale(s): LLM drafts (recorded answers played back (recorded from "
           "google/gemma-3-270m (transformers, revision"),
    (21.7, "gguf-q4_k_m-sha256-a5fd3b62230aa5ec)), prompt cultivar-paper-fewshot), the "
           "post-editing tool, the returned annotation file"),
    (23.2, "localise (localiser-google--gemma-3-270m): 100%|██████████| 12/12 [00:00<00:00, "
           "283.08request/s]"),
    (39.1, f"[3/6] the dataset -> {HOME}/construction/dataset"),
    (41.0, f"[4/6] test sets (built data) -> {HOME}/db/demo.duckdb"),
    (41.8, "[5/6] 3 model(s), one run each"),
    (41.8, "model 1/3: gemma-3-270m-fewshot (LLM, engine transformers, prompt style "
           "base-fewshot)"),
    (67.2, "de-quantising GGUF tensors:  98%|█████████▊| 232/236 [00:21<00:00, 58.92tensor/s]"),
    (123.0, "Loading weights: 100%|██████████| 236/236 [00:00<00:00, 11532.75it/s]"),
    (1449.5, "translate gemma-3-270m-fewshot:   0%|          | 0/120 [00:00<?, ?seg/s]"),
    (1449.5, "translate gemma-3-270m-fewshot: 100%|██████████| 120/120 [22:06<00:00, "
             "11.05s/seg]"),
    (1462.6, "model 2/3: gemma-3-270m-fewshot-unnamed (LLM, engine transformers, prompt style "
             "base-fewshot-unnamed)"),
    (2126.0, "translate gemma-3-270m-fewshot-unnamed: 100%|██████████| 120/120 [10:16<00:00,  "
             "5.14s/seg]"),
    (2129.6, "model 3/3: copy-source-baseline (baseline, engine copy-source, prompt style "
             "source)"),
    (2131.8, "translate copy-source-baseline: 100%|██████████| 120/120 [00:00<00:00, "
             "789.01seg/s]"),
    (2133.6, "[6/6] leaderboard, per-locale ∆, rank agreement, reported figures, the error "
             "analysis, charts, the dataset folder (push: dry run unless configured) and the "
             "site"),
    (2136.8, "bootstrap: 100%|██████████| 20/20 [00:00<00:00, 138.65block/s]"),
    (2164.0, "Time: selection 13 s, localisation, tools and ingest 17 s, dataset 2 s, test sets "
             "1 s, model gemma-3-270m-fewshot 1421 s, model gemma-3-270m-fewshot-unnamed 667"),
    (2164.0, "Finished in 2158 s. Query it: cultivar query \"SELECT * FROM locale_deltas\"; "
             "browse the runs: cultivar ui"),
]


def test_phases_are_cut_at_the_step_lines_and_the_progress_bar():
    run = Timed("cultivar demo, run 1", 2167.0, 3300.0, (8.0, 8.6), 0, LINES)
    phases = demo_phases(run)
    assert [name for name, _ in phases] == [
        "start-up (imports, Dagster instance)",
        "[1/6] selection of named-entity-rich instances",
        "[2/6] for 6 locale(s)",
        "[3/6] the dataset",
        "[4/6] test sets",
        "[5/6] 3 model(s), one run each",
        "gemma-3-270m-fewshot: translation (progress bar's elapsed)",
        "gemma-3-270m-fewshot: load (conversion on a first run) and the rest",
        "gemma-3-270m-fewshot-unnamed: translation (progress bar's elapsed)",
        "gemma-3-270m-fewshot-unnamed: load (conversion on a first run) and the rest",
        "copy-source-baseline: translation (progress bar's elapsed)",
        "copy-source-baseline: load (conversion on a first run) and the rest",
        "[6/6] leaderboard, per-locale ∆, rank agreement, repor",
    ]
    # each step from its line to the next; a model's step less its bar's elapsed (22:06, 10:16)
    assert [value for _, value in phases] == pytest.approx([
        9.0, 21.7 - 9.0, 39.1 - 21.7, 41.0 - 39.1, 41.8 - 41.0, 41.8 - 41.8,
        1326, 1462.6 - 41.8 - 1326, 616, 2129.6 - 1462.6 - 616, 0, 2133.6 - 2129.6,
        2167.0 - 2133.6])
    assert sum(value for _, value in phases) == pytest.approx(run.seconds)


def test_output_fragments_split_at_carriage_returns(tmp_path):
    script = "import sys; sys.stdout.write('a\\rb\\nc'); sys.stdout.flush()"
    run = run_timed("x", [sys.executable, "-c", script], tmp_path, {}, echo=False)
    assert [text for _, text in run.lines] == ["a", "b", "c"]
    assert run.returncode == 0 and run.peak_rss_mb > 1


@pytest.mark.parametrize("lines", [[], [(1.0, "no steps here")]])
def test_output_without_steps_has_no_phases(lines):
    assert demo_phases(Timed("x", 1.0, 1.0, (0, 0), 0, lines)) == []
