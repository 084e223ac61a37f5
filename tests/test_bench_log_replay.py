"""tools/bench_log_replay.py on tiny inputs: it writes the whole page."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import bench_log_replay  # noqa: E402


def test_the_tool_writes_its_page(tmp_path):
    out = tmp_path / "page.md"
    assert bench_log_replay.main(["--n", "400", "--per-message-n", "100", "--logs", "0",
                                  "--command-n", "300", "--command-d", "4", "--rounds", "1",
                                  "--out", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("# Log replay")
    for kind in ("active_arow", "paacds"):
        assert f"| {kind} | msgpack log, jitted (`edgelearn replay LOG`), decoding included | 400 |" in page
        assert f"| {kind} | msgpack log, per message (`edgelearn replay --per-message LOG`) | 100 |" in page
    # the default learner's rows first
    assert page.index("| active_arow |") < page.index("| paacds |")
    assert "## The whole command, as a user times it" in page
    assert "active_arow: `jitted`" in page and "paacds: `jitted`" in page
    assert "load average" in page
