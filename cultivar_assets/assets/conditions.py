"""The automation conditions of the assets (evaluated by the ``cultivar_automation`` sensor), and
``run_failures``, the external asset that stands for the failure records the site shows.

``AFTER_NEW_RESULTS`` (ours, built from Dagster's operands; close to ``eager()``): an asset is
requested once one of its dependencies has been updated (or is requested in the same tick) since
the asset was last *handled*, and only when none of its dependencies and no run of its own is in
progress. So the results follow once per batch: while several models' runs are in flight, nothing
is requested; when the last of them has finished (or failed), the leaderboard and everything
below it that is due (error analysis, charts, site) are requested in the same tick, as one run.
The updates that run itself makes do not trigger its own assets again (Dagster ignores an
upstream update made by a run that also targeted the asset).

"Handled" differs from ``since_last_handled()`` in two points. A materialisation by a run that
the automation launched does not count, only the request that launched it: otherwise scores that
land while the leaderboard is being recomputed (a model run that started after it) would be
swallowed by that recomputation's materialisation, which read the database before they landed;
here they trigger one more recomputation. And an update seen on the tick after a request (it
landed after the request was made) wins over that request. A materialisation by any other run
(``cultivar run``, a launch from the UI) counts as handled, as does the first evaluation (no
flood of runs when the daemon starts). Unlike ``eager()``, a missing dependency does not
block: a model that was registered but never scored (or whose runs fail) must not keep the
leaderboard from following the others.

The site's parts have conditions of their own, and the site waits for them, so that the site
assembles parts written by their assets (``models_made_here`` empty) rather than making them:

- ``AFTER_LOADED_SCORES`` (``model_site``, per model): a partition is *due* once its model's
  ``scores`` partition, ``test_sets`` or a settings section it reads has been updated since the
  partition was handled, or once the partition is newly missing (a model's partition added to
  ``models``), and never while its ``scores`` partition or ``test_sets`` is missing (a model not
  scored yet). After new scores it also waits until ``model_results`` has been updated since
  them (``model_site`` reads the model's rows, which only ``model_results`` loads; it is not a
  dependency, which would make every part stale whenever any model's rows are loaded). Not
  while a run of ``model_results``, a dependency or itself is in progress. So a new model's part
  is requested on the tick after the results run, that model's partition alone; a new dataset
  requests every model's part.
- ``AFTER_NEW_DATASET`` (``locale_shards``, made from the dataset alone): due as above (its
  dependencies are ``test_sets`` and the settings section ``site``), so new results do not
  request it.
- ``AFTER_NEW_RESULTS_AND_PARTS`` (``site``): ``AFTER_NEW_RESULTS`` and no ``model_site``
  partition and not ``locale_shards`` due. A new model's results therefore take three runs:
  the results (``model_results`` to ``charts``), the model's part, the site.

Partitions that are missing when the sensor first evaluates (parts never written) are not
requested, like ``eager()``'s: the site makes their files (``models_made_here``) until a run
writes them.
"""

import dagster as dg

AUTOMATION_RUN_TAG = "dagster/from_automation_condition"  # Dagster's tag on the runs it launches

_UPDATED = dg.AutomationCondition.any_deps_updated()
_HANDLED = (
    (dg.AutomationCondition.newly_requested() & ~_UPDATED)
    | (dg.AutomationCondition.newly_updated()
       & ~dg.AutomationCondition.executed_with_tags(tag_keys={AUTOMATION_RUN_TAG}))
    | dg.AutomationCondition.initial_evaluation()
).with_label("requested, or updated by a run the automation did not launch")

AFTER_NEW_RESULTS = (
    _UPDATED.since(_HANDLED)
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("after new results, once per batch")

# The site's parts: ``model_site`` (per model) and ``locale_shards`` (from the dataset). Named by
# key: their assets import this module.
MODEL_RESULTS, MODEL_PARTS = "model_results", ("model_site", "locale_shards")

# due: a dependency updated, or the partition newly missing (a model's partition added), since
# the asset was last handled; never while its scores or the test sets are missing (a model not
# scored yet). (Other dependencies, the settings sections, are observed, not materialised.)
_DUE = (
    (dg.AutomationCondition.newly_missing() | _UPDATED).since(_HANDLED)
    & ~dg.AutomationCondition.any_deps_missing().allow(
        dg.AssetSelection.assets("scores", "test_sets"))
).with_label("new upstream data or newly missing, since handled; scores and test sets present")
_IDLE = ~dg.AutomationCondition.any_deps_in_progress() & ~dg.AutomationCondition.in_progress()

# a model's scores partition updated after model_results last updated: the database does not
# hold the model's new files yet (model_site refuses to run until it does)
_AWAITING_LOAD = dg.AutomationCondition.any_deps_updated().allow(
    dg.AssetSelection.assets("scores")).since(
    dg.AutomationCondition.asset_matches(MODEL_RESULTS, dg.AutomationCondition.newly_updated())
).with_label("scores updated since model_results last updated")

AFTER_NEW_DATASET = (_DUE & _IDLE).with_label("after a new dataset, or newly missing")

# a run of model_results in progress (it may be loading the model's files)
_RESULTS_RUNNING = dg.AutomationCondition.asset_matches(
    MODEL_RESULTS, dg.AutomationCondition.in_progress()).with_label("model_results in progress")

AFTER_LOADED_SCORES = (_DUE & ~_AWAITING_LOAD & ~_RESULTS_RUNNING & _IDLE).with_label(
    "after new scores are loaded or a new dataset, or newly missing")

AFTER_NEW_RESULTS_AND_PARTS = (
    AFTER_NEW_RESULTS
    & ~dg.AutomationCondition.any_deps_match(_DUE).allow(dg.AssetSelection.assets(*MODEL_PARTS))
).with_label("after new results, once per batch, once no part of the site is due")

# Failed runs are recorded in the database by the run-failure sensor (raw.run_failures), which
# reports a materialisation of this asset for each failed run of a model: the site depends on
# it, so a model whose run failed is shown as such without waiting for other results.
run_failures = dg.AssetsDefinition(specs=[dg.AssetSpec(
    "run_failures",
    group_name="operations",
    kinds={"duckdb"},
    description="Failed runs of models, recorded by the run_failure_recorder sensor (views "
                "run_failures, failed_models); not materialised by a run.",
)])  # external (no function), an AssetsDefinition like every member of ASSETS
