"""The inbound bounds (:class:`Limits`) and the bounded decoding of a payload with them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Any, Callable

import msgpack

from edgelearn.constraints import Interval, check_params

from .messages import Reject
from .values import show


@dataclass(frozen=True)
class Limits:
    """Hard bounds on inbound messages; every count is fixed before the first message.

    ``max_string_bytes`` bounds every msgpack str, bin and ext and
    ``max_container_len`` every array and map, while decoding (msgpack refuses before
    allocating); ``max_depth`` counts container levels (a data message has 2:
    the message map and ``ch``; a batch 4: the message, ``readings``, a reading and its
    ``ch``). The other bounds apply during validation; ``max_batch_readings`` (readings
    in one batch) can bind only below ``max_container_len``, which the decoder applies
    to ``readings`` first.

    >>> Limits().max_payload_bytes
    4096
    >>> Limits(max_depth=1)
    Traceback (most recent call last):
    ...
    ValueError: The 'max_depth' parameter of Limits must be an int in [2, inf). Got 1.
    """

    max_payload_bytes: int = 4096
    max_channels: int = 64
    max_channel_name_bytes: int = 64
    max_string_bytes: int = 256
    max_container_len: int = 256
    max_depth: int = 4
    max_stream_id_bytes: int = 64
    max_label_bytes: int = 64
    max_request_id_bytes: int = 64
    max_batch_readings: int = 64

    def __post_init__(self) -> None:
        check_params("Limits", {f.name: getattr(self, f.name) for f in fields(self)},
                     self._parameter_constraints)
        for name in ("max_channel_name_bytes", "max_label_bytes", "max_request_id_bytes"):
            if getattr(self, name) > self.max_string_bytes:
                raise ValueError(
                    f"The '{name}' parameter of Limits must be <= max_string_bytes "
                    f"({self.max_string_bytes}), or valid names would fail to decode. "
                    f"Got {getattr(self, name)}."
                )
        if self.max_channels > self.max_container_len:
            raise ValueError(
                "The 'max_channels' parameter of Limits must be <= max_container_len "
                f"({self.max_container_len}). Got {self.max_channels}."
            )


# What each limit may be (edgelearn.constraints); __post_init__ adds the cross-limit
# rules. Set on the class after it is made, so it is no dataclass field.
Limits._parameter_constraints = {
    "max_payload_bytes": Interval(int, 1, None),
    "max_channels": Interval(int, 1, None),
    "max_channel_name_bytes": Interval(int, 1, None),
    "max_string_bytes": Interval(int, 1, None),
    "max_container_len": Interval(int, 1, None),
    "max_depth": Interval(int, 2, None),
    "max_stream_id_bytes": Interval(int, 1, None),
    "max_label_bytes": Interval(int, 1, None),
    "max_request_id_bytes": Interval(int, 1, None),
    "max_batch_readings": Interval(int, 1, None),
}


DEFAULT_LIMITS = Limits()


def depth_exceeds(obj: Any, max_depth: int) -> bool:
    # Iterative, so no recursion limit; visits at most one node per payload byte.
    if not isinstance(obj, (list, dict)):
        return False
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


@functools.lru_cache(maxsize=8)
def bounded_unpackb(limits: Limits) -> Callable[[bytes], Any]:
    """``msgpack.unpackb`` bound to ``limits``' decoding bounds (msgpack refuses an
    over-long str, bin, ext, array or map before allocating it); one per Limits."""
    return functools.partial(
        msgpack.unpackb,
        raw=False,
        use_list=True,
        strict_map_key=False,
        max_str_len=limits.max_string_bytes,
        max_bin_len=limits.max_string_bytes,
        max_ext_len=limits.max_string_bytes,
        max_array_len=limits.max_container_len,
        max_map_len=limits.max_container_len,
    )


def decode_payload(payload: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Unpack one msgpack object within ``limits``, or return a :class:`Reject`.

    Never raises. Arrays decode as lists, str as str, bin as bytes; map keys may be of
    any scalar type (validation judges them).

    >>> decode_payload(b"\\x81\\xa1a\\x01")
    {'a': 1}
    >>> decode_payload(b"\\x91" * 10 + b"\\x01").reason
    'too_deep'
    >>> decode_payload(b"\\x81\\xa1a").detail
    'payload is not valid msgpack (truncated)'
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        return Reject("not_msgpack", f"payload must be bytes, got {type(payload).__name__}")
    size = payload.nbytes if isinstance(payload, memoryview) else len(payload)
    if size > limits.max_payload_bytes:
        return Reject(
            "too_large", f"payload is {size} bytes, the limit is {limits.max_payload_bytes}"
        )
    try:
        obj = bounded_unpackb(limits)(payload)
    except (msgpack.StackError, RecursionError):
        return Reject("too_deep", f"containers nest deeper than {limits.max_depth} levels")
    except msgpack.ExtraData:
        return Reject("not_msgpack", "payload has bytes after its first msgpack object")
    except UnicodeDecodeError:
        return Reject("not_msgpack", "payload has a str that is not valid UTF-8")
    except msgpack.FormatError:
        return Reject(
            "not_msgpack", "payload is not valid msgpack (byte 0xc1 or another reserved code)"
        )
    except ValueError as exc:
        text = str(exc)
        if "exceeds max_" in text:
            # msgpack says e.g. "300 exceeds max_array_len(256)"; our names are clearer.
            count, _, limit_name = text.partition(" exceeds ")
            kind = limit_name.split("(")[0].removeprefix("max_").removesuffix("_len")
            bound = (
                "max_string_bytes" if kind in ("str", "bin", "ext") else "max_container_len"
            )
            unit = "bytes" if kind in ("str", "bin", "ext") else "entries"
            article = "an" if kind in ("array", "ext") else "a"
            return Reject(
                "too_long",
                f"{article} {kind} of {count} {unit} exceeds {bound} {getattr(limits, bound)}",
            )
        if "incomplete" in text:
            return Reject("not_msgpack", "payload is not valid msgpack (truncated)")
        return Reject("not_msgpack", f"payload is not valid msgpack ({show(text, 60)})")
    except TypeError:
        return Reject("not_msgpack", "payload has an array or map as a map key")
    except Exception as exc:  # the decoder must never raise; say what happened
        return Reject("not_msgpack", f"payload could not be decoded ({type(exc).__name__})")
    if depth_exceeds(obj, limits.max_depth):
        return Reject("too_deep", f"containers nest deeper than {limits.max_depth} levels")
    return obj
