"""tools/bench_log_replay.py on tiny inputs: it writes the whole page."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import bench_log_replay  # noqa: E402


def test_the_tool_writes_its_page(tmp_path):
    out = tmp_path / "page.md"
    assert bench_log_replay.main(["--n", "400", "--per-message-n", "100", "--logs", "0",
                                  "--out", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("# Log replay")
    assert "| msgpack log, jitted (`edgelearn replay LOG`), decoding included | 400 |" in page
    assert "| msgpack log, per message (`edgelearn replay --per-message LOG`) | 100 |" in page
    assert "load average" in page
