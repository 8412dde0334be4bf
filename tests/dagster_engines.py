"""Dagster's SQLite storages in the test processes reuse one SQLAlchemy engine per database
file and options, the :data:`MOST_ENGINES` used last (:func:`reuse_engines`).

Dagster's SQLite run, event-log and schedule storages call ``create_engine(url,
poolclass=NullPool, …)`` for every connection they open. With ``NullPool`` an engine holds no
connection: each ``engine.connect()`` opens the file anew and closing it closes the file, so a
reused engine opens and closes the same connections; what it keeps is its dialect, set up once,
and its cache of compiled statements, which a new engine compiles again for each connection.
(Dagster-internal names, Dagster 1.13; the processes the tests start keep Dagster's own.)
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict

#: the modules of Dagster's SQLite storages, each of which calls its ``create_engine``
STORAGE_MODULES = (
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
)
#: the engines kept (a run's event log is a database of its own: older runs' engines go)
MOST_ENGINES = 64


def reuse_engines() -> None:
    """Give :data:`STORAGE_MODULES` a ``create_engine`` that returns the engine made before for
    the same URL and options (idempotent). Raises AssertionError naming the module when one of
    them has no ``create_engine`` (another Dagster version)."""
    modules = [importlib.import_module(name) for name in STORAGE_MODULES]
    for module in modules:
        assert hasattr(module, "create_engine"), f"{module.__name__} has no create_engine"
    original = modules[0].create_engine
    if getattr(original, "reuses_engines", False):
        return
    engines: OrderedDict[tuple[str, str], object] = OrderedDict()
    lock = threading.Lock()

    def create_engine(url, **options):
        key = (str(url), repr(sorted(options.items())))
        with lock:
            if key in engines:
                engines.move_to_end(key)
                return engines[key]
        engine = original(url, **options)
        with lock:
            engine = engines.setdefault(key, engine)
            engines.move_to_end(key)
            while len(engines) > MOST_ENGINES:
                engines.popitem(last=False)
        return engine

    create_engine.reuses_engines = True
    for module in modules:
        module.create_engine = create_engine
