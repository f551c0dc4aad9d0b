"""Updaters on an existing model (updaters.py): refresh node for node against XGBoost's
``process_type="update", updater="refresh"``, its invariances, workers, refusals."""
import json
import warnings

import numpy as np
import pytest
from _gbt_helpers import few_values as _data
from _gbt_helpers import run_ranks

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.updaters import refresh, update

xgb = pytest.importorskip("xgboost")


def _fit(X, y, **kw):
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    return train(bin_data(X, edges), y, None, edges, dict(kw))[0]


def _walk(xn, tree, i, out):
    out.append((xn["cover"], tree["cover"][i]))
    if "leaf" in xn:
        assert tree["left"][i] == -1
        out.append((xn["leaf"], tree["value"][i]))
        return
    assert tree["feature"][i] == int(xn["split"][1:])
    out.append((xn["gain"], tree["gain"][i]))
    kids = {c["nodeid"]: c for c in xn["children"]}
    _walk(kids[xn["yes"]], tree, tree["left"][i], out)
    _walk(kids[xn["no"]], tree, tree["right"][i], out)


@pytest.mark.parametrize("margin_sd", [0.0, 0.7])
@pytest.mark.parametrize("objective,xobj", [("squared_error", "reg:squarederror"),
                                            ("logistic", "binary:logistic")])
def test_refresh_matches_xgboost(objective, xobj, margin_sd):
    # with a base margin the refresh starts from it, then adds the rounds already refreshed
    X, y = _data(0)
    X2, y2 = _data(5)
    if objective == "logistic":
        y, y2 = (y > np.median(y)).astype(float), (y2 > np.median(y)).astype(float)
    margin = np.random.default_rng(8).normal(0.0, margin_sd, y2.size) if margin_sd else None
    pred = _fit(X, y, maxIter=3, maxDepth=4, stepSize=0.3, objective=objective)
    base = float(pred.base_score[0])
    common = dict(max_depth=4, eta=0.3, nthread=1, objective=xobj,
                  base_score=base if objective == "squared_error" else 1 / (1 + np.exp(-base)))
    bst = xgb.train(dict(common, tree_method="hist"), xgb.DMatrix(X, label=y), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `updater` overrides tree_method
        upd = xgb.train(dict(common, process_type="update", updater="refresh", refresh_leaf=1),
                        xgb.DMatrix(X2, label=y2, base_margin=margin), 3, xgb_model=bst)
    ours = refresh(pred, X2, y2, params=dict(stepSize=0.3, objective=objective),
                   base_margin=margin)
    for t, dump in enumerate(upd.get_dump(dump_format="json", with_stats=True)):
        out = []
        _walk(json.loads(dump), ours.tree(t), 0, out)
        xv, ov = np.array(out, float).T
        np.testing.assert_allclose(ov, xv, rtol=2e-6, atol=1e-5)  # XGBoost stores float32
    np.testing.assert_allclose(ours.predict_raw(X2, base_margin=margin),
                               upd.predict(xgb.DMatrix(X2, base_margin=margin),
                                           output_margin=True), rtol=1e-5, atol=1e-5)
    assert not np.allclose(ours.value, pred.value)  # the new data moved the leaves
    if margin is not None:  # the margin changed the gradients
        plain = refresh(pred, X2, y2, params=dict(stepSize=0.3, objective=objective))
        assert not np.allclose(ours.value, plain.value)


def test_refresh_on_the_training_rows_changes_nothing():
    X, y = _data(1)
    pred = _fit(X, y, maxIter=4, maxDepth=3, stepSize=0.2, regLambda=2.0)
    again = update(pred, "refresh", X, y, params=dict(stepSize=0.2, regLambda=2.0))
    for k in ("value", "gain", "cover"):
        np.testing.assert_allclose(getattr(again, k), getattr(pred, k), rtol=1e-9, atol=1e-9)


def test_refresh_on_two_workers_is_one_worker():
    X, y = _data(2)
    pred = _fit(X, y, maxIter=3, maxDepth=3, stepSize=0.3)
    X2, y2 = _data(3)
    single = refresh(pred, X2, y2, params=dict(stepSize=0.3))
    parts = [np.arange(0, 3000, 2), np.arange(1, 3000, 2)]
    out = run_ranks(2, lambda r, coll: refresh(pred, X2[parts[r]], y2[parts[r]],
                                                params=dict(stepSize=0.3), collective=coll))
    for m in out:
        np.testing.assert_allclose(m.value, single.value, rtol=1e-9, atol=1e-12)


def test_updater_refusals():
    X, y = _data(4, 500)
    pred = _fit(X, y, maxIter=2, maxDepth=2)
    with pytest.raises(ValueError, match="updater must be one of"):
        update(pred, "grow", X, y)
    with pytest.raises(ValueError, match="needs the rows"):
        update(pred, "refresh")
    dart = _fit(X, y, maxIter=3, maxDepth=2, boosterType="dart", rateDrop=1.0)
    with pytest.raises(ValueError, match="DART"):
        refresh(dart, X, y)
    quant = _fit(X, y, maxIter=2, maxDepth=2, objective="quantile[alpha=0.5]")
    with pytest.raises(ValueError, match="quantile"):
        refresh(quant, X, y, params=dict(objective="quantile[alpha=0.5]"))
    # prune reads minSplitLoss and maxDepth
    cut = update(pred, "prune", params=dict(minSplitLoss=0.0, maxDepth=1))
    assert cut.tree(0)["depth"].max() == 1


def test_refresh_records_metrics_and_stops_early():
    X, y = _data(9, 1500)
    pred = _fit(X, y, maxIter=12, maxDepth=3, stepSize=0.5)
    X2, y2 = X[:600], 2 * y.mean() - y[:600]  # reflected labels: the refresh goes astray
    Xv, yv = X[600:], y[600:]
    params = dict(stepSize=0.5, evalMetrics=["rmse", "mae"])
    hist = {}
    full = refresh(pred, X2, y2, params=params, eval_sets=[(Xv, yv, None)], history=hist)
    assert hist["metric"] == "rmse" and hist["rounds_run"] == hist["n_rounds"] == 12
    for r in (0, 5, 11):  # each round's metrics are the refreshed model's of that many rounds
        m = full.truncate(r + 1)
        assert hist["eval"][0][r] == pytest.approx(np.sqrt(np.mean((m.predict_raw(Xv) - yv)
                                                                   ** 2)), rel=1e-9)
        assert hist["metrics"]["mae"]["train"][r] == pytest.approx(
            np.mean(np.abs(m.predict_raw(X2) - y2)), rel=1e-9)
    best = int(np.argmin(hist["eval"][0]))
    assert hist["best_iteration"] == best < 10
    stop = {}
    cut = refresh(pred, X2, y2, params=dict(params, earlyStoppingRounds=2),
                  eval_sets=[(Xv, yv, None)], history=stop)
    assert stop["n_rounds"] == best + 1 and cut.n_trees == best + 1
    assert stop["rounds_run"] == best + 3 and stop["eval"][0] == hist["eval"][0][:best + 3]
    np.testing.assert_allclose(cut.predict_raw(Xv), full.truncate(best + 1).predict_raw(Xv))
