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
