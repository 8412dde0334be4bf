"""Benchmark: how long `cultivar ui` takes to stop after SIGTERM, until every process is gone.

Starts `cultivar ui` (dagster dev: webserver, daemon, code server) on a fresh $CULTIVAR_HOME,
waits for the webserver to answer, sends SIGTERM to `cultivar ui` and measures the seconds until
no process of its group is left. Two ways of starting it:

- ``terminal``: SIGINT and SIGTERM at their defaults, as from an interactive shell;
- ``script``: SIGINT ignored, as a script's ``cultivar ui &`` (no job control) starts it.

Target (issue 18 §4): every process gone ≤ 5 s after SIGTERM when Dagster shuts down cleanly,
both ways. Not a test: run it by hand and record the figures.

    python benchmarks/bench_ui_stop.py --runs 2
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _child_of(pid: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                text = (entry / "stat").read_text()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2:].split()[1]) == pid:
                return int(entry.name)
    return None


def measure(how: str) -> float:
    port = _free_port()
    home = tempfile.mkdtemp(prefix="bench-ui-")
    env = {**os.environ, "CULTIVAR_HOME": home, "PYTHONPATH": str(REPO_ROOT)}
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if how == "script" else None
    ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                           str(port), "--log-level", "warning"], env=env, cwd=REPO_ROOT,
                          stdout=subprocess.DEVNULL, preexec_fn=ignore)
    deadline = time.monotonic() + 240
    while not _answers(f"http://127.0.0.1:{port}/server_info"):
        if time.monotonic() > deadline:
            ui.kill()
            raise SystemExit("the Dagster webserver did not answer in 240 s")
        time.sleep(0.5)
    leader = _child_of(ui.pid)
    time.sleep(5)  # let the daemon and code server settle
    start = time.monotonic()
    ui.send_signal(signal.SIGTERM)
    ui.wait(timeout=120)
    while leader and _group_members(leader) and time.monotonic() - start < 120:
        time.sleep(0.05)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for how in ("terminal", "script"):
        times = [measure(how) for _ in range(args.runs)]
        print(f"{how:9s}: every process gone after " +
              ", ".join(f"{t:.1f} s" for t in times) + " (target ≤ 5 s)", flush=True)


if __name__ == "__main__":
    main()
