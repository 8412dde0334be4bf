"""Reusing unchanged steps instead of running them again.

A step of a pipeline run (:mod:`cultivar_assets.steps.plan`) is *reused* when

- it can be reused at all (``PlannedStep.always_runs`` is None);
- the database holds a record of its last successful run (:mod:`cultivar_assets.store.
  step_records`) whose inputs fingerprint equals its fingerprint now: the hash of its inputs
  and of the tokens of the current records of the steps whose outputs it reads, so a step that
  ran again (in this pipeline run, or in an earlier one that stopped half-way) makes every step
  reading it run too;
- its output files are as that run left them (the same listing digest).

Otherwise its record is forgotten before it runs (a failed run leaves none) and a new one, with a
new token and its inputs flattened (:mod:`cultivar_assets.steps.changes`), is stored when it has
succeeded. The reason a step runs again names each input that changed since its record ("runs
again since its run of …: annotation file … changed; setting metrics.bleu_tokenize changed (13a
→ flores200)"); a
record of an older release, which holds no inputs, gets the general reason. Records survive
the runner's own writes (:func:`cultivar_assets.store.database.recording_steps`) and a Dagster
run's writes for other steps (:mod:`cultivar_assets.steps.launched_runs`, which also records
the steps such a run materialises whole); anything else that writes to the database forgets
them all, and every step runs again.

Other writers, while this run goes on (the database's write generation,
:mod:`cultivar_assets.store.database`): before each decision the book compares the file's
generation with the one this run last saw; when another process wrote in between, it reads the
records again (what the other writer left: none, or those of a pipeline run that finished
without interruption). Read again, the records of the steps this run has already run or reused
must be the ones it made or verified (the same tokens); when the other writer forgot or replaced
any of them, what those steps left may be the other writer's, and the book raises
:class:`ConcurrentWriteError` naming them. When another writer wrote while a step ran, the step's
writes empty the records and :meth:`StepBook.finished` records nothing and says so (``None``):
the run cannot vouch for what that step left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cultivar_assets.steps.changes import change_summary, changed_inputs, input_values
from cultivar_assets.steps.plan import PlannedStep
from cultivar_assets.store.database import (
    Store,
    recording_interrupted,
    running_step,
    seen_generation,
)
from cultivar_assets.store.step_records import (
    StepRecord,
    forget_step_record,
    new_record,
    put_step_record,
    read_step_records_at,
)


class ConcurrentWriteError(RuntimeError):
    """Another process wrote to the database during this pipeline run: the run cannot vouch
    for what the database holds (module docstring)."""


@dataclass(frozen=True)
class Decision:
    reuse: bool
    fingerprint: str
    reason: str  # why the step runs, or since when it is unchanged
    record: StepRecord | None  # the record it was compared with
    values: dict[str, Any] | None = None  # its inputs and upstream tokens, flattened


def upstream_tokens(step: PlannedStep, records: dict[str, StepRecord]) -> dict[str, str | None]:
    """The tokens of the records of the steps ``step`` reads (None: that step has none)."""
    return {key: records[key].token if key in records else None for key in step.upstream}


def changed_reason(record: StepRecord, values: dict[str, Any]) -> str:
    """Why a step whose fingerprint differs from ``record``'s runs again (module docstring)."""
    changes = changed_inputs(record.input_values, values) if record.input_values else []
    if not changes:
        return ("runs again: its inputs, or a step whose outputs it reads, changed since its "
                f"run of {_when(record)}")
    return f"runs again since its run of {_when(record)}: {change_summary(changes)}"


def _when(record: StepRecord) -> str:
    return f"{record.recorded_at:%Y-%m-%d %H:%M:%S} UTC"


class StepBook:
    """The step records of one database during one pipeline run."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.records = read_step_records_at(store)[1]
        self._interruptions = recording_interrupted()
        self.own: dict[str, str] = {}  # step -> token of the record this run made or verified

    def refresh(self) -> bool:
        """Read the records again when another process wrote to the file since this run last
        saw it; True when it had. :class:`ConcurrentWriteError` when the other writer forgot or
        replaced the record of a step this run has run or reused (module docstring)."""
        if self.store.generation() == seen_generation(self.store.path):
            return False
        self.records = read_step_records_at(self.store)[1]
        replaced = sorted(key for key, token in self.own.items()
                          if key not in self.records or self.records[key].token != token)
        if replaced:
            raise ConcurrentWriteError(
                f"another process wrote to the database {self.store.path} during this run and "
                f"forgot or replaced the record of {', '.join(replaced)}, which this run had "
                "run or reused: what the database holds may be that writer's, so this run's "
                "results are not shown. Run again once the other writer has finished")
        return True

    def decide(self, step: PlannedStep) -> Decision:
        """Reuse ``step`` or run it, and why (module docstring)."""
        self.refresh()
        tokens = upstream_tokens(step, self.records)
        fingerprint = step.fingerprint(tokens)
        values = input_values(step.inputs, tokens)
        record = self.records.get(step.key)
        if step.always_runs:
            return Decision(False, fingerprint, f"runs every time: {step.always_runs}", record,
                            values)
        if record is None:
            return Decision(False, fingerprint, "no record of an earlier run", None, values)
        if record.inputs != fingerprint:
            return Decision(False, fingerprint, changed_reason(record, values), record, values)
        if record.outputs != step.outputs_digest():
            return Decision(False, fingerprint, "runs again: its output files changed or are "
                            f"missing since its run of {_when(record)}", record, values)
        self.own[step.key] = record.token
        return Decision(True, fingerprint, f"unchanged since its run of {_when(record)}, reused",
                        record, values)

    def starting(self, step: PlannedStep) -> None:
        """Forget the step's record before it runs; the step's writes from now on also delete
        what Dagster runs noted of it."""
        self._interruptions = recording_interrupted()
        running_step(step.key)
        self.own.pop(step.key, None)
        if self.records.pop(step.key, None) is not None:
            forget_step_record(self.store, step.key)

    def finished(self, step: PlannedStep, decision: Decision, seconds: float,
                 run_id: str | None = None) -> StepRecord | None:
        """Record a successful run of ``step`` (with the fingerprint it was decided with, by the
        Dagster run ``run_id``); None, recording nothing, when another process wrote to the file
        while the step ran."""
        try:
            if recording_interrupted() == self._interruptions:
                record = new_record(step.key, decision.fingerprint, step.outputs_digest(),
                                    seconds, decision.values, run_id)
                put_step_record(self.store, record)  # left out if another writer wrote just now
                if recording_interrupted() == self._interruptions:
                    self.records[step.key] = record
                    self.own[step.key] = record.token
                    return record
            self.records = {}  # the interrupted write emptied them in the file
            return None
        finally:
            running_step(None)
