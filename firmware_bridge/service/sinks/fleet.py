"""A fleet that learns together: the gateways of a group share what their streams'
learners learned, and a new stream starts from what the group knows.

Opt-in (``[fleet] enabled = true``); the gateway imports this module only then.
Every ``interval_seconds`` the gateway takes a contribution from each of its streams
whose name matches ``streams`` (what each learner learned since its last one,
:mod:`edgelearn.learners.mergeable`), adds them up into one, merges that into its
group model and publishes it, packed and checksummed (:mod:`edgelearn.contributions`),
on ``edgelearn/fleet/{group}/{gateway}`` (QoS 1, not retained): one topic per gateway,
so a broker ACL can let each gateway write only its own. Its first contribution and
every SNAPSHOT_EVERY-th after, and its last at the stop, it also publishes its
*total* (everything its streams learned since its start, never what came from the
group: the sum of its contributions) retained on ``edgelearn/fleet/{group}/{gateway}/total``,
so a gateway that joins late, or lost its group model, hears every gateway's total at
once from the broker. It subscribes to both and keeps, per other gateway, that
gateway's total: a contribution is added to it (an exact delta, numbered right after
what it holds or later), a total replaces it when newer; the group model is its own
total plus the others'. A contribution published while a gateway was away is then
made up for by the sender's next total. One that fails its checks is counted by its reason
(``fleet_rejected_<reason>``), logged once per reason, and ignored. A stream the
gateway meets for the first time, whose name matches, starts from the group model;
a stream keeps its own learner and keeps learning locally. While the broker is away
nothing is taken from the learners (their next contribution holds it all).

The group model, its own total and the others' are saved beside the streams'
checkpoints (``fleet-{group}.ckpt``) at each contribution and at the stop, and read
back at the start.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import time
from typing import Any

from edgelearn.constraints import Boolean, Interval, Text
from edgelearn.learners.registry import kinds_that_can, learner_class
from edgelearn.state import CheckpointError, load_checkpoint, save_checkpoint

from ..settings import ID_TEXT, Section, Setting
from .base import Sink

__all__ = ["SECTION", "FleetSink", "fleet_topic", "total_topic"]

SECTION = Section("""
    A fleet that learns together (docs/fleet.md): the gateways of one group share
    what their streams' learners learned over the broker, and a new stream starts
    from the group's model. Off by default. Needs a learner that can merge
    (active_arow, paacds, pa, arow_regressor).""", {
    "enabled": Setting(Boolean(), "true: share learned models with the other gateways of the group", False),
    "group": Setting(ID_TEXT, "gateways of one group share", "default"),
    "streams": Setting(Text(1, 256), "which streams take part (a glob on the stream name)", "*"),
    "interval_seconds": Setting(Interval(float, 1, None), "how often a gateway publishes its contribution",
                                60.0),
})

#: Where the gateways of a group publish (one topic each) and what the sink hears.
TOPIC = "edgelearn/fleet/{group}/{gateway}"
#: Where each publishes its total, retained (a gateway that joins late hears them all).
TOTAL_TOPIC = TOPIC + "/total"
#: A gateway publishes its total with its first contribution and every this many after:
#: a late joiner misses at most this many contributions of a gateway until its next total.
SNAPSHOT_EVERY = 10
#: The channels (rows) the other gateways' totals may hold together.
_MAX_TOTAL_ROWS = 16 * 4096

logger = logging.getLogger("firmware_bridge.gateway")

#: Gateways whose contribution numbers one gateway keeps.
_MAX_SENDERS = 4096


def fleet_topic(group: str, gateway: str) -> str:
    """The topic gateway ``gateway`` of ``group`` publishes its contributions on."""
    return TOPIC.format(group=group, gateway=gateway)


def total_topic(group: str, gateway: str) -> str:
    """The topic gateway ``gateway`` of ``group`` keeps its total on (retained)."""
    return TOTAL_TOPIC.format(group=group, gateway=gateway)


class FleetSink(Sink):
    """The fleet's side of one gateway (see the module docstring)."""

    name = "fleet"
    handles = frozenset({"tick", "inbound", "status"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        # Imported here, not above: the configuration imports every sink's module
        # for its SECTION, and a gateway with the fleet off loads none of its code.
        from edgelearn import contributions, make_learner

        self.exchange = contributions
        pipeline = host.pipeline
        self.kind = learner_class(pipeline.learner_kind)
        # The kind declares merge: a new learner may not merge yet (ActiveAROW's refits of its
        # first labels are pending) and contribute() skips it until it can.
        if "merge" not in getattr(self.kind, "capabilities", ()):
            raise ValueError("[fleet] enabled needs a learner that can merge "
                             f"({', '.join(kinds_that_can('merge'))}). "
                             f"Got {self.kind.__name__}.")
        # A learner with the gateway's parameters, to tell what a sender could have learned.
        self.bounds = make_learner(pipeline.learner_kind, pipeline.learner_params)
        self.group_name = settings["group"]
        self.pattern = settings["streams"]
        self.interval_s = float(settings["interval_seconds"])
        self.own_topic = fleet_topic(self.group_name, host.gateway_id)
        self.limits = contributions.Limits()
        self._group: dict | None = None
        self._stale = False  # the group model is to be added up again from the totals
        self.own_total: dict | None = None  # the sum of this gateway's contributions
        # Per other gateway: the sum of what was merged of it, the number of its last
        # contribution in it, and whether every one up to that is in it ("exact").
        self.totals: dict[str, dict] = {}
        self._unpublished = 0  # contributions since this gateway's last total
        self._total_published = False
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
        self.taken = registry.counter("fleet_totals_merged", "other gateways' totals taken (newer than held)")
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
        group = self.group
        if group is None or not group["channels"]["names"] or not self._matches(stream):
            return
        learner.load_group(group)
        self.started.inc()

    @property
    def group(self) -> dict | None:
        """The group model: this gateway's total plus every other gateway's."""
        if self._stale:
            totals = [t for t in (self.own_total, *(self.totals[s]["total"] for s in sorted(self.totals)))
                      if t is not None]
            self._group = self.kind.merge(totals) if totals else None
            self._stale = False
        return self._group

    def _matches(self, stream: str) -> bool:
        return fnmatch.fnmatchcase(stream, self.pattern)

    # -- events -------------------------------------------------------------------------

    def subscriptions(self) -> tuple[str, ...]:
        return (fleet_topic(self.group_name, "+"), total_topic(self.group_name, "+"))

    def on_inbound(self, topic: str, payload: bytes) -> None:
        levels = topic.split("/")
        is_total = levels[-1] == "total"
        sender = levels[-2] if is_total else levels[-1]
        if sender == self.host.gateway_id:
            if is_total:
                self._own_total_from_broker(payload)
            return  # its own contribution, merged when it was made
        Rejected = self.exchange.Rejected
        try:
            received = self.exchange.unpack(payload, self.limits, self.kind.__name__, self._structure)
            if received.sender != sender:
                raise Rejected("sender", f"A contribution on {topic!r} must come from {sender!r}. "
                                         f"Got {received.sender!r}.")
            if received.group != self.group_name:
                raise Rejected("group", f"A contribution on {topic!r} must be of group "
                                        f"{self.group_name!r}. Got {received.group!r}.")
            held = self.totals.get(sender)
            if is_total:
                if held is not None and (received.seq < held["seq"]
                                         or (received.seq == held["seq"] and held["exact"])):
                    return  # a retained total again (a reconnection): what it holds is here already
            elif received.seq <= self.last_seq.get(sender, -1):
                raise Rejected("repeated", f"Contribution {received.seq} of {sender!r} was merged already "
                                           f"(last merged: {self.last_seq[sender]}).")
            if sender not in self.last_seq and len(self.last_seq) >= _MAX_SENDERS:
                raise Rejected("channel_flood", f"A group may have at most {_MAX_SENDERS} gateways. "
                                                f"Got one more: {sender!r}.")
            total = self.kind.merge([received.contribution], [received.weight],
                                    group=None if is_total or held is None else held["total"])
            self._check_size(sender, total, Rejected)
            problem = (self.bounds.content_problem(received.contribution, cumulative=False)
                       or self.bounds.content_problem(total))
            if problem:
                raise Rejected("content", f"The total of {sender!r} with this contribution is not what a "
                                          f"learner of this group could learn: {problem}.")
            if is_total:
                self.totals[sender] = {"seq": received.seq, "total": total, "exact": True}
                self._stale = True  # what replaced its old total is not a sum: add up again
            else:
                group = self.kind.merge([received.contribution], [received.weight], group=self.group)
                # A contribution right after the last one keeps the total exact; after a gap
                # (missed while away, or the sender's restart) the next total replaces it.
                exact = held is not None and held["exact"] and received.seq == held["seq"] + 1
                self.totals[sender] = {"seq": received.seq, "total": total, "exact": exact}
                self._group = group
            self._structure = total["structure"]
            self.last_seq[sender] = max(received.seq, self.last_seq.get(sender, -1))
        except Rejected as rejected:
            self._refuse(rejected.reason, str(rejected))
            return
        except (ValueError, TypeError, KeyError) as error:  # labels or structure the group cannot take
            self._refuse("kind", str(error))
            return
        (self.taken if is_total else self.merged).inc()

    def _check_size(self, sender: str, total: dict, Rejected) -> None:
        """Refuse a total that would take the group model over max_channels, or the
        totals held over _MAX_TOTAL_ROWS channels in all (memory)."""
        names = set(total["channels"]["names"])
        group = self.group
        if group is not None:
            names.update(group["channels"]["names"])
        if len(names) > self.limits.max_channels:
            raise Rejected("channel_flood", f"The group model may hold at most {self.limits.max_channels} "
                                            f"channels; this contribution would make it {len(names)}.")
        rows = len(total["channels"]["names"]) + sum(len(t["total"]["channels"]["names"])
                                                     for s, t in self.totals.items() if s != sender)
        if rows > _MAX_TOTAL_ROWS:
            raise Rejected("channel_flood", f"The other gateways' totals may hold at most {_MAX_TOTAL_ROWS} "
                                            f"channels in all; this contribution would make it {rows}.")

    def _own_total_from_broker(self, payload: bytes) -> None:
        """This gateway's retained total, heard back at its start. If it holds none
        (it lost its saved state, or runs without a checkpoints directory) it takes it
        back, so its next total does not replace the group's memory of it with less."""
        if self.own_total is not None:
            return
        try:
            received = self.exchange.unpack(payload, self.limits, self.kind.__name__, self._structure)
            if received.sender != self.host.gateway_id or received.group != self.group_name:
                return
            self.own_total = self.kind.merge([received.contribution], [received.weight])
        except (self.exchange.Rejected, ValueError, TypeError, KeyError):
            return
        self._stale = True

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
        # One structure per group (the learners' parameters are the gateway's): one of
        # another (a stream restored from a checkpoint made with other parameters) stays out.
        structure = self._structure or (contributions[0]["structure"] if contributions else None)
        kept = [c for c in contributions if c["structure"] == structure]
        if len(kept) < len(contributions) and "structure" not in self._logged:
            self._logged.add("structure")
            logger.warning("fleet: %d stream(s) left out of the contribution: their learners' structure is not "
                           "the group's %r", len(contributions) - len(kept), structure)
        contributions = kept
        if not contributions:
            return False
        own = self.kind.merge(contributions)
        self._group = self.kind.merge([own], [1.0], group=self.group)
        self._structure = self._group["structure"]
        self.own_total = self.kind.merge([own], [1.0], group=self.own_total)
        self.seq += 1
        payload = self.exchange.pack(own, self.group_name, self.host.gateway_id, self.seq)
        self.host.publish(self.own_topic, payload, 1, False)
        self.sent.inc()
        self._unpublished += 1
        if not self._total_published or self._unpublished >= SNAPSHOT_EVERY:
            self._publish_total()
        self._save()
        return True

    def _publish_total(self) -> Any:
        if self.own_total is None or not self.host.can_publish:
            return None
        payload = self.exchange.pack(self.own_total, self.group_name, self.host.gateway_id, self.seq)
        info = self.host.publish(total_topic(self.group_name, self.host.gateway_id), payload, 1, True)
        self._unpublished, self._total_published = 0, True
        return info

    def on_status(self, status: dict, state: str) -> Any:
        # At the stop (the last status, before the gateway disconnects) the total is
        # brought up to date on the broker, and the gateway waits for it to be taken.
        if state == "stopped" and self._unpublished:
            return self._publish_total()
        return None

    def close(self) -> None:
        self._save()

    # -- the group model on disk ---------------------------------------------------------

    def _save(self) -> None:
        if self.path is None or self.group is None:
            return
        try:
            save_checkpoint(self.path, {"fleet_group": self.group, "seq": self.seq, "last_seq": self.last_seq,
                                        "own_total": self.own_total, "totals": self.totals})
        except OSError as error:
            logger.warning("fleet group model not saved: %s", error)

    def _load(self) -> None:
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            state, _ = load_checkpoint(self.path)
            self._group = state["fleet_group"]
            self._structure = self._group["structure"]
            self.seq = int(state["seq"])
            self.last_seq = {str(k): int(v) for k, v in state["last_seq"].items()}
            if "totals" in state:
                self.own_total = state["own_total"]
                self.totals = {str(k): {"seq": int(v["seq"]), "total": v["total"], "exact": bool(v["exact"])}
                               for k, v in state["totals"].items()}
            else:
                # Saved before the totals were kept: the group model as it was, held as
                # one gateway's total under a name no topic level can have ("/"), so no
                # message replaces it.
                self.totals = {"/saved": {"seq": 0, "total": self._group, "exact": True}}
        except (CheckpointError, OSError, KeyError, TypeError) as error:
            logger.warning("fleet group model not restored: %s", error)
