"""ChannelSpace: fixed capacity, standardization, eviction, counters."""

import math

import numpy as np
import pytest

from edgelearn import ChannelSpace


def test_standardization_matches_numpy():
    rng = np.random.default_rng(0)
    values = rng.normal(20, 3, size=500)
    space = ChannelSpace(z_max=100.0)
    for i, v in enumerate(values):
        slots, z = space.observe({"temp": v})
        seen = values[: i + 1]
        expected = 0.0 if i < 1 else (v - seen.mean()) / math.sqrt(seen.var() + space.eps)
        assert z[0] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert space.mean[0] == pytest.approx(values.mean(), rel=1e-12)
    assert space.var[0] == pytest.approx(values.var(), rel=1e-9)


def test_exponential_forgetting_tracks_a_shift():
    space = ChannelSpace(half_life=50)
    for _ in range(1000):
        space.observe({"t": 0.0})
    for _ in range(500):
        space.observe({"t": 10.0})
    assert space.mean[0] == pytest.approx(10.0, abs=1e-2)
    plain = ChannelSpace()
    for _ in range(1000):
        plain.observe({"t": 0.0})
    for _ in range(500):
        plain.observe({"t": 10.0})
    assert plain.mean[0] == pytest.approx(10 / 3, rel=1e-9)


def test_clipping_and_missing_values():
    space = ChannelSpace(z_max=2.0)
    for v in (0.0, 1.0) * 50:
        space.observe({"a": v, "nan": float("nan"), "inf": float("inf")})
    assert space.names == ["a"]
    _, z = space.observe({"a": 1000.0})
    assert z[0] == 2.0
    _, z = space.transform({"a": -1000.0, "unknown": 5.0})
    assert z.tolist() == [-2.0, 0.0]


def test_capacity_eviction_and_ignored_counter():
    space = ChannelSpace(capacity=3, evict_after=10)
    forgotten = []
    space.add_listener(forgotten.append)
    space.observe({"a": 1.0, "b": 1.0, "c": 1.0})
    for _ in range(5):
        space.observe({"a": 1.0, "b": 1.0})
    slots, _ = space.observe({"a": 1.0, "d": 1.0})  # c absent 6 < 10: d ignored
    assert slots.tolist() == [0] and space.n_ignored == 1
    for _ in range(10):
        space.observe({"a": 1.0, "b": 1.0})
    slots, _ = space.observe({"d": 2.0})  # c absent long enough: its slot goes to d
    assert slots.tolist() == [2] and forgotten == [2]
    assert space.names == ["a", "b", "d"] and space.slot_of("c") == -1
    assert space.count[2] == 1 and space.n_evicted == 1


def test_never_grows_past_capacity():
    space = ChannelSpace(capacity=8, evict_after=1)
    budget = space.memory_bytes()
    for i in range(10_000):
        space.observe({f"name-{i}": 1.0, "steady": 2.0})
    assert space.n_assigned == 8 and len(space._index) == 8
    assert space.memory_bytes() == budget
    assert space.n_evicted == 10_000 - 7


def test_bad_input_is_named():
    space = ChannelSpace()
    with pytest.raises(TypeError, match="'temp' must be a number. Got str"):
        space.observe({"temp": "hot"})
    with pytest.raises(ValueError, match="at most 64 characters"):
        space.observe({"x" * 65: 1.0})
    with pytest.raises(TypeError, match="str or an int"):
        space.observe({("a",): 1.0})
    with pytest.raises(TypeError, match="dict of channel name"):
        space.observe([1.0])
    with pytest.raises(ValueError, match="The 'capacity' parameter of ChannelSpace must be an int in \\[1, inf\\). Got 0."):
        ChannelSpace(capacity=0)


def test_state_round_trip():
    space = ChannelSpace(capacity=4, evict_after=2, half_life=10)
    rng = np.random.default_rng(1)
    for i in range(100):
        space.observe({f"c{j}": rng.normal() for j in range(i % 6)})
    copy = ChannelSpace.from_state(space.to_state())
    x = {"c1": 0.5, "c4": 1.5, "new": 2.0}
    a, b = space.observe(dict(x)), copy.observe(dict(x))
    assert a[0].tolist() == b[0].tolist() and a[1].tobytes() == b[1].tobytes()
    assert copy.to_state()["names"] == space.to_state()["names"]


def test_new_names_in_one_instance_never_share_a_slot():
    # Two new channels arrive together in a full space: only one stale slot
    # is free, so one of them is ignored -- never both folded into one slot.
    space = ChannelSpace(capacity=3, evict_after=5)
    space.observe({"a": 1.0, "b": 1.0, "c": 1.0})
    for _ in range(8):
        space.observe({"a": 1.0, "b": 1.0})
    slots, _ = space.observe({"a": 1.0, "b": 1.0, "d": 1.0, "e": 1.0})
    assert sorted(slots.tolist()) == [0, 1, 2]
    assert space.n_ignored == 1
    assert ChannelSpace(capacity=2, evict_after=1).observe({"a": 1, "b": 2, "c": 3})[0].tolist() == [0, 1]
