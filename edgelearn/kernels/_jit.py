"""The one place where the compilation flags of every kernel are set.

``fastmath`` stays off on purpose: the dict path, the jitted replay and a model
restored from a checkpoint must make bit-identical predictions, and fastmath
lets LLVM reassociate sums differently in different call sites.
"""

import hashlib
import sys
from pathlib import Path

import numba

#: Where the cache of a kernel module's folder records which sources it was made from.
DIGEST_FILE = "edgelearn-kernels.digest"
_KERNELS = Path(__file__).resolve().parent
_checked: set[str] = set()


def sources_digest(folder: Path) -> str:
    """A digest of the ``.py`` sources of ``folder`` and of this package's kernels.

    Numba's cache checks only the file that defines a kernel: a kernel whose callee
    changed in another module (or whose flags changed here) loads its old machine
    code, silently. Every kernel calls this package's kernels and flags, and the
    kernels of one folder call each other, so a change in either is a change."""
    digest = hashlib.sha256()
    # Resolved, as _KERNELS is: the kernels' own folder reached by another spelling
    # ('tools/../edgelearn/kernels') must not count its files twice.
    for source in sorted({*_KERNELS.glob("*.py"), *Path(folder).resolve().glob("*.py")}):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def drop_stale_cache(cache_dir: str, folder: Path) -> bool:
    """Delete the cached kernels in ``cache_dir`` (a folder of Numba's cache) if they
    were made from other sources than ``folder``'s and this package's now, and record
    the sources' digest there. True when it deleted any. A cache that cannot be read
    or written is left to Numba (an installed package's files are all rewritten at
    each upgrade, which Numba does notice)."""
    cache = Path(cache_dir)
    marker = cache / DIGEST_FILE
    digest = sources_digest(folder)
    try:
        if marker.read_text() == digest:
            return False
    except OSError:
        pass
    dropped = False
    try:
        for stale in [*cache.glob("*.nbi"), *cache.glob("*.nbc")]:
            stale.unlink(missing_ok=True)
            dropped = True
        if cache.is_dir():
            marker.write_text(digest)
    except OSError:
        return dropped
    return dropped


def compiled(**options):
    """``numba.njit`` with the flags every kernel shares (and ``options``), through
    :func:`drop_stale_cache` once per cache folder before a kernel of it first loads."""
    decorate = numba.njit(cache=True, nogil=True, error_model="numpy", **options)

    def compile_checked(function):
        dispatcher = decorate(function)
        cache_dir = dispatcher.stats.cache_path
        if cache_dir not in _checked:
            _checked.add(cache_dir)
            drop_stale_cache(cache_dir, Path(sys.modules[function.__module__].__file__).parent)
        return dispatcher

    return compile_checked


jit = compiled()

#: For the steps a hot loop calls once per row (they allocate nothing and return
#: no array): compiled without numba's reference counting, so a call does not
#: incref and decref each array it is passed (atomic operations: with them the
#: array replay spent a third of its time in NRT_incref/NRT_decref, measured
#: with perf; numba's inline="always" kept them). The arrays stay their callers'.
#: (Numba's cache does not key on these flags; :func:`drop_stale_cache` sees this
#: file change.)
jit_without_refcounts = compiled(_nrt=False)
