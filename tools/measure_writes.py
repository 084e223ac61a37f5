"""Bytes the gateway writes to its state directory per hour (SD card wear).

Runs the gateway's own objects (configs/gateway.toml as shipped, pipeline, checkpoint store,
label journal, housekeeping) in this process on a simulated clock, with no broker:
``--streams`` streams sending ``--rate`` messages a second each (five channels, like
the occupancy demo), every label request answered at once. It counts what the
gateway writes: checkpoint bytes, journal bytes and journal fsyncs (each of which
costs a flash card at least one block write, 4 KiB counted here), the label request
log's bytes and fsyncs (pending requests kept across a crash), and prints them per
hour of stream time. Writes go to a temporary directory (or --state-dir).

    python tools/measure_writes.py                       # defaults: 4 streams, 1 msg/s
    python tools/measure_writes.py --streams 32 --rate 1 --hours 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile

import msgpack

# The repository without "..": edgelearn/kernels/_jit.py digests the kernels' folder by
# its path as imported, so a "tools/.." path dropped every other process's numba cache.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from firmware_bridge.service.config import load_config  # noqa: E402
from firmware_bridge.service.gateway import Gateway  # noqa: E402
from firmware_bridge.wire import encode_data, encode_label  # noqa: E402
from firmware_bridge.service.systemd import SystemdNotifier  # noqa: E402

_BLOCK = 4096
_SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs",
                        "gateway.toml")


class SimulatedClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def measure(streams: int, rate: float, hours: float, state_dir: str,
            fsync_seconds: float | None = None) -> dict:
    # The shipped configuration (its defaults, and the learner parameters it sets).
    overrides = {"checkpoints.directory": state_dir}
    if fsync_seconds is not None:
        overrides["checkpoints.journal_fsync_seconds"] = fsync_seconds
    config, errors = load_config(_SHIPPED, overrides)
    if errors:
        raise SystemExit("\n".join(errors))
    clock = SimulatedClock()
    gateway = Gateway(config, notifier=SystemdNotifier({}), clock=clock)
    handle = gateway.pipeline.handle
    names = [f"room-{i}" for i in range(streams)]
    step = 1.0 / rate
    seq = 0
    end = hours * 3600.0
    next_housekeeping = 0.0
    while clock.now < end:
        for name in names:
            t = seq * step
            light = 300.0 * (1 + math.sin(t / 3600.0 + hash(name) % 7))
            channels = {"temp": 21.0 + math.sin(t / 900.0), "hum": 40.0 + (seq % 17) / 4,
                        "light": light, "co2": 500.0 + (seq % 97) * 3.0, "hr": 0.004}
            for out in handle(f"sensors/{name}/data", encode_data(t, seq, channels), clock.now):
                if out.topic.endswith("/label_request"):
                    req = msgpack.unpackb(out.payload)["req"]
                    handle(f"edgelearn/{name}/label", encode_label(req, light > 300.0), clock.now)
        seq += 1
        clock.now += step
        if clock.now >= next_housekeeping:
            gateway._housekeeping(clock.now)  # checkpoints when due, journal fsync
            next_housekeeping = clock.now + 0.25
    counters = gateway.registry.collect()
    journal_bytes = counters["journal_bytes"]
    syncs = counters["journal_syncs"]
    checkpoint_bytes = counters["checkpoint_bytes"]
    request_bytes, request_syncs = counters["request_log_bytes"], counters["request_log_syncs"]
    per_hour = 1.0 / hours
    return {
        "streams": streams,
        "rate_per_stream": rate,
        "hours_simulated": hours,
        "messages": counters["data"],
        "labels_learned": counters["learned"],
        "checkpoints_written": counters["checkpoints_written"],
        "checkpoint_bytes_per_hour": round(checkpoint_bytes * per_hour),
        "journal_records_per_hour": round(counters["journal_records"] * per_hour),
        "journal_bytes_per_hour": round(journal_bytes * per_hour),
        "journal_fsyncs_per_hour": round(syncs * per_hour),
        "fsync_blocks_bytes_per_hour": round(syncs * _BLOCK * per_hour),
        "label_requests_per_hour": round(counters["label_requests"] * per_hour),
        "request_log_bytes_per_hour": round(request_bytes * per_hour),
        "request_log_fsyncs_per_hour": round(request_syncs * per_hour),
        "total_bytes_per_hour": round((checkpoint_bytes + journal_bytes + syncs * _BLOCK
                                       + request_bytes + request_syncs * _BLOCK) * per_hour),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=4, help="streams (default 4)")
    parser.add_argument("--rate", type=float, default=1.0,
                        help="messages a second per stream (default 1)")
    parser.add_argument("--hours", type=float, default=1.0,
                        help="hours of stream time to simulate (default 1)")
    parser.add_argument("--fsync-seconds", type=float,
                        help="[checkpoints] journal_fsync_seconds (default: as shipped)")
    parser.add_argument("--state-dir", help="where to write (default: a temporary directory)")
    args = parser.parse_args(argv)
    if args.state_dir:
        print(json.dumps(measure(args.streams, args.rate, args.hours, args.state_dir,
                                      args.fsync_seconds), indent=1))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(measure(args.streams, args.rate, args.hours, tmp, args.fsync_seconds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
