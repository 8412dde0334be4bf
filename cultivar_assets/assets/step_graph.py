"""The pipeline's steps derived from the asset graph: each asset declares its step and inputs
next to its definition (:func:`step_inputs`, above ``@dg.asset``), and :func:`step_graph` groups
a list of assets into steps, orders them by Dagster's asset dependencies and hands the result
down as plain data (:class:`cultivar_assets.steps.plan.StepGraph`).

Our rules: a step is the assets declaring it, which must share their partitioning (one
``PartitionsDefinition``, partitioned exactly when the step is); a step reads the steps holding
the assets its assets depend on (an asset that declares no step, such as the external
``run_failures``, is no step's); the steps come in dependency order, ties in the order of the
list, and a step that reads every other step comes last; a step's assets in dependency order,
ties by key. A cycle between steps is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import dagster as dg

from cultivar_assets.steps.declarations import StepInputs, StepNode
from cultivar_assets.steps.plan import StepGraph

# the declarations, by asset key (asset definitions are copied by with_attributes: a mapping
# keyed by the asset survives that, an attribute on the object would not)
_DECLARED: dict[str, StepInputs] = {}


class StepGraphError(ValueError):
    """The assets' declarations do not make steps (module docstring)."""


def step_inputs(declared: StepInputs) -> Callable[[dg.AssetsDefinition], dg.AssetsDefinition]:
    """Declare, above ``@dg.asset``, the asset's step and what its outputs depend on besides
    its upstream assets (:class:`cultivar_assets.steps.declarations.StepInputs`)."""

    def attach(asset: dg.AssetsDefinition) -> dg.AssetsDefinition:
        _DECLARED[asset.key.to_user_string()] = declared
        return asset

    return attach


def declared_inputs(asset: dg.AssetsDefinition) -> StepInputs | None:
    """What ``asset`` declares (None: it belongs to no step)."""
    return _DECLARED.get(asset.key.to_user_string())


def step_graph(assets: Iterable[dg.AssetsDefinition]) -> StepGraph:
    """The steps of ``assets`` (module docstring)."""
    assets = list(assets)
    groups: dict[str, list[tuple[dg.AssetsDefinition, StepInputs]]] = {}
    step_of: dict[str, str] = {}
    for asset in assets:
        declared = declared_inputs(asset)
        if declared is None:
            continue
        name = asset.key.to_user_string()
        members = groups.setdefault(declared.step.name, [])
        if members and members[0][1].step is not declared.step:
            raise StepGraphError(f"two steps are named {declared.step.name}")
        if members and members[0][0].partitions_def != asset.partitions_def:
            raise StepGraphError(f"the assets of the step {declared.step.name} are partitioned "
                                 f"differently ({members[0][0].key.to_user_string()}, {name})")
        if (asset.partitions_def is None) != (declared.step.partitions is None):
            which = ("is not partitioned, its step {} is" if asset.partitions_def is None
                     else "is partitioned, its step {} is not")
            raise StepGraphError(f"{name} {which.format(declared.step.name)}")
        members.append((asset, declared))
        step_of[name] = declared.step.name
    reads: dict[str, list[str]] = {}
    for step, members in groups.items():
        upstream = [step_of[key.to_user_string()] for asset, _ in members
                    for key in sorted(asset.dependency_keys, key=str)
                    if key.to_user_string() in step_of]
        reads[step] = list(dict.fromkeys(name for name in upstream if name != step))
    nodes = []
    for name in _ordered(groups, reads):
        members = _in_dependency_order(groups[name])
        nodes.append(StepNode(members[0][1].step,
                              tuple(asset.key.to_user_string() for asset, _ in members),
                              tuple(reads[name]), tuple(declared for _, declared in members)))
    return StepGraph(tuple(nodes))


def _in_dependency_order(members: list[tuple[dg.AssetsDefinition, StepInputs]]
                         ) -> list[tuple[dg.AssetsDefinition, StepInputs]]:
    """A step's assets in dependency order, ties by key: the same order however the list of
    assets was ordered (a step's fingerprint holds it; a Dagster run's repository may list
    the assets in another order than the runner)."""
    keys = {asset.key for asset, _ in members}
    ordered: list[tuple[dg.AssetsDefinition, StepInputs]] = []
    pending = sorted(members, key=lambda member: member[0].key.to_user_string())
    while pending:
        done = {asset.key for asset, _ in ordered}
        ready = next(member for member in pending
                     if all(key in done for key in set(member[0].dependency_keys) & keys))
        ordered.append(ready)
        pending.remove(ready)
    return ordered


def _ordered(groups: dict[str, list], reads: dict[str, list[str]]) -> list[str]:
    """The steps in dependency order, ties in the order of ``groups``; the steps that read
    every other step last."""
    last = [name for name, members in groups.items() if members[0][1].step.reads_every_other_step]
    order: list[str] = []
    pending = [name for name in groups if name not in last]
    while pending:
        ready = next((name for name in pending
                      if all(up in order or up in last for up in reads[name])), None)
        if ready is None:
            raise StepGraphError(f"the steps {', '.join(pending)} depend on each other")
        order.append(ready)
        pending.remove(ready)
    return order + last


def run_step_graph(context: dg.AssetExecutionContext) -> StepGraph:
    """The steps of the run's whole asset graph (every asset of its definitions, not only those
    its job selects; listed in no particular order)."""
    graph = context.job_def.asset_layer.asset_graph
    return step_graph(getattr(graph, "source_asset_graph", graph).assets_defs)
