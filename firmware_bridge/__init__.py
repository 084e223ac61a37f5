"""firmware_bridge: everything of edgelearn that touches the outside world, in rooms.

Each folder is a room with one purpose; imports point one way,
``cli -> service | offline -> pipeline -> wire -> edgelearn``, and service and offline
never import each other:

* :mod:`~firmware_bridge.wire`: bytes <-> values (topics, message types, decoding with
  hard limits, encoding, the rules of names and answers, the log file format, their
  kernels); pure;
* :mod:`~firmware_bridge.pipeline`: messages -> learner -> outbound messages; pure (no
  sockets, threads or files);
* :mod:`~firmware_bridge.service`: the gateway (its worker, MQTT, checkpoints, the
  label journal, counters, systemd, warm-up, the configuration) and its output sinks
  (:mod:`~firmware_bridge.service.sinks`);
* :mod:`~firmware_bridge.offline`: replay of recorded logs and CSV files, fan-out,
  tuning, results tables, curves and plots;
* :mod:`~firmware_bridge.cli`: the ``edgelearn`` command (argument parsing only).

The learning library (:mod:`edgelearn`) knows nothing of them. ``python -m
firmware_bridge`` runs the command. Modules of the flat layout that came before the
rooms still import, for one release (:mod:`firmware_bridge.moved`). See
docs/architecture.md and, for the wire format, docs/protocol.md.
"""

from . import moved

moved.install()
