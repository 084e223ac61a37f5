"""Write docs/bench-startup.md: how long `edgelearn replay` and `edgelearn gateway`
take to start, and which learner modules a gateway configured for one kind loads.

    python tools/bench_startup.py               # 5 runs of each command
    python tools/bench_startup.py --repeat 3 --out /tmp/startup.md

Each command runs as a fresh process, as a user or systemd starts it, wall time,
the median of --repeat runs after one untimed run (which fills the Numba cache, as
`edgelearn warmup` does for the systemd unit):

* ``python -c "import edgelearn"`` and ``python -c "import firmware_bridge.cli"``;
* ``edgelearn replay LOG`` of a one-message log, per learner kind (what a replay
  costs before its first message: the import, the configuration, the kernels loaded
  from the cache);
* ``edgelearn gateway --check-config`` (the configuration read, the learner built
  through the pipeline, no broker).

Then, for each kind, the edgelearn learner modules and kernel modules a gateway
built for that kind has imported (a kind's module is imported only when asked for).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "bench-startup.md"
KINDS = ("active_arow", "paacds")

LOADED = """
import json, sys
from firmware_bridge.service.config import load_config
from firmware_bridge.service.gateway import Gateway
config, errors = load_config(None, {"checkpoints.directory": "", "learner.kind": sys.argv[1]})
assert not errors, errors
Gateway(config)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("edgelearn.learners.",
                                                                 "edgelearn.kernels.")))))
"""


def one_message_log(directory: Path) -> Path:
    from firmware_bridge.service.recorder import LogWriter
    from firmware_bridge.wire import encode_data

    with LogWriter(directory) as writer:
        writer.write("sensors/s1/data", encode_data(0.0, 0, {"t": 21.5, "h": 40.0}, True), 0.0)
    return directory


def timed(argv: list[str], env: dict, repeat: int) -> float:
    """Median wall seconds of ``repeat`` runs after an untimed one."""
    def run() -> float:
        start = time.perf_counter()
        result = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True,
                                timeout=600)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")
        return elapsed

    run()
    return statistics.median(run() for _ in range(repeat))


def measure(repeat: int, env: dict) -> tuple[list[tuple[str, str, float]], dict[str, list[str]]]:
    python = sys.executable
    edgelearn = str(Path(python).parent / "edgelearn")
    rows = [
        ("import edgelearn", "python -c 'import edgelearn'",
         timed([python, "-c", "import edgelearn"], env, repeat)),
        ("import firmware_bridge.cli", "python -c 'import firmware_bridge.cli'",
         timed([python, "-c", "import firmware_bridge.cli"], env, repeat)),
    ]
    loaded = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = one_message_log(Path(tmp) / "log")
        for kind in KINDS:
            argv = [edgelearn, "replay", str(log), "--learner", kind, "--quiet"]
            rows.append((f"edgelearn replay of a one-message log, {kind}",
                         f"edgelearn replay LOG --learner {kind} --quiet", timed(argv, env, repeat)))
        rows.append(("edgelearn gateway --check-config (the shipped configuration)",
                     "edgelearn gateway --config configs/gateway.toml --check-config",
                     timed([edgelearn, "gateway", "--config", str(ROOT / "configs" / "gateway.toml"),
                            "--check-config"], env, repeat)))
    for kind in KINDS:
        result = subprocess.run([python, "-c", LOADED, kind], env=env, cwd=ROOT,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise SystemExit(f"building a {kind} gateway failed:\n{result.stderr}")
        loaded[kind] = json.loads(result.stdout)
    return rows, loaded


def page(rows, loaded, repeat: int, seconds: float) -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# Start-up: `edgelearn replay` and `edgelearn gateway`",
        "",
        f"Produced by `python tools/bench_startup.py --repeat {repeat}` on "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; `{platform.platform()}`, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; load average {load} "
        f"(1 / 5 / 15 min) when it was written; {seconds:.0f} s in all.",
        "",
        "Wall time of each command as a fresh process, the median of "
        f"{repeat} runs after an untimed one (which fills the Numba cache, as "
        "`edgelearn warmup` does for the systemd unit). The machine is shared: compare "
        "the rows with each other, not with another machine's.",
        "",
        "| what | command | median s |",
        "|---|---|---:|",
    ]
    lines += [f"| {what} | `{command}` | {value:.2f} |" for what, command, value in rows]
    base = {what: value for what, _, value in rows}
    replay = base[f"edgelearn replay of a one-message log, {KINDS[0]}"]
    lines += [
        "",
        f"A process that only imports the command line takes "
        f"{base['import firmware_bridge.cli']:.2f} s (it imports edgelearn, NumPy and "
        f"Numba when a command needs them); one that imports edgelearn "
        f"{base['import edgelearn']:.2f} s. A one-message replay ({KINDS[0]}) takes "
        f"{replay:.2f} s: the rest is reading the configuration and the log, building the "
        "learner and loading its kernels from the cache. `docs/bench-log-replay.md` "
        "times replays with this start-up taken off.",
        "",
        "## What a gateway built for one kind imports",
        "",
        "The edgelearn learner and kernel modules in `sys.modules` after `Gateway(config)` "
        "with `[learner] kind` set (the registry imports a kind's module only when asked "
        "for it):",
        "",
    ]
    for kind, modules in loaded.items():
        lines.append(f"* `{kind}`: " + ", ".join(f"`{m}`" for m in modules))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each command (default 5)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the page (default {OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1. Got {args.repeat}.")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    rows, loaded = measure(args.repeat, env)
    args.out.write_text(page(rows, loaded, args.repeat, time.perf_counter() - start))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
