"""FM kernels against their naive twins, and the claims the solvers rest on: block updates
equal sequential coordinate updates, and workers of any number train the same model."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm

from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.fm import cd, layout, order, rng
from sparkxml_kernels.fm.adamw import batch_gradient, batch_gradient_naive
from sparkxml_kernels.fm.gbfm_joint import compress_factors, joint_pairs
from sparkxml_kernels.fm.predictor import (
    FMPredictor,
    GBFMPredictor,
    fm_scores,
    fm_scores_naive,
    gbfm_scores_naive,
)
from sparkxml_kernels.fm.solver import LOGISTIC, SQUARED
from sparkxml_kernels.fm.watch import log_losses, log_losses_naive


def _one_hot(n, sizes, seed, extra_dense=0):
    """Rows with one feature per field (some fields missing), plus dense real columns."""
    r = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    rows, cols, vals = [], [], []
    for i in range(n):
        for c, s in enumerate(sizes):
            if r.random() < 0.9:
                rows.append(i)
                cols.append(starts[c] + r.integers(s))
                vals.append(1.0 if c % 2 == 0 else r.uniform(0.5, 2.0))
        for e in range(extra_dense):
            rows.append(i)
            cols.append(starts[-1] + e)
            vals.append(r.normal())
    d = int(starts[-1]) + extra_dense
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))
    X.sort_indices()
    return X, [int(s) for s in starts[:-1]]


# --------------------------------------------------------------------------- rng
def test_ndtri_and_truncated_normal_match_scipy():
    from scipy.special import ndtri as sndtri

    p = np.concatenate([np.logspace(-300, -1, 40), np.linspace(0.01, 0.99, 50),
                        1 - np.logspace(-15, -2, 20)])
    ours = np.array([rng.ndtri(v) for v in p])
    np.testing.assert_allclose(ours, sndtri(p), rtol=1e-12, atol=1e-12)
    for mean in (-6.0, -1.0, 0.0, 0.7, 5.0):
        for pos in (True, False):
            for u in (1e-9, 0.2, 0.5, 0.9, 1 - 1e-9):
                z = rng.truncated_normal(mean, pos, u)
                assert (z > 0) == pos
                np.testing.assert_allclose(z, rng.truncated_normal_naive(mean, pos, u),
                                           rtol=1e-8, atol=1e-8)
    assert rng.truncated_normal(-45.0, True, 0.5) > 0  # far tail: no NaN, no inf


def test_row_streams_depend_on_key_and_occurrence_only():
    keys = np.array([5, 5, 7, 9, 9, 9], np.int64)
    occ = rng.occurrences(keys)
    assert occ.tolist() == [0, 1, 0, 0, 1, 2]
    ids = rng.row_ids(keys, occ)
    assert len(set(ids.tolist())) == 6
    u = rng.uniforms(3, rng.STREAM_PROBIT, 7, ids)
    perm = np.array([3, 0, 5, 1, 4, 2])
    np.testing.assert_array_equal(rng.uniforms(3, rng.STREAM_PROBIT, 7, ids[perm]), u[perm])
    assert np.all((u > 0) & (u < 1))


# --------------------------------------------------------------------------- layout
def test_blocks_are_exclusive_and_match_naive():
    X, starts = _one_hot(300, [4, 7, 1, 5], seed=1, extra_dense=2)
    ip, ix = X.indptr.astype(np.int64), X.indices.astype(np.int32)
    nxt = layout.next_cooccurring(ip, ix, X.shape[1])
    np.testing.assert_array_equal(nxt, layout.next_cooccurring_naive(ip, ix, X.shape[1]))
    seg = layout.exclusive_segments(nxt, X.shape[1])
    np.testing.assert_array_equal(seg, layout.exclusive_segments_naive(ip, ix, X.shape[1]))
    # every field is one block (fields co-occur with each other), dense columns one each
    assert seg.tolist() == starts + [17, 18, 19]
    for b in range(seg.size - 1):
        assert (X[:, seg[b]:seg[b + 1]].getnnz(axis=1) <= 1).all()
    got = layout.block_entries(ip, ix, X.data, seg)
    want = layout.block_entries_naive(ip, ix, X.data, seg)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_repeated_index_in_a_row_is_refused():
    ip = np.array([0, 2], np.int64)
    with pytest.raises(ValueError, match="repeats a feature index"):
        layout.check_sorted_indices(ip, np.array([3, 3], np.int32), np.ones(2), "f")


# --------------------------------------------------------------------------- cd kernels
@pytest.mark.parametrize("mode", [cd.LINEAR, cd.FACTOR, cd.CROSS])
@pytest.mark.parametrize("binary,weighted,with_c1", [(True, False, False), (False, True, True)])
def test_block_kernels_match_naive(mode, binary, weighted, with_c1):
    X, _ = _one_hot(200, [6, 3], seed=2)
    if binary:
        X.data[:] = 1.0
    data = layout.BlockedData(X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data,
                              X.shape[1], np.array([0, 6, 9]))
    r = np.random.default_rng(0)
    n = X.shape[0]
    qh, c1, c2, res = r.normal(size=n), r.normal(size=n), r.uniform(0.5, 2, n), r.normal(size=n)
    c1 = c1 if with_c1 else None
    c2 = c2 if weighted else None
    theta = r.normal(size=9)
    for b in range(2):
        fs, fe, lo, hi = data.block(b)
        out = np.zeros((2, fe - fs))
        cd.block_stats(lo, hi, data.rows, data.feats, data.vals, fs, mode, qh, theta[fs:fe],
                       c1, c2, res, out)
        want = cd.block_stats_naive(lo, hi, data.rows, data.feats, data.vals, fs, mode, qh,
                                    theta[fs:fe], c1, c2 if weighted else None, res, fe - fs)
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        # per row block (rows 0:70, 70:150, 150:200), and the blocks' sums in order
        rb = order.RowBlocks(np.array([0, 70, 150, n]))
        sub = rb.entry_bounds(data.rows, lo, hi)
        parts = np.zeros((3, 2, fe - fs))
        cd.block_stats_split(sub, data.rows, data.feats, data.vals, fs, mode, qh,
                             theta[fs:fe], c1, c2, res, parts)
        np.testing.assert_allclose(parts, cd.block_stats_split_naive(
            sub, data.rows, data.feats, data.vals, fs, mode, qh, theta[fs:fe], c1, c2, res,
            fe - fs), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(order.fixed_sum(LocalCollective(), parts), out, rtol=1e-12,
                                   atol=1e-12)
        # finish: a Newton step then the cache moves, against the numpy rule + naive apply
        th1, r1, q1 = theta.copy(), res.copy(), qh.copy()
        cd.block_finish(cd.NEWTON, 50.0, 0.1, np.zeros(1), np.zeros(1), np.zeros(1), out[0],
                        out[1], th1, 0, fs, lo, hi, data.rows, data.feats, data.vals, mode, q1,
                        r1, q1 if mode == cd.FACTOR else q1.copy())
        new = cd.newton_update(theta[fs:fe], out[0], out[1], 50.0, 0.1)
        np.testing.assert_allclose(th1[fs:fe], new, rtol=1e-12)
        r2, q2 = res.copy(), qh.copy()
        cd.block_apply_naive(lo, hi, data.rows, data.feats, data.vals, fs, mode, q2,
                             theta[fs:fe], new - theta[fs:fe], r2,
                             q2 if mode == cd.FACTOR else q2.copy())
        np.testing.assert_allclose(r1, r2, rtol=1e-12, atol=1e-12)
        if mode == cd.FACTOR:
            np.testing.assert_allclose(q1, q2, rtol=1e-12, atol=1e-12)


def test_gibbs_finish_matches_gaussian_update():
    A, G, old = np.array([4.0, 0.0]), np.array([1.0, 0.0]), np.array([0.3, -0.2])
    lam, mu, nrm = np.array([2.0, 3.0]), np.array([0.1, -0.1]), np.array([0.5, -1.0])
    th = old.copy()
    empty = np.zeros(0, np.int32)
    cd.block_finish(cd.GIBBS, 1.5, 0.0, lam, mu, nrm, A, G, th, 0, 0, 0, 0, empty, empty, None,
                    cd.LINEAR, np.zeros(1), np.zeros(1), np.zeros(1))
    np.testing.assert_allclose(th, cd.gaussian_update(old, A, G, 1.5, lam, mu, nrm),
                               rtol=1e-14)


def test_feature_stats_match_naive():
    X, _ = _one_hot(150, [5, 4], seed=3, extra_dense=1)
    r = np.random.default_rng(1)
    n, d = X.shape
    c1, c2, mult = r.normal(size=n), r.uniform(size=n), r.normal(size=n)
    A, G = np.zeros(d), np.zeros(d)
    cd.feature_stats(X.indptr.astype(np.int64), X.indices, X.data, c1, c2, mult, A, G)
    wa, wg = cd.feature_stats_naive(X.indptr, X.indices, X.data, c1, c2, mult, d)
    np.testing.assert_allclose(A, wa, rtol=1e-12)
    np.testing.assert_allclose(G, wg, rtol=1e-12)


# --------------------------------------------------------------------------- predictors
@pytest.mark.parametrize("link", [0, 1, 2])
def test_fm_scores_match_pairwise_definition(link):
    X, _ = _one_hot(40, [3, 4], seed=4, extra_dense=2)
    r = np.random.default_rng(2)
    S, d, k = 3, X.shape[1], 4
    w0, W = r.normal(size=S), r.normal(size=(S, d)).astype(np.float32)
    V = r.normal(size=(S, d, k)).astype(np.float32)
    m, ml = fm_scores(X.indptr.astype(np.int64), X.indices, X.data, w0, W, V, link)
    wm, wml = fm_scores_naive(X.toarray(), w0, W, V, link)
    np.testing.assert_allclose(m, wm, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ml, wml, rtol=1e-9, atol=1e-9)
    P = FMPredictor(w0, W, V, ["identity", "logistic", "probit"][link], d)
    np.testing.assert_allclose(P.predict(X.toarray()), P.predict(X))  # dense == CSR
    with pytest.raises(ValueError, match="trained on"):
        P.predict(X[:, :-1])
    Xbad = X.toarray()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        P.predict(Xbad)


def test_gbfm_scores_match_naive_and_truncate():
    X, starts = _one_hot(50, [3, 4, 2], seed=5)
    r = np.random.default_rng(3)
    fs = np.array(starts + [X.shape[1]])
    sf = np.array([[0, 1], [2, 0], [1, 2]], np.int32)
    sizes = [(fs[p + 1] - fs[p]) + (fs[q + 1] - fs[q]) for p, q in sf]
    off = np.concatenate([[0], np.cumsum(sizes)])
    V, U = r.normal(size=(off[-1], 2)), r.normal(size=off[-1])
    P = GBFMPredictor(0.4, fs, sf, off, V, U, np.ones(3), "identity", X.shape[1])
    np.testing.assert_allclose(P.predict(X), gbfm_scores_naive(X.toarray(), 0.4, fs, sf, off,
                                                               V, U), rtol=1e-12)
    np.testing.assert_allclose(P.truncate(1).predict(X),
                               gbfm_scores_naive(X.toarray(), 0.4, fs, sf[:1], off[:2],
                                                 V[:off[1]], U[:off[1]]), rtol=1e-12)
    with pytest.raises(ValueError, match="stage_offsets"):
        GBFMPredictor(0.4, fs, sf, off[:-1], V, U, np.ones(3), "identity", X.shape[1])
    # the joint fit's global linear term, and its probit link
    lin = r.normal(size=X.shape[1])
    P = GBFMPredictor(0.4, fs, sf, off, V, U, np.ones(3), "probit", X.shape[1], lin)
    raw = gbfm_scores_naive(X.toarray(), 0.4, fs, sf, off, V, U, lin)
    np.testing.assert_allclose(P.predict_raw(X), raw, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(P.predict(X)[:, 1], norm.cdf(raw), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="linear has 2 weights"):
        GBFMPredictor(0.4, fs, sf, off, V, U, np.ones(3), "identity", X.shape[1], lin[:2])


def test_compress_factors_keeps_the_product():
    r = np.random.default_rng(3)
    A, B = r.normal(size=(30, 40)), r.normal(size=(25, 40))
    a, b = compress_factors(A, B, max_rank=64)
    assert a.shape[1] == 25  # the product's rank
    np.testing.assert_allclose(a @ b.T, A @ B.T, rtol=1e-9, atol=1e-9)
    L = r.normal(size=(30, 3)) @ r.normal(size=(3, 40))  # a rank-3 product
    a, b = compress_factors(L, B, max_rank=64)
    assert a.shape[1] == 3
    np.testing.assert_allclose(a @ b.T, L @ B.T, rtol=1e-9, atol=1e-9)
    assert joint_pairs(np.array([[1, 0], [0, 1], [2, 0], [1, 0]])) == [(1, 0), (2, 0)]


@pytest.mark.parametrize("loss", [SQUARED, LOGISTIC])
def test_adamw_gradient_matches_finite_differences(loss):
    X, _ = _one_hot(30, [3, 2], seed=6, extra_dense=1)
    r = np.random.default_rng(4)
    d, k = X.shape[1], 3
    y = (r.random(30) > 0.5).astype(float)
    w = r.uniform(0.5, 1.5, 30)
    wl, Vt = r.normal(size=d) * 0.3, r.normal(size=(k, d)) * 0.3
    batch = np.array([0, 3, 4, 10, 29], np.int64)
    grad = np.zeros(1 + d + k * d + 2)
    batch_gradient(batch, X.indptr.astype(np.int64), X.indices, X.data, y, w, loss, 0.2, wl,
                   Vt, grad)
    want = batch_gradient_naive(batch, X.toarray(), y, w, loss, 0.2, wl, Vt)
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-6)


def test_log_losses_and_row_sums_match_naive():
    r = np.random.default_rng(4)
    p = np.concatenate([r.uniform(size=50), [0.0, 1.0]])
    y = (r.uniform(size=52) > 0.5).astype(float)
    w = r.uniform(0.5, 2.0, 52)
    out = np.empty(52)
    log_losses(p, y, w, out)
    np.testing.assert_allclose(out, log_losses_naive(p, y, w), rtol=1e-12)
    assert np.isfinite(out).all()  # p = 0 and 1 are clipped
    # a row's bits do not depend on where it sits: the reversed array gives reversed bits
    rev = np.empty(52)
    log_losses(p[::-1].copy(), y[::-1].copy(), w[::-1].copy(), rev)
    np.testing.assert_array_equal(rev[::-1], out)
    assert order.seq_sum(out) == sum(out.tolist())  # one after the other, as Python adds
    rb = order.RowBlocks.of(np.array([1, 1, 4, 4, 4, 9]))
    assert rb.ranges() == [(0, 2), (2, 5), (5, 6)]
    got = rb.sums(LocalCollective(), np.arange(6.0), np.ones(6))
    np.testing.assert_array_equal(got, [15.0, 6.0])
    assert order.RowBlocks.of(np.zeros(0)).n_blocks == 0
