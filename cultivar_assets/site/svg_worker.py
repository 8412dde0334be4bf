"""Static SVGs of chart specs in a child process: ``python -m cultivar_assets.site.svg_worker``.

vl-convert holds the GIL while it renders, so the site builder hands the specs to this process
(a JSON list on stdin) and writes pages meanwhile; the SVGs come back as a JSON list on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any


class SvgJob:
    """Rendering ``specs`` in a child process; :meth:`result` waits for the SVGs."""

    def __init__(self, specs: Sequence[dict[str, Any]]) -> None:
        self.count = len(specs)
        self.process = self.thread = None
        self.output: tuple[bytes, bytes] = (b"[]", b"")
        if not specs:
            return
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cultivar_assets.site.svg_worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        payload = json.dumps(list(specs)).encode("utf-8")

        def talk() -> None:
            self.output = self.process.communicate(payload)

        self.thread = threading.Thread(target=talk, daemon=True)
        self.thread.start()

    def result(self) -> list[str]:
        if self.process is None:
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
            self.thread.join()


def main() -> int:
    import vl_convert

    specs = json.load(sys.stdin)
    json.dump([vl_convert.vegalite_to_svg(spec) for spec in specs], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
