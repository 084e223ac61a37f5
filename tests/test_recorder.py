"""Tests for firmware_bridge.wire.logfile: the msgpack message log format."""

from __future__ import annotations

import os
import pickle
import struct
import zlib

import msgpack
import pytest

from firmware_bridge.wire.logfile import (
    LOG_SUFFIX,
    LogError,
    LogRecord,
    iter_logs,
    pack_header,
    pack_record,
    read_header,
    read_log,
    write_log,
)
from firmware_bridge.service.recorder import LogWriter


def make_records(n: int, payload_size: int = 20) -> list[tuple[str, float, bytes]]:
    return [
        (f"sensors/s{i % 3}/data", 1_700_000_000.0 + i, i.to_bytes(4, "big") * (payload_size // 4))
        for i in range(n)
    ]


def triples(records) -> list[tuple[str, float, bytes]]:
    return [(r.topic, r.received_at, r.payload) for r in records]


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- format -------------------------------------------------------------------------


def test_file_is_header_then_record_arrays_exactly(tmp_path):
    path = tmp_path / "a.msgpack"
    write_log(path, [("sensors/x/data", 12.5, b"\x81\xa1a\x01")], created=99.0)
    objects = list(msgpack.Unpacker(open(path, "rb"), raw=False))
    body = msgpack.packb(["sensors/x/data", 12.5, b"\x81\xa1a\x01"], use_bin_type=True)
    assert objects == [
        {"format": "edgelearn-log", "version": 2, "created": 99.0,
         "crc32": zlib.crc32(msgpack.packb(["edgelearn-log", 2, 99.0]))},
        [body, zlib.crc32(body)],
    ]
    # The payload is msgpack bin (not str) and the time a float64, byte for byte.
    raw = path.read_bytes()
    assert raw == pack_header(99.0) + pack_record("sensors/x/data", 12.5, b"\x81\xa1a\x01")
    assert body.endswith(b"\xcb" + struct.pack(">d", 12.5) + b"\xc4\x04\x81\xa1a\x01")


def test_round_trip_with_offsets(tmp_path):
    path = tmp_path / "a.msgpack"
    records = make_records(50) + [("t", 0.0, b""), ("ünïcode/topic", -1.5, bytes(range(256)))]
    assert write_log(path, records) == len(records)
    read = list(read_log(path))
    assert triples(read) == records
    # Every offset points at the record's own bytes.
    raw = path.read_bytes()
    for record in read:
        unpacker = msgpack.Unpacker(raw=False)
        unpacker.feed(raw[record.offset :])
        body, crc = unpacker.unpack()
        assert msgpack.unpackb(body) == [record.topic, record.received_at, record.payload]
        assert crc == zlib.crc32(body)


def test_write_log_accepts_log_records(tmp_path):
    first, second = tmp_path / "1.msgpack", tmp_path / "2.msgpack"
    write_log(first, make_records(5))
    write_log(second, read_log(first))
    assert triples(read_log(second)) == make_records(5)


def test_empty_log_has_no_records(tmp_path):
    path = tmp_path / "empty.msgpack"
    assert write_log(path, []) == 0
    assert list(read_log(path)) == []
    assert read_header(path)["format"] == "edgelearn-log"


def test_pack_record_rejects_what_the_format_cannot_hold():
    with pytest.raises(TypeError, match="topic"):
        pack_record(b"t", 1.0, b"")
    with pytest.raises(TypeError, match="received_at"):
        pack_record("t", True, b"")
    with pytest.raises(TypeError, match="payload"):
        pack_record("t", 1.0, "text")
    body, _ = msgpack.unpackb(pack_record("t", 1, bytearray(b"ab")))
    assert msgpack.unpackb(body) == ["t", 1.0, b"ab"]


# --- writer and rotation ------------------------------------------------------------


def test_rotation_keeps_every_record_once_and_in_order(tmp_path):
    records = make_records(500, payload_size=40)
    with LogWriter(tmp_path, max_bytes=2_000) as writer:
        for topic, received_at, payload in records:
            writer.write(topic, payload, received_at=received_at)
    files = sorted(os.listdir(tmp_path))
    assert len(files) > 10
    assert all(f.startswith("messages-") and f.endswith(LOG_SUFFIX) for f in files)
    assert triples(iter_logs([tmp_path])) == records
    for name in files:
        size = os.path.getsize(tmp_path / name)
        assert size <= 2_000
        assert len(list(read_log(tmp_path / name))) >= 1  # no empty rotated files


def test_record_larger_than_max_bytes_gets_its_own_file(tmp_path):
    with LogWriter(tmp_path, max_bytes=100) as writer:
        writer.write("t", b"small", received_at=1.0)
        writer.write("t", b"x" * 500, received_at=2.0)
        writer.write("t", b"small", received_at=3.0)
    files = sorted(tmp_path.iterdir())
    assert [len(list(read_log(f))) for f in files] == [1, 1, 1]
    assert [r.received_at for r in iter_logs(tmp_path)] == [1.0, 2.0, 3.0]


def test_file_names_sort_in_write_order_even_when_the_clock_goes_back(tmp_path):
    clock = FakeClock(2_000_000_000.0)
    with LogWriter(tmp_path, max_bytes=80, clock=clock) as writer:
        for i in range(12):
            clock.now -= 1_000_000  # a Pi without RTC booting with a stale time
            writer.write("t", b"p" * 20, received_at=float(i))
    assert [r.received_at for r in iter_logs(tmp_path)] == [float(i) for i in range(12)]
    first = sorted(os.listdir(tmp_path))[0]
    assert first.startswith("messages-00000000-20")  # UTC stamp for people


def test_new_writer_continues_the_counter_and_never_overwrites(tmp_path):
    clock = FakeClock()
    for run in range(3):
        with LogWriter(tmp_path, clock=clock) as writer:
            writer.write("t", b"run", received_at=float(run))
    assert len(os.listdir(tmp_path)) == 3
    assert [r.received_at for r in iter_logs(tmp_path)] == [0.0, 1.0, 2.0]


def test_writer_creates_no_file_without_records(tmp_path):
    LogWriter(tmp_path / "logs").close()
    assert os.listdir(tmp_path / "logs") == []


def test_max_files_deletes_the_oldest_of_its_prefix_only(tmp_path):
    (tmp_path / "other.msgpack").write_bytes(pack_header(0.0))
    records = make_records(100, payload_size=40)
    with LogWriter(tmp_path, prefix="gw-1", max_bytes=300, max_files=3) as writer:
        for topic, received_at, payload in records:
            writer.write(topic, payload, received_at=received_at)
        assert len(writer.log_files()) == 3
        assert writer.files_created > 3
    kept = triples(iter_logs(sorted(p for p in tmp_path.iterdir() if p.name.startswith("gw-1"))))
    assert kept == records[-len(kept) :]  # the newest, complete and in order
    assert (tmp_path / "other.msgpack").exists()


def test_flush_makes_records_readable_while_writing(tmp_path):
    writer = LogWriter(tmp_path)
    writer.write("t", b"a", received_at=1.0)
    writer.flush(fsync=True)
    assert triples(read_log(writer.path)) == [("t", 1.0, b"a")]
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write("t", b"b")


def test_writer_parameters_are_checked(tmp_path):
    with pytest.raises(ValueError, match="max_bytes"):
        LogWriter(tmp_path, max_bytes=0)
    with pytest.raises(ValueError, match="max_files"):
        LogWriter(tmp_path, max_files=0)
    with pytest.raises(ValueError, match="prefix"):
        LogWriter(tmp_path, prefix="../x")


def test_writer_default_time_comes_from_the_clock(tmp_path):
    with LogWriter(tmp_path, clock=FakeClock(42.0)) as writer:
        writer.write("t", b"")
    assert [r.received_at for r in iter_logs(tmp_path)] == [42.0]
    assert read_header(writer.path)["created"] == 42.0


# --- damaged files ------------------------------------------------------------------


def test_truncated_tail_is_reported_with_its_offset(tmp_path):
    path = tmp_path / "cut.msgpack"
    write_log(path, make_records(10))
    good = list(read_log(path))
    last_offset = good[-1].offset
    size = os.path.getsize(path)
    cut = last_offset + 5
    with open(path, "r+b") as f:
        f.truncate(cut)

    with pytest.raises(LogError) as caught:
        list(read_log(path))
    error = caught.value
    assert (error.offset, error.unread_bytes) == (last_offset, 5)
    assert str(path) in str(error) and f"byte offset {last_offset}" in str(error)
    assert "truncated" in error.reason
    assert size > cut

    errors: list[LogError] = []
    assert triples(read_log(path, on_error=errors.append)) == triples(good[:-1])
    assert [e.offset for e in errors] == [last_offset]


def test_garbage_in_the_middle_is_reported_and_reading_stops(tmp_path):
    path = tmp_path / "bad.msgpack"
    records = make_records(6)
    write_log(path, records)
    offsets = [r.offset for r in read_log(path)]
    raw = bytearray(path.read_bytes())
    raw[offsets[3]] = 0xC1  # the one byte msgpack never uses
    path.write_bytes(bytes(raw))

    errors: list[LogError] = []
    assert triples(read_log(path, on_error=errors.append)) == records[:3]
    [error] = errors
    assert error.offset == offsets[3]
    assert error.unread_bytes == len(raw) - offsets[3]
    assert "corrupt" in error.reason


def test_valid_msgpack_of_the_wrong_shape_is_corrupt_not_skipped(tmp_path):
    path = tmp_path / "shape.msgpack"
    write_log(path, make_records(2))
    end = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(msgpack.packb(7))  # garbage that happens to decode
        f.write(pack_record("t", 9.0, b"after"))
    with pytest.raises(LogError, match=f"byte offset {end}: corrupt record: expected an array"):
        list(read_log(path))


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "the file is empty"),
        (b"\xc1", "no valid header"),
        (msgpack.packb([1, 2]), "not an edgelearn-log file"),
        (msgpack.packb({"format": "other", "version": 1, "created": 0.0}), "not an edgelearn-log"),
        (msgpack.packb({"format": "edgelearn-log", "version": 3, "created": 0.0}), "version 3"),
        (msgpack.packb({"format": "edgelearn-log", "version": True, "created": 0.0}), "version"),
        (msgpack.packb({"format": "edgelearn-log", "version": 1}), "'created'"),
        (pack_record("t", 1.0, b"x"), "not an edgelearn-log file"),
    ],
)
def test_bad_header_is_an_error_at_offset_zero(tmp_path, content, fragment):
    path = tmp_path / "h.msgpack"
    path.write_bytes(content + (pack_record("t", 1.0, b"x") if content else b""))
    with pytest.raises(LogError, match="byte offset 0") as caught:
        list(read_log(path))
    assert fragment in caught.value.reason
    assert caught.value.unread_bytes == os.path.getsize(path)
    with pytest.raises(LogError):
        read_header(path)


def test_iter_logs_reports_a_bad_file_and_goes_on(tmp_path):
    write_log(tmp_path / "a.msgpack", make_records(2))
    (tmp_path / "b.msgpack").write_bytes(b"not a log")
    write_log(tmp_path / "c.msgpack", make_records(3))
    (tmp_path / "notes.txt").write_text("ignored: not a log suffix")
    errors: list[LogError] = []
    read = triples(iter_logs(tmp_path, on_error=errors.append))
    assert read == make_records(2) + make_records(3)
    assert [os.path.basename(e.path) for e in errors] == ["b.msgpack"]
    with pytest.raises(LogError):
        list(iter_logs([tmp_path]))


def test_iter_logs_keeps_the_order_of_explicit_files(tmp_path):
    write_log(tmp_path / "b.msgpack", [("t", 2.0, b"")])
    write_log(tmp_path / "a.msgpack", [("t", 1.0, b"")])
    order = [r.received_at for r in iter_logs([tmp_path / "b.msgpack", tmp_path / "a.msgpack"])]
    assert order == [2.0, 1.0]
    assert [r.received_at for r in iter_logs(tmp_path)] == [1.0, 2.0]


def test_log_error_is_a_value_error_that_pickles():
    error = LogError("x.msgpack", 10, "corrupt record: boom", 5)
    assert isinstance(error, ValueError)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.offset, copy.reason, copy.unread_bytes, str(copy)) == (
        "x.msgpack",
        10,
        "corrupt record: boom",
        5,
        str(error),
    )


def test_log_record_defaults_offset():
    assert LogRecord("t", 1.0, b"").offset == -1


def test_the_old_format_still_reads():
    """tests/data/log-v1.msgpack: version 1 (no checksums), 49 records."""
    path = os.path.join(os.path.dirname(__file__), "data", "log-v1.msgpack")
    assert read_header(path)["version"] == 1
    records = list(read_log(path))
    assert len(records) == 49
    assert records[0].topic == "sensors/v1a/data" and records[-1].topic == "edgelearn/v1a/label"
    v1_header = msgpack.packb({"format": "edgelearn-log", "version": 1, "created": 1.7e9})
    assert records[0].offset == len(v1_header) and records[0].received_at == 1700000000.0


def _replay_json(path, capsys):
    from firmware_bridge.cli import main
    code = main(["replay", str(path), "--learner", "pa", "--json"])
    return code, capsys.readouterr().out


def test_flipped_bytes_never_replay_silently_to_changed_results(tmp_path, capsys):
    from firmware_bridge.wire import encode_data
    records = [(f"sensors/office-{i % 2}/data", 1.7e9 + i,
                encode_data(1.7e9 + i, i // 2, {"t": 20.0 + i % 7, "co2": 400.0 + i % 13},
                            y=i % 5 > 1)) for i in range(30)]
    path = tmp_path / "log.msgpack"
    write_log(path, records, created=1.7e9)
    data = path.read_bytes()
    code, clean = _replay_json(path, capsys)
    assert code == 0
    silent_changes = []
    reported = 0
    for position in range(0, len(data), 2):  # every other byte, alternating low and high bits
        for mask in ((0x01, 0x80)[position // 2 % 2],):
            damaged = bytearray(data)
            damaged[position] ^= mask
            path.write_bytes(bytes(damaged))
            code, out = _replay_json(path, capsys)
            if code == 0 and out != clean:
                silent_changes.append((position, mask))
            reported += code != 0
    assert silent_changes == []
    assert reported > len(data) // 2  # most flips are caught (the rest change nothing)
