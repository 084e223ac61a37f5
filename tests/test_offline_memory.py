"""The replay command's memory: a log read through a memory map, freed memory kept."""

import platform

import numpy as np

from firmware_bridge.offline.memory import reuse_freed_memory
from firmware_bridge.wire import encode_data
from firmware_bridge.wire.bulk_decode import FastDecoder
from firmware_bridge.wire.logfile import write_log


def test_scanned_log_is_the_files_bytes_and_writable(tmp_path):
    path = tmp_path / "log.msgpack"
    write_log(path, [("sensors/s1/data", float(i), encode_data(float(i), i, {"a": i / 3}, i % 2 == 0))
                     for i in range(50)], created=0.0)
    scanned = FastDecoder().scan_log(path)
    data = path.read_bytes()
    assert scanned.buf.dtype == np.uint8 and scanned.buf.tobytes() == data
    assert scanned.offset.shape[0] == 50 and scanned.stop is None
    # the kernels were compiled for a writable array (np.fromfile's type)
    assert scanned.buf.flags.writeable
    scanned.buf[0] ^= 1  # a private copy of the page: the file stays as it was
    assert path.read_bytes() == data


def test_empty_file_is_not_a_log(tmp_path):
    path = tmp_path / "empty.msgpack"
    path.write_bytes(b"")
    assert FastDecoder().scan_log(path) is None


def test_reuse_freed_memory_takes_where_glibc_is():
    assert reuse_freed_memory() is (platform.libc_ver()[0] == "glibc")
