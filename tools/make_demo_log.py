"""Build the bundled demo: the occupancy data as a recorded gateway log.

Every row of the bundled occupancy data (``edgelearn.datasets.load("occupancy")``)
becomes the data message an office sensor node would have published on
``sensors/office-1/data``, with the ground truth in ``"y"`` (a replay uses it as the labeller's answer, only
when the learner asks).  The sensors fail the way real ones do: each one
drops out now and then for a few minutes to a few hours and comes back, a
reading is sometimes lost, and the CO2 sensor's firmware now and then sends
NaN.  Seeded: the same command writes the same bytes.

    python tools/make_demo_log.py            # writes edgelearn/data/occupancy-demo.msgpack
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import random
from pathlib import Path

from edgelearn import datasets
from firmware_bridge.wire import Topics, encode_data
from firmware_bridge.wire.logfile import write_log

CHANNELS = {
    "Temperature": "temperature",
    "Humidity": "humidity",
    "Light": "light",
    "CO2": "co2",
    "HumidityRatio": "humidity_ratio",
}
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "edgelearn" / "data" / "occupancy-demo.msgpack"


def failing_sensors(n_messages: int, names: list[str], rng: random.Random):
    """Yield, per message, the set of channels that report.  Each sensor goes
    offline with probability 1/1500 per message, for 30 to 600 messages
    (one message a minute: half an hour to ten hours), and loses a single
    reading with probability 1/100."""
    offline_until = {name: -1 for name in names}
    for i in range(n_messages):
        up = set()
        for name in names:
            if i < offline_until[name]:
                continue
            if rng.random() < 1 / 1500:
                offline_until[name] = i + rng.randint(30, 600)
                continue
            if rng.random() >= 1 / 100:
                up.add(name)
        yield up


def build(out: Path, seed: int = 7, stream: str = "office-1") -> dict:
    data = datasets.load("occupancy")
    rng = random.Random(seed)
    topic = Topics().data(stream)
    names = [CHANNELS[f] for f in data.feature_names]
    records = []
    outages = 0
    for i, (row, up) in enumerate(zip(data.X, failing_sensors(len(data.X), names, rng))):
        ts = dt.datetime.fromisoformat(str(data.meta["Date"][i])).replace(tzinfo=dt.timezone.utc).timestamp()
        channels = {name: float(v) for name, v in zip(names, row) if name in up and math.isfinite(v)}
        outages += len(names) - len(channels)
        if "co2" in channels and rng.random() < 1 / 500:
            channels["co2"] = float("nan")
        payload = encode_data(ts, i, channels, y=int(data.y[i]))
        records.append((topic, ts + rng.uniform(0.005, 0.05), payload))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_log(out, records, created=records[0][1])
    return {"messages": len(records), "missing_readings": outages, "bytes": out.stat().st_size}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="Seeded; see the module docstring.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where to write the log (default: {DEFAULT_OUT})")
    parser.add_argument("--seed", type=int, default=7, help="seed of the sensor failures (default: 7)")
    args = parser.parse_args(argv)
    summary = build(args.out, args.seed)
    print(f"wrote {args.out}: {summary['messages']} messages, {summary['missing_readings']} readings missing, {summary['bytes']} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
