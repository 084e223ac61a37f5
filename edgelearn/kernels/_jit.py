"""The one place where the compilation flags of every kernel are set.

``fastmath`` stays off on purpose: the dict path, the jitted replay and a model
restored from a checkpoint must make bit-identical predictions, and fastmath
lets LLVM reassociate sums differently in different call sites.
"""

import numba

jit = numba.njit(cache=True, nogil=True, error_model="numpy")

#: For the steps a hot loop calls once per row (they allocate nothing and return
#: no array): compiled without numba's reference counting, so a call does not
#: incref and decref each array it is passed (atomic operations: with them the
#: array replay spent a third of its time in NRT_incref/NRT_decref, measured
#: with perf; numba's inline="always" kept them). The arrays stay their callers'.
#: Numba's cache does not key on these flags: after changing them, touch the
#: kernel modules (or clear __pycache__) so their cached code is rebuilt.
jit_without_refcounts = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
