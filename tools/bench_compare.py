"""Compare the core benchmarks of this checkout (HEAD) with another commit (BASE)
in one run, alternating, and print HEAD's speed as a ratio of BASE's.

    python tools/bench_compare.py --base b41e8c0            # or: make bench-compare BASE=b41e8c0
    python tools/bench_compare.py --base HEAD~1 --strict    # exit 1 when a row is flagged

Run it before submitting a change to a hot path. BASE is unpacked from git
(``git archive``) into a temporary directory; HEAD is this checkout as it is on
disk, uncommitted changes included (``--head REV`` unpacks a revision instead).
Each measurement is a fresh process of this Python with the tree on
``PYTHONPATH``, so both run on the same interpreter and packages; the rows go
HEAD, BASE, HEAD, BASE ... for ``--rounds`` rounds, and each tree's best
(least CPU time) is kept, so a slow spell of a shared machine hits both.

The rows (CPU time of the process's own thread, after a warm-up that compiles):

* ``array replay``: PAACDS's jitted ``edgelearn.replay`` over d = 64 channels,
  a quarter of the values missing, a 20% label budget (``--n`` rows); the loop
  as ``replay`` times it, µs per instance;
* ``log replay <kind>``: a msgpack log of ``--n`` messages (32 channels, a
  quarter missing, labels in the data) through ``edgelearn replay``'s function
  (``firmware_bridge.offline.replay.replay_records``), reading included, µs per
  message;
* ``pipeline <kind>``: ``Pipeline.handle`` on single-reading messages, µs per reading;
* ``batch pass <kind>``: ``Pipeline.handle`` on batches of 64 readings, µs per reading;
* ``batch many <kind>``: the same batches handed over 32 at a time
  (``Pipeline.handle_many``, as the gateway takes what is queued), µs per reading.

A row a commit cannot run (an API or kind it lacks) is skipped with the reason.
A row whose HEAD/BASE speed ratio is below ``--flag-below`` (0.9) is flagged.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run in a fresh process per measurement, with the tree to measure on PYTHONPATH.
#: It uses only public names and falls back to the older module paths, so that
#: older commits can be measured; what a commit lacks is printed as a skip.
PROBE = r'''
import json, os, sys, time

# Only the tree on PYTHONPATH: an editable install of another checkout in this
# Python would otherwise lend the modules the tree lacks.
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path_hooks[:] = [h for h in sys.path_hooks if not getattr(h, "__module__", "").startswith("__editable__")]
sys.path_importer_cache.clear()
TREE = os.path.realpath(os.environ["PYTHONPATH"])

# Every timer the library reads becomes this thread's CPU time: the machine is
# shared, and CPU time is what the code itself costs.
time.perf_counter = time.thread_time
bench, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


def done(**fields):
    strays = sorted(name for name, module in list(sys.modules.items())
                    if name.split(".")[0] in ("edgelearn", "firmware_bridge")
                    and getattr(module, "__file__", None)
                    and not os.path.realpath(module.__file__).startswith(TREE + os.sep))
    if strays:
        fields = {"skip": f"modules from outside the tree: {', '.join(strays[:3])}"}
    print(json.dumps(fields))
    raise SystemExit(0)


import numpy as np


def rows(n, d, seed=0):
    from edgelearn.streams import drop_features
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) > 0
    y ^= rng.random(n) < 0.05
    return drop_features(X, alpha=0.5, seed=seed), y


def cpu_per_item(function, items, repeats=2):
    best = float("inf")
    for _ in range(repeats):
        began = time.thread_time()
        for item in items:
            function(item)
        best = min(best, time.thread_time() - began)
    return best / len(items) * 1e6


def wire():
    try:
        from firmware_bridge import wire
        return wire
    except ImportError:
        from firmware_bridge import protocol
        return protocol


def readings(n, d=32):
    X, y = rows(n, d, seed=1)
    names = [f"c{j}" for j in range(d)]
    return [(float(i), i, {m: v for m, v in zip(names, row) if v == v}, bool(label))
            for i, (row, label) in enumerate(zip(X.tolist(), y.tolist()))]


def pipeline(kind, **extra):
    from firmware_bridge.pipeline import Pipeline
    try:
        from edgelearn.learners import make_learner
        make_learner(kind, {"target_query_rate": 0.2})
    except (ValueError, TypeError, KeyError) as error:
        done(skip=f"no learner kind {kind!r} ({type(error).__name__})")
    return Pipeline(kind, {"target_query_rate": 0.2}, label_policy="from_data", **extra)


if bench == "array_replay":
    from edgelearn import PAACDS, replay
    X, y = rows(n, 64)
    replay(PAACDS(target_query_rate=0.2), X[:2000], y[:2000])  # compile
    best = min(replay(PAACDS(target_query_rate=0.2, seed=0), X, y).seconds for _ in range(2))
    done(us=best / n * 1e6)

if bench == "log_replay":
    import os, tempfile
    try:
        from firmware_bridge.offline.replay import replay_records
        from firmware_bridge.wire.logfile import iter_logs, write_log
    except ImportError as error:
        done(skip=f"no log replay function ({error})")
    encode_data = wire().encode_data
    topic = "sensors/s1/data"
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "bench.msgpack")
        write_log(path, [(topic, r[0], encode_data(*r)) for r in readings(n)], created=0.0)
        small = os.path.join(directory, "small.msgpack")
        write_log(small, [(topic, r[0], encode_data(*r)) for r in readings(500)], created=0.0)
        replay_records(pipeline(kind), iter_logs([small]))  # compile
        best, path_taken = float("inf"), None
        for _ in range(2):
            p = pipeline(kind)
            began = time.thread_time()
            result = replay_records(p, iter_logs([path]))
            best = min(best, time.thread_time() - began)
            path_taken = result.get("paths", {}).get("s1")
    done(us=best / n * 1e6, note=str(path_taken))

if bench in ("pipeline", "batch_pass", "batch_many"):
    w = wire()
    topic = "sensors/s1/data"
    items = readings(n)
    per = 1
    extra = {}
    if bench in ("batch_pass", "batch_many"):
        if not hasattr(w, "encode_batch"):
            done(skip="no batched readings (encode_batch)")
        per = 64
        payloads = [w.encode_batch(items[i:i + per]) for i in range(0, len(items), per)]
        extra["limits"] = w.Limits(max_payload_bytes=max(map(len, payloads)) + 1024)
    else:
        payloads = [w.encode_data(*r) for r in items]
    p = pipeline(kind, **extra)
    handle = p.handle
    for payload in payloads[: max(1, len(payloads) // 10)]:
        handle(topic, payload, 0.0)
    if bench == "batch_many":
        if not hasattr(p, "handle_many"):
            done(skip="no Pipeline.handle_many")
        groups = [[(topic, payload, 0.0) for payload in payloads[i:i + 32]]
                  for i in range(0, len(payloads), 32)]
        p.handle_many(groups[0])  # its own kernels compiled
        done(us=cpu_per_item(p.handle_many, groups) * len(groups) / len(payloads) / per)
    done(us=cpu_per_item(lambda payload: handle(topic, payload, 0.0), payloads) / per)

done(skip=f"unknown benchmark {bench!r}")
'''

#: (row name, probe benchmark, whether it runs per learner kind, default --n)
BENCHES = {
    "array_replay": ("array replay", False, 1_000_000),
    "log_replay": ("log replay", True, 200_000),
    "pipeline": ("pipeline", True, 20_000),
    "batch_pass": ("batch pass", True, 64_000),
    "batch_many": ("batch many", True, 64_000),
}


def unpack(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (a commit, tag or branch of this repository) in ``into``;
    a directory given as ``rev`` is used as it is (a tree unpacked before keeps its
    compiled kernels)."""
    if Path(rev).is_dir():
        return Path(rev).resolve()
    into.mkdir(parents=True)
    archive = into.parent / f"{into.name}.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        # git's own archive; the "data" filter where this Python has it (3.11.4+)
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    archive.unlink()
    return into


def measure(tree: Path, bench: str, kind: str, n: int, probe: Path, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    run = subprocess.run([sys.executable, str(probe), bench, kind, str(n)], cwd=str(tree), env=env,
                         capture_output=True, text=True, timeout=timeout)
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return {"skip": f"failed: {tail}"}
    return json.loads(lines[-1])


def rows_to_run(benches: list[str], kinds: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for bench in benches:
        label, per_kind, _ = BENCHES[bench]
        for kind in kinds if per_kind else ["paacds"]:
            out.append((f"{label} {kind}" if per_kind else label, bench, kind))
    return out


def compare(head: Path, base: Path, benches: list[str], kinds: list[str], sizes: dict, rounds: int,
            flag_below: float, timeout: float, progress=None) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "probe.py"
        probe.write_text(PROBE)
        for name, bench, kind in rows_to_run(benches, kinds):
            best = {"HEAD": None, "BASE": None}
            skip = None
            for r in range(rounds):
                for side, tree in (("HEAD", head), ("BASE", base)):
                    got = measure(tree, bench, kind, sizes[bench], probe, timeout)
                    if progress:
                        progress(f"{name} round {r + 1} {side}: {got}")
                    if "skip" in got:
                        skip = f"{side}: {got['skip']}"
                        break
                    if best[side] is None or got["us"] < best[side]["us"]:
                        best[side] = got
                if skip:
                    break
            row = {"row": name, "n": sizes[bench]}
            if skip:
                row["skip"] = skip
            else:
                row["head_us"] = best["HEAD"]["us"]
                row["base_us"] = best["BASE"]["us"]
                row["ratio"] = row["base_us"] / row["head_us"]
                row["flagged"] = row["ratio"] < flag_below
                row["note"] = " / ".join(dict.fromkeys(
                    str(best[s]["note"]) for s in ("HEAD", "BASE") if best[s].get("note")))
            results.append(row)
    return results


def render(results: list[dict], head_name: str, base_name: str, rounds: int, flag_below: float) -> str:
    lines = [
        f"HEAD = {head_name}, BASE = {base_name}; best of {rounds} alternated runs each, "
        "CPU µs per item (less is faster); ratio = HEAD's speed / BASE's",
        "",
        f"| row | n | HEAD µs | BASE µs | HEAD/BASE | flag (< {flag_below}x) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        if "skip" in r:
            lines.append(f"| {r['row']} | {r['n']:,} | | | skipped | {r['skip']} |")
            continue
        flag = "SLOWER" if r["flagged"] else ""
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(f"| {r['row']}{note} | {r['n']:,} | {r['head_us']:.3f} | {r['base_us']:.3f} "
                     f"| {r['ratio']:.2f}x | {flag} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True,
                        help="the commit to compare with (any git revision, or a directory holding a tree)")
    parser.add_argument("--head", default=None,
                        help="a revision (or directory) to measure instead of this checkout as it is on disk")
    parser.add_argument("--benches", default=",".join(BENCHES),
                        help=f"comma-separated, of {', '.join(BENCHES)} (default: all)")
    parser.add_argument("--kinds", default=None,
                        help="learner kinds of the per-kind rows (default: paacds and this checkout's "
                             "default learner)")
    parser.add_argument("--n", type=int, default=None,
                        help="items per row (default per row: " + ", ".join(
                            f"{b} {v[2]:,}" for b, v in BENCHES.items()) + ")")
    parser.add_argument("--rounds", type=int, default=3, help="alternated runs of each tree (default 3)")
    parser.add_argument("--flag-below", type=float, default=0.9,
                        help="flag a row whose HEAD/BASE ratio is below this (default 0.9)")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 when a row is flagged")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one measurement may take")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)

    benches = [b.strip() for b in args.benches.split(",") if b.strip()]
    unknown = [b for b in benches if b not in BENCHES]
    if unknown or not benches:
        parser.error(f"--benches must be a comma-separated list of {', '.join(BENCHES)}. Got {args.benches!r}.")
    if args.rounds < 1:
        parser.error(f"--rounds must be an int >= 1. Got {args.rounds}.")
    if args.n is not None and args.n < 1:
        parser.error(f"--n must be an int >= 1. Got {args.n}.")
    if args.kinds is None:
        from edgelearn import DEFAULT_KIND
        kinds = list(dict.fromkeys(["paacds", DEFAULT_KIND]))
    else:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    sizes = {b: args.n or default for b, (_, _, default) in BENCHES.items()}
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))

    with tempfile.TemporaryDirectory(prefix="bench-compare-") as scratch:
        try:
            base = unpack(args.base, Path(scratch) / "base")
            head = ROOT if args.head is None else unpack(args.head, Path(scratch) / "head")
        except subprocess.CalledProcessError:
            print(f"bench_compare: git could not unpack {args.base!r}"
                  + ("" if args.head is None else f" or {args.head!r}"), file=sys.stderr)
            return 2
        results = compare(head, base, benches, kinds, sizes, args.rounds, args.flag_below,
                          args.timeout, progress)
    head_name = f"{args.head}" if args.head else "this checkout (on disk)"
    print(render(results, head_name, args.base, args.rounds, args.flag_below))
    flagged = [r["row"] for r in results if r.get("flagged")]
    if flagged:
        print(f"\nflagged (HEAD slower than {args.flag_below}x BASE): {', '.join(flagged)}")
    return 1 if flagged and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
