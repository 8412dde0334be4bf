"""Runs that no process is left to finish: found and recorded as failed, never
left "started"; runs whose processes are alive, and queued runs, are left as they are. Also the
process checks under it: a PID used again, a zombie, a group of zombies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.dagster_instances

# Runs written by a process that then exits (as a killed `cultivar ui` leaves them)
LEFT_BEHIND = textwrap.dedent("""
    import json, os, sys
    import dagster as dg
    from dagster._core.events import DagsterEvent, DagsterEventType
    from dagster._core.remote_origin import (RegisteredCodeLocationOrigin, RemoteJobOrigin,
                                             RemoteRepositoryOrigin)
    from dagster._core.storage.dagster_run import DagsterRun

    def started(instance, name, tags=None):
        run = instance.add_run(DagsterRun(job_name=name, status=dg.DagsterRunStatus.NOT_STARTED,
                                          tags=tags or {}))
        instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value,
                                                   job_name=name, pid=os.getpid()), run.run_id)
        return run.run_id

    with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
        ids = {"started": started(instance, "started")}
        ids["canceling"] = started(instance, "canceling")
        instance.report_run_canceling(instance.get_run_by_id(ids["canceling"]))
        origin = RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("here"),
                                                        "__repository__"), "queued")
        ids["queued"] = instance.add_run(DagsterRun(
            job_name="queued", status=dg.DagsterRunStatus.QUEUED,
            remote_job_origin=origin)).run_id
        # launched through a code server that is gone, before its worker wrote anything
        ids["starting"] = instance.add_run(DagsterRun(
            job_name="starting", status=dg.DagsterRunStatus.STARTING,
            tags={".dagster/grpc_info": json.dumps({"host": "localhost",
                                                    "socket": sys.argv[2]})})).run_id
    print(json.dumps(ids))
""")


def _left_behind(tmp_path: Path) -> tuple[str, dict[str, str]]:
    import json

    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    done = subprocess.run([sys.executable, "-c", LEFT_BEHIND, str(home),
                           str(tmp_path / "gone.sock")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return str(home), json.loads(done.stdout.strip().splitlines()[-1])


def test_runs_left_by_processes_that_ended_are_recorded_as_finished(tmp_path):
    import dagster as dg
    from dagster._core.events import DagsterEvent, DagsterEventType
    from dagster._core.storage.dagster_run import DagsterRun

    from cultivar_assets.runner.orphaned_runs import mark_orphaned_runs, queued_runs

    home, ids = _left_behind(tmp_path)
    with dg.DagsterInstance.from_config(home) as instance:
        alive = instance.add_run(DagsterRun(job_name="alive",
                                            status=dg.DagsterRunStatus.NOT_STARTED))
        instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value,
                                                   job_name="alive", pid=os.getpid()),
                                      alive.run_id)
        marked = mark_orphaned_runs(instance, "stopped with cultivar ui (SIGTERM)")
        status = {name: instance.get_run_by_id(run_id).status.value
                  for name, run_id in ids.items()}
        failure = instance.all_logs(ids["started"], of_type=dg.DagsterEventType.RUN_FAILURE)
        still = instance.get_run_by_id(alive.run_id).status.value
        waiting = queued_runs(instance)
    assert status == {"started": "FAILURE", "canceling": "CANCELED", "queued": "QUEUED",
                      "starting": "FAILURE"}
    assert {(m.job_name, m.was, m.now) for m in marked} == {
        ("started", "STARTED", "FAILURE"), ("canceling", "CANCELING", "CANCELED"),
        ("starting", "STARTING", "FAILURE")}
    assert [e.message for e in failure] == ["stopped with cultivar ui (SIGTERM)"]
    assert still == "STARTED"  # its process (this one) is alive: not ours to finish
    assert waiting == 1


def test_a_run_whose_code_server_still_answers_is_not_orphaned(tmp_path):
    import json
    import socket

    import dagster as dg
    from dagster._core.storage.dagster_run import DagsterRun

    from cultivar_assets.runner.orphaned_runs import is_orphaned

    path = tmp_path / "server.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            run = instance.add_run(DagsterRun(
                job_name="starting", status=dg.DagsterRunStatus.STARTING,
                tags={".dagster/grpc_info": json.dumps({"socket": str(path)})}))
            assert not is_orphaned(instance, run)
            server.close()
            path.unlink()
            assert is_orphaned(instance, run)
    finally:
        server.close()


def test_a_pid_counts_only_for_the_process_that_had_it():
    from cultivar_assets.processes import process_alive

    assert process_alive(os.getpid())
    assert process_alive(os.getpid(), started_by=time.time())
    # an event written before this process started was written by another one with this PID
    assert not process_alive(os.getpid(), started_by=time.time() - 10**6)
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert not process_alive(ended.pid)


def _wait_until_zombie(pid: int) -> None:
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_zombie_is_not_alive_and_a_group_of_zombies_is_gone():
    """PID 1 of a container may never reap a re-parented member; killpg(pgid, 0) succeeds on
    zombies, so stop_group waited its whole grace period, killed, and waited again."""
    from cultivar_assets.processes import _group_alive, process_alive, stop_group

    zombie = subprocess.Popen(["true"], start_new_session=True)  # never reaped until the end
    try:
        _wait_until_zombie(zombie.pid)
        assert not process_alive(zombie.pid)
        assert not _group_alive(zombie.pid)
        started = time.monotonic()
        stop_group(zombie.pid, grace=30.0)
        assert time.monotonic() - started < 2
    finally:
        zombie.wait()


def test_interruptions_remember_a_signal_another_handler_took():
    """Dagster replaces the SIGINT/SIGTERM handlers while it executes a run and turns the signal
    into a failed run: the runner must still know it was asked to stop."""
    from cultivar_assets.processes import Interrupted, interruptions

    # what this process had before (an earlier test in the same process may have left another
    # handler than the interpreter's defaults): interruptions() must put exactly that back
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    with interruptions() as signals:
        signals.check()  # nothing received yet
        taken = []
        previous = signal.signal(signal.SIGTERM, lambda signum, _frame: taken.append(signum))
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        signal.signal(signal.SIGTERM, previous)
        assert taken == [signal.SIGTERM]
        with pytest.raises(Interrupted) as raised:
            signals.check()
        assert raised.value.signum == signal.SIGTERM
        with pytest.raises(Interrupted) as raised:  # and our own handler raises at once
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        assert raised.value.signum == signal.SIGINT
    assert signal.getsignal(signal.SIGTERM) is before[signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
