"""Processes that stop when asked: `cultivar ui` (dagster dev and its children), `cultivar serve`
and the process-group runner under them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process, from /proc; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    if fields[0] == "Z":  # a zombie has exited; only its parent has not reaped it yet
        return None
    return int(fields[1]), int(fields[2])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat and stat[0] == pid:
                found.append(int(entry.name))
    return found


def _group_members(pgid: int) -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and (_proc_stat(int(e.name)) or (0, -1))[1] == pgid]


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


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


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "CULTIVAR_HOME": str(tmp_path / "home"),
            "PYTHONPATH": str(REPO_ROOT), "NO_PROXY": "127.0.0.1"}


STUBBORN = ("trap '' TERM INT; sleep 300 & sleep 300 & wait")  # members that ignore SIGTERM


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_whole_group_stops_even_when_members_ignore_the_signal(tmp_path, signum):
    wrapper = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cultivar_assets.processes import "
         f"run_process_group; sys.exit(run_process_group(['bash', '-c', {STUBBORN!r}], "
         "grace=1.0))"], env=_env(tmp_path))
    child = _wait_for(lambda: _children(wrapper.pid), 20, "the process group's leader")[0]
    members = _wait_for(lambda: len(_group_members(child)) >= 3 and _group_members(child), 20,
                        "the group's members")
    wrapper.send_signal(signum)
    assert wrapper.wait(timeout=15) == 128 + signum
    assert [pid for pid in members if _proc_stat(pid)] == []  # nobody outlived the wrapper


def test_a_child_that_exits_by_itself_returns_its_status(tmp_path):
    from cultivar_assets.processes import run_process_group

    assert run_process_group(["bash", "-c", "exit 3"]) == 3


def test_serve_stops_on_sigterm(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>hello</p>")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "serve",
                               "--directory", str(site), "--port", str(port)],
                              env=_env(tmp_path), stdout=subprocess.PIPE, text=True)
    _wait_for(lambda: _answers(f"http://127.0.0.1:{port}/index.html"), 30, "cultivar serve")
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=10) == 0
    assert "stopped" in server.stdout.read()
    assert not _answers(f"http://127.0.0.1:{port}/index.html")


@pytest.mark.slow
def test_ui_stops_with_every_dagster_process_on_sigterm(tmp_path):
    port = _free_port()
    ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                           str(port), "--log-level", "warning"], env=_env(tmp_path),
                          cwd=REPO_ROOT)
    try:
        _wait_for(lambda: _answers(f"http://127.0.0.1:{port}/server_info"), 180,
                  "the Dagster webserver")
        leader = _children(ui.pid)[0]
        members = _group_members(leader)
        assert len(members) >= 3  # dagster dev, its webserver, its daemon (and code servers)
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=30)
        _wait_for(lambda: not [pid for pid in members if _proc_stat(pid)], 15,
                  "every process of the dagster group to exit")
        assert not _answers(f"http://127.0.0.1:{port}/server_info")
    finally:
        if ui.poll() is None:
            ui.kill()


def _graphql(port: int, query: str) -> dict:
    import json

    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql",
                                     data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


RESOURCES_QUERY = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  allTopLevelResourceDetails { name configuredValues { key value } } } } } }"""


def test_ui_refuses_a_settings_file_it_cannot_read(tmp_path, capsys):
    """It started Dagster on the demo defaults, whatever --config said."""
    from cultivar_assets.cli import main

    broken = tmp_path / "cultivar.yaml"
    broken.write_text("models: [a\n", "utf-8")
    assert main(["ui", "--config", str(broken), "--port", str(_free_port())]) == 1
    assert f"settings file {broken}: line " in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "absent.yaml"), "ui"]) == 1
    assert "absent.yaml does not exist" in capsys.readouterr().err


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
    port = _free_port()
    elsewhere = tmp_path / "elsewhere"  # the settings path is relative to where ui was started
    elsewhere.mkdir()
    ui = subprocess.Popen([sys.executable, "-m", "cultivar_assets.cli", "ui", "--port",
                           str(port), "--config", os.path.relpath(config, elsewhere),
                           "--log-level", "warning"], env=_env(tmp_path), cwd=elsewhere,
                          stdout=subprocess.PIPE, text=True)
    try:
        header = [ui.stdout.readline() for _ in range(3)]
        assert header[0].strip() == f"Settings: {config}"
        assert header[1].startswith(f"Models file: {models}; watched by the sensor and "
                                    "schedule: copy-here")
        assert header[2].strip() == f"Database: {database}"
        _wait_for(lambda: _answers(f"http://127.0.0.1:{port}/server_info"), 180,
                  "the Dagster webserver")
        values = _wait_for(lambda: _resource_values(port), 120, "the code location to load")
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
        answer = _graphql(port, RESOURCES_QUERY)
    except OSError:
        return None
    nodes = (answer.get("data") or {}).get("repositoriesOrError", {}).get("nodes") or []
    if not nodes:
        return None
    import json

    return {r["name"]: {v["key"]: json.loads(v["value"]) for v in r["configuredValues"]}
            for r in nodes[0]["allTopLevelResourceDetails"]}


# a leader that shuts down in 2 s when asked (as dagster dev does, in ~3 s)
OBEDIENT = "trap 'sleep 2; exit 0' TERM INT; sleep 300 & wait"


def _ignored_signals(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn line")


def test_the_wrapper_returns_as_soon_as_the_group_is_gone(tmp_path):
    """The leader exited 2 s after the signal, but the wrapper kept polling a group that only its
    own unreaped child kept "alive": it waited its whole grace period (here 60 s), killed, and
    waited again."""
    wrapper = subprocess.Popen(
        [sys.executable, "-c", "import sys; from cultivar_assets.processes import "
         f"run_process_group; sys.exit(run_process_group(['bash', '-c', {OBEDIENT!r}], "
         "grace=60.0))"], env=_env(tmp_path))
    child = _wait_for(lambda: _children(wrapper.pid), 20, "the process group's leader")[0]
    _wait_for(lambda: len(_group_members(child)) >= 2, 20, "the group's members")
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
         "grace=5.0))"], env=_env(tmp_path),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # as `cmd &` does
    try:
        child = _wait_for(lambda: _children(wrapper.pid), 20, "the process group's leader")[0]
        sigint_bit = 1 << (signal.SIGINT - 1)
        assert not _ignored_signals(child) & sigint_bit
    finally:
        wrapper.send_signal(signal.SIGTERM)
        wrapper.wait(timeout=30)
