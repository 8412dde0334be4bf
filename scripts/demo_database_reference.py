"""Write ``tests/fixtures/demo_database.json.gz``: the results the demo stores, as
``tests/test_demo_cli.py`` compares every demo run with (behaviour and stored results unchanged
by a change of the code).

Run it only when a change is meant to change the demo's stored results, and say so in the
commit::

    .venv/bin/python scripts/demo_database_reference.py            # runs `cultivar demo` afresh
    .venv/bin/python scripts/demo_database_reference.py --home DIR # from the demo run in DIR

It runs ``cultivar demo`` with a fresh ``CULTIVAR_HOME`` (a temporary folder), unless ``--home``
names the home of a finished demo run, and writes what ``tests/database_state.py``'s
``portable_state`` reads from its database.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from database_state import REFERENCE, portable_state, write_reference  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="the CULTIVAR_HOME of a finished demo run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cultivar-reference-") as scratch:
        home = args.home or Path(scratch)
        if args.home is None:
            env = {**os.environ, "CULTIVAR_HOME": str(home)}
            subprocess.run([sys.executable, "-m", "cultivar_assets.cli", "demo"], env=env,
                           check=True)
        write_reference(portable_state(home / "db" / "demo.duckdb", home))
    print(f"wrote {REFERENCE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
