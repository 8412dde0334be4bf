"""Child processes that stop when asked: a process group, signals forwarded, escalation.

``dagster dev`` starts a webserver, a daemon and code servers below itself; stopping only its
PID leaves them running (re-parented), answering requests. :func:`run_process_group` starts the
command in a new session (its own process group, so the PID of the child is the group id),
forwards SIGINT and SIGTERM received by this process to the whole group, and when the child
ends or this process is asked to stop, waits ``grace`` seconds for every member of the group to
exit, then kills what is left (SIGKILL). No member outlives the call, and the call returns as
soon as the group is gone (the child is reaped while waiting: an unreaped child would keep the
group "alive" until the grace period ran out).

The child starts with the default disposition of SIGINT and SIGTERM, whatever this process
inherited: a script that starts ``cultivar ui &`` without job control has SIGINT ignored, and a
child inheriting that (``dagster dev`` maps SIGTERM to its SIGINT handling) shut down only when
killed. The handlers are installed before the child starts; caught signals are reset to the
default by ``exec``, ignored ones would not be.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

FORWARDED = (signal.SIGINT, signal.SIGTERM)


def _group_alive(pgid: int, child: subprocess.Popen | None = None) -> bool:
    if child is not None:
        child.poll()  # reap the leader once it has exited, or it holds the group "alive"
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


def stop_group(pgid: int, grace: float = 10.0, first: int | None = signal.SIGTERM,
               child: subprocess.Popen | None = None) -> None:
    """Send ``first`` to the group (None: it was sent already), wait up to ``grace`` seconds,
    then SIGKILL what is left; return as soon as the group is gone. ``child``: the group's
    leader when it is our child (reaped while waiting)."""
    if not _group_alive(pgid, child):
        return
    if first is not None:
        _signal_group(pgid, first)
    deadline = time.monotonic() + grace
    while _group_alive(pgid, child) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(pgid, child):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while _group_alive(pgid, child) and time.monotonic() < deadline:
            time.sleep(0.05)


def run_process_group(command: Sequence[str], env: Mapping[str, str] | None = None,
                      grace: float = 10.0) -> int:
    """Run ``command`` in its own process group until it exits or we are signalled.

    Returns the child's exit status (128 + signal number when we were stopped by a signal).
    """
    received: list[int] = []
    started: list[subprocess.Popen] = []

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        if started:
            _signal_group(started[0].pid, signum)

    # Before the child starts, so that it starts with SIGINT/SIGTERM at their defaults.
    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        child = subprocess.Popen(list(command), env=dict(env) if env is not None else None,
                                 start_new_session=True)
    except BaseException:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        raise
    started.append(child)
    try:
        while True:
            if received:  # asked to stop: give the group its grace period, then kill it
                # forward() sent the signal; a second one would ask Dagster to hurry
                stop_group(child.pid, grace, first=None, child=child)
                code = child.wait()
                break
            try:
                code = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        stop_group(child.pid, grace, child=child)  # whatever the child left in its group
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + received[-1] if received else code
