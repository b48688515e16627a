"""During a run the heap loaded before it is frozen out of collection, and handed back after."""

from __future__ import annotations

import gc

import pytest

from workbench.harness.run._heap import fewer_collections, still_heap


def test_the_heap_is_frozen_inside_nested_blocks_and_handed_back_after_the_last() -> None:
    assert gc.get_freeze_count() == 0
    with still_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        made = [[] for _ in range(1_000)]  # tracked objects that a second freeze would take in
        # A tuner's rung inside a run: no second freeze. The count may fall meanwhile (an
        # object frozen with the heap freed elsewhere in the process: two were, once, in a
        # suite), never rise.
        with still_heap():
            assert gc.get_freeze_count() <= frozen
        assert gc.get_freeze_count() <= frozen
        del made
    assert gc.get_freeze_count() == 0


def test_the_heap_is_handed_back_when_the_run_fails() -> None:
    with pytest.raises(RuntimeError, match="cell exploded"), still_heap():
        raise RuntimeError("cell exploded")
    assert gc.get_freeze_count() == 0


def test_garbage_made_during_a_run_is_still_collected() -> None:
    class Node:
        other: object = None

    with still_heap():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle only the collector frees
        del a, b
        assert gc.collect() >= 2


def test_the_young_generation_is_collected_less_often_during_a_run_and_as_before_after_it() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with fewer_collections():
            assert gc.get_threshold() == (10_000, 20, 20)
            with fewer_collections():  # a tuner's rung inside a run
                assert gc.get_threshold() == (10_000, 20, 20)
            assert gc.get_threshold() == (10_000, 20, 20)
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(RuntimeError, match="cell exploded"), fewer_collections():
            raise RuntimeError("cell exploded")
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(50_000, 10, 30)  # a process that set more already keeps it
        with fewer_collections():
            assert gc.get_threshold() == (50_000, 20, 30)
        assert gc.get_threshold() == (50_000, 10, 30)
        gc.set_threshold(0, 10, 10)  # a process that turned automatic collection off
        with fewer_collections():
            assert gc.get_threshold() == (0, 10, 10)
        assert gc.get_threshold() == (0, 10, 10)
    finally:
        gc.set_threshold(*before)
