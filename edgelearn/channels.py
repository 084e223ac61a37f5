"""ChannelSpace: channel names to fixed slots, with online standardization.

A stream's channels come and go: a sensor is added, fails, is replaced.  A
learner needs fixed-size arrays, so every stream gets a ChannelSpace that maps
names to at most ``capacity`` slots and never grows past them.
"""

from __future__ import annotations

import math
import numbers
import zlib

import numpy as np

from .constraints import Interval, OneOf, Options, check_params
from .kernels import channels as kernels

_OWNER = "ChannelSpace"
# Value types the fast path of ChannelSpace._lookup takes as they are (bool is not one:
# type(True) is bool).
_PLAIN_NUMBERS = frozenset((float, int))


class ChannelSpace:
    """Map channel names to a fixed number of slots and standardize values.

    Per slot it keeps the name, an observation count, a running mean and
    variance (Welford, or exponentially weighted with ``half_life``) and the
    index of the last instance that carried it.  A value is standardized as
    ``z = clip((x - mean) / sqrt(var + eps), -z_max, z_max)``, with ``z = 0``
    while the slot has fewer than 2 observations (no scale known yet).
    Statistics are updated *before* standardizing, from every instance
    observed, labelled or not.

    When a new name arrives and every slot is taken, the slot unseen for
    longest is recycled if it has been absent for at least ``evict_after``
    instances: its statistics are reset and every listener (the learners'
    weights) is told to forget it.  Otherwise the new channel is ignored and
    counted in ``n_ignored``.  Memory never grows past ``capacity``.

    Parameters
    ----------
    capacity
        Number of slots, fixed for the life of the space.
    evict_after
        How many instances a channel must have been absent before its slot
        may be given to a new channel.
    half_life
        ``None`` for plain running statistics; a number of observations for
        exponentially forgetting ones (for drifting sensors).
    eps
        Added to the variance before the square root.
    z_max
        Standardized values are clipped to ``[-z_max, z_max]``.
    max_name_length
        Longest channel name accepted (in characters); it bounds the memory
        of the name table.

    Memory bound: ``capacity * (8 * 5 + 8 + max_name_length)`` bytes (four statistics
    and the name key per slot, the name table).

    Examples
    --------
    >>> space = ChannelSpace(capacity=2, evict_after=2)
    >>> for x in [{"t": 20.0}, {"t": 22.0, "h": 40.0}, {"h": 41.0}, {"h": 42.0, "co2": 400.0}]:
    ...     slots, z = space.observe(x)
    >>> space.names
    ['co2', 'h']
    >>> space.n_evicted, space.n_ignored
    (1, 0)
    >>> space.observe({"light": 1.0})[0].tolist()  # no slot free, nobody absent long enough
    []
    >>> space.n_ignored
    1
    """

    #: What each parameter may be (see :mod:`edgelearn.constraints`).
    _parameter_constraints = {
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
        "half_life": OneOf(Options(None), Interval(float, 0, None, closed="right")),
        "eps": Interval(float, 0, None),
        "z_max": Interval(float, 0, None, closed="right"),
        "max_name_length": Interval(int, 1, None),
    }

    def __init__(
        self,
        capacity: int = 256,
        evict_after: int = 1000,
        half_life: float | None = None,
        eps: float = 1e-8,
        z_max: float = 5.0,
        max_name_length: int = 64,
    ):
        check_params(_OWNER, {
            "capacity": capacity, "evict_after": evict_after, "half_life": half_life, "eps": eps,
            "z_max": z_max, "max_name_length": max_name_length,
        }, self._parameter_constraints)
        self.capacity = capacity
        self.evict_after = evict_after
        self.half_life = half_life
        self.eps = eps
        self.z_max = z_max
        self.max_name_length = max_name_length

        self._forget = 0.0 if half_life is None else 1.0 - 2.0 ** (-1.0 / half_life)
        self.count = np.zeros(capacity, dtype=np.int64)
        self.mean = np.zeros(capacity, dtype=np.float64)
        self.var = np.zeros(capacity, dtype=np.float64)
        self.last_seen = np.full(capacity, -1, dtype=np.int64)
        #: A number per slot from its channel's name (name_key): learners break
        #: ties by it, so their choices do not depend on first-seen key order.
        self.name_key = np.zeros(capacity, dtype=np.float64)
        self._names: list = [None] * capacity
        self._index: dict = {}
        self.t = 0  # instances observed so far; the next one gets index t
        self.n_assigned = 0
        self.n_ignored = 0
        self.n_evicted = 0
        self._listeners: list = []

    # -- the per-instance path ------------------------------------------------

    def observe(self, x: dict, scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Learn from one instance and return its ``(slots, z)``.

        New names take a slot (or are ignored when none can be had); absent
        and non-finite channels are left out.  With ``scale=False`` the raw
        values come back instead of z.  ``x`` is not modified.
        """
        slots, values = self.claim(x)
        kernels.observe_standardize(
            slots, values, len(slots), self.count, self.mean, self.var, self.last_seen,
            self.t, self._forget, self.eps, self.z_max, scale,
        )
        self.t += 1
        return slots, values

    def claim(self, x: dict) -> tuple[np.ndarray, np.ndarray]:
        """The instance's ``(slots, raw values)``, new names taking slots,
        without touching any statistics.  A learner that fuses observation
        into its own kernel (PAACDS) calls this, then its kernel with this
        space's arrays and ``t``, then :meth:`advance`."""
        slots, values, k = self._lookup(x, claim=True)
        return (slots, values) if k == len(slots) else (slots[:k], values[:k])

    def observe_claimed(self, slots: np.ndarray, values: np.ndarray, scale: bool = True) -> None:
        """The rest of :meth:`observe` after :meth:`claim`: learn from the claimed
        ``(slots, raw values)`` and (if ``scale``) standardize ``values`` in place. A
        learner that acts between the two (ActiveAROW's refit, which must come after a
        claim that recycled a slot, as in its one-call path) calls claim, then this."""
        kernels.observe_standardize(
            slots, values, len(slots), self.count, self.mean, self.var, self.last_seen,
            self.t, self._forget, self.eps, self.z_max, scale,
        )
        self.t += 1

    def advance(self) -> None:
        """Count one observed instance (after a fused kernel observed it)."""
        self.t += 1

    def transform(self, x: dict, scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Standardize one instance without learning from it.

        A name the space does not know gets slot -1 and ``z = 0`` (with
        ``scale=False``, its raw value).
        """
        slots, values, k = self._lookup(x, claim=False)
        if scale:
            kernels.standardize(slots, values, k, self.count, self.mean, self.var, self.eps, self.z_max)
        return slots[:k], values[:k]

    def _lookup(self, x: dict, claim: bool):
        if not isinstance(x, dict):
            raise TypeError(f"An instance must be a dict of channel name to number. Got {type(x).__name__}.")
        n = len(x)
        # The steady state of a sensor stream: every name already has a slot and every
        # value is a finite float or int. Then two C-level passes build the arrays the
        # loop below would (same slots, same values, same order), at a third of its
        # cost; anything else (a new name, NaN, a bool, a str) takes the loop.
        try:
            if _PLAIN_NUMBERS.issuperset(map(type, x.values())) and math.isfinite(
                sum(x.values())
            ):
                slots = np.fromiter(map(self._index.__getitem__, x), np.int32, n)
                return slots, np.fromiter(x.values(), np.float64, n), n
        except (KeyError, OverflowError):
            pass
        slots = np.empty(n, dtype=np.int32)
        values = np.empty(len(x), dtype=np.float64)
        k = 0
        index = self._index
        for name, value in x.items():
            value = _as_float(name, value)
            if not math.isfinite(value):
                continue  # NaN/inf is a missing reading, not a number
            slot = index.get(name)
            if slot is None:
                _check_name(name, self.max_name_length)
                if claim:
                    slot = self._claim(name)
                    if slot < 0:
                        continue
                else:
                    slot = -1
            slots[k] = slot
            values[k] = value
            k += 1
        return slots, values, k

    def _claim(self, name) -> int:
        slot = int(kernels.claim_slot(self.last_seen, self.n_assigned, self.t, self.evict_after))
        if slot < 0:
            self.n_ignored += 1
            return -1
        if slot < self.n_assigned:
            self._evict(slot)
        else:
            self.n_assigned += 1
        self._names[slot] = name
        self._index[name] = slot
        self.name_key[slot] = name_key(name)
        # Seen now, so another new name in this same instance cannot take it.
        self.last_seen[slot] = self.t
        return slot

    def _evict(self, slot: int) -> None:
        del self._index[self._names[slot]]
        self._names[slot] = None
        kernels.reset_slot(slot, self.count, self.mean, self.var, self.last_seen)
        self.n_evicted += 1
        for forget_slot in self._listeners:
            forget_slot(slot)

    # -- bookkeeping ----------------------------------------------------------

    def add_listener(self, forget_slot) -> None:
        """Call ``forget_slot(slot)`` whenever a slot is recycled."""
        self._listeners.append(forget_slot)

    @property
    def names(self) -> list:
        """Names of the assigned slots, in slot order."""
        return [n for n in self._names[: self.n_assigned] if n is not None]

    def slot_of(self, name) -> int:
        """The slot of ``name``, or -1."""
        return self._index.get(name, -1)

    def name_of(self, slot: int):
        return self._names[slot]

    def column_map(self, columns: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What a jitted loop over an array needs to claim and evict slots itself
        (``edgelearn.replay``, the gateway's jitted batches and log replay): the slot
        of each column (-1: none yet), the column of each slot (-1: none), a flag per
        slot the loop sets when it reassigns one, and the space's counters
        ``[t, n_assigned, n_ignored, n_evicted]``. Hand all four back to
        :meth:`take_column_map` after the loop."""
        col_slot = np.array([self.slot_of(name) for name in columns], dtype=np.int64)
        slot_col = np.full(self.capacity, -1, dtype=np.int64)
        held = col_slot >= 0
        slot_col[col_slot[held]] = np.flatnonzero(held)
        changed = np.zeros(self.capacity, dtype=np.int8)
        counters = np.array([self.t, self.n_assigned, self.n_ignored, self.n_evicted], dtype=np.int64)
        return col_slot, slot_col, changed, counters

    def take_column_map(self, columns: list, slot_col: np.ndarray, changed: np.ndarray,
                        counters: np.ndarray) -> None:
        """Take back what the loop did with :meth:`column_map`'s arrays: its counters,
        and the names of the slots it (re)assigned."""
        self.t, self.n_assigned, self.n_ignored, self.n_evicted = (int(v) for v in counters)
        self._assign_names({int(s): columns[slot_col[s]] for s in np.flatnonzero(changed)})

    def _assign_names(self, slot_names: dict) -> None:
        # The outcome of a jitted loop that claimed and evicted slots itself.
        for slot, name in slot_names.items():
            old = self._names[slot]
            if old is not None and self._index.get(old) == slot:
                del self._index[old]
            self._names[slot] = name
            self._index[name] = slot
            self.name_key[slot] = name_key(name)

    @property
    def forget(self) -> float:
        """The per-observation forgetting factor of the channel statistics
        (0 without ``half_life``); kernels take it as a scalar."""
        return self._forget

    def memory_bytes(self) -> int:
        """The space's fixed budget: its arrays plus the longest names allowed."""
        arrays = (self.count.nbytes + self.mean.nbytes + self.var.nbytes + self.last_seen.nbytes
                  + self.name_key.nbytes)
        return int(arrays + self.capacity * (8 + self.max_name_length))

    def get_params(self) -> dict:
        return {
            "capacity": self.capacity,
            "evict_after": self.evict_after,
            "half_life": self.half_life,
            "eps": self.eps,
            "z_max": self.z_max,
            "max_name_length": self.max_name_length,
        }

    def to_state(self) -> dict:
        return {
            "params": self.get_params(),
            "names": list(self._names),
            "count": self.count.copy(),
            "mean": self.mean.copy(),
            "var": self.var.copy(),
            "last_seen": self.last_seen.copy(),
            "t": self.t,
            "n_assigned": self.n_assigned,
            "n_ignored": self.n_ignored,
            "n_evicted": self.n_evicted,
        }

    @classmethod
    def from_state(cls, state: dict) -> "ChannelSpace":
        space = cls(**state["params"])
        for key in ("count", "mean", "var", "last_seen"):
            array = np.asarray(state[key])
            target = getattr(space, key)
            if array.shape != target.shape:
                raise ValueError(
                    f"ChannelSpace state has '{key}' of shape {array.shape}; "
                    f"capacity {space.capacity} needs {target.shape}."
                )
            target[:] = array
        space._names = list(state["names"])
        space._index = {n: s for s, n in enumerate(space._names) if n is not None}
        for name, slot in space._index.items():
            space.name_key[slot] = name_key(name)
        space.t = int(state["t"])
        space.n_assigned = int(state["n_assigned"])
        space.n_ignored = int(state["n_ignored"])
        space.n_evicted = int(state["n_evicted"])
        return space

    def __repr__(self) -> str:
        return f"ChannelSpace(capacity={self.capacity}, assigned={self.n_assigned}, ignored={self.n_ignored})"


def name_key(name) -> float:
    """A number that stands for a channel name, the same in every run and
    process (CRC-32 of its repr, so 1 and "1" differ).

    >>> name_key("temperature") == name_key("temperature"), name_key(1) == name_key("1")
    (True, False)
    """
    return float(zlib.crc32(repr(name).encode("utf-8", "surrogatepass")))


def _as_float(name, value) -> float:
    if type(value) is float:  # what the gateway hands over: skip the slower ABC check
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"Channel {name!r} must be a number. Got {type(value).__name__} {value!r}.")


def _check_name(name, max_length: int) -> None:
    if isinstance(name, str):
        if len(name) > max_length:
            raise ValueError(
                f"Channel names must be at most {max_length} characters. Got {len(name)}: {name[:20]!r}..."
            )
    elif not isinstance(name, int) or isinstance(name, bool):
        raise TypeError(f"A channel name must be a str or an int. Got {type(name).__name__} {name!r}.")
