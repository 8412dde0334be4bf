"""Count what the test suite checks: ``assert`` statements and ``pytest.raises`` uses in every
Python file under ``tests/`` (read with ``ast``, so comments and strings do not count), and,
with ``--collect``, the number of tests pytest collects with every marker (``-m ""``).

Usage: ``python scripts/count_assertions.py [--collect] [--per-file] [TESTS_DIR]``.
Prints one line per figure (``asserts N``, ``pytest.raises N``, ``files N``, ``collected N``);
``--per-file`` adds ``asserts raises path`` for each file that has either.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def is_pytest_raises(node: ast.AST) -> bool:
    """``pytest.raises(...)`` as a call (the context manager and the call form alike)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "raises" and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "pytest")


def count_file(path: Path) -> tuple[int, int]:
    """(``assert`` statements, ``pytest.raises`` calls) in one Python file."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    asserts = raises = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            asserts += 1
        elif is_pytest_raises(node):
            raises += 1
    return asserts, raises


def collected_tests(tests_dir: Path) -> int:
    """The number of tests ``pytest --collect-only -m ""`` finds in ``tests_dir``."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-p", "no:xdist",
         str(tests_dir)], cwd=tests_dir.parent, capture_output=True, text=True)
    match = re.search(r"^(\d+) tests? collected", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"pytest --collect-only failed (exit {done.returncode}) in {tests_dir}:\n"
                         + (done.stdout + done.stderr)[-2000:])
    return int(match.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests_dir", nargs="?", type=Path, default=REPO_ROOT / "tests")
    parser.add_argument("--collect", action="store_true", help="also count collected tests")
    parser.add_argument("--per-file", action="store_true", help="one line per file")
    args = parser.parse_args(argv)
    tests_dir = args.tests_dir.resolve()
    if not tests_dir.is_dir():
        raise SystemExit(f"no tests directory at {tests_dir}")
    files = sorted(tests_dir.rglob("*.py"))
    counts = {path: count_file(path) for path in files}
    if args.per_file:
        for path, (asserts, raises) in counts.items():
            if asserts or raises:
                print(f"{asserts:5d} {raises:4d} {path.relative_to(tests_dir.parent)}")
    print(f"asserts {sum(a for a, _ in counts.values())}")
    print(f"pytest.raises {sum(r for _, r in counts.values())}")
    print(f"files {len(files)}")
    if args.collect:
        print(f"collected {collected_tests(tests_dir)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
