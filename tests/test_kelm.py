"""MultiLabelKELM: its kernels against the NumPy references in ``tests/naive.py``,
and the learner against :class:`naive.KELMReference`, the same window rebuilt
and inverted from scratch at every step."""

import random

import numpy as np
import pytest

import naive
from edgelearn import MultiLabelKELM, from_state
from edgelearn import state as checkpoint
from edgelearn.kernels import kelm as K

RTOL = 1e-8


def rel_err(got, expected):
    return float(np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-300))


# -- a random window in the kernels' layout ---------------------------------------------


def random_window(rng, W=24, b=6, d=5, m=4, n=None, lam=0.3, gam=0.2, n_neighbors=2, gamma=0.4):
    """A window of n rows in blocks of random sizes <= b: the kernels' arrays
    (with Q the NumPy inverse) and, per block, the reference's similarity
    graphs (so that removals can be checked against their Laplacians)."""
    n = int(rng.integers(b, W + 1)) if n is None else n
    X = rng.normal(size=(n, d))
    sizes = []
    while sum(sizes) < n:
        sizes.append(int(min(rng.integers(1, b + 1), n - sum(sizes))))
    labelled = rng.random(n) < 0.5
    c = np.where(labelled, rng.uniform(0.1, 2.0, size=n), 0.0)
    T = np.where(labelled[:, None], rng.choice([-1.0, 0.0, 1.0], size=(n, m), p=[0.4, 0.2, 0.4]), 0.0)
    w = {
        "Xt": np.zeros((d, W)), "T": np.zeros((W, m)), "c": np.zeros(W), "Lx": np.zeros((W, b)),
        "Ly": np.zeros((W, b)), "block": np.full(W, -1, dtype=np.int64), "Q": np.zeros((W, W)),
        "A": np.zeros((W, m)),
    }
    w["Xt"][:, :n] = X.T
    w["T"][:n] = T
    w["c"][:n] = c
    graphs = []
    lo = 0
    for k, size in enumerate(sizes):
        rows = slice(lo, lo + size)
        Kbb = naive.kelm_kernel(X[rows], X[rows], gamma)
        Sx, Sy = naive.kelm_block_similarities(Kbb, T[rows], rng.normal(size=(size, m)), n_neighbors)
        w["Lx"][rows, :size] = naive.laplacian(Sx)
        w["Ly"][rows, :size] = naive.laplacian(Sy)
        w["block"][rows] = k
        graphs.append((lo, Sx, Sy))
        lo += size
    w["Q"][:n, :n] = np.linalg.inv(omega_of(w, n, lam, gam, gamma))
    return w, n, graphs


def omega_of(w, n, lam, gam, gamma):
    """Omega from the window's stored arrays, by the reference."""
    Lx = naive.block_diagonal_from_local(w["Lx"], w["block"], n)
    Ly = naive.block_diagonal_from_local(w["Ly"], w["block"], n)
    return naive.kelm_omega(w["Xt"][:, :n].T, w["c"][:n], Lx, Ly, gamma, lam, gam)


def scratch(W, b):
    return {
        "R0": np.zeros((W, b)), "D": np.zeros((W, b)), "G": np.zeros((b, W)), "Kbw": np.zeros((b, W)),
        "S": np.zeros((b, b)), "tmp": np.zeros(b), "piv": np.zeros(W, dtype=np.int64),
        "jidx": np.zeros(b, dtype=np.int64), "u": np.zeros(W), "w": np.zeros(W),
    }


# -- kernels ----------------------------------------------------------------------------


def test_rbf_kernels_match():
    rng = np.random.default_rng(0)
    d, W = 7, 12
    Xt = np.zeros((d + 3, W))  # rows past d must be ignored
    X = rng.normal(size=(9, d))
    Xt[:d, :9] = X.T
    Xt[d:, :] = 99.0
    U = np.zeros((4, d + 3))
    U[:, :d] = rng.normal(size=(4, d))
    out = np.zeros((4, W))
    K.rbf_rows_window(U, 3, Xt, 9, d, 0.3, out)
    np.testing.assert_allclose(out[:3, :9], naive.kelm_kernel(U[:3, :d], X, 0.3), rtol=1e-13)
    assert not out[3].any() and not out[:, 9:].any()
    pairs = np.zeros((5, 5))
    K.rbf_pairs(U, 4, d, 0.3, pairs)
    np.testing.assert_allclose(pairs[:4, :4], naive.kelm_kernel(U[:4, :d], U[:4, :d], 0.3), rtol=1e-13)
    assert np.array_equal(pairs[:4, :4], pairs[:4, :4].T) and np.all(np.diag(pairs[:4, :4]) == 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_invert_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    A = rng.normal(size=(n, n))
    A[0, 0] = 0.0  # the first pivot must come from another row
    work = np.zeros((n + 3, n + 3))
    work[:n, :n] = A
    assert K.invert(work, n, np.zeros(n, dtype=np.int64))
    np.testing.assert_allclose(work[:n, :n], np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    assert not work[n:].any() and not work[:, n:].any()


def test_invert_reports_a_zero_pivot():
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not K.invert(A, 2, np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize("seed", range(8))
def test_block_laplacians_match(seed):
    rng = np.random.default_rng(seed)
    b, m_max = 9, 5
    nb = int(rng.integers(1, b + 1))
    m = int(rng.integers(0, m_max + 1))
    Z = rng.normal(size=(nb, 3))
    if seed % 2:
        Z = np.round(Z)  # equal distances: ties go to the lower index
    Kbb = naive.kelm_kernel(Z, Z, 0.5)
    Tp = np.zeros((b, m_max))
    Tp[:nb] = rng.choice([-1.0, 0.0, 1.0], size=(nb, m_max))
    F = np.zeros((b, m_max))
    F[:nb] = rng.normal(size=(nb, m_max))
    k = int(rng.integers(1, 5))
    Lx = np.full((b + 4, b), 7.0)
    Ly = np.full((b + 4, b), 7.0)
    K.block_laplacians(Kbb, nb, Tp, F, m, k, np.zeros((b, b), dtype=np.bool_), Lx, Ly, 2)
    Sx, Sy = naive.kelm_block_similarities(Kbb, Tp[:nb, :m], F[:nb, :m], k)
    np.testing.assert_allclose(Lx[2:2 + nb, :nb], naive.laplacian(Sx), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(Ly[2:2 + nb, :nb], naive.laplacian(Sy), rtol=1e-13, atol=1e-15)
    assert not Lx[2:2 + nb, nb:].any() and not Ly[2:2 + nb, nb:].any()
    assert (Lx[:2] == 7.0).all() and (Lx[2 + nb:] == 7.0).all()


@pytest.mark.parametrize("seed", range(8))
def test_add_block_equals_the_inverse_from_scratch(seed):
    rng = np.random.default_rng(seed)
    lam, gam, gamma, W, b, d, m = 0.3, 0.2, 0.4, 24, 6, 5, 4
    w, n, _ = random_window(rng, W, b, d, m, n=int(rng.integers(0, W - b + 1)), lam=lam, gam=gam, gamma=gamma)
    nb = int(rng.integers(1, b + 1))
    Xb = rng.normal(size=(nb, d))
    Tb = rng.choice([-1.0, 0.0, 1.0], size=(nb, m))
    rows = slice(n, n + nb)
    w["Xt"][:, rows] = Xb.T
    w["T"][rows] = Tb
    w["c"][rows] = np.where(rng.random(nb) < 0.5, rng.uniform(0.1, 2.0, size=nb), 0.0)
    w["block"][rows] = 1000
    Kbb = naive.kelm_kernel(Xb, Xb, gamma)
    Sx, Sy = naive.kelm_block_similarities(Kbb, Tb, rng.normal(size=(nb, m)), 2)
    w["Lx"][rows, :nb] = naive.laplacian(Sx)
    w["Ly"][rows, :nb] = naive.laplacian(Sy)
    Kbw = np.zeros((b, W))
    Kbw[:nb, :n] = naive.kelm_kernel(Xb, w["Xt"][:, :n].T, gamma)
    s = scratch(W, b)
    assert K.add_block(w["Q"], n, nb, Kbw, Kbb, w["c"], w["Lx"], w["Ly"], w["block"], lam, gam,
                       s["R0"], s["D"], s["G"], s["S"], s["tmp"], s["piv"])
    expected = np.linalg.inv(omega_of(w, n + nb, lam, gam, gamma))
    assert rel_err(w["Q"][:n + nb, :n + nb], expected) < RTOL


@pytest.mark.parametrize("seed", range(10))
def test_remove_rows_cuts_the_graphs_and_equals_the_inverse_from_scratch(seed):
    rng = np.random.default_rng(seed)
    lam, gam, gamma, W, b, d, m = (0.3, 0.2, 0.4, 24, 6, 5, 4) if seed % 3 else (0.0, 0.0, 0.4, 24, 6, 5, 4)
    w, n, graphs = random_window(rng, W, b, d, m, lam=lam, gam=gam, gamma=gamma)
    remove = np.zeros(W, dtype=np.bool_)
    remove[rng.choice(n, size=int(rng.integers(1, min(b, n) + 1)), replace=False)] = True
    keep = np.flatnonzero(~remove[:n])
    expected_X, expected_c, expected_T = w["Xt"][:, keep].T.copy(), w["c"][keep], w["T"][keep]
    # The reference: each block's graph among the rows it keeps.
    Lx = np.zeros((n, n))
    Ly = np.zeros((n, n))
    for lo, Sx, Sy in graphs:
        members = np.arange(lo, lo + len(Sx))
        kept = [i for i, a in enumerate(members) if not remove[a]]
        rows = members[kept]
        Lx[np.ix_(rows, rows)] = naive.laplacian(Sx[np.ix_(kept, kept)])
        Ly[np.ix_(rows, rows)] = naive.laplacian(Sy[np.ix_(kept, kept)])
    Lx, Ly = Lx[np.ix_(keep, keep)], Ly[np.ix_(keep, keep)]
    s = scratch(W, b)
    new_n, ok = K.remove_rows(w["Q"], n, remove, w["Xt"], d, gamma, w["c"], w["T"], w["Lx"], w["Ly"],
                              w["block"], lam, gam, s["Kbw"], s["G"], s["D"], s["R0"], s["S"], s["tmp"],
                              s["jidx"], s["piv"])
    assert ok and new_n == len(keep) and not remove.any()
    np.testing.assert_array_equal(w["Xt"][:, :new_n].T, expected_X)
    np.testing.assert_array_equal(w["c"][:new_n], expected_c)
    np.testing.assert_array_equal(w["T"][:new_n], expected_T)
    assert not w["Xt"][:, new_n:].any() and not w["Q"][new_n:].any() and (w["block"][new_n:] == -1).all()
    np.testing.assert_allclose(naive.block_diagonal_from_local(w["Lx"], w["block"], new_n), Lx, atol=1e-13)
    np.testing.assert_allclose(naive.block_diagonal_from_local(w["Ly"], w["block"], new_n), Ly, atol=1e-13)
    expected = np.linalg.inv(naive.kelm_omega(expected_X, expected_c, Lx, Ly, gamma, lam, gam))
    assert rel_err(w["Q"][:new_n, :new_n], expected) < RTOL


@pytest.mark.parametrize("seed", range(6))
def test_set_penalty_equals_the_inverse_from_scratch(seed):
    rng = np.random.default_rng(seed)
    lam, gam, gamma = 0.3, 0.2, 0.4
    w, n, _ = random_window(rng, lam=lam, gam=gam, gamma=gamma)
    i = int(rng.integers(n))
    new_c = float(rng.uniform(0.0, 3.0))
    k_row = np.zeros(w["Q"].shape[0])
    k_row[:n] = naive.kelm_kernel(w["Xt"][:, i], w["Xt"][:, :n].T, gamma)[0]
    s = scratch(*w["Lx"].shape)
    assert K.set_penalty(w["Q"], n, i, new_c - w["c"][i], k_row, s["u"], s["w"])
    w["c"][i] = new_c
    assert rel_err(w["Q"][:n, :n], np.linalg.inv(omega_of(w, n, lam, gam, gamma))) < RTOL


@pytest.mark.parametrize("seed", range(4))
def test_refactor_alpha_and_scores_match(seed):
    rng = np.random.default_rng(seed)
    lam, gam, gamma = 0.3, 0.2, 0.4
    w, n, _ = random_window(rng, lam=lam, gam=gam, gamma=gamma)
    expected = w["Q"][:n, :n].copy()
    w["Q"][:] = rng.normal(size=w["Q"].shape)  # whatever was there
    d = w["Xt"].shape[0]
    s = scratch(*w["Lx"].shape)
    assert K.refactor(w["Q"], n, w["Xt"], d, gamma, w["c"], w["Lx"], w["Ly"], w["block"], lam, gam, s["Kbw"], s["piv"])
    assert rel_err(w["Q"][:n, :n], expected) < 1e-12
    m = w["T"].shape[1]
    K.alpha(w["Q"], n, w["c"], w["T"], m, w["A"])
    alpha = expected @ (w["c"][:n, None] * w["T"][:n])
    np.testing.assert_allclose(w["A"][:n], alpha, rtol=1e-9, atol=1e-12 * np.abs(alpha).max())
    u = rng.normal(size=d)
    out = np.zeros(m)
    margin = K.scores(w["Xt"], n, d, u, gamma, w["A"], m - 1, np.zeros(w["Q"].shape[0]), out, 0.05)
    f = naive.kelm_kernel(u, w["Xt"][:, :n].T, gamma)[0] @ alpha
    np.testing.assert_allclose(out[: m - 1], f[: m - 1], rtol=1e-9, atol=1e-12 * np.abs(f).max())
    assert margin == pytest.approx(np.abs(f[: m - 1] - 0.05).min(), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_loo_scores_equal_a_refit_from_scratch_without_each_label_set(seed):
    rng = np.random.default_rng(seed)
    lam, gam, gamma = (0.3, 0.2, 0.4) if seed % 2 else (0.0, 0.0, 0.4)
    w, n, _ = random_window(rng, lam=lam, gam=gam, gamma=gamma)
    d, W, m = w["Xt"].shape[0], w["Q"].shape[0], w["T"].shape[1]
    K.alpha(w["Q"], n, w["c"], w["T"], m, w["A"])
    S, Y = np.zeros(W * m), np.zeros(W * m, dtype=np.bool_)
    count = K.loo_scores(w["Q"], n, w["Xt"], d, gamma, w["c"], w["T"], m, w["A"], np.zeros(W), np.zeros(m), S, Y)
    Lx = naive.block_diagonal_from_local(w["Lx"], w["block"], n)
    Ly = naive.block_diagonal_from_local(w["Ly"], w["block"], n)
    S_ref, Y_ref = naive.kelm_loo_scores(w["Xt"][:, :n].T, w["c"][:n], w["T"][:n], Lx, Ly, gamma, lam, gam)
    assert count == len(S_ref) > 0
    np.testing.assert_allclose(S[:count], S_ref, rtol=1e-8, atol=1e-10 * np.abs(S_ref).max())
    np.testing.assert_array_equal(Y[:count], Y_ref)


@pytest.mark.parametrize("seed", range(6))
def test_count_cut_matches_the_sorted_reference(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 60))
    S = np.round(rng.normal(size=k + 5), 1)  # ties on purpose
    Y = rng.random(k + 5) < 0.3
    Y[0], Y[1] = True, False
    expected = naive.count_cut(S[:k], Y[:k])
    assert K.count_cut(S, Y, k) == pytest.approx(expected, abs=1e-15)
    # As many scores above the cut as positives, up to ties at the cut.
    assert np.sum(S[:k] > expected) <= np.sum(Y[:k]) <= np.sum(S[:k] >= expected)
    assert np.isnan(K.count_cut(S, np.zeros(k + 5, dtype=np.bool_), k))
    assert np.isnan(K.count_cut(S, np.ones(k + 5, dtype=np.bool_), k))


@pytest.mark.parametrize("seed", range(8))
def test_f1_cut_matches_the_exhaustive_reference(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 80))
    S = np.round(rng.normal(size=k + 5), 1 if seed % 2 else 6)  # ties on purpose, or none
    Y = rng.random(k + 5) < 0.3 + 0.4 * rng.random(k + 5) * (S > 0)  # positives score higher
    Y[0], Y[1] = True, False
    S[0], S[1] = 3.0, -3.0  # two distinct scores at least
    expected = naive.f1_cut(S[:k], Y[:k])
    assert K.f1_cut(S, Y, k) == pytest.approx(expected, abs=1e-15)
    # No midpoint between distinct scores has a better F1.
    f1 = lambda cut: 2 * np.sum(Y[:k] & (S[:k] > cut)) / (np.sum(S[:k] > cut) + np.sum(Y[:k]))
    values = np.unique(S[:k])
    assert all(f1(expected) >= f1(cut) for cut in 0.5 * (values[1:] + values[:-1]))
    assert np.isnan(K.f1_cut(S, np.zeros(k + 5, dtype=np.bool_), k))
    assert np.isnan(K.f1_cut(np.ones(k + 5), Y, k))  # one distinct score: no cut between two


def find_by_hand(u, Xt, n, c, Xp, n_pending, Tp):
    for unlabelled_only in (True, False):
        for i in range(n_pending - 1, -1, -1):
            if not (unlabelled_only and Tp[i].any()) and np.array_equal(Xp[i], u):
                return 1, i
        for a in range(n - 1, -1, -1):
            if not (unlabelled_only and c[a] > 0) and np.array_equal(Xt[:, a], u):
                return 2, a
    return 0, -1


def test_find_instance_matches():
    rng = np.random.default_rng(3)
    d, W, b, m = 3, 10, 4, 2
    points = rng.integers(0, 3, size=(6, d)).astype(float)  # few distinct points: many duplicates
    for _ in range(200):
        n, n_pending = int(rng.integers(0, W + 1)), int(rng.integers(0, b + 1))
        Xt = np.zeros((d, W))
        Xt[:, :n] = points[rng.integers(0, 6, size=n)].T
        Xp = np.zeros((b, d))
        Xp[:n_pending] = points[rng.integers(0, 6, size=n_pending)]
        c = np.where(rng.random(W) < 0.5, 1.0, 0.0)
        Tp = np.where(rng.random((b, m)) < 0.3, 1.0, 0.0)
        u = points[rng.integers(0, 6)]
        assert tuple(K.find_instance(u, d, Xt, n, c, Xp, n_pending, Tp)) == find_by_hand(u, Xt, n, c, Xp, n_pending, Tp)


def test_dense_scatters_and_skips_unknown_slots():
    out = np.full(5, 9.0)
    K.dense(np.array([3, -1, 0], dtype=np.int32), np.array([1.5, 2.0, -1.0]), 3, out)
    assert out.tolist() == [-1.0, 0.0, 0.0, 1.5, 0.0]


# -- the learner against the reference ---------------------------------------------------


def drive_both(model, reference, n, seed, p_label=0.2, p_answer=0.25, late_labels=True):
    """Decide n instances; label some at once, some later (late labels may
    find their instance in the window, or gone); after every step compare the
    maintained inverse and the prediction with the reference's from-scratch
    ones.  Returns the worst relative error of the inverse."""
    rng = random.Random(seed)
    waiting = []
    worst = 0.0
    for i in range(n):
        x = {f"c{j}": rng.gauss(0, 1) for j in range(4) if rng.random() > 0.1}
        y = {"p": x.get("c0", 0) > 0, "q": x.get("c1", 0) + x.get("c2", 0) > 0.5}
        if i > n // 3:
            y["r"] = x.get("c3", 0) > 0  # a label that appears later
        d = model.decide_one(x)
        f = model.scores(d.slots, d.z)
        assert d.score == (float(np.abs(f - model.cut).min()) if len(f) else 0.0)
        u = np.zeros(model.capacity)
        u[d.slots] = d.z
        reference.observe(u)  # its window is now the one that scored x
        assert d.label == expected_label(model, reference, f)
        if rng.random() < p_label:
            if late_labels:
                waiting.append((d, u, y))
            else:
                teach(model, reference, d, u, y)
        if waiting and rng.random() < p_answer:
            dd, uu, yy = waiting.pop(rng.randrange(len(waiting)))
            if rng.random() < 0.3:
                yy = dict(list(yy.items())[:1])  # a partial label set
            teach(model, reference, dd, uu, yy)
        assert model.n_window == len(reference.items)
        assert model.n_window <= model.window and model.n_unlabelled <= model._max_unlabelled
        if model.n_window:
            expected = np.linalg.inv(reference.omega())
            worst = max(worst, rel_err(model.inverse(), expected))
            f = model.scores(d.slots, d.z)
            ref = reference.scores(u)[: len(f)]
            if len(f):
                np.testing.assert_allclose(f, ref, rtol=RTOL, atol=1e-10 * np.abs(ref).max())
        assert model.cut == pytest.approx(reference.cut, rel=1e-7, abs=1e-9)
    return worst


def expected_label(model, reference, f):
    """Labels above the cut, their number clamped to the range of label
    counts of the reference window's labelled instances by taking the
    top-scored ones."""
    above = [v > model.cut for v in f]
    counts = [int(np.sum(it["t"] > 0)) for it in reference.items if it["c"] > 0]
    if model.clamp_label_count and counts:
        keep = min(max(sum(above), min(counts)), max(counts))
        if keep != sum(above):
            top = sorted(range(len(f)), key=lambda j: -f[j])[:keep]
            above = [j in top for j in range(len(f))]
    return dict(zip(model.labels, map(bool, above)))


def teach(model, reference, d, u, y):
    model.learn(d.slots, d.z, y)
    t = np.zeros(reference.m)
    for name, value in y.items():
        t[model.labels.index(name)] = 1.0 if value else -1.0
    reference.label(u, t)


CONFIGS = [
    # window, block, max_unlabelled, lam, gam, n_neighbors, J0
    (32, 6, None, 0.1, 0.1, 2, 0.5),
    (20, 1, None, 0.5, 0.0, 3, 1.0),
    (24, 8, 8, 1.0, 2.0, 3, 0.5),
    (16, 4, None, 0.0, 0.0, 2, 1e-3),
    (30, 10, 25, 0.3, 0.3, 4, 10.0),
]


@pytest.mark.parametrize("window,block,max_unlabelled,lam,gam,k,J0", CONFIGS)
def test_maintained_inverse_and_predictions_equal_the_closed_form(window, block, max_unlabelled, lam, gam, k, J0):
    model = MultiLabelKELM(window=window, block_size=block, max_unlabelled=max_unlabelled, gamma=0.2, J0=J0,
                           lam=lam, gam=gam, n_neighbors=k, max_labels=5, refactor_every=10_000)
    reference = naive.KELMReference(window, block, model._max_unlabelled, 0.2, J0, lam, gam, k, 5)
    worst = drive_both(model, reference, 300 if block > 1 else 120, seed=window + block)
    assert worst < RTOL
    assert model._updates > 50  # no refactor: the low-rank updates alone did it


def test_periodic_refactor_keeps_the_same_model():
    model = MultiLabelKELM(window=24, block_size=6, gamma=0.3, J0=1.0, lam=0.1, gam=0.1, n_neighbors=2,
                           max_labels=4, refactor_every=3)
    reference = naive.KELMReference(24, 6, model._max_unlabelled, 0.3, 1.0, 0.1, 0.1, 2, 4)
    assert drive_both(model, reference, 200, seed=5) < RTOL
    assert model._updates < 3


def test_the_pcut_threshold_without_the_floor_matches_the_reference():
    model = MultiLabelKELM(window=24, block_size=6, gamma=0.3, J0=1.0, max_labels=4, threshold="pcut",
                           clamp_label_count=False)
    reference = naive.KELMReference(24, 6, model._max_unlabelled, 0.3, 1.0, 0.0, 0.0, 5, 4, threshold="pcut")
    assert drive_both(model, reference, 200, seed=9) < RTOL
    assert model.cut != 0.0


def test_the_label_count_stays_in_the_window_range():
    rng = random.Random(11)
    model = MultiLabelKELM(window=40, block_size=5, gamma=0.3, J0=1.0, max_labels=3)
    plain = MultiLabelKELM(window=40, block_size=5, gamma=0.3, J0=1.0, max_labels=3, clamp_label_count=False)
    clamped = 0
    for i in range(500):
        x = {f"c{j}": rng.gauss(0, 1) for j in range(3)}
        if i < 300:  # exactly one positive label
            y = {"p": x["c0"] > 0.4, "q": x["c0"] < -0.4, "r": abs(x["c0"]) <= 0.4}
        else:  # from here on 0 or 1
            y = {"p": x["c0"] > 1.0, "q": False, "r": False}
        a, b = model.decide_one(x), plain.decide_one(x)
        f = model.scores(a.slots, a.z)
        np.testing.assert_array_equal(f, plain.scores(b.slots, b.z))  # the same model
        assert a.score == b.score
        top = model.labels[int(np.argmax(f))] if len(f) else None
        if 5 <= i < 300:  # the window holds labelled instances, each with one label
            assert a.label == {name: name == top for name in model.labels}
            clamped += sum(b.label.values()) != 1
        elif i >= 310:  # an empty label set has entered the window: 0 or 1 label
            expected = b.label if sum(b.label.values()) <= 1 else {name: name == top for name in model.labels}
            assert a.label == expected
            clamped += sum(b.label.values()) > 1
        model.learn(a.slots, a.z, y)
        plain.learn(b.slots, b.z, y)
    assert clamped > 20
    # The bounds are of the window's labelled instances, not a checkpoint's payload.
    restored = from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    assert (restored._fewest, restored._most) == (model._fewest, model._most) == (0, 1)


def stream_of(n, seed, n_channels=4):
    rng = random.Random(seed)
    for _ in range(n):
        x = {f"c{j}": rng.gauss(0, 1) for j in range(n_channels)}
        yield x, {"p": x["c0"] > 0, "q": x["c1"] > 0.5}


def test_a_late_label_in_the_window_changes_the_instance_in_place():
    model = MultiLabelKELM(window=40, block_size=5, max_unlabelled=40, gamma=0.3, J0=1.0, max_labels=3)
    data = list(stream_of(30, seed=1))
    decisions = [model.decide_one(x) for x, _ in data]
    model.learn(decisions[0].slots, decisions[0].z, data[0][1])  # window row 0 by now
    assert (model.n_window, model.n_pending, model.n_unlabelled) == (25, 5, 24)
    assert model.c[0] == 1.0 and model.T[0, :2].tolist() == [-1.0 if not data[0][1]["p"] else 1.0,
                                                             -1.0 if not data[0][1]["q"] else 1.0]
    # The same instance again: its label is replaced, not added a second time.
    model.learn(decisions[0].slots, decisions[0].z, {"p": True, "q": True})
    assert (model.n_window, model.n_unlabelled) == (25, 24) and model.T[0, :2].tolist() == [1.0, 1.0]


def test_a_label_for_an_instance_no_longer_held_enters_as_new():
    model = MultiLabelKELM(window=10, block_size=5, max_unlabelled=10, gamma=0.3, J0=1.0, max_labels=3)
    data = list(stream_of(45, seed=2))
    decisions = [model.decide_one(x) for x, _ in data[:40]]
    assert (model.n_window, model.n_pending) == (10, 5)  # the first instances are long gone
    model.learn(decisions[0].slots, decisions[0].z, data[0][1])
    # The full pending block entered to make room; the label waits in a new one.
    assert (model.n_window, model.n_pending, model.n_unlabelled) == (10, 1, 10) and model.Tp[0].any()
    for x, _ in data[40:]:
        model.decide_one(x)
    assert (model.n_window, model.n_pending, model.n_unlabelled) == (10, 1, 9)


def test_pending_instances_are_not_in_the_model_until_the_next_decision():
    model = MultiLabelKELM(window=20, block_size=4, gamma=0.3, J0=1.0, max_labels=2)
    data = list(stream_of(8, seed=3))
    for x, y in data[:4]:
        d = model.decide_one(x)
        model.learn(d.slots, d.z, y)
    assert (model.n_window, model.n_pending) == (0, 4)
    assert model.predict_one(data[0][0]) == {"p": False, "q": False}  # nothing learned yet
    model.decide_one(data[4][0])
    assert (model.n_window, model.n_pending) == (4, 1)
    assert model.scores_one(data[0][0])["p"] != 0.0


def test_gamma_none_is_one_over_the_channels_seen_at_the_first_block():
    model = MultiLabelKELM(block_size=2)
    for x, _ in stream_of(3, seed=0, n_channels=8):
        model.decide_one(x)
    assert model.kernel_width == 1.0 / 8 and model.gamma is None


def test_a_recycled_channel_is_zeroed_everywhere_and_the_inverse_rebuilt():
    model = MultiLabelKELM(window=16, block_size=4, gamma=0.3, J0=1.0, lam=0.1, gam=0.1, max_labels=2, capacity=3, evict_after=5)
    rng = random.Random(4)
    for i in range(40):
        x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1), "old": rng.gauss(0, 1)} if i < 20 else \
            {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1), "new": rng.gauss(0, 1)}
        d = model.decide_one(x)
        model.learn(d.slots, d.z, {"p": x["a"] > 0})
    slot = model.channels.slot_of("new")
    assert model.channels.n_evicted == 1 and slot >= 0
    n = model.n_window
    w = {name: getattr(model, name) for name in ("Xt", "c", "Lx", "Ly", "block")}
    expected = np.linalg.inv(omega_of(w, n, 0.1, 0.1, 0.3))
    assert rel_err(model.inverse(), expected) < RTOL


def test_target_query_rate_asks_for_about_that_fraction():
    model = MultiLabelKELM(window=32, block_size=8, target_query_rate=0.2, J0=1.0)
    asked = 0
    for i, (x, y) in enumerate(stream_of(3000, seed=6)):
        d = model.decide_one(x)
        if d.ask:
            asked += 1
            model.learn(d.slots, d.z, y)
    assert 0.17 < asked / 3000 < 0.23
    assert all(MultiLabelKELM().decide_one({"a": 1.0}).ask for _ in range(3))  # no budget: always


def test_state_round_trip_mid_block_is_exact():
    model = MultiLabelKELM(window=20, block_size=6, gamma=0.3, J0=1.0, max_labels=3, refactor_every=7)
    data = list(stream_of(103, seed=7))
    for x, y in data[:100]:
        d = model.decide_one(x)
        model.learn(d.slots, d.z, y)
    assert model.n_pending not in (0, model.block_size)
    restored = from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    for x, y in data[100:]:
        a, b = model.decide_one(x), restored.decide_one(x)
        assert (a.label, a.score, a.ask) == (b.label, b.score, b.ask)
        model.learn(a.slots, a.z, y)
        restored.learn(b.slots, b.z, y)
    assert model.Q.tobytes() == restored.Q.tobytes()
    assert model.cut == restored.cut != 0.0  # the learned cut travels in the checkpoint


def test_memory_bytes_is_the_documented_formula():
    for W, b, m, d in ((256, 20, 16, 256), (12, 3, 2, 5), (64, 64, 1, 7)):
        model = MultiLabelKELM(window=W, block_size=b, max_labels=m, capacity=d)
        formula = 8 * (W * (W + d + 3 * m + 6 * b + 6) + b * (d + 2 * m + 2 * b + 2) + d + 3 * m + 4) \
            + W * (m + 1) + b * b + 64 * m
        assert model.memory_bytes() == formula + model.channels.memory_bytes()


def test_label_sets_are_checked():
    model = MultiLabelKELM(max_labels=2)
    d = model.decide_one({"a": 1.0})
    with pytest.raises(TypeError, match="dict of label name to bool. Got bool True"):
        model.learn(d.slots, d.z, True)
    with pytest.raises(ValueError, match="must be True/1/\\+1 or False/0/-1. Got 'yes'"):
        model.learn(d.slots, d.z, {"x": "yes"})
    with pytest.raises(TypeError, match="label names must be str or int"):
        model.learn(d.slots, d.z, {("a",): True})
    model.learn(d.slots, d.z, {"x": True, "y": None})  # None: missing
    with pytest.raises(ValueError, match="max_labels=2 and knows \\['x'\\]; label\\(s\\) \\['y', 'z'\\]"):
        model.learn(d.slots, d.z, {"y": True, "z": False})
    assert model.labels == ["x"]  # the failed call registered nothing
    model.learn(d.slots, d.z, {})  # no label at all: nothing to learn
    assert model.Tp[0].tolist() == [1.0, 0.0]
