"""The kernels that make a stream's decoded rows ready for the jitted loop,
against plain Python references (the pipeline's own sequence accounting)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.kernels.replay_rows import column_order, sequence
from firmware_bridge.pipeline import SEQ_WINDOW, SEQUENCE_COUNTERS, Pipeline


def column_order_reference(layouts: list[tuple[int, ...]]) -> list[int] | None:
    """One order every layout's names follow (ties to the name seen first), or None."""
    first_seen: dict[int, int] = {}
    for layout in layouts:
        for name in layout:
            first_seen.setdefault(name, len(first_seen))
    after: dict[int, set[int]] = {name: set() for name in first_seen}
    waiting = dict.fromkeys(first_seen, 0)
    for layout in layouts:
        for a, b in zip(layout, layout[1:]):
            if b not in after[a]:
                after[a].add(b)
                waiting[b] += 1
    order: list[int] = []
    ready = sorted((n for n, w in waiting.items() if w == 0), key=first_seen.get)
    while ready:
        name = ready.pop(0)
        order.append(name)
        for b in after[name]:
            waiting[b] -= 1
            if waiting[b] == 0:
                ready.append(b)
        ready.sort(key=first_seen.get)
    return order if len(order) == len(first_seen) else None


@settings(deadline=None, max_examples=200)
@given(st.lists(st.lists(st.integers(0, 7), unique=True, max_size=6), max_size=12))
def test_column_order_matches_the_reference(layouts):
    names = np.array([n for layout in layouts for n in layout], dtype=np.int64)
    counts = np.array([len(layout) for layout in layouts], dtype=np.int64)
    got = column_order(names, counts, 8).tolist()
    want = column_order_reference([tuple(layout) for layout in layouts])
    assert got == (want if want else [])


@settings(deadline=None, max_examples=200)
@given(st.lists(st.one_of(st.integers(0, 300), st.sampled_from([0, 1, 2, 64, 65, 129])), max_size=80),
       st.integers(-1, 100))
def test_sequence_matches_the_pipeline(seqs, last):
    pipeline = Pipeline("pa", {"capacity": 4})
    stream = pipeline._stream("s")
    stream.last_seq, stream.seq_window = last, (1 if last >= 0 else 0)
    moved = np.zeros(4, dtype=np.int64)
    got_last, got_window = sequence(np.array(seqs, dtype=np.int64), last,
                                    np.uint64(stream.seq_window), moved)
    mask = (1 << SEQ_WINDOW) - 1
    for seq in seqs:  # Pipeline._predict's own steps
        if seq == stream.last_seq + 1:
            stream.last_seq = seq
            stream.seq_window = ((stream.seq_window << 1) | 1) & mask
        else:
            pipeline._sequence(stream, seq)
    assert (int(got_last), int(got_window)) == (stream.last_seq, stream.seq_window)
    assert moved.tolist() == [getattr(stream, key) for key in SEQUENCE_COUNTERS]
