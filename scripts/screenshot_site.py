"""The README's picture: a screenshot of the leaderboard page of a site built from demo data.

    .venv/bin/python scripts/screenshot_site.py                 # writes docs/images/leaderboard.png
    .venv/bin/python scripts/screenshot_site.py --out x.png --width 1400

The site is the one the site tests build (``tests/site_helpers.py``, ``systems_store``): the
bundled demo test sets translated by the copy baseline and by two stand-in systems defined here
(each keeps the source but drops every k-th word: not models), scored and aggregated, then
``build_site`` (no Query page). The page is opened in Debian's Chromium through Playwright, as
the browser tests open it (``tests/browser_helpers.py``), with the fonts set explicitly: a
private fontconfig file naming the system's fonts less Noto (the tests' "without Noto" setup),
so the picture does not depend on the fonts of the user's own configuration. Nothing is
downloaded. The PNG is written with Chromium's own encoder; the script refuses one of 300 KB or
more (the README's limit).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))  # the tests' site and browser helpers

from browser_helpers import CHROMIUM, chromium, font_setup, serve  # noqa: E402
from site_helpers import systems_store  # noqa: E402

from cultivar_assets.engines.base import Engine, EngineInfo  # noqa: E402
from cultivar_assets.site.build import build_site  # noqa: E402

MAX_BYTES = 300_000
# registry id -> (the model id shown, family); k: every k-th word dropped
SYSTEMS = {"stand-in-k3": ("stand-in-k3", "Stand-in"),
           "stand-in-k5": ("stand-in-k5", "Stand-in")}


class DropWordsEngine(Engine):
    """A stand-in system (not a model): the source sentence with every k-th word left out, k
    from the registry id's last digit."""

    name = "drop-words"
    prompt_kinds = ("source",)
    output_settings = ()

    def info(self) -> EngineInfo:
        return EngineInfo(self.name, "screenshot", None, None)

    def generate(self, requests):
        k = int(self.spec.id[-1])
        return [" ".join(w for i, w in enumerate(r.source.split(), 1) if i % k)
                for r in requests]


def screenshot(out: Path, width: int, height: int) -> int:
    if not CHROMIUM.exists():
        raise SystemExit(f"needs Debian's Chromium at {CHROMIUM} (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = systems_store(root, DropWordsEngine, SYSTEMS)
        build_site(store, root / "site", query_page="off")
        fonts = font_setup("without Noto", root / "fonts")
        with serve(root / "site") as base, chromium(fonts) as browser:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{base}/index.html")
            page.wait_for_load_state("networkidle")
            data = page.screenshot(type="png")
    if len(data) >= MAX_BYTES:
        raise SystemExit(f"the screenshot is {len(data):,} bytes, over the {MAX_BYTES:,} allowed: "
                         "take a smaller --width/--height")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=REPO_ROOT / "docs" / "images" / "leaderboard.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    size = screenshot(args.out, args.width, args.height)
    print(f"{args.out}: {size:,} bytes")


if __name__ == "__main__":
    main()
