"""treeMethod "exact" and "approx" (tree_methods.py): exact's first tree against XGBoost's
tree_method="exact" node for node, approx's test AUC beside XGBoost's approx, the per-tree
candidates and their re-binning, ranks, and bad options."""
import json

import numpy as np
import pytest
from _data import data_path
from _gbt_helpers import run_ranks

from sparkxml_kernels.binning import merge_sketches, sketch
from sparkxml_kernels.gbt.binned import bin_matrix, to_sparse
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.metrics import auc_exact
from sparkxml_kernels.gbt.tree_methods import (
    EXACT_MAX_VALUES,
    exact_edges,
    lookup_table,
    method_edges,
    remap_bins,
    remap_bins_naive,
    weighted_cuts,
)

xgb = pytest.importorskip("xgboost")


def _exact_data(seed, n=2000):
    """float32 values (XGBoost's precision) with 6 to ~600 distinct values a feature (more
    than 255: uint16 bins), missing values in one feature."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.round(rng.normal(size=n), 2), rng.integers(0, 7, n) * 0.5,
                         np.round(rng.uniform(0, 10, n), 1),
                         np.round(rng.exponential(size=n), 3)])
    X = X.astype(np.float32).astype(float)
    X[rng.random(n) < 0.1, 2] = np.nan
    y = (np.sin(2 * X[:, 0]) + (X[:, 1] > 1.2) + 0.2 * np.nan_to_num(X[:, 2], nan=3.0)
         + X[:, 3] + 0.3 * rng.standard_normal(n))
    return X, y


def _walk(xnode, pred, i, out):
    """Compare XGBoost's JSON node (with stats) with our node i, recursively."""
    if "leaf" in xnode:
        assert pred.left[i] == -1, f"node {i}: XGBoost has a leaf, we split"
        out.append((xnode["leaf"], pred.value[i], xnode["cover"], pred.cover[i]))
        return
    assert pred.left[i] >= 0, f"node {i}: XGBoost splits, we have a leaf"
    assert pred.feature[i] == int(xnode["split"][1:]), f"node {i}: feature"
    # XGBoost's split value is float32((v_left + v_right) / 2)
    assert np.float32(pred.threshold[i]) == np.float32(xnode["split_condition"]), f"node {i}"
    assert bool(pred.default_left[i]) == (xnode["missing"] == xnode["yes"]), f"node {i}"
    np.testing.assert_allclose(pred.gain[i], xnode["gain"], rtol=2e-5)
    np.testing.assert_allclose(pred.cover[i], xnode["cover"], rtol=1e-6)
    kids = {c["nodeid"]: c for c in xnode["children"]}
    _walk(kids[xnode["yes"]], pred, pred.left[i], out)
    _walk(kids[xnode["no"]], pred, pred.right[i], out)


@pytest.mark.parametrize("seed,objective", [(0, "squared_error"), (1, "logistic")])
def test_exact_first_tree_matches_xgboost_exact(seed, objective):
    X, y = _exact_data(seed)
    if objective == "logistic":
        y = (y > np.median(y)).astype(float)
    edges = method_edges(X, None, "exact", 256)
    assert max(len(e) for e in edges) > 255  # uint16 bins
    params = dict(maxIter=1, maxDepth=4, stepSize=0.3, minChildWeight=1.0,
                  objective=objective, treeMethod="exact")
    pred, _ = train(bin_matrix(X, edges), y, None, edges, params)
    base = float(pred.base_score[0])
    bst = xgb.train(dict(tree_method="exact", max_depth=4, eta=0.3, min_child_weight=1.0,
                         nthread=1, objective="reg:squarederror" if objective ==
                         "squared_error" else "binary:logistic",
                         base_score=base if objective == "squared_error"
                         else 1.0 / (1.0 + np.exp(-base))),
                    xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=1)
    leaves = []
    _walk(json.loads(bst.get_dump(dump_format="json", with_stats=True)[0]), pred, 0, leaves)
    assert len(leaves) >= 12  # both stopped at the same nodes (the walk checks it)
    xl, ol, xc, oc = np.array(leaves).T
    np.testing.assert_allclose(ol, xl, rtol=1e-5, atol=1e-7)  # XGBoost stores float32
    np.testing.assert_allclose(oc, xc, rtol=1e-6)
    np.testing.assert_allclose(pred.predict_raw(X).ravel(),
                               bst.predict(xgb.DMatrix(X), output_margin=True),
                               rtol=1e-5, atol=1e-5)


def test_exact_same_tree_from_sparse_bins_and_two_ranks():
    X, y = _exact_data(2, n=1200)
    edges = method_edges(X, None, "exact", 256)
    params = dict(maxIter=2, maxDepth=3, treeMethod="exact", subsamplingRate=0.8, seed=5)
    binned = bin_matrix(X, edges)
    one, _ = train(binned, y, None, edges, params)
    sp, _ = train(to_sparse(binned), y, None, edges, params)
    halves = np.array_split(np.arange(X.shape[0]), 2)
    two = run_ranks(2, lambda r, c: train(binned[halves[r]], y[halves[r]], None, edges, params,
                                          collective=c, row_ids=halves[r].astype(np.int64))[0])
    for other in (sp, two[0]):
        np.testing.assert_array_equal(other.feature, one.feature)
        np.testing.assert_array_equal(other.threshold, one.threshold)
        np.testing.assert_allclose(other.value, one.value, rtol=1e-12)


def test_exact_edges_refuse_too_many_values():
    # a summary pruned below the feature's distinct values is not exact
    X = np.column_stack([np.arange(300.0), np.arange(300.0) % 3])
    s = sketch(X, None, 256, size=256)
    assert exact_edges(sketch(X, None, 256, size=EXACT_MAX_VALUES + 1))[0].size == 300
    with pytest.raises(ValueError, match="feature 'age' has more than 65534 distinct"):
        exact_edges(merge_sketches([s, s]), feature_names=["age", "b"])


def test_weighted_cuts_and_remap():
    w = np.array([0, 5, 0, 1, 1, 1, 1, 0], float)
    np.testing.assert_array_equal(weighted_cuts(w, 8), [1, 3, 4, 5])  # one bin per value
    rng = np.random.default_rng(0)
    w = rng.exponential(size=1000)
    cuts = weighted_cuts(w, 16)
    assert cuts.size == 15
    share = np.diff(np.concatenate(([0.0], np.cumsum(w)[cuts], [w.sum()]))) / w.sum()
    assert share.min() > 0.5 / 16 and share.max() < 1.5 / 16
    fine = rng.integers(0, 1000, (500, 3)).astype(np.uint16)
    fine[rng.random((500, 3)) < 0.05] = 65535  # missing
    lut = lookup_table([cuts, cuts[:4], np.empty(0, np.int64)], 1001, np.uint8)
    want = remap_bins_naive(fine, lut)
    np.testing.assert_array_equal(remap_bins(fine, lut), want)
    np.testing.assert_array_equal(remap_bins(fine, lut, n_threads=2), want)
    np.testing.assert_array_equal(remap_bins(to_sparse(fine), lut).to_dense(), want)
    assert want[fine[:, 0] == 65535, 0].tolist() == [255] * int((fine[:, 0] == 65535).sum())


@pytest.fixture(scope="module")
def lgb_binary():
    tr = np.loadtxt(data_path("lightgbm_binary", "binary.train"))
    te = np.loadtxt(data_path("lightgbm_binary", "binary.test"))
    return tr[:, 1:], tr[:, 0], te[:, 1:], te[:, 0]


def test_approx_auc_beside_xgboost_approx(lgb_binary):
    X, y, Xt, yt = lgb_binary
    edges = method_edges(X, None, "approx", 64)
    assert max(len(e) for e in edges) > 255  # the fine grid
    params = dict(maxIter=30, maxDepth=5, stepSize=0.2, objective="logistic", maxBins=64)
    pred, _ = train(bin_matrix(X, edges), y, None, edges, dict(params, treeMethod="approx"))
    # every split is one of the tree's own 63 candidates at most: a threshold on the grid
    assert np.isin(pred.threshold[pred.left >= 0],
                   np.concatenate(edges)).all()
    ours = auc_exact(yt, pred.predict_raw(Xt).ravel())
    bst = xgb.train(dict(tree_method="approx", max_depth=5, eta=0.2, max_bin=64, nthread=1,
                         objective="binary:logistic"), xgb.DMatrix(X, label=y), 30)
    theirs = auc_exact(yt, bst.predict(xgb.DMatrix(Xt)))
    assert abs(ours - theirs) < 0.01, (ours, theirs)
    # the candidates move with the hessians: not the hist model of the same maxBins
    hist_edges = method_edges(X, None, "hist", 64)
    hist, _ = train(bin_matrix(X, hist_edges), y, None, hist_edges, params)
    assert not np.array_equal(hist.threshold, pred.threshold)


def test_approx_two_ranks_same_model(lgb_binary):
    X, y = lgb_binary[0][:2000], lgb_binary[1][:2000]
    edges = method_edges(X, None, "approx", 32)
    binned = bin_matrix(X, edges)
    params = dict(maxIter=3, maxDepth=4, objective="logistic", maxBins=32,
                  treeMethod="approx")
    one, _ = train(binned, y, None, edges, params)
    halves = np.array_split(np.arange(X.shape[0]), 2)
    two = run_ranks(2, lambda r, c: train(binned[halves[r]], y[halves[r]], None, edges, params,
                                          collective=c)[0])
    np.testing.assert_array_equal(two[0].feature, one.feature)
    np.testing.assert_array_equal(two[0].threshold, one.threshold)
    np.testing.assert_allclose(two[0].value, one.value, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("params,match", [
    (dict(treeMethod="greedy"), "treeMethod must be one of"),
    (dict(treeMethod="exact", growPolicy="lossguide", maxLeaves=8), "grows depthwise only"),
    (dict(treeMethod="approx", categoricalFeatures=[0]), "does not split categorical"),
])
def test_bad_tree_method_options(params, match):
    X = np.arange(40.0).reshape(20, 2)
    edges = method_edges(X, None, "hist", 16)
    with pytest.raises(ValueError, match=match):
        train(bin_matrix(X, edges), np.arange(20.0), None, edges, dict(params, maxIter=1),
              categories=[np.arange(20.0), None])
