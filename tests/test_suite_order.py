"""The test session's own set-up (tests/conftest.py): the order in which ``pytest -n N`` hands
test files to its workers, and SQLite without ``fsync`` in the pytest processes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import conftest
from conftest import LONG_FILES_FIRST, REPO_ROOT


def _item(name: str, test: str) -> SimpleNamespace:
    return SimpleNamespace(path=REPO_ROOT / "tests" / name, name=test)


def _order(items) -> list[tuple[str, str]]:
    return [(Path(item.path).name, item.name) for item in items]


def test_every_long_file_is_one_test_file_of_the_suite():
    missing = [name for name in LONG_FILES_FIRST if not (REPO_ROOT / "tests" / name).is_file()]
    assert missing == []
    assert len(set(LONG_FILES_FIRST)) == len(LONG_FILES_FIRST)


def test_n_workers_get_whole_files_in_the_collected_order():
    option = SimpleNamespace(numprocesses=2, dist="no", loadscopereorder=True)
    conftest.pytest_cmdline_main(SimpleNamespace(option=option))
    assert (option.dist, option.loadscopereorder) == ("loadfile", False)


def test_a_given_dist_mode_is_kept():
    option = SimpleNamespace(numprocesses=2, dist="load", loadscopereorder=True)
    conftest.pytest_cmdline_main(SimpleNamespace(option=option))
    assert (option.dist, option.loadscopereorder) == ("load", True)


def test_a_worker_takes_the_long_files_first_then_the_others_by_their_number_of_tests():
    first, second = LONG_FILES_FIRST[:2]
    items = [_item("test_few.py", "a"), _item("test_many.py", "a"), _item(second, "a"),
             _item("test_many.py", "b"), _item(first, "b"), _item(first, "a")]
    conftest.pytest_collection_modifyitems(SimpleNamespace(workerinput={}), items)
    assert _order(items) == [(first, "b"), (first, "a"), (second, "a"), ("test_many.py", "a"),
                             ("test_many.py", "b"), ("test_few.py", "a")]


def test_outside_a_worker_the_collected_order_is_kept():
    items = [_item("test_few.py", "a"), _item(LONG_FILES_FIRST[0], "a")]
    conftest.pytest_collection_modifyitems(SimpleNamespace(), items)
    assert _order(items) == [("test_few.py", "a"), (LONG_FILES_FIRST[0], "a")]


def test_sqlite_connections_that_sqlalchemy_opens_are_not_synced(tmp_path):
    import sqlite3

    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'storage.db'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 0  # OFF
    finally:
        engine.dispose()
    with sqlite3.connect(tmp_path / "storage.db") as plain:  # without SQLAlchemy: the default
        assert plain.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
