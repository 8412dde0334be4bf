"""Benchmark: the post-editing tool with a full task (200 items) in headless Chromium.

Builds a 200-item German task from the demo drafts (repeated under new ids), then measures the
build, the page's size, the time until the tool is ready (every item's highlights drawn), the
time from one keystroke to its highlights being redrawn, and the time to load a downloaded file.
Not a test: run it by hand (needs /usr/bin/chromium) and record the figures in the report.

    python benchmarks/bench_postedit.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from annotation_helpers import demo_drafts

from cultivar_assets.construction.annotation.postedit_tool import build_postedit_tool

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    base = demo_drafts()
    drafts = [replace(base[i % len(base)], instance_id=i) for i in range(200)]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        page_path = build_postedit_tool(drafts, Path(tmp) / "tool")
        build = time.perf_counter() - started
        size = sum(p.stat().st_size for p in page_path.parent.rglob("*") if p.is_file())
        page_size = page_path.stat().st_size
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_context(accept_downloads=True).new_page()
            started = time.perf_counter()
            page.goto(page_path.as_uri())
            page.wait_for_selector("html[data-ready=true]")
            ready = time.perf_counter() - started
            page.evaluate("new Promise(done => requestAnimationFrame(() => setTimeout(done)))")
            painted = time.perf_counter() - started
            box = page.locator("#item-100-source")
            box.focus()
            page.keyboard.press("Control+End")
            keystrokes = []
            for char in "Neuer Text":
                started = time.perf_counter()
                page.keyboard.type(char)
                page.locator("#item-100 [data-role=source-edits]").inner_text()
                keystrokes.append(time.perf_counter() - started)
            with page.expect_download() as info:
                page.click("#download")
            download = Path(tmp) / "download.json"
            info.value.save_as(download)
            fresh = browser.new_context().new_page()
            fresh.goto(page_path.as_uri())
            fresh.wait_for_selector("html[data-ready=true]")
            started = time.perf_counter()
            fresh.set_input_files("#load", str(download))
            fresh.locator("#status", has_text="Loaded 200 items").wait_for()
            load = time.perf_counter() - started
            browser.close()
    print(f"build: {build:.2f} s; folder: {size / 1e3:.0f} kB ({page_size / 1e3:.0f}"
          f" kB page)")
    print(f"ready (200 items drawn): {ready:.2f} s; laid out and painted: {painted:.2f} s")
    print(f"keystroke to redrawn item: median {statistics.median(keystrokes) * 1e3:.0f} ms, "
          f"max {max(keystrokes) * 1e3:.0f} ms")
    print(f"load JSON (200 items): {load:.2f} s")


if __name__ == "__main__":
    main()
