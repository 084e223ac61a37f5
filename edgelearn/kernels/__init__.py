"""Numba kernels: pure functions on arrays and scalars, no classes.

Every kernel here is compiled with :data:`jit` (one place for the compilation
flags) and has a plain NumPy reference in ``tests/naive.py`` that it must match.
The Python classes in ``edgelearn.learners`` own the arrays and call these.
"""

from ._jit import compiled, jit, sources_digest

__all__ = ["compiled", "jit", "sources_digest"]
