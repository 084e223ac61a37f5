"""firmware_bridge.pipeline.kernels.rows.first_rows and rows_matrix against NumPy."""

import numpy as np
import pytest

from firmware_bridge.pipeline.kernels.rows import first_rows, rows_matrix


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


@pytest.mark.parametrize("seed", range(10))
def test_rows_matrix_is_numpys_scatter(seed):
    rng = np.random.default_rng(seed)
    n, n_names, n_cols = int(rng.integers(0, 50)), 9, 6
    position = np.full(n_names, -1, dtype=np.int64)
    position[rng.choice(n_names, n_cols, replace=False)] = rng.permutation(n_cols)
    names = np.flatnonzero(position >= 0)
    rows = [rng.choice(names, int(rng.integers(0, n_cols + 1)), replace=False) for _ in range(n)]
    count = np.array([len(r) for r in rows], dtype=np.int64)
    pair_name = np.concatenate(rows).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    pair_value = rng.normal(size=pair_name.shape[0])
    want = np.full((n, n_cols), np.nan)  # the NumPy form run_pass used
    want[np.repeat(np.arange(n), count), position[pair_name]] = pair_value
    assert rows_matrix(count, pair_name, pair_value, position, n_cols).tobytes() == want.tobytes()
