"""tests/dagster_state.py: garbage is collected after a test only when it left a Dagster instance
entered, and a collection finalises such an instance."""

from __future__ import annotations

import gc
import weakref

import dagster as dg
import pytest
from dagster_state import collect_if_left_entered, left_entered

pytestmark = pytest.mark.dagster_instances


def test_an_instance_left_entered_is_collected_and_one_exited_costs_nothing():
    collect_if_left_entered()  # what earlier tests left
    with dg.DagsterInstance.ephemeral():
        pass
    assert left_entered() == [] and collect_if_left_entered() is False

    gc.disable()  # the instance must still be there when the check looks
    try:
        instance = dg.DagsterInstance.ephemeral().__enter__()
        instance.cycle = instance  # garbage only the collector finds
        del instance
        (generator,) = map(weakref.ref, left_entered())
        assert collect_if_left_entered() is True
    finally:
        gc.enable()
    assert generator() is None  # finalised (its reset ran), in this test
    assert left_entered() == [] and collect_if_left_entered() is False


def test_an_instance_kept_open_is_collected_for_once():
    collect_if_left_entered()
    instance = dg.DagsterInstance.ephemeral().__enter__()
    try:
        assert len(left_entered()) == 1
        assert collect_if_left_entered() is True
        assert left_entered() == [] and collect_if_left_entered() is False  # known, alive
    finally:
        instance.__exit__(None, None, None)
