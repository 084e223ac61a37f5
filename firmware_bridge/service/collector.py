"""The garbage collector's part in the long-running gateway: what lives as long as
the process is frozen (``gc.freeze``), so the collector's full passes walk only what
is new.

The start freezes what the imports and the set-up made (``edgelearn gateway``, in
:mod:`firmware_bridge.cli.service`). Numba loads a learner's kernels later, at a
stream's first messages: tens of thousands of objects (types, dispatchers,
functions) that live as long as the process too, and that every full pass walked
again (``len(gc.get_objects(2))`` in a gateway that has served a stream, before and
after). :func:`freeze_long_lived`, called by the worker at each status time, freezes
again once that many objects have reached the oldest generation.

A frozen object is still freed when its last reference goes (reference counting
does not look at generations); only a reference cycle among frozen objects is never
collected. What is frozen is what survived a full pass just before (``gc.collect``
first), so such a leak is bounded by what was alive at one of a few freezes.
"""

from __future__ import annotations

import gc

__all__ = ["LONG_LIVED_LIMIT", "freeze_long_lived"]

#: Objects in the collector's oldest generation (beyond the frozen ones) past which
#: the worker collects once and freezes them: below what a learner's kernels bring,
#: well above what a gateway's steady state keeps there between full passes.
LONG_LIVED_LIMIT = 20_000


def freeze_long_lived(limit: int = LONG_LIVED_LIMIT) -> int:
    """If more than ``limit`` objects are in the oldest generation (not frozen), run a
    full collection and freeze what survives; return how many objects were frozen
    (0 when there were not that many)."""
    if len(gc.get_objects(2)) <= limit:
        return 0
    before = gc.get_freeze_count()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count() - before
