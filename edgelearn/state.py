"""Versioned checkpoint format: msgpack with an integrity envelope, atomic files.

A checkpoint holds one ``dict`` of plain values (``None``, ``bool``, ``int``,
``float``, ``str``, ``bytes``, lists, dicts, nested) and NumPy arrays of any numeric
or bool dtype and any shape. Decoding gives back the same structure with these
conversions, all deliberate:

* tuples come back as lists (msgpack has one array type);
* ``bytearray``/``memoryview`` come back as ``bytes``;
* NumPy scalars come back as Python ``bool``/``int``/``float`` (complex NumPy scalars
  as 0-d arrays), exactly;
* arrays come back bit-identical (NaN payloads, ``-0.0``), with the same dtype
  (byte order included) and shape, C-contiguous and writeable.

Dict keys may be ``str``, ``int``, ``float``, ``bool``, ``None`` or ``bytes``.

File layout (all integers big-endian)::

    offset  size  field
    0       20    magic b"edgelearn-checkpoint"
    20      4     format version (uint32), currently 1
    24      8     body length in bytes (uint64)
    32      16    BLAKE2b-128 digest of bytes 20..31 followed by the body
    48      n     body: msgpack of the state dict

The length makes truncation distinguishable from corruption; the digest catches any
changed byte. ``loads`` raises :class:`CheckpointError` saying which check failed.

>>> import numpy as np
>>> blob = dumps({"w": np.array([0.5, -0.0]), "n": 3, "name": "pa"})
>>> state = loads(blob)
>>> state["w"], state["n"], state["name"]
(array([ 0.5, -0. ]), 3, 'pa')
>>> try:
...     loads(blob[:-1])
... except CheckpointError as exc:
...     print(exc)
truncated checkpoint: body is 41 bytes, header says 42
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import struct
import tempfile
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

__all__ = [
    "CheckpointError",
    "LoadReport",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "dumps",
    "loads",
    "save_checkpoint",
    "load_checkpoint",
]

logger = logging.getLogger("edgelearn.state")

FORMAT_NAME = "edgelearn-checkpoint"
FORMAT_VERSION = 1

_MAGIC = FORMAT_NAME.encode("ascii")
_FIELDS = struct.Struct(">IQ")  # version, body length
_DIGEST_SIZE = 16
_HEADER_SIZE = len(_MAGIC) + _FIELDS.size + _DIGEST_SIZE

_EXT_NDARRAY = 1
# Numeric and bool kinds only: object arrays would need pickle, and strings/dates
# have no use in a learner's state.
_ARRAY_KINDS = frozenset("biufc")
_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1
_KEY_TYPES = (str, int, float, bool, type(None), bytes)


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupt, truncated or of an unsupported version.

    ``problems`` lists what was wrong with each file tried (``load_checkpoint``);
    ``missing`` is true when every file tried simply did not exist.
    """

    def __init__(self, message: str, problems: list[str] | None = None,
                 missing: bool = False) -> None:
        super().__init__(message)
        self.problems = list(problems or [])
        self.missing = missing


# ---------------------------------------------------------------- encoding

def _array_ext(arr: np.ndarray, where: str) -> msgpack.ExtType:
    if arr.dtype.kind not in _ARRAY_KINDS:
        raise TypeError(f"{where}: arrays of dtype {arr.dtype} cannot be checkpointed "
                        "(numeric or bool dtypes only)")
    payload = msgpack.packb([arr.dtype.str, list(arr.shape), arr.tobytes(order="C")],
                            use_bin_type=True)
    return msgpack.ExtType(_EXT_NDARRAY, payload)


def _encode(obj: Any, where: str) -> Any:
    # An explicit walk rather than msgpack's `default` hook: it lets us reject
    # what would pack but not unpack (tuple keys, out-of-range ints) before any
    # file is touched, with the path of the offending value in the message.
    if obj is None or isinstance(obj, (bool, str, float)):
        return obj
    if isinstance(obj, int):
        if not _INT_MIN <= obj <= _UINT_MAX:
            raise ValueError(f"{where}: int {obj} does not fit in 64 bits")
        return int(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    if isinstance(obj, np.ndarray):
        return _array_ext(obj, where)
    if isinstance(obj, np.generic):
        if obj.dtype.kind == "c":
            return _array_ext(np.asarray(obj), where)
        if obj.dtype.kind in _ARRAY_KINDS:
            return obj.item()
    if isinstance(obj, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, np.generic) and k.dtype.kind in "biuf":
                k = k.item()
            if not isinstance(k, _KEY_TYPES):
                raise TypeError(f"{where}[{k!r}]: dict keys of type "
                                f"{type(k).__name__} cannot be checkpointed")
            out[k] = _encode(v, f"{where}[{k!r}]")
        return out
    raise TypeError(f"{where}: values of type {type(obj).__name__} cannot be "
                    "checkpointed")


def _digest(fields: bytes, body: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_DIGEST_SIZE)
    h.update(fields)
    h.update(body)
    return h.digest()


def dumps(state: dict) -> bytes:
    """Encode a state dict as checkpoint bytes (envelope + msgpack body).

    Raises ``TypeError`` (or ``ValueError`` for an int beyond 64 bits) naming the
    offending entry, e.g. ``state['opts']``, for anything it cannot encode.

    >>> dumps({"x": {1, 2}})
    Traceback (most recent call last):
    ...
    TypeError: state['x']: values of type set cannot be checkpointed
    """
    if not isinstance(state, dict):
        raise TypeError(f"a checkpoint state must be a dict, not {type(state).__name__}")
    body = msgpack.packb(_encode(state, "state"), use_bin_type=True)
    fields = _FIELDS.pack(FORMAT_VERSION, len(body))
    return _MAGIC + fields + _digest(fields, body) + body


# ---------------------------------------------------------------- decoding

def _decode_ext(code: int, data: bytes) -> Any:
    if code != _EXT_NDARRAY:
        raise CheckpointError(f"corrupt checkpoint: unknown extension type {code}")
    try:
        dtype_str, shape, raw = msgpack.unpackb(data, raw=False, use_list=True)
        dtype = np.dtype(dtype_str)
        shape = tuple(int(s) for s in shape)
    except Exception as exc:
        raise CheckpointError(f"corrupt checkpoint: bad array header ({exc})") from None
    if dtype.kind not in _ARRAY_KINDS or any(s < 0 for s in shape):
        raise CheckpointError(f"corrupt checkpoint: bad array dtype {dtype_str!r} "
                              f"or shape {shape}")
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise CheckpointError(f"corrupt checkpoint: array of shape {shape} and dtype "
                              f"{dtype_str} cannot hold {len(raw)} bytes")
    # frombuffer views the read-only msgpack buffer; copy so the result is ours.
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def loads(data: bytes) -> dict:
    """Decode checkpoint bytes made by :func:`dumps`.

    Raises :class:`CheckpointError` for bad magic, an unsupported version, a
    truncated or oversized file, or a checksum mismatch.

    >>> try:
    ...     loads(b"PK\\x03\\x04 not a checkpoint at all")
    ... except CheckpointError as exc:
    ...     print(exc)
    bad magic: not an edgelearn-checkpoint file
    """
    data = bytes(data)
    n_magic = len(_MAGIC)
    if len(data) < n_magic:
        if _MAGIC.startswith(data):
            raise CheckpointError(f"truncated checkpoint: {len(data)} bytes, "
                                  "shorter than the header")
        raise CheckpointError(f"bad magic: not an {FORMAT_NAME} file")
    if data[:n_magic] != _MAGIC:
        raise CheckpointError(f"bad magic: not an {FORMAT_NAME} file")
    if len(data) < _HEADER_SIZE:
        raise CheckpointError(f"truncated checkpoint: {len(data)} bytes, "
                              f"shorter than the {_HEADER_SIZE}-byte header")
    fields = data[n_magic:n_magic + _FIELDS.size]
    version, length = _FIELDS.unpack(fields)
    if version != FORMAT_VERSION:
        raise CheckpointError(f"unsupported checkpoint format version {version} "
                              f"(this build reads {FORMAT_VERSION})")
    digest = data[n_magic + _FIELDS.size:_HEADER_SIZE]
    body = data[_HEADER_SIZE:]
    if len(body) < length:
        raise CheckpointError(f"truncated checkpoint: body is {len(body)} bytes, "
                              f"header says {length}")
    if len(body) > length:
        raise CheckpointError(f"corrupt checkpoint: {len(body) - length} bytes "
                              "after the end of the body")
    if _digest(fields, body) != digest:
        raise CheckpointError("corrupt checkpoint: checksum mismatch")
    try:
        state = msgpack.unpackb(body, raw=False, use_list=True,
                                strict_map_key=False, ext_hook=_decode_ext)
    except CheckpointError:
        raise
    except Exception as exc:
        # The checksum matched, so the writer itself produced this: say so.
        raise CheckpointError(f"corrupt checkpoint: body does not decode ({exc})") from None
    if not isinstance(state, dict):
        raise CheckpointError("corrupt checkpoint: body is not a dict")
    return state


# ---------------------------------------------------------------- files

@dataclass
class LoadReport:
    """Which generation :func:`load_checkpoint` used and what was wrong before it.

    ``generation`` is 0 for ``path`` (newest) and 1 for ``path + ".1"``.
    """

    path_used: str
    generation: int
    problems: list[str] = field(default_factory=list)

    @property
    def fell_back(self) -> bool:
        return self.generation > 0


def _older(path: str) -> str:
    return path + ".1"


def _fsync_dir(directory: str) -> None:
    # Makes the renames themselves durable; not possible on every platform.
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _is_valid(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            loads(f.read())
    except (OSError, CheckpointError):
        return False
    return True


def _rotate(path: str, tmp: str) -> None:
    older = _older(path)
    if not os.path.exists(path):
        return
    if not _is_valid(path) and os.path.exists(older):
        # A damaged newest file is no use as a fallback; keep the older one.
        logger.warning("checkpoint %s is unreadable; not rotating it over %s",
                       path, older)
        return
    # Hard-link then rename, so `path` exists at every instant: a crash between
    # the two renames cannot leave a reader with only the older generation.
    # Filesystems without hard links (FAT on SD cards) get a plain rename.
    link = tmp + ".link"  # unique, since mkstemp made `tmp` unique
    try:
        os.link(path, link)
    except OSError:
        os.replace(path, older)
        return
    try:
        os.replace(link, older)
    except BaseException:
        _remove_quietly(link)
        raise


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write ``state`` to ``path`` atomically, keeping the previous file as ``path.1``.

    The bytes go to a temporary file in the same directory, which is flushed and
    fsynced before it replaces ``path``; the directory is fsynced afterwards. If
    anything fails, ``path`` and ``path.1`` are left as they were and the temporary
    file is removed. Encoding errors are raised before any file is touched.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "model.ckpt")
    >>> save_checkpoint(p, {"step": 1}); save_checkpoint(p, {"step": 2})
    >>> sorted(os.listdir(d))
    ['model.ckpt', 'model.ckpt.1']
    >>> load_checkpoint(p)[0], load_checkpoint(p + ".1")[0]
    ({'step': 2}, {'step': 1})
    """
    path = os.fspath(path)
    data = dumps(state)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _rotate(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    _fsync_dir(directory)


def load_checkpoint(path: str | os.PathLike) -> tuple[dict, LoadReport]:
    """Load the newest readable generation of a checkpoint.

    Tries ``path``, then ``path + ".1"``. Returns ``(state, LoadReport)``; falling
    back logs a warning on the ``edgelearn.state`` logger. A missing file is
    reported as missing, not as corruption. Raises :class:`CheckpointError` naming
    both files when neither is readable (``err.missing`` is true if neither exists).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "m.ckpt")
    >>> try:
    ...     load_checkpoint(p)
    ... except CheckpointError as exc:
    ...     print(exc.missing, exc.problems == [f"{p}: missing", f"{p}.1: missing"])
    True True
    """
    path = os.fspath(path)
    problems: list[str] = []
    n_missing = 0
    for generation, candidate in enumerate((path, _older(path))):
        try:
            with open(candidate, "rb") as f:
                data = f.read()
            state = loads(data)
        except FileNotFoundError:
            n_missing += 1
            problems.append(f"{candidate}: missing")
            continue
        except OSError as exc:
            problems.append(f"{candidate}: unreadable ({exc.strerror or exc})")
            continue
        except CheckpointError as exc:
            problems.append(f"{candidate}: {exc}")
            continue
        if generation > 0:
            logger.warning("falling back to older checkpoint %s (%s)",
                           candidate, "; ".join(problems))
        return state, LoadReport(candidate, generation, problems)
    raise CheckpointError("no usable checkpoint: " + "; ".join(problems),
                          problems=problems, missing=n_missing == 2)
