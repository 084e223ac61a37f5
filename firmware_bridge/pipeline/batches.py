"""Batch messages through a learner's jitted batch pass (the ``"batch_pass"``
capability): one jitted decode, one learner pass and one jitted write of the prediction
message per batch (or per run of a stream's queued batches; or of its queued single
readings, each answered with its own message), with exactly what the pipeline gives
reading by reading (``tests/test_jitted_batches.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..wire import prediction_fields
from ..wire.bulk_decode import REC_BATCH, REC_SINGLE, FastDecoder
from ..wire.kernels.pack_predictions import (pack_prediction_maps, pack_prediction_messages,
                                             pack_predictions)
from .kernels.rows import column_order
from .rows import rows_fit, run_pass
from .tally import Outbound

__all__ = ["BatchPath"]


#: Fewest single readings of a stream that share a learner pass (``Pipeline.handle_many``);
#: fewer go one by one: the pass's fixed cost (its NumPy and Python set-up, about as
#: much as a dozen single readings' per-message path) is then more than it saves.
SINGLES_PASS_MIN = 16

# First bytes of the messages a stream's learner pass may take: a map of one key (a
# batch), of three or four (a single reading: ts, seq, ch and maybe y).
_PASS_HEADS = frozenset((b"\x81", b"\x83", b"\x84"))


class BatchPath:
    """The jitted batch path of one pipeline (its decoder made on the first batch)."""

    #: Names and labels the batch decoder may know before it starts over (its tables
    #: are memory the pipeline bounds, whatever names arrive).
    DECODER_ENTRIES = 4096

    def __init__(self, pipeline: Any):
        self.pipeline = pipeline
        self._decoder: FastDecoder | None = None

    def decoder(self) -> FastDecoder:
        """The batch decoder, made anew once its tables hold :data:`DECODER_ENTRIES`."""
        decoder = self._decoder
        if decoder is None or len(decoder.names) + len(decoder.labels) > self.DECODER_ENTRIES:
            pipeline = self.pipeline
            decoder = self._decoder = FastDecoder(pipeline.limits, task=pipeline.task)
        return decoder

    def pack_label(self, y: Any) -> bytes:
        pack = self.pipeline.pack
        try:
            return pack(y)
        except TypeError:  # a NumPy scalar: as prediction_fields gives it
            return pack(prediction_fields(0, 0.0, y, 0.0, False)["y"])

    def packed(self, result: Any, seq: np.ndarray, ts: np.ndarray, labels: list,
               begin: int, end: int) -> bytes:
        """The prediction message of rows ``begin..end`` of a pass: written by the
        jitted packer, or, for a task with its own outputs (an interval, the
        channels behind an alarm), packed as ``Pipeline.answer_batch`` packs it."""
        if result.outputs is None:
            return pack_predictions(seq[begin:end], ts[begin:end], result.label_index[begin:end],
                                    labels, result.margin[begin:end], result.asked[begin:end])
        users = result.labels
        predictions = [
            {"seq": s, "ts": t, "y": users[i], "score": m, "query": q, **extra}
            for s, t, i, m, q, extra in zip(
                seq[begin:end].tolist(), ts[begin:end].tolist(),
                result.label_index[begin:end].tolist(), result.margin[begin:end].tolist(),
                result.asked[begin:end].tolist(), result.outputs[begin:end])]
        return self.pipeline.pack({"predictions": predictions})

    def packed_maps(self, result: Any, seq: np.ndarray, ts: np.ndarray, labels: list) -> list[bytes]:
        """Each row's prediction message as a single reading's (``Pipeline.answer``):
        written by the jitted packer, or, for a task with its own outputs, packed as
        ``Pipeline.predict`` makes its fields."""
        if result.outputs is None:
            return pack_prediction_maps(seq, ts, result.label_index, labels, result.margin,
                                        result.asked)
        users, pack = result.labels, self.pipeline.pack
        return [pack({"seq": s, "ts": t, "y": users[i], "score": m, "query": q, **extra})
                for s, t, i, m, q, extra in zip(
                    seq.tolist(), ts.tolist(), result.label_index.tolist(),
                    result.margin.tolist(), result.asked.tolist(), result.outputs)]

    def one(self, stream: Any, payload: bytes, received_at: float) -> list[Outbound] | None:
        """A batch of plain readings in one jitted decode, one jitted learner pass
        and one jitted write of the prediction message, with what
        ``Pipeline.answer_batch`` gives reading by reading (the label journal
        included); None when the batch needs that path: the decoder is not sure of
        it, or its readings list channels in differing orders."""
        pipeline = self.pipeline
        decoder = self.decoder()
        decoded = decoder.decode_payloads([payload])
        if decoded.kind[0] != REC_BATCH:
            return None
        columns = column_order(decoded.pair_name, decoded.pair_count, len(decoder.names))
        if not columns.shape[0] and decoded.pair_name.shape[0]:
            return None
        if not rows_fit(stream, decoded.label, decoder):
            return None
        seq, ts = decoded.seq, decoded.ts
        arrays = (seq, ts, decoded.label, np.full(seq.shape[0], received_at),
                  decoded.pair_count, decoded.pair_name, decoded.pair_value, decoded.label_number)
        result = run_pass(pipeline, stream, arrays, columns, decoder)
        labels = [] if result.outputs is not None else [self.pack_label(y) for y in result.labels]
        packed = self.packed(result, seq, ts, labels, 0, seq.shape[0])
        pipeline.tally.batches += 1
        return [Outbound(stream.prediction_topic, packed, pipeline.prediction_qos, False),
                *result.requests]

    def handle_many(self, items: Sequence[Sequence]) -> list[list[Outbound]]:
        """``Pipeline.handle_many``: a run of batch messages of known streams
        (interleaved, as sensors send) each stream's in one pass, in their order;
        anything else through ``Pipeline.handle``. Streams share no learner, so only
        the order in which different streams' label requests are issued can differ
        from ``handle`` one by one."""
        handle = self.pipeline.handle
        results: list[list[Outbound]] = []
        i = 0
        while i < len(items):
            streams = []
            end = i
            while end < len(items) and (stream := self.groupable(items[end])) is not None:
                streams.append(stream)
                end += 1
            if end - i < 2:
                item = items[i]
                results.append(handle(item[0], item[1], item[2]))
                i += 1
                continue
            answers: list = [None] * (end - i)
            for stream in dict.fromkeys(streams):
                mine = [k for k, s in enumerate(streams) if s is stream]
                group = [items[i + k] for k in mine]
                got = (self.many(stream, group) if len(group) > 1
                       else [handle(group[0][0], group[0][1], group[0][2])])
                for k, out in zip(mine, got):
                    answers[k] = out
            results += answers
            i = end
        return results

    def groupable(self, item: Sequence) -> Any:
        """The stream of a message that may share a learner pass with the stream's
        others (a batch, or a single reading: a map of one key, or of three or four),
        or None."""
        topic, payload = item[0], item[1]
        if type(payload) is not bytes or payload[:1] not in _PASS_HEADS:
            return None
        pipeline = self.pipeline
        if len(payload) > pipeline.limits.max_payload_bytes:
            return None
        return pipeline.data_stream(topic)

    def many(self, stream: Any, items: list) -> list[list[Outbound]]:
        """Messages of ``stream`` (two or more) in one decode and one learner pass:
        the leading ones the decoder is sure of, all batches (as :meth:`one` would
        take them one after the other) or all single readings (as
        ``Pipeline.handle`` answers each: its own prediction message), whose readings
        list channels in one order; the rest one by one through ``Pipeline.handle``."""
        pipeline = self.pipeline
        if len(items) < SINGLES_PASS_MIN and items[0][1][:1] != b"\x81":
            # A few single readings: a pass's fixed cost is more than what it saves.
            return [pipeline.handle(item[0], item[1], item[2]) for item in items]
        decoder = self.decoder()
        decoded = decoder.decode_payloads([item[1] for item in items])
        kind = int(decoded.kind[0])
        sure = decoded.kind == kind
        taken = int(sure.argmin()) if not sure.all() else len(items)
        if kind != REC_BATCH and kind != REC_SINGLE:
            taken = 0
        columns = np.empty(0, dtype=np.int64)
        if taken >= 2:
            rows = int(decoded.first[taken - 1] + decoded.count[taken - 1])
            pairs = int(decoded.pair_count[:rows].sum())
            columns = column_order(decoded.pair_name[:pairs], decoded.pair_count[:rows],
                                   len(decoder.names))
            if not columns.shape[0] and pairs:
                taken = 0  # the rows disagree on an order: each message alone
            elif not rows_fit(stream, decoded.label[:rows], decoder):
                taken = 0  # labels the metrics may refuse: each message alone
        if taken < 2:
            return [pipeline.handle(item[0], item[1], item[2]) for item in items]
        pipeline.tally.messages += taken
        rows = int(decoded.first[taken - 1] + decoded.count[taken - 1])
        pairs = int(decoded.pair_count[:rows].sum())
        seq, ts = decoded.seq[:rows], decoded.ts[:rows]
        received = [item[2] for item in items[:taken]]
        received = (np.array(received, dtype=np.float64) if kind == REC_SINGLE
                    else np.repeat(received, decoded.count[:taken]))
        arrays = (seq, ts, decoded.label[:rows], received, decoded.pair_count[:rows],
                  decoded.pair_name[:pairs], decoded.pair_value[:pairs], decoded.label_number[:rows])
        result = run_pass(pipeline, stream, arrays, columns, decoder)
        labels = [] if result.outputs is not None else [self.pack_label(y) for y in result.labels]
        # each message's rows: first[m] .. first[m + 1] - 1
        bounds = (np.append(decoded.first[:taken], rows) if kind == REC_BATCH or result.requests
                  else None)
        if kind == REC_SINGLE:
            messages = self.packed_maps(result, seq, ts, labels)
        elif result.outputs is None:  # every message's in one call of the jitted writer
            messages = pack_prediction_messages(seq, ts, result.label_index, labels,
                                                result.margin, result.asked, bounds)
        else:
            messages = [self.packed(result, seq, ts, labels, int(bounds[m]), int(bounds[m + 1]))
                        for m in range(taken)]
        if kind == REC_BATCH:
            pipeline.tally.batches += taken
        topic, qos, requests = stream.prediction_topic, pipeline.prediction_qos, result.requests
        outbound = Outbound._make  # the tuple made at C speed: this runs once per message
        if requests:  # each message's label requests: those of its rows
            request_at = np.searchsorted(np.asarray(result.request_rows, dtype=np.int64),
                                         bounds).tolist()
            out = [[outbound((topic, packed, qos, False)), *requests[request_at[m]:request_at[m + 1]]]
                   for m, packed in enumerate(messages)]
        else:  # the usual case of labelled readings: a prediction each, nothing else
            out = [[outbound((topic, packed, qos, False))] for packed in messages]
        if taken < len(items):
            out += [pipeline.handle(item[0], item[1], item[2]) for item in items[taken:]]
        return out
