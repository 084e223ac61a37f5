"""The ``edgelearn`` command line.

    edgelearn replay                      # the bundled demo: a recorded office sensor log
    edgelearn replay LOG_OR_DIR ... [--learner paacds --set C=0.5 --label-budget 0.1]
    edgelearn replay data.csv --label occupied
    edgelearn replay 'logs/*.msgpack' --grid C=0.1,1 --jobs 2 [--scheduler tcp://HOST:8786] [--json | --csv F]
    edgelearn tune logs/ --grid C=0.1,1,10 --label-budget 0.1 --metric f1 [--results F] [--jobs 2]
    edgelearn bench                       # replay throughput vs River; --memory for RSS
    edgelearn gateway --config FILE       # the MQTT service
    edgelearn warmup --config FILE        # compile its kernels into NUMBA_CACHE_DIR first
    edgelearn status --config FILE        # the running gateway's status, from the broker
    edgelearn config --print-default      # the documented configs/gateway.toml
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path

DEMO_LOG = Path(__file__).resolve().parents[1] / "edgelearn" / "data" / "occupancy-demo.msgpack"

EXIT_USAGE = 2


class CliError(Exception):
    """A problem the user can fix; printed without a traceback, exit 2."""


# -- shared helpers ------------------------------------------------------------


def _parse_setting(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE a Python literal (number, True, None, 'str');
    anything that is not a literal is taken as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE (e.g. C=0.5). Got {text!r}.")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key, value


class Progress:
    """A one-line progress bar on stderr, drawn only on a terminal and at
    most ten times a second."""

    def __init__(self, total: float, unit: str, enabled: bool):
        self.total = total
        self.unit = unit
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.perf_counter()
        self._last = 0.0

    def update(self, done: float, count: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1:
            return
        self._last = now
        fraction = min(1.0, done / self.total) if self.total else 0.0
        bar = "#" * int(30 * fraction)
        rate = count / max(now - self.start, 1e-9)
        sys.stderr.write(f"\r[{bar:<30}] {fraction:6.1%} {count:>10,} {self.unit} {rate:>10,.0f}/s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()


# -- replay --------------------------------------------------------------------


def _resolve_learner(args) -> None:
    """The learner and its parameters: --learner/--set over the --config
    file's [learner] section over the defaults; sets ``args.gateway_config``."""
    args.gateway_config = None
    base: dict = {}
    if args.config is not None:
        from firmware_bridge.config import load_config

        config, errors = load_config(args.config)
        if errors:
            raise CliError("the configuration has errors:\n  " + "\n  ".join(errors))
        args.gateway_config = config
        if args.learner is None or args.learner == config.learner_kind:
            args.learner = config.learner_kind
            base = dict(config.learner_params)
    if args.learner is None:
        from edgelearn import DEFAULT_KIND

        args.learner = DEFAULT_KIND
    args.set = list(base.items()) + list(args.set or [])
    if (args.learner in _active_kinds(single_label=True) and args.label_budget is None
            and "target_query_rate" not in dict(args.set)):
        args.label_budget = 0.1


def _active_kinds(single_label: bool = False) -> list[str]:
    """The learner kinds that ask for labels at a rate (``target_query_rate``);
    with ``single_label``, those of binary and multiclass streams only (the
    ones ``replay`` gives a 10% budget by default)."""
    from edgelearn import KINDS

    return [kind for kind, cls in KINDS.items() if "target_query_rate" in cls._param_names()
            and cls.asks_selectively and not (single_label and cls.supports_multilabel)]


class _LazyHelp(str):
    """A help text made when --help prints it: listing the active learner kinds
    imports every learner, which the gateway (same parser) must not do."""

    def __new__(cls, make):
        text = super().__new__(cls, "(made when printed)")
        text.make = make
        return text

    def __mod__(self, params):
        return self.make().replace("%", "%%") % params


def _learner_params(args) -> dict:
    params = dict(args.set or [])
    if args.label_budget is not None:
        active = _active_kinds()
        if args.learner not in active:
            raise CliError(f"--label-budget needs an active learner ({', '.join(active)}); "
                           f"{args.learner} asks for every label.")
        params["target_query_rate"] = args.label_budget
    return params


def _replay_csv(path: Path, args, params: dict) -> dict:
    import edgelearn
    from edgelearn.datasets import read_csv
    from edgelearn.evaluate import prequential, replay
    from edgelearn.streams import iter_array

    try:
        data = read_csv(path, label=args.label)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    model = edgelearn.make_learner(args.learner, params)
    if isinstance(model, (edgelearn.PAACDS, edgelearn.PA)):  # the learners with a jitted loop
        result = replay(model, data.X, data.y, active=args.policy == "from_data", feature_names=data.feature_names)
    else:
        progress = Progress(len(data.y), "rows", not args.quiet)
        result = prequential(model, iter_array(data.X, data.y, data.feature_names),
                             active=args.policy == "from_data", progress=lambda i: progress.update(i, i))
        progress.close()
    return {
        "source": str(path),
        "learner": repr(model),
        "streams": {
            path.stem: {
                "messages": result.n,
                "accuracy": result.accuracy,
                "f1": result.f1,
                "query_rate": result.query_rate,
                "labels_used": result.n_queried if args.policy == "from_data" else result.n,
                "channels": model.channels.n_assigned,
                "memory_bytes": model.memory_bytes(),
            }
        },
        "seconds": result.seconds,
        "messages_per_s": result.instances_per_s,
    }


def _replay_logs(sources: list[Path], args, params: dict) -> dict:
    from firmware_bridge.pipeline import Pipeline
    from firmware_bridge.recorder import LogError, iter_logs

    files = []
    for source in sources:
        files.extend(sorted(source.glob("*.msgpack")) if source.is_dir() else [source])
    total_bytes = sum(f.stat().st_size for f in files)
    config = args.gateway_config
    try:
        if config is None:
            pipeline = Pipeline(args.learner, params, label_policy=args.policy)
        else:
            pipeline = Pipeline(
                args.learner, params, topics=config.topics, limits=config.limits,
                max_streams=config.max_streams, label_policy=args.policy,
                json_fields=config.pipeline_params()["json_fields"],
            )
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    curves = curve_file = None
    if args.curve or args.plot:
        from firmware_bridge.curves import CurveRecorder

        if args.curve:
            try:
                Path(args.curve).parent.mkdir(parents=True, exist_ok=True)
                curve_file = open(args.curve, "w", newline="", encoding="utf-8")
            except OSError as exc:
                raise CliError(f"--curve: cannot write {args.curve}: {exc.strerror or exc}") from None
        curves = CurveRecorder(pipeline, curve_file, window=args.window)
    corrupt = []

    def report(error: LogError) -> None:
        corrupt.append(str(error))
        print(f"edgelearn replay: {error}", file=sys.stderr)

    from firmware_bridge.bulk_replay import replay_records

    progress = Progress(total_bytes, "messages", not args.quiet)
    position = {"done_before": 0, "current": None}  # bytes of the files already read

    def show(record, count: int) -> None:
        current = position["current"]
        if current is not None and record.offset < current:
            position["done_before"] += current
        position["current"] = record.offset
        progress.update(position["done_before"] + record.offset, count)

    start = time.perf_counter()
    records = iter_logs([str(f) for f in files], on_error=report)
    if curves is not None:
        records = _observed(records, curves)
    # the curves read the pipeline after each message: they need the per-message path
    result = replay_records(pipeline, records, jit=not args.per_message and curves is None,
                            progress=show)
    count = result["records"]
    seconds = time.perf_counter() - start
    progress.close()
    pictures = {}
    if curve_file is not None:
        curve_file.close()
        pictures["curve"] = str(args.curve)
    if args.plot:
        from firmware_bridge.plots import plot_curves

        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        title = f"edgelearn replay: {args.learner}, {count:,} messages"
        if pipeline.streams:
            learner = pipeline.learner(pipeline.streams[0])
            rate = learner.get_params().get("target_query_rate")
            title = f"edgelearn replay: {type(learner).__name__}" + (
                f" with a {rate:.0%} label budget" if rate else " (asks for every label)"
            ) + f", {count:,} messages"
        plot_curves(curves, str(args.plot), title=title)
        pictures["plot"] = str(args.plot)
    status = pipeline.status()
    streams = {}
    for name, s in status["streams"].items():
        streams[name] = {
            "messages": s["data"],
            **{key: s[key] for key, _ in _SCORES if key in s},
            "query_rate": s["query_rate"],
            "labels_used": s["learned"],
            "channels": s["channels"],
            "channels_ignored": s["channels_ignored"],
            "memory_bytes": s["memory_bytes"],
        }
    counters = status["counters"]
    return {
        "source": [str(f) for f in files],
        "learner": repr(pipeline.learner(pipeline.streams[0])) if pipeline.streams else args.learner,
        "streams": streams,
        "messages": counters["messages"],
        "rejected": counters["rejected"],
        "rejects": {k: v for k, v in counters.items() if v and k not in _NOT_REJECTS and k != "rejected"},
        "corrupt_records": corrupt,
        "paths": result["paths"],
        "seconds": seconds,
        "messages_per_s": count / seconds if seconds > 0 else float("inf"),
        **({"files": pictures} if pictures else {}),
    }


def _observed(records, curves):
    """``records``, each shown to ``curves`` once the pipeline has handled it (when
    the next one is asked for, and the last at the end)."""
    previous = None
    for record in records:
        if previous is not None:
            curves.observe(previous.topic, previous.payload, previous.received_at)
        previous = record
        yield record
    if previous is not None:
        curves.observe(previous.topic, previous.payload, previous.received_at)


# Prequential scores a stream status may carry (single-label or multi-label), and
# how the summary names them.
_SCORES = (("accuracy", "accuracy"), ("f1", "F1"), ("hamming_loss", "Hamming loss"), ("micro_f1", "micro-F1"))

# Counters of the pipeline that count work done, not rejects.
_NOT_REJECTS = {
    "messages", "data", "label_messages", "predictions", "asked", "label_requests", "learned",
    "label_pending", "label_issued", "label_answered",
}


def _print_replay(summary: dict) -> None:
    source = summary["source"]
    print(f"replayed {source if isinstance(source, str) else ', '.join(source)}")
    print(f"learner  {summary['learner']}")
    for name, s in summary["streams"].items():
        scores = "  ".join(f"{label} {s[key]:.4f}" for key, label in _SCORES if key in s)
        print(
            f"stream {name}: {s['messages']:,} messages  {scores}  "
            f"labels used {s['labels_used']:,} ({s['query_rate']:.1%} asked)  "
            f"channels {s['channels']}  memory {s['memory_bytes']:,} B"
        )
    if summary.get("rejected"):
        detail = ", ".join(f"{k} {v}" for k, v in sorted(summary["rejects"].items()))
        print(f"rejected {summary['rejected']:,} messages ({detail})")
    for name, path in summary.get("paths", {}).items():
        print(f"stream {name} ran {path}")
    for problem in summary.get("corrupt_records", []):
        print(f"corrupt: {problem}")
    print(f"{summary['messages_per_s']:,.0f} messages/s")
    for what, path in summary.get("files", {}).items():
        print(f"{'picture' if what == 'plot' else 'curves '}  {path}")


def cmd_replay(args) -> int:
    _resolve_learner(args)
    sources = [Path(s) for s in args.sources] or [DEMO_LOG]
    if args.jobs != 1 or args.scheduler or args.grid or args.csv:
        # many logs (files, folders, glob patterns) x a parameter grid, as tasks
        return _replay_fanout(sources, args, _learner_params(args))
    missing = [str(s) for s in sources if not s.exists()]
    if missing:
        raise CliError(f"no such file or directory: {', '.join(missing)}")
    params = _learner_params(args)
    csvs = [s for s in sources if s.name.endswith((".csv", ".csv.gz"))]
    if csvs and len(sources) > 1:
        raise CliError("replay takes one CSV file, or any number of msgpack logs and directories, not both.")
    if csvs and (args.plot or args.curve):
        raise CliError("--plot and --curve follow the gateway's pipeline: they take msgpack logs, not a CSV file.")
    if args.plot:
        if not str(args.plot).lower().endswith(".png"):
            raise CliError(f"The '--plot' option must be a .png file name. Got {str(args.plot)!r}.")
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise CliError("--plot needs matplotlib, an optional extra: pip install 'edgelearn[plot]' "
                           "(or use --curve FILE.csv, which needs nothing).")
    summary = _replay_csv(csvs[0], args, params) if csvs else _replay_logs(sources, args, params)
    if args.json:
        json.dump(summary, sys.stdout, indent=2, default=float)
        print()
    else:
        _print_replay(summary)
    return 1 if summary.get("corrupt_records") else 0


# -- many logs, parameter grids, tuning ---------------------------------------


def _parse_grid(text: str) -> tuple[str, list]:
    """``KEY=V1,V2,...``: the values a parameter takes in a grid."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier() or not raw:
        raise argparse.ArgumentTypeError(f"--grid takes KEY=V1,V2,... (e.g. C=0.1,1,10). Got {text!r}.")
    return key, [_parse_setting(f"{key}={part}")[1] for part in raw.split(",")]


def _parse_range(text: str) -> tuple[str, tuple]:
    """``KEY=LOW:HIGH`` or ``KEY=LOW:HIGH:log``: where a random search draws a float."""
    key, sep, raw = text.partition("=")
    parts = raw.split(":")
    try:
        if not sep or not key.isidentifier() or len(parts) not in (2, 3):
            raise ValueError
        low, high = float(parts[0]), float(parts[1])
        if len(parts) == 3 and (parts[2] != "log" or low <= 0):
            raise ValueError
        if not low < high:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--range takes KEY=LOW:HIGH or KEY=LOW:HIGH:log (LOW < HIGH, LOW > 0 for log). Got {text!r}."
        ) from None
    return key, (low, high, "log") if len(parts) == 3 else (low, high)


def _units(sources: list[Path], group: str) -> list[tuple[str, ...]]:
    from firmware_bridge.fanout import expand_logs

    try:
        return expand_logs([str(s) for s in sources], group=group)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _fanout_progress(quiet: bool):
    if quiet:
        return None

    def show(result: dict, done: int, total: int) -> None:
        print(f"[{done}/{total}] {result['key']}: {result['messages']:,} messages", file=sys.stderr)

    return show


def _print_rows(rows: list[dict], args) -> None:
    from firmware_bridge import results_table

    if args.csv:
        Path(args.csv).write_text(results_table.to_csv(rows), encoding="utf-8")
    if args.json:
        print(results_table.to_json(rows))
    else:
        print(results_table.to_text(rows))
        if args.csv:
            print(f"CSV written to {args.csv}")


def _replay_fanout(sources: list[Path], args, params: dict) -> int:
    """Many logs and a parameter grid as independent tasks; the results table."""
    from firmware_bridge import results_table
    from firmware_bridge.fanout import run_grid, tasks_for
    from firmware_bridge.tune import grid_params

    param_sets = [{**params, **grid} for grid in grid_params(dict(args.grid or []))]
    tasks = tasks_for(_units(sources, args.group), args.learner, param_sets,
                      label_policy=args.policy, jit=not args.per_message)
    try:
        results = run_grid(tasks, jobs=args.jobs, scheduler=args.scheduler,
                           progress=_fanout_progress(args.quiet or args.json))
    except (ImportError, ValueError, TypeError, OSError) as exc:
        raise CliError(str(exc)) from None
    _print_rows(results_table.table_rows(results), args)
    return 1 if any(r["corrupt_records"] for r in results) else 0


def cmd_tune(args) -> int:
    from firmware_bridge import results_table
    from firmware_bridge.tune import METRICS, grid_params, learner_section, random_params, rank, tune

    sources = [Path(s) for s in args.sources] or [DEMO_LOG]
    fixed = dict(args.set or [])
    if args.label_budget is not None:
        fixed["target_query_rate"] = args.label_budget
    elif args.learner == "paacds" and "target_query_rate" not in fixed:
        fixed["target_query_rate"] = 0.1
    if args.random:
        if not args.range and not args.grid:
            raise CliError("--random N draws from --range KEY=LOW:HIGH[:log] (and --grid values as choices).")
        space = {**{k: list(v) for k, v in (args.grid or [])}, **dict(args.range or [])}
        searched = random_params(space, args.random, seed=args.seed)
    elif args.grid:
        searched = grid_params(dict(args.grid))
    else:
        raise CliError("tune needs --grid KEY=V1,V2,... or --random N with --range KEY=LOW:HIGH.")
    param_sets = [{**fixed, **p} for p in searched]
    for p in param_sets:  # a bad value fails here, before any replay
        try:
            import edgelearn

            edgelearn.make_learner(args.learner, p)
        except (TypeError, ValueError) as exc:
            raise CliError(str(exc)) from None
    units = _units(sources, args.group)
    print(f"tuning {args.learner}: {len(param_sets)} parameter sets x {len(units)} logs, "
          f"scored by {args.metric} ({METRICS[args.metric]}); results in {args.results}",
          file=sys.stderr)
    try:
        results = tune(units, args.learner, param_sets, results_path=args.results, jobs=args.jobs,
                       scheduler=args.scheduler, progress=_fanout_progress(args.quiet))
    except KeyboardInterrupt:
        print(f"interrupted; finished tasks are kept in {args.results}: run the same command "
              "again to resume.", file=sys.stderr)
        return 130
    except (ImportError, ValueError, TypeError, OSError) as exc:
        raise CliError(str(exc)) from None
    ranked = rank(results, args.metric)
    rows = [{**r, "rank": i + 1, "params": " ".join(f"{k}={v}" for k, v in sorted(r["params"].items())),
             "logs": "(all)", "stream": "(overall)", "path": ""} for i, r in enumerate(ranked)]
    columns = ("rank", "params", "messages", "scored", "accuracy", "f1", "query_rate", "labels_used")
    if args.csv:
        Path(args.csv).write_text(results_table.to_csv(rows), encoding="utf-8")
    best = ranked[0]["params"]
    section = learner_section(args.learner, best)
    if args.json:
        json.dump({"metric": args.metric, "ranked": ranked, "learner_section": section},
                  sys.stdout, indent=2, default=float)
        print()
    else:
        print(f"ranked by {args.metric} (query_rate: the share of labels the learner asked for)")
        print(results_table.to_text(rows[: args.top], columns))
        print()
        print("# the winner, for gateway.toml:")
        print(section)
    if args.write:
        Path(args.write).write_text(section + "\n", encoding="utf-8")
    return 0


def _add_fanout_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", action="append", type=_parse_grid, metavar="KEY=V1,V2",
                        help="values a learner parameter takes; every combination is run (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="run logs x parameter sets as N local processes (joblib; default 1)")
    parser.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                        help="run them on an existing Dask cluster (dask.distributed)")
    parser.add_argument("--group", choices=("file", "dir"), default="file",
                        help="a task replays one file (default), or one directory's files in order (dir)")
    parser.add_argument("--csv", default=None, metavar="FILE", help="also write the results table as CSV")


# -- bench ---------------------------------------------------------------------


def cmd_bench(args) -> int:
    from edgelearn import bench

    if args.memory:
        def progress(i, n):
            if not args.json:
                print(f"  {i:,}/{n:,} instances", file=sys.stderr)

        result = bench.memory_over_stream(n=args.n, distinct_names=args.names, progress=progress)
        if args.json:
            json.dump(result, sys.stdout, indent=2)
            print()
        else:
            print(f"PAACDS dict path, {result['n']:,} instances, {result['distinct_names']:,} distinct channel names, capacity {result['capacity']}")
            for s in result["samples"]:
                print(f"  {s['instances']:>9,}  memory_bytes {s['memory_bytes']:,}  RSS {s['rss_bytes'] / 2**20:.1f} MiB")
            print(f"channels ignored {result['channels_ignored']:,}, evicted {result['channels_evicted']:,}")
        return 0
    result = bench.replay_throughput(n=args.n, d=args.d, river_n=args.river_n)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    p = result["paacds"]
    print(f"PAACDS replay, d={result['d']}, {result['n']:,} instances, 20% labels: "
          f"{p['instances_per_s']:,.0f} instances/s (accuracy {p['accuracy']:.3f}, asked {p['query_rate']:.1%})")
    if result["river"] is None:
        print("River is not installed (pip install -e '.[dev]'): no comparison.")
    else:
        r = result["river"]
        print(f"River PAClassifier, same stream, first {r['n']:,} instances, every label: "
              f"{r['instances_per_s']:,.0f} instances/s (accuracy {r['accuracy']:.3f})")
        a = result["river_from_array"]
        print(f"River again with the array rows turned into dicts inside the timing: {a['instances_per_s']:,.0f} instances/s")
        print(f"ratio {result['ratio']:,.1f}x (River's learner alone), {result['ratio_from_array']:,.1f}x (River replaying the array)")
    return 0


# -- warmup --------------------------------------------------------------------


def cmd_warmup(args) -> int:
    import dataclasses
    import os

    from firmware_bridge.config import load_config
    from firmware_bridge.warmup import warm_up

    config, errors = load_config(args.config)
    if errors:
        raise CliError("the configuration has errors:\n  " + "\n  ".join(errors))
    if not os.environ.get("NUMBA_CACHE_DIR") and not args.json:
        print("edgelearn warmup: NUMBA_CACHE_DIR is not set: the kernels are cached beside the "
              "package (or in ~/.cache). The systemd unit sets NUMBA_CACHE_DIR=/var/cache/edgelearn/numba; "
              "warm that one up.", file=sys.stderr)
    reports = []
    for kind in args.kind or [config.learner_kind]:
        if kind != config.learner_kind:
            # Another kind than the file's runs with that kind's defaults.
            config, errors = load_config(args.config, {"learner.kind": kind, "learner.params": {}})
            if errors:
                raise CliError("the configuration has errors:\n  " + "\n  ".join(errors))
        report = warm_up(config)
        reports.append(report)
        if not args.json:
            print(report.line(), flush=True)
    if args.json:
        json.dump([dataclasses.asdict(r) for r in reports], sys.stdout, indent=2)
        print()
    return 0


# -- gateway -------------------------------------------------------------------


def add_gateway_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``edgelearn gateway`` options to ``parser``; returns it."""
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="gateway configuration (TOML; see configs/gateway.toml, or "
                             "edgelearn config --print-default)")
    parser.add_argument("--broker", metavar="HOST:PORT",
                        help="MQTT broker, overriding [mqtt] host and port")
    parser.add_argument("--state-dir", metavar="DIR",
                        help="checkpoint directory, overriding [checkpoints] directory")
    parser.add_argument("--gateway-id", metavar="ID",
                        help="gateway id, overriding [gateway] id")
    parser.add_argument("--set", action="append", type=_parse_config_setting, default=[],
                        dest="config_set", metavar="SECTION.KEY=VALUE",
                        help="override one key of the file (repeatable; VALUE in TOML "
                             "syntax, else a string), e.g. one instance's share: --set "
                             "topics.data=sensors/a/{stream}/data")
    parser.add_argument("--check-config", action="store_true",
                        help="check the configuration, print every error and exit "
                             "(status 0 if valid, 2 if not)")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="log level (default: INFO)")
    return parser


def _parse_config_setting(text: str) -> tuple[str, object]:
    """``SECTION.KEY=VALUE`` with VALUE a TOML value (``8``, ``true``, ``"x"``,
    ``["a:1"]``); anything that is not one is taken as a string.

    >>> _parse_config_setting("topics.data=sensors/a/{stream}/data")
    ('topics.data', 'sensors/a/{stream}/data')
    >>> _parse_config_setting("gateway.max_streams=8")
    ('gateway.max_streams', 8)
    """
    import tomllib

    key, sep, raw = text.partition("=")
    parts = key.split(".")
    if not sep or len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise argparse.ArgumentTypeError(
            f"--set takes SECTION.KEY=VALUE (e.g. gateway.max_streams=8). Got {text!r}.")
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def _overrides_from_args(args: argparse.Namespace) -> tuple[dict, list[str]]:
    from firmware_bridge.mqtt import parse_broker

    overrides: dict = dict(getattr(args, "config_set", None) or ())
    errors: list[str] = []
    broker = getattr(args, "broker", None)
    if broker is not None:
        try:
            overrides["mqtt.host"], overrides["mqtt.port"] = parse_broker(broker)
        except ValueError as exc:
            errors.append(f"--broker {exc}")
    if getattr(args, "state_dir", None) is not None:
        overrides["checkpoints.directory"] = args.state_dir
    if getattr(args, "gateway_id", None) is not None:
        overrides["gateway.id"] = args.gateway_id
    return overrides, errors


def run_gateway(args: argparse.Namespace) -> int:
    """Run ``edgelearn gateway`` with parsed arguments; return the exit status
    (0 after a clean stop, 1 after a failure, 2 for a bad configuration)."""
    import gc
    import logging
    import signal
    import threading

    from firmware_bridge.config import load_config

    overrides, errors = _overrides_from_args(args)
    config, config_errors = load_config(args.config, overrides)
    errors += config_errors
    if errors:
        for error in errors:
            print(f"edgelearn gateway: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "check_config", False):
        print(f"{args.config}: ok")
        return 0
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=getattr(args, "log_level", "INFO"),
            format="%(levelname)s %(name)s: %(message)s",
        )
    from firmware_bridge.gateway import Gateway

    try:
        gateway = Gateway(config)
    except OSError as exc:
        print(f"edgelearn gateway: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: gateway.request_stop())
    # Everything allocated so far (numba, NumPy, the learners) lives as long as the
    # process: keep it out of the collector's full passes, which would otherwise walk
    # it every time and show up as latency spikes of tens of milliseconds.
    gc.collect()
    gc.freeze()
    return gateway.run()


def _window_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(
            f"The '--window' option must be an int in [1, 1000000]. Got {text!r}.")
    return value


def _seconds_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, 3600]. Got {text!r}.")
    return value


def add_status_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``edgelearn status`` options to ``parser``; returns it."""
    parser.add_argument("--config", metavar="FILE",
                        help="the gateway's configuration: its broker, TLS, credentials, "
                             "topics and id (default: the defaults of configs/gateway.toml)")
    parser.add_argument("--broker", metavar="HOST:PORT",
                        help="MQTT broker, overriding [mqtt] host and port")
    parser.add_argument("--gateway-id", metavar="ID",
                        help="gateway id, overriding [gateway] id")
    parser.add_argument("--username", metavar="USER",
                        help="MQTT user allowed to read the status topic, overriding "
                             "[mqtt] username (with the example ACL: dashboard)")
    parser.add_argument("--password-file", metavar="FILE",
                        help="file holding that user's password, overriding "
                             "[mqtt] password_file")
    parser.add_argument("--timeout", type=_seconds_argument, default=5.0, metavar="SECONDS",
                        help="how long to wait for the status (default: 5)")
    parser.add_argument("--json", action="store_true", help="print the whole status as JSON")
    return parser


def _print_status(status: dict) -> None:
    counters = status.get("counters", {})
    memory = status.get("memory", {})
    print(f"gateway {status.get('gateway')}: {status.get('state')}, "
          f"{'connected' if status.get('connected') else 'not connected'}, "
          f"up {status.get('uptime_s', 0):,.0f} s, pid {status.get('pid')}")
    print(f"messages {counters.get('messages', 0):,}  predictions "
          f"{counters.get('predictions', 0):,}  label requests "
          f"{counters.get('label_requests', 0):,}  learned {counters.get('learned', 0):,}  "
          f"rejected {counters.get('rejected', 0):,}  memory budget "
          f"{memory.get('total', 0):,} B")
    # The gateway's counter registry says which counters count problems.
    problems = {k: counters[k] for k in status.get("counter_problems", ()) if counters.get(k)}
    if problems:
        print("also: " + ", ".join(f"{k} {v:,}" for k, v in sorted(problems.items())))
    for name, stream in status.get("streams", {}).items():
        sequence = ", ".join(f"{key[4:].replace('_', ' ')} {stream[key]:,}"
                             for key in _SEQUENCE_KEYS if stream.get(key))
        print(f"  {name}: {stream.get('data', 0):,} messages, asked {stream.get('query_rate', 0):.1%}, "
              f"learned {stream.get('learned', 0):,}, channels {stream.get('channels', 0)}"
              + (f"; seq: {sequence}" if sequence else ""))


# A stream's sequence accounting (firmware_bridge.pipeline.SEQUENCE_COUNTERS), shown
# when not zero; spelled out here so that the status command imports no pipeline.
_SEQUENCE_KEYS = ("seq_missing", "seq_duplicates", "seq_out_of_order", "seq_restarts")


def run_status(args: argparse.Namespace) -> int:
    """``edgelearn status``: print the gateway's retained status message; 0 if one was
    read, 1 if none came (no gateway has run on this broker with this id), 2 for a bad
    configuration or an unreachable broker."""
    import msgpack

    from firmware_bridge.config import load_config
    from firmware_bridge.mqtt import read_retained

    overrides, errors = _overrides_from_args(args)
    if getattr(args, "username", None) is not None:
        overrides["mqtt.username"] = args.username
    if getattr(args, "password_file", None) is not None:
        overrides["mqtt.password_file"] = args.password_file
    # Checkpoints are the gateway's business, not this reader's.
    overrides.setdefault("checkpoints.directory", "")
    config, config_errors = load_config(getattr(args, "config", None), overrides)
    errors += config_errors
    if errors:
        for error in errors:
            print(f"edgelearn status: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    topic = config.topics.status(config.gateway_id)
    try:
        payload = read_retained(config.mqtt, topic, args.timeout)
    except ConnectionError as exc:
        print(f"edgelearn status: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if payload is None:
        print(f"edgelearn status: no status on {topic} within {args.timeout:g} s "
              f"(is gateway {config.gateway_id!r} running against "
              f"{config.mqtt.host}:{config.mqtt.port}?)", file=sys.stderr)
        return 1
    try:  # our own status, whatever its size: the wire limits are for sensors
        status = msgpack.unpackb(payload, raw=False)
    except Exception:  # noqa: BLE001 -- anything not msgpack is "no status map"
        status = None
    if not isinstance(status, dict):
        print(f"edgelearn status: error: {topic} holds no status map", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(status, indent=1, sort_keys=True))
    else:
        _print_status(status)
    return 0


def cmd_config(args) -> int:
    """``edgelearn config``: print the documented default configuration, or check a
    file (every error at once, exit 2)."""
    from firmware_bridge.config import load_config, render_default_config

    if args.print_default:
        sys.stdout.write(render_default_config())
        return 0
    if args.check is None:
        raise CliError("give --print-default or --check FILE")
    _, errors = load_config(args.check)
    for error in errors:
        print(f"edgelearn config: error: {error}", file=sys.stderr)
    if errors:
        return EXIT_USAGE
    print(f"{args.check}: ok")
    return 0


def _add_gateway(subparsers) -> None:
    parser = subparsers.add_parser(
        "gateway",
        help="run the MQTT gateway service",
        description="Consume sensor messages over MQTT, predict, ask for labels, learn, checkpoint.",
    )
    add_gateway_arguments(parser)
    parser.set_defaults(func=run_gateway)
    status = subparsers.add_parser(
        "status",
        help="print a gateway's retained status message (counters, streams, memory)",
        description="Read the retained status message a gateway keeps on the broker and "
        "print it: state, connection, counters, rejects by reason, streams, memory budget.",
    )
    add_status_arguments(status)
    status.set_defaults(func=run_status)
    config = subparsers.add_parser(
        "config",
        help="print the documented default gateway configuration, or check one",
        description="--print-default writes configs/gateway.toml (every key, its default "
        "and what it does) to stdout; --check FILE reports every problem of FILE at once "
        "(exit 2), as `edgelearn gateway --check-config` does.",
    )
    what = config.add_mutually_exclusive_group(required=True)
    what.add_argument("--print-default", action="store_true",
                      help="print the default configuration, documented")
    what.add_argument("--check", metavar="FILE", help="check FILE and exit (0 valid, 2 not)")
    config.set_defaults(func=cmd_config)


# -- main ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from edgelearn import DEFAULT_KIND, KINDS

    parser = argparse.ArgumentParser(
        prog="edgelearn",
        description="Online learning for sensor gateways: replay logs, benchmark, run the MQTT gateway.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    replay = sub.add_parser(
        "replay",
        help="replay a recorded msgpack log (or a CSV) through a learner, test-then-train",
        description=(
            "Run recorded sensor messages through the gateway's pipeline offline, as if they "
            "arrived live: every message is predicted before its label is used. A data "
            "message's recorded \"y\" plays the labeller: with --policy from_data (the "
            "default) the learner sees it only when it asks for it. With no SOURCE, the "
            "bundled demo: an office's occupancy sensors (temperature, humidity, light, CO2), "
            "20,560 minutes with failing sensors, through the default learner "
            f"(edgelearn.DEFAULT_KIND, {DEFAULT_KIND!r}) with a 10% label budget. "
            "Logs are decoded with the gateway's own validation and limits, then each stream "
            "whose learner has a jitted loop (paacds, binary, label policy from_data or all) "
            "runs as an array in one jitted loop, with exactly the per-message path's "
            "predictions, queries, metrics and final state; every other learner (pa, pafe, "
            "kelm, ensemble, synthesis_nb, multiclass paacds) runs message by message. The "
            "summary names the path each stream took. With --grid, --jobs, --scheduler or "
            "--csv, every log (file, directory or glob pattern) and parameter set is an "
            "independent task, and the result is a table per stream and overall."
        ),
    )
    replay.add_argument("sources", nargs="*", metavar="SOURCE",
                        help="msgpack log files or directories of them, or one .csv file (default: the bundled demo)")
    replay.add_argument("--learner", default=None, choices=sorted(KINDS),
                        help="learner every stream gets (default: the --config file's, else "
                             "edgelearn.DEFAULT_KIND, %r)" % DEFAULT_KIND)
    replay.add_argument("--config", default=None, metavar="FILE",
                        help="a gateway.toml: its [learner], topics, limits and stream cap, as the gateway would run")
    replay.add_argument("--set", action="append", type=_parse_setting, metavar="KEY=VALUE",
                        help="a learner parameter, e.g. --set C=0.5 --set variant=PAACDS-I (repeatable)")
    replay.add_argument("--label-budget", type=float, default=None, metavar="FRACTION",
                        help=_LazyHelp(lambda: "fraction of labels the learner may ask for (active learners: "
                                       "%s; default 0.1 for %s)" % (", ".join(_active_kinds()),
                                       " and ".join(_active_kinds(single_label=True)))))
    replay.add_argument("--policy", choices=("from_data", "all"), default="from_data",
                        help="from_data: learn a recorded label only when asked (default); all: learn every label")
    replay.add_argument("--label", default=None, metavar="COLUMN",
                        help="CSV only: the label column (default: the last)")
    replay.add_argument("--per-message", action="store_true",
                        help="run every stream message by message, as the live gateway does "
                             "(default: the jitted loop where the learner has one)")
    replay.add_argument("--json", action="store_true", help="print the summary as JSON")
    replay.add_argument("--quiet", action="store_true", help="no progress bar")
    replay.add_argument("--plot", default=None, metavar="FILE.png",
                        help="draw per stream the rolling accuracy, labels asked against the budget "
                             "and the channels present over the readings (needs matplotlib: "
                             "pip install 'edgelearn[plot]')")
    replay.add_argument("--curve", default=None, metavar="FILE.csv",
                        help="write the same series, one row per reading (no extra needed)")
    replay.add_argument("--window", type=_window_argument, default=500, metavar="N",
                        help="readings of the rolling accuracy (default 500)")
    _add_fanout_arguments(replay)
    replay.set_defaults(func=cmd_replay)

    tune_parser = sub.add_parser(
        "tune",
        help="search a learner's parameters on recorded logs; the winner as a [learner] section",
        description=(
            "Replay recorded msgpack logs with every parameter set of a grid (--grid) or a "
            "random search (--random N --range ...), test-then-train: the recorded label is "
            "learned only when the learner asks for it, at the label budget --label-budget. "
            "Prints the parameter sets ranked by --metric, pooled over every stream, with the "
            "query rate each realized, and the winner's [learner] section for gateway.toml. "
            "Each finished replay is appended to --results; run the same command again to "
            "resume an interrupted search. Tasks run on --jobs local processes or a Dask "
            "cluster (--scheduler)."
        ),
    )
    tune_parser.add_argument("sources", nargs="*", metavar="SOURCE",
                             help="msgpack logs, directories or glob patterns (default: the bundled demo)")
    tune_parser.add_argument("--learner", default="paacds", choices=sorted(KINDS), help="default paacds")
    tune_parser.add_argument("--set", action="append", type=_parse_setting, metavar="KEY=VALUE",
                             help="a parameter every set shares (repeatable)")
    tune_parser.add_argument("--random", type=int, default=0, metavar="N",
                             help="draw N parameter sets from --range (and --grid choices)")
    tune_parser.add_argument("--range", action="append", type=_parse_range, metavar="KEY=LOW:HIGH[:log]",
                             help="where --random draws a float parameter (repeatable)")
    tune_parser.add_argument("--seed", type=int, default=0, help="seed of the random search")
    tune_parser.add_argument("--metric", choices=("accuracy", "f1"), default="accuracy",
                             help="what ranks the sets (default accuracy)")
    tune_parser.add_argument("--label-budget", type=float, default=None, metavar="FRACTION",
                             help="target_query_rate of an active learner (paacds default 0.1)")
    tune_parser.add_argument("--results", default="tune-results.jsonl", metavar="FILE",
                             help="finished replays, one JSON line each; resumes from it (default tune-results.jsonl)")
    tune_parser.add_argument("--top", type=int, default=20, help="rows of the ranked table (default 20)")
    tune_parser.add_argument("--write", default=None, metavar="FILE", help="write the winning [learner] section")
    tune_parser.add_argument("--json", action="store_true", help="print the ranking as JSON")
    tune_parser.add_argument("--quiet", action="store_true", help="no progress lines")
    _add_fanout_arguments(tune_parser)
    tune_parser.set_defaults(func=cmd_tune)

    bench = sub.add_parser(
        "bench",
        help="measure replay throughput against River, or memory over a long stream",
        description=(
            "Throughput: PAACDS's jitted replay over N synthetic instances with D channels "
            "(capricious: each instance loses up to half its channels), 20%% labels, beside "
            "River's PAClassifier on the first --river-n instances of the same stream. "
            "--memory: PAACDS's dict path over N instances carrying --names distinct "
            "channel names, sampling memory_bytes() and the process RSS."
        ),
    )
    bench.add_argument("--n", type=int, default=1_000_000, help="instances (default 1,000,000)")
    bench.add_argument("--d", type=int, default=64, help="channels (default 64)")
    bench.add_argument("--river-n", type=int, default=200_000, help="instances River runs (default 200,000)")
    bench.add_argument("--memory", action="store_true", help="measure memory instead of throughput")
    bench.add_argument("--names", type=int, default=100_000, help="--memory: distinct channel names (default 100,000)")
    bench.add_argument("--json", action="store_true", help="print the result as JSON")
    bench.set_defaults(func=cmd_bench)

    warmup = sub.add_parser(
        "warmup",
        help="compile the gateway's kernels into the Numba cache before the service first starts",
        description=(
            "Run the gateway's per-message path (the --config file's learner, topics and "
            "limits) on a short synthetic stream, so that Numba compiles every kernel it "
            "calls and writes it to its cache (NUMBA_CACHE_DIR). Run it at install with the "
            "environment of the systemd unit, whose first start would otherwise compile "
            "while the watchdog waits. Prints, per learner kind, the kernels compiled and "
            "those loaded from the cache (a second run compiles none)."
        ),
    )
    warmup.add_argument("--config", default=None, metavar="FILE",
                        help="the gateway.toml the service runs (default: the built-in defaults, learner paacds)")
    warmup.add_argument("--kind", action="append", choices=sorted(KINDS), metavar="KIND",
                        help=f"warm this learner kind instead of the config's (repeatable; one of {', '.join(sorted(KINDS))})")
    warmup.add_argument("--json", action="store_true", help="print the reports as JSON")
    warmup.set_defaults(func=cmd_warmup)

    _add_gateway(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"edgelearn {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
