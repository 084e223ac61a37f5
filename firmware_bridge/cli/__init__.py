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

One module per job: :mod:`.replay`, :mod:`.tuning` (``tune`` and the fan-out
``replay`` shares with it), :mod:`.bench` (``bench`` and ``warmup``),
:mod:`.service` (``gateway``, ``status``, ``config``); :mod:`.common` holds what
they share. Each module registers its commands; none imports a learner, the
evaluation stack or an optional extra before its command runs, because the
gateway service starts through this same parser.
"""

from __future__ import annotations

import argparse
import gc
import sys

from . import bench, replay, service, tuning
from .common import DEMO_LOG, EXIT_USAGE, CliError
from .service import add_gateway_arguments, run_gateway, run_status

__all__ = ["DEMO_LOG", "CliError", "add_gateway_arguments", "build_parser", "main", "run_gateway", "run_status"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgelearn",
        description="Online learning for sensor gateways: replay logs, benchmark, run the MQTT gateway.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    replay.add_parser(sub)
    tuning.add_parser(sub)
    bench.add_parser(sub)
    service.add_parser(sub)
    return parser


def main(argv=None) -> int:
    # Start-up makes a few hundred thousand objects that live as long as the process
    # (numba's and the learners' modules): the collector traversed them again and again
    # while they were made, a sixth of `edgelearn replay`'s start-up CPU time (perf:
    # gc_collect_main). Collect nothing until the command is parsed, then set them
    # apart (gc.freeze) so that no later collection traverses them.
    gc.disable()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    finally:
        gc.freeze()
        gc.enable()
    try:
        return args.func(args)
    except CliError as exc:
        print(f"edgelearn {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
