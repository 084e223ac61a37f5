"""Issue 27: the bundled demo log is in the checksummed format (any flipped byte fails
its replay), and a format-1 log's undecodable records are counted and reported by
``edgelearn replay``, never silent. Byte flips made on copies; the real command."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

from firmware_bridge.cli.common import DEMO_LOG
from firmware_bridge.wire.logfile import read_header, read_log

from test_gateway_broker import ROOT


def _replay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "firmware_bridge", "replay", "--quiet", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_demo_log_is_checksummed_and_a_flipped_byte_fails_its_replay(tmp_path):
    assert read_header(DEMO_LOG)["version"] == 2
    whole = _replay("--learner", "paacds", "--json", str(DEMO_LOG))
    assert whole.returncode == 0, whole.stderr
    assert json.loads(whole.stdout)["messages"] == 20_560
    data = DEMO_LOG.read_bytes()
    rng = random.Random(27)
    for _ in range(3):
        flipped = bytearray(data)
        offset = rng.randrange(100, len(data))
        flipped[offset] ^= 1 << rng.randrange(8)
        copy = tmp_path / "demo.msgpack"
        copy.write_bytes(bytes(flipped))
        result = _replay("--learner", "paacds", str(copy))
        assert result.returncode == 1, (offset, result.stdout, result.stderr)
        assert "corrupt" in result.stdout + result.stderr, (offset, result.stdout)


def test_a_format_1_logs_undecodable_records_are_counted_and_reported(tmp_path):
    source = ROOT / "tests" / "data" / "log-v1.msgpack"
    assert read_header(source)["version"] == 1
    records = list(read_log(source))
    data = bytearray(source.read_bytes())
    # A flip in one record's topic ("sensors" -> "sunsors") and in another's payload
    # (its first byte, a map header, becomes 0xc1, which msgpack never uses): each
    # record keeps its length, so the file still reads as format 1 to the end.
    topic_at = data.index(records[3].topic.encode(), records[3].offset)
    data[topic_at + 1] ^= ord("e") ^ ord("u")
    payload_at = data.index(records[7].payload, records[7].offset)
    data[payload_at] = 0xC1
    damaged = tmp_path / "v1.msgpack"
    damaged.write_bytes(bytes(data))
    result = _replay("--json", str(damaged))
    assert result.returncode == 0, result.stderr
    assert (f"is a format-1 log (no checksums): 2 of {len(records)} records undecodable "
            "(not_msgpack 1, unknown_topic 1;") in result.stderr
    summary = json.loads(result.stdout)
    assert summary["unchecked_logs"] == [{"path": str(damaged), "records": len(records),
                                          "undecodable": {"not_msgpack": 1, "unknown_topic": 1}}]
    assert summary["rejects"]["not_msgpack"] == 1 and summary["rejects"]["unknown_topic"] == 1
    # The undamaged log: nothing undecodable, and still the warning that it cannot tell.
    clean = tmp_path / "clean.msgpack"
    shutil.copy(source, clean)
    result = _replay("--json", str(clean))
    assert f"0 of {len(records)} records undecodable" in result.stderr
    assert json.loads(result.stdout)["unchecked_logs"][0]["undecodable"] == {}
