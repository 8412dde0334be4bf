"""Runs left "in progress" in a Dagster instance after every process that ran them has ended.

Definitions (ours): a run is *unfinished* when its status is STARTING, STARTED or CANCELING
(QUEUED and NOT_STARTED runs have no process yet: the daemon launches a queued run when it runs
again, so they are left as they are). The *processes of a run* are those that wrote its events
(each Dagster event records its writer's PID and time: the webserver or daemon that launched it,
the run worker, step processes, or the ``cultivar run`` process that ran it in-process). An
unfinished run is *orphaned* when none of its processes is alive (a process counts only if it
started before it wrote the event, so a PID used again does not) and, when it has no process
recorded, the code server it was launched through (the tag ``.dagster/grpc_info``) no longer
accepts connections.

:func:`mark_orphaned_runs` records each orphaned run as FAILURE, or CANCELED when its
cancellation had been asked for (CANCELING), with the reason given, so that no run stays
"started" in the run storage after ``cultivar ui`` stopped or was killed.
"""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import dataclass

from cultivar_assets.processes import process_alive

GRPC_INFO_TAG = ".dagster/grpc_info"


@dataclass(frozen=True)
class MarkedRun:
    run_id: str
    job_name: str
    was: str  # its status before: STARTING, STARTED or CANCELING
    now: str  # FAILURE or CANCELED


def _unfinished_statuses():
    import dagster as dg

    return [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
            dg.DagsterRunStatus.CANCELING]


def _server_answers(grpc_info: str | None) -> bool:
    """Whether the code server named by a run's ``.dagster/grpc_info`` tag accepts a
    connection (a Unix socket or host and port)."""
    if not grpc_info:
        return False
    try:
        info = json.loads(grpc_info)
    except ValueError:
        return False
    if info.get("socket"):
        address, family = info["socket"], socket.AF_UNIX
    elif info.get("port"):
        address, family = (info.get("host") or "localhost", int(info["port"])), socket.AF_INET
    else:
        return False
    with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(address)
        except OSError:
            return False
    return True


def is_orphaned(instance, run) -> bool:
    """Whether the unfinished ``run`` of ``instance`` is orphaned (module docstring)."""
    first_seen: dict[int, float] = {}  # pid -> time of its first event for this run
    for record in instance.all_logs(run.run_id):
        pid = record.dagster_event.pid if record.dagster_event else None
        if pid is not None and pid not in first_seen:
            first_seen[pid] = record.timestamp
    if first_seen:
        return not any(process_alive(pid, started_by=at) for pid, at in first_seen.items())
    return not _server_answers(run.tags.get(GRPC_INFO_TAG))


def orphaned_runs(instance) -> list:
    """The orphaned runs of ``instance``, oldest first."""
    import dagster as dg

    runs = instance.get_runs(filters=dg.RunsFilter(statuses=_unfinished_statuses()))
    return [run for run in reversed(list(runs)) if is_orphaned(instance, run)]


def mark_orphaned_runs(instance, reason: str) -> list[MarkedRun]:
    """Record every orphaned run of ``instance`` as FAILURE (CANCELED when it was CANCELING),
    with ``reason`` as the event's message; the runs marked, oldest first."""
    import dagster as dg

    marked = []
    for run in orphaned_runs(instance):
        if run.status == dg.DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message=reason)
        else:
            instance.report_run_failed(run, message=reason)
        now = instance.get_run_by_id(run.run_id).status
        marked.append(MarkedRun(run.run_id, run.job_name, run.status.value, now.value))
    return marked


def queued_runs(instance) -> int:
    """How many runs of ``instance`` wait in the queue (the daemon launches them when it runs)."""
    import dagster as dg

    return instance.get_runs_count(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.QUEUED]))


def describe(marked: list[MarkedRun]) -> str:
    """One line per marked run."""
    return "\n".join(f"  run {m.run_id} ({m.job_name}): {m.was} -> {m.now}" for m in marked)
