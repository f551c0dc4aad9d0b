"""XGBoost parity of the engine: scale_pos_weight, base_margin, missing, continued training,
and the per-round training-set metric."""
import json

import numpy as np
import pytest
from test_gbt_xgboost import _data, _walk

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.metrics import metric_from_stats, metric_stats

xgb = pytest.importorskip("xgboost")
XGB = dict(tree_method="hist", max_depth=3, eta=0.3, reg_lambda=1.0, max_bin=256,
           min_child_weight=1.0, nthread=1)
OURS = dict(maxDepth=3, stepSize=0.3, regLambda=1.0, minChildWeight=1.0)


def _same_first_tree(bst, pred, X):
    from types import SimpleNamespace

    X_vals = [np.unique(X[:, f][~np.isnan(X[:, f])]) for f in range(X.shape[1])]
    leaves = []
    _walk(json.loads(bst.get_dump(dump_format="json")[0]), SimpleNamespace(**pred.tree(0)), 0,
          X_vals, leaves)
    xl, ol = np.array(leaves).T
    np.testing.assert_allclose(ol, xl, rtol=1e-4, atol=1e-5)


def test_scale_pos_weight_as_xgboost():
    X, y = _data(3)
    y = (y > np.quantile(y, 0.8)).astype(float)  # 20% positives
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, _ = train(bin_data(X, edges), y, None, edges,
                    dict(OURS, maxIter=4, objective="logistic", scalePosWeight=4.0))
    base = float(pred.base_score[0])
    # the base score is the log-odds of the positives weighted by scale_pos_weight
    assert base == pytest.approx(np.log(4.0 * y.mean() / (1 - y.mean())))
    bst = xgb.train(dict(XGB, objective="binary:logistic", scale_pos_weight=4.0,
                         base_score=1.0 / (1.0 + np.exp(-base))),
                    xgb.DMatrix(X, label=y), num_boost_round=4)
    _same_first_tree(bst, pred, X)
    np.testing.assert_allclose(pred.predict_raw(X), bst.predict(xgb.DMatrix(X), output_margin=True),
                               rtol=1e-4, atol=1e-4)
    plain, _ = train(bin_data(X, edges), y, None, edges, dict(OURS, maxIter=4,
                                                              objective="logistic"))
    assert np.abs(plain.predict_raw(X) - pred.predict_raw(X)).max() > 0.5
    with pytest.raises(ValueError, match="binary classification only"):
        train(bin_data(X, edges), y, None, edges, dict(maxIter=1, scalePosWeight=2.0))


def test_base_margin_as_xgboost():
    X, y = _data(4)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    margin = np.sin(np.arange(len(y)) * 0.37) * 2.0
    pred, _ = train(bin_data(X, edges), y, None, edges,
                    dict(OURS, maxIter=4), base_margin=margin)
    bst = xgb.train(dict(XGB, objective="reg:squarederror"),
                    xgb.DMatrix(X, label=y, base_margin=margin), num_boost_round=4)
    _same_first_tree(bst, pred, X)
    theirs = bst.predict(xgb.DMatrix(X, base_margin=margin), output_margin=True)
    np.testing.assert_allclose(pred.predict_raw(X, base_margin=margin), theirs, rtol=1e-4,
                               atol=1e-4)
    # a margin replaces the base score
    np.testing.assert_allclose(pred.predict_raw(X, base_margin=np.zeros(len(y))) + margin,
                               pred.predict_raw(X, base_margin=margin), atol=1e-12)


def test_missing_value_reads_as_nan():
    X, y = _data(5)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, _ = train(bin_data(X, edges), y, None, edges, dict(OURS, maxIter=5))
    assert np.isnan(X).any()
    sentinel = np.where(np.isnan(X), -999.0, X)
    with_missing = pred.with_options(missing=-999.0)
    np.testing.assert_array_equal(with_missing.predict_raw(sentinel), pred.predict_raw(X))
    assert np.abs(pred.predict_raw(sentinel) - pred.predict_raw(X)).max() > 0.01
    # missing = 0.0 on CSR input: absent entries are missing too
    Z = np.where(np.isnan(X), 0.0, X)
    Z[:, 1] = 0.0
    mask = Z != 0
    csr = (np.concatenate([[0], np.cumsum(mask.sum(1))]), np.nonzero(mask)[1], Z[mask],
           Z.shape[1])
    as_nan = np.where(Z == 0.0, np.nan, Z)
    zero_missing = pred.with_options(missing=0.0)
    np.testing.assert_array_equal(zero_missing.predict_raw(csr), pred.predict_raw(as_nan))
    np.testing.assert_array_equal(zero_missing.predict_raw(Z), pred.predict_raw(as_nan))
    np.testing.assert_array_equal(zero_missing.predict_leaf(csr), pred.predict_leaf(as_nan))


@pytest.mark.parametrize("objective", ["squared_error", "softmax"])
def test_continued_training_equals_one_longer_fit(objective):
    X, y = _data(6)
    k = 1
    if objective == "softmax":
        y, k = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float), 3
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    Xb = bin_data(X, edges)
    p = dict(OURS, objective=objective, numClasses=k)
    whole, _ = train(Xb, y, None, edges, dict(p, maxIter=8))
    first, _ = train(Xb, y, None, edges, dict(p, maxIter=5))
    rest, _ = train(Xb, y, None, edges, dict(p, maxIter=3), base_margin=first.predict_raw(X))
    both = first.concat(rest)
    assert both.n_trees == whole.n_trees
    for key in ("feature", "threshold", "left", "right", "default_left", "value", "cover"):
        np.testing.assert_array_equal(getattr(both, key), getattr(whole, key))
    np.testing.assert_array_equal(both.predict_raw(X), whole.predict_raw(X))
    with pytest.raises(ValueError, match="cannot append"):
        first.concat(train(Xb, (y > 1).astype(float), None, edges,
                           dict(maxIter=1, objective="logistic"))[0])


@pytest.mark.parametrize("objective,metric", [("squared_error", "rmse"),
                                              ("logistic", "logloss"),
                                              ("logistic", "auc"),
                                              ("softmax", "mlogloss")])
def test_training_history_is_the_metric_of_each_round(objective, metric):
    X, y = _data(7)
    rng = np.random.default_rng(0)
    w = rng.uniform(0.2, 2.0, len(y))
    k = 1
    if objective == "logistic":
        y = (y > np.median(y)).astype(float)
    elif objective == "softmax":
        y, k = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float), 3
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    extra = {"scalePosWeight": 2.0} if objective == "logistic" else {}
    pred, hist = train(bin_data(X, edges), y, w, edges,
                       dict(maxIter=6, objective=objective, numClasses=k, evalMetric=metric,
                            stepSize=0.5, **extra))
    want = [metric_from_stats(metric, metric_stats(metric, y, pred.truncate(r).predict_raw(X),
                                                   w))
            for r in range(1, 7)]
    np.testing.assert_allclose(hist["train"], want, rtol=1e-9)
    assert hist["train"][-1] != hist["train"][0]
