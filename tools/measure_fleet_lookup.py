"""What the fleet adds to the gateway's per-message path: the sink-topic lookup each inbound
message goes through, with [fleet] off (a dict's) and on (wildcard filters), against
Pipeline.handle's cost per message, in this process.

    .venv/bin/python tools/measure_fleet_lookup.py
"""
import timeit
from firmware_bridge.service.config import load_config
from firmware_bridge.service.gateway import _sink_topics
from firmware_bridge.wire import encode_data
config, _ = load_config(None, {"checkpoints.directory": ""})
p = config.make_pipeline()
msgs = [encode_data(float(i), i, {"t": float(i % 7), "h": float(i % 5), "c": 1.0}, y=i % 3 == 0) for i in range(20000)]
for i, m in enumerate(msgs[:2000]):
    p.handle("sensors/s1/data", m, 0.0)
it = iter(msgs[2000:])
n = 15000
handle = min(timeit.repeat(lambda: p.handle("sensors/s1/data", next(it), 0.0), number=n // 3, repeat=3)) / (n // 3) * 1e6
off = _sink_topics({"homeassistant/status": 1})
on = _sink_topics({"homeassistant/status": 1, "edgelearn/fleet/default/+": 2})
t = "sensors/s1/data"
c_off = min(timeit.repeat(lambda: t in off, number=200000, repeat=5)) / 200000 * 1e6
c_on = min(timeit.repeat(lambda: t in on, number=200000, repeat=5)) / 200000 * 1e6
print(f"Pipeline.handle {handle:.1f} us/message; sink-topic lookup: fleet off {c_off:.2f} us, fleet on {c_on:.2f} us "
      f"(+{c_on - c_off:.2f} us, {100 * (c_on - c_off) / handle:.1f}% of handle)")
