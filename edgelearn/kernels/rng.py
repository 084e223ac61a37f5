"""A tiny seeded generator whose whole state is one uint64 in an array.

Why not ``numpy.random``: a learner must own its generator, checkpoint it
exactly, and draw the same numbers from Python (the dict path) and from a
jitted loop (``edgelearn.replay``).  SplitMix64 (Steele, Lea & Flood 2014)
passes BigCrush, needs one word of state and is three multiplies per draw.
"""

import numpy as np

from ._jit import jit, jit_without_refcounts

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV_2_53 = 1.0 / 9007199254740992.0


def new_state(seed):
    """Return a fresh generator state for an integer seed."""
    state = np.zeros(1, dtype=np.uint64)
    state[0] = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF)
    return state


@jit_without_refcounts
def next_uint64(state):
    state[0] += _GOLDEN
    z = state[0]
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@jit_without_refcounts
def next_double(state):
    """A float64 uniform on [0, 1) with 53 random bits."""
    return np.float64(next_uint64(state) >> _S11) * _INV_2_53
