"""Run by tests/site_rebuild_cases.py: for each job, a process of its own with a copy of the
package first on ``sys.path`` runs the two assets' calls (``charts``, then ``site`` with the
charts folder, as ``assets/site_assets.py`` makes them) on a store, once as a rebuild over a
previous site and once as a full build into an empty folder.

    python site_rebuild_worker.py

reads one job a line on stdin: {"package": the copy's package folder (checked to be the one
imported), "path": what goes first on ``sys.path``, "home": ``$CULTIVAR_HOME``, "bytecode":
whether imports write it, "store", "charts", "web_cache", "previous": a built site or null,
"rebuilt", "full": output folders, "result": a file}. It imports the third-party libraries the
builds use (:data:`PRELOADED`; none of them imports ``cultivar_assets``) once, then forks a
child per job, which imports ``cultivar_assets`` from the job's copy, runs the builds and writes
the result file: the names of the templates the builds loaded, or the error's traceback. Each
job's answer is a line on stdout: the child's exit status.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def linked_copy(source: Path, target: Path) -> None:
    """``source`` as ``target`` by hard links (the same inodes, sizes and mtimes: the files a
    rebuild finds in its output folder are as the previous build wrote and recorded them)."""
    for folder, _, names in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.link(Path(folder) / name, into / name)


# Imported before the fork: code no case changes.
PRELOADED = ("jinja2", "markupsafe", "duckdb", "numpy", "pandas", "pyarrow", "pyarrow.parquet",
             "scipy", "vl_convert", "yaml", "orjson", "pydantic", "fast_diff_match_patch")


def builds(job: dict) -> list[str]:
    """The two assets' calls of ``job``; the templates they loaded."""
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

    from cultivar_assets.site import charts as site_charts
    from cultivar_assets.site.build import build_site
    from cultivar_assets.store.database import Store

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
    # the site asset, over the previous site, then a full build of the same state
    options = {"card_markdown": "# Card", "charts_dir": charts_dir, "query_page": "off",
               "web_cache": web_cache}
    rebuilt = Path(job["rebuilt"])
    if job["previous"] is not None:
        linked_copy(Path(job["previous"]), rebuilt)
    build_site(store, rebuilt, **options)
    build_site(store, Path(job["full"]), reuse=False, **options)
    return sorted(templates)


def child(job: dict) -> int:
    try:
        result, status = {"templates": builds(job)}, 0
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
