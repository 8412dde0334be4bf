"""A model's part of the site: the files made from that model's own rows and the dataset alone.

A model's part is these files, most of the site's bytes:

- ``data/hyp/<slug>.js``: its translations of every locale (:func:`shards.hyp_payload`), only
  where it has translations of a present locale;
- ``data/stats/<slug>.js``: its per-segment statistics, which the compare view recomputes its
  difference intervals from (:func:`compare_stats.stats_payload`), where it has statistics;
- ``downloads/translations/<slug>.parquet``: its published translations;
- ``downloads/models/<slug>.scores.{csv,json}`` and ``downloads/models/<slug>.cleaning.{csv,json}``:
  the downloads of its page's scores and output-cleaning tables
  (:func:`~.site_pages.own_table_files`), from its rows of the published tables ``scores`` and
  ``cleaning_counts`` (:data:`~.site_data.OWN_MODEL_TABLES`). The page itself, and its ∆ and
  word-recall downloads, are the site build's.

They are made from the model's rows of ``raw.translations``, ``raw.segment_stats``,
``raw.scores`` and ``raw.model_runs`` (written only by the asset ``model_results``, from the
model's files under the storage root), the dataset (its locales, instances, test sets and
FLORES sources) and the originals policy, and from no setting (the scores download holds
every metric stored for the model) and nothing of any other model: what a model's page shows
of other models (its rank, "not separable from") and what depends on the statistics of every
model (intervals, the leaderboard) are the cross-model pages and shards, which
:func:`cultivar_assets.site.build.build_site` renders in full every build. So a part stays
right as long as the model's files, the dataset, the originals policy and the code are
unchanged: the asset ``model_site`` (partitioned by model) writes it into a folder of its own
(:func:`write_model_part`), and the site build takes it from there (:func:`read_model_part`)
or, without a part, makes the same files itself.

A part's folder holds the files at their paths in the site and a manifest
(``.cultivar-build.json``): the model, the layout (:data:`PART_LAYOUT`), its slug, the locales
of its translations shard, its files, the sha256 of each file's bytes (``digests``, computed as
they are written: the site's data version is made from them without reading the files again),
and what it was made from (the dataset's fingerprint, the originals policy and the digests of
the model's files as loaded into the database, ``raw.model_files``), which the site build
checks against the database it builds from.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cultivar_assets.data.locales import cultivar_test_set_name, flores_test_set_name
from cultivar_assets.files import read_manifest, replace_folder
from cultivar_assets.site import compare_stats, shards
from cultivar_assets.site import downloads as dl
from cultivar_assets.site.pages import model_slug
from cultivar_assets.site.site_data import model_tables, own_model_rows
from cultivar_assets.site.site_pages import own_table_files
from cultivar_assets.store.database import Reader, Store

PART_KIND = "site-model"
# Which files a part holds (the module docstring's list), recorded in its manifest: a part of
# another layout (written by code that made other files; none recorded: the layout without the
# scores and cleaning downloads) is refused, and the site build makes the model's files itself.
PART_LAYOUT = 2
Makers = dict[str, Callable[[], bytes]]  # path in the site -> what makes its bytes


class ModelPartError(ValueError):
    """A model's part is missing, is another model's, or was made from other rows than the
    database now holds."""


@dataclass(frozen=True)
class DatasetView:
    """What every model's part reads of the dataset: the locales with instances (in order),
    their instance ids and rows of ``site_locales``, the FLORES sources an output may not repeat
    (``(test set, segment id) -> source``, empty where originals are shown) and the policy."""

    present_locales: list[str]
    instance_ids: dict[str, list[int]]
    locale_info: dict[str, dict]
    sources: dict[tuple[str, int], str]
    show_originals: bool


def dataset_view(instance_ids: dict[str, list[int]], locale_info: dict[str, dict],
                 segments: pa.Table, show_originals: bool) -> DatasetView:
    """The :class:`DatasetView` of a dataset's instance ids, locales and ``site_segments``."""
    sources: dict[tuple[str, int], str] = {}
    if not show_originals:
        flores = segments.filter(pc.starts_with(segments["test_set"], "flores_"))
        sources = {(t, i): src for t, i, src in zip(
            flores["test_set"].to_pylist(), flores["segment_id"].to_pylist(),
            flores["source"].to_pylist(), strict=True)}
    return DatasetView(sorted(instance_ids), instance_ids, locale_info, sources, show_originals)


def read_dataset_view(reader: Reader, show_originals: bool) -> DatasetView:
    """:func:`dataset_view` of the store's dataset."""
    instance_ids: dict[str, list[int]] = {}
    for row in reader.rows("instances"):
        instance_ids.setdefault(row["locale"], []).append(row["instance_id"])
    locale_info = {row["locale"]: row for row in reader.rows("site_locales")}
    return dataset_view(instance_ids, locale_info, reader.arrow("site_segments"), show_originals)


def model_files(model_id: str, translations: pa.Table, stats: pa.Table | None,
                view: DatasetView, own: dict[str, list[dict]]) -> tuple[dict[str, Any], Makers]:
    """A model's part (module docstring) from its rows of ``site_model_translations``,
    ``site_model_stats`` (None: it has none) and of its own tables (``own``: name of
    :data:`~.site_data.OWN_MODEL_TABLES` -> its rows of that published table): its entry
    (``slug``, ``locales`` of its translations shard, ``files``) and, per file, what makes its
    bytes (the compressing is left to the caller, which may run it in threads)."""
    slug = model_slug(model_id)
    table = translations
    columns: dict[str, Any] = {name: table[name].to_pylist() for name in (
        "test_set", "segment_id", "hypothesis", "raw_output")}
    # each row's rules as an array of str (shards._output makes it a list): pyarrow's
    # to_pylist of a list<string> column took 50 ms per model, to_numpy 2 ms
    columns["cleaning_rules"] = table["cleaning_rules"].to_numpy(zero_copy_only=False)
    keys = list(zip(columns["test_set"], columns["segment_id"], strict=True))
    hypotheses, raws = columns["hypothesis"], columns["raw_output"]
    if not view.show_originals:  # outputs that repeat a hidden FLORES source are hidden too
        changed = False
        for index, key in enumerate(keys):
            source = view.sources.get(key)
            if source is not None:
                hypothesis, raw = dl.public_output(key[0], hypotheses[index], raws[index],
                                                   source, view.show_originals)
                if hypothesis is not hypotheses[index] or raw is not raws[index]:
                    hypotheses[index], raws[index], changed = hypothesis, raw, True
        if changed:
            table = table.set_column(table.schema.get_field_index("hypothesis"),
                                     "hypothesis", pa.array(hypotheses, pa.string()))
            table = table.set_column(table.schema.get_field_index("raw_output"),
                                     "raw_output", pa.array(raws, pa.string()))
    by_key = dict(zip(keys, zip(hypotheses, raws, columns["cleaning_rules"], strict=True),
                      strict=True))
    sets = []
    for locale in view.present_locales:
        info = view.locale_info[locale]
        sets.append((locale, view.instance_ids[locale],
                     flores_test_set_name(info["flores_plus_code"]),
                     cultivar_test_set_name(locale)))
    payload = shards.hyp_payload(model_id, sets, by_key)
    makers: Makers = {}
    locales = [entry[0] for entry in payload["locales"]]
    if locales:
        key = f"hyp/{slug}"
        data = shards.shard_json(payload)
        makers[shards.shard_path(key)] = lambda: shards.pack_shard(key, data)
    published = dl.translations_table(table)
    makers[f"downloads/translations/{slug}.parquet"] = lambda: dl.parquet_bytes(published)
    for path, content in own_table_files(slug, own).items():
        makers[path] = lambda content=content: content
    if stats is not None:
        path, make = stats_file(model_id, stats)
        makers[path] = make
    return {"slug": slug, "locales": locales, "files": list(makers)}, makers


def stats_file(model_id: str, stats: pa.Table) -> tuple[str, Callable[[], bytes]]:
    """A model's statistics shard (its path, what makes its bytes) from its rows of
    ``site_model_stats``."""
    key = f"stats/{model_slug(model_id)}"
    payload = compare_stats.stats_payload(model_id, stats, shards.FORMAT)
    return shards.shard_path(key), lambda: shards.pack_shard(key, shards.shard_json(payload))


def part_sources(reader: Reader, show_originals: bool) -> dict[str, dict[str, Any]]:
    """What each model's part is made from, besides the code (a manifest's ``made_from``), by
    model: the dataset's fingerprint, the originals policy and the digests of the model's files
    as loaded into the database (``raw.model_files``; null where its rows were written
    otherwise). Models without translations are left out."""
    dataset = (reader.rows("dataset") or [{}])[0]
    loaded = {row["model_id"]: row for row in reader.rows("model_files_loaded")}
    return {model_id: {"dataset": dataset.get("fingerprint"), "show_originals": show_originals,
                       "translations_digest": loaded.get(model_id, {}).get("translations_digest"),
                       "scores_digest": loaded.get(model_id, {}).get("scores_digest")}
            for model_id in (row["model_id"] for row in reader.rows("site_translated_models"))}


def shown_originals(dataset: dict, show_originals: bool | None) -> bool:
    """The originals policy: ``show_originals``, or where None, whether the data is the demo's
    (see :func:`cultivar_assets.site.build.build_site`)."""
    return bool(dataset.get("is_demo")) if show_originals is None else show_originals


def current_parts(store: Store, folders: dict[str, Path], show_originals: bool | None
                  ) -> tuple[dict[str, Path], dict[str, str]]:
    """Of ``folders`` (model -> folder of its part), those that hold a part made from what the
    store holds now (:func:`read_model_part`), and why each other one does not (model -> the
    error's message)."""
    with store.reader() as reader:
        dataset = (reader.rows("dataset") or [{}])[0]
        sources = part_sources(reader, shown_originals(dataset, show_originals))
    usable, unusable = {}, {}
    for model_id, folder in folders.items():
        if model_id not in sources:
            continue  # no translations: no part
        try:
            read_model_part(folder, model_id, sources[model_id])
            usable[model_id] = folder
        except ModelPartError as error:
            unusable[model_id] = str(error)
    return usable, unusable


def write_model_part(store: Store, model_id: str, folder: Path,
                     show_originals: bool | None = None) -> dict[str, Any]:
    """Write ``model_id``'s part (module docstring) into ``folder``; its manifest
    (:func:`write_model_parts` of one model)."""
    return write_model_parts(store, {model_id: folder}, show_originals)[model_id]


# Models whose rows one query reads (write_model_parts): each query scans the whole table, so
# fewer, larger chunks; their rows and files are in memory together (about 3 MB per model at the
# benchmark's 48 test sets × 200 instances).
PART_CHUNK = 50


def write_model_parts(store: Store, folders: Mapping[str, Path],
                      show_originals: bool | None = None, threads: int = 2,
                      progress: Callable[[str, float], None] | None = None
                      ) -> dict[str, dict[str, Any]]:
    """Write each model's part (module docstring) into its folder (``folders``: model -> folder;
    each swapped in when complete: :func:`cultivar_assets.files.replace_folder`); model -> its
    manifest. ``show_originals``: as :func:`cultivar_assets.site.build.build_site`'s (None: only
    for the demo data). The dataset and what the parts are made from are read once, the models'
    rows :data:`PART_CHUNK` models per query; ``threads`` worker threads compress and write the
    files beside the Python work. ``progress(model, seconds)``: called when a model's part is
    written, with the seconds since the previous one was (the first: since the start). A model
    without translations in the database is refused before anything is written, every folder
    left as it was."""
    started = time.perf_counter()
    with store.reader() as reader:
        dataset = (reader.rows("dataset") or [{}])[0]
        view = read_dataset_view(reader, shown_originals(dataset, show_originals))
        sources = part_sources(reader, view.show_originals)
        missing = [m for m in folders if m not in sources]
        if missing:
            raise ModelPartError(f"model {missing[0]}: no translations in {store.path}; load its "
                                 "files into the database (asset model_results) first"
                                 + (f" ({len(missing)} models lack them)" if len(missing) > 1
                                    else ""))
        manifests: dict[str, dict[str, Any]] = {}
        order = list(folders)
        with ThreadPoolExecutor(threads, thread_name_prefix="site-part") as pool:
            for first in range(0, len(order), PART_CHUNK):
                chunk = order[first:first + PART_CHUNK]
                tables = dict(model_tables(reader, chunk))
                stats = dict(model_tables(reader, chunk, "site_model_stats"))
                own = own_model_rows(reader, chunk)
                pending = []
                for model_id in chunk:
                    entry, makers = model_files(model_id, tables.pop(model_id),
                                                stats.pop(model_id, None), view,
                                                {name: own[name].pop(model_id, [])
                                                 for name in own})
                    manifests[model_id] = {"kind": PART_KIND, "layout": PART_LAYOUT,
                                           "model": model_id, **entry,
                                           "made_from": sources[model_id]}
                    pending.append((model_id, pool.submit(
                        _write_part, Path(folders[model_id]), makers, manifests[model_id])))
                for model_id, future in pending:
                    future.result()
                    if progress is not None:
                        now = time.perf_counter()
                        progress(model_id, now - started)
                        started = now
    return manifests


def _write_part(folder: Path, makers: Makers, manifest: dict[str, Any]) -> None:
    def write(work: Path) -> None:
        digests = {}
        for path, make in makers.items():
            target, content = work / path, make()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            digests[path] = hashlib.sha256(content).hexdigest()
        manifest["digests"] = digests  # written by replace_folder after write()

    replace_folder(folder, write, manifest)


def read_model_part(folder: str | Path, model_id: str, made_from: dict[str, Any]
                    ) -> dict[str, Any]:
    """The manifest of ``model_id``'s part in ``folder``, checked: a missing folder, another
    model's part, a part of another :data:`PART_LAYOUT`, a missing file or a part made from
    other rows than ``made_from`` (:func:`part_sources` of the database the site is built from)
    raises :class:`ModelPartError` naming the folder and what differs, as does a part whose
    manifest records no digest of one of its files."""
    manifest = read_manifest(Path(folder)) if os.path.isdir(folder) else None
    if manifest is None or manifest.get("kind") != PART_KIND:
        raise ModelPartError(f"{folder}: no site part of model {model_id} (materialise "
                             f"model_site[{model_id}])")
    if manifest.get("model") != model_id:
        raise ModelPartError(f"{folder}: the site part of model {manifest.get('model')!r}, not "
                             f"of {model_id!r}")
    if manifest.get("layout") != PART_LAYOUT:
        raise ModelPartError(f"{folder}: model {model_id}'s site part has layout "
                             f"{manifest.get('layout')}, not {PART_LAYOUT} (written by code that "
                             f"made other files; materialise model_site[{model_id}] again)")
    if manifest.get("made_from") != made_from:
        differs = sorted(k for k in {*made_from, *manifest.get("made_from", {})}
                         if made_from.get(k) != manifest.get("made_from", {}).get(k))
        raise ModelPartError(f"{folder}: model {model_id}'s site part was made from another "
                             f"{', '.join(differs)} than the database holds (materialise "
                             f"model_site[{model_id}] again)")
    # os.path, not pathlib: a 1,000-model site checks 3,000 files
    missing = [p for p in manifest["files"] if not os.path.isfile(os.path.join(folder, p))]
    if missing:
        raise ModelPartError(f"{folder}: model {model_id}'s site part lacks {missing[0]}")
    unrecorded = [p for p in manifest["files"] if p not in manifest.get("digests", {})]
    if unrecorded:
        raise ModelPartError(f"{folder}: model {model_id}'s site part records no digest of "
                             f"{unrecorded[0]} (materialise model_site[{model_id}] again)")
    return manifest
