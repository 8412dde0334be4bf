"""The pipeline runner's step records (``raw.step_records``, view ``step_records``).

A *step record* says that a step of a pipeline run (``cultivar demo``, ``cultivar run``) last
succeeded with inputs whose fingerprint is ``inputs`` and left output files whose listing digest
is ``outputs``; ``token`` is unique to that run of the step, and the fingerprints of the steps
that read its outputs include it. How the runner uses them: :mod:`cultivar_assets.runner.reuse`.
Records are written only inside :func:`cultivar_assets.store.database.recording_steps`; any other
write to the database, and any write of a run that finds that another writer wrote since the run
last saw the file, forgets all of them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from cultivar_assets.store.database import Step, Store, saw_generation


@dataclass(frozen=True)
class StepRecord:
    step: str
    inputs: str  # sha256 of the step's inputs when it ran
    outputs: str  # sha256 of the listing of the files it wrote, right after it ran
    token: str  # unique per recorded run of the step
    seconds: float  # how long that run took
    recorded_at: datetime  # UTC, naive


def read_step_records(store: Store) -> dict[str, StepRecord]:
    """Step -> its record; empty when the database does not exist or holds no records yet."""
    return read_step_records_at(store)[1]


def read_step_records_at(store: Store) -> tuple[int, dict[str, StepRecord]]:
    """The file's write generation and its step records, read in one read-only connection
    (while it is open no other process can write, so the two belong together); inside
    :func:`~cultivar_assets.store.database.recording_steps` the run notes the generation as
    the one it has seen."""
    if not store.path.exists():
        generation, rows = 0, []
    else:
        with store.reader() as reader:
            try:
                rows = reader.rows("read_step_records")
            except duckdb.CatalogException:  # a file set up before step records existed
                rows = []
            try:
                state = reader.rows("read_write_state")
            except duckdb.CatalogException:  # ... or before the write generation was kept
                state = []
        generation = state[0]["generation"] if state else 0
    saw_generation(store.path, generation)
    return generation, {row["step"]: StepRecord(**row) for row in rows}


def new_record(step: str, inputs: str, outputs: str, seconds: float) -> StepRecord:
    """A record of a run of ``step`` that finished now, with a fresh token."""
    return StepRecord(step, inputs, outputs, uuid.uuid4().hex, seconds,
                      datetime.now(UTC).replace(tzinfo=None))


def put_step_record(store: Store, record: StepRecord) -> None:
    """Store ``record``, replacing the step's previous one."""
    store.write([Step("put_step_record", records=True, params={
        "step": record.step, "inputs": record.inputs, "outputs": record.outputs,
        "token": record.token, "seconds": record.seconds, "recorded_at": record.recorded_at})])


def forget_step_record(store: Store, step: str) -> None:
    """Remove the record of ``step`` (before it runs: a failed run leaves none)."""
    store.write([Step("forget_step_record", params={"step": step})])
