"""What Dagster reports as stale or missing: the set that the UI's "Materialize changed and
missing" selects, read from Dagster's own stale-status resolver
(``dagster._core.definitions.data_version.CachingStaleStatusResolver``)."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.data_version import (
    CachingStaleStatusResolver,
    StaleCause,
    StaleStatus,
)
from dagster._core.loader import LoadingContextForTest

NEVER_MATERIALISED = "never materialised"


def _cause_text(cause: StaleCause, key: dg.AssetKey, partition: str | None) -> str:
    """One stale cause as text: its reason, prefixed by the asset (partition) it concerns when
    that is not the asset asked about, and followed by the dependency it names."""
    text = cause.reason
    if cause.key.asset_key != key or cause.key.partition_key != partition:
        text = f"{_name(cause.key)}: {text}"
    if cause.dependency is not None:
        text = f"{text} ({_name(cause.dependency)})"
    return text


def _name(key) -> str:
    """An ``AssetKeyPartitionKey`` as ``asset`` or ``asset [partition]``."""
    name = key.asset_key.to_user_string()
    return f"{name} [{key.partition_key}]" if key.partition_key else name


def stale_assets(defs: dg.Definitions, instance: dg.DagsterInstance,
                 ) -> dict[tuple[str, str | None], list[str]]:
    """Every materialisable asset of ``defs`` (each partition of a partitioned one, as the
    instance knows its partitions) that Dagster reports as stale or missing in ``instance``:
    ``(asset key as user string, partition or None) -> its stale causes as text`` (a missing
    one: ``["never materialised"]``). Fresh ones are left out."""
    graph = defs.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    found: dict[tuple[str, str | None], list[str]] = {}
    for key in sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string()):
        partitions_def = graph.get(key).partitions_def
        partitions: list[str | None] = (
            list(partitions_def.get_partition_keys(dynamic_partitions_store=instance))
            if partitions_def is not None else [None])
        for partition in partitions:
            status = resolver.get_status(key, partition)
            if status == StaleStatus.MISSING:
                found[(key.to_user_string(), partition)] = [NEVER_MATERIALISED]
            elif status == StaleStatus.STALE:
                found[(key.to_user_string(), partition)] = [
                    _cause_text(cause, key, partition)
                    for cause in resolver.get_stale_causes(key, partition)]
    return found
