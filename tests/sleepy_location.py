"""A test-only Dagster code location: one job whose op sleeps (a run that stays in progress).

Loaded beside the project's location by ``cultivar ui -w tests/sleepy_workspace.yaml`` in
tests/test_stopping.py; ``SLEEPY_SECONDS`` sets how long the op sleeps (default 600).
"""

from __future__ import annotations

import os
import time

import dagster as dg


@dg.op
def sleep_a_while(context) -> None:
    seconds = float(os.environ.get("SLEEPY_SECONDS", "600"))
    context.log.info(f"sleeping {seconds} s (pid {os.getpid()})")
    time.sleep(seconds)


@dg.job
def sleepy() -> None:
    sleep_a_while()


defs = dg.Definitions(jobs=[sleepy])
