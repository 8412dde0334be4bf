"""Dagster's own stale status of the assets, as the UI shows it: :func:`stale_assets`.

Dagster's rules (``dagster._core.definitions.data_version.CachingStaleStatusResolver``): an
asset (or one partition of it) is MISSING until it is materialised; it is STALE when its code
version differs from the one its last materialisation recorded, or when a dependency (an asset,
or a source asset by its latest observation) has a data version other than the one that
materialisation read, or a dependency was added or removed. Staleness is not passed down: an
asset below a stale one becomes stale once the stale one is materialised again with another data
version (an unchanged data version leaves it fresh).

Source and external assets (observed: :func:`observe_sources`, or reported by a sensor) are
neither stale nor missing and are not listed; a partitioned asset is listed per partition key
of its partitions definition (dynamic ones as the instance holds them).
"""

from __future__ import annotations

import dagster as dg
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import (
    CachingStaleStatusResolver,
    StaleCause,
    StaleStatus,
)
from dagster._core.definitions.observe import observe
from dagster._time import get_current_datetime

NEVER_MATERIALISED = "never materialised"


def _where(key) -> str:
    """``asset`` or ``asset[partition]`` of an AssetKeyPartitionKey."""
    name = key.asset_key.to_user_string()
    return f"{name}[{key.partition_key}]" if key.partition_key else name


def cause_text(cause: StaleCause) -> str:
    """One line: what changed (``has a new code version``; ``has a new dependency data version:
    settings/metrics``)."""
    return f"{cause.reason}: {_where(cause.dependency)}" if cause.dependency else cause.reason


def observe_sources(defs: dg.Definitions, instance) -> None:
    """Observe every observable source asset of ``defs`` (in process, with ``defs``' resources;
    one run per partitions definition), so that their data versions are what is on disk and in
    the settings now; a failed observation raises."""
    groups: dict[object, list[dg.SourceAsset]] = {}
    for asset in defs.assets or ():
        if isinstance(asset, dg.SourceAsset) and asset.is_observable:
            groups.setdefault(asset.partitions_def, []).append(asset)
    for sources in groups.values():
        observe(sources, instance=instance, resources=defs.resources)


def stale_resolver(defs: dg.Definitions, instance) -> CachingStaleStatusResolver:
    """Dagster's stale-status resolver over ``defs``' asset graph and ``instance``'s records."""
    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance, asset_graph=graph)
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)


def stale_assets(defs: dg.Definitions, instance) -> dict[tuple[str, str | None], list[str]]:
    """Every materialisable asset (per partition) that Dagster reports STALE or MISSING, keyed by
    (asset key as a user string, partition key or None), with its causes in words (Dagster's
    ``get_stale_causes``; ``never materialised`` for a MISSING one): module docstring."""
    resolver = stale_resolver(defs, instance)
    graph = resolver.asset_graph
    found: dict[tuple[str, str | None], list[str]] = {}
    for key in sorted(graph.materializable_asset_keys):
        node = graph.get(key)
        partitions = ([None] if node.partitions_def is None else
                      node.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
        for partition in partitions:
            status = resolver.get_status(key, partition)
            if status == StaleStatus.MISSING:
                found[(key.to_user_string(), partition)] = [NEVER_MATERIALISED]
            elif status == StaleStatus.STALE:
                found[(key.to_user_string(), partition)] = [
                    cause_text(cause) for cause in resolver.get_stale_causes(key, partition)]
    return found
