"""Step records for the runs that Dagster launches itself (the UI, a sensor, a schedule), so that
``cultivar run`` and those runs do not undo each other's work.

Our design: each asset of such a run, in the Dagster layer (:mod:`cultivar_assets.assets.
step_runs`), calls :func:`asset_starting` before it computes and :func:`asset_succeeded` after;
its writes in between, and these two, are made for its step
(:func:`cultivar_assets.store.database.writing_for_steps`: they forget that step's record and
no other). The step is the one of the settings' pipeline (:func:`cultivar_assets.steps.plan.
planned_step`, over the steps of the run's asset graph) that holds the asset and its partition,
with the settings that the run's
resources were configured with; its fingerprint is computed as the runner computes it, with the
upstream tokens of the records the file holds at the time.

- :func:`asset_starting` notes the asset in ``raw.step_runs`` with the step's fingerprint now
  (a write for the step: the step's record is forgotten, and so is what other runs noted of it).
- :func:`asset_succeeded` marks it done and, when every asset of the step is done in this run,
  each noted with the fingerprint the step has now, stores the step's record (inputs flattened,
  a new token, the run's id). A run that materialises only part of a step, fails, or during
  which the step's inputs or an upstream step's record changed, leaves the step without a
  record; so do another run's write for the same step, a runner's write during that step and
  any write made outside both, which delete the run's notes. The steps reading the step's
  outputs run again at the next ``cultivar run``: their fingerprints hold its token.
- A step that is not one of the settings' pipeline (a locale that is not configured, a model
  that is not selected) gets no record, and its writes are made for no step (they empty every
  record, as any other write does): the ``results`` step reads every registered model's scores
  without holding a token for the models the settings do not select. Steps that always run
  (unpinned Hub data, a configured push) get no record either.
"""

from __future__ import annotations

from dataclasses import dataclass

from cultivar_assets.settings import Settings
from cultivar_assets.steps.changes import input_values
from cultivar_assets.steps.plan import (
    PlannedStep,
    StepGraph,
    StepPlanError,
    planned_step,
    step_key,
)
from cultivar_assets.steps.reuse import upstream_tokens
from cultivar_assets.store.database import Store
from cultivar_assets.store.step_records import (
    StepRecord,
    finish_step_run,
    new_record,
    read_step_records,
    start_step_run,
)


@dataclass(frozen=True)
class AssetRun:
    """One asset (one partition) in a Dagster run launched outside the runner."""

    asset: str
    run_id: str
    key: str  # its step's key
    step: PlannedStep | None  # None: not a step of the settings' pipeline
    why_unrecorded: str | None  # why the step gets no record from this run (None: it may)

    @property
    def forgets(self) -> tuple[str, ...] | None:
        """The steps whose records this asset's writes forget; None: every record."""
        return None if self.step is None else (self.key,)


def asset_run(graph: StepGraph, settings: Settings, asset: str, partition: str | None,
              run_id: str, registered_models: list[str], unrecorded: str | None = None
              ) -> AssetRun:
    """``asset`` of ``partition`` in the run ``run_id`` with ``settings``, its step one of
    ``graph``'s (the steps of the run's asset graph; module docstring); ``unrecorded``: a reason
    of the caller's why the step may not be recorded (run config that the runner never sets)."""
    key = step_key(graph, asset, partition)
    try:
        step = planned_step(graph, settings, key, registered_models)
    except StepPlanError as error:
        return AssetRun(asset, run_id, key, None, str(error))
    why = unrecorded or (f"it always runs: {step.always_runs}" if step.always_runs else None)
    return AssetRun(asset, run_id, key, step, why)


def _fingerprint(store: Store, step: PlannedStep) -> tuple[str, dict]:
    tokens = upstream_tokens(step, read_step_records(store))
    return step.fingerprint(tokens), input_values(step.inputs, tokens)


def asset_starting(store: Store, run: AssetRun) -> None:
    """Before the asset computes (module docstring); call it inside ``writing_for_steps(run.
    forgets ...)``. A write for the step in every case: its record is forgotten."""
    if run.step is None or run.why_unrecorded:
        store.write([])  # the block's own statements: the records it forgets
        return
    start_step_run(store, run.key, run.run_id, run.asset, _fingerprint(store, run.step)[0])


def asset_succeeded(store: Store, run: AssetRun) -> StepRecord | None:
    """After the asset succeeded (module docstring): the step's record when this made it."""
    if run.step is None or run.why_unrecorded:
        return None
    fingerprint, values = _fingerprint(store, run.step)
    record = new_record(run.key, fingerprint, run.step.outputs_digest(), 0.0, values,
                        run.run_id)
    if not finish_step_run(store, record, run.asset, run.step.assets):
        return None
    return read_step_records(store)[run.key]
