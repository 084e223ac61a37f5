"""tools/bench_gateway.py end to end on tiny inputs: it starts its own mosquitto and
gateways, feeds them with tools/load_mqtt.py and writes the whole page. The figures
of so short a run mean nothing; what is checked is that every run accounts for every
reading (each predicted exactly once) and that every section of the page is written."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.broker
def test_the_benchmark_writes_its_whole_page_on_tiny_inputs(tmp_path):
    out = tmp_path / "bench.md"
    args = ["--count", "300", "--warmup", "200", "--batch-readings", "1024", "--repeat", "1",
            "--cost-repeat", "2", "--rate", "1000"]
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_gateway.py"), *args,
                             "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(result.stdout)
    runs = [*results["throughput"], *results["batches"], *results["one_single"],
            *results["two_single"], *results["one_batches"], *results["two_batches"]]
    assert all(r["missing"] == 0 and r["predicted_more"] == 0 for r in runs)
    assert all(r["predicted_once"] == r["readings"] for r in runs)
    assert [r["readings"] for r in results["one_single"] + results["two_single"]] == [600, 600]
    # Compact batches: as many readings per message as the default limits allow.
    assert results["batches"][0]["readings_per_message"] >= 60
    assert results["batches"][0]["payload_bytes"]["max"] <= 4096
    # The cost per message: --cost-repeat runs of the gateway and of the relay.
    assert len(results["throughput"]) == len(results["relay"]) == 2
    assert all(r["outputs"] == 300 for r in results["relay"])
    assert results["latency"][0]["missing"] == 0
    page = out.read_text()
    assert "Command: `python tools/bench_gateway.py " + " ".join(args) + "`" in page
    for heading in ("## Summary", "## The pipeline alone", "## Cost per message",
                    "## Batched readings", "## Latency", "## One instance against two"):
        assert heading in page
    # The default learner unless --kind says otherwise: the gateway's and the pipeline's.
    from edgelearn import DEFAULT_KIND

    assert results["pipeline_alone"]["kind"] == DEFAULT_KIND
    assert f"`{DEFAULT_KIND}` (the default learner) with 64 channel slots" in page
    counters = dict(re.findall(r"(\w+) (\d+)", page.split("Gateway counters")[1]))
    assert counters["predictions"] == counters["data"] and counters["rejected"] == "0"


def test_a_process_under_the_cpu_clocks_tick_has_no_per_core_figure():
    # /proc counts CPU time in clock ticks: a tiny run's gateway can show 0 µs per
    # reading, which must not divide by zero when the page is written.
    from results_pages import load_tool

    bench = load_tool("bench_gateway")
    assert bench._per_core(0.0).startswith("—")
    assert bench._per_core(4.0) == "250,000"


@pytest.mark.broker
def test_the_relay_ratio_alternates_gateway_and_relay_runs(tmp_path):
    # The ratio alone, the gateway and the relay alternated (a change of load between
    # two phases would move it), as bench_gateway.py's cost per message runs them.
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_relay_ratio.py"),
                             "--count", "300", "--warmup", "200", "--repeat", "2",
                             "--set", "checkpoints.journal=false"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = [line.split()[2].rstrip(":") for line in result.stdout.splitlines() if line.startswith("run ")]
    assert runs == ["gateway", "relay", "gateway", "relay"]
    last = result.stdout.splitlines()[-1]
    assert "checkpoints.journal=false" in last
    ratio = float(re.search(r"ratio gateway/relay (\d+\.\d+)", last).group(1))
    assert 0.5 < ratio < 20  # a CPU ratio, not the run's figures (they mean nothing this short)


@pytest.mark.broker
def test_the_relay_ratio_versus_alternates_two_gateways_and_the_relay(tmp_path):
    # --versus: what some settings cost, the two gateways alternated with the relay.
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_relay_ratio.py"),
                             "--count", "300", "--warmup", "200", "--repeat", "2",
                             "--versus", "checkpoints.journal=false"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = [line.split(":")[0].split(maxsplit=2)[2] for line in result.stdout.splitlines()
            if line.startswith("run ")]
    assert runs == ["gateway A", "gateway B", "relay", "gateway A", "gateway B", "relay"]
    last = result.stdout.splitlines()[-1]
    assert "B: A with checkpoints.journal=false" in last
    ratio = float(re.search(r"ratio B/A (\d+\.\d+)", last).group(1))
    assert 0.1 < ratio < 10
