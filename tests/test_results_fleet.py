"""tools/results_fleet.py runs (quick) and its page holds what it measured."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_results_fleet_quick(tmp_path):
    out = tmp_path / "results-fleet.md"
    result = subprocess.run([sys.executable, "tools/results_fleet.py", "--quick", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in out.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] in ("1", "2"):
            rows[(cells[0], cells[1])] = float(cells[2])
    assert len(rows) == 6
    # the new stream's first 100 readings: the group model's start beats a lone start
    for k in ("1", "2"):
        assert rows[(k, "from the group model")] > rows[(k, "alone")]
    assert "bytes per contribution" in out.read_text()
