"""The XE-NDCG ranking objective (``sparkxml_kernels.gbt.ranking_xendcg``): the compiled
kernel against its naive twin, its generator against LightGBM's, and boosted stumps equal to
LightGBM's ``rank_xendcg`` round after round (the same draws: seed + query index)."""
import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data
from sparkxml_kernels.gbt import ranking as R
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.loss import make_loss
from sparkxml_kernels.gbt.ranking_xendcg import query_states

lgb = pytest.importorskip("lightgbm")


def _queries(seed=0, n_queries=15):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=n_queries)  # size-1 queries get zero gradients
    gp = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    y = rng.integers(0, 4, size=gp[-1]).astype(float)
    return y, rng.normal(size=gp[-1]), gp


def test_xendcg_matches_naive_over_rounds_and_weights():
    y, raw, gp = _queries()
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    a = make_loss(R.configure_objective("xendcg", seed=7))
    b = make_loss(R.configure_objective("xendcg", seed=7))
    for _ in range(3):  # the generators advance every round, the same in both
        g1, h1, g2, h2 = (np.empty(y.size) for _ in range(4))
        a.gradients(y, raw, w, g1, h1, gp)
        b.gradients_naive(y, raw, w, g2, h2, gp)
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(h1, h2, rtol=1e-12, atol=1e-15)
    single = np.flatnonzero(np.diff(gp) == 1)
    assert np.all(g1[gp[single]] == 0) and np.all(h1[gp[single]] == 0)
    # per query the first-order terms sum to 0 (softmax minus a distribution)
    g, h = np.empty(y.size), np.empty(y.size)
    make_loss(R.configure_objective("xendcg", seed=7)).gradients(y, raw, None, g, h, gp)
    assert np.all(h >= 0) and np.all(np.isfinite(g))


def test_query_states_follow_the_query_with_row_ids():
    gp = np.array([0, 3, 5, 9])
    assert query_states(gp, 5).tolist() == [5, 6, 7]  # LightGBM's seed + query index
    ids = np.arange(100, 109)
    s = query_states(gp, 5, ids)
    # the same query at another position (after other queries) draws the same numbers
    s2 = query_states(np.array([0, 4, 6]), 5, np.concatenate(([7, 8, 9, 10], ids[3:5])))
    assert s2[1] == s[1] and s.dtype == np.int64 and np.all((s >= 0) & (s < 2**32))


def test_boosted_stumps_equal_lightgbm_rank_xendcg():
    rng = np.random.default_rng(3)
    y, _, gp = _queries(3, 30)
    n = y.size
    x = (rng.random(n) < 0.5).astype(float)
    # one binary feature, mostly "relevant": every round splits it, the only split there is
    X = np.column_stack([np.where(rng.random(n) < 0.7, y >= 2, x).astype(float)])
    rounds = 6
    ds = lgb.Dataset(X, label=y, group=np.diff(gp), params={"max_bin": 4, "verbose": -1})
    bst = lgb.train(dict(objective="rank_xendcg", objective_seed=5, num_leaves=2,
                         learning_rate=0.3, lambda_l2=0.0, min_data_in_leaf=1,
                         min_sum_hessian_in_leaf=0.0, min_gain_to_split=0.0,
                         num_threads=1, verbose=-1, deterministic=True),
                    ds, num_boost_round=rounds)
    edges = [np.array([0.5])]
    params = dict(objective=R.configure_objective("xendcg", seed=5), maxIter=rounds,
                  maxDepth=1, stepSize=0.3, regLambda=0.0, minChildWeight=0.0)
    pred, _ = train(bin_data(X, edges), y, None, edges, params, group_ptr=gp)
    ours = pred.predict_raw(X)
    for r in (1, rounds):
        np.testing.assert_allclose(pred.truncate(r).predict_raw(X),
                                   bst.predict(X, num_iteration=r), rtol=1e-5, atol=1e-6)
    assert np.unique(ours).size == 2 and pred.n_trees == rounds
