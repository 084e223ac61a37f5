"""``edgelearn warmup`` fills the Numba cache the gateway then loads from.

Each check runs fresh processes against a cache folder of its own
(``NUMBA_CACHE_DIR``), as the systemd unit does: the first warm-up compiles,
a second compiles nothing, and the gateway's pipeline replaying a real sensor
log in a third process finds every kernel it calls in the cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import edgelearn

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cache: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result


def _warmup(cache: Path, *extra: str) -> list[dict]:
    cli = [sys.executable, "-m", "firmware_bridge.cli", "warmup", "--json", *extra]
    return json.loads(_run(cli, cache).stdout)


# The gateway's pipeline on the bundled office log (not the warm-up's synthetic
# stream), counting the kernels it had to compile.
REPLAY = textwrap.dedent("""
    import json, sys
    from firmware_bridge.cli import DEMO_LOG
    from firmware_bridge.service.config import load_config
    from firmware_bridge.wire.logfile import iter_logs
    from firmware_bridge.service.warmup import cache_counts

    config, errors = load_config(sys.argv[1] if len(sys.argv) > 1 else None)
    assert not errors, errors
    pipeline = config.make_pipeline()
    n = 0
    for record in iter_logs([str(DEMO_LOG)]):
        pipeline.handle(record.topic, record.payload, 0.0)
        n += 1
    compiled, loaded = cache_counts()
    print(json.dumps({"messages": n, "compiled": compiled, "loaded": loaded,
                      "predictions": pipeline.counters()["predictions"]}))
""")


# The worker's grouped paths on the same log: queued single readings in one
# handle_many (chunks as the worker takes them), then the log's readings as batch
# messages, one at a time and queued.
GROUPED = textwrap.dedent("""
    import json, sys
    import msgpack
    from firmware_bridge.cli import DEMO_LOG
    from firmware_bridge.service.config import load_config
    from firmware_bridge.wire import encode_batch
    from firmware_bridge.wire.logfile import iter_logs
    from firmware_bridge.service.warmup import cache_counts

    config, errors = load_config(sys.argv[1] if len(sys.argv) > 1 else None)
    assert not errors, errors
    records = [(r.topic, r.payload, 0.0) for r in iter_logs([str(DEMO_LOG)])]
    pipeline = config.make_pipeline()
    for start in range(0, len(records), 100):
        pipeline.handle_many(records[start:start + 100])
    batched = config.make_pipeline()
    readings = {}
    for topic, payload, _ in records:
        body = msgpack.unpackb(payload)
        if "ch" in body:
            readings.setdefault(topic, []).append((body["ts"], body["seq"], body["ch"], body.get("y")))
    batches = [(topic, encode_batch(rows[i:i + 24]), 0.0)
               for topic, rows in readings.items() for i in range(0, len(rows), 24)]
    for item in batches[:len(batches) // 2]:
        batched.handle(*item)
    batched.handle_many(batches[len(batches) // 2:])
    compiled, loaded = cache_counts()
    counts = [pipeline.counters(), batched.counters()]
    print(json.dumps({"messages": len(records), "batches": counts[1]["batches"],
                      "compiled": compiled, "loaded": loaded,
                      "predictions": sum(c["predictions"] for c in counts),
                      "rejected": sum(c["rejected"] for c in counts)}))
""")


def test_warmup_fills_the_cache_the_gateway_then_loads_from(tmp_path):
    cache = tmp_path / "numba"
    (first,) = _warmup(cache)
    assert first["kind"] == edgelearn.DEFAULT_KIND
    assert first["compiled"] > 0 and first["loaded"] == 0
    assert [str(cache)] == [str(Path(d).parent) for d in first["cache_dirs"]]
    assert list(cache.rglob("*.nbi")), "no Numba index files in the cache folder"

    (second,) = _warmup(cache)
    assert second["compiled"] == 0, second
    assert second["loaded"] > 0

    replay = json.loads(_run([sys.executable, "-c", REPLAY], cache).stdout)
    assert replay["predictions"] > 1000
    assert replay["compiled"] == 0, f"the gateway compiled kernels the warm-up left out: {replay}"
    assert replay["loaded"] > 0
    # A burst (queued readings, batch messages) runs the learner's row loops: warmed too,
    # or the worker compiles them while systemd's watchdog waits.
    grouped = json.loads(_run([sys.executable, "-c", GROUPED], cache).stdout)
    assert grouped["predictions"] > 2 * 1000 and grouped["batches"] > 10, grouped
    assert grouped["rejected"] == 0, grouped
    assert grouped["compiled"] == 0, f"the worker's grouped paths compiled kernels the warm-up left out: {grouped}"


def test_without_warmup_the_gateway_compiles(tmp_path):
    # The check above can fail: on an empty cache the same replay compiles.
    replay = json.loads(_run([sys.executable, "-c", REPLAY], tmp_path / "empty").stdout)
    assert replay["compiled"] > 0 and replay["loaded"] == 0
    # And a cache that holds every kernel of the one-by-one path still lacks the
    # grouped paths' row loops (what a warm-up of that path alone left out).
    grouped = json.loads(_run([sys.executable, "-c", GROUPED], tmp_path / "empty").stdout)
    assert grouped["compiled"] > 0, grouped


def test_warmup_takes_the_config_learner(tmp_path):
    config = tmp_path / "gateway.toml"
    config.write_text('[learner]\nkind = "pa"\n[learner.params]\ncapacity = 16\n')
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    result = subprocess.run(
        [sys.executable, "-m", "firmware_bridge.cli", "warmup", "--config", str(config)],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("warmup pa: "), result.stdout
    assert "kernels compiled" in result.stdout
    # Its synthetic stream's restart counts seq on, as a sensor does: no warning of its own.
    assert "seq_restart" not in result.stderr, result.stderr


def test_warmup_reports_a_bad_config(tmp_path):
    config = tmp_path / "gateway.toml"
    config.write_text('[learner]\nkind = "svm"\n')
    result = subprocess.run(
        [sys.executable, "-m", "firmware_bridge.cli", "warmup", "--config", str(config)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert result.returncode == 2
    assert "The 'kind' parameter of [learner] must be one of" in result.stderr and "Got 'svm'" in result.stderr


def test_warmup_stream_teaches_each_task_its_own_kind_of_label():
    # A regressor warmed on 0/1 (the binary labels) learned a line through two values.
    from firmware_bridge.service.warmup import synthetic_stream

    regression = [y for _, _, y in synthetic_stream("regression", 2, 300)]
    assert all(isinstance(y, float) for y in regression)
    assert len({round(y, 6) for y in regression}) > 100
    assert {type(y) for _, _, y in synthetic_stream("binary", 2, 30)} == {bool}
    assert {y for _, _, y in synthetic_stream("multiclass", 3, 300)} == {0, 1, 2}
    assert all(isinstance(y, dict) for _, _, y in synthetic_stream("multilabel", 2, 30))
