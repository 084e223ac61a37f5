"""The memory figures the service ships with follow the measurement.

``docs/bench-memory.md`` (written by ``tools/bench_memory.py``) measures the
gateway's peak RSS; the systemd unit's ``MemoryHigh``/``MemoryMax`` must sit
above it with the margin the page states, and ``configs/gateway.toml`` must
quote the measured figure rather than a guess.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "bench-memory.md"
UNIT = ROOT / "configs" / "edgelearn-gateway.service"
CONFIG = ROOT / "configs" / "gateway.toml"

UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def measured_peak_mib() -> float:
    text = PAGE.read_text()
    assert "Command: `python tools/bench_memory.py" in text, "the page must name its command"
    (peak,) = re.findall(r"`peak_mib: ([0-9.]+)`", text)
    rows = [float(m) for m in re.findall(r"^\|(?:[^|]*\|){7} ([0-9.]+) \|", text, re.M)]
    assert len(rows) >= 4, "the page must have the 1- and 100-stream rows, cold and warm"
    assert float(peak) == max(rows)
    return float(peak)


def unit_limit_mib(name: str) -> float:
    values = re.findall(rf"^{name}=(\d+)([KMG])$", UNIT.read_text(), re.M)
    assert len(values) == 1, f"{UNIT.name} must set {name} once, in K, M or G"
    number, unit = values[0]
    return int(number) * UNITS[unit] / 2**20


def test_the_units_limits_sit_above_the_measured_peak_with_the_stated_margin():
    peak = measured_peak_mib()
    high, hard = unit_limit_mib("MemoryHigh"), unit_limit_mib("MemoryMax")
    assert high >= 1.25 * peak, f"MemoryHigh={high:.0f}M is under 1.25 x the measured peak {peak} MiB"
    assert hard >= 1.5 * peak, f"MemoryMax={hard:.0f}M is under 1.5 x the measured peak {peak} MiB"
    assert hard > high


def test_the_config_quotes_the_measured_figure():
    peak = measured_peak_mib()
    text = CONFIG.read_text()
    assert "docs/bench-memory.md" in text
    quoted = [float(x) for x in re.findall(r"peak RSS of ([0-9.]+) MiB", text)]
    assert quoted == [round(peak)], f"gateway.toml quotes {quoted}, the page measured {peak} MiB"
    assert "well under 100 MiB" not in text
