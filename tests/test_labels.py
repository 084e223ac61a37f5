"""Tests for firmware_bridge.pipeline.pending: pending label requests with a fake clock."""

from __future__ import annotations

import numpy as np
import pytest

from firmware_bridge.pipeline.pending import COUNTER_KEYS, Outcome, PendingEntry, PendingLabels
from firmware_bridge.wire import Limits, check_stream_id


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(capacity=4, ttl=60.0, **kwargs):
    clock = FakeClock()
    return PendingLabels(capacity, ttl, clock=clock, **kwargs), clock


def features(i: int):
    return (np.array([i, i + 1], dtype=np.int32), np.array([0.5 * i, -1.0]))


def test_answer_returns_the_stored_features_exactly_once():
    table, clock = make()
    stored = features(3)
    req = table.issue("s1", 42, stored, y_hat="walking")
    clock.now += 59.9
    entry = table.answer(req, "s1")
    assert isinstance(entry, PendingEntry)
    assert entry.features is stored  # the very arrays, untouched
    assert (entry.req_id, entry.stream, entry.seq, entry.y_hat) == (req, "s1", 42, "walking")
    assert (entry.issued_at, entry.deadline) == (1000.0, 1060.0)
    assert table.answer(req, "s1") is Outcome.DUPLICATE
    assert table.answer(req, "s1") is Outcome.DUPLICATE
    counts = table.as_dict()
    assert (counts["answered"], counts["duplicate"], counts["pending"]) == (1, 2, 0)


def test_request_ids_are_unique_unguessable_and_valid_on_the_wire():
    table, _ = make(capacity=10_000, id_prefix="gw-kitchen")
    ids = [table.issue("s", i, None, None) for i in range(5_000)]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("gw-kitchen-") for i in ids)
    suffixes = {i.rsplit("-", 1)[1] for i in ids}
    assert len(suffixes) == len(ids) and all(len(s) == 16 for s in suffixes)
    other, _ = make(id_prefix="gw-kitchen")  # a restart: same prefix and counter
    assert other.issue("s", 0, None, None) != ids[0]
    # The longest possible id still passes the protocol's 'req' check.
    longest = f"{'x' * 24}-{2**64 - 1:x}-{'f' * 16}"
    assert check_stream_id(longest, Limits(max_stream_id_bytes=64)) is None


def test_ttl_boundary():
    table, clock = make(ttl=10.0)
    early, late = table.issue("s", 1, "a", 0), table.issue("s", 2, "b", 0)
    clock.now += 10.0 - 1e-9
    assert isinstance(table.answer(early, "s"), PendingEntry)
    clock.now += 1e-9  # exactly at the deadline: too late
    assert table.answer(late, "s") is Outcome.EXPIRED
    assert table.answer(late, "s") is Outcome.EXPIRED  # still late, not a duplicate
    counts = table.as_dict()
    assert (counts["expired"], counts["timed_out"], counts["answered"]) == (2, 1, 1)


def test_expire_sweeps_and_later_answers_count_as_expired():
    table, clock = make(capacity=10, ttl=30.0)
    old = [table.issue("s", i, i, None) for i in range(3)]
    clock.now += 20
    new = [table.issue("s", i, i, None) for i in range(3, 5)]
    clock.now += 15
    assert table.expire() == 3
    assert len(table) == 2 and all(r in table for r in new)
    assert table.expire() == 0
    assert table.answer(old[0], "s") is Outcome.EXPIRED
    clock.now += 100
    assert table.expire(clock.now) == 2
    counts = table.as_dict()
    assert (counts["timed_out"], counts["expired"], counts["pending"]) == (5, 1, 0)


def test_issue_sweeps_expired_before_evicting():
    table, clock = make(capacity=2, ttl=5.0)
    table.issue("s", 1, None, None)
    table.issue("s", 2, None, None)
    clock.now += 6
    table.issue("s", 3, None, None)
    counts = table.as_dict()
    assert (counts["evicted"], counts["timed_out"], counts["pending"]) == (0, 2, 1)


def test_full_table_evicts_the_oldest():
    table, clock = make(capacity=3)
    ids = []
    for i in range(5):
        clock.now += 1
        ids.append(table.issue("s", i, features(i), None))
    assert [r in table for r in ids] == [False, False, True, True, True]
    assert table.answer(ids[0], "s") is Outcome.EVICTED_REQUEST
    assert table.answer(ids[2], "s").seq == 2
    counts = table.as_dict()
    assert (counts["evicted"], counts["evicted_request"], counts["answered"]) == (2, 1, 1)


def test_wrong_stream_leaves_the_request_pending():
    table, _ = make()
    req = table.issue("s1", 1, "f", None)
    assert table.answer(req, "s2") is Outcome.WRONG_STREAM
    assert req in table
    assert table.answer(req, "s1").features == "f"
    assert table.answer(req, "s2") is Outcome.WRONG_STREAM  # closed, other stream
    assert table.answer(req, "s1") is Outcome.DUPLICATE
    assert table.as_dict()["wrong_stream"] == 2


def test_unknown_and_forgotten_requests():
    table, _ = make(capacity=2, recent_capacity=3)
    assert table.answer("req-0-0000000000000000", "s") is Outcome.UNKNOWN_REQUEST
    ids = [table.issue("s", i, None, None) for i in range(2)]
    for req in ids:
        table.answer(req, "s")
    assert table.answer(ids[0], "s") is Outcome.DUPLICATE
    for i in range(2):  # two more closed requests push the first out of memory
        table.answer(table.issue("s", i, None, None), "s")
    assert table.answer(ids[0], "s") is Outcome.UNKNOWN_REQUEST
    assert table.answer(ids[1], "s") is Outcome.DUPLICATE
    assert table.as_dict()["unknown_request"] == 2


def test_memory_is_bounded_by_capacity():
    table, clock = make(capacity=100, ttl=1e9)
    for i in range(10_000):
        assert table.answer(f"req-{i:x}-{i:016x}", "s") is Outcome.UNKNOWN_REQUEST
    assert len(table) == 0 and len(table._recent) == 0
    for i in range(100_000):
        clock.now += 0.001
        table.issue(f"s{i % 7}", i, None, None)
    assert len(table) == 100
    assert len(table._recent) == 100
    counts = table.as_dict()
    assert counts["issued"] == 100_000 and counts["evicted"] == 100_000 - 100
    assert counts["unknown_request"] == 10_000
    # The survivors are the newest requests.
    assert sorted(e.seq for e in table._pending.values()) == list(range(99_900, 100_000))


def test_recent_memory_can_be_switched_off():
    table, _ = make(recent_capacity=0)
    req = table.issue("s", 1, None, None)
    table.answer(req, "s")
    assert table.answer(req, "s") is Outcome.UNKNOWN_REQUEST


def test_counters_have_a_fixed_key_set():
    table, _ = make()
    assert list(table.as_dict()) == list(COUNTER_KEYS)
    assert set(COUNTER_KEYS) >= {o.value for o in Outcome}
    assert all(v == 0 for v in table.as_dict().values())


def test_outcomes_are_strings_for_status_and_logs():
    assert Outcome.EXPIRED == "expired" and f"{Outcome.DUPLICATE}" == "duplicate"


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"capacity": 0, "ttl_seconds": 1}, ValueError),
        ({"capacity": 1.5, "ttl_seconds": 1}, TypeError),
        ({"capacity": 1, "ttl_seconds": 0}, ValueError),
        ({"capacity": 1, "ttl_seconds": float("nan")}, ValueError),
        ({"capacity": 1, "ttl_seconds": "60"}, TypeError),
        ({"capacity": 1, "ttl_seconds": 1, "recent_capacity": -1}, ValueError),
        ({"capacity": 1, "ttl_seconds": 1, "id_prefix": "gw/1"}, ValueError),
        ({"capacity": 1, "ttl_seconds": 1, "id_prefix": ""}, ValueError),
        ({"capacity": 1, "ttl_seconds": 1, "id_prefix": "x" * 25}, ValueError),
    ],
)
def test_parameters_are_checked(kwargs, error):
    with pytest.raises(error, match="PendingLabels"):
        PendingLabels(**kwargs)


def test_infinite_ttl_never_expires():
    table, clock = make(ttl=float("inf"))
    req = table.issue("s", 1, None, None)
    clock.now += 1e12
    assert table.expire() == 0
    assert isinstance(table.answer(req, "s"), PendingEntry)
