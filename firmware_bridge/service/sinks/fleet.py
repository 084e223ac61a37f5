"""A fleet that learns together: the gateways of a group share what their streams'
learners learned, and a new stream starts from what the group knows.

Opt-in (``[fleet] enabled = true``); the gateway imports this module only then.
Every ``interval_seconds`` the gateway takes a contribution from each of its streams
whose name matches ``streams`` (what each learner learned since its last one,
:mod:`edgelearn.learners.mergeable`), adds them up into one, merges that into its
group model and publishes it, packed and checksummed (:mod:`edgelearn.contributions`),
on ``edgelearn/fleet/{group}/{gateway}`` (QoS 1, not retained): one topic per gateway,
so a broker ACL can let each gateway write only its own. It subscribes to
``edgelearn/fleet/{group}/+`` and merges every other gateway's contribution that passes
its checks into the group model; one that fails is counted by its reason
(``fleet_rejected_<reason>``), logged once per reason, and ignored. A stream the
gateway meets for the first time, whose name matches, starts from the group model;
a stream keeps its own learner and keeps learning locally. While the broker is away
nothing is taken from the learners (their next contribution holds it all).

The group model is saved beside the streams' checkpoints (``fleet-{group}.ckpt``) at
each contribution and at the stop, and read back at the start.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import time
from typing import Any

from edgelearn.constraints import Boolean, Interval, Text
from edgelearn.learners.registry import learner_class
from edgelearn.state import CheckpointError, load_checkpoint, save_checkpoint

from ..settings import ID_TEXT, Section, Setting
from .base import Sink

__all__ = ["SECTION", "FleetSink", "fleet_topic"]

SECTION = Section("""
    A fleet that learns together (docs/fleet.md): the gateways of one group share
    what their streams' learners learned over the broker, and a new stream starts
    from the group's model. Off by default. Needs a learner that can merge
    (active_arow, paacds: binary; pa).""", {
    "enabled": Setting(Boolean(), "true: share learned models with the other gateways of the group", False),
    "group": Setting(ID_TEXT, "gateways of one group share", "default"),
    "streams": Setting(Text(1, 256), "which streams take part (a glob on the stream name)", "*"),
    "interval_seconds": Setting(Interval(float, 1, None), "how often a gateway publishes its contribution",
                                60.0),
})

#: Where the gateways of a group publish (one topic each) and what the sink hears.
TOPIC = "edgelearn/fleet/{group}/{gateway}"

logger = logging.getLogger("firmware_bridge.gateway")

#: Gateways whose contribution numbers one gateway keeps.
_MAX_SENDERS = 4096


def fleet_topic(group: str, gateway: str) -> str:
    """The topic gateway ``gateway`` of ``group`` publishes its contributions on."""
    return TOPIC.format(group=group, gateway=gateway)


class FleetSink(Sink):
    """The fleet's side of one gateway (see the module docstring)."""

    name = "fleet"
    handles = frozenset({"tick", "inbound"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        # Imported here, not above: the configuration imports every sink's module
        # for its SECTION, and a gateway with the fleet off loads none of its code.
        from edgelearn import contributions

        self.exchange = contributions
        pipeline = host.pipeline
        self.kind = learner_class(pipeline.learner_kind)
        if not pipeline.learner_can("merge"):
            raise ValueError(f"[fleet] enabled needs a learner that can merge (active_arow, paacds: binary; pa). "
                             f"Got {self.kind.__name__}.")
        self.group_name = settings["group"]
        self.pattern = settings["streams"]
        self.interval_s = float(settings["interval_seconds"])
        self.own_topic = fleet_topic(self.group_name, host.gateway_id)
        self.limits = contributions.Limits()
        self.group: dict | None = None
        self._structure: dict | None = None
        self._next_at: float | None = None
        self._logged: set[str] = set()
        self.seq = 0  # the number of this gateway's last contribution (kept with the group model)
        self.last_seq: dict[str, int] = {}  # per sender, the last contribution merged
        self._revisions: dict[str, int] = {}  # per stream, its revision at its last contribution
        directory = config.checkpoint_dir
        self.path = os.path.join(directory, f"fleet-{self.group_name}.ckpt") if directory else None
        registry = host.registry
        self.sent = registry.counter("fleet_contributions_sent", "contributions this gateway published")
        self.merged = registry.counter("fleet_contributions_merged", "other gateways' contributions merged")
        self.started = registry.counter("fleet_streams_started", "new streams started from the group model")
        self.rejected = {reason: registry.counter(f"fleet_rejected_{reason}", f"contributions refused: {doc}",
                                                  problem=True)
                         for reason, doc in {**contributions.REASONS, "sender": "a sender other than its topic's gateway",
                                             "group": "another group than the topic's",
                                             "repeated": "one merged already (QoS 1 delivers twice)"}.items()}
        self._load()
        # Numbers go on from the wall clock's milliseconds, so a gateway that lost its
        # saved number (no checkpoints directory) is not taken for a repeat after a restart.
        self.seq = max(self.seq, int(time.time() * 1000))
        pipeline.set_learner_start(self.start_learner)

    # -- the group model ---------------------------------------------------------------

    def start_learner(self, stream: str, learner: Any) -> None:
        """A new stream's learner starts from the group model (if its name matches)."""
        if self.group is None or not self.group["channels"]["names"] or not self._matches(stream):
            return
        learner.load_group(self.group)
        self.started.inc()

    def _matches(self, stream: str) -> bool:
        return fnmatch.fnmatchcase(stream, self.pattern)

    def _merge(self, contributions: list, weights: list) -> None:
        self.group = self.kind.merge(contributions, weights, group=self.group)
        self._structure = self.group["structure"]

    # -- events -------------------------------------------------------------------------

    def subscriptions(self) -> tuple[str, ...]:
        return (fleet_topic(self.group_name, "+"),)

    def on_inbound(self, topic: str, payload: bytes) -> None:
        sender = topic.rpartition("/")[2]
        if sender == self.host.gateway_id:
            return  # its own, merged when it was made
        Rejected = self.exchange.Rejected
        try:
            received = self.exchange.unpack(payload, self.limits, self.kind.__name__, self._structure)
            if received.sender != sender:
                raise Rejected("sender", f"A contribution on {topic!r} must come from {sender!r}. "
                                         f"Got {received.sender!r}.")
            if received.group != self.group_name:
                raise Rejected("group", f"A contribution on {topic!r} must be of group "
                                        f"{self.group_name!r}. Got {received.group!r}.")
            if received.seq <= self.last_seq.get(sender, -1):
                raise Rejected("repeated", f"Contribution {received.seq} of {sender!r} was merged already "
                                           f"(last merged: {self.last_seq[sender]}).")
            if sender not in self.last_seq and len(self.last_seq) >= _MAX_SENDERS:
                raise Rejected("channel_flood", f"A group may have at most {_MAX_SENDERS} gateways. "
                                                f"Got one more: {sender!r}.")
            merged = self.kind.merge([received.contribution], [received.weight], group=self.group)
            if len(merged["channels"]["names"]) > self.limits.max_channels:
                raise Rejected("channel_flood", f"The group model may hold at most {self.limits.max_channels} "
                                                f"channels; this contribution would make it "
                                                f"{len(merged['channels']['names'])}.")
            self.group, self._structure = merged, merged["structure"]
            self.last_seq[sender] = received.seq
        except Rejected as rejected:
            self._refuse(rejected.reason, str(rejected))
            return
        except (ValueError, TypeError, KeyError) as error:  # labels or structure the group cannot take
            self._refuse("kind", str(error))
            return
        self.merged.inc()

    def _refuse(self, reason: str, message: str) -> None:
        self.rejected[reason].inc()
        if reason not in self._logged:  # once per reason: a hostile sender cannot flood the log
            self._logged.add(reason)
            logger.warning("fleet contribution refused (%s): %s", reason, message)

    def tick(self, now: float) -> None:
        if self._next_at is None:
            self._next_at = now + self.interval_s
        if now < self._next_at or not self.host.can_publish:
            return  # the fleet down: the learners keep what they learned for the next one
        self._next_at = now + self.interval_s
        self.contribute()

    def contribute(self) -> bool:
        """Take the matching streams' contributions, merge and publish them; whether
        there was one to publish."""
        pipeline = self.host.pipeline
        contributions = []
        for stream in pipeline.streams:
            learner = pipeline.learner(stream)
            revision = pipeline.revision(stream)
            if self._revisions.get(stream) == revision:
                continue  # nothing observed or learned since its last contribution
            if self._matches(stream) and learner.can("merge") and learner.targets.learned_any:
                self._revisions[stream] = revision
                contributions.append(learner.contribution())
        if not contributions:
            return False
        own = self.kind.merge(contributions)
        self._merge([own], [1.0])
        self.seq += 1
        payload = self.exchange.pack(own, self.group_name, self.host.gateway_id, self.seq)
        self.host.publish(self.own_topic, payload, 1, False)
        self.sent.inc()
        self._save()
        return True

    def close(self) -> None:
        self._save()

    # -- the group model on disk ---------------------------------------------------------

    def _save(self) -> None:
        if self.path is None or self.group is None:
            return
        try:
            save_checkpoint(self.path, {"fleet_group": self.group, "seq": self.seq, "last_seq": self.last_seq})
        except OSError as error:
            logger.warning("fleet group model not saved: %s", error)

    def _load(self) -> None:
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            state, _ = load_checkpoint(self.path)
            self.group = state["fleet_group"]
            self._structure = self.group["structure"]
            self.seq = int(state["seq"])
            self.last_seq = {str(k): int(v) for k, v in state["last_seq"].items()}
        except (CheckpointError, OSError, KeyError, TypeError) as error:
            logger.warning("fleet group model not restored: %s", error)
