"""Static SVGs of chart specs in a child process: ``python -m cultivar_assets.site.svg_worker``.

vl-convert holds the GIL while it renders, and starting its JavaScript runtime costs most of a
second of CPU; so the site builder starts this process first thing (it warms the runtime up on a
small chart while the builder reads the store), hands it the specs that changed (a JSON list on
stdin) and writes pages meanwhile; the SVGs come back as a JSON list on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from cultivar_assets.site.child_job import ChildJob

WARM_UP = {"data": {"values": [{"a": "x", "b": 1, "c": "y"}, {"a": "z", "b": -2, "c": "w"}]},
           "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"},
                                       "y": {"field": "b", "type": "quantitative"},
                                       "color": {"field": "c", "type": "nominal"}}}


class SvgJob:
    """A renderer process: :meth:`submit` the specs, :meth:`result` waits for their SVGs."""

    def __init__(self, start: bool = True) -> None:
        self.count = 0
        self.job = ChildJob("cultivar_assets.site.svg_worker", "rendering chart SVGs", start)

    def submit(self, specs: Sequence[bytes]) -> None:
        """Render ``specs``, each a Vega-Lite spec as JSON text (the builder has it already)."""
        self.count = len(specs)
        if not specs:  # nothing changed: stop the runtime's start-up instead of finishing it
            self.job.cancel()
            return
        self.job.submit(b"[" + b",".join(specs) + b"]", f"rendering {self.count} chart SVGs")

    def result(self) -> list[str]:
        output = self.job.result()
        if output is None:
            return []
        svgs = json.loads(output)
        if len(svgs) != self.count:
            raise RuntimeError(f"the SVG worker returned {len(svgs)} SVGs for {self.count} specs")
        return svgs

    def cancel(self) -> None:
        self.job.cancel()


def main() -> int:
    import vl_convert

    vl_convert.vegalite_to_svg(WARM_UP)  # starts the runtime while the builder reads the store
    from cultivar_assets.site.vl_cache import vegalite_to_svg  # an unchanged chart: from disk

    specs = json.load(sys.stdin)
    json.dump([vegalite_to_svg(spec) for spec in specs], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
