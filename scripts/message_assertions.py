"""List the test assertions that pin the wording of a message: checks of prose (two or more
words in a row) against an error, a warning or a command's output.

Read with ``ast`` from every Python file under ``tests/``. A check is one of:

- ``match`` of ``pytest.raises(...)`` or ``pytest.warns(...)``, ``<info>.match(...)``;
- ``assert "..." in X``, ``assert "..." not in X``, ``assert X == "..."`` and
  ``assert re.search("...", X)`` (``re.match``, ``re.fullmatch``) and
  ``assert X.startswith("...")`` (``endswith``) where ``X`` is a message: its
  source names ``str(...)``, an error, a message, a warning, a log or a command's output
  (``MESSAGE_NAMES``) and no published page (``PAGE_NAMES``).

The literal's text is its constant parts (the fields of an f-string break it), with the
backslashes of regular-expression escapes removed. It is prose when it holds two words of
letters separated by one space (``PROSE``). A check whose statement (from the line before it to
the check's line) holds the comment ``# wording is the interface`` is listed as kept.

Usage: ``python scripts/message_assertions.py [--list] [--words N] [TESTS_DIR]`` (``--words``:
the words in a row that make prose, 2 unless given). Prints
``message assertions N`` (``kept N``, ``files N``); ``--list`` adds one line per check:
``path:line kind [kept] 'text'``.
"""

from __future__ import annotations

import argparse
import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PROSE = re.compile(r"[A-Za-z]+ [A-Za-z]+")  # ``--words 3``: three words in a row
MESSAGE_NAMES = re.compile(
    r"str\(|err|out|message|msg|said|print|error|problem|reason|notice|note|log|warn|exc|"
    r"value|failure|refus|complain|raised|why|text|status|shown", re.IGNORECASE)
PAGE_NAMES = re.compile(r"page|html|body|card|method|readme|locator|markdown|inner_text|"
                        r"read_text|\.text\b|texts\[|\[\"text\"\]", re.IGNORECASE)
KEPT = "# wording is the interface"
SEARCHES = {"search", "match", "fullmatch"}


@dataclass(frozen=True)
class Check:
    """One assertion on a message's wording: where it is, its kind, its text, and whether a
    ``# wording is the interface`` comment marks it as kept."""

    path: Path
    line: int
    kind: str
    text: str
    kept: bool


def literal_text(node: ast.AST, regex: bool) -> str | None:
    """The constant text of a string literal or f-string (fields as ``{}``); ``None`` for any
    other expression. ``regex``: character classes (``\\b``, ``\\d``, ...) as ``{}``, and the
    backslash of each escaped character dropped."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(part.value if isinstance(part, ast.Constant) else "{}"
                       for part in node.values)
    else:
        return None
    if not regex:
        return text
    return re.sub(r"\\(.)", r"\1", re.sub(r"\\[bBdDsSwWAZ]", "{}", text))


def is_prose(text: str | None) -> bool:
    """Two words of letters in a row, separated by one space."""
    return text is not None and PROSE.search(text) is not None


def is_message(source: str) -> bool:
    """The source of an expression that names a message rather than a published page."""
    return MESSAGE_NAMES.search(source) is not None and PAGE_NAMES.search(source) is None


def call_name(node: ast.Call) -> tuple[str, str]:
    """(``owner``, ``attribute``) of ``owner.attribute(...)`` (``owner`` empty unless a plain
    name); empty strings for a call of a plain name."""
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return owner, func.attr
    return "", ""


def checks_in(node: ast.AST, source: str) -> list[tuple[int, str, str]]:
    """(line, kind, text) of each wording check rooted at ``node``."""
    found: list[tuple[int, str, str]] = []
    if isinstance(node, ast.Call):
        owner, attr = call_name(node)
        if owner == "pytest" and attr in ("raises", "warns"):
            for keyword in node.keywords:
                text = literal_text(keyword.value, regex=True)
                if keyword.arg == "match" and is_prose(text):
                    found.append((node.lineno, f"{attr}(match=)", text))
        elif attr == "match" and owner not in ("re", "") and node.args:
            text = literal_text(node.args[0], regex=True)
            if is_prose(text):
                found.append((node.lineno, ".match()", text))
    if isinstance(node, ast.Assert):
        for test in (node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]):
            found.extend(assert_checks(test, source))
    return found


def assert_checks(test: ast.AST, source: str) -> list[tuple[int, str, str]]:
    """(line, kind, text) of the wording checks in one asserted expression."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Call) and call_name(test)[0] == "re" \
            and call_name(test)[1] in SEARCHES and len(test.args) >= 2:
        text = literal_text(test.args[0], regex=True)
        target = ast.get_source_segment(source, test.args[1]) or ""
        if is_prose(text) and is_message(target):
            return [(test.lineno, f"re.{call_name(test)[1]}", text)]
        return []
    if isinstance(test, ast.Call) and call_name(test)[1] in ("startswith", "endswith") \
            and isinstance(test.func, ast.Attribute) and test.args:
        text = literal_text(test.args[0], regex=False)
        target = ast.get_source_segment(source, test.func.value) or ""
        if is_prose(text) and is_message(target):
            return [(test.lineno, f".{call_name(test)[1]}()", text or "")]
        return []
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return []
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)):
        text, target = literal_text(left, regex=False), right
        kind = "in" if isinstance(op, ast.In) else "not in"
    elif isinstance(op, ast.Eq):
        text, target = literal_text(right, regex=False), left
        if text is None:
            text, target = literal_text(left, regex=False), right
        kind = "=="
    else:
        return []
    if is_prose(text) and is_message(ast.get_source_segment(source, target) or ""):
        return [(test.lineno, kind, text or "")]
    return []


def file_checks(path: Path) -> list[Check]:
    """Every wording check in one Python file, in line order."""
    source = path.read_text("utf-8")
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(path))
    found = {(line, kind, text) for node in ast.walk(tree)
             for line, kind, text in checks_in(node, source)}
    starts: dict[int, int] = {}  # line -> first line of the innermost statement holding it
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                starts[line] = max(starts.get(line, 0), node.lineno)

    def kept(line: int) -> bool:
        """The comment on the check's line, on a line of its statement before it, or on the
        line before that statement."""
        first = starts.get(line, line) - 1
        return any(KEPT in lines[index] for index in range(first - 1, line) if index >= 0)

    return [Check(path, line, kind, text, kept(line)) for line, kind, text in sorted(found)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests_dir", nargs="?", type=Path, default=REPO_ROOT / "tests")
    parser.add_argument("--list", action="store_true", help="one line per check")
    parser.add_argument("--words", type=int, default=2, help="words in a row that make prose")
    args = parser.parse_args(argv)
    tests_dir = args.tests_dir.resolve()
    if args.words < 1:
        raise SystemExit(f"--words {args.words}: give 1 or more")
    global PROSE
    PROSE = re.compile(" ".join(["[A-Za-z]+"] * args.words))
    if not tests_dir.is_dir():
        raise SystemExit(f"no tests directory at {tests_dir}")
    checks = [check for path in sorted(tests_dir.rglob("*.py")) for check in file_checks(path)]
    if args.list:
        for check in checks:
            mark = " kept" if check.kept else ""
            print(f"{check.path.relative_to(tests_dir.parent)}:{check.line} {check.kind}{mark} "
                  f"{check.text!r}")
    print(f"message assertions {len(checks)}")
    print(f"kept {sum(check.kept for check in checks)}")
    print(f"files {len({check.path for check in checks})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
