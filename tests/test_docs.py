"""The documentation holds together: a short README, every relative link and anchor resolves,
docs/index.md lists every page, the README's picture is there and small, its Layout table names
every package, SQL file and script, and every figure of docs/performance.md names its command."""

from __future__ import annotations

import re
from pathlib import Path

from doc_helpers import (
    DOCS,
    REPO_ROOT,
    anchors,
    doc,
    doc_pages,
    doc_text,
    github_anchor,
    relative_links,
)

README_MAX_LINES = 250
IMAGE = DOCS / "images" / "leaderboard.png"


def test_readme_is_at_most_250_lines():
    lines = doc_text("README").splitlines()
    assert 0 < len(lines) <= README_MAX_LINES, len(lines)


def test_readme_keeps_its_two_commands():
    readme = doc_text("README")
    assert ('```bash\npython3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e ".[cpu]" '
            '&& .venv/bin/cultivar demo\n```') in readme
    assert "```bash\nbash .ci/run\n```" in readme


def _broken_links(page: Path) -> list[str]:
    broken = []
    for link in relative_links(page):
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no file {path}")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"{link}: no heading with anchor #{anchor} in {path.name}")
    return broken


def test_every_relative_link_and_anchor_resolves():
    pages = doc_pages()
    assert len(pages) >= 12
    broken = {page.name: b for page in pages if (b := _broken_links(page))}
    assert broken == {}


def test_the_link_check_catches_a_missing_file_and_a_missing_anchor(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## Reusing `unchanged` steps (here)\n")
    page.write_text("[a](other.md#reusing-unchanged-steps-here) [b](gone.md) [c](other.md#nope) "
                    "[d](https://example.com/x.md) `[e](inline.md)`\n")
    assert _broken_links(page) == [
        f"gone.md: no file {tmp_path / 'gone.md'}",
        "other.md#nope: no heading with anchor #nope in other.md",
    ]


def test_github_anchor():
    assert github_anchor("Decoding on a CPU (the demo)") == "decoding-on-a-cpu-the-demo"
    assert github_anchor("Error analysis (paper §5, Table 5)") == "error-analysis-paper-5-table-5"
    assert (github_anchor("Serving a registry model over HTTP: `cultivar serve-model`")
            == "serving-a-registry-model-over-http-cultivar-serve-model")
    assert github_anchor("The first `cultivar demo`") == "the-first-cultivar-demo"


def test_index_lists_every_page():
    index = doc_text("index")
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                   if p.name != "index.md")
    assert [p for p in pages if f"]({p})" not in index] == []
    assert "](../ARCHITECTURE.md)" in index and "](../README.md)" in index


def test_the_readme_picture_is_the_screenshot_and_small():
    assert "](docs/images/leaderboard.png)" in doc_text("README")
    data = IMAGE.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) < 300_000
    assert (REPO_ROOT / "scripts" / "screenshot_site.py").is_file()
    assert "demo data" in doc_text("README").split("docs/images/leaderboard.png")[1][:400]


def test_doc_finds_pages_by_name_and_refuses_missing_ones():
    assert doc("database") == DOCS / "database.md"
    try:
        doc("no-such-page")
    except FileNotFoundError as error:
        assert "no-such-page.md" in str(error)
    else:
        raise AssertionError("a missing page must be an error")


_FIGURE = re.compile(r"\d[\d,.]*\s?(?:s|ms|MB|GB|KB|MiB|minutes|segments/s|tokens/s)\b")
_COMMAND = re.compile(  # in inline code, or on a line of a fenced block
    r"(?:`|^)(?:python |bash |OMP_NUM_THREADS=|VLLM_|\.venv/bin/|dagster |cultivar )", re.MULTILINE)
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _sections_without_their_command(text: str) -> list[str]:
    """The ``## `` sections of a performance page that state a figure (a number with a unit)
    but name no command that measures it (``python …``, ``bash …`` and the like, in inline code
    or on a line of a code block) or no date it was measured."""
    lacking = []
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        title = section.splitlines()[0]
        if _FIGURE.search(section) and not (_COMMAND.search(section) and _DATE.search(section)):
            lacking.append(title)
    return lacking


def test_every_figure_in_performance_md_names_its_command_and_date():
    assert _sections_without_their_command(doc_text("performance")) == []


def test_the_performance_check_finds_a_figure_without_a_command():
    page = ("# P\n\n## Measured\n\n`python benchmarks/x.py` (2026-12-01): 3.2 s.\n\n"
            "## Unmeasured\n\nThe build takes 4.5 s.\n")
    assert _sections_without_their_command(page) == ["Unmeasured"]


def _layout_row(readme: str, path: str) -> str:
    """The cell of the README's Layout table whose first column is ``path``."""
    rows = [line for line in readme.splitlines() if line.startswith(f"| `{path}`")]
    assert len(rows) == 1, f"README.md: {len(rows)} Layout rows for {path}"
    return rows[0]


def _unnamed(cell: str, names: list[str]) -> list[str]:
    return [name for name in names if f"`{name}`" not in cell]


def test_the_readme_layout_names_every_package_sql_file_and_script():
    readme = doc_text("README")
    package = REPO_ROOT / "cultivar_assets"
    subpackages = sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    assert [p for p in subpackages if f"| `cultivar_assets/{p}/`" not in readme] == []
    named_sql = sorted(p.stem for p in (REPO_ROOT / "sql").glob("*.sql")
                       if p.name not in ("schema.sql", "views.sql"))
    assert _unnamed(_layout_row(readme, "sql/"), named_sql) == []
    scripts = sorted(p.name for p in (REPO_ROOT / "scripts").glob("*.py"))
    assert _unnamed(_layout_row(readme, "scripts/"), scripts) == []


_TRACKER_REFERENCE = re.compile(r"\bissue #?\d", re.IGNORECASE)
_SOURCE_SUFFIXES = {".py", ".md", ".sql", ".css", ".js", ".html", ".j2", ".yaml", ".yml", ".toml",
                    ".sh", ".txt"}


def _tracker_references(root: Path) -> list[str]:
    """``path:line`` of every "issue N" in the text files under ``root`` (a tracker the
    repository does not hold), hidden folders left out."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (path.suffix not in _SOURCE_SUFFIXES or not path.is_file()
                or any(part.startswith(".") for part in relative.parts[:-1])):
            continue
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if _TRACKER_REFERENCE.search(line):
                found.append(f"{relative.as_posix()}:{number}")
    return found


def test_no_file_refers_to_an_issue_by_number():
    found = []
    for name in ("cultivar_assets", "tests", "docs", "sql", "site", "scripts", "benchmarks"):
        found += [f"{name}/{where}" for where in _tracker_references(REPO_ROOT / name)]
    for name in ("README.md", "ARCHITECTURE.md", "pyproject.toml", ".ci/run"):
        text = (REPO_ROOT / name).read_text("utf-8")
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if _TRACKER_REFERENCE.search(line)]
    assert found == []


def test_the_issue_check_finds_a_reference(tmp_path):
    word = "issue"  # not written next to a number here, or this file would hold one
    (tmp_path / "a.py").write_text(f'"""Refused ({word} 37)."""\n# see {word.title()} #8\nx = 1\n')
    (tmp_path / "b.bin").write_text(f"{word} 9\n")
    assert _tracker_references(tmp_path) == ["a.py:1", "a.py:2"]


def _collected(test_file: str) -> int:
    """How many tests pytest collects in ``test_file`` with every marker."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "",
                           "-p", "no:cacheprovider", test_file], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.MULTILINE)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return int(found.group(1))


def _claimed(title: str) -> int:
    """The number docs/reliability.md states in its bullet ``**<title>: N**``."""
    found = re.search(rf"\*\*{re.escape(title)}: (\d+)\*\*", doc_text("reliability"))
    assert found, f"docs/reliability.md has no **{title}: N**"
    return int(found.group(1))


def test_the_counts_reliability_md_states_are_the_suites():
    import hostile_strings

    assert _claimed("Hostile strings") == len(hostile_strings.ALL)
    groups = re.search(r"`tests/hostile_strings.py`, (\d+) groups", doc_text("reliability"))
    assert groups and int(groups.group(1)) == len(hostile_strings.GROUPS)
    assert _claimed("Inputs that would hang or exhaust memory") == _collected(
        "tests/test_input_files.py")
    assert _claimed("Disk-full cases") == _collected("tests/test_disk_full.py")
