"""A Prometheus scrape endpoint for the gateway's counters (opt-in).

``[prometheus] enabled = true`` makes the gateway import this module and serve
``http://HOST:PORT/metrics`` (loopback by default) in Prometheus' text exposition
format, version 0.0.4. It needs nothing beyond the standard library: the worker thread
renders the page from the :class:`~firmware_bridge.service.counters.CounterRegistry` and the
pipeline's per-stream status at most once a second (:meth:`MetricsServer.update`), and
a small HTTP server thread hands out the latest page, so a scrape never touches the
pipeline and the per-message path never waits for a scrape.

Metrics (every one carries ``gateway="<id>"``; a counter's name ends in ``_total``, a
family without samples is left out):

* every counter of the status message as ``edgelearn_<name>_total`` (rejects by reason,
  predictions, labels asked and learned, label table, connections, checkpoints, ...;
  ``label_pending`` and ``outgoing_pending`` are gauges);
* per stream, labelled ``stream="<id>"`` (at most ``max_streams`` streams, so the label
  set is bounded): ``edgelearn_stream_messages_total``, ``_asked_total``,
  ``_label_requests_total``, ``_learned_total``, ``_unusable_labels_total`` (counters),
  ``edgelearn_stream_accuracy``,
  ``_query_rate``, ``_channels``, ``_memory_bytes`` (gauges), and by the stream's task
  ``_mae``, ``_rmse``, ``_interval_coverage`` (regression) or ``_alarms_total``,
  ``_true_alarms_total``, ``_false_alarms_total`` (anomaly) (:data:`STREAM_METRICS`);
* ``edgelearn_memory_bytes{part=...}``, ``edgelearn_connected``,
  ``edgelearn_uptime_seconds``, ``edgelearn_checkpoint_age_seconds`` (since the last
  checkpoint written, or since the start), ``edgelearn_queue_length``.

>>> page = render_streams({"s1": {"data": 3, "asked": 1, "accuracy": 0.5}}, {"gateway": "gw1"})
>>> print(page.splitlines()[2])
edgelearn_stream_messages_total{gateway="gw1",stream="s1"} 3
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from edgelearn.constraints import Boolean, Interval, Text

from ..settings import Section, Setting
from .base import Sink
from .prometheus_text import CONTENT_TYPE, family

__all__ = ["CONTENT_TYPE", "MetricsServer", "PrometheusSink", "SECTION", "render_gauges",
           "render_streams"]

logger = logging.getLogger("firmware_bridge.gateway")

SECTION = Section("""
    A Prometheus scrape endpoint, http://host:port/metrics (see
    docs/integrations.md). Off by default; loopback only unless host says
    otherwise.""", {
    "enabled": Setting(Boolean(), "true: serve /metrics", False),
    "host": Setting(Text(1), 'address to listen on; "0.0.0.0" for every interface',
                    "127.0.0.1"),
    "port": Setting(Interval(int, 1, 65_535), "TCP port (1 to 65535)", 9464),
})

#: Seconds between renderings of the page, at most.
INTERVAL_S = 1.0

#: The per-stream families: (status key, metric suffix, type, help). A stream's status
#: has the keys of its task (edgelearn's classification, regression, anomaly metrics);
#: a family lists the streams that have its key.
STREAM_METRICS = (
    ("data", "messages", "counter", "readings predicted for the stream"),
    ("asked", "asked", "counter", "readings whose label the learner asked for"),
    ("label_requests", "label_requests", "counter", "label requests published"),
    ("learned", "learned", "counter", "labels learned"),
    ("unusable_labels", "unusable_labels", "counter", "labels the learner could not take"),
    ("scored", "scored", "counter", "readings whose answer came with them and was scored"),
    ("accuracy", "accuracy", "gauge", "prequential accuracy over the labels seen (NaN before)"),
    ("f1", "f1", "gauge", "prequential F1 of the positive label (macro F1 when multiclass)"),
    ("hamming_loss", "hamming_loss", "gauge", "a multi-label stream's prequential Hamming loss"),
    ("micro_f1", "micro_f1", "gauge", "a multi-label stream's prequential micro-F1"),
    ("mae", "mae", "gauge", "a regression stream's prequential mean absolute error (NaN before)"),
    ("rmse", "rmse", "gauge", "a regression stream's prequential root mean squared error"),
    ("coverage", "interval_coverage", "gauge",
     "a regression stream's fraction of answers inside the predicted interval"),
    ("alarms", "alarms", "counter", "an anomaly stream's alarms"),
    ("true_alarms", "true_alarms", "counter", "alarms the answers confirmed"),
    ("false_alarms", "false_alarms", "counter", "alarms the answers called normal"),
    ("missed_anomalies", "missed_anomalies", "counter",
     "readings without an alarm the answers called anomalous"),
    ("alarm_rate", "alarm_rate", "gauge", "an anomaly stream's fraction of readings that alarmed"),
    ("precision", "alarm_precision", "gauge", "fraction of judged alarms that were real"),
    ("recall", "alarm_recall", "gauge", "fraction of judged anomalies that alarmed"),
    ("query_rate", "query_rate", "gauge", "fraction of readings whose label was asked for"),
    ("label_budget", "label_budget", "gauge", "the learner's target label rate (NaN: every label)"),
    ("label_rate", "label_rate", "gauge",
     "the learner's realized label rate over its life (checkpoints included)"),
    ("channels", "channels", "gauge", "channel slots in use"),
    ("memory_bytes", "memory_bytes", "gauge", "the learner's fixed memory"),
)


def render_streams(streams: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str]) -> str:
    """The per-stream families of the exposition, one sample per stream."""
    return "".join(
        family(f"edgelearn_stream_{suffix}", kind, doc,
               [({**labels, "stream": stream}, status[key])
                for stream, status in streams.items() if key in status])
        for key, suffix, kind, doc in STREAM_METRICS)


def render_gauges(gauges: Mapping[str, tuple[str, Any, str | None]],
                  labels: Mapping[str, str]) -> str:
    """Gauges ``name -> (help, value or {label value: value}, label name)``."""
    out = []
    for name, (doc, value, label_name) in gauges.items():
        if isinstance(value, Mapping):
            samples = [({**labels, label_name: part}, v) for part, v in value.items()]
        else:
            samples = [(labels, value)]
        out.append(family(f"edgelearn_{name}", "gauge", doc, samples))
    return "".join(out)


def _server_classes():
    """The HTTP server and handler classes, made on first use: http.server (and what it
    imports) loads only in a gateway that serves metrics."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
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

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        page = b"# no metrics yet\n"

    return Server, Handler


class MetricsServer:
    """An HTTP server thread serving the latest page set with :meth:`update`.

    ``port`` 0 picks a free port (``server.port`` tells which). Raises ``OSError``
    if it cannot listen (a port in use), which the gateway reports at start.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 9464):
        server, handler = _server_classes()
        self._server = server((host, port), handler)
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


def metrics_page(host: Any, streams: Mapping[str, Any] | None = None) -> str:
    """Every counter, per-stream figure and gauge of the gateway ``host`` in
    Prometheus' text format."""
    labels = {"gateway": host.gateway_id}
    if streams is None:
        streams = host.pipeline.status()["streams"]
    return (host.registry.exposition("edgelearn_", labels) + render_streams(streams, labels)
            + render_gauges(host.gauges(), labels))


class PrometheusSink(Sink):
    """The scrape endpoint: a page rendered by the worker at most once a second, served
    by a small HTTP thread (a scrape never touches the pipeline)."""

    name = "prometheus"
    handles = frozenset({"tick"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        address, port = settings["host"], settings["port"]
        try:
            self.server = MetricsServer(address, port)
        except OSError as exc:
            raise OSError(f"[prometheus] cannot listen on {address}:{port}: "
                          f"{exc.strerror or exc}") from None
        self._next = -float("inf")

    def start(self) -> None:
        self.server.update(metrics_page(self.host))
        self.server.start()
        logger.info("serving metrics on http://%s:%d/metrics", self.server.host, self.server.port)

    def tick(self, now: float) -> None:
        if now >= self._next:
            self._next = now + INTERVAL_S
            self.server.update(metrics_page(self.host))

    def close(self) -> None:
        self.server.close()
