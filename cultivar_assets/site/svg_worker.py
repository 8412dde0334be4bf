"""Static SVGs of chart specs in a child process: ``python -m cultivar_assets.site.svg_worker``.

vl-convert holds the GIL while it renders, and starting its JavaScript runtime costs most of a
second of CPU; so the site builder starts this process first thing (it warms the runtime up on a
small chart while the builder reads the store), hands it the specs that changed (a JSON list on
stdin) and writes pages meanwhile; the SVGs come back as a JSON list on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

WARM_UP = {"data": {"values": [{"a": "x", "b": 1, "c": "y"}, {"a": "z", "b": -2, "c": "w"}]},
           "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                                       "y": {"field": "b", "type": "quantitative"},
                                       "color": {"field": "c", "type": "nominal"}}}


class SvgJob:
    """A renderer process: :meth:`submit` the specs, :meth:`result` waits for their SVGs."""

    def __init__(self, start: bool = True) -> None:
        self.count = 0
        self.thread: threading.Thread | None = None
        self.output: tuple[bytes, bytes] = (b"[]", b"")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cultivar_assets.site.svg_worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE) if start else None

    def submit(self, specs: Sequence[dict[str, Any]]) -> None:
        self.count = len(specs)
        if not specs:  # nothing changed: stop the runtime's start-up instead of finishing it
            self.cancel()
            self.process = None
            return
        if self.process is None:
            raise RuntimeError("the SVG renderer was not started")
        payload = json.dumps(list(specs)).encode("utf-8")
        process = self.process

        def talk() -> None:
            self.output = process.communicate(payload)

        self.thread = threading.Thread(target=talk, daemon=True)
        self.thread.start()

    def result(self) -> list[str]:
        if self.process is None or self.thread is None:
            return []
        self.thread.join()
        output, error = self.output
        if self.process.returncode != 0:
            message = error.decode("utf-8", errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"rendering {self.count} chart SVGs failed: {' / '.join(message)}")
        svgs = json.loads(output)
        if len(svgs) != self.count:
            raise RuntimeError(f"the SVG worker returned {len(svgs)} SVGs for {self.count} specs")
        return svgs

    def cancel(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.thread is not None:
            self.thread.join()


def main() -> int:
    import vl_convert

    vl_convert.vegalite_to_svg(WARM_UP)  # starts the runtime while the builder reads the store
    from cultivar_assets.site.vl_cache import vegalite_to_svg  # an unchanged chart: from disk

    specs = json.load(sys.stdin)
    json.dump([vegalite_to_svg(spec) for spec in specs], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
