"""Linear-SVM kernels: numba vs naive twins, liblinear's objectives, CoCoA+ blocks,
determinism over row order and over the number of tasks, the JVM-free predictor."""
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from _data import data_path

from sparkxml_kernels import load_model, persist
from sparkxml_kernels.collective import SocketCollective, new_authkey, open_listener
from sparkxml_kernels.formats import read_svmlight
from sparkxml_kernels.linear import cs as kcs
from sparkxml_kernels.linear import data, dcd, naive, solver
from sparkxml_kernels.linear._rng import stream_state
from sparkxml_kernels.linear.predictor import LinearSVCPredictor


def _random_problem(n=60, d=12, k=2, seed=0, density=0.4):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr") * 2.0
    X.data -= 0.5
    w = rng.normal(size=(k, d))
    lab = np.argmax(X @ w.T + rng.normal(scale=0.3, size=(n, k)), axis=1).astype(np.int32)
    return X.tocsr(), lab


@pytest.fixture(scope="module")
def a9a_slice():
    path = data_path("a9a", "a9a")  # the first 4000 rows are all it reads
    y, _, ip, ix, v, d = read_svmlight(path, num_features=123)
    X = sp.csr_matrix((v, ix, ip), shape=(len(y), d))[:4000]
    return X, (y[:4000] > 0).astype(np.int32)


@pytest.mark.parametrize("schedule", [dcd.PERMUTATION, dcd.SHARK])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_dcd_block_matches_naive(schedule, loss, sigma):
    X, lab = _random_problem(seed=1)
    n = X.shape[0]
    cw = np.linspace(0.5, 2.0, n)
    upper = cw.copy() if loss == "hinge" else np.full(n, np.inf)
    diag = np.zeros(n) if loss == "hinge" else 0.5 / cw
    qd = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    ip, ix, v = X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data.astype(float)
    lo, hi = 7, 51
    outs = []
    for fn in ("kernel", "naive"):
        alpha, u = np.zeros(n), np.zeros(X.shape[1])
        pref, st = np.ones(n), np.array([0.0, 0.0, 1.0])
        rounds = []
        for rnd in range(3):  # state (alpha, preferences, gain) carries over rounds
            rng = stream_state(5, 1, rnd, 0)
            if fn == "kernel":
                r = dcd.dcd_block(ip, ix, v, lo, hi, lab, 1, upper, diag, qd, alpha, u, sigma,
                                  1e-4, 4, schedule, rng, np.empty(n, np.int64), pref, st)
            else:
                r = naive.dcd_block_naive(ip, ix, v, lo, hi, lab, 1, upper, diag, qd, alpha, u,
                                          sigma, 1e-4, 4, schedule, rng, pref, st)
            rounds.append(tuple(r[:2]))
        outs.append((alpha, u, pref, st, rounds))
    (a1, u1, p1, s1, r1), (a2, u2, p2, s2, r2) = outs
    assert r1 == r2
    np.testing.assert_allclose(a1, a2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(u1, u2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p1, p2, rtol=1e-12)
    assert a1[:lo].sum() == 0 and a1[hi:].sum() == 0  # only the block's rows move
    assert a1.sum() > 0


@pytest.mark.parametrize("loss", [dcd.HINGE, dcd.SQUARED_HINGE])
def test_block_stats_matches_naive(loss):
    X, lab = _random_problem(seed=2)
    n, d = X.shape
    rng = np.random.default_rng(0)
    cw = rng.uniform(0.5, 2, n)
    upper = cw if loss == dcd.HINGE else np.full(n, np.inf)
    diag = np.zeros(n) if loss == dcd.HINGE else 0.5 / cw
    alpha = np.where(rng.random(n) < 0.3, 0.0, np.minimum(rng.uniform(0, 2, n), upper))
    if loss == dcd.HINGE:
        alpha[:5] = upper[:5]  # some rows at the upper bound
    w = rng.normal(size=d)
    out, viol = np.zeros(6), np.zeros(n)
    dcd.block_stats(X.indptr.astype(np.int64), X.indices, X.data, 0, n, lab, 1, w, alpha,
                    upper, diag, cw, loss, out, viol)
    ref, rviol = naive.block_stats_naive(X.toarray(), lab, 1, w, alpha, upper, diag, cw, loss)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    np.testing.assert_allclose(viol, rviol, rtol=1e-12, atol=1e-15)
    assert (viol == 0).any() and (viol > 0).any()


def test_cs_stats_violations_match_naive():
    X, lab = _random_problem(n=50, k=4, seed=11)
    n, d = X.shape
    rng = np.random.default_rng(1)
    cw = rng.uniform(0.5, 2, n)
    alpha = np.zeros((n, 4))
    for i in range(0, n, 2):  # feasible alphas: sum 0, a^y <= C, a^m <= 0
        m = (lab[i] + 1) % 4
        alpha[i, lab[i]] = cw[i] if i % 4 == 0 else 0.5 * cw[i]
        alpha[i, m] = -alpha[i, lab[i]]
    W = rng.normal(size=(d, 4))
    out, viol = np.zeros(5), np.zeros(n)
    kcs.cs_stats(X.indptr.astype(np.int64), X.indices, X.data, 0, n, lab, W, alpha, cw, out,
                 viol)
    np.testing.assert_allclose(viol, naive.cs_violations_naive(X.toarray(), lab, W, alpha, cw),
                               rtol=1e-12, atol=1e-15)
    assert out[4] == viol.max() > 0


def test_cs_subproblem_matches_bisection():
    rng = np.random.default_rng(3)
    out = np.empty(6)
    for _ in range(50):
        K, A, C = 6, rng.uniform(0.1, 3), rng.uniform(0.1, 2)
        Bv = rng.normal(size=K)
        yi = int(rng.integers(K))
        kcs._sub_problem(A, yi, C, K, Bv, out)
        ref = naive.cs_subproblem_naive(A, yi, C, Bv)
        np.testing.assert_allclose(out, ref, atol=1e-7)
        assert abs(out.sum()) < 1e-9 and out[yi] <= C + 1e-12


def test_margins_match_naive():
    X, _ = _random_problem(seed=4)
    W = np.random.default_rng(0).normal(size=(3, X.shape[1]))
    b = np.array([0.5, -1.0, 2.0])
    out = np.empty((X.shape[0], 3))
    dcd.csr_margins(X.indptr.astype(np.int64), X.indices, X.data, W, b, out)
    np.testing.assert_allclose(out, naive.margins_naive(X.toarray(), W, b), rtol=1e-12)


def _primal(X, lab, w, loss, C=1.0, b=0.0):
    y = np.where(lab == 1, 1.0, -1.0)
    z = np.maximum(0.0, 1.0 - y * (X @ w + b))
    return 0.5 * (w @ w + b * b) + C * float(np.sum(z if loss == "hinge" else z * z))


def _liblinear(X, lab, args):
    ll = pytest.importorskip("liblinear.liblinearutil")
    m = ll.train(ll.problem(np.where(lab == 1, 1.0, -1.0), X), ll.parameter(args + " -q"))
    nf = m.get_nr_feature() + (1 if m.bias >= 0 else 0)
    w = np.array([m.w[i] for i in range(nf)])
    return -w if m.get_labels()[0] != 1 else w


@pytest.mark.parametrize("schedule", ["shark", "permutation"])
def test_binary_objective_reaches_liblinear(a9a_slice, schedule):
    X, lab = a9a_slice
    for loss, s in (("hinge", 3), ("squared_hinge", 2)):  # -s 2: primal Newton, tight
        w_ll = _liblinear(X, lab, f"-s {s} -c 1 -e 1e-6")
        target = _primal(X, lab, w_ll, loss)
        # tol is the relative duality gap: it bounds the distance to liblinear's optimum
        r = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], loss=loss,
                             schedule=schedule, tol=1e-4)
        P = _primal(X, lab, r.W[0], loss)
        assert r.converged
        assert abs(P - r.primal[-1][0]) < 1e-6 * P
        assert P <= target * (1 + 1e-4), (P, target)
        assert r.gap[-1][0] <= 1e-4 * P and r.dual[-1][0] <= target * (1 + 1e-9)


def test_fit_intercept_is_liblinear_bias(a9a_slice):
    X, lab = a9a_slice
    w_ll = _liblinear(X, lab, "-s 2 -c 0.5 -B 1 -e 1e-6")
    r = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], C=0.5,
                         loss="squared_hinge", fit_intercept=True, tol=1e-4)
    assert r.W.shape == (1, X.shape[1] + 1)
    P = _primal(X, lab, r.W[0, :-1], "squared_hinge", 0.5, r.W[0, -1])
    target = _primal(X, lab, w_ll[:-1], "squared_hinge", 0.5, w_ll[-1])
    assert abs(P - target) <= 1e-4 * target


def test_weights_equal_duplicated_rows():
    X, lab = _random_problem(n=80, seed=5)
    wts = np.where(np.arange(80) % 3 == 0, 2.0, 1.0)
    wts[5] = 0.0  # weight 0: the row is left out
    keep = np.flatnonzero(wts > 0)
    rep = np.repeat(keep, wts[keep].astype(int))
    r1 = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], weights=wts, tol=1e-12,
                          max_iter=1000,
                          schedule="permutation", loss="squared_hinge")
    Xd = X[rep]
    r2 = solver.fit_local(Xd.indptr, Xd.indices, Xd.data, lab[rep], X.shape[1], tol=1e-12,
                          max_iter=1000,
                          schedule="permutation", loss="squared_hinge")
    np.testing.assert_allclose(r1.W, r2.W, atol=1e-5)


def test_cocoa_blocks_converge_with_monotone_dual(a9a_slice):
    X, lab = a9a_slice
    one = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], loss="squared_hinge",
                           tol=1e-4)
    kw = dict(loss="squared_hinge", num_blocks=3, tol=1e-3, max_iter=40)
    three = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], **kw)
    plain = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], polish=False, **kw)
    for r in (three, plain):  # CoCoA+ rounds and polishes never decrease the dual
        dual = np.array(r.dual)[:, 0]
        assert (np.diff(dual) >= -1e-9 * abs(dual[-1])).all()
        assert dual[-1] <= one.primal[-1][0] * (1 + 1e-9)  # weak duality across runs
    # the polish is what makes several blocks reach the gap in few rounds
    assert three.converged and three.rounds <= 15 and three.polishes > 0
    assert not plain.converged and plain.rounds == 40
    assert three.gap[-1][0] <= 1e-3 * three.primal[-1][0]
    assert abs(three.primal[-1][0] - one.primal[-1][0]) <= 1e-3 * one.primal[-1][0]


def _builder_rows(seed):
    """90 rows (one empty, every 7th of weight 0) with keys and blocks, and prepare's arrays
    of them for both ``fit_intercept``."""
    X, lab = _random_problem(n=90, seed=seed)
    X = X.tolil()
    X[4] = 0  # an empty row
    X = X.tocsr()
    keys, blocks = _blocks_data(X, lab, 3)
    wts = np.where(np.arange(90) % 7 == 0, 0.0, 1.5)
    refs = {fi: solver.prepare(X.indptr, X.indices, X.data, lab, wts, keys, blocks, 0.5, fi,
                               X.shape[1]) for fi in (False, True)}
    return X, lab, keys, blocks, wts, refs


def _build_in_batches(b, X, lab, wts, keys, blocks, perm):
    """Feed rows ``perm`` to RowsBuilder ``b`` in batches of 25; its LinearData."""
    for s in range(0, len(perm), 25):
        sel = perm[s:s + 25]
        Xs = X[sel]
        b.add(Xs.indptr, Xs.indices, Xs.data, lab[sel], wts[sel], keys[sel], blocks[sel],
              X.shape[1])
    return b.finish(X.shape[1])


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("placed", [False, True])
def test_rows_builder_equals_prepare(fit_intercept, placed):
    """Batches build the same arrays as prepare, bit for bit: rows sorted by (block, key), or
    rows out of order through the fallback (a copy); with a ``placement``, rows in any
    order, each written where it belongs (no copy)."""
    X, lab, keys, blocks, wts, refs = _builder_rows(12)
    ref = refs[fit_intercept]
    order = np.lexsort((keys, blocks))
    for perm in (order, np.arange(90), np.random.default_rng(3).permutation(90)):
        plan = None
        if placed:
            plan = data.placement(keys[perm], blocks[perm], np.diff(X.indptr)[perm],
                                  wts[perm] > 0, fit_intercept)
            assert (plan[0] < 0).sum() == 13 and plan[1].size == 90 - 13 + 1
        b = data.RowsBuilder(0.5, fit_intercept, 95, X.nnz + 10, plan)
        ld = _build_in_batches(b, X, lab, wts, keys, blocks, perm)
        assert b.in_order == (placed or perm is order)
        for name in ("indptr", "indices", "data", "labels", "cw", "qd", "block_ids",
                     "block_ptr"):
            np.testing.assert_array_equal(getattr(ld, name), getattr(ref, name), err_msg=name)
        assert ld.n_features == ref.n_features and ld.n == 90 - 13


def test_placed_rows_builder_refuses_rows_of_other_lengths():
    """A batch whose rows do not hold the entries their placement counted is refused, not
    written astray."""
    X, lab, keys, blocks, wts, _ = _builder_rows(13)
    plan = data.placement(keys, blocks, np.diff(X.indptr) + 1, wts > 0, True)
    b = data.RowsBuilder(0.5, True, 95, X.nnz + 200, plan)
    with pytest.raises(RuntimeError, match="placement"):
        b.add(X.indptr, X.indices, X.data, lab, wts, keys, blocks, X.shape[1])


def _blocks_data(X, lab, B):
    keys = np.random.default_rng(9).integers(-2**62, 2**62, size=X.shape[0])
    return keys, np.mod(keys, B)


def test_model_ignores_row_order():
    X, lab = _random_problem(n=300, seed=6)
    keys, blocks = _blocks_data(X, lab, 3)
    cfg = dict(loss="hinge", multi_class="binary", n_classes=2, schedule="shark", tol=1e-3,
               max_iter=20, local_passes=3, num_blocks=3, seed=4)
    from sparkxml_kernels.collective import LocalCollective

    Ws = []
    for perm in (np.arange(300), np.random.default_rng(1).permutation(300)):
        Xp = X[perm]
        ld = solver.prepare(Xp.indptr, Xp.indices, Xp.data, lab[perm], None, keys[perm],
                            blocks[perm], 1.0, True, X.shape[1])
        Ws.append(solver.train(ld, cfg, LocalCollective()).W)
    assert np.array_equal(Ws[0], Ws[1])


@pytest.mark.parametrize("mode", ["ovr", "crammer_singer"])
def test_two_tasks_give_the_one_task_model_bit_for_bit(mode):
    """Blocks {0, 2} on rank 0 and {1} on rank 1 over real sockets == all blocks on one."""
    X, lab = _random_problem(n=240, k=3, seed=7)
    keys, blocks = _blocks_data(X, lab, 3)
    cfg = dict(loss="hinge", multi_class=mode, n_classes=3, schedule="shark", tol=1e-3,
               max_iter=15, local_passes=3, num_blocks=3, seed=2)

    def task(sel, coll):
        Xs = X[sel]
        ld = solver.prepare(Xs.indptr, Xs.indices, Xs.data, lab[sel], None, keys[sel],
                            blocks[sel], 1.0, False, X.shape[1])
        return solver.train(ld, cfg, coll)

    from sparkxml_kernels.collective import LocalCollective

    single = task(np.arange(240), LocalCollective())
    listeners = [open_listener("127.0.0.1") for _ in range(2)]
    addrs, key = [a for _, a in listeners], new_authkey()
    out = [None, None]

    def run(r):
        sel = np.flatnonzero((blocks % 2) == r)
        with SocketCollective(r, 2, addrs, key, 30.0, listener=listeners[r][0]) as c:
            out[r] = task(sel, c)

    ts = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert single.polishes > 0  # the gather onto rank 0 and the broadcast ran over sockets
    for r in range(2):
        assert np.array_equal(out[r].W, single.W)
        assert out[r].primal == single.primal and out[r].rounds == single.rounds


def test_crammer_singer_reaches_liblinear():
    ll = pytest.importorskip("liblinear.liblinearutil")
    X, lab = _random_problem(n=400, d=20, k=4, seed=8, density=0.5)
    m = ll.train(ll.problem(lab.astype(float), X), ll.parameter("-s 4 -c 1 -e 1e-6 -q"))
    order = [int(c) for c in m.get_labels()]
    Wll = np.array([[m.w[j * 4 + order.index(k)] for k in range(4)] for j in range(20)])
    r = solver.fit_local(X.indptr, X.indices, X.data, lab, 20, multi_class="crammer_singer",
                         n_classes=4, tol=1e-4)
    P_ll, _ = naive.cs_objective_naive(X.toarray(), lab, Wll, np.zeros((400, 4)), np.ones(400))
    P, f = naive.cs_objective_naive(X.toarray(), lab, r.W.T, r.alpha, np.ones(400))
    assert r.converged
    assert abs(P - r.primal[-1][0]) < 1e-8 * P and abs(-f - r.dual[-1][0]) < 1e-8 * P
    assert P <= P_ll * (1 + 1e-4) and P + f <= 1e-4 * P
    blocks = solver.fit_local(X.indptr, X.indices, X.data, lab, 20, multi_class="crammer_singer",
                              n_classes=4, tol=1e-3, num_blocks=3, max_iter=30)
    order = np.lexsort((np.arange(400), np.arange(400) % 3))  # fit_local's rows: by block
    P3, f3 = naive.cs_objective_naive(X[order].toarray(), lab[order], blocks.W.T, blocks.alpha,
                                      np.ones(400))
    assert blocks.converged and blocks.polishes > 0 and P3 + f3 <= 1e-3 * P3
    assert (np.diff(np.array(blocks.dual)[:, 0]) >= -1e-9 * P).all()


def test_predictor_roundtrip_and_errors(tmp_path):
    X, _ = _random_problem(seed=10)
    W = np.random.default_rng(1).normal(size=(1, X.shape[1]))
    p = LinearSVCPredictor(W, np.array([0.25]), 2, threshold=0.1)
    m = p.margins(X)
    np.testing.assert_allclose(m, naive.margins_naive(X.toarray(), W, [0.25]), rtol=1e-12)
    np.testing.assert_array_equal(p.predict(X), (m[:, 0] > 0.1).astype(float))
    np.testing.assert_allclose(p.predict_raw(X.toarray()), np.column_stack([-m, m]))
    path = str(tmp_path / "m")
    meta = persist.metadata_json("sparkxml.linear.svc.LinearSVCModel", "u1", {"threshold": 0.1},
                                 {}, model_kind="linear_svm")
    persist.save_directory(path, meta, p.to_arrays(), overwrite=False)
    q = load_model(path)
    np.testing.assert_array_equal(q.predict(X), p.predict(X))
    with pytest.raises(ValueError, match="X has 5 features; LinearSVCModel was trained on 12"):
        q.predict(X[:, :5])
    bad = X.toarray()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        q.predict(bad)
    with pytest.raises(ValueError, match="coefficient rows"):
        LinearSVCPredictor(np.zeros((2, 3)), np.zeros(2), 2)


def test_violation_slices_match_one_pass(monkeypatch):
    """Violation bins, histograms and picked rows work on CHUNK_ROWS-row slices (no n-sized
    float temporaries): the same counts and rows as one pass over all rows."""
    from sparkxml_kernels.linear import polish as P

    rng = np.random.default_rng(3)
    n, tol = 1000, 1e-3
    viol = np.where(rng.random(n) < 0.3, 0.0, 10.0 ** rng.uniform(-5, 2, n))
    indptr = np.concatenate([[0], np.cumsum(rng.integers(0, 9, n))]).astype(np.int64)
    whole_bins = P.violation_bins(viol, tol)
    whole = np.zeros(2 * P.NBINS)
    P.histograms(viol, indptr, tol, whole)
    monkeypatch.setattr(P, "CHUNK_ROWS", 37)
    np.testing.assert_array_equal(P.violation_bins(viol, tol), whole_bins)
    sliced = np.full(2 * P.NBINS, 5.0)  # overwritten, not added to
    P.histograms(viol, indptr, tol, sliced)
    np.testing.assert_array_equal(sliced, whole)
    # the reference: a plain count over all rows
    ok = whole_bins >= 0
    np.testing.assert_array_equal(whole[:P.NBINS], np.bincount(whole_bins[ok], minlength=P.NBINS))
    np.testing.assert_array_equal(whole[P.NBINS:], np.bincount(
        whole_bins[ok], weights=np.diff(indptr)[ok].astype(float), minlength=P.NBINS))
    for j0 in (0, 40, P.NBINS - 1):
        np.testing.assert_array_equal(P.rows_in_bins(viol, tol, j0),
                                      np.flatnonzero(whole_bins >= j0))
    assert P.rows_in_bins(viol[:0], tol, 0).size == 0


@pytest.mark.parametrize("loss", [dcd.HINGE, dcd.SQUARED_HINGE])
def test_newton_stats_match_naive(loss):
    from sparkxml_kernels.linear import newton

    X, lab = _random_problem(n=80, d=7, seed=3)
    w = np.random.default_rng(1).normal(size=7)
    cw = np.linspace(0.5, 2.0, 80)
    marg = np.zeros(80)
    out = np.zeros(newton.NPIECE + 7 + 49)
    newton.newton_stats(X.indptr, X.indices, X.data, 0, 80, lab, 1, w, cw, loss, 0.3, marg,
                        out)
    m_ref, out_ref = naive.newton_stats_naive(X, lab, 1, w, cw, loss, 0.3)
    np.testing.assert_allclose(marg, m_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, out_ref, rtol=1e-10, atol=1e-10)
    sol = newton._chol_solve(out[newton.NPIECE + 7:].reshape(7, 7), w)
    full = np.tril(out_ref[newton.NPIECE + 7:].reshape(7, 7))
    np.testing.assert_allclose((np.eye(7) + full + np.tril(full, -1).T) @ sol, w, rtol=1e-9)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_newton_reaches_liblinear(a9a_slice, loss):
    """Primal Newton reaches liblinear's objective (at a tight eps) within the duality gap it
    certifies, over one block and over three (sums per block, in block order)."""
    X, lab = a9a_slice
    w_ll = _liblinear(X, lab, f"-s {3 if loss == 'hinge' else 2} -c 1 -e 1e-6")
    target = _primal(X, lab, w_ll, loss)
    for blocks in (1, 3):
        r = solver.fit_local(X.indptr, X.indices, X.data, lab, X.shape[1], loss=loss,
                             solver="newton", tol=1e-4, num_blocks=blocks)
        P = _primal(X, lab, r.W[0], loss)
        assert r.converged and 0.0 <= r.gap[-1][0] <= 1e-4 * r.primal[-1][0]
        assert abs(P - r.primal[-1][0]) < 1e-9 * P
        # the certified dual is a lower bound on any primal value, liblinear's included
        # (its hinge solver may stop at its iteration cap above the optimum)
        assert r.dual[-1][0] <= target and P <= target * (1 + 1e-4)
