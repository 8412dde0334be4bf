"""Benchmark: how long the project's servers take to stop, until every process is gone.

``ui``: starts `cultivar ui` (dagster dev: webserver, daemon, code server) on a fresh
$CULTIVAR_HOME, waits for the webserver to answer, sends SIGTERM to `cultivar ui` and measures
the seconds until `cultivar ui` has exited and no process of its group is left. ``ui-run``: the
same with a run in progress (the job of tests/sleepy_workspace.yaml, whose op sleeps, loaded
as a second code location and launched through GraphQL); it also prints the run's status in
the run storage afterwards. ``serve``: `cultivar serve` of a one-page site with an idle client
connected, stopped with SIGTERM and with SIGINT. Two ways of starting each:

- ``terminal``: SIGINT and SIGTERM at their defaults, as from an interactive shell;
- ``script``: SIGINT and SIGHUP ignored, as a script's ``nohup cultivar ui &`` (no job control)
  starts it.

Target: every process gone ≤ 5 s after the signal, both ways, and no run left
"started". Not a test: run it by hand and record the figures.

    python benchmarks/bench_ui_stop.py --runs 2 [--what ui ui-run serve]
"""

from __future__ import annotations

import argparse
import json
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


def _as_from(how: str):
    if how == "terminal":
        return None

    def script() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return script


def _gone_after(process: subprocess.Popen, leader: int | None, signum: int) -> float:
    start = time.monotonic()
    process.send_signal(signum)
    process.wait(timeout=120)
    while leader and _group_members(leader) and time.monotonic() - start < 120:
        time.sleep(0.05)
    return time.monotonic() - start


LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } } }"""


def _launch_sleepy(port: int) -> str | None:
    body = json.dumps({"query": LAUNCH, "variables": {"p": {"selector": {
        "repositoryLocationName": "sleepy", "repositoryName": "__repository__",
        "jobName": "sleepy"}, "runConfigData": {}}}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            launched = json.loads(response.read())["data"]["launchRun"]
    except (OSError, KeyError, TypeError):
        return None
    return launched["run"]["runId"] if launched["__typename"] == "LaunchRunSuccess" else None


def _wait(predicate, seconds: float, what: str, process: subprocess.Popen):
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            os.killpg(_child_of(process.pid) or process.pid, signal.SIGKILL)
            process.kill()
            raise SystemExit(f"{what}: not in {seconds} s")
        time.sleep(0.5)


def measure_ui(how: str, with_run: bool) -> tuple[float, str]:
    port = _free_port()
    home = tempfile.mkdtemp(prefix="bench-ui-")
    env = {**os.environ, "CULTIVAR_HOME": home, "PYTHONPATH": str(REPO_ROOT),
           "NO_PROXY": "127.0.0.1"}
    extra = ["-w", str(REPO_ROOT / "tests" / "sleepy_workspace.yaml")] if with_run else []
    log = Path(home) / "ui.log"
    with open(log, "w") as out:
        ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                               str(port), *extra, "--log-level", "warning"], env=env,
                              cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                              preexec_fn=_as_from(how))
    _wait(lambda: _answers(f"http://127.0.0.1:{port}/server_info"), 300,
          "the Dagster webserver", ui)
    run_id = None
    if with_run:
        run_id = _wait(lambda: _launch_sleepy(port), 240, "launching the sleepy run", ui)
        _wait(lambda: "sleeping 600" in log.read_text(), 240, "the run's op to start", ui)
    else:
        time.sleep(5)  # let the daemon and code server settle
    leader = _child_of(ui.pid)
    seconds = _gone_after(ui, leader, signal.SIGTERM)
    if run_id is None:
        return seconds, ""
    import dagster as dg

    with dg.DagsterInstance.from_config(os.path.join(home, "dagster")) as instance:
        run = instance.get_run_by_id(run_id)
        failure = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    by = ("cultivar ui" if failure and "cultivar ui" in failure[-1].message else "Dagster")
    return seconds, f"run {run.status.value} (recorded by {by})"


def measure_serve(how: str, signum: int) -> tuple[float, str]:
    port = _free_port()
    site = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    (site / "index.html").write_text("<p>hello</p>")
    server = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "serve",
                               "--directory", str(site), "--port", str(port)],
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT),
                                   "NO_PROXY": "127.0.0.1"}, cwd=REPO_ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              preexec_fn=_as_from(how))
    _wait(lambda: _answers(f"http://127.0.0.1:{port}/index.html"), 60, "cultivar serve", server)
    with socket.create_connection(("127.0.0.1", port)):  # an idle client
        return _gone_after(server, None, signum), f"exit {server.returncode}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--what", nargs="+", default=["ui", "ui-run", "serve"],
                        choices=["ui", "ui-run", "serve"])
    args = parser.parse_args()
    cases = []
    for what in args.what:
        for how in ("terminal", "script"):
            if what == "serve":
                for signum in (signal.SIGTERM, signal.SIGINT):
                    cases.append((f"serve {signal.Signals(signum).name}", how,
                                  lambda how=how, signum=signum: measure_serve(how, signum)))
            else:
                cases.append((f"{what} SIGTERM", how,
                              lambda how=how, what=what: measure_ui(how, what == "ui-run")))
    for name, how, measure in cases:
        results = [measure() for _ in range(args.runs)]
        print(f"{name:14s} {how:9s}: every process gone after " +
              ", ".join(f"{t:.1f} s" + (f" ({note})" if note else "") for t, note in results) +
              " (target ≤ 5 s)", flush=True)


if __name__ == "__main__":
    main()
