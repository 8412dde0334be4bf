"""benchmarks/bench_site.py: what ``--keep`` keeps, and that it says where."""

from __future__ import annotations

import sys

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_site import finish


def test_keep_says_where_the_site_and_database_are_kept(tmp_path):
    kept = tmp_path / "cultivar-site-32-x"
    (kept / "site").mkdir(parents=True)
    (kept / "bench.duckdb").write_bytes(b"")
    note = finish(kept, keep=True)
    assert note == (f"kept: the site in {kept / 'site'} (open {kept / 'site' / 'index.html'}), "
                    f"its database {kept / 'bench.duckdb'}")
    assert (kept / "site").is_dir()

    assert finish(kept, keep=False) is None
    assert not kept.exists()
