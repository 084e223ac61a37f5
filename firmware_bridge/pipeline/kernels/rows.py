"""A stream's decoded readings made ready for the jitted learner loop (numba):
the column order its channels follow, and the pipeline's sequence accounting."""

import numpy as np

from edgelearn.kernels import jit

#: Most distinct channels a stream's chunk may have for column_order (its
#: precedence matrix is columns x columns bytes); more: the per-message path.
MAX_COLUMNS = 2048
# Positions in sequence()'s counts.
MISSING, DUPLICATES, OUT_OF_ORDER, RESTARTS = 0, 1, 2, 3


@jit
def column_order(pair_name, pair_count, n_names):
    """The channel ids (``pair_name`` per row, ``pair_count`` pairs a row) in one
    order every row's channels follow, ties going to the channel seen first; an
    empty array if the rows disagree (or there are more than MAX_COLUMNS)."""
    local = np.full(n_names, -1, dtype=np.int64)
    names = np.empty(MAX_COLUMNS, dtype=np.int64)
    n_cols = 0
    for p in range(pair_name.shape[0]):
        name = pair_name[p]
        if local[name] < 0:
            if n_cols == MAX_COLUMNS:
                return np.empty(0, dtype=np.int64)
            local[name] = n_cols
            names[n_cols] = name
            n_cols += 1
    after = np.zeros((n_cols, n_cols), dtype=np.bool_)
    waiting = np.zeros(n_cols, dtype=np.int64)
    p = 0
    for r in range(pair_count.shape[0]):
        for j in range(1, pair_count[r]):
            a, b = local[pair_name[p + j - 1]], local[pair_name[p + j]]
            if not after[a, b]:
                after[a, b] = True
                waiting[b] += 1
        p += pair_count[r]
    order = np.empty(n_cols, dtype=np.int64)
    done = np.zeros(n_cols, dtype=np.bool_)
    for t in range(n_cols):
        pick = -1
        for j in range(n_cols):
            if not done[j] and waiting[j] == 0:
                pick = j
                break
        if pick < 0:
            return np.empty(0, dtype=np.int64)  # a cycle: the rows disagree
        done[pick] = True
        order[t] = names[pick]
        for b in range(n_cols):
            if after[pick, b]:
                waiting[b] -= 1
    return order


@jit
def sequence(seqs, last_seq, window, counts):
    """The pipeline's sequence accounting (``Pipeline._predict``/``_sequence``) over
    ``seqs`` in order: returns the new ``(last_seq, window)`` (``window`` a uint64,
    bit i: seq ``last_seq - i`` arrived) and adds to ``counts`` (MISSING, DUPLICATES,
    OUT_OF_ORDER, RESTARTS)."""
    one = np.uint64(1)
    last = last_seq
    w = np.uint64(window)
    for i in range(seqs.shape[0]):
        seq = seqs[i]
        if seq == last + 1:
            last = seq
            w = (w << one) | one
        elif last < 0:
            last = seq
            w = one
        elif seq > last:
            gap = seq - last - 1
            counts[MISSING] += gap
            last = seq
            w = ((w << np.uint64(gap + 1)) | one) if gap + 1 < 64 else one
        elif seq == 0 or last - seq >= 64:
            counts[RESTARTS] += 1
            last = seq
            w = one
        else:
            bit = one << np.uint64(last - seq)
            if seq == last or (w & bit) != 0:
                counts[DUPLICATES] += 1
            else:
                w |= bit
                counts[OUT_OF_ORDER] += 1
                counts[MISSING] -= 1
    return last, w


@jit
def first_rows(label, n_labels):
    """The distinct labels ``>= 0`` of ``label`` in the order they first appear, and
    the row of each one's first appearance (``np.unique`` with ``return_index``,
    ordered by first row)."""
    first = np.full(n_labels, -1, dtype=np.int64)
    ids = np.empty(min(n_labels, label.shape[0]), dtype=np.int64)
    n = 0
    for row in range(label.shape[0]):
        ident = label[row]
        if ident >= 0 and first[ident] < 0:
            first[ident] = row
            ids[n] = ident
            n += 1
    ids = ids[:n]
    return ids, first[ids]


@jit
def rows_matrix(pair_count, pair_name, pair_value, position, n_cols):
    """The rows as an (n, n_cols) matrix, NaN where a row lacks a channel: row i's
    ``pair_count[i]`` pairs (channel id ``pair_name``, value ``pair_value``) in turn,
    each channel in column ``position[id]``."""
    n = pair_count.shape[0]
    X = np.full((n, n_cols), np.nan)
    p = 0
    for i in range(n):
        for _ in range(pair_count[i]):
            X[i, position[pair_name[p]]] = pair_value[p]
            p += 1
    return X
