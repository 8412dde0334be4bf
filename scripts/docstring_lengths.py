"""The module docstrings of the package, by length: how many there are and which run over a limit.

A module docstring's length is its number of lines as written in the file (the lines from the
opening to the closing quotes). Prints the count of modules with a docstring, the count of those
over the limit (20 lines unless ``--limit``), and each of those with its length, longest first;
``--under PATH`` (repeatable) counts only the modules under those paths.

    python scripts/docstring_lengths.py [--limit 20] [--under cultivar_assets/data] [--all]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cultivar_assets"


def module_docstring_lines(path: Path) -> int | None:
    """Lines of the module docstring of ``path`` as written in the file; None without one."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    if not tree.body:
        return None
    first = tree.body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return None
    return first.end_lineno - first.lineno + 1


def docstring_lengths(paths: list[Path]) -> dict[Path, int]:
    """Each module under ``paths`` (files, or folders searched for ``*.py``) that has a module
    docstring, with its length in lines."""
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    return {f: n for f in files if (n := module_docstring_lines(f)) is not None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20, help="lines (default 20)")
    parser.add_argument("--under", action="append", type=Path, default=[],
                        help="count only modules under this path (repeatable)")
    parser.add_argument("--all", action="store_true", help="list every module, not only long ones")
    args = parser.parse_args(argv)
    paths = [p if p.is_absolute() else ROOT / p for p in args.under] or [PACKAGE]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"docstring_lengths: no such path: {', '.join(missing)}", file=sys.stderr)
        return 2
    lengths = docstring_lengths(paths)
    listed = sorted(lengths.items(), key=lambda item: (-item[1], item[0]))
    for path, n in listed:
        if args.all or n > args.limit:
            print(f"{n:4d}  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    over = sum(n > args.limit for n in lengths.values())
    print(f"{over} of {len(lengths)} module docstrings run over {args.limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
