"""Stopping is clean, whoever started it: `cultivar ui` with a run in progress,
`cultivar serve` and an interrupted `cultivar run`, each stopped with SIGTERM or SIGINT, started
as from a terminal (signals at their defaults) or from a script (``nohup cmd &``: SIGINT and
SIGHUP ignored). Every process is gone within seconds and no run is left "started" in the run
storage. The targets are ≤ 5 s (benchmarks/bench_ui_stop.py measures them); the bounds asserted
here leave room for a loaded test machine."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from process_helpers import answers, children, env, free_port, graphql, proc_stat, wait_for

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS = REPO_ROOT / "tests"
BOUND = 8.0  # seconds: the 5 s target plus room for a loaded machine

pytestmark = pytest.mark.dagster_instances


def _as_from(how: str):
    """The signal dispositions a process starts with: a terminal's, or a script's `nohup cmd &`
    (no job control: SIGINT ignored; nohup: SIGHUP ignored)."""
    if how == "terminal":
        return None

    def script() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return script


def _gone_after(process: subprocess.Popen, members: list[int], signum: int) -> float:
    """Send ``signum``; the seconds until the process and every one of ``members`` are gone."""
    started = time.monotonic()
    process.send_signal(signum)
    process.wait(timeout=60)
    wait_for(lambda: not [pid for pid in members if proc_stat(pid)], 60, "every process to exit")
    return time.monotonic() - started


# one run left "started" by a process that then ended (as a killed `cultivar ui` leaves it)
LEFT_STARTED = textwrap.dedent("""
    import os, sys
    import dagster as dg
    from dagster._core.events import DagsterEvent, DagsterEventType
    from dagster._core.storage.dagster_run import DagsterRun
    with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
        run = instance.add_run(DagsterRun(job_name="left_over",
                                          status=dg.DagsterRunStatus.NOT_STARTED))
        instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value,
                                                   job_name="left_over", pid=os.getpid()),
                                      run.run_id)
        print(run.run_id)
""")

LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } } }"""


def _launch_sleepy(port: int) -> str | None:
    variables = {"p": {"selector": {"repositoryLocationName": "sleepy",
                                    "repositoryName": "__repository__", "jobName": "sleepy"},
                       "runConfigData": {}}}
    try:
        answer = graphql(port, LAUNCH, variables)
    except OSError:
        return None
    launched = (answer.get("data") or {}).get("launchRun") or {}
    return launched["run"]["runId"] if launched.get("__typename") == "LaunchRunSuccess" else None


@pytest.mark.slow
@pytest.mark.parametrize("how", ["terminal", "script"])
def test_ui_stopped_with_a_run_in_progress_leaves_no_run_started(tmp_path, how):
    """A run of a job whose op sleeps (tests/sleepy_location.py, a second code location) is in
    progress when `cultivar ui` gets SIGTERM: every process is gone within the bound and the run
    is FAILURE in the run storage (by Dagster itself, or by cultivar ui after its stop grace).
    A run that an earlier, killed UI left "started" is recorded as failed at the start."""
    import dagster as dg

    home = tmp_path / "home"
    dagster = home / "dagster"
    dagster.mkdir(parents=True)
    (dagster / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    left = subprocess.run([sys.executable, "-c", LEFT_STARTED, str(dagster)], env=env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert left.returncode == 0, left.stderr[-2000:]
    left_id = left.stdout.split()[-1]
    port = free_port()
    log = tmp_path / "ui.log"
    with open(log, "w") as out:
        ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                               str(port), "-w", str(TESTS / "sleepy_workspace.yaml"),
                               "--log-level", "warning"], env=env(tmp_path), cwd=REPO_ROOT,
                              stdout=out, stderr=subprocess.STDOUT, preexec_fn=_as_from(how))
    try:
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/server_info"), 240,
                 "the Dagster webserver")
        run_id = wait_for(lambda: _launch_sleepy(port), 180, "the sleepy location to launch")
        wait_for(lambda: "sleeping 600" in log.read_text(), 180, "the run's op to start")
        leader = children(ui.pid)[0]
        members = [int(e.name) for e in Path("/proc").iterdir()
                   if e.name.isdigit() and (proc_stat(int(e.name)) or (0, -1))[1] == leader]
        seconds = _gone_after(ui, members, signal.SIGTERM)
    finally:
        if ui.poll() is None:
            ui.kill()
    said = log.read_text()
    assert ui.returncode == 128 + signal.SIGTERM, said[-3000:]
    assert seconds < BOUND, f"{seconds:.1f} s"
    assert not answers(f"http://127.0.0.1:{port}/server_info")
    with dg.DagsterInstance.from_config(str(dagster)) as instance:
        run = instance.get_run_by_id(run_id)
        failures = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        earlier = instance.get_run_by_id(left_id)
        earlier_failure = instance.all_logs(left_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert run.status == dg.DagsterRunStatus.FAILURE
    assert len(failures) == 1
    # wording is the interface: docs/pipeline.md quotes both (Dagster's and cultivar ui's)
    assert ("Execution was interrupted" in failures[0].message
            or "stopped with cultivar ui (SIGTERM)" in failures[0].message)
    assert earlier.status == dg.DagsterRunStatus.FAILURE
    assert "found at the start of cultivar ui" in earlier_failure[0].message
    assert f"run {left_id} (left_over): STARTED -> FAILURE" in said


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>hello</p>")
    return site


@pytest.mark.parametrize("how", ["terminal", "script"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_within_the_bound_with_a_client_connected(tmp_path, how, signum):
    """A client that connected and sent nothing holds a handler thread; from a script, SIGINT
    arrives ignored and was not handled at all."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "serve",
                               "--directory", str(_site(tmp_path)), "--port", str(port)],
                              env=env(tmp_path), stdout=subprocess.PIPE, text=True,
                              preexec_fn=_as_from(how))
    try:
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/index.html"), 60, "cultivar serve")
        with socket.create_connection(("127.0.0.1", port)):  # idle: no request sent
            time.sleep(0.3)
            seconds = _gone_after(server, [server.pid], signum)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0
    assert "stopped" in server.stdout.read()
    assert seconds < 5.0, f"{seconds:.1f} s"
    assert not answers(f"http://127.0.0.1:{port}/index.html")


def _served_settings(tmp_path: Path, url: str) -> Path:
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [{
        "id": "served", "hf_id": "org/served", "type": "LLM", "family": "Served",
        "engine": "openai", "prompt_style": "chat-instruction",
        "engine_options": {"base_url": url, "max_retries": 0, "timeout": 600}}]}))
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"models_file": str(models), "models": ["served"],
                                      "metrics": {"bleu_tokenize": "13a"}}))
    return config


@pytest.mark.slow
@pytest.mark.parametrize(("how", "signum"), [("terminal", signal.SIGINT),
                                             ("script", signal.SIGTERM)])
def test_an_interrupted_cultivar_run_stops_and_fails_its_dagster_run(tmp_path, how, signum):
    """`cultivar run` whose model run waits on a server that does not answer: the signal ends
    the process promptly, its Dagster run is FAILURE (not STARTED), and it says so."""
    import dagster as dg
    from openai_server import FakeOpenAIServer

    server = FakeOpenAIServer(delay=600).start()  # the model step waits on every request
    try:
        config = _served_settings(tmp_path, server.url)
        run = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "--config",
                                str(config), "run"], env=env(tmp_path), cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=_as_from(how))
        try:
            wait_for(lambda: server.requests or run.poll() is not None, 600,
                     "the model step's first request")
            assert run.poll() is None, run.communicate()[0][-3000:]
            seconds = _gone_after(run, [run.pid], signum)
        finally:
            if run.poll() is None:
                run.kill()
        said = run.stdout.read()
    finally:
        server.stop()
    assert run.returncode == 128 + signum, said[-3000:]
    assert seconds < BOUND, f"{seconds:.1f} s"
    name = signal.Signals(signum).name
    assert f"cultivar run: interrupted ({name})" in said and "model served" in said, said[-3000:]
    with dg.DagsterInstance.from_config(str(tmp_path / "home" / "dagster")) as instance:
        runs = instance.get_runs()
    model_runs = [r for r in runs if r.tags.get("cultivar/model") == "served"]
    assert [r.status for r in model_runs] == [dg.DagsterRunStatus.FAILURE]
    assert f"{model_runs[0].run_id} is recorded as FAILURE" in said
    assert not [r for r in runs if not r.is_finished]
