"""A learner's arrays and constants as ONE kernel argument (a numba structref), for
the calls where numba's per-argument unboxing is most of the cost: the gateway's
one-call path (``decide_learn_model`` in :mod:`.paacds` and :mod:`.arow`).

Each kernel module registers its own type on :class:`PackedType` and defines its
proxy over it; the fields hold the learner's own arrays (shared, not copied)."""

from numba.core import types


class PackedType(types.StructRef):
    """Base of the packed-model structref types: each field is typed as its value's
    type with literals widened, so learners built with other constants (``C=1.0``,
    ``C=0.5``) share one compiled kernel."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)
