"""The project's documentation as the tests read it (not a test module): a page by name, its
fenced code blocks, its relative links and the anchors GitHub gives its headings.

``doc("database")`` is ``docs/database.md``; ``doc("README")`` is the README. A page that does
not exist is an error naming the path, so a test never passes on a page that moved.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"


def doc(name: str) -> Path:
    """The page ``name``: ``README`` (the repository's README.md) or ``docs/<name>.md``."""
    path = REPO_ROOT / "README.md" if name == "README" else DOCS / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"no documentation page {path}")
    return path


def doc_text(name: str) -> str:
    return doc(name).read_text("utf-8")


def doc_pages() -> list[Path]:
    """The README and every Markdown page under docs/ (docs/extending/ and the like included)."""
    return [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


FENCE = re.compile(r"^([ \t]*)```([\w-]*)[^\n]*\n(.*?)^\1```", re.M | re.S)


def code_blocks(name: str, language: str | None = None) -> list[str]:
    """The fenced code blocks of page ``name`` in order (those of ``language`` only, if given),
    dedented (a block inside a numbered list is indented like the list's text)."""
    return [textwrap.dedent(m[3]) for m in FENCE.finditer(doc_text(name))
            if language in (None, m[2])]


def code_block_after(name: str, marker: str, language: str | None = None) -> str:
    """The first fenced code block (of ``language``) that follows the text ``marker`` on page
    ``name``; an error when the marker or a block after it is missing."""
    text = doc_text(name)
    start = text.index(marker)
    for m in FENCE.finditer(text, start):
        if language in (None, m[2]):
            return textwrap.dedent(m[3])
    raise ValueError(f"no {language or ''} code block after {marker!r} in {doc(name)}")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, markup and punctuation dropped (letters,
    digits, marks, spaces, hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor on a page (outside code blocks; a repeated one gets -1, -2, …)."""
    text = FENCE.sub("", path.read_text("utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for m in re.finditer(r"^#{1,6} (.+)$", text, re.M):
        base = github_anchor(m[1])
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(path: Path) -> list[str]:
    """The targets of the page's Markdown links and images that are not URLs (outside code
    blocks and code spans; a code span that is a link's text stays)."""
    text = FENCE.sub("", path.read_text("utf-8"))
    text = re.sub(r"`[^`\n]*`(?!\]\()", "", text)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]
