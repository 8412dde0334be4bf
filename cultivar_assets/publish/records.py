"""What the publication reads from the DuckDB store (named queries in ``sql/reads.sql``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cultivar_assets.store.database import Store


@dataclass(frozen=True)
class DatasetInfo:
    """The stored dataset's identity (one row of ``raw.dataset``)."""

    fingerprint: str
    source: str
    is_demo: bool


@dataclass(frozen=True)
class PublishData:
    """What the folder is built from: the dataset, its locales and their instances."""

    info: DatasetInfo
    locales: list[dict[str, Any]]  # rows of the publish_locales query, by locale key
    instances: dict[str, list[dict[str, Any]]]  # locale -> rows of the instances query, by id


def read_dataset_info(store: Store) -> DatasetInfo:
    rows = store.query("dataset")
    if not rows:
        raise LookupError(f"{store.path} holds no dataset; materialise test_sets first")
    row = rows[0]
    return DatasetInfo(row["fingerprint"], row["source"], bool(row["is_demo"]))


def read_locales(store: Store) -> list[dict[str, Any]]:
    """The locales that have instances, with their registry entry and ``n_instances``."""
    return store.query("publish_locales")


def read_publish_data(store: Store) -> PublishData:
    info = read_dataset_info(store)
    instances: dict[str, list[dict[str, Any]]] = {}
    for row in store.query("instances"):
        instances.setdefault(row["locale"], []).append(row)
    return PublishData(info, read_locales(store), instances)
