"""The one place where the compilation flags of every kernel are set.

``fastmath`` stays off on purpose: the dict path, the jitted replay and a model
restored from a checkpoint must make bit-identical predictions, and fastmath
lets LLVM reassociate sums differently in different call sites.
"""

import numba

jit = numba.njit(cache=True, nogil=True, error_model="numpy")

#: For the small steps of a hot loop: numba inlines them into its caller before
#: compiling it, so their array arguments are not reference-counted per call.
jit_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
