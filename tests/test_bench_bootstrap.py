"""``benchmarks/bench_bootstrap.py`` runs its whole path at a tiny size (it is run by hand, so a
change to what it reads, such as the ranks' table type, would otherwise be found only then)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_bootstrap_bench_runs_and_reports_every_table_and_the_last_rank():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_bootstrap.py"), "--models", "3",
         "--instances", "12", "--replicates", "20", "--repeats", "1", "--recall", "--store"],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"repeat 1: bootstrap [\d.]+ s, with every table \(\d+ rows, [1-9]\d* rank "
                     r"intervals\)", done.stdout), done.stdout
    assert re.search(r"last rank [1-3]–[1-3]", done.stdout), done.stdout
