"""``edgelearn replay``: recorded msgpack logs (or a CSV file) through the
gateway's pipeline offline, test-then-train, with a summary, curves and a
picture; many logs x a parameter grid go to :mod:`.tuning`'s fan-out."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .common import DEMO_LOG, CliError, Progress, kind_argument, parse_setting, window_argument
from .tuning import add_fanout_arguments, replay_fanout, replay_group


def _resolve_learner(args) -> None:
    """The learner and its parameters: --learner/--set over the --config
    file's [learner] section over the defaults; sets ``args.gateway_config``."""
    args.gateway_config = None
    base: dict = {}
    if args.config is not None:
        from firmware_bridge.service.config import load_config

        config, errors = load_config(args.config)
        if errors:
            raise CliError("the configuration has errors:\n  " + "\n  ".join(errors))
        args.gateway_config = config
        if args.learner is None or args.learner == config.learner_kind:
            args.learner = config.learner_kind
            base = dict(config.learner_params)
    if args.learner is None:
        from edgelearn.learners.registry import default_kind

        try:
            args.learner = default_kind(args.task)
        except ValueError as exc:
            raise CliError(f"--task {args.task}: {exc}") from None
    args.set = list(base.items()) + list(args.set or [])
    if (args.learner in _active_kinds(single_label=True) and args.label_budget is None
            and "target_query_rate" not in dict(args.set)):
        args.label_budget = 0.1


def _active_kinds(single_label: bool = False) -> list[str]:
    """The learner kinds that ask for labels at a rate (``target_query_rate``);
    with ``single_label``, those that serve binary and multiclass streams only (the
    ones ``replay`` gives a 10% budget by default; not a River model, whose task is
    its estimator's)."""
    from edgelearn.learners.registry import kinds, learner_class

    found = [(kind, learner_class(kind)) for kind in kinds()]
    return [kind for kind, cls in found if "label_rate" in cls.capabilities
            and not (single_label and not cls.tasks <= {"binary", "multiclass"})]


class _LazyHelp(str):
    """A help text made when --help prints it: listing the active learner kinds
    imports every learner, which the gateway (same parser) must not do."""

    def __new__(cls, make):
        text = super().__new__(cls, "(made when printed)")
        text.make = make
        return text

    def __mod__(self, params):
        return self.make().replace("%", "%%") % params


def _takes_budget(kind: str) -> bool:
    """Whether ``kind``'s learners ask for labels at a rate (``target_query_rate``)."""
    from edgelearn.learners.registry import learner_class

    try:
        return "label_rate" in learner_class(kind).capabilities
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _learner_params(args) -> dict:
    params = dict(args.set or [])
    if args.label_budget is not None:
        if not _takes_budget(args.learner):
            raise CliError(f"--label-budget needs an active learner ({', '.join(_active_kinds())}, "
                           f"or a river: kind); {args.learner} asks for every label.")
        params["target_query_rate"] = args.label_budget
    return params


def _make_learner(args, params: dict):
    import edgelearn

    try:
        model = edgelearn.make_learner(args.learner, params, task=args.task)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return model


def _replay_csv(path: Path, args, params: dict) -> dict:
    """A CSV file: through the jitted array loop when the learner has one and nothing
    needs the pipeline (a label column, no --curve or --plot), else as the messages a
    gateway would have received, through the pipeline."""
    model = _make_learner(args, params)
    labelled = (args.label or "").lower() != "none"
    if not (labelled and model.can("array_loop") and not (args.curve or args.plot)
            and not args.per_message):
        from firmware_bridge.offline.csv_source import csv_source

        try:
            source = csv_source(path, args.label if labelled else "none")
        except (OSError, ValueError) as exc:
            raise CliError(str(exc)) from None
        summary = _replay_records(source.records, source.rows, "rows", [str(path)], args, params)
        summary["source"] = str(path)
        if source.ignored:
            summary["ignored_columns"] = source.ignored
        return summary
    from edgelearn.datasets import read_csv
    from edgelearn.evaluate import replay

    try:
        data = read_csv(path, label=args.label)
        result = replay(model, data.X, data.y, active=args.policy == "from_data",
                        feature_names=data.feature_names)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
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
        "paths": {path.stem: "jitted array loop"},
        "seconds": result.seconds,
        "messages_per_s": result.instances_per_s,
    }


def _replay_logs(sources: list[Path], args, params: dict) -> dict:
    from firmware_bridge.wire.logfile import iter_logs

    files = []
    for source in sources:
        files.extend(sorted(source.glob("*.msgpack")) if source.is_dir() else [source])
    total_bytes = sum(f.stat().st_size for f in files)
    corrupt: list[str] = []

    def report(error) -> None:
        corrupt.append(str(error))
        print(f"edgelearn replay: {error}", file=sys.stderr)

    records = iter_logs([str(f) for f in files], on_error=report)
    summary = _replay_records(records, total_bytes, "bytes", [str(f) for f in files], args, params)
    summary["corrupt_records"] = corrupt
    return summary


def _replay_records(records, total: int, unit: str, names: list[str], args, params: dict) -> dict:
    """Records (of logs, or a CSV's rows) through the pipeline, with the progress,
    curves, picture and summary; ``total`` is their size in ``unit`` (bytes of logs,
    rows of a CSV)."""
    from firmware_bridge.pipeline import Pipeline

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
    if args.task is not None and pipeline.task != args.task and not (
            args.task in ("binary", "multiclass") and pipeline.task in ("binary", "multiclass")):
        raise CliError(f"--task {args.task}: the learner {args.learner!r} serves {pipeline.task}")
    curves = curve_file = None
    if args.curve or args.plot:
        from firmware_bridge.offline.curves import CurveRecorder

        if args.curve:
            try:
                Path(args.curve).parent.mkdir(parents=True, exist_ok=True)
                curve_file = open(args.curve, "w", newline="", encoding="utf-8")
            except OSError as exc:
                raise CliError(f"--curve: cannot write {args.curve}: {exc.strerror or exc}") from None
        curves = CurveRecorder(pipeline, curve_file, window=args.window)
    from firmware_bridge.offline.replay import replay_records, unchecked_logs

    progress = Progress(total, "messages", not args.quiet)
    position = {"done_before": 0, "current": None}  # bytes of the files already read

    def show(record, count: int) -> None:
        if unit == "rows":
            progress.update(count, count)
            return
        current = position["current"]
        if current is not None and record.offset < current:
            position["done_before"] += current
        position["current"] = record.offset
        progress.update(position["done_before"] + record.offset, count)

    start = time.perf_counter()
    if curves is not None:
        records = _observed(records, curves)
    # the curves read the pipeline after each message: they need the per-message path
    result = replay_records(
        pipeline, records, jit=not args.per_message and curves is None, progress=show,
        per_message_reason="--per-message" if args.per_message
        else "--curve/--plot read every reading's outputs")
    count = result["records"]
    seconds = time.perf_counter() - start
    progress.close()
    pictures = {}
    if curve_file is not None:
        curve_file.close()
        pictures["curve"] = str(args.curve)
    if args.plot:
        from firmware_bridge.offline.plots import plot_curves

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
    unchecked = unchecked_logs(names, pipeline) if unit == "bytes" else []
    for log in unchecked:
        bad = log["undecodable"]
        print(f"edgelearn replay: warning: {log['path']} is a format-1 log (no checksums): "
              f"{sum(bad.values()):,} of {log['records']:,} records undecodable"
              + (f" ({', '.join(f'{k} {v:,}' for k, v in sorted(bad.items()))}; among the "
                 "rejects: damage or messages the gateway rejected live)" if bad else "")
              + "; a damaged record that still decodes (a changed value, name or topic) "
              "cannot be detected in this format", file=sys.stderr)
    status = pipeline.status()
    streams = {}
    for name, s in status["streams"].items():
        streams[name] = {
            "messages": s["data"],
            **{key: s[key] for key, _ in _SCORES if key in s},
            "query_rate": s["query_rate"],
            **({"label_budget": s["label_budget"]} if s.get("label_budget") is not None else {}),
            "labels_used": s["learned"],
            "channels": s["channels"],
            "channels_ignored": s["channels_ignored"],
            "memory_bytes": s["memory_bytes"],
        }
    counters = status["counters"]
    return {
        "source": names,
        "task": pipeline.task,
        "learner": repr(pipeline.learner(pipeline.streams[0])) if pipeline.streams else args.learner,
        "streams": streams,
        "messages": counters["messages"],
        "rejected": counters["rejected"],
        "rejects": {k: v for k, v in counters.items() if v and k not in _NOT_REJECTS and k != "rejected"},
        "paths": result["paths"],
        "unchecked_logs": unchecked,
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


# Prequential scores a stream status may carry (by its task), and how the summary names
# them.
_SCORES = (("accuracy", "accuracy"), ("f1", "F1"), ("hamming_loss", "Hamming loss"),
           ("micro_f1", "micro-F1"), ("mae", "MAE"), ("rmse", "RMSE"),
           ("coverage", "interval coverage"), ("alarms", "alarms"), ("precision", "precision"),
           ("recall", "recall"))


# Counters of the pipeline that count work done, not rejects.
_NOT_REJECTS = {
    "messages", "data", "label_messages", "predictions", "asked", "label_requests", "learned",
    "label_pending", "label_issued", "label_answered",
}


def _shown(value) -> str:
    if value is None:
        return "-"  # nothing scored yet
    return f"{value:,}" if isinstance(value, int) else f"{value:.4f}"


def _print_replay(summary: dict) -> None:
    source = summary["source"]
    print(f"replayed {source if isinstance(source, str) else ', '.join(source)}")
    print(f"learner  {summary['learner']}")
    for name, s in summary["streams"].items():
        scores = "  ".join(f"{label} {_shown(s[key])}" for key, label in _SCORES if key in s)
        print(
            f"stream {name}: {s['messages']:,} messages  {scores}  "
            f"labels used {s['labels_used']:,} ({s['query_rate']:.1%} asked"
            + (f" of a {s['label_budget']:.0%} budget" if s.get("label_budget") else "") + ")  "
            f"channels {s['channels']}  memory {s['memory_bytes']:,} B"
        )
    if summary.get("rejected"):
        detail = ", ".join(f"{k} {v}" for k, v in sorted(summary["rejects"].items()))
        print(f"rejected {summary['rejected']:,} messages ({detail})")
    # one line per path: a kind that cannot take the jitted path says why once
    by_path: dict[str, list[str]] = {}
    for name, path in summary.get("paths", {}).items():
        by_path.setdefault(path, []).append(name)
    for path, names in by_path.items():
        print(f"stream {names[0]} ran {path}" if len(names) == 1
              else f"streams {', '.join(names)} ran {path}")
    for problem in summary.get("corrupt_records", []):
        print(f"corrupt: {problem}")
    print(f"{summary['messages_per_s']:,.0f} messages/s")
    for what, path in summary.get("files", {}).items():
        print(f"{'picture' if what == 'plot' else 'curves '}  {path}")


def cmd_replay(args) -> int:
    from firmware_bridge.offline.memory import reuse_freed_memory

    reuse_freed_memory()  # this process replays and exits: chunks reuse freed pages
    _resolve_learner(args)
    sources = [Path(s) for s in args.sources] or [DEMO_LOG]
    if args.grid or args.csv or replay_group(args) != "all":
        # replays (a file, a folder's files, or all) x a parameter grid, as tasks; the
        # same tasks and results for any --jobs and --scheduler
        return replay_fanout(sources, args, _learner_params(args))
    if args.jobs != 1 or args.scheduler:
        print("edgelearn replay: one replay of every source runs in this process; --jobs and "
              "--scheduler spread replays over processes (--group file, or --grid)", file=sys.stderr)
    missing = [str(s) for s in sources if not s.exists()]
    if missing:
        raise CliError(f"no such file or directory: {', '.join(missing)}")
    params = _learner_params(args)
    csvs = [s for s in sources if s.name.endswith((".csv", ".csv.gz"))]
    if csvs and len(sources) > 1:
        raise CliError("replay takes one CSV file, or any number of msgpack logs and directories, not both.")
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


def add_parser(sub) -> None:
    """Register ``edgelearn replay``."""
    from edgelearn import DEFAULT_KIND, KINDS, TASKS

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
            "whose learner declares a jitted log loop (label policy from_data or all) runs as "
            "an array in one jitted loop, with exactly the per-message path's predictions, "
            "queries, metrics and final state; every other stream runs message by message. A "
            "CSV file runs through the learner's jitted array loop when it has one and "
            "nothing needs the pipeline, else as the messages a gateway would have received "
            "(one stream named after the file). The summary names the path each stream took. "
            "What a replay is follows one rule: all SOURCEs are one replay (their logs in order), "
            "unless --group file (a replay per file) or --group dir (per directory) says "
            "otherwise, or a --grid makes each file and parameter set a task, and then the "
            "result is a table per stream and overall (--csv writes it). --jobs and --scheduler "
            "only choose where the replays run."
        ),
    )
    replay.add_argument("sources", nargs="*", metavar="SOURCE",
                        help="msgpack log files or directories of them, or one .csv file (default: the bundled demo)")
    replay.add_argument("--learner", default=None, type=kind_argument, metavar="KIND",
                        help=_LazyHelp(lambda: "learner every stream gets: one of %s, or "
                                       "river:MODULE.CLASS (a River estimator; pip install river) "
                                       "(default: the --config file's, else the --task's default "
                                       "kind, else edgelearn.DEFAULT_KIND, %r)" % (
                                           ", ".join(KINDS), DEFAULT_KIND)))
    replay.add_argument("--task", default=None, choices=tuple(TASKS),
                        help="the streams' task; without --learner it picks the task's default kind")
    replay.add_argument("--config", default=None, metavar="FILE",
                        help="a gateway.toml: its [learner], topics, limits and stream cap, as the gateway would run")
    replay.add_argument("--set", action="append", type=parse_setting, metavar="KEY=VALUE",
                        help="a learner parameter, e.g. --set C=0.5 --set variant=PAACDS-I (repeatable)")
    replay.add_argument("--label-budget", type=float, default=None, metavar="FRACTION",
                        help=_LazyHelp(lambda: "fraction of labels the learner may ask for (active learners: "
                                       "%s; default 0.1 for %s)" % (", ".join(_active_kinds()),
                                       " and ".join(_active_kinds(single_label=True)))))
    replay.add_argument("--policy", choices=("from_data", "all"), default="from_data",
                        help="from_data: learn a recorded label only when asked (default); all: learn every label")
    replay.add_argument("--label", default=None, metavar="COLUMN",
                        help="CSV only: the label column (default: the last; none: the CSV has no "
                             "label column). A 'timestamp' or 'ts' column is the reading's time "
                             "(ISO 8601 or epoch seconds); an empty cell is a missing channel")
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
    replay.add_argument("--window", type=window_argument, default=500, metavar="N",
                        help="readings of the rolling accuracy (default 500)")
    add_fanout_arguments(replay)
    replay.set_defaults(func=cmd_replay)
