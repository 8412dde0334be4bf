"""A site rebuild is never stale: share 0 of the cases of ``tests/site_rebuild_cases.py`` (see
there); the other share is in ``test_site_stale_rebuild_2.py``, a file of its own so
that xdist's workers (whole files each) run the two side by side."""

from __future__ import annotations

import pytest
import site_rebuild_cases as cases

pytestmark = pytest.mark.slow  # ~30 cases of two builds each: ~45 s, both files ~90 s of CPU

state = pytest.fixture(scope="module")(cases.stale_state)


def test_every_module_is_changed_or_not_run():
    cases.check_module_list()


@pytest.mark.parametrize(("kind", "name"), cases.share(0),
                         ids=[f"{k}:{n}" for k, n in cases.share(0)])
def test_a_rebuild_after_a_change_equals_a_full_build(state, tmp_path, kind, name):
    cases.check_case(state, tmp_path, kind, name)
