"""Regression objectives: compiled gradients vs their naive twins and finite differences, the
exact distributed leaf quantiles, and whole models against XGBoost."""
import threading

import numpy as np
import pytest
from _objective_data import regression_case
from scipy.special import gammaln

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.collective import InProcessGroup, LocalCollective
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.cox import Cox, cox_gradients_naive, cox_nloglik
from sparkxml_kernels.gbt.leaf_quantile import leaf_quantiles, leaf_quantiles_naive
from sparkxml_kernels.gbt.loss import make_loss
from sparkxml_kernels.gbt.metrics import metric_from_stats, metric_stats
from sparkxml_kernels.gbt.objectives import gradients_naive, objective_name, parse_objective

OBJECTIVES = [("absolute_error", {}), ("huber", {"delta": 0.7}), ("quantile", {"alpha": 0.8}),
              ("poisson", {"maxDeltaStep": 0.0}), ("poisson", {}), ("tweedie", {"rho": 1.3}),
              ("gamma", {})]


def _labels(name, rng, n):
    if name in ("poisson", "tweedie"):
        return rng.poisson(2.0, n) * (1.0 if name == "poisson" else rng.gamma(2, 1, n))
    if name == "gamma":
        return rng.gamma(2.0, 1.5, n)
    return rng.normal(size=n) * 2


def _value(name, p, y, raw, w):
    """The loss each gradient is the derivative of (up to terms free of raw)."""
    z = raw - y
    if name == "absolute_error":
        t = np.abs(z)
    elif name == "huber":
        d = p["delta"]
        t = np.where(np.abs(z) <= d, 0.5 * z * z, d * (np.abs(z) - 0.5 * d))
    elif name == "quantile":
        a = p["alpha"]
        t = np.where(z >= 0, (1 - a) * z, -a * z)
    elif name == "poisson":
        t = np.exp(raw) - y * raw
    elif name == "tweedie":
        r = p["rho"]
        t = -y * np.exp((1 - r) * raw) / (1 - r) + np.exp((2 - r) * raw) / (2 - r)
    else:
        t = y * np.exp(-raw) + raw
    return np.sum(w * t)


def _grads(loss, y, raw, w):
    g, h = np.empty_like(raw), np.empty_like(raw)
    loss.gradients(y, raw, w, g, h)
    return g, h


@pytest.mark.parametrize("name,params", OBJECTIVES)
def test_kernel_matches_naive_twin(name, params):
    rng = np.random.default_rng(0)
    n = 300
    y, raw, w = _labels(name, rng, n), rng.normal(size=n), rng.uniform(0.2, 3, n)
    loss = make_loss(objective_name(name, **params))
    assert loss.name == name
    for wt in (w, None):
        g, h = _grads(loss, y, raw, wt)
        gn, hn = gradients_naive(name, y, raw, wt, **params)
        np.testing.assert_allclose(g, gn, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(h, hn, rtol=1e-13, atol=1e-13)
        assert (h > 0).all()


@pytest.mark.parametrize("name,params", OBJECTIVES)
def test_gradients_match_finite_differences(name, params):
    rng = np.random.default_rng(1)
    n = 60
    y, w = _labels(name, rng, n), rng.uniform(0.2, 3, n)
    raw = rng.normal(size=n)
    if name in ("absolute_error", "huber", "quantile"):
        # away from the kinks, where the finite difference is the derivative
        kinks = np.abs(raw - y) < 1e-3
        kinks |= name == "huber" and np.abs(np.abs(raw - y) - params["delta"]) < 1e-3
        raw[kinks] += 0.01
    loss = make_loss(objective_name(name, **params))
    p = loss.params
    g, h = _grads(loss, y, raw, w)
    eps = 1e-6
    num = np.empty(n)
    for i in range(n):
        r1, r2 = raw.copy(), raw.copy()
        r1[i] += eps
        r2[i] -= eps
        num[i] = (_value(name, p, y, r1, w) - _value(name, p, y, r2, w)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)
    if name in ("tweedie", "gamma") or (name == "poisson" and p["maxDeltaStep"] == 0):
        # the true curvature (poisson's maxDeltaStep inflates it by exp(maxDeltaStep))
        gp, _ = _grads(loss, y, raw + eps, w)
        gm, _ = _grads(loss, y, raw - eps, w)
        np.testing.assert_allclose(h, (gp - gm) / (2 * eps), rtol=1e-5, atol=1e-6)
    if name == "poisson" and p["maxDeltaStep"] > 0:
        np.testing.assert_allclose(h, w * np.exp(raw) * np.exp(0.7), rtol=1e-12)


def test_objective_names_round_trip():
    assert objective_name("quantile", alpha=0.5) == "quantile"
    assert objective_name("tweedie", rho=1.2) == "tweedie[rho=1.2]"
    assert parse_objective("tweedie[rho=1.2]") == ("tweedie", {"rho": 1.2})
    assert make_loss("count:poisson").name == "poisson"
    assert make_loss("reg:quantileerror").leaf_alpha == 0.5
    with pytest.raises(ValueError, match="quantileAlpha must be in"):
        make_loss("quantile[alpha=1.0]")
    with pytest.raises(ValueError, match="tweedieVariancePower"):
        make_loss("tweedie[rho=2.5]")
    with pytest.raises(ValueError, match="no parameter"):
        make_loss("gamma[rho=1.5]")


def _cox_value(y, raw):
    return cox_nloglik(y, raw) * (y > 0).sum()


def test_cox_gradients_naive_and_finite_differences():
    rng = np.random.default_rng(2)
    n = 40
    t = rng.exponential(1.0, n)
    t[:6] = t[6:12]  # tied times, events and censored among them
    y = np.where(rng.random(n) < 0.3, -t, t)
    raw, w = rng.normal(size=n) * 0.5, rng.uniform(0.5, 2, n)
    loss = Cox()
    for wt in (None, w):
        g, h = _grads(loss, y, raw, wt)
        gn, hn = cox_gradients_naive(y, raw, wt)
        np.testing.assert_allclose(g, gn, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h, hn, rtol=1e-12, atol=1e-12)
    g, _ = _grads(loss, y, raw, None)
    eps = 1e-6
    num = np.array([(_cox_value(y, raw + eps * e) - _cox_value(y, raw - eps * e)) / (2 * eps)
                    for e in np.eye(n)])
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


def test_cox_nloglik_recorded_per_round():
    rng = np.random.default_rng(9)
    X, y = regression_case("cox", rng, 1000)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, hist = train(bin_data(X, edges), y, None, edges,
                       dict(maxIter=5, maxDepth=3, stepSize=0.3, objective="cox"))
    assert hist["metric"] == "cox-nloglik" and len(hist["train"]) == 5
    assert hist["train"][-1] == pytest.approx(cox_nloglik(y, pred.predict_raw(X)), rel=1e-12)
    assert hist["train"][-1] < hist["train"][0]
    with pytest.raises(ValueError, match="training set only"):
        train(bin_data(X, edges), y, None, edges, dict(maxIter=2, objective="cox"),
              eval_sets=[(bin_data(X, edges), y, None)])


def test_eval_metrics_recorded_per_round_on_train_and_eval_sets():
    rng = np.random.default_rng(10)
    X, y = regression_case("poisson", rng, 1500)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    Xb = bin_data(X, edges)
    tr, va = np.arange(1000), np.arange(1000, 1500)
    pred, hist = train(Xb[tr], y[tr], None, edges,
                       dict(maxIter=6, maxDepth=3, objective="poisson",
                            evalMetrics=["gamma-deviance", "poisson-nloglik", "mae"]),
                       eval_sets=[(Xb[va], y[va], None)])
    assert hist["metric"] == "gamma-deviance"  # the first: early stopping's
    assert list(hist["metrics"]) == ["gamma-deviance", "poisson-nloglik", "mae"]
    assert hist["train"] == hist["metrics"]["gamma-deviance"]["train"]
    raw_tr, raw_va = pred.predict_raw(X[tr]), pred.predict_raw(X[va])
    for name, rec in hist["metrics"].items():
        assert len(rec["train"]) == 6 and len(rec["eval"][0]) == 6
        for rows, raw, got in ((tr, raw_tr, rec["train"][-1]), (va, raw_va, rec["eval"][0][-1])):
            want = metric_from_stats(name, metric_stats(name, y[rows], raw))
            assert got == pytest.approx(want, rel=1e-12), name
    with pytest.raises(ValueError, match="'nope' is not one of"):
        train(Xb, y, None, edges, dict(maxIter=1, evalMetrics=["mae", "nope"]))


def _run_workers(k, fn):
    group = InProcessGroup(k, timeout=60)
    out = [None] * k
    errors = []

    def work(r):
        try:
            out[r] = fn(r, group.collective(r))
        except Exception as e:  # pragma: no cover - surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(k)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    return out


def test_cox_gradients_same_on_three_workers():
    rng = np.random.default_rng(3)
    n = 300
    t = np.round(rng.exponential(1.0, n), 2)  # ties across workers
    y = np.where(rng.random(n) < 0.3, -t, t)
    raw = rng.normal(size=n)
    g1, h1 = _grads(Cox(), y, raw, None)
    parts = [np.arange(r, n, 3) for r in range(3)]

    def fn(r, coll):
        loss = Cox()
        loss.init_score_collective(y[parts[r]], None, coll)
        return _grads(loss, y[parts[r]], raw[parts[r]], None)

    for r, (g, h) in enumerate(_run_workers(3, fn)):
        np.testing.assert_allclose(g, g1[parts[r]], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(h, h1[parts[r]], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.9, 0.999])
def test_leaf_quantiles_exact_on_one_and_three_workers(alpha):
    rng = np.random.default_rng(4)
    n = 2000
    v = np.concatenate([rng.normal(size=n - 200), -rng.exponential(size=100),
                        np.zeros(50), np.full(50, 3.25)])  # negatives, zeros, ties
    leaf = rng.integers(-1, 7, n)  # -1: rows left out
    w = rng.integers(0, 4, n).astype(float)  # whole weights: sums exact in any order
    leaf[leaf == 6] = -1  # leaf 6 has no rows
    expect = leaf_quantiles_naive(v, leaf, 7, w, alpha)
    assert np.isnan(expect[6]) and not np.isnan(expect[:6]).any()
    got = leaf_quantiles(v, leaf, 7, w, alpha, LocalCollective())
    np.testing.assert_array_equal(got, expect)
    # without weights: XGBoost's interpolated Quantile, numpy's "weibull" method
    plain = leaf_quantiles_naive(v, leaf, 7, None, alpha)
    np.testing.assert_array_equal(leaf_quantiles(v, leaf, 7, None, alpha, LocalCollective()),
                                  plain)
    np.testing.assert_allclose(plain[:6], [np.quantile(v[leaf == lf], alpha, method="weibull")
                                           for lf in range(6)], rtol=1e-12, atol=1e-12)
    parts = [np.arange(r, n, 3) for r in range(3)]
    out = _run_workers(3, lambda r, c: leaf_quantiles(v[parts[r]], leaf[parts[r]], 7,
                                                      w[parts[r]], alpha, c))
    for q in out:
        np.testing.assert_array_equal(q, expect)
    out = _run_workers(3, lambda r, c: leaf_quantiles(v[parts[r]], leaf[parts[r]], 7, None,
                                                      alpha, c))
    for q in out:
        np.testing.assert_array_equal(q, plain)


def test_regression_metrics_follow_their_definitions():
    rng = np.random.default_rng(5)
    y, raw, w = rng.poisson(3.0, 200) + 0.5, rng.normal(1, 0.3, 200), rng.uniform(0.5, 2, 200)
    mu = np.exp(raw)
    expect = {
        "mae": np.abs(y - raw),
        "quantile@0.9": np.maximum(0.9 * (y - raw), -0.1 * (y - raw)),
        "poisson-nloglik": gammaln(y + 1) + mu - y * np.log(mu),
        "gamma-nloglik": y / mu + np.log(mu),
        "gamma-deviance": 2 * (np.log((mu + 1e-6) / (y + 1e-6)) + (y + 1e-6) / (mu + 1e-6) - 1),
        "tweedie-nloglik@1.5": -y * mu ** -0.5 / -0.5 + mu ** 0.5 / 0.5,
    }
    for name, terms in expect.items():
        got = metric_from_stats(name, metric_stats(name, y, raw, w))
        assert got == pytest.approx(np.average(terms, weights=w), rel=1e-10), name


# --------------------------------------------------------------------- against XGBoost
xgb = pytest.importorskip("xgboost")


@pytest.mark.parametrize("objective,xgb_objective,extra", [
    ("absolute_error", "reg:absoluteerror", {}),
    ("quantile[alpha=0.9]", "reg:quantileerror", {"quantile_alpha": 0.9}),
    ("poisson", "count:poisson", {}),
    ("tweedie[rho=1.3]", "reg:tweedie", {"tweedie_variance_power": 1.3}),
    ("gamma", "reg:gamma", {}),
    ("cox", "survival:cox", {}),
])
def test_models_match_xgboost(objective, xgb_objective, extra):
    """Same bins (few distinct values: XGBoost's cuts are the values), same base score
    (XGBoost's per objective), same gradients and leaf refits: the predictions after 20
    rounds agree to ~1e-6 relative, XGBoost's float32 trees being the difference. The
    absolute/quantile leaves follow XGBoost's two rules: the interpolated quantile without
    weights, the lower weighted quantile with (unit) weights."""
    rng = np.random.default_rng(6)
    X, y = regression_case(objective, rng, 3000)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    params = dict(maxIter=20, maxDepth=3, stepSize=0.3, objective=objective)
    xp = dict(objective=xgb_objective, max_depth=3, eta=0.3, tree_method="hist", nthread=1,
              **extra)
    pred, hist = train(bin_data(X, edges), y, None, edges, params)
    bst = xgb.train(xp, xgb.DMatrix(X, label=y), num_boost_round=20)
    ours, theirs = pred.predict(X), bst.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-6)
    if objective in ("absolute_error", "quantile[alpha=0.9]"):
        ones = np.ones(len(y))
        pw, _ = train(bin_data(X, edges), y, ones, edges, params)
        bw = xgb.train(xp, xgb.DMatrix(X, label=y, weight=ones), num_boost_round=20)
        np.testing.assert_allclose(pw.predict(X), bw.predict(xgb.DMatrix(X)), rtol=2e-5,
                                   atol=1e-6)
        assert not np.allclose(pw.predict(X), ours, rtol=1e-6)  # the two rules differ
    if hist["metric"] is not None:  # the training metric falls round after round
        assert hist["train"][-1] < hist["train"][0]


def test_max_delta_step_clips_leaf_weights():
    """XGBoost's max_delta_step bounds every leaf weight before the learning rate. Here the
    split gains stay those of the unclipped weights (XGBoost evaluates them at the clipped
    weight), so the trees keep their shape and only the leaf values are clipped."""
    rng = np.random.default_rng(7)
    X, y = regression_case("gamma", rng, 2000)
    y = 3 * (y - y.mean())
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    Xb = bin_data(X, edges)
    params = dict(maxIter=1, maxDepth=3, stepSize=0.5, baseScore=0.0)
    free, _ = train(Xb, y, None, edges, params)
    clipped, _ = train(Xb, y, None, edges, dict(params, maxDeltaStep=4.0))
    np.testing.assert_array_equal(free.left, clipped.left)
    leaves = free.left < 0
    assert (np.abs(free.value[leaves]) > 2.0).any() and (np.abs(free.value[leaves]) < 2.0).any()
    np.testing.assert_allclose(clipped.value[leaves], np.clip(free.value[leaves], -2.0, 2.0))
    with pytest.raises(ValueError, match="maxDeltaStep"):
        train(Xb, y, None, edges, dict(params, maxDeltaStep=-1.0))


@pytest.mark.parametrize("objective,lgb_objective,extra", [
    ("huber[delta=0.8]", "huber", {"alpha": 0.8}),
    ("poisson", "poisson", {}),
    ("gamma", "gamma", {}),
])
def test_models_match_lightgbm(objective, lgb_objective, extra):
    """LightGBM's huber (constant hessian, clipped gradient), poisson and gamma with the same
    bins: with num_leaves = 2^depth and every split taken, its leaf-wise trees are our
    depthwise ones, and the predictions agree to ~1e-7 (its float thresholds aside)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(8)
    X, y = regression_case(objective, rng, 3000)  # huber: heavy-tailed noise
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, _ = train(bin_data(X, edges), y, None, edges,
                    dict(maxIter=20, maxDepth=3, stepSize=0.3, objective=objective,
                         minChildWeight=1e-3))
    bst = lgb.train(dict(objective=lgb_objective, max_depth=3, num_leaves=8, learning_rate=0.3,
                         min_data_in_leaf=1, min_sum_hessian_in_leaf=1e-3, lambda_l2=1.0,
                         verbose=-1, num_threads=1, max_bin=255, **extra),
                    lgb.Dataset(X, y), num_boost_round=20)
    np.testing.assert_allclose(pred.predict(X), bst.predict(X), rtol=1e-6, atol=1e-6)
