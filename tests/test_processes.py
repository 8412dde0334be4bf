"""Processes that stop when asked: `cultivar ui` (dagster dev and its children), `cultivar serve`
and the process-group runner under them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import (
    answers,
    children,
    env,
    free_port,
    graphql,
    group_members,
    proc_stat,
    wait_for,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


STUBBORN = ("trap '' TERM INT; sleep 300 & sleep 300 & wait")  # members that ignore SIGTERM


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_whole_group_stops_even_when_members_ignore_the_signal(tmp_path, signum):
    wrapper = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cultivar_assets.processes import "
         f"run_process_group; sys.exit(run_process_group(['bash', '-c', {STUBBORN!r}], "
         "grace=1.0))"], env=env(tmp_path))
    child = wait_for(lambda: children(wrapper.pid), 20, "the process group's leader")[0]
    members = wait_for(lambda: len(group_members(child)) >= 3 and group_members(child), 20,
                        "the group's members")
    wrapper.send_signal(signum)
    assert wrapper.wait(timeout=15) == 128 + signum
    assert [pid for pid in members if proc_stat(pid)] == []  # nobody outlived the wrapper


def test_a_child_that_exits_by_itself_returns_its_status(tmp_path):
    from cultivar_assets.processes import run_process_group

    assert run_process_group(["bash", "-c", "exit 3"]) == 3


def test_serve_stops_on_sigterm(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>hello</p>")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "serve",
                               "--directory", str(site), "--port", str(port)],
                              env=env(tmp_path), stdout=subprocess.PIPE, text=True)
    wait_for(lambda: answers(f"http://127.0.0.1:{port}/index.html"), 30, "cultivar serve")
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=10) == 0
    assert "stopped" in server.stdout.read()
    assert not answers(f"http://127.0.0.1:{port}/index.html")


@pytest.mark.slow
def test_ui_stops_with_every_dagster_process_on_sigterm(tmp_path):
    port = free_port()
    ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                           str(port), "--log-level", "warning"], env=env(tmp_path),
                          cwd=REPO_ROOT)
    try:
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/server_info"), 180,
                  "the Dagster webserver")
        leader = children(ui.pid)[0]
        members = group_members(leader)
        assert len(members) >= 3  # dagster dev, its webserver, its daemon (and code servers)
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=30)
        wait_for(lambda: not [pid for pid in members if proc_stat(pid)], 15,
                  "every process of the dagster group to exit")
        assert not answers(f"http://127.0.0.1:{port}/server_info")
    finally:
        if ui.poll() is None:
            ui.kill()


RESOURCES_QUERY = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  allTopLevelResourceDetails { name configuredValues { key value } } } } } }"""


def test_ui_refuses_a_settings_file_it_cannot_read(tmp_path, capsys):
    """It started Dagster on the demo defaults, whatever --config said."""
    from cultivar_assets.cli import main

    broken = tmp_path / "cultivar.yaml"
    broken.write_text("models: [a\n", "utf-8")
    assert main(["ui", "--config", str(broken), "--port", str(free_port())]) == 1
    assert f"settings file {broken}: line " in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "absent.yaml"), "ui"]) == 1
    assert str(tmp_path / "absent.yaml") in capsys.readouterr().err


@pytest.mark.slow
def test_ui_runs_the_settings_it_was_given(tmp_path):
    """`cultivar --config FILE ui` loaded the embedded demo defaults in Dagster (GraphQL showed
    `suite:demo` and the demo database): the sensor would have watched the wrong registry."""
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - {id: copy-here, type: baseline, family: Baseline, "
                      "engine: copy-source, prompt_style: source}\n", "utf-8")
    database = tmp_path / "mine.duckdb"
    config = tmp_path / "mine.yaml"
    config.write_text(f"models_file: {models}\nmodels: [copy-here]\ndatabase: {database}\n"
                      "metrics: {bleu_tokenize: 13a}\n", "utf-8")
    port = free_port()
    elsewhere = tmp_path / "elsewhere"  # the settings path is relative to where ui was started
    elsewhere.mkdir()
    ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                           str(port), "--config", os.path.relpath(config, elsewhere),
                           "--log-level", "warning"], env=env(tmp_path), cwd=elsewhere,
                          stdout=subprocess.PIPE, text=True)
    try:
        header = [ui.stdout.readline() for _ in range(3)]
        assert header[0].strip() == f"Settings: {config}"
        assert header[1].startswith(f"Models file: {models}; watched by the sensor and "
                                    "schedule: copy-here")
        assert header[2].strip() == f"Database: {database}"
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/server_info"), 180,
                  "the Dagster webserver")
        values = wait_for(lambda: _resource_values(port), 120, "the code location to load")
        assert values["store"]["database"] == str(database)
        assert values["engine"]["selection"] == ["copy-here"]
        assert values["engine"]["models_file"] == str(models)
    finally:
        ui.send_signal(signal.SIGTERM)
        try:
            ui.wait(timeout=60)
        except subprocess.TimeoutExpired:
            ui.kill()


def _resource_values(port: int) -> dict[str, dict[str, str]] | None:
    try:
        answer = graphql(port, RESOURCES_QUERY)
    except OSError:
        return None
    nodes = (answer.get("data") or {}).get("repositoriesOrError", {}).get("nodes") or []
    if not nodes:
        return None
    import json

    return {r["name"]: {v["key"]: json.loads(v["value"]) for v in r["configuredValues"]}
            for r in nodes[0]["allTopLevelResourceDetails"]}


# a leader that shuts down in 2 s when asked (as dagster dev does, in ~3 s)
OBEDIENT = "trap 'sleep 0.5; exit 0' TERM INT; sleep 300 & wait"


def _ignored_signals(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn line")


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode(errors="replace")
    except OSError:
        return ""


def test_the_wrapper_returns_as_soon_as_the_group_is_gone(tmp_path):
    """The leader exits 0.5 s after the signal; the wrapper returns then, not at the end of its
    grace period (here 60 s): its own child, exited but not yet reaped, does not keep the group
    "alive"."""
    wrapper = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cultivar_assets.processes import "
         f"run_process_group; sys.exit(run_process_group(['bash', '-c', {OBEDIENT!r}], "
         "grace=60.0))"], env=env(tmp_path))
    child = wait_for(lambda: children(wrapper.pid), 20, "the process group's leader")[0]
    wait_for(lambda: len(group_members(child)) >= 2, 20, "the group's members")
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(timeout=20) == 128 + signal.SIGTERM  # far less than the 60 s grace


def test_the_child_does_not_inherit_an_ignored_sigint(tmp_path):
    """Started from a script with `&` (no job control), the wrapper inherits SIGINT ignored; the
    child inherited it too, so `dagster dev` never shut down cleanly."""
    script = tmp_path / "child.sh"
    script.write_text("sleep 300\n")
    wrapper = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cultivar_assets.processes import "
         f"run_process_group; sys.exit(run_process_group(['bash', {str(script)!r}], "
         "grace=5.0))"], env=env(tmp_path),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # as `cmd &` does
    try:
        child = wait_for(lambda: [pid for pid in children(wrapper.pid)
                                  if _command_line(pid).endswith(str(script))], 20,
                         "the process group's leader running the script")[0]  # exec'd
        sigint_bit = 1 << (signal.SIGINT - 1)
        assert not _ignored_signals(child) & sigint_bit
    finally:
        wrapper.send_signal(signal.SIGTERM)
        wrapper.wait(timeout=30)


def test_a_signal_that_comes_while_the_child_starts_reaches_its_group(monkeypatch):
    """SIGTERM received while the child is being started (before ``Popen`` returns, when
    forwarding has no group to send to yet) is sent to the group once it exists: the group stops
    on that signal, not on the SIGKILL at the end of the grace period."""
    from cultivar_assets import processes

    real_popen, started = subprocess.Popen, []

    def popen_then_signalled(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        started.append(child)
        os.kill(os.getpid(), signal.SIGTERM)  # handled before this returns the child
        return child

    monkeypatch.setattr(processes.subprocess, "Popen", popen_then_signalled)
    assert processes.run_process_group(["sleep", "300"], grace=20.0) == 128 + signal.SIGTERM
    assert started[0].returncode == -signal.SIGTERM, started[0].returncode
