"""Where the modules of the flat layout went, and the aliases that keep old imports working.

Until the rooms (``wire``, ``pipeline``, ``service``, ``offline``, ``cli``) the package
was one flat folder; code written against it (``from firmware_bridge.protocol import
encode_data``, ``firmware_bridge.recorder.LogWriter``) keeps working for one release:
importing an old name gives the new module itself (one module object under two names,
so patching one patches the other). New code imports from the rooms. The aliases go in
the release after the one that moved the modules (see the README's changelog).

>>> import firmware_bridge.protocol, firmware_bridge.wire
>>> firmware_bridge.protocol is firmware_bridge.wire
True
>>> from firmware_bridge.recorder import LogWriter, read_log
>>> LogWriter.__module__, read_log.__module__
('firmware_bridge.service.recorder', 'firmware_bridge.wire.logfile')
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types

#: Old module -> the module that holds its code now.
MOVED: dict[str, str] = {
    "firmware_bridge.protocol": "firmware_bridge.wire",
    "firmware_bridge.fast_decode": "firmware_bridge.wire.bulk_decode",
    "firmware_bridge.kernels": "firmware_bridge.wire.kernels",
    "firmware_bridge.kernels.msgpack_scan": "firmware_bridge.wire.kernels.msgpack_scan",
    "firmware_bridge.kernels.pack_predictions": "firmware_bridge.wire.kernels.pack_predictions",
    "firmware_bridge.kernels.replay_rows": "firmware_bridge.pipeline.kernels.rows",
    "firmware_bridge.labels": "firmware_bridge.pipeline.pending",
    "firmware_bridge.jitted_rows": "firmware_bridge.pipeline.rows",
    "firmware_bridge.bulk_replay": "firmware_bridge.offline.replay",
    "firmware_bridge.fanout": "firmware_bridge.offline.fanout",
    "firmware_bridge.tune": "firmware_bridge.offline.tune",
    "firmware_bridge.results_table": "firmware_bridge.offline.results_table",
    "firmware_bridge.curves": "firmware_bridge.offline.curves",
    "firmware_bridge.plots": "firmware_bridge.offline.plots",
    "firmware_bridge.mqtt": "firmware_bridge.service.mqtt",
    "firmware_bridge.gateway": "firmware_bridge.service.gateway",
    "firmware_bridge.checkpoints": "firmware_bridge.service.checkpoints",
    "firmware_bridge.journal": "firmware_bridge.service.journal",
    "firmware_bridge.counters": "firmware_bridge.service.counters",
    "firmware_bridge.systemd": "firmware_bridge.service.systemd",
    "firmware_bridge.warmup": "firmware_bridge.service.warmup",
    "firmware_bridge.config": "firmware_bridge.service.config",
    "firmware_bridge.homeassistant": "firmware_bridge.service.sinks.homeassistant",
    "firmware_bridge.prometheus": "firmware_bridge.service.sinks.prometheus",
}

#: Old modules whose code went to two rooms: one module of their names, made on import.
SPLIT: dict[str, dict[str, str]] = {
    "firmware_bridge.recorder": {
        "firmware_bridge.wire.logfile": "*",
        "firmware_bridge.service.recorder": "LogWriter",
    },
}


#: Old modules that ran as ``python -m MODULE ARGS``: the ``edgelearn`` command they ran.
RUNNABLE: dict[str, tuple[str, ...]] = {
    "firmware_bridge.gateway": ("gateway",),  # python -m firmware_bridge.gateway --config ...
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds the old names: their module is the new one (or, for a split module, a
    module of the new ones' names); ``python -m`` of a :data:`RUNNABLE` one runs its
    command."""

    def find_spec(self, fullname, path, target=None):
        if fullname in MOVED or fullname in SPLIT:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        if spec.name in MOVED:
            return importlib.import_module(MOVED[spec.name])
        module = types.ModuleType(spec.name, f"Alias of {', '.join(SPLIT[spec.name])} (moved).")
        for source, names in SPLIT[spec.name].items():
            new = importlib.import_module(source)
            chosen = getattr(new, "__all__", []) if names == "*" else names.split(",")
            for name in chosen:
                setattr(module, name, getattr(new, name))
        return module

    def exec_module(self, module):
        pass  # the module is the new one, already executed

    def get_source(self, fullname):
        # What ``python -m`` runs (runpy asks the loader for the module's code).
        command = RUNNABLE.get(fullname)
        if command is None:
            return None
        return ("import sys\nfrom firmware_bridge.cli import main\n"
                f"sys.exit(main([{', '.join(map(repr, command))}, *sys.argv[1:]]))\n")

    def get_code(self, fullname):
        source = self.get_source(fullname)
        return None if source is None else compile(source, f"<{fullname}>", "exec")


def install() -> None:
    """Let the old module names import (once per process)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
