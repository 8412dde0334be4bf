"""A model's part of the site (site/model_part.py): the site assembled from the parts equals a
full build, byte for byte; a part made from other rows than the database holds (another
model's, another originals policy, files loaded since) is refused, naming what differs; a failed
build leaves the previous site as it was."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from site_helpers import HOSTILE_MODEL

from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.files import MANIFEST, read_manifest
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.site import build as site_build
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.child_job import ChildJob
from cultivar_assets.site.model_part import (
    ModelPartError,
    current_parts,
    read_model_part,
    write_model_part,
)
from cultivar_assets.site.shards import decode_shard
from cultivar_assets.site.site_data import OWN_MODEL_TABLES, own_model_rows, read_site_data
from cultivar_assets.store.records import dataset_fingerprint, read_test_sets, write_translations
from cultivar_assets.tables import csv_text, json_text
from cultivar_assets.translation import translate
from cultivar_assets.versions.rows import folder_digest

BASELINE = "copy-source-baseline"
# every site built here draws its charts and compiles its templates once a session
pytestmark = pytest.mark.usefixtures("shared_site_caches")


@pytest.fixture(scope="module")
def store(tmp_path_factory, hostile_store_copy):
    return hostile_store_copy(tmp_path_factory.mktemp("parts"))


def files(folder: Path) -> dict[str, bytes]:
    """Every file's bytes (the DuckDB files too: they are byte-reproducible), the build's
    manifest left out."""
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in folder.rglob("*") if path.is_file() and path.name != MANIFEST}


def build(store, out: Path, **options):
    return build_site(store, out, card_markdown="# Card", query_page="off", **options)


def parts_of(store, folder: Path, models=(BASELINE, HOSTILE_MODEL), **options) -> dict:
    """Every model's part written into a folder of its own under ``folder``."""
    out = {}
    for model_id in models:
        out[model_id] = folder / model_slug(model_id)
        write_model_part(store, model_id, out[model_id], **options)
    return out


def walked_sizes(folder: Path) -> tuple[int, int, dict[str, int], tuple[str, int]]:
    """Files, bytes, bytes per part and the largest file of a built site, walked (its build
    manifest aside)."""
    found = {p.relative_to(folder).as_posix(): p.stat().st_size for p in folder.rglob("*")
             if p.is_file() and p.name != MANIFEST}
    parts: dict[str, int] = {}
    for rel, size in found.items():
        parts[site_build._component(rel)] = parts.get(site_build._component(rel), 0) + size
    largest = min(found.items(), key=lambda item: (-item[1], item[0]))
    return len(found), sum(found.values()), dict(sorted(parts.items())), largest


def test_a_site_assembled_from_the_models_parts_equals_a_full_build(store, tmp_path):
    full = build(store, tmp_path / "full")
    parts = parts_of(store, tmp_path / "parts")
    hostile = model_slug(HOSTILE_MODEL)
    assert sorted(read_manifest(parts[HOSTILE_MODEL])["files"]) == sorted([
        f"data/hyp/{hostile}.js", f"data/stats/{hostile}.js",
        f"downloads/translations/{hostile}.parquet",
        *(f"downloads/models/{hostile}.{table}.{kind}"
          for table in ("scores", "cleaning") for kind in ("csv", "json"))])
    assembled = build(store, tmp_path / "assembled", model_parts=parts)
    assert (full.assembled_models, assembled.assembled_models) == (0, 2)
    assert files(tmp_path / "assembled") == files(tmp_path / "full")
    for summary, folder in ((assembled, tmp_path / "assembled"), (full, tmp_path / "full")):
        assert (summary.files, summary.bytes, summary.sizes,
                summary.largest_file) == walked_sizes(folder)


def test_the_parts_are_hard_linked_and_a_part_written_again_leaves_the_published_site(
        store, tmp_path):
    """The site assembles each part's files as hard links of the part's (no copy); a part is
    written again into a new folder swapped in whole (``replace_folder``), so the site published
    before keeps its files' bytes."""
    parts = parts_of(store, tmp_path / "parts")
    site = tmp_path / "site"
    summary = build(store, site, model_parts=parts)
    part_files = [(model_id, rel) for model_id, folder in parts.items()
                  for rel in read_manifest(folder)["files"]]
    assert (summary.linked_files, summary.copied_files) == (len(part_files), 0)
    for model_id, rel in part_files:
        assert (site / rel).stat().st_ino == (parts[model_id] / rel).stat().st_ino
    published = files(site)
    before = files(parts[BASELINE])
    write_model_part(store, BASELINE, parts[BASELINE], show_originals=False)  # other bytes
    assert files(parts[BASELINE]) != before
    assert files(site) == published


def test_a_part_replaced_while_the_site_is_built_fails_the_build_and_keeps_the_site(
        store, tmp_path, monkeypatch):
    """A part's folder swapped for another write of it between the read of its manifest and the
    links (its ``model_site`` partition run alongside the site): the build fails, naming the
    model, and the published site stays as it was (its files and digests would otherwise come
    from two writes)."""
    parts = parts_of(store, tmp_path / "parts")
    site = tmp_path / "site"
    build(store, site, model_parts=parts)
    published = files(site)
    other = tmp_path / "other"
    write_model_part(store, BASELINE, other, show_originals=False)  # other bytes
    link_part = site_build._Build._link_part

    def replaced_first(self, folder, part):
        if folder == os.fspath(parts[BASELINE]) and other.exists():
            os.rename(folder, folder + ".old")
            os.rename(other, folder)
        return link_part(self, folder, part)

    monkeypatch.setattr(site_build._Build, "_link_part", replaced_first)
    with pytest.raises(ModelPartError, match=f"model '{BASELINE}': its part .* was replaced "
                                             "while the site was built"):
        build(store, site, model_parts=parts)
    assert files(site) == published


def test_where_the_filesystem_refuses_a_link_the_parts_files_are_copied(store, tmp_path,
                                                                        monkeypatch):
    full = build(store, tmp_path / "full")
    parts = parts_of(store, tmp_path / "parts")

    def refused(source, target):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refused)
    summary = build(store, tmp_path / "site", model_parts=parts)
    assert (summary.linked_files, summary.copied_files) == (0, 14)
    assert [n for n in summary.notes if "copied, not hard-linked: Invalid cross-device link"]
    assert files(tmp_path / "site") == files(tmp_path / "full") and full.copied_files == 0


def test_a_part_made_from_other_rows_is_refused(tmp_path, hostile_store_copy):
    """A part is taken only while the database holds what it was made from: after the model's
    translations change (here written again and loaded as other files) the site build refuses
    it, naming the folder and what differs, and writes nothing; :func:`current_parts` leaves it
    out with the same message. A full build then shows the new translations."""
    own = hostile_store_copy(tmp_path / "store")
    site = tmp_path / "site"
    parts = parts_of(own, tmp_path / "parts")
    build(own, site, model_parts=parts)
    before = files(site)
    run = translate(load_models().get(BASELINE), read_test_sets(own),
                    cache_dir=tmp_path / "cache", show_progress_bar=False)
    rows = [replace(r, hypothesis=r.hypothesis + " (changed)")
            if (r.test_set, r.segment_id) == ("cultivar_deu_Latn_Germany", 0) else r
            for r in run.rows]
    write_translations(own, replace(run, rows=rows), dataset_fingerprint(own))
    score_model(own, BASELINE, MetricConfig(bleu_tokenize="13a"))
    aggregate(own)
    with duckdb.connect(str(own.path)) as con:  # as model_results records loaded files
        con.execute("INSERT INTO raw.model_files VALUES (?, 'other', 'other', now())",
                    [BASELINE])
    with pytest.raises(ModelPartError, match=rf"{parts[BASELINE]}: model {BASELINE}'s site "
                       r"part was made from another scores_digest, translations_digest than"):
        build(own, site, model_parts=parts)
    assert files(site) == before
    usable, unusable = current_parts(own, parts, None)
    assert usable == {HOSTILE_MODEL: parts[HOSTILE_MODEL]}
    assert list(unusable) == [BASELINE] and "translations_digest" in unusable[BASELINE]
    write_model_part(own, BASELINE, parts[BASELINE])
    build(own, site, model_parts=parts)
    build(own, tmp_path / "full")
    assert files(site) == files(tmp_path / "full")
    shard = decode_shard((site / f"data/hyp/{BASELINE}.js").read_bytes())[1]
    german = [entry[0] for entry in shard["locales"]].index("deu_Latn_Germany")
    assert dict((out[0], out) for out in shard["items"][0][1])[german][4].endswith(" (changed)")


def test_a_part_of_another_policy_or_model_or_none_is_refused(store, tmp_path):
    parts = parts_of(store, tmp_path / "parts", show_originals=False)  # the demo shows them
    with pytest.raises(ModelPartError, match=r"made from another show_originals than"):
        build(store, tmp_path / "site", model_parts=parts)
    swapped = {BASELINE: parts[HOSTILE_MODEL], HOSTILE_MODEL: parts[BASELINE]}
    with pytest.raises(ModelPartError, match=r"the site part of model .*, not of"):
        build(store, tmp_path / "site", model_parts=swapped)
    with pytest.raises(ModelPartError, match=rf"no site part of model {BASELINE} "
                       rf"\(materialise model_site\[{BASELINE}\]\)"):
        build(store, tmp_path / "site", model_parts={BASELINE: tmp_path / "nowhere"})
    (parts[BASELINE] / f"data/stats/{BASELINE}.js").unlink()
    with pytest.raises(ModelPartError, match=rf"lacks data/stats/{BASELINE}.js"):
        read_model_part(parts[BASELINE], BASELINE,
                        read_manifest(parts[BASELINE])["made_from"])
    assert not (tmp_path / "site").exists()


def test_a_part_needs_the_models_translations_in_the_database(store, tmp_path):
    with pytest.raises(ModelPartError, match=r"model nobody: no translations in .*; load its "
                       r"files into the database \(asset model_results\) first"):
        write_model_part(store, "nobody", tmp_path / "part")
    assert not (tmp_path / "part").exists()


def test_a_different_originals_policy_hides_the_originals(store, tmp_path):
    site = tmp_path / "site"
    build(store, site)
    assert "Flamengo" in (site / "locales" / "deu_Latn_Germany.html").read_text()
    build(store, site, show_originals=False)
    assert "Flamengo" not in (site / "locales" / "deu_Latn_Germany.html").read_text()


def test_a_failed_build_leaves_the_previous_site(store, tmp_path, monkeypatch):
    site = tmp_path / "site"
    build(store, site)
    before = files(site)

    def broken(self):
        raise RuntimeError("chart renderer failed")

    monkeypatch.setattr(site_build.SvgJob, "result", broken)
    with duckdb.connect(str(store.path)) as con:  # something to re-render
        con.execute("UPDATE raw.metric_values SET value = value + 1 WHERE level = 'model_locale' "
                    "AND metric = 'bleu' AND quantity = 'delta'")
    with pytest.raises(RuntimeError, match="chart renderer failed"):
        build(store, site)
    assert files(site) == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no partial folder left
    assert not any(p.name.endswith(".partial") for p in site.parent.iterdir())
    assert os.listdir(site)



def test_the_leaderboard_downloads_hold_the_not_separable_lists_as_lengths(store, tmp_path):
    """The leaderboard's CSV and JSON are the published leaderboard with each "not separable
    from" list replaced by its length (they grow with the square of the models); the lists
    stay in its parquet download."""
    site = tmp_path / "site"
    build(store, site)
    with store.reader() as reader:
        board = reader.arrow("site_leaderboard")
    lists = board["not_separable_delta_bleu"].to_pylist()
    assert len(lists) >= 2 and any(lists)  # the hostile store's two models overlap
    expected = [{**{k: v for k, v in row.items() if k != "not_separable_delta_bleu"},
                 "not_separable_delta_bleu_count": len(row["not_separable_delta_bleu"])}
                for row in board.to_pylist()]
    columns = list(expected[0])
    assert ((site / "downloads" / "leaderboard.csv").read_bytes()
            == csv_text(expected, columns).encode("utf-8"))
    assert ((site / "downloads" / "leaderboard.json").read_bytes()
            == json_text(expected, columns).encode("utf-8"))
    published = pq.read_table(site / "downloads" / "leaderboard.parquet")
    assert published["not_separable_delta_bleu"].to_pylist() == lists


def test_a_failing_child_process_reports_its_error_output():
    job = ChildJob("cultivar_assets.site.svg_worker", "rendering chart SVGs")
    job.submit(b"not a JSON list of specs\n")
    with pytest.raises(RuntimeError, match=r"rendering chart SVGs failed: .*JSONDecode"):
        job.result()


def test_the_vega_bundle_is_the_sites_own_copy(store, tmp_path):
    """site/static/vega-bundle.js was a hard link of the web cache's: appending to it changed
    the cache, and every later build published the changed file."""
    site, web = tmp_path / "site", tmp_path / "web"
    build(store, site, web_cache=web)
    cached = site_build.vega_bundle(web)
    bundle = cached.read_bytes()
    with open(site / "static" / "vega-bundle.js", "ab") as file:
        file.write(b";alert('tampered')")
    assert cached.read_bytes() == bundle
    build(store, site, web_cache=web)
    assert (site / "static" / "vega-bundle.js").read_bytes() == bundle
    assert (site / "static/vega-bundle.js").stat().st_ino != cached.stat().st_ino




def test_items_shared_with_a_child_process_are_each_written_once(tmp_path):
    """SharedItems (site/pages.py): this process and a forked child take the items from one
    counter; every item is written once, and the child's counts are added to the writer's."""
    from cultivar_assets.site.pages import PageWriter, SharedItems

    writer = PageWriter(tmp_path)
    items = [f"item-{i:02d}" for i in range(40)]

    def write(item, into):
        into.text(f"items/{item}.txt", f"{item} {os.getpid()}")

    shared = SharedItems(items, write, writer)
    shared.finish()
    written = sorted(p.name for p in (tmp_path / "items").iterdir())
    assert written == [f"{item}.txt" for item in items]
    sizes = [p.stat().st_size for p in (tmp_path / "items").iterdir()]
    assert (writer.files, writer.bytes) == (len(items), sum(sizes))
    # what each process wrote, the child's seconds and this process's wait, as recorded
    timing = shared.timing
    assert timing["items_here"] + timing["items_child"] == len(items)
    assert timing["items_child"] == sum(1 for p in (tmp_path / "items").iterdir()
                                        if not p.read_text().endswith(f" {os.getpid()}"))
    assert timing["child_cpu_s"] >= 0 and timing["child_wall_s"] > 0 and timing["waited_s"] >= 0


def test_an_error_in_the_child_process_is_raised_with_its_traceback(tmp_path):
    from cultivar_assets.site.pages import PageWriter, SharedItems

    parent = os.getpid()

    def write(item, into):
        if os.getpid() != parent:
            raise ValueError(f"cannot write {item}")
        into.text(f"items/{item}.txt", item)

    shared = SharedItems(["a", "b", "c"], write, PageWriter(tmp_path))
    deadline = time.monotonic() + 60
    while shared.next.value == 0 and time.monotonic() < deadline:  # the child took one
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match=r"(?s)writing pages in a child process failed \(exit "
                       r"status 1\): Traceback .*ValueError: cannot write a"):
        shared.finish()
    assert shared.pid is None


def test_the_sites_digest_is_its_folders_digest_made_from_what_it_wrote(store, tmp_path):
    """:attr:`SiteSummary.digest` (the ``site`` asset's data version) is the digest of the built
    folder (:func:`folder_digest`), made from the bytes the build wrote and the digests its parts
    record: full, assembled from parts, with the DuckDB download (a file written by other
    means); a part written again with other bytes (its manifest records their digest, as
    ``model_site`` writes it) gives the site another digest, and that digest is again the
    folder's."""
    full = build(store, tmp_path / "full", include_database=True)
    assert full.digest == folder_digest(tmp_path / "full")
    parts = parts_of(store, tmp_path / "parts")
    assembled = build(store, tmp_path / "assembled", model_parts=parts, include_database=True)
    assert assembled.digest == folder_digest(tmp_path / "assembled")
    rel = f"data/stats/{BASELINE}.js"
    manifest = read_manifest(parts[BASELINE])
    other = parts[BASELINE].with_name("other")
    shutil.copytree(parts[BASELINE], other)
    changed = (other / rel).read_bytes() + b"\n"
    (other / rel).unlink()
    (other / rel).write_bytes(changed)
    manifest["digests"][rel] = hashlib.sha256(changed).hexdigest()
    (other / MANIFEST).write_text(json.dumps(manifest), "utf-8")
    again = build(store, tmp_path / "again", model_parts={**parts, BASELINE: other},
                  include_database=True)
    assert again.digest == folder_digest(tmp_path / "again") != assembled.digest


def test_a_part_without_its_files_digests_is_refused(store, tmp_path):
    parts = parts_of(store, tmp_path / "parts")
    manifest = read_manifest(parts[BASELINE])
    del manifest["digests"][f"data/stats/{BASELINE}.js"]
    (parts[BASELINE] / MANIFEST).write_text(json.dumps(manifest), "utf-8")
    with pytest.raises(ModelPartError, match=rf"records no digest of data/stats/{BASELINE}.js"):
        build(store, tmp_path / "site", model_parts=parts)


def test_a_models_scores_and_cleaning_downloads_are_in_its_part_and_linked(store, tmp_path):
    """A model's scores and cleaning downloads are made from its own rows and the dataset
    alone (``site_data.OWN_MODEL_TABLES``): its part holds them (listed and digested in its
    manifest), and the site build hard-links them instead of writing them, the same bytes as a
    full build's; its ∆ and word-recall downloads (made from every model's statistics) are not
    in the part and are written by the build."""
    build(store, tmp_path / "full")
    parts = parts_of(store, tmp_path / "parts")
    site = tmp_path / "site"
    build(store, site, model_parts=parts)
    for model_id, folder in parts.items():
        slug, manifest = model_slug(model_id), read_manifest(folder)
        own = [f"downloads/models/{slug}.{table}.{kind}"
               for table in ("scores", "cleaning") for kind in ("csv", "json")]
        assert set(own) <= set(manifest["files"])
        for rel in own:
            content = (site / rel).read_bytes()
            assert (site / rel).stat().st_ino == (folder / rel).stat().st_ino
            assert content == (tmp_path / "full" / rel).read_bytes()
            assert manifest["digests"][rel] == hashlib.sha256(content).hexdigest()
        for rel in (f"downloads/models/{slug}.deltas.csv",
                    f"downloads/models/{slug}.word_recall.json"):
            assert rel not in manifest["files"] and (site / rel).stat().st_nlink == 1
        # the files hold the model's rows: its scores per test set, as its page shows them
        page = (site / f"models/{slug}.html").read_text("utf-8")
        scores = json.loads((site / own[1]).read_text("utf-8"))
        assert scores and all(row["bleu"] is not None and row["chrf"] is not None
                              and f'data-value="{row["test_set"]}"' in page for row in scores)


def test_the_parts_rows_of_a_models_own_tables_are_the_published_tables_rows(store):
    """The rows a part writes a model's own tables from (``own_model_rows``: the model's rows
    alone) are its rows of the published tables, which the full build and the model pages
    read."""
    models = [BASELINE, HOSTILE_MODEL]
    with store.reader() as reader:
        data = read_site_data(reader, show_originals=True)
        own = own_model_rows(reader, models)
    assert own == data.model_rows(set(models), tuple(OWN_MODEL_TABLES))
    assert all(own["scores"][model_id] for model_id in models)
    assert any(own["cleaning"][model_id] for model_id in models)


def test_a_model_without_a_part_has_its_own_table_downloads_made_by_the_build(store, tmp_path):
    """One model's part given, the other's not: the build links the given part's files (its
    scores and cleaning downloads among them) and makes the other model's, the same bytes as a
    full build."""
    build(store, tmp_path / "full")
    parts = parts_of(store, tmp_path / "parts", models=(HOSTILE_MODEL,))
    summary = build(store, tmp_path / "site", model_parts=parts)
    assert (summary.assembled_models, summary.linked_files) == (
        1, len(read_manifest(parts[HOSTILE_MODEL])["files"]))
    baseline = model_slug(BASELINE)
    made = tmp_path / "site" / f"downloads/models/{baseline}.scores.csv"
    assert made.is_file() and made.stat().st_nlink == 1
    assert files(tmp_path / "site") == files(tmp_path / "full")


def test_a_part_of_another_layout_is_refused_and_its_files_made_by_the_build(store, tmp_path):
    """A part written by code that made other files (here: the layout without the scores and
    cleaning downloads, its manifest recording no layout) is refused, naming the layout, by
    the site build and by ``current_parts`` (the ``site`` asset then makes the model's files
    itself: the same site as a full build), not assembled with files missing."""
    build(store, tmp_path / "full")
    parts = parts_of(store, tmp_path / "parts")
    slug = model_slug(BASELINE)
    manifest = read_manifest(parts[BASELINE])
    own = [p for p in manifest["files"] if p.startswith(f"downloads/models/{slug}.")]
    assert len(own) == 4
    for path in own:
        (parts[BASELINE] / path).unlink()
        del manifest["digests"][path]
    manifest["files"] = [p for p in manifest["files"] if p not in own]
    manifest.pop("layout", None)
    (parts[BASELINE] / MANIFEST).write_text(json.dumps(manifest), "utf-8")
    with pytest.raises(ModelPartError, match=rf"model {BASELINE}'s site part has layout None, "
                       rf"not 2 \(written by code that made other files; materialise "
                       rf"model_site\[{BASELINE}\] again\)"):
        build(store, tmp_path / "site", model_parts=parts)
    usable, unusable = current_parts(store, parts, None)
    assert list(usable) == [HOSTILE_MODEL] and "has layout None" in unusable[BASELINE]
    summary = build(store, tmp_path / "site", model_parts=usable)
    assert summary.assembled_models == 1
    assert files(tmp_path / "site") == files(tmp_path / "full")
