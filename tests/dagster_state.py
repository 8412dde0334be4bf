"""Dagster's "current defs-state storage" in the test processes: which Dagster instances a test
left entered, so that the garbage collector runs after a test only when one did.

A DagsterInstance sets that context variable when entered (``set_defs_state_storage``, a
generator context manager on its exit stack) and resets it when the stack is closed; a stack
that is never closed is closed when the garbage collector finalises it, which may be inside a
later test, and it then resets the variable to an older, deleted instance's storage
(tests/conftest.py, ``no_stale_dagster_state``). :func:`track` records every such generator
(weakly); :func:`collect_if_left_entered` collects garbage only when a generator that was not
open after the previous collection is still open. (Dagster-internal state, Dagster 1.13.)
"""

from __future__ import annotations

import gc
import inspect
import weakref

_entered: weakref.WeakSet = weakref.WeakSet()  # every set_defs_state_storage generator
_open_after_collection: weakref.WeakSet = weakref.WeakSet()  # open and alive at the last one


def track() -> None:
    """Record every ``set_defs_state_storage`` generator from now on (idempotent)."""
    from dagster._core.storage.defs_state import base

    original = base.set_defs_state_storage
    if getattr(original, "tracked_by_tests", False):
        return

    def tracked(storage):
        manager = original(storage)
        _entered.add(manager.gen)
        return manager

    tracked.tracked_by_tests = True
    base.set_defs_state_storage = tracked


def left_entered() -> list:
    """The recorded generators that are entered and not exited, less those that were so at
    the last collection (alive: a module's or the session's open instance)."""
    return [gen for gen in list(_entered)
            if inspect.getgeneratorstate(gen) == inspect.GEN_SUSPENDED
            and gen not in _open_after_collection]


def collect_if_left_entered() -> bool:
    """``gc.collect()`` when :func:`left_entered` is not empty; whether it ran."""
    if not left_entered():
        return False
    gc.collect()
    _open_after_collection.clear()
    for gen in list(_entered):
        if inspect.getgeneratorstate(gen) == inspect.GEN_SUSPENDED:
            _open_after_collection.add(gen)
    return True
