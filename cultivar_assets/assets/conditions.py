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
