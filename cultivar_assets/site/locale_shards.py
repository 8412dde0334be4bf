"""The locale shards as a folder of their own: ``data/locales/<locale>.js`` of every present
locale (sources and references with their word diffs, :func:`.shards.locale_payload`).

They are made from the dataset alone (its instances, each locale's script, the originals
policy), not from any model's rows: the asset ``locale_shards`` writes them into a folder of
their own (:func:`write_locale_shards`), and the site build hard-links them into the site
(:func:`read_locale_shards` checks them against the database first) and takes the locale
pages' highlighted texts from them. Without such a folder the build makes the same files
itself.

The folder holds the files at their paths in the site and a manifest (``.cultivar-build.json``):
the locales, the files, the sha256 of each file's bytes (``digests``: the site's data version
is made from them without reading the files again) and what they were made from
(``made_from``: the dataset's fingerprint, the originals policy, each locale's script and the
shard format).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from cultivar_assets.files import read_manifest, replace_folder
from cultivar_assets.site import shards
from cultivar_assets.site.model_part import shown_originals
from cultivar_assets.store.database import Reader, Store
from cultivar_assets.textdiff import mode_for_script

KIND = "site-locales"


class LocaleShardsError(ValueError):
    """The locale shards' folder is missing, incomplete, or was made from another dataset or
    policy than the database now holds."""


def locale_instances(reader: Reader) -> dict[str, list[dict]]:
    """The instances of each present locale, in id order (the rows the shards are made of)."""
    instances: dict[str, list[dict]] = {}
    for row in reader.rows("instances"):
        instances.setdefault(row["locale"], []).append(row)
    return instances


def made_from(dataset: dict, scripts: dict[str, str], show_originals: bool) -> dict[str, Any]:
    """What the shards are made from besides the code (a manifest's ``made_from``):
    ``scripts``: each present locale's script."""
    return {"dataset": dataset.get("fingerprint"), "show_originals": show_originals,
            "scripts": dict(sorted(scripts.items())), "format": shards.FORMAT}


def shard_files(instances: dict[str, list[dict]], scripts: dict[str, str],
                show_originals: bool) -> dict[str, tuple[dict, bytes]]:
    """Path in the site -> (payload, file bytes) of every present locale's shard."""
    files = {}
    for locale in sorted(instances):
        payload = shards.locale_payload(locale, instances[locale], show_originals,
                                        mode_for_script(scripts[locale]))
        key = f"locale/{locale}"
        files[shards.shard_path(key)] = (payload, shards.encode_shard(key, payload))
    return files


def write_locale_shards(store: Store, folder: Path, show_originals: bool | None = None
                        ) -> dict[str, Any]:
    """Write every present locale's shard (module docstring) into ``folder`` (swapped in when
    complete: :func:`cultivar_assets.files.replace_folder`); its manifest. ``show_originals``:
    as :func:`cultivar_assets.site.build.build_site`'s (None: only for the demo data)."""
    with store.reader() as reader:
        dataset = (reader.rows("dataset") or [{}])[0]
        show = shown_originals(dataset, show_originals)
        instances = locale_instances(reader)
        scripts = {row["locale"]: row["script"] for row in reader.rows("site_locales")
                   if row["locale"] in instances}
    files = shard_files(instances, scripts, show)
    manifest: dict[str, Any] = {
        "kind": KIND, "locales": sorted(instances), "files": list(files),
        "digests": {path: hashlib.sha256(data).hexdigest() for path, (_, data) in files.items()},
        "made_from": made_from(dataset, scripts, show)}

    def write(work: Path) -> None:
        for path, (_, data) in files.items():
            target = work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    replace_folder(Path(folder), write, manifest)
    return manifest


def read_locale_shards(folder: str | Path, expected: dict[str, Any]) -> dict[str, Any]:
    """The manifest of the locale shards in ``folder``, checked: a missing folder, a missing
    file or unrecorded digest, or shards made from other than ``expected`` (:func:`made_from` of
    the database the site is built from) raises :class:`LocaleShardsError` naming the folder
    and what differs."""
    manifest = read_manifest(Path(folder)) if os.path.isdir(folder) else None
    if manifest is None or manifest.get("kind") != KIND:
        raise LocaleShardsError(f"{folder}: no locale shards (materialise locale_shards)")
    recorded = manifest.get("made_from", {})
    if recorded != expected:
        differs = sorted(k for k in {*expected, *recorded} if expected.get(k) != recorded.get(k))
        raise LocaleShardsError(f"{folder}: the locale shards were made from another "
                                f"{', '.join(differs)} than the database holds (materialise "
                                "locale_shards again)")
    for path in manifest["files"]:
        if not os.path.isfile(os.path.join(folder, path)):
            raise LocaleShardsError(f"{folder}: the locale shards lack {path} (materialise "
                                    "locale_shards again)")
        if path not in manifest.get("digests", {}):
            raise LocaleShardsError(f"{folder}: the locale shards record no digest of {path} "
                                    "(materialise locale_shards again)")
    return manifest


def current_locale_shards(store: Store, folder: Path, show_originals: bool | None
                          ) -> tuple[Path | None, str | None]:
    """``(folder, None)`` where ``folder`` holds locale shards made from what the store holds
    now (:func:`read_locale_shards`), else ``(None, why not)``."""
    with store.reader() as reader:
        dataset = (reader.rows("dataset") or [{}])[0]
        present = locale_instances(reader)
        scripts = {row["locale"]: row["script"] for row in reader.rows("site_locales")
                   if row["locale"] in present}
    try:
        read_locale_shards(folder, made_from(dataset, scripts,
                                             shown_originals(dataset, show_originals)))
    except LocaleShardsError as error:
        return None, str(error)
    return Path(folder), None
