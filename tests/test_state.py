import logging
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from edgelearn import state as st_mod
from edgelearn.state import (
    FORMAT_VERSION,
    CheckpointError,
    dumps,
    load_checkpoint,
    loads,
    save_checkpoint,
)


def assert_same_array(a, b):
    assert isinstance(b, np.ndarray)
    assert a.dtype == b.dtype and a.dtype.str == b.dtype.str
    assert a.shape == b.shape
    assert a.tobytes(order="C") == b.tobytes()
    assert b.flags.writeable and b.flags.c_contiguous


def assert_same(a, b):
    if isinstance(a, np.ndarray):
        assert_same_array(a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, float):
        assert isinstance(b, float)
        assert struct.pack("<d", a) == struct.pack("<d", b)
    else:
        assert type(a) is type(b) and a == b


def nan_with_payload(payload):
    return np.array([0x7FF0000000000000 | payload], dtype=np.uint64).view(np.float64)[0]


def sample_state():
    weird = np.array([nan_with_payload(0x1234), -0.0, np.inf, -np.inf,
                      5e-324, 1.0], dtype=np.float64)
    return {
        "learner": "PAACDS",
        "version": 3,
        "C": 0.5,
        "neg_zero": -0.0,
        "flags": [True, False, None],
        "blob": b"\x00\xff",
        "w": weird,
        "W": np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5,
        "half": np.array([np.nan, -0.0, 65504], dtype=np.float16),
        "active": np.array([True, False, True]),
        "counts": np.array([0, 2**63 - 1, -(2**63)], dtype=np.int64),
        "u": np.array([2**64 - 1, 0], dtype=np.uint64),
        "slots": np.array([[1, 2], [3, 4]], dtype=np.int32),
        "u8": np.zeros((2, 0, 3), dtype=np.uint8),
        "scalar": np.array(7.25),
        "cplx": np.array([1 + 2j, -0.0 - 1j], dtype=np.complex128),
        "big_endian": np.array([1.5, -2.0], dtype=">f8"),
        "nested": {"a": [1, 2.5, "x", {"deep": np.array([[1], [2]], dtype=np.int16)}],
                   7: "int key", None: "none key"},
        "empty": {},
        "empty_list": [],
        "big_int": 2**64 - 1,
        "min_int": -(2**63),
    }


def test_round_trip_nested_bit_identical():
    s = sample_state()
    out = loads(dumps(s))
    assert_same(s, out)


def test_nan_payload_and_negative_zero_survive():
    s = sample_state()
    out = loads(dumps(s))
    assert out["w"].view(np.uint64)[0] == 0x7FF0000000000000 | 0x1234
    assert np.signbit(out["w"][1]) and out["w"][1] == 0.0
    assert np.signbit(out["neg_zero"])


def test_decoded_arrays_are_writeable_copies():
    out = loads(dumps({"w": np.ones(3)}))
    out["w"][0] = 5.0
    assert out["w"][0] == 5.0


def test_non_contiguous_arrays_are_stored_as_c_contiguous_copies():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    f = np.asfortranarray(base)
    sliced = base[::2, 1::3]
    out = loads(dumps({"f": f, "s": sliced}))
    assert_same_array(f, out["f"])
    assert np.array_equal(out["s"], sliced) and out["s"].flags.c_contiguous


def test_documented_conversions():
    out = loads(dumps({"t": (1, (2, 3)), "ba": bytearray(b"ab"),
                       "np_scalars": [np.float32(0.1), np.int64(-3), np.bool_(True),
                                      np.uint64(2**64 - 1)],
                       "c": np.complex64(1 - 1j)}))
    assert out["t"] == [1, [2, 3]]
    assert out["ba"] == b"ab" and type(out["ba"]) is bytes
    f32, i64, b, u64 = out["np_scalars"]
    assert type(f32) is float and f32 == float(np.float32(0.1))
    assert type(i64) is int and i64 == -3
    assert b is True
    assert u64 == 2**64 - 1
    assert_same_array(np.array(np.complex64(1 - 1j)), out["c"])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(
    dtype=st.one_of(hnp.floating_dtypes(endianness="="), hnp.integer_dtypes(),
                    hnp.unsigned_integer_dtypes(), hnp.boolean_dtypes(),
                    hnp.complex_number_dtypes()),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_arrays_round_trip_property(arr):
    assert_same_array(arr, loads(dumps({"a": arr}))["a"])


@pytest.mark.parametrize("bad, kind", [
    ({"s": {1, 2}}, TypeError),
    ({"o": np.array([object()], dtype=object)}, TypeError),
    ({"u": np.array(["x"])}, TypeError),
    ({(1, 2): "tuple key"}, TypeError),
    ({"big": 2**64}, ValueError),
    ({"neg": -(2**63) - 1}, ValueError),
])
def test_dumps_rejects_unencodable_values(bad, kind):
    with pytest.raises(kind, match=r"state\["):
        dumps(bad)


def test_dumps_requires_a_dict():
    with pytest.raises(TypeError, match="must be a dict"):
        dumps([1, 2])


def small_blob():
    return dumps({"w": np.array([1.0, -0.0]), "n": 1, "k": "v"})


def test_truncation_at_every_position_is_detected():
    blob = small_blob()
    for cut in range(len(blob)):
        with pytest.raises(CheckpointError) as info:
            loads(blob[:cut])
        assert "truncated" in str(info.value), cut


def test_every_flipped_byte_is_detected():
    blob = small_blob()
    for i in range(len(blob)):
        for mask in (0x01, 0x80, 0xFF):
            damaged = bytearray(blob)
            damaged[i] ^= mask
            with pytest.raises(CheckpointError):
                loads(bytes(damaged))


def test_flipped_body_byte_reports_checksum_mismatch():
    blob = bytearray(small_blob())
    blob[-3] ^= 0x10
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        loads(bytes(blob))


def test_trailing_bytes_are_corruption():
    with pytest.raises(CheckpointError, match="after the end of the body"):
        loads(small_blob() + b"\x00")


def test_bad_magic_message():
    with pytest.raises(CheckpointError, match="bad magic"):
        loads(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)


def test_unsupported_version_message():
    blob = bytearray(small_blob())
    off = len(st_mod.FORMAT_NAME)
    blob[off:off + 4] = struct.pack(">I", FORMAT_VERSION + 1)
    with pytest.raises(CheckpointError) as info:
        loads(bytes(blob))
    assert str(info.value) == (f"unsupported checkpoint format version "
                               f"{FORMAT_VERSION + 1} (this build reads 1)")


def test_checkpoint_error_is_value_error():
    assert issubclass(CheckpointError, ValueError)


# ------------------------------------------------------------------ files

@pytest.fixture
def ckpt(tmp_path):
    return str(tmp_path / "model.ckpt")


def listing(path):
    return sorted(os.listdir(os.path.dirname(path)))


def test_two_generations(ckpt):
    for step in range(1, 4):
        save_checkpoint(ckpt, {"step": step, "w": np.full(3, step, dtype=np.float64)})
    state, info = load_checkpoint(ckpt)
    assert state["step"] == 3 and info.generation == 0 and info.path_used == ckpt
    assert info.problems == [] and not info.fell_back
    assert loads(open(ckpt + ".1", "rb").read())["step"] == 2
    assert listing(ckpt) == ["model.ckpt", "model.ckpt.1"]


def test_first_save_has_one_generation(ckpt):
    save_checkpoint(ckpt, {"step": 1})
    assert listing(ckpt) == ["model.ckpt"]


def test_accepts_pathlike(tmp_path):
    p = tmp_path / "p.ckpt"
    save_checkpoint(p, {"a": 1})
    assert load_checkpoint(p)[0] == {"a": 1}


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_fallback_to_older_generation(ckpt, caplog, damage):
    save_checkpoint(ckpt, {"step": 1})
    save_checkpoint(ckpt, {"step": 2})
    blob = bytearray(open(ckpt, "rb").read())
    if damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "flip":
        blob[-1] ^= 0x40
    elif damage == "empty":
        blob = b""
    else:
        blob = b"hello world" * 10
    write_bytes(ckpt, bytes(blob))
    with caplog.at_level(logging.WARNING, logger="edgelearn.state"):
        state, info = load_checkpoint(ckpt)
    assert state == {"step": 1}
    assert info.generation == 1 and info.path_used == ckpt + ".1" and info.fell_back
    assert len(info.problems) == 1 and info.problems[0].startswith(ckpt + ": ")
    assert any(r.levelno == logging.WARNING and r.name == "edgelearn.state"
               for r in caplog.records)


def test_missing_newest_is_reported_as_missing(ckpt):
    save_checkpoint(ckpt, {"step": 1})
    save_checkpoint(ckpt, {"step": 2})
    os.unlink(ckpt)
    state, info = load_checkpoint(ckpt)
    assert state == {"step": 1}
    assert info.problems == [f"{ckpt}: missing"]


def test_error_when_both_generations_are_bad(ckpt):
    save_checkpoint(ckpt, {"step": 1})
    save_checkpoint(ckpt, {"step": 2})
    write_bytes(ckpt, open(ckpt, "rb").read()[:-5])
    blob = bytearray(open(ckpt + ".1", "rb").read())
    blob[-1] ^= 1
    write_bytes(ckpt + ".1", bytes(blob))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(ckpt)
    msg = str(info.value)
    assert f"{ckpt}: truncated" in msg
    assert f"{ckpt}.1: corrupt checkpoint: checksum mismatch" in msg
    assert not info.value.missing and len(info.value.problems) == 2


def test_error_when_newest_bad_and_older_missing(ckpt):
    write_bytes(ckpt, b"edgelearn-checkpoint")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(ckpt)
    assert "truncated" in str(info.value) and f"{ckpt}.1: missing" in str(info.value)
    assert not info.value.missing


def test_both_missing(ckpt):
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(ckpt)
    assert info.value.missing


def _contents(path):
    return {name: open(os.path.join(os.path.dirname(path), name), "rb").read()
            for name in listing(path)}


def test_failed_fsync_leaves_files_intact(ckpt, monkeypatch):
    save_checkpoint(ckpt, {"step": 1})
    save_checkpoint(ckpt, {"step": 2})
    before = _contents(ckpt)

    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        save_checkpoint(ckpt, {"step": 3})
    monkeypatch.undo()
    assert _contents(ckpt) == before  # no temp file left either
    assert load_checkpoint(ckpt)[0] == {"step": 2}


def test_failed_write_leaves_files_intact(ckpt, monkeypatch):
    save_checkpoint(ckpt, {"step": 1})
    before = _contents(ckpt)
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise OSError(5, "Input/output error")

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: HalfWriter(real_fdopen(*a, **k)))
    with pytest.raises(OSError):
        save_checkpoint(ckpt, {"step": 2})
    monkeypatch.undo()
    assert _contents(ckpt) == before


@pytest.mark.parametrize("fail_call", [1, 2])
def test_failed_replace_leaves_newest_in_place(ckpt, monkeypatch, fail_call):
    save_checkpoint(ckpt, {"step": 1})
    save_checkpoint(ckpt, {"step": 2})
    newest = open(ckpt, "rb").read()
    real_replace = os.replace
    calls = []

    def flaky(src, dst):
        calls.append((src, dst))
        if len(calls) == fail_call:
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OSError):
        save_checkpoint(ckpt, {"step": 3})
    monkeypatch.undo()
    # The newest generation is never missing, whichever rename failed.
    assert open(ckpt, "rb").read() == newest
    assert listing(ckpt) == ["model.ckpt", "model.ckpt.1"]
    assert load_checkpoint(ckpt)[0] == {"step": 2}


def test_without_hard_links_rotation_still_works(ckpt, monkeypatch):
    def no_links(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    for step in range(1, 4):
        save_checkpoint(ckpt, {"step": step})
    assert load_checkpoint(ckpt)[0] == {"step": 3}
    assert load_checkpoint(ckpt + ".1")[0] == {"step": 2}
    assert listing(ckpt) == ["model.ckpt", "model.ckpt.1"]


def test_corrupt_newest_is_not_rotated_over_a_good_older(ckpt):
    save_checkpoint(ckpt, {"step": 1})
    save_checkpoint(ckpt, {"step": 2})
    write_bytes(ckpt, b"garbage")
    save_checkpoint(ckpt, {"step": 3})
    assert load_checkpoint(ckpt)[0] == {"step": 3}
    assert load_checkpoint(ckpt + ".1")[0] == {"step": 1}


def test_unencodable_state_touches_no_file(ckpt):
    save_checkpoint(ckpt, {"step": 1})
    before = _contents(ckpt)
    with pytest.raises(TypeError):
        save_checkpoint(ckpt, {"bad": object()})
    assert _contents(ckpt) == before


def test_file_round_trip_is_bit_identical(ckpt):
    s = sample_state()
    save_checkpoint(ckpt, s)
    assert_same(s, load_checkpoint(ckpt)[0])


def test_version_1_learner_states_still_load():
    """Version 2 added the binary labels (learned["targets"]); a version-1 state
    (binary labels True/False, multiclass "classes", multi-label "labels") loads."""
    import edgelearn

    cases = [(edgelearn.PA(), lambda a: a > 0, None),
             (edgelearn.PAACDS(n_classes=3, seed=1), lambda a: "hi" if a > 0.5 else ("lo" if a < -0.5 else "mid"), "classes"),
             (edgelearn.MultiLabelKELM(window=16, block_size=4), lambda a: {"pos": a > 0}, "labels")]
    rng = np.random.default_rng(0)
    for model, make_label, old_key in cases:
        for _ in range(100):
            a = float(rng.normal())
            model.learn_one({"a": a, "b": float(rng.normal())}, make_label(a))
        state = model.to_state()
        assert state["version"] == 2
        old = {**state, "version": 1, "learned": dict(state["learned"])}
        labels = old["learned"].pop("targets")
        if old_key:
            old["learned"][old_key] = labels
        restored = edgelearn.from_state(old)
        assert restored.classes == model.classes
        x = {"a": 0.7, "b": -0.2}
        assert restored.predict_one(x) == model.predict_one(x)
    with pytest.raises(ValueError, match="version 3 is not supported"):
        edgelearn.from_state({**edgelearn.PA().to_state(), "version": 3})
