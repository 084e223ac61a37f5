"""A CSV file as the messages a gateway would have received, so ``edgelearn replay
FILE.csv`` runs it through the same pipeline as a recorded log (curves, plots, every
task and learner kind).

How users have their CSVs:

* a header row; one reading per row, in time order;
* a ``timestamp`` or ``ts`` column is the reading's time, not a channel: ISO 8601
  (``2015-09-01 13:45:00``, ``2015-09-01T13:45:00+02:00``; no zone: UTC) or epoch
  seconds; without one, the row number is the time;
* every other numeric column is a channel; an empty cell (or ``?``) is a channel
  missing from that reading; a column that is not numeric is ignored (named in the
  summary);
* the label column (``--label COLUMN``, default the last one; ``--label none``: no
  label column, as an unlabelled sensor log or a NAB series has none) holds each
  reading's answer: a class, a number for a regression stream, 1/0 (or true/false)
  for an anomaly stream; an empty cell is a reading without one.

Column names become channel names by the wire's name rule (whitespace and ``/ + #``
become ``_``); the stream is named after the file.

>>> import os, tempfile
>>> from firmware_bridge.wire import Topics, parse_message
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "pump 3.csv")
...     _ = open(path, "w").write("timestamp,flow rate,temp\\n2015-09-01 13:45:00,1.5,\\n"
...                               "2015-09-01 13:50:00,,20.5\\n")
...     source = csv_source(path, label="none")
...     messages = [parse_message(r.topic, r.payload, Topics()) for r in source.records]
>>> source.stream, source.channels, [(m.ts, m.seq, m.channels, m.y) for m in messages]
('pump_3', ['flow_rate', 'temp'], [(1441115100.0, 0, {'flow_rate': 1.5}, None), (1441115400.0, 1, {'temp': 20.5}, None)])
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..wire import DEFAULT_LIMITS, Limits, Topics, encode_data
from ..wire.logfile import LogRecord
from ..wire.names import name_problem

__all__ = ["TIME_COLUMNS", "CsvSource", "csv_source"]

#: Column names read as the reading's time.
TIME_COLUMNS = ("timestamp", "ts")

_NOT_IN_NAMES = re.compile(r"[\s/+#]+")


class CsvSource(NamedTuple):
    """A CSV file's readings: ``records`` (an iterator of :class:`LogRecord` on the
    stream's data topic), their count, the ``stream``, the ``channels`` (in column
    order), the ``label`` column (or None), the ``time`` column (or None), and the
    columns ignored (not numeric)."""

    records: Iterator[LogRecord]
    rows: int
    stream: str
    channels: list
    label: str | None
    time: str | None
    ignored: list


def _name(text: str, limits: Limits, what: str) -> str:
    name = _NOT_IN_NAMES.sub("_", text.strip()).strip("_") or "_"
    problem = name_problem(name, limits.max_channel_name_bytes)
    if problem:
        raise ValueError(f"{what} {text!r} cannot be a channel name: it {problem}")
    return name


def _times(values: np.ndarray, column: str) -> np.ndarray:
    """A time column as epoch seconds: numbers as they are, else ISO 8601 (UTC if no zone)."""
    out = np.empty(values.shape[0])
    for i, text in enumerate(values.tolist()):
        text = text.strip()
        try:
            out[i] = float(text)
            continue
        except ValueError:
            pass
        try:
            stamp = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"column {column!r}, data row {i + 1}: {text!r} is neither epoch "
                             "seconds nor an ISO 8601 time") from None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.timezone.utc)
        out[i] = stamp.timestamp()
    return out


def _labels(y: np.ndarray) -> list:
    """A label column as the wire carries it, cell by cell: None for an empty cell; the
    others ints if they all are, else numbers if they all are, else as written."""
    if y.dtype.kind != "U":
        return [_answer(v) for v in y.tolist()]
    cells = [_answer(v) for v in y.tolist()]
    given = [c for c in cells if isinstance(c, str)]
    for parse in (int, float):
        try:
            parsed = {c: parse(c) for c in given}
        except ValueError:
            continue
        return [parsed.get(c, c) if isinstance(c, str) else c for c in cells]
    return cells


def _answer(value: Any) -> Any:
    """A label cell as the wire carries it: None for an empty one."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "?"):
            return None
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text
    return value


def csv_source(path, label: str | None = None, topics: Topics | None = None,
               limits: Limits = DEFAULT_LIMITS) -> CsvSource:
    """Read ``path`` (see the module docstring); ``label`` is the label column, None
    for the last, ``"none"`` for no label column. ``ValueError`` names what is wrong."""
    from edgelearn.datasets import read_csv

    path = Path(path)
    unlabelled = label is not None and label.lower() == "none"
    data = read_csv(path, None if unlabelled else label, unlabelled=unlabelled,
                    meta_columns=TIME_COLUMNS)
    topics = Topics() if topics is None else topics
    stem = path.name.removesuffix(".gz").removesuffix(".csv")
    stream = _name(stem, limits, "the file name")
    channels = [_name(c, limits, "the column") for c in data.feature_names]
    if len(set(channels)) < len(channels):
        raise ValueError(f"{path}: columns {data.feature_names} give the same channel name twice "
                         f"({channels})")
    time_column = next((c for c in TIME_COLUMNS if c in data.meta), None)
    n = data.X.shape[0]
    times = (_times(data.meta[time_column], time_column) if time_column is not None
             else np.arange(n, dtype=np.float64))
    topic = topics.data(stream)
    X = data.X
    y = None if unlabelled else _labels(data.y)

    def records() -> Iterator[LogRecord]:
        present = ~np.isnan(X)
        for i in range(n):
            row = {channels[j]: float(X[i, j]) for j in np.flatnonzero(present[i]).tolist()}
            ts = float(times[i])
            yield LogRecord(topic, ts, encode_data(ts, i, row, None if y is None else y[i]))

    ignored = [c for c in data.meta if c != time_column]
    return CsvSource(records(), n, stream, channels, None if unlabelled else data.label_name,
                     time_column, ignored)
