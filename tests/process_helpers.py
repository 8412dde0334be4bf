"""Processes in tests: /proc reads (parent, group, members), waiting, free ports, the HTTP and
GraphQL checks of a server (tests/test_processes.py, tests/test_stopping.py)."""

from __future__ import annotations

import os
import socket
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process, from /proc; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    if fields[0] == "Z":  # a zombie has exited; only its parent has not reaped it yet
        return None
    return int(fields[1]), int(fields[2])


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_stat(int(entry.name))
            if stat and stat[0] == pid:
                found.append(int(entry.name))
    return found


def group_members(pgid: int) -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and (proc_stat(int(e.name)) or (0, -1))[1] == pgid]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "CULTIVAR_HOME": str(tmp_path / "home"),
            "PYTHONPATH": str(REPO_ROOT), "NO_PROXY": "127.0.0.1"}


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    import json

    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql",
                                     data=json.dumps({"query": query,
                                                      "variables": variables or {}}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
