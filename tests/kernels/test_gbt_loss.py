"""Objectives: gradients against finite differences, reducible initial scores."""
import numpy as np
import pytest

from sparkxml_kernels.gbt.loss import Loss, make_loss, register_loss


def _loss_value(name, y, raw, w):
    if name == "squared_error":
        return 0.5 * np.sum(w * (raw - y) ** 2)
    if name == "logistic":
        return np.sum(w * (np.logaddexp(0, raw) - y * raw))
    z = raw - raw.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -np.sum(w * logp[np.arange(len(y)), y.astype(int)])


@pytest.mark.parametrize("name,k", [("squared_error", 1), ("logistic", 1), ("softmax", 3)])
def test_gradients_match_finite_differences(name, k):
    rng = np.random.default_rng(0)
    n = 50
    loss = make_loss(name, k)
    y = {"squared_error": rng.standard_normal(n), "logistic": rng.integers(0, 2, n) * 1.0,
         "softmax": rng.integers(0, k, n) * 1.0}[name]
    w = rng.uniform(0.5, 2, n)
    raw = rng.standard_normal((n, k)) if k > 1 else rng.standard_normal(n)
    g, h = np.empty_like(raw), np.empty_like(raw)
    loss.gradients(y, raw, w, g, h)
    eps = 1e-6
    num = np.empty_like(raw)
    for idx in np.ndindex(raw.shape):
        r1, r2 = raw.copy(), raw.copy()
        r1[idx] += eps
        r2[idx] -= eps
        num[idx] = (_loss_value(name, y, r1, w) - _loss_value(name, y, r2, w)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)
    assert (h > 0).all()
    if name == "softmax":  # XGBoost's hessian: 2 p (1 - p)
        p = loss.transform(raw)
        np.testing.assert_allclose(h, 2 * p * (1 - p) * w[:, None])
    # unit weights
    g1, h1 = np.empty_like(raw), np.empty_like(raw)
    loss.gradients(y, raw, None, g1, h1)
    np.testing.assert_allclose(g1 * (w[:, None] if k > 1 else w), g)


def test_init_scores_are_reducible():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 1000).astype(float)
    w = rng.uniform(0.5, 2, 1000)
    for name, k, yy in (("squared_error", 1, y * 1.5), ("logistic", 1, (y > 0) * 1.0),
                        ("softmax", 3, y)):
        loss = make_loss(name, k)
        whole = loss.init_score(yy, w)
        parts = loss.init_stats(yy[:300], w[:300]) + loss.init_stats(yy[300:], w[300:])
        np.testing.assert_allclose(loss.init_from_stats(parts), whole, rtol=1e-12)
        assert whole.shape == (loss.n_outputs,)
    mean = np.average(y, weights=w)
    assert make_loss("squared_error").init_score(y, w)[0] == pytest.approx(mean)
    p = np.average(y > 0, weights=w)
    logit = np.log(p / (1 - p))
    assert make_loss("logistic").init_score((y > 0) * 1.0, w)[0] == pytest.approx(logit)
    prior = np.bincount(y.astype(int), weights=w) / w.sum()
    np.testing.assert_allclose(make_loss("softmax", 3).init_score(y, w), np.log(prior))
    with pytest.raises(ValueError):
        make_loss("softmax", 3).init_stats(np.array([0.0, 3.0]), None)


def test_transforms_and_aliases():
    assert make_loss("binary:logistic").name == "logistic"
    assert make_loss("multi:softprob", 4).n_outputs == 4
    p = make_loss("logistic").transform(np.array([0.0, 800.0, -800.0]))
    np.testing.assert_allclose(p, [[0.5, 0.5], [0, 1], [1, 0]])
    with pytest.raises(ValueError):
        make_loss("nope")


def test_ranking_hook_receives_group_ptr():
    seen = {}

    class PerGroupMean(Loss):
        name = "per_group_test"
        requires_groups = True

        def init_stats(self, y, w):
            return np.zeros(1)

        def init_from_stats(self, stats):
            return np.zeros(1)

        def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
            seen["ptr"] = group_ptr
            for a, b in zip(group_ptr[:-1], group_ptr[1:]):
                out_g[a:b] = raw[a:b] - y[a:b].mean()
            out_h[:] = 1.0

    register_loss("per_group_test", lambda k: PerGroupMean())
    from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
    from sparkxml_kernels.gbt.booster import train
    X = np.arange(40.0)[:, None]
    y = np.repeat([1.0, 5.0], 20)
    e = edges_from_sketch(sketch(X, None, 16), 16)
    ptr = np.array([0, 20, 40])
    with pytest.raises(ValueError):
        train(bin_data(X, e), y, None, e, dict(objective="per_group_test", maxIter=1))
    pred, _ = train(bin_data(X, e), y, None, e, dict(objective="per_group_test", maxIter=3,
                                                     minChildWeight=0.0), group_ptr=ptr)
    np.testing.assert_array_equal(seen["ptr"], ptr)
    assert pred.predict_raw(X)[30] > pred.predict_raw(X)[5]
