"""The service's commands: ``edgelearn gateway`` (run it), ``edgelearn status``
(read its retained status from the broker) and ``edgelearn config`` (print the
documented default configuration, or check a file)."""

from __future__ import annotations

import argparse
import json
import sys

from .common import EXIT_USAGE, CliError, seconds_argument


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


def overrides_from_args(args: argparse.Namespace) -> tuple[dict, list[str]]:
    from firmware_bridge.service.mqtt import parse_broker

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

    from firmware_bridge.service.config import load_config

    overrides, errors = overrides_from_args(args)
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
    from firmware_bridge.service.gateway import Gateway

    try:
        gateway = Gateway(config)
    except (OSError, ValueError) as exc:  # a port in use; a sink that cannot run with this learner
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
    parser.add_argument("--timeout", type=seconds_argument, default=5.0, metavar="SECONDS",
                        help="how long to wait for the status (default: 5)")
    parser.add_argument("--json", action="store_true", help="print the whole status as JSON")
    return parser


def print_status(status: dict) -> None:
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

    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.mqtt import read_retained

    overrides, errors = overrides_from_args(args)
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
        print_status(status)
    return 0


def cmd_config(args) -> int:
    """``edgelearn config``: print the documented default configuration, or check a
    file (every error at once, exit 2)."""
    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.config_docs import render_default_config

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


def add_parser(subparsers) -> None:
    """Register ``edgelearn gateway``, ``status`` and ``config``."""
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
