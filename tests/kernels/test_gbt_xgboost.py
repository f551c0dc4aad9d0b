"""Cross-check against XGBoost hist: with the same bins the first tree is the same."""
import json

import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train

xgb = pytest.importorskip("xgboost")


def _data(seed, n=3000):
    # few distinct values per feature: XGBoost's cut points are then the values themselves
    # (bin = [v_i, v_i+1)) and ours are midpoints, so both have exactly one bin per value
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, n) * s for k, s in
                         ((12, 1.0), (5, 0.5), (30, 0.1), (2, 1.0), (7, 3.0))]).astype(float)
    X[rng.random(n) < 0.15, 2] = np.nan  # missing values: default directions must match too
    y = (np.sin(X[:, 0]) + 0.8 * (X[:, 1] > 1) + np.nan_to_num(X[:, 2], nan=2.5)
         + 0.3 * X[:, 3] * X[:, 4] + 0.2 * rng.standard_normal(n))
    return X, y


def _walk(xgb_node, ours, i, X_vals, out):
    """Compare XGBoost's JSON node with our node i, recursively."""
    if "leaf" in xgb_node:
        assert ours.left[i] == -1, f"node {i}: XGBoost has a leaf, we split"
        out.append((xgb_node["leaf"], ours.value[i]))
        return
    assert ours.left[i] >= 0, f"node {i}: XGBoost splits, we have a leaf"
    f = int(xgb_node["split"][1:])
    assert ours.feature[i] == f, f"node {i}: feature {ours.feature[i]} vs XGBoost {f}"
    cond = xgb_node["split_condition"]
    vals = X_vals[f]
    # XGBoost sends float32(x) < cond left; we send x <= threshold left: same partition
    np.testing.assert_array_equal(vals.astype(np.float32) < np.float32(cond),
                                  vals <= ours.threshold[i])
    missing_left = xgb_node["missing"] == xgb_node["yes"]
    assert bool(ours.default_left[i]) == missing_left, f"node {i}: default direction"
    kids = {c["nodeid"]: c for c in xgb_node["children"]}
    _walk(kids[xgb_node["yes"]], ours, ours.left[i], X_vals, out)
    _walk(kids[xgb_node["no"]], ours, ours.right[i], X_vals, out)


@pytest.mark.parametrize("seed,objective", [(0, "squared_error"), (1, "squared_error"),
                                            (2, "logistic")])
def test_first_tree_matches_xgboost_hist(seed, objective):
    X, y = _data(seed)
    if objective == "logistic":
        y = (y > np.median(y)).astype(float)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    assert all(len(e) < 40 for e in edges)  # exact bins
    params = dict(maxIter=1, maxDepth=3, stepSize=0.3, regLambda=1.0, minChildWeight=1.0,
                  objective=objective)
    pred, _ = train(bin_data(X, edges), y, None, edges, params)
    base = float(pred.base_score[0])
    xparams = dict(tree_method="hist", max_depth=3, eta=0.3, reg_lambda=1.0, max_bin=256,
                   min_child_weight=1.0, nthread=1,
                   objective="reg:squarederror" if objective == "squared_error"
                   else "binary:logistic",
                   base_score=base if objective == "squared_error"
                   else 1.0 / (1.0 + np.exp(-base)))
    bst = xgb.train(xparams, xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=1)
    dump = json.loads(bst.get_dump(dump_format="json")[0])
    X_vals = [np.unique(X[:, f][~np.isnan(X[:, f])]) for f in range(X.shape[1])]
    leaves = []
    _walk(dump, pred, 0, X_vals, leaves)
    assert len(leaves) == 8
    xl, ol = np.array(leaves).T
    np.testing.assert_allclose(ol, xl, rtol=1e-4, atol=1e-5)  # XGBoost stores float32
    # and the raw predictions agree
    np.testing.assert_allclose(pred.predict_raw(X), bst.predict(xgb.DMatrix(X),
                                                                output_margin=True),
                               rtol=1e-4, atol=1e-4)
