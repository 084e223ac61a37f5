"""What the learners with a one-call path share (PAACDS, ActiveAROW): the gateway's
per-message case, a binary learner that knows a reading's label already, predicts,
asks and learns it in ONE jitted kernel call instead of ``decide_one`` then ``learn``.

A learner taking part declares the ``"decide_learn"`` capability and defines
``decide_learn_claimed(slots, values, sign, only_if_asked) -> (margin, asked, learned)``
on claimed ``(slots, raw values)`` (``ChannelSpace.claim``; its kernel standardizes
them in place) and ``zero_margin_positive`` (what its ``decide_one`` predicts for a
margin of exactly 0); :class:`OneCallBinary` gives it
:meth:`~OneCallBinary.decide_and_learn`, and :class:`Fused` and :func:`compiled_entry`
hold its kernel."""

from __future__ import annotations

from .base import Decision


class OneCallBinary:
    """Mixin of a learner with ``decide_learn_claimed`` (see the module docstring)."""

    #: Whether ``decide_one`` predicts the positive label for a margin of exactly 0.
    zero_margin_positive: bool

    def can(self, capability: str) -> bool:
        # The one-call kernel is binary: a multiclass instance of the class cannot.
        if capability == "decide_learn" and not self.binary:
            return False
        return super().can(capability)

    def decide_and_learn(self, x: dict, y=None, only_if_asked: bool = False):
        """:meth:`decide_one` on ``x``, then :meth:`learn` of its label ``y`` unless
        ``y`` is None (or, with ``only_if_asked``, the learner did not ask); returns
        ``(decision, learned)``. The same state, decision and errors as those two
        calls; for a binary learner that knows ``y`` already, one kernel call does
        both (the gateway's per-message path: most readings carry their label)."""
        if y is not None and self.binary:
            sign = self.targets.known_sign(y)
            if sign:
                slots, z = self.channels.claim(x)
                margin, asked, learned = self.decide_learn_claimed(slots, z, sign, only_if_asked)
                positive = margin > 0.0 or (margin == 0.0 and self.zero_margin_positive)
                return Decision(self._label_of(positive), margin, asked, slots, z), learned
        decision = self.decide_one(x)
        learned = y is not None and (decision.ask or not only_if_asked)
        if learned:
            self.learn(decision.slots, decision.z, y)
        return decision, learned


class Fused:
    """What a learner's ``decide_learn_claimed`` builds on its first call: the channel space it
    was built for, the packed model of the learner's arrays (a numba structref that
    refers to them) and the compiled kernel. A copy or a pickle of the learner starts
    without (its own arrays are other ones): built again on its first call, as after
    ``from_state``, which swaps the channel space."""

    __slots__ = ("space", "model", "kernel")

    def __init__(self):
        self.space = self.model = self.kernel = None

    def __deepcopy__(self, memo):
        return Fused()

    def __reduce__(self):
        return Fused, ()


def compiled_entry(dispatcher, args):
    """The compiled function ``dispatcher`` runs for ``args`` (compiled, or loaded from
    numba's cache, now), to be called directly with arguments of the same types:
    numba's dispatcher types every argument of every call, about 0.7 µs of the
    gateway's per-message kernel call. Only for callers whose arguments cannot change
    type (claim's int32 slots and float64 values, the learner's own model): this path
    converts arguments to the types it was compiled for without checking them all."""
    return dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in args))
