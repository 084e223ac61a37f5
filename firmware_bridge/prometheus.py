"""A Prometheus scrape endpoint for the gateway's counters (opt-in).

``[prometheus] enabled = true`` makes the gateway import this module and serve
``http://HOST:PORT/metrics`` (loopback by default) in Prometheus' text exposition
format, version 0.0.4. It needs nothing beyond the standard library: the worker thread
renders the page from the :class:`~firmware_bridge.counters.CounterRegistry` and the
pipeline's per-stream status at most once a second (:meth:`MetricsServer.update`), and
a small HTTP server thread hands out the latest page, so a scrape never touches the
pipeline and the per-message path never waits for a scrape.

Metrics (every one carries ``gateway="<id>"``):

* every counter of the status message as ``edgelearn_<name>`` (rejects by reason,
  predictions, labels asked and learned, label table, connections, checkpoints, ...;
  ``label_pending`` and ``outgoing_pending`` are gauges);
* per stream, labelled ``stream="<id>"`` (at most ``max_streams`` streams, so the label
  set is bounded): ``edgelearn_stream_messages``, ``_asked``, ``_label_requests``,
  ``_learned``, ``_unusable_labels`` (counters), ``edgelearn_stream_accuracy``,
  ``_query_rate``, ``_channels``, ``_memory_bytes`` (gauges);
* ``edgelearn_memory_bytes{part=...}``, ``edgelearn_connected``,
  ``edgelearn_uptime_seconds``, ``edgelearn_checkpoint_age_seconds`` (since the last
  checkpoint written, or since the start), ``edgelearn_queue_length``.

>>> page = render_streams({"s1": {"data": 3, "asked": 1, "accuracy": 0.5}}, {"gateway": "gw1"})
>>> print(page.splitlines()[2])
edgelearn_stream_messages{gateway="gw1",stream="s1"} 3
"""

from __future__ import annotations

import http.server
import math
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["MetricsServer", "render_streams", "render_gauges", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (status key, metric suffix, type, help)
_STREAM_METRICS = (
    ("data", "messages", "counter", "readings predicted for the stream"),
    ("asked", "asked", "counter", "readings whose label the learner asked for"),
    ("label_requests", "label_requests", "counter", "label requests published"),
    ("learned", "learned", "counter", "labels learned"),
    ("unusable_labels", "unusable_labels", "counter", "labels the learner could not take"),
    ("accuracy", "accuracy", "gauge", "prequential accuracy over the labels seen (NaN before)"),
    ("query_rate", "query_rate", "gauge", "fraction of readings whose label was asked for"),
    ("channels", "channels", "gauge", "channel slots in use"),
    ("memory_bytes", "memory_bytes", "gauge", "the learner's fixed memory"),
)


def _labels(labels: Mapping[str, str]) -> str:
    def escape(value: Any) -> str:
        return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(value) if isinstance(value, float) else str(int(value))


def render_streams(streams: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str]) -> str:
    """The per-stream families of the exposition, one sample per stream."""
    lines = []
    for key, suffix, kind, doc in _STREAM_METRICS:
        metric = f"edgelearn_stream_{suffix}"
        lines.append(f"# HELP {metric} {doc}")
        lines.append(f"# TYPE {metric} {kind}")
        for stream, status in streams.items():
            if key in status:
                lines.append(f"{metric}{_labels({**labels, 'stream': stream})} "
                             f"{_number(status[key])}")
    return "\n".join(lines) + "\n"


def render_gauges(gauges: Mapping[str, tuple[str, Any, Mapping[str, str] | None]],
                  labels: Mapping[str, str]) -> str:
    """Gauges ``name -> (help, value or {label value: value}, label name)``."""
    lines = []
    for name, (doc, value, label_name) in gauges.items():
        metric = f"edgelearn_{name}"
        lines.append(f"# HELP {metric} {doc}")
        lines.append(f"# TYPE {metric} gauge")
        if isinstance(value, Mapping):
            for part, v in value.items():
                lines.append(f"{metric}{_labels({**labels, label_name: part})} {_number(v)}")
        else:
            lines.append(f"{metric}{_labels(labels)} {_number(value)}")
    return "\n".join(lines) + "\n"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 -- http.server's name
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404, "only /metrics is served")
            return
        body = self.server.page
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not news
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    page = b"# no metrics yet\n"


class MetricsServer:
    """An HTTP server thread serving the latest page set with :meth:`update`.

    ``port`` 0 picks a free port (``server.port`` tells which). Raises ``OSError``
    if it cannot listen (a port in use), which the gateway reports at start.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 9464):
        self._server = _Server((host, port), _Handler)
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="edgelearn-metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def update(self, page: str) -> None:
        """Publish a new page (one reference swap: scrapes in flight keep the old)."""
        self._server.page = page.encode("utf-8")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
