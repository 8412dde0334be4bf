"""Driving the annotation tools in a real browser (Debian's Chromium through Playwright).

Shared by the post-editing and the error-annotation tool tests (not a test module): a quiet
local HTTP server for a folder, the browser, and :class:`ToolPage`, a fresh browser context
(a fresh profile with empty storage) on one page that records console errors, dialogs and the
hosts it contacts. Closing it asserts that there were none but the local server.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = Path("/usr/bin/chromium")
NEEDS_CHROMIUM = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium "
                                    "(apt-get install -y chromium; .ci/run installs it)")
#: The requests a page's context intercepts (matched by Playwright's driver, so the others never
#: reach Python): every URL but the local server's (``http://127.0.0.1:<port>/``) and files'.
#: Each intercepted request is recorded and aborted (or continued, for ``blob:``/``data:``),
#: and the page's hosts are then asserted to be only the local server's and files'.
NOT_LOCAL = re.compile(r"^(?!http://127\.0\.0\.1[:/]|file:)")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """``root`` over http on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


# Fonts: the browser tests run with the system's fonts less Noto, and again with Noto where it
# is installed (Debian: fonts-noto-core, fonts-noto-cjk; .ci/run installs them) or where
# $CULTIVAR_NOTO_FONTS names a folder holding it, e.g. the .debs unpacked without installing:
#   apt-get download fonts-noto-core fonts-noto-cjk && for f in *.deb; do dpkg-deb -x $f noto; done
#   export CULTIVAR_NOTO_FONTS=$PWD/noto/usr/share/fonts
# Each setup is a private fontconfig file handed to Chromium (FONTCONFIG_FILE), so the machine's
# own configuration is left alone.
NOTO_FONTS_VARIABLE = "CULTIVAR_NOTO_FONTS"
FONT_ROOTS = (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"))
NOTO_PROBES = ("NotoSansDevanagari-Regular.ttf", "NotoSansCJK-Regular.ttc")
FONT_SETUPS = ("without Noto", "with Noto")


def _font_dirs(root: Path) -> list[Path]:
    """The font folders two levels down (Debian: <root>/truetype/dejavu, …/opentype/noto)."""
    return sorted(p for p in root.glob("*/*") if p.is_dir()) if root.is_dir() else []


def _has_noto(folders: list[Path]) -> bool:
    return all(any(next(folder.rglob(name), None) for folder in folders) for name in NOTO_PROBES)


def font_setup(name: str, folder: Path) -> Path:
    """A fontconfig file (written under ``folder``) for the setup ``name`` of
    :data:`FONT_SETUPS`; skips the test where Noto is wanted but neither installed nor in
    $CULTIVAR_NOTO_FONTS."""
    system = [d for root in FONT_ROOTS for d in _font_dirs(root)]
    if name == "without Noto":
        dirs = [d for d in system if not d.name.lower().startswith("noto")]
    else:
        extra = os.environ.get(NOTO_FONTS_VARIABLE)
        dirs = system + ([Path(extra)] if extra else [])
        if not _has_noto(dirs):
            pytest.skip("no Noto fonts: install fonts-noto-core and fonts-noto-cjk (.ci/run does) "
                        f"or set {NOTO_FONTS_VARIABLE} to a folder holding them")
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"  <dir>{d}</dir>\n" for d in dirs)
    conf = folder / "fonts.conf"
    conf.write_text('<?xml version="1.0"?>\n'
                    '<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n'
                    f"<fontconfig>\n{lines}"
                    '  <include ignore_missing="yes">/etc/fonts/conf.d</include>\n'
                    f"  <cachedir>{folder / 'cache'}</cachedir>\n</fontconfig>\n", "utf-8")
    return conf


@contextmanager
def chromium(fonts: Path | None = None) -> Iterator:
    """Chromium; with ``fonts`` (a fontconfig file, :func:`font_setup`), seeing only its fonts."""
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "FONTCONFIG_FILE": str(fonts)} if fonts else None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                             env=env)
        try:
            yield browser
        finally:
            browser.close()


_SHARED: dict[str, object] = {}  # the Playwright and the Chromium of shared_chromium()


def shared_chromium():
    """Chromium (with the system's fonts), started where none is running; it runs until
    :func:`close_shared_chromium`."""
    if "browser" not in _SHARED:
        from playwright.sync_api import sync_playwright

        _SHARED["playwright"] = sync_playwright().start()
        _SHARED["browser"] = _SHARED["playwright"].chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    return _SHARED["browser"]


def close_shared_chromium() -> None:
    """Close the Chromium of :func:`shared_chromium` and stop its Playwright, where running."""
    browser, playwright = _SHARED.pop("browser", None), _SHARED.pop("playwright", None)
    if browser is not None:
        browser.close()
    if playwright is not None:
        playwright.stop()


class FontBrowsers:
    """For the tests of one module: one Chromium per font setup (:data:`FONT_SETUPS`), started
    when first asked for, each seeing only its setup's fonts; the fontconfig files, and the
    fontconfig cache Chromium and ``fc-list`` build for them, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._confs: dict[str, Path] = {}
        self._browsers: dict[str, object] = {}
        self._playwright = None

    def conf(self, name: str) -> Path:
        """The fontconfig file of setup ``name`` (:func:`font_setup`: skips where Noto is
        wanted and not to be had)."""
        if name not in self._confs:
            self._confs[name] = font_setup(name, self.folder / name.replace(" ", "-"))
        return self._confs[name]

    def browser(self, name: str):
        """The Chromium of setup ``name``."""
        conf = self.conf(name)
        if name not in self._browsers:
            if self._playwright is None:
                from playwright.sync_api import sync_playwright

                self._playwright = sync_playwright().start()
            self._browsers[name] = self._playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                env={**os.environ, "FONTCONFIG_FILE": str(conf)})
        return self._browsers[name]

    def close(self) -> None:
        for browser in self._browsers.values():
            browser.close()
        if self._playwright is not None:
            self._playwright.stop()


class ToolPage:
    """A browser context (a fresh profile) on one tool page, recording problems and the hosts
    of the requests that go neither to the local server nor to a file (:data:`NOT_LOCAL`)."""

    def __init__(self, browser, url: str) -> None:
        self.url = url
        self.context = browser.new_context(accept_downloads=True)
        self.problems: list[str] = []
        self.hosts: set[str] = set()
        self.context.route(NOT_LOCAL, self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"),
                                          d.dismiss()))
        self.open()

    def _route(self, route):
        host = urlparse(route.request.url).hostname
        self.hosts.add(host or urlparse(route.request.url).scheme)
        if host in (None, "", "127.0.0.1"):
            route.continue_()
        else:
            route.abort()

    def open(self) -> None:
        self.page.goto(self.url)
        self.page.wait_for_selector("html[data-ready=true]")

    def download(self, path: Path) -> Path:
        with self.page.expect_download() as info:
            self.page.click("#download")
        info.value.save_as(path)
        return path

    def close(self) -> None:
        self.context.close()
        assert self.problems == [], self.problems
        assert self.hosts <= {"127.0.0.1", "file"}, self.hosts
