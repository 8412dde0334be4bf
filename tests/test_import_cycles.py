"""No import cycle among the package's modules, function-level imports included (grimp, which
import-linter runs on, reads every ``import`` statement; those under ``if TYPE_CHECKING:`` name
types only and are left out). The ``acyclic_siblings`` contract of pyproject.toml checks the
modules of each package against each other; this check also covers a package's ``__init__`` and
the modules below it, and cycles through other packages."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def import_cycles(package: str) -> list[list[str]]:
    """The groups of modules of ``package`` that import each other in a cycle (the strongly
    connected components of more than one module, or one that imports itself), each sorted."""
    graph = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules))
             for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in modules:  # Tarjan's algorithm, iteratively
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            module, position = work.pop()
            if position == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            for offset, target in enumerate(edges[module][position:], position):
                if target not in index:
                    work += [(module, offset + 1), (target, 0)]
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                if low[module] == index[module]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == module:
                            break
                    if len(group) > 1 or module in edges[module]:
                        groups.append(sorted(group))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
    return sorted(groups)


def test_the_package_has_no_import_cycle():
    assert import_cycles("cultivar_assets") == []


def test_the_check_finds_a_cycle_through_a_function_level_import_and_a_package(tmp_path,
                                                                             monkeypatch):
    package = tmp_path / "cyclepkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclepkg import b\n")
    (package / "b.py").write_text("def f():\n    from cyclepkg import a\n    return a\n")
    (package / "c.py").write_text("import cyclepkg.a\n")
    (package / "sub" / "__init__.py").write_text("from cyclepkg.sub import d\n")
    (package / "sub" / "d.py").write_text("from cyclepkg import sub\n")
    (package / "e.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclepkg import f\n")
    (package / "f.py").write_text("from cyclepkg import e\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert import_cycles("cyclepkg") == [["cyclepkg.a", "cyclepkg.b"],
                                             ["cyclepkg.sub", "cyclepkg.sub.d"]]
    finally:
        sys.modules.pop("cyclepkg", None)
