"""The pipeline: messages -> learner -> outbound messages (a room of its own).

Pure: no sockets, no threads, no files. It uses the wire (:mod:`firmware_bridge.wire`)
and the learning library; the service and offline replay use it. One :class:`Pipeline`
object serves both the live gateway (driven by the MQTT worker thread) and offline
replay of recorded logs (driven by a loop over
:func:`firmware_bridge.wire.logfile.iter_logs`). It holds no sockets and no files:
:meth:`Pipeline.handle` takes a topic, a payload and a receive time and returns the
messages to publish, as :class:`Outbound` values.

For every inbound message:

* a data message on ``sensors/{stream}/data`` goes to its stream's learner (created
  on the stream's first message, at most ``max_streams`` streams), which observes it,
  predicts and decides once whether its label is worth asking for
  (``learner.decide_one``). Exactly one prediction message goes out per accepted data
  message. What happens to the label depends on ``label_policy``:

  ``"request"`` (live gateway)
      a ``"y"`` inside the data message is learned directly; otherwise, when the
      learner asks, a label request is issued (the features the learner saw are kept
      in :class:`~firmware_bridge.pipeline.pending.PendingLabels`) and a label request message
      goes out;
  ``"from_data"`` (replay of a log whose data messages carry the true ``"y"``)
      the recorded ``"y"`` plays the oracle: it is learned only when the learner asked
      for it, so replay measures the active learner with its real label budget;
  ``"all"``
      every ``"y"`` is learned (fully supervised baseline).

* a batch ``{"readings": [...]}`` on the data topic is read as its readings one after
  the other, each exactly as a data message; one prediction message
  ``{"predictions": [...]}`` answers the accepted ones, a bad reading is rejected and
  counted alone (``docs/protocol.md``);

* a label answer on ``edgelearn/{stream}/label`` is matched against the pending
  requests; only an answer to a pending, unexpired request of the same stream is
  learned, exactly once, from the features kept at prediction time.

Whenever a data message carries ``"y"``, the prediction made before any learning is
scored against it in the stream's prequential metrics, by its task's rules
(:mod:`firmware_bridge.pipeline.tasks`), so a replay reports accuracy, F1 and query
rate (a regression stream: MAE, RMSE and interval coverage; an anomaly stream: its
alarms and the verdicts on them).

What a reading's prediction carries follows the stream's task (``docs/protocol.md``):
a label and its margin; a regression's number with ``"lower"`` and ``"upper"``; an
anomaly stream's alarm (``"y"``), its score in [0, 1] and the ``"top"`` channels.

Multi-label streams (a learner whose ``task`` is ``"multilabel"``, e.g. ``kelm_multilabel``):

* a label is a *label set*, a map of label name to bool, in a data message's ``"y"``
  and in a label answer; a name it leaves out is missing (not learned, not scored);
  any other label is ``"unusable_label"``;
* predictions carry the predicted label set as ``"y"`` (every label name the stream's
  learner has seen), and ``"score"`` is the margin of its least certain label;
* a label request asks for the whole label set: besides ``"y_hat"`` (the predicted
  set) it carries ``"labels"``, the label names the learner knows, in its order; an
  answer may name others too (new labels, up to the learner's ``max_labels``);
* the stream status reports ``"hamming_loss"`` and ``"micro_f1"`` over the labels the
  truths named (:class:`~edgelearn.metrics.MultiLabelMetrics`) instead of
  ``"accuracy"`` and ``"f1"``.

The per-message path is lean for the common case: a data message (or batch) on the
topic of a stream that exists, whose readings are plain (finite numbers, known-good
channel names, nothing to drop) is decoded once and checked by
:func:`~firmware_bridge.wire.plain_reading`; anything else goes through
:func:`~firmware_bridge.wire.parse_message`, which gives every verdict. Both end in
the same code, and ``tests/test_fast_path.py`` holds them to the same outputs.
A binary stream whose learner has a one-call kernel (the ``"decide_learn"``
capability: PAACDS, ActiveAROW) and whose two labels are settled then predicts,
scores and learns a reading whose label is settled (or absent) in one kernel call
(:mod:`firmware_bridge.pipeline.lean`); ``tests/test_lean_path.py`` holds it to the
per-call path byte for byte. Batch messages of a learner with a jitted batch pass
take :mod:`firmware_bridge.pipeline.batches`, and so do a stream's single readings
handed over together (:meth:`Pipeline.handle_many`, at least
``batches.SINGLES_PASS_MIN`` of them): one decode and one learner pass, each reading
still answered with its own prediction message (``tests/test_jitted_batches.py``).

Nothing a client sends stops the pipeline: every reject is counted by reason
(:meth:`Pipeline.counters`) and logged at most once per ``log_interval_s`` per reason.
Memory is bounded by the construction parameters whatever arrives
(:meth:`Pipeline.memory`). Not thread-safe: one thread drives a pipeline.

>>> import msgpack
>>> from firmware_bridge.wire import encode_data, encode_label
>>> pipeline = Pipeline("pa", {"capacity": 8})
>>> out = pipeline.handle("sensors/s1/data", encode_data(1.0, 0, {"t": 20.5}), 0.0)
>>> [(o.topic, o.qos, o.retain) for o in out]
[('edgelearn/s1/prediction', 1, False), ('edgelearn/s1/label_request', 1, False)]
>>> req = msgpack.unpackb(out[1].payload)["req"]
>>> pipeline.handle("edgelearn/s1/label", encode_label(req, True), 0.0)
[]
>>> c = pipeline.counters()
>>> c["predictions"], c["label_requests"], c["learned"], c["label_answered"]
(1, 1, 1, 1)
>>> pipeline.handle("edgelearn/s1/label", encode_label(req, True), 0.0)
[]
>>> pipeline.counters()["label_duplicate"]
1
"""

from __future__ import annotations

from .core import LABEL_POLICIES, Pipeline, StateMismatch
from .ratelog import RateLimitedLog
from .streams import SEQ_WINDOW, StreamState
from .tally import PIPELINE_REJECTS, REJECT_COUNTERS, SEQUENCE_COUNTERS, Outbound, Tally

__all__ = [
    "LABEL_POLICIES",
    "PIPELINE_REJECTS",
    "REJECT_COUNTERS",
    "SEQUENCE_COUNTERS",
    "SEQ_WINDOW",
    "Outbound",
    "Pipeline",
    "RateLimitedLog",
    "StateMismatch",
    "StreamState",
    "Tally",
]
