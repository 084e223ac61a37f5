"""firmware_bridge.pipeline.kernels.rows.first_rows against NumPy (np.unique)."""

import numpy as np
import pytest

from firmware_bridge.pipeline.kernels.rows import first_rows


@pytest.mark.parametrize("seed", range(20))
def test_first_rows_is_unique_ordered_by_first_appearance(seed):
    rng = np.random.default_rng(seed)
    n_labels = int(rng.integers(1, 6))
    label = rng.integers(-1, n_labels, size=int(rng.integers(0, 80)))
    ids, first = first_rows(label, n_labels)
    kept = np.flatnonzero(label >= 0)
    want_ids, want_first = np.unique(label[kept], return_index=True)
    order = np.argsort(want_first)
    assert ids.tolist() == want_ids[order].tolist()
    assert first.tolist() == kept[want_first[order]].tolist()
