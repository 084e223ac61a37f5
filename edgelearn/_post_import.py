"""Run a callback right after a module is first imported, without importing it.

edgelearn registers its learners with River's abstract base classes (see
:mod:`edgelearn.river`), which needs River; but edgelearn must never import River
itself (the gateway runs without it). If River is already imported, the
registration runs at once; otherwise :func:`when_imported` waits for River's
``river.base`` to be imported, whenever and by whoever, and registers then. This is
the "post-import hook" pattern (PEP 369, withdrawn; ``wrapt.when_imported``),
done with a meta-path finder that steps aside after firing once.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Callable


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; when ``name`` is being imported, it lets the other
    finders find it and wraps the loader so ``callback`` runs after the module ran."""

    def __init__(self, name: str, callback: Callable[[], None]):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        # Step aside first: the search below must not find this finder again, and
        # the callback fires once.
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, callback = spec.loader, self.callback

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                callback()

        spec.loader = _Loader()
        return spec


def when_imported(name: str, callback: Callable[[], None]) -> None:
    """Call ``callback()`` now if module ``name`` is imported, else right after it is."""
    if name in sys.modules:
        callback()
    else:
        sys.meta_path.insert(0, _AfterImport(name, callback))
