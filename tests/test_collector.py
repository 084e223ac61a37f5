"""firmware_bridge.service.collector: what reaches the collector's oldest generation
in numbers (a learner's kernels, loaded after the start's freeze) is frozen once, so
the full passes stop walking it; below the limit nothing is collected or frozen."""

from __future__ import annotations

import gc

from firmware_bridge.service.collector import freeze_long_lived


class _Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def test_many_long_lived_objects_are_frozen_once_and_full_passes_skip_them():
    gc.collect()
    frozen_before = gc.get_freeze_count()
    try:
        kept = [[i] for i in range(30_000)]  # long-lived, as a learner's kernels are
        gc.collect()  # into the oldest generation
        assert len(gc.get_objects(2)) > 30_000
        garbage = [_Node() for _ in range(100)]
        del garbage  # cycles: collected by the full pass before the freeze, not frozen
        frozen = freeze_long_lived(limit=20_000)
        assert frozen >= 30_000
        assert gc.get_freeze_count() == frozen_before + frozen
        assert not any(type(o) is _Node for o in gc.get_objects())  # collected, not frozen
        assert len(gc.get_objects(2)) < 20_000  # a full pass walks only what is new
        assert freeze_long_lived(limit=20_000) == 0  # nothing more to freeze
        assert len(kept) == 30_000
    finally:
        gc.unfreeze()


def test_below_the_limit_nothing_is_collected_or_frozen():
    gc.collect()
    frozen_before = gc.get_freeze_count()
    collections_before = gc.get_stats()[2]["collections"]
    assert freeze_long_lived(limit=len(gc.get_objects(2)) + 10_000) == 0
    assert gc.get_freeze_count() == frozen_before
    assert gc.get_stats()[2]["collections"] == collections_before
