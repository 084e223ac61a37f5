"""A batch's prediction message written straight from the learner pass's arrays (numba).

The message is the one ``msgpack.Packer(use_bin_type=True).pack`` makes of
``{"predictions": [{"seq": s, "ts": t, "y": y, "score": m, "query": q}, ...]}`` (or,
for single readings, of each ``{"seq": s, ...}`` alone)
(``docs/protocol.md``), byte for byte: ints in their shortest msgpack form,
floats as float64, the labels as packed once in Python (a stream has at most a
few). Building a dict per reading and packing the list costs more than the
learner pass itself; this writes about 60 bytes a reading without a Python object.
``tests/test_pack_predictions.py`` holds it to ``msgpack.packb`` on the same fields.
"""

import numpy as np

from edgelearn.kernels import jit

# {"predictions": as msgpack: a map of one key, a fixstr of 11 bytes.
_HEAD = np.frombuffer(b"\x81\xabpredictions", dtype=np.uint8)
# Most bytes a prediction map takes besides its label: map header, the five keys
# (fixstr), seq (int64: 9), ts and score (float64: 9 each), query (1).
_FIXED_BYTES = 1 + (1 + 3) + 9 + (1 + 2) + 9 + (1 + 1) + (1 + 5) + 9 + (1 + 5) + 1


@jit
def _put_be(out, at, value, width):
    # ``value``'s low ``width`` bytes, big-endian.
    for j in range(width):
        out[at + j] = (value >> (8 * (width - 1 - j))) & 0xFF
    return at + width


@jit
def _put_int(out, at, v):
    """``v`` (int64) as msgpack-python packs a Python int of that value."""
    if v >= 0:
        if v < 128:
            out[at] = v
            return at + 1
        if v < 256:
            out[at] = 0xCC
            return _put_be(out, at + 1, v, 1)
        if v < 65536:
            out[at] = 0xCD
            return _put_be(out, at + 1, v, 2)
        if v < 4294967296:
            out[at] = 0xCE
            return _put_be(out, at + 1, v, 4)
        out[at] = 0xCF
        return _put_be(out, at + 1, v, 8)
    if v >= -32:
        out[at] = v & 0xFF
        return at + 1
    if v >= -128:
        out[at] = 0xD0
        return _put_be(out, at + 1, v, 1)
    if v >= -32768:
        out[at] = 0xD1
        return _put_be(out, at + 1, v, 2)
    if v >= -2147483648:
        out[at] = 0xD2
        return _put_be(out, at + 1, v, 4)
    out[at] = 0xD3
    return _put_be(out, at + 1, v, 8)


@jit
def _put_float(out, at, bits):
    # A float64 (its bits as an int64), as msgpack packs a Python float.
    out[at] = 0xCB
    return _put_be(out, at + 1, bits, 8)


@jit
def _put_key(out, at, key):
    # A short key (a fixstr, its bytes given).
    out[at] = 0xA0 | key.shape[0]
    for j in range(key.shape[0]):
        out[at + 1 + j] = key[j]
    return at + 1 + key.shape[0]


@jit
def _pack(seq, ts_bits, y_index, y_pool, y_off, y_len, score_bits, query, bounds, out, ends,
          k_seq, k_ts, k_y, k_score, k_query, bare):
    # Message m holds rows bounds[m] .. bounds[m + 1] - 1 and ends at out[ends[m]];
    # ``bare``: each message is its one row's map (a single reading's prediction).
    at = 0
    for m in range(bounds.shape[0] - 1):
        begin, stop = bounds[m], bounds[m + 1]
        n = stop - begin
        if not bare:
            for j in range(_HEAD.shape[0]):
                out[at + j] = _HEAD[j]
            at += _HEAD.shape[0]
            if n < 16:
                out[at] = 0x90 | n
                at += 1
            elif n < 65536:
                out[at] = 0xDC
                at = _put_be(out, at + 1, n, 2)
            else:
                out[at] = 0xDD
                at = _put_be(out, at + 1, n, 4)
        for i in range(begin, stop):
            out[at] = 0x85
            at = _put_key(out, at + 1, k_seq)
            at = _put_int(out, at, seq[i])
            at = _put_key(out, at, k_ts)
            at = _put_float(out, at, ts_bits[i])
            at = _put_key(out, at, k_y)
            label = y_index[i]
            start = y_off[label]
            for j in range(y_len[label]):
                out[at + j] = y_pool[start + j]
            at += y_len[label]
            at = _put_key(out, at, k_score)
            at = _put_float(out, at, score_bits[i])
            at = _put_key(out, at, k_query)
            out[at] = 0xC3 if query[i] else 0xC2
            at += 1
        ends[m] = at


_KEYS = tuple(np.frombuffer(key, dtype=np.uint8) for key in (b"seq", b"ts", b"y", b"score", b"query"))


def pack_predictions(seq: np.ndarray, ts: np.ndarray, y_index: np.ndarray, y_packed: list[bytes],
                     score: np.ndarray, query: np.ndarray) -> bytes:
    """The batch prediction message: per row ``seq`` (int64), ``ts`` and ``score``
    (float64), ``query`` (bool) and its label ``y_packed[y_index[row]]`` (each label
    as msgpack bytes, ``Packer(use_bin_type=True)``)."""
    out, ends = _written(seq, ts, y_index, y_packed, score, query,
                         np.array([0, seq.shape[0]], dtype=np.int64))
    return out[:ends[0]].tobytes()


def pack_prediction_messages(seq: np.ndarray, ts: np.ndarray, y_index: np.ndarray,
                             y_packed: list[bytes], score: np.ndarray, query: np.ndarray,
                             bounds: np.ndarray) -> list[bytes]:
    """The prediction messages of consecutive runs of rows, in one kernel call:
    message m as :func:`pack_predictions` writes rows ``bounds[m] .. bounds[m + 1] -
    1`` (``bounds`` int64, from 0 to the rows' count). A learner pass over a
    stream's queued batches answers each batch with its own message; writing them
    one call each cost more than the writing (``Pipeline.handle_many``)."""
    return _messages(*_written(seq, ts, y_index, y_packed, score, query, bounds))


def pack_prediction_maps(seq: np.ndarray, ts: np.ndarray, y_index: np.ndarray,
                         y_packed: list[bytes], score: np.ndarray, query: np.ndarray) -> list[bytes]:
    """Each row's own prediction message, as a single reading's is packed
    (``{"seq": s, "ts": t, "y": y, "score": m, "query": q}``, ``Pipeline.answer``), in
    one kernel call: the single readings of a stream queued together, answered from
    one learner pass."""
    return _messages(*_written(seq, ts, y_index, y_packed, score, query,
                               np.arange(seq.shape[0] + 1, dtype=np.int64), bare=True))


def _messages(out: np.ndarray, ends: np.ndarray) -> list[bytes]:
    # the written buffer cut at each message's end, each message copied out once
    ends = ends.tolist()
    return [out[a:b].tobytes() for a, b in zip([0, *ends[:-1]], ends)]


#: The labels' pools by their packed bytes: a stream's labels are the same few on every
#: batch, and building the arrays cost as much as writing 64 predictions (bounded:
#: cleared when full).
_POOLS: dict[tuple, tuple] = {}
_MAX_POOLS = 64


def _label_pool(y_packed: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    # The labels' bytes one after the other, where each starts, its length, the longest.
    key = tuple(y_packed)
    pool = _POOLS.get(key)
    if pool is None:
        lengths = np.array([len(p) for p in y_packed] or [0], dtype=np.int64)
        offsets = np.zeros(lengths.shape[0], dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        data = np.frombuffer(b"".join(y_packed) or b"\0", dtype=np.uint8)
        if len(_POOLS) >= _MAX_POOLS:
            _POOLS.clear()
        pool = _POOLS[key] = (data, offsets, lengths, int(lengths.max()))
    return pool


def _written(seq, ts, y_index, y_packed, score, query, bounds,
             bare: bool = False) -> tuple[np.ndarray, np.ndarray]:
    # The messages of ``bounds`` one after the other in a buffer, and where each ends.
    n = seq.shape[0]
    pool, offsets, lengths, longest = _label_pool(y_packed)
    messages = bounds.shape[0] - 1
    out = np.empty(messages * (_HEAD.shape[0] + 5) + n * (_FIXED_BYTES + longest), dtype=np.uint8)
    ends = np.empty(messages, dtype=np.int64)
    _pack(np.ascontiguousarray(seq, dtype=np.int64),
          np.ascontiguousarray(ts, dtype=np.float64).view(np.int64),
          np.ascontiguousarray(y_index, dtype=np.int64), pool, offsets, lengths,
          np.ascontiguousarray(score, dtype=np.float64).view(np.int64),
          np.ascontiguousarray(query, dtype=np.bool_), bounds, out, ends, *_KEYS, bare)
    return out, ends
