"""What the publication reads from the DuckDB store (named queries in ``sql/reads.sql``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cultivar_assets.store.database import Store


@dataclass(frozen=True)
class DatasetInfo:
    """The stored dataset's identity (one row of ``raw.dataset``)."""

    fingerprint: str
    source: str
    is_demo: bool
    kind: str | None = None  # the data kind it was loaded as; None: not recorded (older files)
    # for the data kind built: its build's provenance record (data/build_record.py)
    build_provenance: dict[str, Any] | None = None


@dataclass(frozen=True)
class PublishData:
    """What the folder is built from: the dataset, its locales and their instances."""

    info: DatasetInfo
    locales: list[dict[str, Any]]  # rows of the publish_locales query, by locale key
    instances: dict[str, list[dict[str, Any]]]  # locale -> rows of the instances query, by id
    # Table 1 computed from the annotation files, for the locales that are the project's own
    # build (rows of the built_annotation_summary query); empty for other data
    annotation_summary: list[dict[str, Any]] = field(default_factory=list)
    # (locale, id) -> provenance of the project's own build (instance_provenance view)
    provenance: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def locale_provenance(self, locale: str) -> list[dict[str, Any]] | None:
        """The provenance of every instance of ``locale``, or None when any lacks it."""
        rows = [self.provenance.get((locale, r["instance_id"])) for r in self.instances[locale]]
        return None if any(r is None for r in rows) else rows  # type: ignore[return-value]


def read_dataset_info(store: Store) -> DatasetInfo:
    rows = store.query("dataset")
    if not rows:
        raise LookupError(f"{store.path} holds no dataset; materialise test_sets first")
    row = rows[0]
    provenance = json.loads(row["build_provenance"]) if row.get("build_provenance") else None
    return DatasetInfo(row["fingerprint"], row["source"], bool(row["is_demo"]), row.get("kind"),
                       provenance)


def read_locales(store: Store) -> list[dict[str, Any]]:
    """The locales that have instances, with their registry entry and ``n_instances``."""
    return store.query("publish_locales")


def read_annotation_summary(store: Store) -> list[dict[str, Any]]:
    """Table 1 as computed from the annotation files, for the loaded locales that are the
    project's own build (``built_annotation_summary`` in ``sql/dataset.sql``)."""
    return store.query("built_annotation_summary")


def read_publish_data(store: Store) -> PublishData:
    info = read_dataset_info(store)
    instances: dict[str, list[dict[str, Any]]] = {}
    for row in store.query("instances"):
        instances.setdefault(row["locale"], []).append(row)
    provenance = {(r["locale"], r["instance_id"]): r for r in store.query("instance_provenance")}
    return PublishData(info, read_locales(store), instances, read_annotation_summary(store),
                       provenance)
