"""The jitted decoder against the protocol's exact path, and its kernels against
plain Python references (zlib's CRC-32, FNV-1a, the log reader)."""

import math
import struct
import zlib

import msgpack
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_bridge.wire.bulk_decode import REC_BATCH, REC_PYTHON, REC_SINGLE, ByteTable, FastDecoder
from firmware_bridge.wire.kernels import msgpack_scan as k
from firmware_bridge.wire import (
    DataBatch,
    DataMessage,
    Limits,
    Reject,
    decode_payload,
    encode_batch,
    encode_data,
    is_batch,
    validate_batch,
    validate_data,
)
from firmware_bridge.wire.logfile import read_log, write_log


# --- a msgpack encoder that picks any valid encoding (the packer always picks the
# shortest), so the kernel meets str8 keys, int64 zeros, float32, map16 ... ---------


class Pairs(list):
    """A map as a list of (key, value) pairs: keys may repeat."""


def _int(v, draw):
    forms = []
    if 0 <= v <= 0x7F:
        forms.append(bytes([v]))
    if -32 <= v < 0:
        forms.append(struct.pack("b", v))
    for code, fmt in ((0xCC, ">B"), (0xCD, ">H"), (0xCE, ">I"), (0xCF, ">Q"),
                      (0xD0, ">b"), (0xD1, ">h"), (0xD2, ">i"), (0xD3, ">q")):
        try:
            forms.append(bytes([code]) + struct.pack(fmt, v))
        except struct.error:
            pass
    return draw(st.sampled_from(forms))


def _len(n, fix_base, fix_max, codes, draw):
    forms = [bytes([fix_base | n])] if n <= fix_max else []
    for code, fmt in codes:
        try:
            forms.append(bytes([code]) + struct.pack(fmt, n))
        except struct.error:
            pass
    return draw(st.sampled_from(forms))


def _fits_float32(v: float) -> bool:
    try:
        return struct.unpack(">f", struct.pack(">f", v))[0] == v
    except OverflowError:
        return False


def pack_any(obj, draw) -> bytes:
    if obj is None:
        return b"\xc0"
    if isinstance(obj, bool):
        return b"\xc3" if obj else b"\xc2"
    if isinstance(obj, int):
        return _int(obj, draw)
    if isinstance(obj, float):
        if draw(st.booleans()) and (math.isnan(obj) or _fits_float32(obj)):
            return b"\xca" + struct.pack(">f", obj)
        return b"\xcb" + struct.pack(">d", obj)
    if isinstance(obj, str):
        raw = obj.encode("utf-8", "surrogatepass")
        return _len(len(raw), 0xA0, 31, ((0xD9, ">B"), (0xDA, ">H"), (0xDB, ">I")), draw) + raw
    if isinstance(obj, bytes):
        return _len(len(obj), 0, -1, ((0xC4, ">B"), (0xC5, ">H"), (0xC6, ">I")), draw) + obj
    if isinstance(obj, Pairs):
        head = _len(len(obj), 0x80, 15, ((0xDE, ">H"), (0xDF, ">I")), draw)
        return head + b"".join(pack_any(a, draw) + pack_any(b, draw) for a, b in obj)
    if isinstance(obj, dict):
        return pack_any(Pairs(obj.items()), draw)
    if isinstance(obj, list):
        head = _len(len(obj), 0x90, 15, ((0xDC, ">H"), (0xDD, ">I")), draw)
        return head + b"".join(pack_any(v, draw) for v in obj)
    raise TypeError(obj)


NAMES = st.sampled_from(["t", "hum", "c0", "c1", "temp", "a b", "", "x/y", "é", "\x07", "t" * 20])
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(width=32),
    st.integers(-(2 ** 63), 2 ** 64 - 1),
    st.sampled_from([0, 1, -1, 2 ** 53, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 63, 2 ** 62 + 1]),
)
VALUES = st.one_of(NUMBERS, st.booleans(), st.none(), st.text(max_size=3), st.binary(max_size=2))
LABELS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.integers(-(2 ** 63), 2 ** 64 - 1),
                   st.sampled_from(["occupied", "empty", "", "a\nb", "x" * 70, "é"]),
                   st.floats(), st.dictionaries(st.sampled_from(["a", "b"]), st.booleans(), max_size=2))


@st.composite
def readings(draw):
    fields = [("ts", draw(st.one_of(NUMBERS, st.booleans(), st.text(max_size=2)))),
              ("seq", draw(st.one_of(st.integers(-3, 2 ** 64 - 1), st.sampled_from([0, 5, 2 ** 62]),
                                     st.floats(0, 10), st.booleans()))),
              ("ch", Pairs(draw(st.lists(st.tuples(NAMES, VALUES), max_size=5))))]
    if draw(st.booleans()):
        fields.append(("y", draw(LABELS)))
    if draw(st.integers(0, 9)) == 0:
        fields.append((draw(st.sampled_from(["extra", "ts", "ch", "readings", 3])), draw(VALUES)))
    if draw(st.integers(0, 9)) == 0:
        fields.pop(draw(st.integers(0, len(fields) - 1)))
    fields = draw(st.permutations(fields))
    # mostly plain readings, so both verdicts are common
    if draw(st.booleans()):
        fields = [("ts", draw(st.floats(-1e6, 1e6))), ("seq", draw(st.integers(0, 1000))),
                  ("ch", {n: draw(st.floats(-1e3, 1e3)) for n in draw(st.lists(
                      st.sampled_from(["t", "hum", "c0", "c1", "temp"]), max_size=4, unique=True))})]
        if draw(st.booleans()):
            fields.append(("y", draw(st.sampled_from([True, False, 1, 0, "occupied", "empty"]))))
        fields = draw(st.permutations(fields))
    return Pairs(fields)


@st.composite
def payloads(draw):
    if draw(st.booleans()):
        obj = draw(readings())
    else:
        batch = draw(st.lists(readings(), min_size=0, max_size=5))
        obj = Pairs([("readings", batch)])
        if draw(st.integers(0, 9)) == 0:
            obj.append(("ts", 1.0))
    raw = pack_any(obj, draw)
    cut = draw(st.integers(0, 12))
    if cut == 1:
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif cut == 2:
        raw = raw + b"\x00"
    elif cut == 3 and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1:]
    return raw


def exact(payload: bytes, limits: Limits):
    obj = decode_payload(payload, limits)
    if isinstance(obj, Reject):
        return obj
    return validate_batch(obj, "s", limits) if is_batch(obj) else validate_data(obj, "s", limits)


def reading_of(decoder, chunk, r):
    p0, n = chunk.pair_first[r], chunk.pair_count[r]
    channels = {decoder.names.values[chunk.pair_name[p]]: chunk.pair_value[p].item()
                for p in range(p0, p0 + n)}
    label = chunk.label[r]
    y = None if label < 0 else decoder.labels.values[label]
    return chunk.ts[r].item(), chunk.seq[r].item(), channels, y


def same_reading(message: DataMessage, got) -> bool:
    want = (message.ts, message.seq, message.channels, message.y)
    if message.non_finite or list(want[2]) != list(got[2]):
        return False
    return all(type(a) is type(b) and a == b for a, b in zip(
        (want[0], want[1], want[3], *want[2].values()), (got[0], got[1], got[3], *got[2].values())))


LIMITS = [Limits(), Limits(max_channels=3, max_batch_readings=3, max_label_bytes=8,
                           max_channel_name_bytes=4, max_payload_bytes=120)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(payloads(), min_size=1, max_size=8), st.sampled_from([0, 1]))
def test_the_kernel_accepts_only_what_the_protocol_reads_identically(raws, which):
    limits = LIMITS[which]
    decoder = FastDecoder(limits)
    chunk = decoder.decode_payloads(raws)
    for i, raw in enumerate(raws):
        want = exact(raw, limits)
        kind = chunk.kind[i]
        if kind == REC_PYTHON:
            assert chunk.count[i] == 0
            continue
        got = [reading_of(decoder, chunk, r) for r in range(chunk.first[i], chunk.first[i] + chunk.count[i])]
        if kind == REC_SINGLE:
            assert isinstance(want, DataMessage) and len(got) == 1, (raw, want)
            assert same_reading(want, got[0]), (raw, want, got)
        else:
            assert kind == REC_BATCH
            assert isinstance(want, DataBatch) and not want.rejects, (raw, want)
            assert len(want.readings) == len(got)
            assert all(same_reading(m, g) for m, g in zip(want.readings, got)), (raw, want, got)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e9, 1e9), st.integers(0, 2 ** 40),
                          st.dictionaries(st.sampled_from(["t", "hum", "c0", "k.1", "é"]),
                                          st.one_of(st.floats(-1e9, 1e9), st.integers(-2 ** 53, 2 ** 53)),
                                          max_size=5),
                          st.sampled_from([None, True, False, 0, 1, -7, "occupied", "empty"])),
                min_size=1, max_size=6), st.booleans())
def test_plain_messages_and_batches_take_the_kernel(rows, as_batch):
    raws = [encode_batch(rows)] if as_batch else [encode_data(*row) for row in rows]
    decoder = FastDecoder()
    chunk = decoder.decode_payloads(raws)
    assert (chunk.kind == (REC_BATCH if as_batch else REC_SINGLE)).all()
    got = [reading_of(decoder, chunk, r) for r in range(len(chunk.seq))]
    want = [(float(ts), seq, {n: float(v) for n, v in ch.items()}, y) for ts, seq, ch, y in rows]
    assert [(a, b, c, (type(d), d)) for a, b, c, d in got] == [(a, b, c, (type(d), d)) for a, b, c, d in want]


def test_a_bad_name_stays_bad_and_is_judged_once():
    decoder = FastDecoder()
    raws = [encode_data(0.0, i, {"a b" if i % 2 else "ok": 1.0}) for i in range(6)]
    chunk = decoder.decode_payloads(raws)
    assert chunk.kind.tolist() == [REC_SINGLE, REC_PYTHON] * 3
    assert decoder.names.values == ["ok", "a b"]


def test_outputs_grow_for_many_readings():
    decoder = FastDecoder(Limits(max_payload_bytes=10 ** 6))
    rows = [(float(i), i, {f"c{j}": float(j) for j in range(60)}, None) for i in range(64)]
    chunk = decoder.decode_payloads([encode_batch(rows)] * 40)
    assert (chunk.kind == REC_BATCH).all() and chunk.seq.shape[0] == 2560
    assert chunk.pair_value.shape[0] == 2560 * 60


def test_a_run_of_batches_decodes_as_each_alone_without_growing_the_pairs():
    """32 full batches in one call (the gateway's queued compact batches) read as
    each batch alone, and the pair arrays keep the size the payloads' bytes gave
    them: growing them by doubling along with the readings made the call slower
    than 32 calls."""
    rows = [(float(i), i, {c: float(i * j) for j, c in enumerate("abc")},
             bool(i % 3)) for i in range(64)]
    payloads = [encode_batch([(ts + 64 * m, seq + 64 * m, ch, y) for ts, seq, ch, y in rows])
                for m in range(32)]
    decoder = FastDecoder()
    chunk = decoder.decode_payloads(payloads)
    assert (chunk.kind == REC_BATCH).all() and chunk.seq.shape[0] == 32 * 64
    alone = [decoder.decode_payloads([p]) for p in payloads]
    for got, want in ((chunk.seq, [a.seq for a in alone]), (chunk.ts, [a.ts for a in alone]),
                      (chunk.label, [a.label for a in alone]),
                      (chunk.pair_name, [a.pair_name for a in alone]),
                      (chunk.pair_value, [a.pair_value for a in alone])):
        assert got.tolist() == np.concatenate(want).tolist()
    limits = decoder.limits
    first_size = sum(map(len, payloads)) // 2 + limits.max_batch_readings * limits.max_channels + 16
    assert chunk.pair_value.base.shape[0] == first_size


# --- kernels against plain references -------------------------------------------------


def fnv1a_reference(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) % 2 ** 64
    h = h - 2 ** 64 if h >= 2 ** 63 else h
    return h or 1


@settings(deadline=None)
@given(st.binary(max_size=300))
def test_crc32_and_fnv1a_match_their_references(data):
    buf = np.frombuffer(data, dtype=np.uint8)
    assert k.crc32(buf, 0, len(data)) == zlib.crc32(data)
    for start in (1, 5):  # eight bytes a step from any offset, the rest one by one
        if start <= len(data):
            assert k.crc32(buf, start, len(data)) == zlib.crc32(data[start:])
    assert k.fnv1a(buf, 0, len(data)) == fnv1a_reference(data)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.binary(max_size=9), min_size=1, max_size=400, unique=True), st.randoms())
def test_the_short_names_cache_finds_what_the_names_table_finds(names, rnd):
    # Names of up to 7 bytes go through a direct-mapped cache keyed by their packed
    # bytes; it must give the table's id (or -1) for any bytes, NULs and prefixes
    # included ("a", "a\0"), when slots collide, and on a repeat from the cache.
    table = ByteTable()
    for i, name in enumerate(names):
        if i % 3:  # a third unknown to the table: -1, never cached
            table.add(name, name, True)
    short = k.new_short_names()
    lookups = names * 3
    rnd.shuffle(lookups)
    for name in lookups:
        src = np.frombuffer(name + b"\xcb" + bytes(8), dtype=np.uint8)  # a value follows a name
        want = table.find(name)
        if len(name) <= k.SHORT_NAME_BYTES:
            got = k.short_name_find(short, table.keys, table.vals, table.pool, table.off, table.length,
                                    src, 0, len(name))
            assert got == want, name


def _log(tmp_path, n=40):
    records = [(f"sensors/s{i % 3}/data", float(i) / 3, encode_data(float(i), i, {"t": i * 0.5}))
               for i in range(n)]
    records.append(("sensors/\u00e9/data", 99.0, b"\x80"))
    path = tmp_path / "a.msgpack"
    write_log(path, records, created=0.0)
    return path


def _scanned(path):
    decoder = FastDecoder(topic_stream=lambda t: t.split("/")[1] if t.endswith("/data") else None)
    log = decoder.scan_log(path)
    got = [(decoder.topics.values[t], r, bytes(log.buf[s:s + n]), o) for t, r, s, n, o in zip(
        log.topic, log.received_at, log.payload_start, log.payload_len, log.offset)]
    return log, got


def test_scan_log_reads_what_read_log_reads(tmp_path):
    path = _log(tmp_path)
    log, got = _scanned(path)
    assert log.stop is None
    assert got == [(r.topic, r.received_at, r.payload, r.offset) for r in read_log(path)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10 ** 6), st.integers(0, 255), st.booleans())
def test_scan_log_stops_at_or_before_damage(tmp_path, where, byte, truncate):
    path = _log(tmp_path, 12)
    data = bytearray(path.read_bytes())
    unpacker = msgpack.Unpacker()
    unpacker.feed(bytes(data))
    unpacker.unpack()
    header = unpacker.tell()
    at = header + where % (len(data) - header)
    if truncate:
        del data[at:]
    else:
        data[at] = byte
    bad = tmp_path / "bad.msgpack"
    bad.write_bytes(bytes(data))
    errors = []
    exact_records = [(r.topic, r.received_at, r.payload, r.offset) for r in read_log(bad, on_error=errors.append)]
    log, got = _scanned(bad)
    # what the kernel read is a prefix of what the exact reader read; it stops
    # where it is unsure, and the exact reader takes over there
    assert got == exact_records[: len(got)]
    if log.stop is None:
        assert not errors and len(got) == len(exact_records)
    else:
        assert log.stop == (exact_records[len(got)][3] if len(got) < len(exact_records) else errors[0].offset)
