"""The topic layout: templates with ``{stream}`` (and ``{gateway}``) per message kind,
and the stream id in a topic."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .limits import DEFAULT_LIMITS, Limits
from .messages import Reject
from .names import name_problem
from .values import show

KINDS = ("data", "prediction", "label_request", "label", "status")


INBOUND_KINDS = ("data", "label")


_STREAM_KINDS = ("data", "prediction", "label_request", "label")


def _placeholder(kind: str) -> str:
    return "{gateway}" if kind == "status" else "{stream}"


@dataclass(frozen=True)
class _Template:
    kind: str
    levels: tuple[str, ...]
    slot: int  # index of the placeholder level


def _parse_template(kind: str, template: Any) -> _Template:
    placeholder = _placeholder(kind)
    where = f"The '{kind}_template' parameter of Topics"
    if not isinstance(template, str) or not template:
        raise ValueError(f"{where} must be a non-empty str. Got {template!r}.")
    for bad, why in (("+", "a wildcard"), ("#", "a wildcard"), ("\0", "NUL")):
        if bad in template:
            raise ValueError(f"{where} must not contain {why} ({bad!r}). Got {template!r}.")
    if template.count(placeholder) != 1 or template.count("{") != 1 or template.count("}") != 1:
        raise ValueError(
            f"{where} must contain {placeholder} exactly once and no other braces. "
            f"Got {template!r}."
        )
    if template.startswith("$"):
        raise ValueError(
            f"{where} must not start with '$' (reserved for the broker). Got {template!r}."
        )
    levels = tuple(template.split("/"))
    if placeholder not in levels:
        raise ValueError(
            f"{where} must have {placeholder} as a whole topic level (between '/'), "
            f"since a '+' filter matches whole levels. Got {template!r}."
        )
    return _Template(kind, levels, levels.index(placeholder))


@dataclass(frozen=True)
class Topics:
    """The MQTT topic layout, built from templates in one place.

    Stream templates hold ``{stream}`` and the status template ``{gateway}``, exactly
    once and as a whole topic level; no wildcards. Templates may share topics only
    where a placeholder meets a literal level: the default ``edgelearn/{stream}/label``
    and ``edgelearn/status/{gateway}`` both fit ``edgelearn/status/label``. Such
    literals become reserved ids (here the stream ``status`` and the gateways
    ``prediction``, ``label_request``, ``label``) so that every topic has one meaning;
    templates that would collide for every id are an error.

    >>> topics = Topics()
    >>> topics.prediction("s1"), topics.status("gw1")
    ('edgelearn/s1/prediction', 'edgelearn/status/gw1')
    >>> topics.inbound_filters()
    ('sensors/+/data', 'edgelearn/+/label')
    >>> topics.parse("edgelearn/s1/label"), topics.parse("sensors/s1/other")
    (('label', 's1'), None)
    >>> sorted(topics.reserved_streams), sorted(topics.reserved_gateways)
    (['status'], ['label', 'label_request', 'prediction'])
    >>> topics.label("status")
    Traceback (most recent call last):
    ...
    ValueError: stream id is reserved: its topics would collide with another template, got 'status'
    >>> Topics(data_template="sensors/+/data")
    Traceback (most recent call last):
    ...
    ValueError: The 'data_template' parameter of Topics must not contain a wildcard ('+'). Got 'sensors/+/data'.
    """

    data_template: str = "sensors/{stream}/data"
    prediction_template: str = "edgelearn/{stream}/prediction"
    label_request_template: str = "edgelearn/{stream}/label_request"
    label_template: str = "edgelearn/{stream}/label"
    status_template: str = "edgelearn/status/{gateway}"
    _templates: tuple[_Template, ...] = field(init=False, repr=False, compare=False)
    reserved_streams: frozenset[str] = field(init=False, repr=False, compare=False)
    reserved_gateways: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        templates = tuple(_parse_template(k, getattr(self, f"{k}_template")) for k in KINDS)
        reserved: dict[str, set[str]] = {"stream": set(), "gateway": set()}
        for i, a in enumerate(templates):
            for b in templates[i + 1 :]:
                if len(a.levels) != len(b.levels) or any(
                    x != y and n not in (a.slot, b.slot)
                    for n, (x, y) in enumerate(zip(a.levels, b.levels))
                ):
                    continue  # no topic fits both
                if a.slot == b.slot:
                    raise ValueError(
                        f"The '{a.kind}_template' and '{b.kind}_template' parameters of "
                        f"Topics must not match the same topics. Got "
                        f"{'/'.join(a.levels)!r} and {'/'.join(b.levels)!r}."
                    )
                reserved[_placeholder(a.kind)[1:-1]].add(b.levels[a.slot])
                reserved[_placeholder(b.kind)[1:-1]].add(a.levels[b.slot])
        object.__setattr__(self, "_templates", templates)
        object.__setattr__(self, "reserved_streams", frozenset(reserved["stream"]))
        object.__setattr__(self, "reserved_gateways", frozenset(reserved["gateway"]))

    def _build(self, kind: str, ident: Any) -> str:
        template = self._templates[KINDS.index(kind)]
        problem = name_problem(ident, 65535)
        if problem is None and ident in self._reserved(kind):
            problem = (
                "is reserved: its topics would collide with another template, "
                f"got {show(ident)}"
            )
        if problem:
            noun = "gateway id" if kind == "status" else "stream id"
            raise ValueError(f"{noun} {problem}")
        levels = list(template.levels)
        levels[template.slot] = ident
        return "/".join(levels)

    def _reserved(self, kind: str) -> frozenset[str]:
        return self.reserved_gateways if kind == "status" else self.reserved_streams

    def data(self, stream: str) -> str:
        """The topic a sensor publishes ``stream``'s readings on."""
        return self._build("data", stream)

    def prediction(self, stream: str) -> str:
        """The topic the gateway publishes ``stream``'s predictions on."""
        return self._build("prediction", stream)

    def label_request(self, stream: str) -> str:
        """The topic the gateway asks for ``stream``'s labels on."""
        return self._build("label_request", stream)

    def label(self, stream: str) -> str:
        """The topic label answers for ``stream`` arrive on."""
        return self._build("label", stream)

    def status(self, gateway: str) -> str:
        """The retained status topic of ``gateway``."""
        return self._build("status", gateway)

    def filter(self, kind: str) -> str:
        """The subscription filter for all topics of ``kind`` (``+`` for the id).

        >>> Topics().filter("status")
        'edgelearn/status/+'
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        template = self._templates[KINDS.index(kind)]
        levels = list(template.levels)
        levels[template.slot] = "+"
        return "/".join(levels)

    def inbound_filters(self) -> tuple[str, ...]:
        """The filters the gateway subscribes to: data, then label answers."""
        return tuple(self.filter(kind) for kind in INBOUND_KINDS)

    def parse(self, topic: str) -> tuple[str, str] | None:
        """``(kind, id)`` for a topic of any kind (``id`` is the stream, or the gateway
        for ``"status"``), or ``None`` if no template fits.

        The id is not checked against the name rules (see :func:`check_stream_id`).
        A topic fits several templates only with a reserved id; then the fit whose id
        is not reserved wins, and if there is none the first fit is returned, so the
        caller reports a reserved id rather than an unknown topic.

        >>> Topics().parse("edgelearn/status/prediction")
        ('prediction', 'status')
        """
        if not isinstance(topic, str):
            return None
        levels = topic.split("/")
        first_fit = None
        for template in self._templates:
            if len(levels) != len(template.levels):
                continue
            if all(
                n == template.slot or level == expected
                for n, (level, expected) in enumerate(zip(levels, template.levels))
            ):
                fit = (template.kind, levels[template.slot])
                if fit[1] not in self._reserved(template.kind):
                    return fit
                first_fit = first_fit or fit
        return first_fit


def check_stream_id(
    stream: Any, limits: Limits = DEFAULT_LIMITS, topics: Topics | None = None
) -> Reject | None:
    """A ``bad_stream_id`` :class:`Reject` if ``stream`` breaks the name rules (or is
    reserved by ``topics``), else ``None``.

    >>> check_stream_id("pump 3")
    Reject(reason='bad_stream_id', detail="stream id must not contain whitespace, got 'pump 3'")
    """
    problem = name_problem(stream, limits.max_stream_id_bytes)
    if problem is None and topics is not None and stream in topics.reserved_streams:
        problem = f"is reserved by the topic layout, got {show(stream)}"
    return None if problem is None else Reject("bad_stream_id", f"stream id {problem}")
