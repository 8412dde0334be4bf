"""The benchmark and maintenance scripts name only modules and attributes the package has.

They run rarely (by hand, on a GPU machine, before a release), so an import that a move or a
rename broke would otherwise be found only then: every ``from cultivar_assets... import ...`` in
``benchmarks/*.py`` and ``scripts/*.py``, at any depth (inside functions too), must import.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py")])


def package_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of each import of the package in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cultivar_assets"):
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names
                         if alias.name.startswith("cultivar_assets"))
    return found


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_scripts_imports_of_the_package_resolve(path):
    missing = []
    for line, module, names in package_imports(path):
        try:
            imported = importlib.import_module(module)
        except ImportError as error:
            missing.append(f"line {line}: {module} ({error})")
            continue
        missing.extend(f"line {line}: {module}.{name}" for name in names
                       if not hasattr(imported, name)
                       and not (hasattr(imported, "__path__")  # a package's submodule
                                and importlib.util.find_spec(f"{module}.{name}")))
    assert not missing, f"{path.relative_to(ROOT)} imports what the package lacks: {missing}"


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 10 and any(p.name == "bench_decoding.py" for p in SCRIPTS)
