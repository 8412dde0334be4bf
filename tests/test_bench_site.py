"""benchmarks/bench_site.py: what ``--keep`` keeps, and that it says where."""

from __future__ import annotations

import os
import sys

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_site import finish


def test_keep_says_where_the_site_and_database_are_kept(tmp_path):
    kept = tmp_path / "cultivar-site-32-x"
    (kept / "site").mkdir(parents=True)
    (kept / "bench.duckdb").write_bytes(b"")
    note = finish(kept, keep=True)
    assert note.startswith("kept: ") and "\n" not in note
    assert all(str(path) in note for path in (kept / "site" / "index.html",
                                              kept / "bench.duckdb"))
    assert f"{kept / 'site'} " in note  # the site folder, then the page to open
    assert (kept / "site").is_dir()

    assert finish(kept, keep=False) is None
    assert not kept.exists()


def test_the_bench_times_what_the_charts_and_site_assets_run(tmp_path, monkeypatch,
                                                               hostile_store_copy):
    """The site asset builds with the charts asset's folder and the model_site parts: the
    bench's timed build writes the charts there first, then the stale parts, and the site (timed
    with the card and the parts' check the asset runs before it) copies the SVGs, drawing none
    itself, and assembles every part, making none itself."""
    from bench_site import timed_build

    from cultivar_assets.site import build as site_build

    def no_svg_job(*args, **kwargs):
        raise AssertionError("the site build started the SVG worker")

    store = hostile_store_copy(tmp_path / "store")
    monkeypatch.setattr(site_build, "SvgJob", no_svg_job)
    summary, charts_s, parts_s, site_s, cpu_s, _, removed_s = timed_build(
        store, tmp_path / "site", "off", tmp_path / "web")
    assert removed_s < 0.1  # no previous build to remove
    charts = sorted((tmp_path / "charts").glob("*.svg"))
    assert charts and charts_s > 0 and parts_s > 0 and cpu_s > 0
    # the site asset's seconds: the card and the parts' check besides the build
    assert site_s >= round(summary.seconds, 2) > 0
    assert summary.path == tmp_path / "site" and summary.assembled_models == summary.models == 2
    for svg in charts:
        assert (tmp_path / "site" / "charts" / svg.name).read_bytes() == svg.read_bytes()
    # the locale shards: written by the locale_shards asset's function, hard-linked by the site
    shards = sorted((tmp_path / "site-locales" / "data" / "locales").glob("*.js"))
    assert shards and sorted(p.name for p in shards) == sorted(
        p.name for p in (tmp_path / "site" / "data" / "locales").iterdir())
    assert all(os.path.samefile(shard, tmp_path / "site" / "data" / "locales" / shard.name)
               for shard in shards)
    parts = sorted(p.name for p in (tmp_path / "site-models").iterdir())
    again = timed_build(store, tmp_path / "site", "off", tmp_path / "web", models=[])
    # the previous build removed by a detached process, as the site asset leaves it: waited for
    assert again[6] >= 0 and [p.name for p in tmp_path.glob(".site.*")] == []
    assert again[0].assembled_models == 2 and again[2] < parts_s
    assert sorted(p.name for p in (tmp_path / "site-models").iterdir()) == parts


def test_settle_waits_what_is_left_of_the_seconds_since_the_last_removal(monkeypatch):
    """``--settle S``: each timed build starts S seconds after the previous build was removed
    at the earliest; nothing is waited for before any removal, or with S = 0."""
    import bench_site

    waited: list[float] = []
    monkeypatch.setattr(bench_site.time, "sleep", waited.append)
    monkeypatch.setattr(bench_site, "_REMOVED_AT", None)
    assert bench_site.settle(30) == 0.0 and waited == []
    now = bench_site.time.perf_counter()
    monkeypatch.setattr(bench_site, "_REMOVED_AT", now - 12.0)  # removed 12 s ago
    assert 17.5 < bench_site.settle(30) <= 18.0
    assert len(waited) == 1 and 17.5 < waited[0] <= 18.0
    assert bench_site.settle(0) == 0.0 and len(waited) == 1
    monkeypatch.setattr(bench_site, "_REMOVED_AT", now - 45.0)  # long enough ago
    assert bench_site.settle(30) == 0.0 and waited[-1] == 0.0
