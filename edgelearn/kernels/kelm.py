"""Multi-label semi-supervised online KELM kernels (seed 002; docs/learners.md,
"MultiLabelKELM").

The window holds ``n <= W`` instances in arrival order, rows (or columns)
``0..n-1`` of arrays of fixed size:

* ``Xt[d_max, W]`` the dense standardized features, one *column* per
  instance, so that a kernel row against the window runs along contiguous
  memory;
* ``c[W]`` penalties (0: unlabelled), ``T[W, m_max]`` targets in {-1, 0, +1};
* ``block[W]`` the id of the block each instance entered with.  A block's
  rows are contiguous (instances only ever leave), and ``run(a)`` below is
  the run of rows sharing row a's id;
* ``Lx[W, b]``, ``Ly[W, b]`` the per-block feature and label Laplacians:
  ``Lx[a, q]`` is the entry (a, first row of run(a) + q), 0 for q past the run;
* ``Q[W, W]`` the inverse of ``Omega = I + M K`` over the window, with
  ``M = diag(c) + lam Lx + gam Ly`` block diagonal and ``K`` the RBF kernel;
* ``A[W, m_max] = Q C T``, so that ``f(x) = k(x, window)^T A``.

Every update keeps ``M`` symmetric positive semi-definite, so every matrix
``I + M K`` met on the way is invertible (its eigenvalues are those of
``I + K^1/2 M K^1/2``, all >= 1) and no step divides by a pivot that the
algebra allows to vanish.
"""

import math

import numpy as np

from ._jit import jit

# -- kernel values ---------------------------------------------------------------


@jit
def rbf_window_row(Xt, n, d, u, gamma, out):
    """``out[j] = exp(-gamma ||u - Xt[:, j]||^2)`` for the n window columns,
    over the first d features."""
    for j in range(n):
        out[j] = 0.0
    for s in range(d):
        us = u[s]
        row = Xt[s]
        for j in range(n):
            diff = us - row[j]
            out[j] += diff * diff
    for j in range(n):
        out[j] = math.exp(-gamma * out[j])


@jit
def rbf_rows_window(U, nu, Xt, n, d, gamma, out):
    """Kernel rows of the first nu rows of ``U`` (instances as rows) against
    the window: ``out[i, :n]``."""
    for i in range(nu):
        rbf_window_row(Xt, n, d, U[i], gamma, out[i])


@jit
def rbf_pairs(U, nu, d, gamma, out):
    """``out[i, j] = exp(-gamma ||U[i] - U[j]||^2)`` for i, j < nu (exactly
    symmetric, 1 on the diagonal)."""
    for i in range(nu):
        out[i, i] = 1.0
        for j in range(i + 1, nu):
            acc = 0.0
            for s in range(d):
                diff = U[i, s] - U[j, s]
                acc += diff * diff
            value = math.exp(-gamma * acc)
            out[i, j] = value
            out[j, i] = value


# -- predictions -----------------------------------------------------------------


@jit
def combine(k_row, n, A, m, out):
    """``out[j] = sum_i k_row[i] A[i, j]`` for j < m: the scores f_j."""
    for j in range(m):
        out[j] = 0.0
    for i in range(n):
        k = k_row[i]
        for j in range(m):
            out[j] += k * A[i, j]


@jit
def scores(Xt, n, d, u, gamma, A, m, k_row, out, cut):
    """The scores ``f(u) = k(u, window)^T A`` into ``out[:m]`` (k_row is
    scratch); returns the margin ``min_j |f_j - cut|`` (0 if m is 0)."""
    rbf_window_row(Xt, n, d, u, gamma, k_row)
    combine(k_row, n, A, m, out)
    margin = abs(out[0] - cut) if m > 0 else 0.0
    for j in range(1, m):
        margin = min(margin, abs(out[j] - cut))
    return margin


@jit
def block_scores(Kbw, nb, n, A, m, out):
    """Scores of nb instances whose kernel rows against the window are ``Kbw``."""
    for i in range(nb):
        combine(Kbw[i], n, A, m, out[i])


@jit
def alpha(Q, n, c, T, m, A):
    """``A = Q C T`` over the window; only labelled rows (c > 0) contribute."""
    for a in range(n):
        out = A[a]
        for j in range(m):
            out[j] = 0.0
        for p in range(n):
            cp = c[p]
            if cp != 0.0:
                w = Q[a, p] * cp
                for j in range(m):
                    out[j] += w * T[p, j]


# -- block graphs ----------------------------------------------------------------


@jit
def block_laplacians(Kbb, nb, Tp, F, m, n_neighbors, picked, Lx, Ly, row0):
    """The Laplacians of a new block of nb instances, into rows
    ``row0..row0+nb-1`` (columns ``0..nb-1``) of ``Lx`` and ``Ly``.

    Feature graph: each instance links to its ``min(n_neighbors, nb - 1)``
    most similar others by the kernel ``Kbb`` (ties: the lower index); the
    graph is symmetrized (an edge if either end picked it) and weighted by
    the kernel.  Label graph: the cosine similarity, floored at 0, of the
    label vectors, where a missing target (``Tp == 0``) is replaced by the
    predicted sign of its score ``F`` (+1 if F > 0, else -1); no labels
    known yet (m == 0) gives no edges.  ``picked`` is an nb x nb scratch.
    """
    k = min(n_neighbors, nb - 1)
    for i in range(nb):
        for j in range(nb):
            picked[i, j] = False
    for i in range(nb):
        for _ in range(k):
            best = -1
            for j in range(nb):
                if j != i and not picked[i, j] and (best < 0 or Kbb[i, j] > Kbb[i, best]):
                    best = j
            picked[i, best] = True
    for i in range(nb):
        r = row0 + i
        for q in range(Lx.shape[1]):
            Lx[r, q] = 0.0
            Ly[r, q] = 0.0
    for i in range(nb):
        r = row0 + i
        for j in range(i + 1, nb):
            if picked[i, j] or picked[j, i]:
                s = Kbb[i, j]
                Lx[r, j] = -s
                Lx[row0 + j, i] = -s
                Lx[r, i] += s
                Lx[row0 + j, j] += s
    if m == 0:
        return
    for i in range(nb):
        r = row0 + i
        for j in range(i + 1, nb):
            dot = 0.0
            for t in range(m):
                dot += _filled(Tp[i, t], F[i, t]) * _filled(Tp[j, t], F[j, t])
            s = dot / m  # each filled vector has norm sqrt(m)
            if s > 0.0:
                Ly[r, j] = -s
                Ly[row0 + j, i] = -s
                Ly[r, i] += s
                Ly[row0 + j, j] += s


@jit
def _filled(target, score):
    if target != 0.0:
        return target
    return 1.0 if score > 0.0 else -1.0


@jit
def _run_end(block, n, lo):
    hi = lo + 1
    while hi < n and block[hi] == block[lo]:
        hi += 1
    return hi


@jit
def _m_entry(c, Lx, Ly, lam, gam, a, q, lo):
    """M[a, lo + q] for a row a of the run starting at lo."""
    value = lam * Lx[a, q] + gam * Ly[a, q]
    if a == lo + q:
        value += c[a]
    return value


# -- small dense algebra ---------------------------------------------------------


@jit
def invert(A, n, piv):
    """Invert ``A[:n, :n]`` in place: Gauss-Jordan with partial pivoting
    (row interchanges, undone as column interchanges at the end).  Returns
    False, leaving A undefined, if a pivot is exactly 0."""
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if big == 0.0:
            return False
        if p != k:
            for j in range(n):
                tmp = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = tmp
        scale = 1.0 / A[k, k]
        A[k, k] = 1.0
        row = A[k]
        for j in range(n):
            row[j] *= scale
        for i in range(n):
            if i == k:
                continue
            f = A[i, k]
            if f != 0.0:
                A[i, k] = 0.0
                target = A[i]
                for j in range(n):
                    target[j] -= f * row[j]
    for k in range(n - 1, -1, -1):
        p = piv[k]
        if p != k:
            for i in range(n):
                tmp = A[i, k]
                A[i, k] = A[i, p]
                A[i, p] = tmp
    return True


# -- window updates --------------------------------------------------------------


@jit
def add_block(Q, n, nb, Kbw, Kbb, c, Lx, Ly, block, lam, gam, R0, D, G, S, tmp, piv):
    """Grow ``Q = Omega^-1`` from the n window rows to n + nb with the block
    in rows ``n..n+nb-1`` (its c, Lx, Ly and block id already written),
    by the block inverse (Schur complement), O(n^2 nb):

        Omega_new = [[Omega, R0n], [Rn0, Omega_b]],
        R0n = M_0 K_0b,  Rn0 = M_b K_b0,  Omega_b = I + M_b K_bb,
        Delta = (Omega_b - Rn0 Q R0n)^-1,
        Q_new = [[Q + Q R0n Delta Rn0 Q, -Q R0n Delta], [-Delta Rn0 Q, Delta]].

    ``Kbw[:nb, :n]`` are the block's kernel rows against the window and
    ``Kbb`` its own kernel matrix.  Scratch: R0, D (W x b), G (b x W),
    S (b x b), tmp (b), piv.  Returns False if Delta's inversion failed.
    """
    lo_b = n
    # R0 = M_0 K_0b: row a mixes the kernel rows of its own run only.
    lo = 0
    while lo < n:
        hi = _run_end(block, n, lo)
        for a in range(lo, hi):
            for q in range(nb):
                R0[a, q] = 0.0
            for p in range(lo, hi):
                mp = _m_entry(c, Lx, Ly, lam, gam, a, p - lo, lo)
                if mp != 0.0:
                    for q in range(nb):
                        R0[a, q] += mp * Kbw[q, p]
        lo = hi
    # D = Q R0
    for a in range(n):
        for q in range(nb):
            D[a, q] = 0.0
        for p in range(n):
            w = Q[a, p]
            for q in range(nb):
                D[a, q] += w * R0[p, q]
    # G = M_b (Kbw Q): first Kbw Q, then the block's M from the left.
    for q in range(nb):
        for a in range(n):
            G[q, a] = 0.0
        for p in range(n):
            w = Kbw[q, p]
            for a in range(n):
                G[q, a] += w * Q[p, a]
    for a in range(n):
        for q in range(nb):
            acc = 0.0
            for r in range(nb):
                acc += _m_entry(c, Lx, Ly, lam, gam, lo_b + q, r, lo_b) * G[r, a]
            tmp[q] = acc
        for q in range(nb):
            G[q, a] = tmp[q]
    # S = Omega_b - Rn0 Q R0n = I + M_b (Kbb - Kbw D); R0 is free again
    # and holds Kbb - Kbw D on the way.
    for q in range(nb):
        for r in range(nb):
            acc = 0.0
            for p in range(n):
                acc += Kbw[q, p] * D[p, r]
            R0[q, r] = Kbb[q, r] - acc
    for q in range(nb):
        for r in range(nb):
            acc = 1.0 if q == r else 0.0
            for t in range(nb):
                acc += _m_entry(c, Lx, Ly, lam, gam, lo_b + q, t, lo_b) * R0[t, r]
            S[q, r] = acc
    if not invert(S, nb, piv):
        return False
    # D <- D Delta, row by row.
    for a in range(n):
        for q in range(nb):
            acc = 0.0
            for r in range(nb):
                acc += D[a, r] * S[r, q]
            tmp[q] = acc
        for q in range(nb):
            D[a, q] = tmp[q]
    # Top left: Q += (D Delta) G.
    for a in range(n):
        target = Q[a]
        for q in range(nb):
            w = D[a, q]
            if w != 0.0:
                g = G[q]
                for p in range(n):
                    target[p] += w * g[p]
    # Bottom left: -Delta G; top right: -D Delta; bottom right: Delta.
    for q in range(nb):
        target = Q[lo_b + q]
        for p in range(n):
            target[p] = 0.0
        for r in range(nb):
            w = S[q, r]
            g = G[r]
            for p in range(n):
                target[p] -= w * g[p]
    for a in range(n):
        for q in range(nb):
            Q[a, lo_b + q] = -D[a, q]
    for q in range(nb):
        for r in range(nb):
            Q[lo_b + q, lo_b + r] = S[q, r]
    return True


@jit
def set_penalty(Q, n, i, dc, k_row, u, w):
    """Sherman-Morrison for a change ``dc`` of row i's penalty c_i:
    ``Omega' = Omega + dc e_i k_i^T`` (``k_row`` = K[i, :n]), O(n^2).
    Scratch u, w (W).  Returns False if the denominator vanished."""
    for a in range(n):
        u[a] = Q[a, i]
        w[a] = 0.0
    for p in range(n):
        k = k_row[p]
        if k != 0.0:
            row = Q[p]
            for a in range(n):
                w[a] += k * row[a]
    denom = 1.0 + dc * w[i]
    if denom == 0.0:
        return False
    scale = dc / denom
    for a in range(n):
        f = u[a] * scale
        if f != 0.0:
            target = Q[a]
            for p in range(n):
                target[p] -= f * w[p]
    return True


@jit
def _regraph_run(Q, n, lo, hi, remove, Xt, d, gamma, c, Lx, Ly, lam, gam, Kr, V, QU, Z, tmp, piv):
    """Cut the removed rows of one run out of its graphs before they leave:
    the kept rows get the Laplacian of the graph among themselves, the
    removed rows keep only their diagonal.  M stays symmetric PSD and
    changes only inside the run, so ``Omega`` changes by ``E_run dM K_run``
    (rank r = hi - lo); Woodbury, O(n^2 r)."""
    r = hi - lo
    # dM (r x r) into Z.
    for i in range(r):
        for j in range(r):
            Z[i, j] = 0.0
    for i in range(r):
        a = lo + i
        for j in range(r):
            if j == i:
                continue
            l_aj = lam * Lx[a, j] + gam * Ly[a, j]
            if l_aj == 0.0:
                continue
            if remove[a] or remove[lo + j]:
                # M[a, j] goes to 0; a kept row's degree loses the edge.
                Z[i, j] -= l_aj
                if not remove[a]:
                    Z[i, i] += l_aj
    # V = dM K_run (r x n), through the run's kernel rows.
    for i in range(r):
        rbf_window_row(Xt, n, d, Xt[:, lo + i], gamma, Kr[i])
    for i in range(r):
        for p in range(n):
            V[i, p] = 0.0
        for j in range(r):
            w = Z[i, j]
            if w != 0.0:
                for p in range(n):
                    V[i, p] += w * Kr[j, p]
    # Kr <- V Q; QU = Q[:, run].
    for i in range(r):
        for p in range(n):
            Kr[i, p] = 0.0
        for a in range(n):
            w = V[i, a]
            if w != 0.0:
                row = Q[a]
                for p in range(n):
                    Kr[i, p] += w * row[p]
    for a in range(n):
        for i in range(r):
            QU[a, i] = Q[a, lo + i]
    # Z = I + V Q U, inverted; then Kr <- Z^-1 (V Q).
    for i in range(r):
        for j in range(r):
            Z[i, j] = Kr[i, lo + j] + (1.0 if i == j else 0.0)
    ok = invert(Z, r, piv)
    if ok:
        _woodbury_apply(Q, n, r, Z, Kr, QU, tmp)
    _cut_edges(Lx, Ly, lo, r, remove)
    return ok


@jit
def _woodbury_apply(Q, n, r, Zinv, VQ, QU, tmp):
    """``Q -= QU Zinv VQ`` (VQ is overwritten)."""
    for p in range(n):
        for i in range(r):
            acc = 0.0
            for j in range(r):
                acc += Zinv[i, j] * VQ[j, p]
            tmp[i] = acc
        for i in range(r):
            VQ[i, p] = tmp[i]
    for a in range(n):
        target = Q[a]
        for i in range(r):
            w = QU[a, i]
            if w != 0.0:
                row = VQ[i]
                for p in range(n):
                    target[p] -= w * row[p]


@jit
def _cut_edges(Lx, Ly, lo, r, remove):
    """The stored Laplacians of the run at lo lose every edge of a removed
    row; a kept row's degree loses the weight of those edges."""
    for L in (Lx, Ly):
        for i in range(r):
            a = lo + i
            for j in range(r):
                if j == i:
                    continue
                if remove[a] or remove[lo + j]:
                    if not remove[a]:
                        L[a, i] += L[a, j]
                    L[a, j] = 0.0


@jit
def remove_rows(Q, n, remove, Xt, d, gamma, c, T, Lx, Ly, block, lam, gam, Kr, V, QU, F, Z, tmp, jidx, piv):
    """Take the rows flagged in ``remove[:n]`` (at most b of them) out of
    the window; return ``(new n, ok)``.

    1. For every block that loses some rows and keeps others, the kept
       rows' Laplacians become those of the graph among themselves
       (Woodbury, O(n^2 r) per such block of r rows).
    2. The removed rows and columns leave the inverse (the block form of
       ``inv(A without j) = E - f g^T / h``):
       ``Q_new = Q[k, k] - Q[k, J] Q[J, J]^-1 Q[J, k]``, O(n^2 |J|).
    3. Every array is compacted in order, and ``remove[:n]`` cleared.

    ``ok`` is False if an inversion met an exact zero pivot: everything but
    Q is then still right, and Q must be rebuilt with :func:`refactor`.
    """
    ok = True
    lo = 0
    while lo < n:
        hi = _run_end(block, n, lo)
        n_removed = 0
        for a in range(lo, hi):
            n_removed += remove[a]
        if 0 < n_removed < hi - lo:
            if lam != 0.0 or gam != 0.0:
                ok = _regraph_run(Q, n, lo, hi, remove, Xt, d, gamma, c, Lx, Ly, lam, gam, Kr, V, QU, Z, tmp, piv) and ok
            else:  # the graphs do not enter Omega; keep them right all the same
                _cut_edges(Lx, Ly, lo, hi - lo, remove)
        lo = hi
    nj = 0
    for a in range(n):
        if remove[a]:
            jidx[nj] = a
            nj += 1
    if nj > 0:
        for i in range(nj):
            for j in range(nj):
                Z[i, j] = Q[jidx[i], jidx[j]]
        if invert(Z, nj, piv):
            _delete_from_inverse(Q, n, remove, jidx, nj, Z, F)
        else:
            ok = False
        _compact(Q, n, remove, Xt, c, T, Lx, Ly, block)
    for a in range(n):
        remove[a] = False
    return n - nj, ok


@jit
def _delete_from_inverse(Q, n, remove, jidx, nj, Hinv, F):
    """``Q[k, k] -= Q[k, J] Hinv Q[J, k]`` for the kept rows k (F: scratch)."""
    for a in range(n):
        for j in range(nj):
            acc = 0.0
            for i in range(nj):
                acc += Q[a, jidx[i]] * Hinv[i, j]
            F[a, j] = acc
    for a in range(n):
        if remove[a]:
            continue
        target = Q[a]
        for j in range(nj):
            w = F[a, j]
            if w != 0.0:
                row = Q[jidx[j]]
                for p in range(n):
                    target[p] -= w * row[p]


@jit
def _compact(Q, n, remove, Xt, c, T, Lx, Ly, block):
    """Move the kept rows (and columns) up, in order; zero what is freed."""
    # Lx/Ly columns first, while block ids still describe the old runs.
    lo = 0
    while lo < n:
        hi = _run_end(block, n, lo)
        for a in range(lo, hi):
            kept = 0
            for q in range(hi - lo):
                if not remove[lo + q]:
                    Lx[a, kept] = Lx[a, q]
                    Ly[a, kept] = Ly[a, q]
                    kept += 1
            for q in range(kept, Lx.shape[1]):
                Lx[a, q] = 0.0
                Ly[a, q] = 0.0
        lo = hi
    new = 0
    for a in range(n):
        if remove[a]:
            continue
        col = 0
        for p in range(n):
            if not remove[p]:
                Q[new, col] = Q[a, p]
                col += 1
        for s in range(Xt.shape[0]):
            Xt[s, new] = Xt[s, a]
        c[new] = c[a]
        for j in range(T.shape[1]):
            T[new, j] = T[a, j]
        for q in range(Lx.shape[1]):
            Lx[new, q] = Lx[a, q]
            Ly[new, q] = Ly[a, q]
        block[new] = block[a]
        new += 1
    for a in range(n):
        for p in range(new, n):
            Q[a, p] = 0.0
    for a in range(new, n):
        for p in range(n):
            Q[a, p] = 0.0
        for s in range(Xt.shape[0]):
            Xt[s, a] = 0.0
        c[a] = 0.0
        for j in range(T.shape[1]):
            T[a, j] = 0.0
        for q in range(Lx.shape[1]):
            Lx[a, q] = 0.0
            Ly[a, q] = 0.0
        block[a] = -1


@jit
def refactor(Q, n, Xt, d, gamma, c, Lx, Ly, block, lam, gam, Kr, piv):
    """Rebuild ``Q = (I + M K)^-1`` from the stored window, O(n^3): bounds
    the round-off the low-rank updates accumulate.  Returns False if the
    inversion failed."""
    lo = 0
    while lo < n:
        hi = _run_end(block, n, lo)
        r = hi - lo
        for i in range(r):
            rbf_window_row(Xt, n, d, Xt[:, lo + i], gamma, Kr[i])
        for i in range(r):
            a = lo + i
            target = Q[a]
            for p in range(n):
                target[p] = 1.0 if p == a else 0.0
            for j in range(r):
                w = _m_entry(c, Lx, Ly, lam, gam, a, j, lo)
                if w != 0.0:
                    row = Kr[j]
                    for p in range(n):
                        target[p] += w * row[p]
        lo = hi
    return invert(Q, n, piv)


# -- the cut: from scores to label sets -------------------------------------------


@jit
def loo_scores(Q, n, Xt, d, gamma, c, T, m, A, k_row, f, S, Y):
    """Leave-one-out scores of the window's labelled rows: for every known
    target (T[a, j] != 0) of a labelled row a, the score f_j(x_a) of the
    model refit without a's label set (c_a = 0, T_a = 0, graphs kept), into
    ``S[count]``, and whether the target is positive into ``Y[count]``;
    returns count.  Exact by Sherman-Morrison: with ``H = K Q C`` and
    ``h = H[a, a]``, ``f_-a(x_a) = (f(x_a) - h t_a) / (1 - h)``, O(n d + n m)
    per row (k_row, f: scratch of n and m)."""
    count = 0
    for a in range(n):
        ca = c[a]
        if ca == 0.0:
            continue
        rbf_window_row(Xt, n, d, Xt[:, a], gamma, k_row)
        h = 0.0
        for p in range(n):
            h += k_row[p] * Q[p, a]
        h *= ca
        if not 1.0 - h > 1e-12:  # a row that fits itself exactly says nothing held out
            continue
        combine(k_row, n, A, m, f)
        for j in range(m):
            t = T[a, j]
            if t != 0.0:
                S[count] = (f[j] - h * t) / (1.0 - h)
                Y[count] = t > 0.0
                count += 1
    return count


@jit
def count_cut(S, Y, k):
    """The cut on ``S[:k]`` above which as many scores lie as ``Y[:k]``
    holds positives (Yang's PCut, pooled over labels): midway between the
    P-th and (P+1)-th highest score.  NaN when there is no positive or no
    negative (no cut is learned then)."""
    P = 0
    for i in range(k):
        P += Y[i]
    if P == 0 or P == k:
        return math.nan
    s = -S[:k]
    order = np.argsort(s, kind="mergesort")
    return 0.5 * (S[order[P - 1]] + S[order[P]])


# Scores closer than this fraction of their range are one score to f1_cut.
_TIE = 1e-9


@jit
def f1_cut(S, Y, k):
    """The cut on ``S[:k]`` that maximizes the pooled F1 of ``score > cut``
    against ``Y[:k]`` (Lipton et al. 2014: micro-F1's optimum is one shared
    cut): midway between the i-th and (i+1)-th highest score for the best i,
    i < k (something stays below), and only where the two differ by more
    than ``_TIE`` of the scores' range: equal scores (a duplicated instance)
    fall on one side, whatever their order and their last bits of
    round-off.  The first best i (the highest cut) wins a tie of F1.  NaN
    when there is no positive, no negative, or no two distinct scores."""
    P = 0
    for i in range(k):
        P += Y[i]
    if P == 0 or P == k:
        return math.nan
    order = np.argsort(-S[:k], kind="mergesort")
    tie = _TIE * (S[order[0]] - S[order[k - 1]])
    best, cut = -1.0, math.nan
    true_positives = 0
    for i in range(k - 1):
        true_positives += Y[order[i]]
        high, low = S[order[i]], S[order[i + 1]]
        if high - low > tie:
            f1 = 2.0 * true_positives / (i + 1 + P)
            if f1 > best:
                best, cut = f1, 0.5 * (high + low)
    return cut


# -- the window's bookkeeping -----------------------------------------------------


@jit
def count_targets(t, n_positive, sign):
    """Add ``sign`` to the count of every positive label of targets t (the
    last entry of ``n_positive``: instances with no positive label)."""
    m = t.shape[0]
    any_positive = False
    for j in range(m):
        if t[j] > 0.0:
            n_positive[j] += sign
            any_positive = True
    if not any_positive:
        n_positive[m] += sign


@jit
def penalty(t, n_positive, J0):
    """``J0 / N``: N the count of t's most frequent positive label (of
    instances with no positive label, if t has none), at least 1."""
    m = t.shape[0]
    N = -1
    for j in range(m):
        if t[j] > 0.0 and n_positive[j] > N:
            N = n_positive[j]
    if N < 0:
        N = n_positive[m]
    return J0 / max(1, N)


@jit
def labelled(t):
    for j in range(t.shape[0]):
        if t[j] != 0.0:
            return True
    return False


@jit
def plan_room(c, T, n, Tp, nb, max_unlabelled, window, n_positive, remove):
    """Flag in ``remove`` the rows to drop before a block of nb enters: the
    oldest unlabelled rows while the window and the block hold more than
    ``max_unlabelled`` unlabelled ones, then the oldest rows while they hold
    more than ``window``; uncount the labelled ones.  Returns how many."""
    unlabelled = 0
    for a in range(n):
        unlabelled += c[a] == 0.0
    for i in range(nb):
        unlabelled += not labelled(Tp[i])
    excess = unlabelled - max_unlabelled
    flagged = 0
    for a in range(n):
        if excess <= 0:
            break
        if c[a] == 0.0:
            remove[a] = True
            flagged += 1
            excess -= 1
    overflow = n - flagged + nb - window
    for a in range(n):
        if overflow <= 0:
            break
        if not remove[a]:
            remove[a] = True
            flagged += 1
            overflow -= 1
    for a in range(n):
        if remove[a] and c[a] > 0.0:
            count_targets(T[a], n_positive, -1)
    return flagged


@jit
def enter_block(Xp, Tp, nb, d, Xt, T, c, block, n, block_id, n_positive, J0):
    """Write the pending block into window rows ``n..n+nb-1``: features,
    targets, block id, and penalties (the block's labelled instances
    counted first, so that each counts itself)."""
    for i in range(nb):
        a = n + i
        for s in range(d):
            Xt[s, a] = Xp[i, s]
        for j in range(T.shape[1]):
            T[a, j] = Tp[i, j]
        block[a] = block_id
        if labelled(Tp[i]):
            count_targets(Tp[i], n_positive, 1)
    for i in range(nb):
        c[n + i] = penalty(Tp[i], n_positive, J0) if labelled(Tp[i]) else 0.0


# -- finding an instance again ----------------------------------------------------


@jit
def find_instance(u, d, Xt, n, c, Xp, n_pending, Tp):
    """Where an instance with features ``u[:d]`` sits, newest first, an
    unlabelled one before a labelled one: ``(1, i)`` pending row i,
    ``(2, a)`` window row a, ``(0, -1)`` nowhere."""
    for want_unlabelled in (True, False):
        for i in range(n_pending - 1, -1, -1):
            if want_unlabelled and labelled(Tp[i]):
                continue
            same = True
            for s in range(d):
                if Xp[i, s] != u[s]:
                    same = False
                    break
            if same:
                return 1, i
        for a in range(n - 1, -1, -1):
            if want_unlabelled and c[a] > 0.0:
                continue
            same = True
            for s in range(d):
                if Xt[s, a] != u[s]:
                    same = False
                    break
            if same:
                return 2, a
    return 0, -1


@jit
def dense(slots, z, k, out):
    """Scatter ``(slots[:k], z[:k])`` into the zeroed dense vector ``out``;
    a negative slot (a channel the space does not know) is left out."""
    for s in range(out.shape[0]):
        out[s] = 0.0
    for j in range(k):
        s = slots[j]
        if s >= 0:
            out[s] = z[j]
