"""The framing of the gateway's append-only files (the label journal and the request
log): each record is a 4-byte marker, the payload's length and CRC-32 (little
endian), then the payload, so a torn or damaged tail is found and reported, never
read as data. Written once here; each file names its own markers and payloads."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

HEADER = struct.Struct("<4sII")


def frame(marker: bytes, payload: bytes) -> bytes:
    """One record: ``marker`` (4 bytes), then ``payload`` with its length and CRC-32."""
    return HEADER.pack(marker, len(payload), zlib.crc32(payload)) + payload


def iter_records(data: bytes, markers: tuple[bytes, ...], what: str
                 ) -> Iterator[tuple[int, bytes, bytes] | str]:
    """``(offset, marker, payload)`` of each whole record of ``data`` in order; at the
    first torn, foreign or damaged record, a line saying what and where (``what``
    names the file's records: "a journal record"), and no more."""
    offset, end = 0, len(data)
    while offset < end:
        torn = f"byte {offset}: a torn record (a write cut short), {end - offset} bytes"
        if end - offset < HEADER.size:
            yield torn
            return
        marker, length, crc = HEADER.unpack_from(data, offset)
        if marker not in markers:
            yield f"byte {offset}: not {what} (no record marker)"
            return
        start = offset + HEADER.size
        if start + length > end:
            yield torn
            return
        payload = data[start:start + length]
        if zlib.crc32(payload) != crc:
            yield f"byte {offset}: checksum mismatch (a damaged record)"
            return
        yield offset, marker, payload
        offset = start + length
