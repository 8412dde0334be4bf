"""Reusing unchanged steps instead of running them again.

A step of a pipeline run (:mod:`cultivar_assets.runner.steps`) is *reused* when

- it can be reused at all (``PlannedStep.always_runs`` is None);
- the database holds a record of its last successful run (:mod:`cultivar_assets.store.
  step_records`) whose inputs fingerprint equals its fingerprint now: the hash of its inputs
  and of the tokens of the current records of the steps whose outputs it reads, so a step that
  ran again (in this pipeline run, or in an earlier one that stopped half-way) makes every step
  reading it run too;
- its output files are as that run left them (the same listing digest).

Otherwise its record is forgotten before it runs (a failed run leaves none) and a new one, with a
new token, is stored when it has succeeded. Records survive only the runner's own writes
(:func:`cultivar_assets.store.database.recording_steps`): anything else that writes to the
database forgets them all, and every step runs again.
"""

from __future__ import annotations

from dataclasses import dataclass

from cultivar_assets.runner.steps import PlannedStep
from cultivar_assets.store.database import Store
from cultivar_assets.store.step_records import (
    StepRecord,
    forget_step_record,
    new_record,
    put_step_record,
    read_step_records,
)


@dataclass(frozen=True)
class Decision:
    reuse: bool
    fingerprint: str
    reason: str  # why the step runs, or since when it is unchanged
    record: StepRecord | None  # the record it was compared with


def _when(record: StepRecord) -> str:
    return f"{record.recorded_at:%Y-%m-%d %H:%M:%S} UTC"


class StepBook:
    """The step records of one database during one pipeline run."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.records = read_step_records(store)

    def decide(self, step: PlannedStep) -> Decision:
        """Reuse ``step`` or run it, and why (module docstring)."""
        tokens = {key: self.records[key].token if key in self.records else None
                  for key in step.upstream}
        fingerprint = step.fingerprint(tokens)
        record = self.records.get(step.key)
        if step.always_runs:
            return Decision(False, fingerprint, f"runs every time: {step.always_runs}", record)
        if record is None:
            return Decision(False, fingerprint, "no record of an earlier run", None)
        if record.inputs != fingerprint:
            return Decision(False, fingerprint, "runs again: its inputs, or a step whose outputs "
                            f"it reads, changed since its run of {_when(record)}", record)
        if record.outputs != step.outputs_digest():
            return Decision(False, fingerprint, "runs again: its output files changed or are "
                            f"missing since its run of {_when(record)}", record)
        return Decision(True, fingerprint, f"unchanged since its run of {_when(record)}, reused",
                        record)

    def starting(self, step: PlannedStep) -> None:
        """Forget the step's record before it runs."""
        if self.records.pop(step.key, None) is not None:
            forget_step_record(self.store, step.key)

    def finished(self, step: PlannedStep, decision: Decision, seconds: float) -> StepRecord:
        """Record a successful run of ``step`` (with the fingerprint it was decided with)."""
        record = new_record(step.key, decision.fingerprint, step.outputs_digest(), seconds)
        put_step_record(self.store, record)
        self.records[step.key] = record
        return record
