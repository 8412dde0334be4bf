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

Other writers, while this run goes on (the database's write generation,
:mod:`cultivar_assets.store.database`): before each decision the book compares the file's
generation with the one this run last saw; when another process wrote in between, it reads the
records again (what the other writer left: none, or those of a pipeline run that finished
without interruption). When another writer wrote while a step ran, the step's writes empty the
records and :meth:`StepBook.finished` records nothing and says so (``None``): the run cannot
vouch for what that step left.
"""

from __future__ import annotations

from dataclasses import dataclass

from cultivar_assets.runner.steps import PlannedStep
from cultivar_assets.store.database import Store, recording_interrupted, seen_generation
from cultivar_assets.store.step_records import (
    StepRecord,
    forget_step_record,
    new_record,
    put_step_record,
    read_step_records_at,
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
        self.records = read_step_records_at(store)[1]
        self._interruptions = recording_interrupted()

    def refresh(self) -> bool:
        """Read the records again when another process wrote to the file since this run last
        saw it; True when it had."""
        if self.store.generation() == seen_generation(self.store.path):
            return False
        self.records = read_step_records_at(self.store)[1]
        return True

    def decide(self, step: PlannedStep) -> Decision:
        """Reuse ``step`` or run it, and why (module docstring)."""
        self.refresh()
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
        self._interruptions = recording_interrupted()
        if self.records.pop(step.key, None) is not None:
            forget_step_record(self.store, step.key)

    def finished(self, step: PlannedStep, decision: Decision,
                 seconds: float) -> StepRecord | None:
        """Record a successful run of ``step`` (with the fingerprint it was decided with); None,
        recording nothing, when another process wrote to the file while the step ran."""
        if recording_interrupted() == self._interruptions:
            record = new_record(step.key, decision.fingerprint, step.outputs_digest(), seconds)
            put_step_record(self.store, record)  # left out if another writer wrote just now
            if recording_interrupted() == self._interruptions:
                self.records[step.key] = record
                return record
        self.records = {}  # the interrupted write emptied them in the file
        return None
