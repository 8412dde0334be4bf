"""The cases of ``tests/test_site_stale_rebuild*.py`` (each file runs its share of :data:`CASES`,
so that xdist's workers run them side by side). A site rebuild is never stale: after a change to
any template, any module of ``cultivar_assets/site/`` or any static file the site copies, the
site the assets rebuild (``charts``; each model's ``model_site`` part and the ``locale_shards``
written again only where their asset's code version changed, as Dagster's stale status decides,
else the previous ones; then ``site`` with the charts folder, the parts and the locale shards:
the path Dagster and the runner take) equals,
file by file, a full build of the same state.

The package, ``site/`` and ``sql/`` are copied into a folder of their own; each case changes one
file of that copy so that the pages' output changes (a marker inside every block and macro of a
template, a marker appended to a static file, a change to a constant or a return value of a
module, :data:`MODULE_CHANGES`) and runs both builds in a process of its own
(``site_rebuild_worker.py``) with the copy first on its path. The real files are never edited. A
change that leaves the full build as it was proves nothing, so every case also checks that its
change reaches the output — except where it cannot, which the case checks instead: the modules
this path does not run (:data:`NOT_RUN`: every function made to raise, the builds succeed), the
templates the builds do not load (the annotation tools', found by recording what the Jinja
loader is asked for) and the static files the site does not copy (the tools').

Every case's builds share one ``$CULTIVAR_HOME`` (vl-convert's SVG cache, keyed by the code and
fonts that make an SVG: a change to ``vl_cache.py`` is not served the unchanged code's SVGs) and
start from the unchanged code's bytecode, which the base build wrote; the changed module's
bytecode is removed, so it is compiled from the changed source.
"""

from __future__ import annotations

import ast
import json
import os
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

from site_helpers import hostile_store
from test_site_model_parts import files

import cultivar_assets
from cultivar_assets.paths import resource_dir
from cultivar_assets.store.database import WriteBlock

PACKAGE = Path(cultivar_assets.__file__).resolve().parent
SITE_PACKAGE = PACKAGE / "site"
TEMPLATES = resource_dir("site") / "templates"
STATIC = resource_dir("site") / "static"
WORKER = Path(__file__).with_name("site_rebuild_worker.py")
PYCACHE = "__pycache__"
MARKER = "stale-check-marker"

# One change per module of cultivar_assets/site/ that reaches the built site: (text of the
# module, exactly once; what replaces it).
MODULE_CHANGES: dict[str, tuple[str, str]] = {
    "build.py": ('shards.encode_shard("bootstrap", payload)',
                 'shards.encode_shard("bootstrap", {**payload, "check": 1})'),
    "charts.py": ("MARK_OPACITY = 0.85", "MARK_OPACITY = 0.8"),
    "compare_stats.py": ('return {"v": version, "model": model_id, "blocks": blocks}',
                         'return {"v": version, "model": model_id, "blocks": blocks, "c": 1}'),
    "diff.py": ("    return spans\n", "    return [*spans, Span('~', False)]\n"),
    "downloads.py": ('"compression_level": 6', '"compression_level": 5'),
    "failures.py": ('summary = f"latest run failed{step}', 'summary = f"latest run failed!{step}'),
    "fonts.py": ("(free; ", "(free of charge; "),
    "locale_shards.py": ("shards.encode_shard(key, payload)",
                         "shards.encode_shard(key, {**payload, 'c': 1})"),
    "model_part.py": ("payload = shards.hyp_payload(model_id, sets, by_key)",
                      "payload = {**shards.hyp_payload(model_id, sets, by_key), 'check': 1}"),
    "model_card.py": ('return f"{engine} ({version})"', 'return f"{engine} [{version}]"'),
    "pages.py": ("""return f'<td class="num" data-value="{value}">{value:.{digits}f}</td>'""",
                 """return f'<td class="num n" data-value="{value}">{value:.{digits}f}</td>'"""),
    "query_engine.py": ('"the Query page was left out: site.query_page is off"',
                        '"the Query page was left out: site.query_page is off (!)"'),
    "shards.py": ("GZIP_LEVEL = 4", "GZIP_LEVEL = 5"),
    "site_data.py": ("present_locales=sorted(instances)",
                     "present_locales=sorted(instances, reverse=True)"),
    "site_pages.py": ('"flores": "FLORES {}"', '"flores": "FLORES: {}"'),
    "vl_cache.py": ("lambda: vl_convert.vegalite_to_svg(spec))",
                    "lambda: vl_convert.vegalite_to_svg(spec) + '\\n')"),
}
# Modules whose code the assets' path does not run (imported or not): every function of the
# copy raises, the builds still succeed and write what they wrote before.
NOT_RUN = {
    "child_job.py": "the SVG worker's child process (the site asset passes the charts folder)",
    "svg_worker.py": "the SVG worker (the site asset passes the charts folder)",
    "config.py": "the site's settings (the asset passes the folders they name)",
    "tool_files.py": "the annotation tools' files",
    "tool_pages.py": "the annotation tools' pages",
}


def site_modules() -> list[str]:
    return sorted(path.name for path in SITE_PACKAGE.glob("*.py"))


def static_files() -> list[str]:
    return sorted(p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file())


CASES = ([("template", path.name) for path in sorted(TEMPLATES.glob("*.j2"))]
         + [("module", name) for name in site_modules() if name != "__init__.py"]
         + [("static", name) for name in static_files()])


def changed_template(text: str) -> str:
    """A marker inside every block and macro (a child template's text outside its blocks is
    never rendered, an imported template's only through its macros) and at the end."""
    return re.sub(r"(\{%-?\s*end(?:block|macro)\b)", MARKER + r"\1", text) + MARKER + "\n"


def changed_static(name: str, data: bytes) -> bytes:
    if name.endswith((".js", ".css")):
        return data + f"\n/* {MARKER} */\n".encode()
    if name.endswith((".svg", ".html")):
        return data + f"\n<!-- {MARKER} -->\n".encode()
    return data + f"\n{MARKER}\n".encode()


def raising(source: str, name: str) -> str:
    """``source`` with every function and method raising as its first statement."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.body.insert(0, ast.parse(
                f"raise AssertionError('{name}: {node.name} ran')").body[0])
    return ast.unparse(tree)


def changed_module(name: str, source: str) -> str:
    if name in NOT_RUN:
        return raising(source, name)
    old, new = MODULE_CHANGES[name]
    assert source.count(old) == 1, f"site/{name}: the change's text occurs {source.count(old)} " \
                                   f"times, not once: {old!r}"
    return source.replace(old, new)


def copy_code(target: Path) -> Path:
    """The package, site/ and sql/ under ``target`` in a checkout's layout; the package."""
    ignore = shutil.ignore_patterns("__pycache__", "node_modules")
    shutil.copytree(PACKAGE, target / "cultivar_assets", ignore=ignore)
    shutil.copytree(resource_dir("site"), target / "site", ignore=ignore)
    shutil.copytree(resource_dir("sql"), target / "sql", ignore=ignore)
    return target / "cultivar_assets"


class Worker:
    """``site_rebuild_worker.py`` in a process of its own, which forks a child per job (its
    stderr in ``log``)."""

    def __init__(self, log: Path):
        self.log = log
        env = {**os.environ}
        env.pop("PYTHONPATH", None)  # the job's copy goes first on the child's path
        with open(log, "w", encoding="utf-8") as err:
            self.process = subprocess.Popen([sys.executable, str(WORKER)], env=env, text=True,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=err)

    def run(self, job: dict, timeout: float = 300) -> int:
        """The child's exit status for ``job``."""
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        assert line, (f"the rebuild worker gave no answer in {timeout} s (exit status "
                      f"{self.process.poll()}): {self.log.read_text('utf-8')[-3000:]}")
        return int(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def run_builds(worker: Worker, code: Path, store: Path, work: Path, home: Path, web_cache: Path,
               previous: Path | None, bytecode: bool = False) -> tuple[Path, Path, dict]:
    """The worker's builds over the code at ``code`` with ``home`` as ``$CULTIVAR_HOME``
    (``previous``: the previous parts' folder): (the rebuilt site, the full build, the worker's
    result: the templates they loaded, whether the parts were made again; the parts are in
    ``work / "parts"``). ``bytecode``: the imports write it."""
    work.mkdir(parents=True)
    job = {"package": str(code / "cultivar_assets"), "path": str(code), "home": str(home),
           "bytecode": bytecode, "store": str(store), "charts": str(work / "charts"),
           "web_cache": str(web_cache), "previous": None if previous is None else str(previous),
           "parts": str(work / "parts"), "locales": str(work / "locales"),
           "rebuilt": str(work / "rebuilt"),
           "full": str(work / "full"), "result": str(work / "result.json")}
    status = worker.run(job)
    result = json.loads((work / "result.json").read_text("utf-8"))
    assert status == 0, result.get("error", f"exit status {status}")[-3000:]
    return work / "rebuilt", work / "full", result


def base_state(root: Path, worker: Worker) -> dict:
    """A store (two models, a recorded failure), the unchanged code's site (the previous build
    of every case) and full build, under ``root``."""
    (root / "store").mkdir()
    store = hostile_store(root / "store")
    store.write([WriteBlock("record_run_failure", {
        "run_id": "run-1", "job": "evaluate_model", "model_id": "copy-source-baseline",
        "step": "translations", "error": "RuntimeError: out of memory",
        "failed_at": "2999-01-01 12:00:00"})])
    code = root / "code"
    copy_code(code)
    home, web_cache = root / "home", root / "web"
    rebuilt, full, result = run_builds(worker, code, store.path, root / "base", home,
                                       web_cache, None, bytecode=True)
    assert files(rebuilt) == files(full)
    assert result["digest"] == result["folder_digest"]
    return {"worker": worker, "root": root, "code": code, "store": store.path, "home": home,
            "web_cache": web_cache, "previous": root / "base" / "parts", "full": files(full),
            "templates": result["templates"], "digest": result["digest"]}


def stale_state(tmp_path_factory):
    """:func:`base_state` in a folder of its own, with its :class:`Worker` (each test file's
    module-scoped fixture ``state``)."""
    root = tmp_path_factory.mktemp("stale")
    worker = Worker(root / "worker.log")
    yield base_state(root, worker)
    worker.close()


def check_module_list() -> None:
    """Every module of the site package has a change or is known not to run."""
    modules = set(site_modules()) - {"__init__.py"}
    assert set(MODULE_CHANGES) | set(NOT_RUN) == modules, "give each site module a change"
    assert not set(MODULE_CHANGES) & set(NOT_RUN)
    # the package's own module holds no code that could change a page
    init = ast.parse((SITE_PACKAGE / "__init__.py").read_text("utf-8"))
    assert [type(node) for node in init.body] in ([], [ast.Expr])


def check_case(state: dict, tmp_path: Path, kind: str, name: str) -> None:
    """One case: the change of ``name`` (a ``kind``: template, static or module) in a copy of
    the base state's code, its rebuild over the previous site held to its full build, and its
    digest (the site asset's data version) to its folder's, new when the change reached it."""
    code = tmp_path / "code"
    shutil.copytree(state["code"], code)
    if kind == "template":
        path = code / "site" / "templates" / name
        path.write_text(changed_template(path.read_text("utf-8")), "utf-8")
    elif kind == "static":
        path = code / "site" / "static" / name
        path.write_bytes(changed_static(name, path.read_bytes()))
    else:
        path = code / "cultivar_assets" / "site" / name
        path.write_text(changed_module(name, path.read_text("utf-8")), "utf-8")
        for compiled in (path.parent / PYCACHE).glob(f"{path.stem}.*.pyc"):
            compiled.unlink()
    rebuilt, full, result = run_builds(state["worker"], code, state["store"],
                                       tmp_path / "builds", state["home"], state["web_cache"],
                                       state["previous"])
    full_files = files(full)
    made, before = full_files, state["full"]
    if kind == "static" and f"static/{name}" not in state["full"]:
        assert made == before, f"site/static/{name} is not copied, yet its change reached the site"
    elif kind == "template" and name not in state["templates"]:  # the tools' templates
        assert made == before, f"{name} is not loaded, yet its change reached the site"
    elif kind == "module" and name in NOT_RUN:
        assert made == before  # and none of its functions ran: each would have raised
    else:
        changed = [p for p in made.keys() | before.keys() if made.get(p) != before.get(p)]
        assert changed, f"the change to {name} did not reach the built site; change it otherwise"
    rebuilt_files = files(rebuilt)
    stale = sorted(p for p in rebuilt_files.keys() | full_files.keys()
                   if rebuilt_files.get(p) != full_files.get(p))
    assert not stale, (f"after a change to {name}, the rebuild differs from a full build in "
                       f"{len(stale)} files: {stale[:8]}")
    # the site asset's data version: the rebuilt folder's digest, new exactly where a page or
    # file is (every file, the DuckDB download too, is byte-reproducible)
    assert result["digest"] == result["folder_digest"]
    if made != before:
        assert result["digest"] != state["digest"], name
    else:
        assert result["digest"] == state["digest"], name


SHARES = 2  # test_site_stale_rebuild.py runs share 0, test_site_stale_rebuild_2.py share 1


def share(index: int) -> list[tuple[str, str]]:
    """Every :data:`SHARES`-th case from ``index``: the shares are disjoint and hold every case."""
    return CASES[index::SHARES]
