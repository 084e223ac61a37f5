"""The jitted batch prediction writer (firmware_bridge.wire.kernels.pack_predictions)
against msgpack.packb of the same fields: the same bytes."""

import math

import msgpack
import numpy as np
import pytest

from firmware_bridge.wire.kernels.pack_predictions import (pack_prediction_maps, pack_prediction_messages,
                                                     pack_predictions)

_PACK = msgpack.Packer(use_bin_type=True).pack

# Every msgpack int width on both sides of each boundary, and int64's ends.
_INT_EDGES = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1,
              -1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**63]
_FLOAT_EDGES = [0.0, -0.0, 1.5, -1e300, 5e-324, math.inf, -math.inf, math.nan, 1.7e9]


def _reference(seq, ts, labels, y_index, score, query) -> bytes:
    # What Pipeline._answer_batch packs reading by reading: plain Python values.
    return _PACK({"predictions": [
        {"seq": s, "ts": t, "y": labels[i], "score": m, "query": q}
        for s, t, i, m, q in zip(seq.tolist(), ts.tolist(), y_index.tolist(), score.tolist(),
                                 query.tolist())]})


@pytest.mark.parametrize("n", [0, 1, 15, 16, 64, 65535, 65536])
@pytest.mark.parametrize("labels", [[True, False], ["occupied", "empty"], [1, 0, None],
                                    ["é" * 40, -7, 2**40]])
def test_the_writer_packs_what_msgpack_packs(n, labels):
    rng = np.random.default_rng(n + len(labels))
    seq = rng.integers(-2**63, 2**63 - 1, size=n, dtype=np.int64)
    seq[: min(n, len(_INT_EDGES))] = _INT_EDGES[: min(n, len(_INT_EDGES))]
    small = rng.random(n) < 0.5  # the usual case: small, growing seqs
    seq[small] = rng.integers(0, 70000, size=int(small.sum()))
    ts = rng.normal(1.7e9, 1e6, size=n)
    score = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, size=n)
    ts[: min(n, len(_FLOAT_EDGES))] = _FLOAT_EDGES[: min(n, len(_FLOAT_EDGES))]
    score[-min(n, len(_FLOAT_EDGES)):] = _FLOAT_EDGES[: min(n, len(_FLOAT_EDGES))]
    y_index = rng.integers(0, len(labels), size=n)
    query = rng.random(n) < 0.3
    got = pack_predictions(seq, ts, y_index, [_PACK(y) for y in labels], score, query)
    assert got == _reference(seq, ts, labels, y_index, score, query)


def test_the_message_reads_back_as_its_fields():
    seq = np.array([3, 4, 300], dtype=np.int64)
    got = msgpack.unpackb(pack_predictions(seq, np.array([1.0, 2.0, 3.5]), np.array([0, 1, 0]),
                                           [_PACK("a"), _PACK(False)], np.array([0.5, -1.0, 2.0]),
                                           np.array([False, True, False])))
    assert got == {"predictions": [
        {"seq": 3, "ts": 1.0, "y": "a", "score": 0.5, "query": False},
        {"seq": 4, "ts": 2.0, "y": False, "score": -1.0, "query": True},
        {"seq": 300, "ts": 3.5, "y": "a", "score": 2.0, "query": False}]}


@pytest.mark.parametrize("cuts", [[], [1], [5, 6, 40], list(range(1, 70))])
def test_runs_of_rows_in_one_call_are_each_run_packed_alone(cuts):
    rng = np.random.default_rng(len(cuts))
    n = 70
    seq = rng.integers(0, 2**40, size=n, dtype=np.int64)
    ts, score = rng.normal(1.7e9, 1e6, size=n), rng.normal(size=n)
    labels = [_PACK("occupied"), _PACK(False), _PACK(None)]
    y_index, query = rng.integers(0, len(labels), size=n), rng.random(n) < 0.3
    bounds = np.array([0, *cuts, n], dtype=np.int64)
    got = pack_prediction_messages(seq, ts, y_index, labels, score, query, bounds)
    assert got == [_reference(seq[a:b], ts[a:b], [msgpack.unpackb(y) for y in labels],
                              y_index[a:b], score[a:b], query[a:b])
                   for a, b in zip(bounds[:-1], bounds[1:])]


@pytest.mark.parametrize("n", [0, 1, 2, 64, 1000])
@pytest.mark.parametrize("labels", [[True, False], ["occupied", "empty"], ["é" * 40, -7, 2**40, None]])
def test_each_row_alone_is_what_msgpack_packs_of_a_single_reading_s_fields(n, labels):
    """pack_prediction_maps: one message per row, each the map Pipeline.answer packs
    for a single reading (no "predictions" list around it)."""
    rng = np.random.default_rng(n + 7 * len(labels))
    seq = rng.integers(-2**63, 2**63 - 1, size=n, dtype=np.int64)
    seq[: min(n, len(_INT_EDGES))] = _INT_EDGES[: min(n, len(_INT_EDGES))]
    ts = rng.normal(1.7e9, 1e6, size=n)
    ts[: min(n, len(_FLOAT_EDGES))] = _FLOAT_EDGES[: min(n, len(_FLOAT_EDGES))]
    score = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, size=n)
    y_index = rng.integers(0, len(labels), size=n)
    query = rng.random(n) < 0.3
    got = pack_prediction_maps(seq, ts, y_index, [_PACK(y) for y in labels], score, query)
    assert got == [_PACK({"seq": s, "ts": t, "y": labels[i], "score": m, "query": q})
                   for s, t, i, m, q in zip(seq.tolist(), ts.tolist(), y_index.tolist(),
                                            score.tolist(), query.tolist())]
