"""Child processes that stop when asked: a process group, signals forwarded, escalation.

``dagster dev`` starts a webserver, a daemon and code servers below itself; stopping only its
PID leaves them running (re-parented), answering requests. :func:`run_process_group` starts the
command in a new session (its own process group, so the PID of the child is the group id),
forwards SIGINT and SIGTERM received by this process to the whole group, and when the child
ends or this process is asked to stop, waits ``grace`` seconds for every member of the group to
exit, then kills what is left (SIGKILL). No member outlives the call.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

FORWARDED = (signal.SIGINT, signal.SIGTERM)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # members exist that we may not signal
        return True
    return True


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(pgid, signum)


def stop_group(pgid: int, grace: float = 10.0, first: int = signal.SIGTERM) -> None:
    """Send ``first`` to the group, wait up to ``grace`` seconds, then SIGKILL what is left."""
    _signal_group(pgid, first)
    deadline = time.monotonic() + grace
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)


def run_process_group(command: Sequence[str], env: Mapping[str, str] | None = None,
                      grace: float = 10.0) -> int:
    """Run ``command`` in its own process group until it exits or we are signalled.

    Returns the child's exit status (128 + signal number when we were stopped by a signal).
    """
    child = subprocess.Popen(list(command), env=dict(env) if env is not None else None,
                             start_new_session=True)
    received: list[int] = []

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        _signal_group(child.pid, signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        while True:
            try:
                code = child.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if received:  # asked to stop: give the group its grace period, then kill it
                    stop_group(child.pid, grace, first=received[-1])
                    code = child.wait()
                    break
    finally:
        stop_group(child.pid, grace)  # whatever the child left behind in its group
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + received[-1] if received else code
