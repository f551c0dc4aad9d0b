"""Custom objectives and metrics (``sparkxml_kernels.gbt.custom``): the same model as the
built-in objective, XGBoost's model with the same custom objective, errors for wrong
returns, a saved custom-objective model predicting its margin."""
import numpy as np
import pytest
from _objective_data import regression_case

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.custom import register_custom_metric, register_objective
from sparkxml_kernels.gbt.loss import make_loss
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor

xgb = pytest.importorskip("xgboost")


def squared(label, margin, weight):
    g = margin - label
    h = np.ones_like(margin)
    return (g, h) if weight is None else (g * weight, h * weight)


def squared_log(label, margin, weight):
    """XGBoost's demo custom objective (reg:squaredlogerror) on the margin."""
    m = np.maximum(margin, -1 + 1e-6)
    g = (np.log1p(m) - np.log1p(label)) / (m + 1)
    h = np.maximum((-np.log1p(m) + np.log1p(label) + 1) / (m + 1) ** 2, 1e-6)
    return g, h


def _data(n=1500, seed=0):
    X, y = regression_case("squared_error", np.random.default_rng(seed), n)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    return X, y, edges, bin_data(X, edges)


def test_custom_squared_error_equals_builtin_and_metric():
    X, y, edges, Xb = _data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    obj = register_objective(squared, "sq")
    mse = register_custom_metric(
        lambda y, m, w: (np.sum(w * (m - y) ** 2), np.sum(w)), "wmse")
    params = dict(maxIter=8, maxDepth=3, stepSize=0.3, baseScore=0.0)
    ours, hist = train(Xb, y, w, edges, dict(params, objective=obj, evalMetric=mse))
    ref, rhist = train(Xb, y, w, edges, dict(params, objective="squared_error",
                                             evalMetric="rmse"))
    np.testing.assert_allclose(ours.predict_raw(X), ref.predict_raw(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.sqrt(hist["train"]), rhist["train"], rtol=1e-9)
    assert ours.objective == "custom:sq"
    # saved and loaded without the function: predicts the margin
    back = TreeEnsemblePredictor.from_arrays(ours.to_arrays())
    np.testing.assert_array_equal(back.predict(X), ours.predict_raw(X))


def test_custom_objective_matches_xgboost_custom_objective():
    X, y, edges, Xb = _data(seed=2)
    y = np.abs(y) + 0.5
    obj = register_objective(squared_log, "sqlog")
    ours, _ = train(Xb, y, None, edges, dict(maxIter=10, maxDepth=3, stepSize=0.3,
                                             baseScore=0.5, objective=obj))

    def xgb_obj(pred, dtrain):
        return squared_log(dtrain.get_label().astype(np.float64), pred.astype(np.float64),
                           None)

    bst = xgb.train(dict(max_depth=3, eta=0.3, tree_method="hist", nthread=1,
                         base_score=0.5, disable_default_eval_metric=1),
                    xgb.DMatrix(X, label=y), num_boost_round=10, obj=xgb_obj)
    np.testing.assert_allclose(ours.predict_raw(X),
                               bst.predict(xgb.DMatrix(X), output_margin=True),
                               rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("fn,match", [
    (lambda y, m, w: (m - y, np.ones(3)), r"hess of shape \(3,\)"),
    (lambda y, m, w: (np.full_like(m, np.nan), np.ones_like(m)), "non-finite grad"),
    (lambda y, m, w: (m - y, np.zeros_like(m)), r"hessian <= 0"),
    (lambda y, m, w: m - y, r"must return \(grad, hess\)"),
])
def test_custom_objective_errors(fn, match):
    X, y, edges, Xb = _data(200)
    obj = register_objective(fn, "bad")
    with pytest.raises(ValueError, match=match):
        train(Xb, y, None, edges, dict(maxIter=1, objective=obj))


def test_custom_metric_and_name_errors():
    X, y, edges, Xb = _data(200)
    bad = register_custom_metric(lambda y, m, w: 1.0, "one")
    with pytest.raises(ValueError, match="two finite numbers"):
        train(Xb, y, None, edges, dict(maxIter=1, evalMetric=bad))
    with pytest.raises(ValueError, match="non-empty word"):
        register_objective(squared, "a:b")
    with pytest.raises(TypeError, match="callable"):
        register_custom_metric(3, "x")
    assert make_loss("custom:unknown-here").transform(np.ones(2)).tolist() == [1.0, 1.0]
