"""Run by tests/site_rebuild_cases.py in a process of its own, with a copy of the package
first on ``sys.path``: the two assets' calls (``charts``, then ``site`` with the charts folder,
as ``assets/site_assets.py`` makes them) on a store, once as a rebuild over a previous site
and once as a full build into an empty folder.

    python site_rebuild_worker.py JOB.json

``JOB.json``: {"package": the copy's package folder (checked to be the one imported), "store",
"charts", "web_cache", "previous": a built site or null, "rebuilt", "full": output folders}.
Prints a JSON line: the names of the templates the builds loaded.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def linked_copy(source: Path, target: Path) -> None:
    """``source`` as ``target`` by hard links (the same inodes, sizes and mtimes: the files a
    rebuild finds in its output folder are as the previous build wrote and recorded them)."""
    for folder, _, names in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.link(Path(folder) / name, into / name)


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text("utf-8"))
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
    print(json.dumps(sorted(templates)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
