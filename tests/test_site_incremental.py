"""Incremental site builds: unchanged models' files come from the previous build, and the result
is the same site a full build writes; a failed build leaves the previous site as it was."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from site_helpers import HOSTILE_MODEL, hostile_store

from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.files import MANIFEST, read_manifest
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.site import build as site_build
from cultivar_assets.site.build import build_site, model_slug
from cultivar_assets.site.child_job import ChildJob
from cultivar_assets.site.shards import decode_shard
from cultivar_assets.site.site_data import translation_digests
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import dataset_fingerprint, read_test_sets, write_translations
from cultivar_assets.tables import csv_text, json_text
from cultivar_assets.translation import translate


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return hostile_store(tmp_path_factory.mktemp("incremental"))


def files(folder: Path) -> dict[str, bytes]:
    """Every file's bytes; a DuckDB file (not byte-reproducible: it has a random salt) by its
    tables' rows."""
    out = {}
    for path in folder.rglob("*"):
        if not path.is_file() or path.name == MANIFEST:
            continue
        rel = path.relative_to(folder).as_posix()
        if path.suffix == ".duckdb":
            with duckdb.connect(str(path), read_only=True) as con:
                tables = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
                out[rel] = repr({t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                                 for t in tables}).encode()
        else:
            out[rel] = path.read_bytes()
    return out


def inodes(folder: Path, prefix: str) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_ino for p in folder.rglob("*")
            if p.is_file() and p.relative_to(folder).as_posix().startswith(prefix)}


def build(store, out: Path, **options):
    return build_site(store, out, card_markdown="# Card", query_page="off", **options)


def test_rebuilds_reuse_unchanged_models_and_equal_a_full_build(store, tmp_path):
    site = tmp_path / "site"
    first = build(store, site)
    assert first.reused_models == 0 and first.models == 2
    hostile = model_slug(HOSTILE_MODEL)
    before = inodes(site, f"data/hyp/{hostile}.js")
    assert len(before) == 1  # one shard per model, every locale in it
    again = build(store, site)
    assert again.reused_models == 2
    assert inodes(site, f"data/hyp/{hostile}.js") == before  # the same files, linked

    # the baseline's outputs change: a new run recorded as a translation run is (its run
    # record's fingerprint tells the build), scored and aggregated again
    run = translate(load_models().get("copy-source-baseline"), read_test_sets(store),
                    cache_dir=tmp_path / "cache", show_progress_bar=False)
    rows = [replace(r, hypothesis=r.hypothesis + " (changed)")
            if (r.test_set, r.segment_id) == ("cultivar_deu_Latn_Germany", 0) else r
            for r in run.rows]
    write_translations(store, replace(run, rows=rows), dataset_fingerprint(store))
    score_model(store, "copy-source-baseline", MetricConfig(bleu_tokenize="13a"))
    aggregate(store)
    baseline = inodes(site, "data/hyp/copy-source-baseline.js")
    third = build(store, site)
    assert third.reused_models == 1
    assert inodes(site, f"data/hyp/{hostile}.js") == before
    assert inodes(site, "data/hyp/copy-source-baseline.js") != baseline
    shard = decode_shard((site / "data/hyp/copy-source-baseline.js").read_bytes())[1]
    german = [entry[0] for entry in shard["locales"]].index("deu_Latn_Germany")
    assert shard["items"][0][0] == 0
    assert dict((out[0], out) for out in shard["items"][0][1])[german][4].endswith(" (changed)")

    full = tmp_path / "full"
    rebuilt = build(store, full, reuse=False)
    assert files(site) == files(full)  # incremental == full, byte for byte
    assert read_manifest(site)["models"] == read_manifest(full)["models"]
    for summary, folder in ((third, site), (rebuilt, full)):  # linked files counted as written
        assert (summary.files, summary.bytes, summary.sizes,
                summary.largest_file) == walked_sizes(folder)


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


def test_a_different_originals_policy_rebuilds_everything(store, tmp_path):
    site = tmp_path / "site"
    build(store, site)
    public = build(store, site, show_originals=False)
    assert public.reused_models == 0
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


def test_a_model_page_follows_its_rows_and_the_others_are_linked(tmp_path):
    """A model page's key holds digests of its rows (site_model_page_digests), not the rows:
    a change in any of its tables (here its scores, its word recall and its registry entry)
    renders its page and downloads again, and leaves every other model's page linked."""
    (tmp_path / "store").mkdir()
    own = hostile_store(tmp_path / "store")  # its rows are changed below
    site = tmp_path / "site"
    build(own, site)
    baseline = "copy-source-baseline"
    hostile = f"models/{model_slug(HOSTILE_MODEL)}"
    kept = inodes(site, hostile) | inodes(site, f"downloads/{hostile}")
    assert f"{hostile}.html" in kept and f"downloads/{hostile}.scores.csv" in kept
    with duckdb.connect(str(own.path)) as con:
        con.execute("UPDATE raw.scores SET score = 12.3456 WHERE model_id = ? AND metric = 'bleu' "
                    "AND test_set = 'cultivar_deu_Latn_Germany'", [baseline])
        con.execute("UPDATE raw.locale_word_recall SET n_removed_terms = 424242 "
                    "WHERE model_id = ?", [baseline])
        con.execute("UPDATE raw.models SET family = 'family-edited' WHERE model_id = ?",
                    [baseline])
    build(own, site)
    text = (site / "models" / f"{model_slug(baseline)}.html").read_text()
    assert "12.35" in text and "424242" in text and "family-edited" in text
    downloads = site / "downloads" / "models"
    assert "424242" in (downloads / f"{baseline}.word_recall.csv").read_text()
    assert "12.3456" in (downloads / f"{baseline}.scores.json").read_text()
    assert "family-edited" in (downloads / f"{baseline}.deltas.csv").read_text()
    assert inodes(site, hostile) | inodes(site, f"downloads/{hostile}") == kept  # linked
    full = tmp_path / "full"
    build(own, full, reuse=False)
    assert files(site) == files(full)


def as_built(site: Path, path: Path) -> None:
    """Record ``path`` in the site's manifest as the build writes a file's record."""
    manifest = read_manifest(site)
    stat = path.stat()
    manifest["files"][path.relative_to(site).as_posix()] = [
        stat.st_size, stat.st_mtime_ns, stat.st_ino]
    (site / MANIFEST).write_text(json.dumps(manifest), "utf-8")


def test_a_locale_download_is_written_whole_when_a_row_changes(tmp_path):
    """A locale page's ∆ downloads (CSV and JSON) are written again whole when one of their rows
    changes: no line of the previous build's file is kept (the rows that did not change
    included), and the rebuild equals a full build."""
    (tmp_path / "store").mkdir()
    own = hostile_store(tmp_path / "store")
    site = tmp_path / "site"
    build(own, site)
    downloads = site / "downloads" / "locales"
    paths = [downloads / "deu_Latn_Germany.deltas.csv", downloads / "deu_Latn_Germany.deltas.json"]
    for path in paths:  # a mark in the unchanged (hostile) row's line, as if built so
        text = path.read_bytes().decode()
        assert "alert(1)" in text
        path.unlink()  # the file may be a hard link of another build's
        path.write_bytes(text.replace("alert(1)", "alert(MARK)").encode())
        as_built(site, path)
    with duckdb.connect(str(own.path)) as con:  # the baseline's row changes
        con.execute("UPDATE raw.models SET family = 'family-edited' "
                    "WHERE model_id = 'copy-source-baseline'")
    build(own, site)
    full = tmp_path / "full"
    build(own, full, reuse=False)
    for path in paths:
        text = path.read_bytes().decode()
        assert "family-edited" in text and "alert(MARK)" not in text
        assert path.read_bytes() == (full / path.relative_to(site)).read_bytes()


def test_a_rescored_model_gets_new_statistics_files(tmp_path):
    """A model scored again with other settings (here chrF++) keeps its translations but not
    its per-segment statistics: the statistics stand in its files' key by their count and its
    score rows (site_translation_digests), so its compare shard is written again and every
    other model's files stay linked."""
    (tmp_path / "store").mkdir()
    own = hostile_store(tmp_path / "store")
    site = tmp_path / "site"
    build(own, site)
    baseline = "copy-source-baseline"
    hostile = model_slug(HOSTILE_MODEL)
    kept = inodes(site, f"data/hyp/{hostile}.js") | inodes(site, f"data/stats/{hostile}")

    def own_files() -> dict[str, bytes]:
        return {p.relative_to(site).as_posix(): p.read_bytes()
                for p in (site / "data").rglob(f"{baseline}*")}

    before = own_files()
    assert f"data/stats/{baseline}.js" in before
    score_model(own, baseline, MetricConfig(bleu_tokenize="13a", chrf_word_order=2))
    again = build(own, site)
    assert again.reused_models == 1
    after = own_files()
    assert after.keys() == before.keys()
    assert after[f"data/stats/{baseline}.js"] != before[f"data/stats/{baseline}.js"]
    assert inodes(site, f"data/hyp/{hostile}.js") | inodes(site, f"data/stats/{hostile}") == kept
    full = tmp_path / "full"
    build(own, full, reuse=False)
    assert files(site) == files(full)


def test_translations_are_keyed_by_their_run_record_or_else_by_their_rows(store, tmp_path):
    """A model's translation files are keyed by its run record's fingerprint of the rows
    (written with them); a model without one has its rows hashed, so that a change in them is
    seen (site_translation_digests, site_translation_row_digests)."""
    copy = Store(tmp_path / "copy.duckdb")
    shutil.copyfile(store.path, copy.path)
    with copy.reader() as reader:
        recorded = translation_digests(reader)
        fingerprints = dict(reader.con.execute(
            "SELECT model_id, translations_fingerprint FROM raw.model_runs").fetchall())
    assert set(recorded) == {"copy-source-baseline", HOSTILE_MODEL}
    for model_id, digest in recorded.items():
        assert f":run {fingerprints[model_id]}:" in digest
    with duckdb.connect(str(copy.path)) as con:
        con.execute("UPDATE raw.model_runs SET translations_fingerprint = NULL "
                    "WHERE model_id = 'copy-source-baseline'")
    with copy.reader() as reader:
        unrecorded = translation_digests(reader)
    with duckdb.connect(str(copy.path)) as con:  # a hand edit of the unrecorded model's rows
        con.execute("UPDATE raw.translations SET hypothesis = hypothesis || ' (changed)' "
                    "WHERE model_id = 'copy-source-baseline' AND segment_id = 0")
    with copy.reader() as reader:
        edited = translation_digests(reader)
    assert ":rows " in unrecorded["copy-source-baseline"]
    assert edited["copy-source-baseline"] != unrecorded["copy-source-baseline"]
    assert edited[HOSTILE_MODEL] == unrecorded[HOSTILE_MODEL] == recorded[HOSTILE_MODEL]


def test_a_changed_imported_template_renders_the_pages_that_import_it_again(
        store, tmp_path, monkeypatch):
    """statistics_macros.html.j2 is imported by index.html.j2 and locales.html.j2: a change to it
    must reach them in a rebuild, which then equals a full build of the same templates."""
    from cultivar_assets import paths
    from cultivar_assets.site import pages

    original = paths.resource_dir
    copy = tmp_path / "resources"
    shutil.copytree(original("site"), copy / "site")

    def resources(name: str) -> Path:
        return copy / name if name == "site" else original(name)

    monkeypatch.setattr(paths, "resource_dir", resources)
    monkeypatch.setattr(pages, "resource_dir", resources)
    monkeypatch.setenv("CULTIVAR_HOME", str(tmp_path / "home"))  # a Jinja environment of its own
    site = tmp_path / "site"
    build(store, site)
    macros = copy / "site" / "templates" / "statistics_macros.html.j2"
    macros.write_text(macros.read_text().replace('title="locale pairs / languages',
                                                 'title="changed: locale pairs / languages'))
    build(store, site)
    assert "changed: locale pairs" in (site / "index.html").read_text()
    full = tmp_path / "full"
    build(store, full, reuse=False)
    assert files(site) == files(full)


def test_the_code_in_every_key_covers_every_module_of_the_site_package():
    import pkgutil

    from cultivar_assets import site as site_package
    from cultivar_assets.site.incremental import code_files

    modules = {f"{m.name}.py" for m in pkgutil.iter_modules(site_package.__path__)}
    covered = {path.name for path in code_files().values()
               if path.parent == Path(site_package.__file__).parent}
    assert "compare_stats.py" in modules
    assert modules <= covered


def modes(folder: Path) -> dict[str, set[int]]:
    """The permission bits of the files and of the folders under ``folder`` (manifest aside)."""
    found: dict[str, set[int]] = {"files": set(), "folders": set()}
    for path in [folder, *folder.rglob("*")]:
        if path.name != MANIFEST:
            found["folders" if path.is_dir() else "files"].add(stat.S_IMODE(path.stat().st_mode))
    return found


def test_a_site_file_changed_after_its_build_is_made_again_not_taken(store, tmp_path):
    """Appending to a published file changed the next build's file too (a hard link of it)."""
    site = tmp_path / "site"
    build(store, site)
    hostile = model_slug(HOSTILE_MODEL)
    changed = [f"data/hyp/{hostile}.js", f"models/{hostile}.html", "locales.html",
               "downloads/leaderboard.csv", "data/locales/deu_Latn_Germany.js"]
    before = files(site)
    linked = inodes(site, "")
    for rel in changed:
        assert rel in before
        with open(site / rel, "ab") as file:  # as root, a read-only file is writable too
            file.write(b"<script>tampered</script>")
    again = build(store, site)
    assert again.reused_models == 1  # the other model's files are still taken
    assert files(site) == before  # every changed file made again as it was
    now = inodes(site, "")
    assert [rel for rel in changed if now[rel] == linked[rel]] == []
    assert now[f"data/hyp/{model_slug('copy-source-baseline')}.js"] == linked[
        f"data/hyp/{model_slug('copy-source-baseline')}.js"]  # the unchanged are linked


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


def test_a_rebuild_gives_every_file_the_current_umask(store, tmp_path):
    """Built under umask 077 and rebuilt under 022, the files taken from the first build kept
    0600 (unreadable to a web server running as another user)."""
    site = tmp_path / "site"
    previous = os.umask(0o077)
    try:
        build(store, site)
        assert modes(site) == {"files": {0o400}, "folders": {0o700}}
        os.umask(0o022)
        again = build(store, site)
    finally:
        os.umask(previous)
    assert again.reused_models == 2  # taken, as copies with the new mode
    assert modes(site) == {"files": {0o444}, "folders": {0o755}}
    linked = inodes(site, "")
    previous = os.umask(0o022)
    try:
        build(store, site)
    finally:
        os.umask(previous)
    assert inodes(site, "data/hyp/") == {rel: ino for rel, ino in linked.items()
                                         if rel.startswith("data/hyp/")}  # now linked again
