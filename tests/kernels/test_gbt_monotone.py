"""Monotone constraints: the split kernel against its naive twin, monotone predictions, and
the same trees as XGBoost hist with ``monotone_constraints``."""
import json
from types import SimpleNamespace

import numpy as np
import pytest
from test_gbt_splitting import _hists
from test_gbt_xgboost import _data, _walk

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.grower import TreeParams, grow_tree, grow_tree_naive
from sparkxml_kernels.gbt.splitting import (
    SplitParams,
    check_monotone,
    find_best_splits,
    find_best_splits_naive,
)


@pytest.mark.parametrize("params", [SplitParams(), SplitParams(reg_lambda=3.0, reg_alpha=1.5,
                                                               min_split_loss=0.2,
                                                               min_child_weight=5.0)])
def test_constrained_splits_match_naive(params):
    rng = np.random.default_rng(7)
    for seed in range(5):
        hists, sums, nb, edges = _hists(seed)
        mask = np.ones(len(nb), np.uint8)
        mono = rng.integers(-1, 2, len(nb)).astype(np.int8)
        lo = rng.uniform(-0.5, 0.0, len(sums))
        bounds = np.column_stack([lo, lo + rng.uniform(0.0, 1.0, len(sums))])
        bounds[0] = [-np.inf, np.inf]
        a = find_best_splits(hists, sums, nb, mask, params, edges, 0.0, mono, bounds)
        b = find_best_splits_naive(hists, sums, nb, mask, params, edges, 0.0, mono, bounds)
        for k in ("feature", "bin", "default_left", "threshold"):
            np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
        np.testing.assert_allclose(a.gain, b.gain, rtol=1e-9)


def test_a_split_against_the_constraint_is_rejected():
    # left child wants a larger weight than the right one: fine unconstrained, rejected for
    # an increasing constraint, kept for a decreasing one
    hist = np.zeros((1, 1, 3, 2))
    hist[0, 0, 0] = [-6.0, 2.0]
    hist[0, 0, 1] = [6.0, 2.0]
    sums = np.array([[0.0, 4.0]])
    nb, mask, p = np.array([2], np.int32), np.ones(1, np.uint8), SplitParams()
    assert find_best_splits(hist, sums, nb, mask, p).feature[0] == 0
    assert find_best_splits(hist, sums, nb, mask, p, monotone=np.int8([1])).feature[0] == -1
    assert find_best_splits(hist, sums, nb, mask, p, monotone=np.int8([-1])).feature[0] == 0


def test_check_monotone():
    assert check_monotone(None, 3) is None and check_monotone([0, 0], 3) is None
    np.testing.assert_array_equal(check_monotone([1, -1], 3), [1, -1, 0])
    with pytest.raises(ValueError, match="4 entries for 3 features"):
        check_monotone([1, 0, 0, 1], 3)
    with pytest.raises(ValueError, match="-1, 0 or 1"):
        check_monotone([2], 3)


def _regression(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 4))
    X[rng.random((n, 4)) < 0.05] = np.nan
    y = (np.sin(3 * np.nan_to_num(X[:, 0])) + np.nan_to_num(X[:, 0])
         - 0.5 * np.nan_to_num(X[:, 1]) ** 2 + np.nan_to_num(X[:, 2]) * np.nan_to_num(X[:, 3])
         + 0.3 * rng.standard_normal(n))
    return X, y


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_grower_matches_naive_with_constraints(policy):
    X, y = _regression(1, 1200)
    edges = edges_from_sketch(sketch(X, None, 32), 32)
    Xb = bin_data(X, edges)
    g, h = 0.3 - y, np.ones_like(y)
    tp = TreeParams(policy, 4, 12 if policy == "lossguide" else 0, 0.5,
                    SplitParams(min_child_weight=3.0), (1, -1, 0, 1))
    a, la = grow_tree(Xb, g, h, edges, tp)
    b, lb = grow_tree_naive(Xb, g, h, edges, tp)
    for k in ("feature", "bin", "left", "right", "default_left"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    np.testing.assert_allclose(a.value, b.value, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(la, lb)


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_predictions_are_monotone(policy):
    X, y = _regression(0)
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    cons = (1, -1, 0, 0)
    pred, _ = train(bin_data(X, edges), y, None, edges,
                    dict(maxIter=30, maxDepth=5, maxLeaves=16 if policy == "lossguide" else 0,
                         growPolicy=policy, stepSize=0.3, monotoneConstraints=cons))
    free, _ = train(bin_data(X, edges), y, None, edges,
                    dict(maxIter=30, maxDepth=5, maxLeaves=16 if policy == "lossguide" else 0,
                         growPolicy=policy, stepSize=0.3))
    rng = np.random.default_rng(3)
    grid = np.linspace(-2.5, 2.5, 101)
    seen_free_violation = False
    for f, c in ((0, 1), (1, -1)):
        for _ in range(20):
            base = rng.uniform(-2, 2, 4)
            Xg = np.tile(base, (grid.size, 1))
            Xg[:, f] = grid
            d = np.diff(pred.predict_raw(Xg))
            assert np.all(c * d >= -1e-12), (f, d.min(), d.max())
            seen_free_violation |= bool(np.any(c * np.diff(free.predict_raw(Xg)) < -1e-9))
    assert seen_free_violation  # without constraints the same data is not monotone


xgb = pytest.importorskip("xgboost")


def test_same_trees_as_xgboost_hist_with_monotone_constraints():
    X, y = _data(0)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    cons = (1, -1, 1, 0, -1)
    params = dict(maxIter=6, maxDepth=3, stepSize=0.3, regLambda=1.0, minChildWeight=1.0,
                  monotoneConstraints=cons)
    pred, _ = train(bin_data(X, edges), y, None, edges, params)
    base = float(pred.base_score[0])
    bst = xgb.train(dict(tree_method="hist", max_depth=3, eta=0.3, reg_lambda=1.0, max_bin=256,
                         min_child_weight=1.0, nthread=1, base_score=base,
                         monotone_constraints="(" + ",".join(map(str, cons)) + ")"),
                    xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=6)
    X_vals = [np.unique(X[:, f][~np.isnan(X[:, f])]) for f in range(X.shape[1])]
    for t, text in enumerate(bst.get_dump(dump_format="json")):
        leaves = []
        _walk(json.loads(text), SimpleNamespace(**pred.tree(t)), 0, X_vals, leaves)
        xl, ol = np.array(leaves).T
        np.testing.assert_allclose(ol, xl, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pred.predict_raw(X),
                               bst.predict(xgb.DMatrix(X), output_margin=True),
                               rtol=1e-4, atol=1e-4)
