"""Run by tests/site_rebuild_cases.py: for each job, a process of its own with a copy of the
package first on ``sys.path`` runs the assets' calls on a store as Dagster would run them after a
change of code: ``charts``; each model's ``model_site`` partition only where its code version
(:func:`cultivar_assets.assets.versioned.asset_code_version`) differs from the one the previous
parts were written with (Dagster's stale status; the store is unchanged), else the previous
parts kept; ``locale_shards`` likewise; then ``site`` with the charts folder, the parts and the
locale shards, as ``assets/site_assets.py`` makes them. And a full build of the same state into
an empty folder.

    python site_rebuild_worker.py

reads one job a line on stdin: {"package": the copy's package folder (checked to be the one
imported), "path": what goes first on ``sys.path``, "home": ``$CULTIVAR_HOME``, "bytecode":
whether imports write it, "store", "charts", "web_cache", "previous": the previous parts'
folder or null (the previous locale shards: ``locales`` beside it), "parts", "locales",
"rebuilt", "full": output folders, "result": a file}. It imports the
third-party libraries the builds use (:data:`PRELOADED`; none of them imports
``cultivar_assets``) once, then forks a
child per job, which imports ``cultivar_assets`` from the job's copy, runs the builds and writes
the result file: the names of the templates the builds loaded, whether the parts were
written again and the rebuilt site's digest (the ``site`` asset's data version) beside
``folder_digest`` of its folder, or the error's traceback. Each
job's answer is a line on stdout: the child's exit status.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def linked_copy(source: Path, target: Path) -> None:
    """``source`` as ``target`` by hard links (the previous parts, as their asset left them)."""
    for folder, _, names in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.link(Path(folder) / name, into / name)


# Imported before the fork: code no case changes.
PRELOADED = ("dagster", "jinja2", "markupsafe", "duckdb", "numpy", "pandas", "pyarrow",
             "pyarrow.parquet", "scipy", "vl_convert", "yaml", "orjson", "pydantic",
             "fast_diff_match_patch")


def builds(job: dict) -> dict:
    """The assets' calls of ``job``; the templates they loaded, whether the parts were made
    again."""
    if "cultivar_assets" in sys.modules:
        raise SystemExit("cultivar_assets was imported before the job's copy was put on the path")
    sys.path.insert(0, job["path"])
    os.environ["CULTIVAR_HOME"] = job["home"]
    sys.dont_write_bytecode = not job["bytecode"]
    import cultivar_assets

    imported = Path(cultivar_assets.__file__).resolve().parent
    if imported != Path(job["package"]).resolve():
        raise SystemExit(f"imported cultivar_assets from {imported}, not {job['package']}")
    import jinja2

    from cultivar_assets.assets.site_assets import locale_shards, model_site
    from cultivar_assets.assets.versioned import asset_code_version
    from cultivar_assets.site import charts as site_charts
    from cultivar_assets.site.build import build_site
    from cultivar_assets.site.locale_shards import write_locale_shards
    from cultivar_assets.site.model_part import write_model_part
    from cultivar_assets.site.pages import model_slug
    from cultivar_assets.store.database import Store
    from cultivar_assets.versions.rows import folder_digest

    templates: set[str] = set()  # the templates the builds load
    get_source = jinja2.FileSystemLoader.get_source

    def recording(loader, environment, name):
        templates.add(name)
        return get_source(loader, environment, name)

    jinja2.FileSystemLoader.get_source = recording
    store = Store(Path(job["store"]))
    charts_dir, web_cache = Path(job["charts"]), Path(job["web_cache"])
    # the charts asset
    site_charts.write_store_charts(store, charts_dir)
    # the model_site partitions: stale only where the asset's code version changed
    version, parts = asset_code_version(model_site), Path(job["parts"])
    previous = None if job["previous"] is None else Path(job["previous"])
    remade = previous is None or (previous / "code_version").read_text("utf-8") != version
    models = [row["model_id"] for row in store.query("site_translated_models")]
    folders = {model_id: parts / model_slug(model_id) for model_id in models}
    if remade:
        for model_id, folder in folders.items():
            write_model_part(store, model_id, folder)
    else:
        linked_copy(previous, parts)
    (parts / "code_version").write_text(version, "utf-8")
    # the locale_shards asset: stale only where its code version changed
    version, locales = asset_code_version(locale_shards), Path(job["locales"])
    before = None if previous is None else previous.parent / "locales"
    if before is None or (before / "code_version").read_text("utf-8") != version:
        write_locale_shards(store, locales / "shards")
    else:
        linked_copy(before, locales)
    (locales / "code_version").write_text(version, "utf-8")
    # the site asset with the parts, then a full build of the same state
    options = {"card_markdown": "# Card", "charts_dir": charts_dir, "query_page": "off",
               "web_cache": web_cache}
    rebuilt = build_site(store, Path(job["rebuilt"]), model_parts=folders,
                         locale_shards=locales / "shards", **options)
    build_site(store, Path(job["full"]), **options)
    return {"templates": sorted(templates), "remade": remade,
            "digest": rebuilt.digest, "folder_digest": folder_digest(rebuilt.path)}


def child(job: dict) -> int:
    try:
        result, status = builds(job), 0
    except BaseException:  # every failure goes back to the test, whole
        result, status = {"error": traceback.format_exc()}, 1
    Path(job["result"]).write_text(json.dumps(result), "utf-8")
    return status


def main() -> int:
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                status = child(job)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, waited = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(waited), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
