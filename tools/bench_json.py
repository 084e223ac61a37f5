"""CPU time per message of a Zigbee2MQTT-style JSON object beside the same reading in
msgpack, through the gateway's pipeline, in one process (a ratio, so machines compare).

    python tools/bench_json.py [--count 20000]

Both streams carry three numeric channels and the label; JSON goes the full decoding
path (decode, flatten, name checks), msgpack the fast path.
"""

from __future__ import annotations

import argparse
import json
import time

from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import JsonFields, Topics, encode_data


def _json(i: int) -> bytes:
    return json.dumps({"temperature": 20 + i % 7 / 10, "humidity": 48 + i % 5,
                       "illuminance_lux": i % 300, "occupancy": i % 3 == 0, "battery": 97,
                       "linkquality": 120}).encode()


def _msgpack(i: int) -> bytes:
    return encode_data(float(i), i, {"temperature": 20 + i % 7 / 10, "humidity": float(48 + i % 5),
                                     "illuminance_lux": float(i % 300)}, y=i % 3 == 0)


def cpu_us_per_message(make, count: int) -> float:
    pipeline = Pipeline("paacds", {"capacity": 16}, topics=Topics(data_template="zigbee2mqtt/{stream}"),
                        label_policy="from_data",
                        json_fields=JsonFields(label_field="occupancy",
                                               ignore=("linkquality", "battery")))
    payloads = [make(i) for i in range(count)]
    start = time.process_time()
    for i, payload in enumerate(payloads):
        pipeline.handle("zigbee2mqtt/hall", payload, float(i))
    return (time.process_time() - start) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="messages per run (default 20,000)")
    args = parser.parse_args()
    cpu_us_per_message(_msgpack, 1000)  # compile the kernels first
    for run in (1, 2):
        binary = cpu_us_per_message(_msgpack, args.count)
        text = cpu_us_per_message(_json, args.count)
        print(f"run {run}: msgpack {binary:.1f} us/message, JSON {text:.1f} us/message, "
              f"JSON/msgpack {text / binary:.2f}")


if __name__ == "__main__":
    main()
