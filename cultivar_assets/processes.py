"""Child processes that stop when asked: a process group, signals forwarded, escalation.

:func:`run_process_group` starts a command in a new session (its own process group, so that,
say, ``dagster dev``'s webserver, daemon and code servers stop with it), forwards SIGINT and
SIGTERM received by this process to the whole group, and when the child ends or this process is
asked to stop, waits ``grace`` seconds for every member to exit, then kills what is left
(SIGKILL). No member outlives the call, which returns as soon as the group is gone (the child is
reaped while waiting). The child starts with the default disposition of SIGINT and SIGTERM,
whatever this process inherited (a ``cultivar ui &`` without job control has SIGINT ignored); the
handlers are installed before the child starts. A group counts as gone when no member is left but
zombies (Linux: read from ``/proc``; a re-parented member may never be reaped in a container, and
``killpg(pgid, 0)`` succeeds on zombies).

:func:`interruptions` is for a process that runs work in-process (``cultivar run``): it turns
SIGINT and SIGTERM into :class:`Interrupted` and remembers every such signal received, also those
a library's own handler took meanwhile (Dagster's, while it executes a run), so that the caller
can stop after such a call instead of going on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

FORWARDED = (signal.SIGINT, signal.SIGTERM)
PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first); None when gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _live_members(pgid: int) -> bool:
    """Whether a member of the group other than a zombie is left, from ``/proc``."""
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and fields[0] != "Z" and int(fields[2]) == pgid:
                return True
    return False


def _group_alive(pgid: int, child: subprocess.Popen | None = None) -> bool:
    if child is not None:
        child.poll()  # reap the leader once it has exited, or it holds the group "alive"
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # members exist that we may not signal
        return True
    if PROC.is_dir():  # zombies that nobody reaps answer killpg too
        return _live_members(pgid)
    return True


def process_alive(pid: int, started_by: float | None = None) -> bool:
    """Whether process ``pid`` exists and is not a zombie; with ``started_by`` (seconds since the
    epoch), only if it started at or before then (so that a PID used again by a later process
    does not count; Linux only, elsewhere the start time is not checked)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists
    if not PROC.is_dir():
        return True
    fields = _stat_fields(pid)
    if fields is None or fields[0] == "Z":
        return False
    if started_by is None:
        return True
    boot = next(float(line.split()[1]) for line in (PROC / "stat").read_text().splitlines()
                if line.startswith("btime "))
    started = boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: starttime
    return started <= started_by + 1.0  # btime is whole seconds


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
    forwarded: list[int] = []

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        if started:
            _signal_group(started[0].pid, signum)
            forwarded.append(signum)

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
                # forward() sent the signal (a second one would ask Dagster to hurry), unless
                # it came while the child was being started: then it is sent now
                stop_group(child.pid, grace, first=None if forwarded else received[-1],
                           child=child)
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


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM received by a process inside :func:`interruptions`."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted ({signal.Signals(signum).name})")
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class Interruptions:
    """The signals received inside :func:`interruptions` (see there)."""

    def __init__(self, read_fd: int) -> None:
        self._read_fd = read_fd
        self.received: list[int] = []

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except BlockingIOError:
                return
            if not data:
                return
            self.received.extend(b for b in data if b in FORWARDED)

    def check(self) -> None:
        """Raise :class:`Interrupted` if SIGINT or SIGTERM arrived since the start, whoever's
        handler took it."""
        self._drain()
        if self.received:
            raise Interrupted(self.received[0])


@contextlib.contextmanager
def interruptions() -> Iterator[Interruptions]:
    """SIGINT and SIGTERM raise :class:`Interrupted` inside the block (main thread only); every
    such signal received is also remembered, through :func:`signal.set_wakeup_fd`, even when a
    library's handler replaced ours for a while and took it: :meth:`Interruptions.check` raises
    then. SIGINT is handled even when this process inherited it ignored (a script's ``cmd &``),
    as :func:`run_process_group` does. Handlers and the wakeup file descriptor are restored on
    exit."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    state = Interruptions(read_fd)

    def interrupt(signum: int, _frame) -> None:
        raise Interrupted(signum)

    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = {}
    try:
        for signum in FORWARDED:
            previous[signum] = signal.signal(signum, interrupt)
        yield state
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(read_fd)
        os.close(write_fd)
