"""Step records (``raw.step_records``, view ``step_records``) and what Dagster runs note of the
steps they are doing (``raw.step_runs``).

A *step record* says that a step of the pipeline (``cultivar demo``, ``cultivar run``, or a
Dagster run launched from the UI, a sensor or a schedule that materialised the whole step) last
succeeded with inputs whose fingerprint is ``inputs`` and left output files whose listing digest
is ``outputs``; ``token`` is unique to that run of the step, and the fingerprints of the steps
that read its outputs include it; ``input_values`` holds the inputs themselves, flattened
(:mod:`cultivar_assets.steps.changes`; registered secrets redacted; None in records of older
releases), so that a step that
runs again can say which changed. How they are used: :mod:`cultivar_assets.steps.reuse` (the
runner), :mod:`cultivar_assets.steps.launched_runs` (Dagster runs). Which writes keep them:
:mod:`cultivar_assets.store.database`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from cultivar_assets.secrets import redact
from cultivar_assets.store.database import Step, Store, saw_generation


@dataclass(frozen=True)
class StepRecord:
    step: str
    inputs: str  # sha256 of the step's inputs when it ran
    outputs: str  # sha256 of the listing of the files it wrote, right after it ran
    token: str  # unique per recorded run of the step
    seconds: float  # how long that run took
    recorded_at: datetime  # UTC, naive
    input_values: dict[str, Any] | None = None  # the inputs, flattened; None: an older record
    run_id: str | None = None  # the Dagster run that recorded it (the runner's or another)


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
            try:  # opening migrated a file of an older schema version
                rows = reader.rows("read_step_records")
            except duckdb.CatalogException:  # a file that holds no tables yet
                rows = []
            try:
                state = reader.rows("read_write_state")
            except duckdb.CatalogException:  # ... the same
                state = []
        generation = state[0]["generation"] if state else 0
    saw_generation(store.path, generation)
    return generation, {row["step"]: _record(row) for row in rows}


def _record(row: dict[str, Any]) -> StepRecord:
    values = row.pop("input_values", None)
    return StepRecord(**row, input_values=json.loads(values) if values else None)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_record(step: str, inputs: str, outputs: str, seconds: float,
               input_values: dict[str, Any] | None = None,
               run_id: str | None = None) -> StepRecord:
    """A record of a run of ``step`` that finished now, with a fresh token."""
    return StepRecord(step, inputs, outputs, uuid.uuid4().hex, seconds, _now(), input_values,
                      run_id)


def _params(record: StepRecord) -> dict[str, Any]:
    return {"step": record.step, "inputs": record.inputs, "outputs": record.outputs,
            "token": record.token, "seconds": record.seconds, "recorded_at": record.recorded_at,
            "input_values": None if record.input_values is None else redact(json.dumps(
                record.input_values, sort_keys=True, ensure_ascii=False, default=str)),
            "run_id": record.run_id}


def put_step_record(store: Store, record: StepRecord) -> None:
    """Store ``record``, replacing the step's previous one."""
    store.write([Step("put_step_record", records=True, params=_params(record))])


def forget_step_record(store: Store, step: str) -> None:
    """Remove the record of ``step`` (before it runs: a failed run leaves none)."""
    store.write([Step("forget_step_record", params={"step": step})])


def start_step_run(store: Store, step: str, run_id: str, asset: str, inputs: str) -> None:
    """Note that ``asset`` of ``step`` starts in the Dagster run ``run_id``, when the step's
    fingerprint is ``inputs`` (made inside :func:`~cultivar_assets.store.database.
    writing_for_steps`, this write also forgets the step's record)."""
    store.write([Step("start_step_run", params={
        "step": step, "run_id": run_id, "asset": asset, "inputs": inputs,
        "started_at": _now()})])


def finish_step_run(store: Store, record: StepRecord, asset: str,
                    assets: Sequence[str]) -> bool:
    """Note that ``asset`` of ``record.step`` succeeded in the Dagster run ``record.run_id``;
    when every one of the step's ``assets`` is done in that run, each noted with the
    fingerprint ``record.inputs``, store ``record`` (its seconds: since the run's first asset of
    the step started). True when the record was stored."""
    store.write([Step("finish_step_run", records=True, params={
        **_params(record), "asset": asset, "assets": list(assets)})])
    stored = read_step_records(store).get(record.step)
    return stored is not None and stored.token == record.token
