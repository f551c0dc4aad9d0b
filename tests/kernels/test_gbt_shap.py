"""SHAP contributions (TreeSHAP): against the exponential-time definition, summing to the raw
score, and equal to XGBoost's ``pred_contribs`` on the SAME trees (XGBoost's trees loaded
into our predictor, so the comparison tests the algorithm, not the training)."""
import json

import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.gbt.shap import expected_values, tree_shap_naive


def _data(seed=0, n=900, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    y = Z[:, 0] + Z[:, 1] * Z[:, 2] + (X[:, 3] > 0) + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("objective,k", [("squared_error", 1), ("logistic", 1), ("softmax", 3)])
def test_tree_shap_equals_the_definition_and_sums_to_the_margin(objective, k):
    X, y = _data()
    if objective == "logistic":
        y = (y > 0.5).astype(float)
    elif objective == "softmax":
        y = (y > 0).astype(float) + (y > 1)
    edges = edges_from_sketch(sketch(X, None, 32), 32)
    pred, _ = train(bin_data(X, edges), y, None, edges,
                    dict(objective=objective, numClasses=k, maxIter=4, maxDepth=4,
                         stepSize=0.5, subsamplingRate=0.8))
    rows = X[:25]
    phi = pred.predict_contributions(rows)
    shape = (25, X.shape[1] + 1) if k == 1 else (25, k, X.shape[1] + 1)
    assert phi.shape == shape
    np.testing.assert_allclose(phi, tree_shap_naive(pred, rows), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(phi.sum(-1), pred.predict_raw(rows), rtol=1e-12, atol=1e-12)
    # the bias is the base score plus each tree's cover-weighted expected value
    bias = pred.base_score + np.bincount(pred.tree_outputs, weights=expected_values(pred),
                                         minlength=pred.n_outputs)
    np.testing.assert_allclose(phi[..., -1], np.broadcast_to(bias if k > 1 else bias[0],
                                                             phi[..., -1].shape))
    # with a base margin the bias moves by it
    m = np.linspace(-1, 1, 25 * k).reshape(25, k) if k > 1 else np.linspace(-1, 1, 25)
    phi_m = pred.predict_contributions(rows, base_margin=m)
    np.testing.assert_allclose(phi_m[..., :-1], phi[..., :-1])
    np.testing.assert_allclose(phi_m.sum(-1), pred.predict_raw(rows, base_margin=m))


def test_a_feature_met_twice_on_a_path():
    # depth-6 trees on two features: features repeat along paths (the UNWIND branch)
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (600, 2))
    y = np.sin(4 * X[:, 0]) * np.cos(3 * X[:, 1])
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    pred, _ = train(bin_data(X, edges), y, None, edges, dict(maxIter=3, maxDepth=6))
    assert (pred.feature[pred.left >= 0] == 0).sum() > 6
    np.testing.assert_allclose(pred.predict_contributions(X[:40]), tree_shap_naive(pred, X[:40]),
                               rtol=1e-10, atol=1e-12)


xgb = pytest.importorskip("xgboost")


def predictor_from_xgboost(bst, n_features, objective, n_outputs):
    """XGBoost's trees (``save_raw("json")``) as a TreeEnsemblePredictor: same structure,
    covers (sum_hessian), leaf values and default directions. XGBoost sends ``float32(x) <
    cond`` left, we send ``x <= threshold`` left: for float32-exact x the two agree with
    ``threshold = nextafter(cond, -inf)``."""
    model = json.loads(bst.save_raw("json"))["learner"]
    bs = model["learner_model_param"]["base_score"]
    base = np.atleast_1d(np.asarray(json.loads(bs) if bs.startswith("[") else float(bs)))
    booster = model["gradient_booster"]["model"]
    cols = {k: [] for k in ("feature", "threshold", "default_left", "left", "right", "value",
                            "gain", "cover")}
    offsets = [0]
    for tr in booster["trees"]:
        left = np.asarray(tr["left_children"])
        leaf = left < 0
        cond = np.asarray(tr["split_conditions"], np.float32).astype(np.float64)
        cols["feature"].append(np.where(leaf, -1, tr["split_indices"]))
        cols["threshold"].append(np.where(leaf, np.nan, np.nextafter(cond, -np.inf)))
        cols["default_left"].append(np.asarray(tr["default_left"], np.uint8))
        cols["left"].append(left)
        cols["right"].append(np.asarray(tr["right_children"]))
        cols["value"].append(np.where(leaf, cond, 0.0))
        cols["gain"].append(np.asarray(tr["loss_changes"]))
        cols["cover"].append(np.asarray(tr["sum_hessian"]))
        offsets.append(offsets[-1] + left.size)
    return TreeEnsemblePredictor(
        tree_offsets=offsets, n_outputs=n_outputs,
        base_score=np.resize(base, n_outputs), objective=objective, n_features=n_features,
        tree_outputs=np.asarray(booster["tree_info"]),
        **{k: np.concatenate(v) for k, v in cols.items()})


@pytest.mark.parametrize("objective,k", [("reg:squarederror", 1), ("multi:softprob", 3)])
def test_equal_to_xgboost_pred_contribs_on_the_same_trees(objective, k):
    rng = np.random.default_rng(2)
    n, d = 2000, 8
    X = rng.standard_normal((n, d)).astype(np.float32).astype(np.float64)
    X[rng.random((n, d)) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    y = Z[:, 0] + Z[:, 1] * Z[:, 2] + (X[:, 3] > 0) + 0.1 * rng.standard_normal(n)
    params = dict(tree_method="hist", max_depth=5, eta=0.3, nthread=1, objective=objective)
    if k > 1:
        y = (y > 0.5).astype(float) + (y > 1.5)
        params["num_class"] = k
    else:
        params["base_score"] = 0.7
    bst = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=10)
    ours = predictor_from_xgboost(bst, d, "squared_error" if k == 1 else "softmax", k)
    rows = xgb.DMatrix(X[:300])
    np.testing.assert_allclose(ours.predict_raw(X[:300]), bst.predict(rows, output_margin=True),
                               rtol=1e-5, atol=1e-5)
    theirs = bst.predict(rows, pred_contribs=True)
    phi = ours.predict_contributions(X[:300])
    assert phi.shape == theirs.shape
    # XGBoost computes in float32; the contributions are O(1)
    np.testing.assert_allclose(phi, theirs, rtol=1e-4, atol=2e-5)
    assert np.abs(theirs[..., :-1]).max() > 0.5  # a real test: large contributions
