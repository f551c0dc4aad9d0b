"""The BPR ranker's kernels: negatives, the gradient and the scores against their naive twins,
the same model for any number of thread ranks, and planted structure recovered."""
import threading

import numpy as np
import pytest

from sparkxml_kernels.collective import InProcessGroup, LocalCollective
from sparkxml_kernels.fm import bpr as B
from sparkxml_kernels.fm.order import ROW_BLOCKS
from sparkxml_kernels.fm.ranker import (
    FMRankerPredictor,
    pair_scores,
    pair_scores_naive,
    top_items,
    top_items_naive,
)

PARAMS = dict(factorSize=4, maxIter=6, regParam=1e-4, stepSize=0.05, miniBatchFraction=0.25,
              numNegatives=2, initStd=0.1, seed=3, tol=0.0)


def _planted(n_users=40, n_items=30, per_user=6, seed=0):
    """Implicit data with planted rank-2 taste: each user's positives are its top items."""
    rng = np.random.default_rng(seed)
    P, Q = rng.normal(size=(n_users, 2)), rng.normal(size=(n_items, 2))
    top = np.argsort(-(P @ Q.T), axis=1)
    users = np.repeat(np.arange(n_users), per_user)
    items = top[:, :per_user].reshape(-1)
    return users, items, top


def _keys(users, items):
    return (users * 1000003 + items * 7919) * 2654435761 % (2 ** 61 - 1)


def _fit(users, items, n_users, n_items, params, workers=1, X=None):
    keys = _keys(users, items)
    blocks = (users * 40503) % ROW_BLOCKS  # rows dealt by user, as the Spark layer does
    owner = blocks * workers // ROW_BLOCKS
    group = InProcessGroup(workers) if workers > 1 else None
    out = [None] * workers

    def run(rank):
        coll = LocalCollective() if group is None else group.collective(rank)
        idx = np.random.default_rng(rank).permutation(np.flatnonzero(owner == rank))
        csr = {}
        if X is not None:
            import scipy.sparse as sp

            Xr = sp.csr_matrix(X[idx])
            csr = dict(indptr=Xr.indptr, indices=Xr.indices, data=Xr.data)
        data = B.prepare_bpr(users[idx], items[idx], keys[idx], blocks[idx], n_users, n_items,
                             0 if X is None else X.shape[1], **csr)
        out[rank] = B.run_bpr(data, params, coll)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out[0]


def test_negatives_match_naive_and_avoid_positives():
    users, items, _ = _planted()
    rids = np.arange(users.size, dtype=np.int64) * 7 + 1
    codes = np.unique(users * 30 + items)
    neg = B.sample_negatives(5, 2, rids, users, codes, 30, 3)
    positives = set(zip(users.tolist(), items.tolist()))
    np.testing.assert_array_equal(neg, B.sample_negatives_naive(5, 2, rids, users, positives,
                                                                30, 3))
    assert not any((int(u), int(j)) in positives for u, row in zip(users, neg) for j in row)
    assert len(np.unique(neg)) > 20  # spread over the catalogue
    # another epoch draws other negatives
    assert (B.sample_negatives(5, 3, rids, users, codes, 30, 3) != neg).mean() > 0.5


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    U, I, d, k, n = 3, 4, 2, 2, 5
    users, items = rng.integers(0, U, n), rng.integers(0, I, n)
    neg = rng.integers(0, I, (n, 2))
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    import scipy.sparse as sp

    Xc = sp.csr_matrix(X)
    theta = rng.normal(0, 0.5, I + (U + I + d) * k)
    rows = np.array([0, 2, 3, 4], np.int64)
    g = np.zeros(theta.size + 2)
    B.bpr_gradient(rows, users, items, neg, Xc.indptr.astype(np.int64), Xc.indices,
                   Xc.data, theta, U, I, d, k, g)
    ref = B.bpr_gradient_naive(rows, users, items, neg, X, theta, U, I, d, k)
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-7)


def test_scores_and_top_items_match_naive():
    rng = np.random.default_rng(2)
    U, I, d, k = 5, 7, 3, 3
    bi = rng.normal(size=I).astype(np.float32)
    Vu, Vi, Vx = (rng.normal(size=(m, k)).astype(np.float32) for m in (U, I, d))
    u, i = rng.integers(0, U, 9), rng.integers(0, I, 9)
    X = rng.normal(size=(9, d)) * (rng.random((9, d)) < 0.5)
    import scipy.sparse as sp

    Xc = sp.csr_matrix(X)
    got = pair_scores(u, i, Xc.indptr, Xc.indices, Xc.data, bi, Vu, Vi, Vx)
    np.testing.assert_allclose(got, pair_scores_naive(u, i, X, bi, Vu, Vi, Vx), rtol=1e-9)
    Vi[3] = Vi[5]  # a tie: the lower index first
    bi[3] = bi[5]
    items, scores = top_items(np.arange(U), bi, Vu, Vi, 4)
    ref_items, ref_scores = top_items_naive(np.arange(U), bi, Vu, Vi, 4)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-9)
    # recommend() scores are transform()'s scores of the same pairs, bit for bit
    empty = np.zeros(U * 4 + 1, np.int64)
    again = pair_scores(np.repeat(np.arange(U), 4), items.reshape(-1), empty,
                        np.zeros(0, np.int32), np.zeros(0), bi, Vu, Vi, Vx)
    np.testing.assert_array_equal(again, scores.reshape(-1))


def test_same_model_for_any_workers_and_planted_order_recovered():
    users, items, top = _planted()
    ref, hist = _fit(users, items, 40, 30, PARAMS, workers=1)
    for workers in (2, 3):
        got, _ = _fit(users, items, 40, 30, PARAMS, workers=workers)
        for key in ref:
            np.testing.assert_array_equal(got[key], ref[key], err_msg=f"{workers} {key}")
    assert hist["loss"][-1] < hist["loss"][0]
    # a longer fit ranks each user's held-in positives high
    arrays, hist = _fit(users, items, 40, 30, dict(PARAMS, maxIter=60, factorSize=4), 1)
    pred = FMRankerPredictor(np.arange(40), np.arange(30), arrays["item_bias"],
                             arrays["user_factors"], arrays["item_factors"],
                             arrays["feature_factors"], 0)
    rec, _ = pred.recommend(np.arange(40), 6)
    hits = np.mean([len(set(rec[u]) & set(top[u, :6])) / 6 for u in range(40)])
    assert hits > 0.8, hits
    assert hist["loss"][-1] < 0.3


def test_context_features_train_and_score():
    users, items, _ = _planted(n_users=20, n_items=12, per_user=4)
    X = (np.random.default_rng(4).random((users.size, 3)) < 0.4).astype(float)
    a1, _ = _fit(users, items, 20, 12, PARAMS, 1, X=X)
    a2, _ = _fit(users, items, 20, 12, PARAMS, 2, X=X)
    np.testing.assert_array_equal(a1["feature_factors"], a2["feature_factors"])
    assert a1["feature_factors"].shape == (3, 4)
    pred = FMRankerPredictor(np.arange(20) * 10, np.arange(12) + 100, a1["item_bias"],
                             a1["user_factors"], a1["item_factors"], a1["feature_factors"], 3)
    s = pred.score([0, 10, 999], [100, 111, 100], X[:3])
    assert np.isfinite(s[:2]).all() and np.isnan(s[2])
    with pytest.raises(ValueError, match="expected"):
        pred.score([0], [100], np.zeros((1, 2)))
    ids, sc = pred.recommend([10, 12345], 20)
    assert ids.shape == (2, 12) and (ids[1] == -1).all() and np.isnan(sc[1]).all()
    assert set(ids[0]) == set(range(100, 112))
    with pytest.raises(ValueError, match="disagree"):
        FMRankerPredictor(np.arange(20), np.arange(12), a1["item_bias"][:5],
                          a1["user_factors"], a1["item_factors"], a1["feature_factors"], 3)
