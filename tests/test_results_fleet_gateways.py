"""tools/results_fleet_gateways.py at CI size (--quick: two gateway processes over a
real mosquitto, fleet on, then isolated): its page holds what it measured."""

import subprocess
import sys
from pathlib import Path

from brokers import installed
from results_pages import cells, row, sections

ROOT = Path(__file__).resolve().parents[1]


def test_results_fleet_gateways_quick(tmp_path):
    installed("mosquitto", "mosquitto", "the fleet results")
    out = tmp_path / "results-fleet-gateways.md"
    result = subprocess.run([sys.executable, "tools/results_fleet_gateways.py", "--quick", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    page = sections(out.read_text())
    newcomer = page["A new stream joining the fleet"]
    rows = [line for line in newcomer.splitlines() if line.startswith("| k = 2 |")]
    first_100 = {cells(line)[0]: float(cells(line)[1]) for line in rows}
    assert set(first_100) == {"from the group model", "alone", "trained for 400"}
    # the group model's start beats a lone start over the new stream's first 100 readings
    assert first_100["from the group model"] > first_100["alone"]
    wire = page["What crosses the broker, and what the fleet costs a gateway"]
    shared, isolated = cells(row(wire, "k = 2")), cells(row(wire, "k = 2, isolated"))
    assert int(shared[0]) > 0 and int(shared[1]) > 0 and int(shared[3]) >= 2  # contributions and totals
    assert isolated[:2] == ["0", "0"] and isolated[3:5] == ["0", "0"]
    assert "fleet on / off at k = 2" in wire
    # each run's prediction lag (median / p99 / largest, ms) is on the page, and a stall is named
    lag = cells(row(wire, "k = 2"))[-1].split(" / ")
    assert len(lag) == 3 and all(float(v) >= 0 for v in lag) and float(lag[0]) <= float(lag[2])
    assert "Prediction lag over 1 s" in wire
