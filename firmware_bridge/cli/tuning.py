"""``edgelearn tune``, and what ``edgelearn replay`` shares with it when it
runs many logs x a parameter grid as independent tasks (``--grid``, ``--jobs``,
``--scheduler``, ``--csv``): the grid and range arguments, the task units, the
progress lines and the results table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import DEMO_LOG, CliError, kind_argument, parse_setting


def _parse_grid(text: str) -> tuple[str, list]:
    """``KEY=V1,V2,...``: the values a parameter takes in a grid."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier() or not raw:
        raise argparse.ArgumentTypeError(f"--grid takes KEY=V1,V2,... (e.g. C=0.1,1,10). Got {text!r}.")
    return key, [parse_setting(f"{key}={part}")[1] for part in raw.split(",")]


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
    from firmware_bridge.offline.fanout import expand_logs

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
    from firmware_bridge.offline import results_table

    if args.csv:
        Path(args.csv).write_text(results_table.to_csv(rows), encoding="utf-8")
    if args.json:
        print(results_table.to_json(rows))
    else:
        print(results_table.to_text(rows))
        if args.csv:
            print(f"CSV written to {args.csv}")


def replay_group(args) -> str:
    """How ``edgelearn replay``'s sources become replays (the one rule, in --help):
    ``--group``, else one replay of every source (``all``), or a replay per file with a
    ``--grid``. ``--jobs`` and ``--scheduler`` never change it."""
    return args.group or ("file" if args.grid else "all")


def replay_fanout(sources: list[Path], args, params: dict) -> int:
    """Many logs and a parameter grid as independent tasks; the results table."""
    from firmware_bridge.offline import results_table
    from firmware_bridge.offline.fanout import run_grid, tasks_for
    from firmware_bridge.offline.tune import grid_params

    param_sets = [{**params, **grid} for grid in grid_params(dict(args.grid or []))]
    tasks = tasks_for(_units(sources, replay_group(args)), args.learner, param_sets,
                      label_policy=args.policy, jit=not args.per_message)
    try:
        results = run_grid(tasks, jobs=args.jobs, scheduler=args.scheduler,
                           progress=_fanout_progress(args.quiet or args.json))
    except (ImportError, ValueError, TypeError, OSError) as exc:
        raise CliError(str(exc)) from None
    _print_rows(results_table.table_rows(results), args)
    return 1 if any(r["corrupt_records"] for r in results) else 0


def _single_label_active(kind: str) -> bool:
    """Whether ``kind``'s learners ask for labels at a rate, for binary or multiclass
    streams."""
    import edgelearn

    try:
        learner = edgelearn.make_learner(kind)
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return "label_rate" in learner.capabilities and learner.task in ("binary", "multiclass")


def _nab_windows(sources: list[Path]) -> str:
    """NAB's ``labels/combined_windows.json`` of the corpus the first source is in
    (``NAB/data/DIR/NAME.csv``)."""
    for parent in Path(sources[0]).resolve().parents if sources else ():
        found = parent / "labels" / "combined_windows.json"
        if found.is_file():
            return str(found)
    raise CliError("--metric nab needs NAB's labelled windows: --windows combined_windows.json "
                   "(or sources inside a NAB folder, NAB/data/DIR/NAME.csv).")


def cmd_tune(args) -> int:
    from firmware_bridge.offline import results_table
    from firmware_bridge.offline.tune import (
        METRICS,
        TASK_METRICS,
        grid_params,
        learner_section,
        random_params,
        rank,
        tune,
    )

    if args.learner is None:  # tune's default kind is paacds; --task picks the task's
        from edgelearn.learners.registry import default_kind

        try:
            args.learner = "paacds" if args.task is None else default_kind(args.task)
        except ValueError as exc:
            raise CliError(f"--task {args.task}: {exc}") from None
    if args.metric is None:
        args.metric = TASK_METRICS.get(args.task, "accuracy")
    sources = [Path(s) for s in args.sources] or [DEMO_LOG]
    fixed = dict(args.set or [])
    if args.label_budget is not None:
        fixed["target_query_rate"] = args.label_budget
    elif "target_query_rate" not in fixed and _single_label_active(args.learner):
        fixed["target_query_rate"] = 0.1  # as replay: a 10% budget for an active classifier
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
    windows = csv_label = None
    if args.metric == "nab":
        windows = args.windows or _nab_windows(sources)
        csv_label = "none"  # NAB's series: timestamp,value
    units = _units(sources, args.group or "file")
    print(f"tuning {args.learner}: {len(param_sets)} parameter sets x {len(units)} logs, "
          f"scored by {args.metric} ({METRICS[args.metric]}); results in {args.results}",
          file=sys.stderr)
    try:
        results = tune(units, args.learner, param_sets, results_path=args.results, jobs=args.jobs,
                       scheduler=args.scheduler, progress=_fanout_progress(args.quiet),
                       windows=windows, csv_label=csv_label)
    except KeyboardInterrupt:
        print(f"interrupted; finished tasks are kept in {args.results}: run the same command "
              "again to resume.", file=sys.stderr)
        return 130
    except (ImportError, ValueError, TypeError, OSError) as exc:
        raise CliError(str(exc)) from None
    ranked = rank(results, args.metric)
    rows = [{**r, "rank": i + 1, "params": " ".join(f"{k}={v}" for k, v in sorted(r["params"].items())),
             "logs": "(all)", "stream": "(overall)", "path": ""} for i, r in enumerate(ranked)]
    scores = {"mae": ("mae", "rmse", "coverage"), "rmse": ("mae", "rmse", "coverage"),
              "nab": ("nab", "alarms")}.get(args.metric, ("accuracy", "f1"))
    columns = ("rank", "params", "messages", "scored", *scores, "query_rate", "labels_used")
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


def add_fanout_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", action="append", type=_parse_grid, metavar="KEY=V1,V2",
                        help="values a learner parameter takes; every combination is run (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="run logs x parameter sets as N local processes (joblib; default 1)")
    parser.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                        help="run them on an existing Dask cluster (dask.distributed)")
    parser.add_argument("--group", choices=("all", "file", "dir"), default=None,
                        help="how SOURCEs become replays: all (one replay of every log, in order: "
                             "replay's default), file (a replay per file: the default with --grid, "
                             "and tune's), dir (a replay per directory's files). --jobs and "
                             "--scheduler only choose where the replays run: the results are the "
                             "same for any N")
    parser.add_argument("--csv", default=None, metavar="FILE", help="also write the results table as CSV")


def add_parser(sub) -> None:
    """Register ``edgelearn tune``."""
    from edgelearn import TASKS
    from edgelearn.learners.registry import BUILTIN

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
    tune_parser.add_argument("--learner", default=None, type=kind_argument, metavar="KIND",
                             help=f"one of {', '.join(BUILTIN)}, a plug-in's kind, or "
                                  "river:MODULE.CLASS (default paacds, or the --task's default "
                                  "kind)")
    tune_parser.add_argument("--task", default=None, choices=tuple(TASKS),
                             help="the streams' task: picks the default kind and metric")
    tune_parser.add_argument("--set", action="append", type=parse_setting, metavar="KEY=VALUE",
                             help="a parameter every set shares (repeatable)")
    tune_parser.add_argument("--random", type=int, default=0, metavar="N",
                             help="draw N parameter sets from --range (and --grid choices)")
    tune_parser.add_argument("--range", action="append", type=_parse_range, metavar="KEY=LOW:HIGH[:log]",
                             help="where --random draws a float parameter (repeatable)")
    tune_parser.add_argument("--seed", type=int, default=0, help="seed of the random search")
    tune_parser.add_argument("--windows", default=None, metavar="FILE",
                             help="--metric nab: NAB's labelled windows (combined_windows.json; "
                                  "default: the labels/ of the NAB folder the sources are in)")
    tune_parser.add_argument("--metric", choices=("accuracy", "f1", "mae", "rmse", "nab"), default=None,
                             help="what ranks the sets (default accuracy; mae for --task regression, nab for --task anomaly)")
    tune_parser.add_argument("--label-budget", type=float, default=None, metavar="FRACTION",
                             help="target_query_rate of an active learner (default 0.1 for one of "
                                  "binary or multiclass streams)")
    tune_parser.add_argument("--results", default="tune-results.jsonl", metavar="FILE",
                             help="finished replays, one JSON line each; resumes from it (default tune-results.jsonl)")
    tune_parser.add_argument("--top", type=int, default=20, help="rows of the ranked table (default 20)")
    tune_parser.add_argument("--write", default=None, metavar="FILE", help="write the winning [learner] section")
    tune_parser.add_argument("--json", action="store_true", help="print the ranking as JSON")
    tune_parser.add_argument("--quiet", action="store_true", help="no progress lines")
    add_fanout_arguments(tune_parser)
    tune_parser.set_defaults(func=cmd_tune)
