"""tools/bench_startup.py measures what it says: every command it times runs (a
failing one stops it), and a gateway built for one kind has imported that kind's
learner module and not the other's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_startup_page_times_each_command_and_lists_each_kinds_imports(tmp_path):
    out = tmp_path / "startup.md"
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_startup.py"),
                             "--repeat", "1", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    rows = dict(re.findall(r"^\| (.+?) \| `.+?` \| ([0-9.]+) \|$", page, re.M))
    assert len(rows) == 5, rows
    assert all(0 < float(v) < 60 for v in rows.values()), rows
    kinds = dict(re.findall(r"^\* `(\w+)`: (.+)$", page, re.M))
    assert "`edgelearn.learners.arow`" in kinds["active_arow"]
    assert "`edgelearn.learners.paacds`" not in kinds["active_arow"]
    assert "`edgelearn.learners.paacds`" in kinds["paacds"]
    assert "`edgelearn.learners.arow`" not in kinds["paacds"]


def test_a_bad_repeat_is_refused_with_its_value():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_startup.py"),
                             "--repeat", "0"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2 and "--repeat must be at least 1. Got 0." in result.stderr
