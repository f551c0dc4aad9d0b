"""FFM coordinate descent ("als") and Gibbs sampling ("mcmc"): the factor caches and whole
runs against their naive twins, the sample-averaging predictor, and the same model for any
number of workers."""
import numpy as np
import pytest
from test_ffm_kernels import _multi_hot
from test_fm_kernels import _one_hot
from test_fm_solvers import _fit

from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.fm.ffm import FFMPredictor, ffm_scores_naive, field_of_features
from sparkxml_kernels.fm.ffm_cd import (
    ffm_factor_cache,
    ffm_factor_cache_naive,
    run_ffm_als,
    run_ffm_cd_naive,
    run_ffm_mcmc,
)
from sparkxml_kernels.fm.layout import (
    BlockedData,
    exclusive_segments,
    next_cooccurring,
    refine_blocks,
)

CD = dict(factorSize=2, maxIter=3, regParam=0.05, initStd=0.3, seed=5, burnIn=1, thinning=1,
          tol=0.0, normalize=True, fitIntercept=True, fitLinear=True)


def _blocked(X, fs, normalize):
    from sparkxml_kernels.fm.ffm_cd import scaled_values

    d = X.shape[1]
    seg = exclusive_segments(next_cooccurring(X.indptr, X.indices, d), d)
    return BlockedData(X.indptr.astype(np.int64), X.indices.astype(np.int32),
                       scaled_values(X.indptr, X.data, normalize), d, refine_blocks(seg, fs))


def test_ffm_factor_cache_matches_the_naive_twin():
    X, fs = _multi_hot()
    d, m, k = X.shape[1], len(fs), 3
    Vt = np.random.default_rng(0).normal(size=(m, k, d))
    P = np.zeros((m, m, k, X.shape[0]))
    ffm_factor_cache(X.indptr, X.indices, X.data, field_of_features(fs, d), Vt, P)
    np.testing.assert_allclose(P, ffm_factor_cache_naive(X.toarray(), fs, Vt), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("solver,task,normalize,weighted", [
    ("als", "regression", True, True), ("als", "classification", False, False),
    ("mcmc", "regression", True, True), ("mcmc", "classification", True, False)])
def test_ffm_cd_runs_match_the_naive_twin(solver, task, normalize, weighted):
    X, fs = _multi_hot()
    n = X.shape[0]
    r = np.random.default_rng(3)
    y = r.normal(size=n) + X.toarray()[:, 0]
    if task == "classification":
        y = (y > 0).astype(float)
    wt = r.uniform(0.5, 2.0, n) if weighted else None
    rids = r.integers(0, 2**62, n)
    params = dict(CD, solver=solver, task=task, normalize=normalize, fieldStarts=fs)
    data = _blocked(X, fs, normalize)
    assert data.n_blocks > len(fs)  # the dense column's field is cut feature by feature
    if solver == "als":
        got, hist = run_ffm_als(data, y, wt, params, LocalCollective())
    else:
        got, hist = run_ffm_mcmc(data, y, wt, rids, params, LocalCollective())
    want, whist = run_ffm_cd_naive(X.toarray(), y, wt, rids, params)
    for key in ("w0", "w", "V"):
        assert got[key].shape == want[key].shape, key
        np.testing.assert_allclose(got[key], want[key], rtol=1e-10, atol=1e-10, err_msg=key)
    assert str(got["link"]) == str(want["link"])
    if solver == "als":
        np.testing.assert_allclose(hist["objective"], whist["objective"], rtol=1e-10)
        assert hist["objective"][-1] < hist["objective"][0]  # the sweeps lower the objective
    else:
        assert got["V"].shape[0] == CD["maxIter"] - CD["burnIn"]  # the kept samples
        np.testing.assert_allclose(hist["alpha"], whist["alpha"], rtol=1e-10)
        assert not np.array_equal(got["V"][0], got["V"][-1])  # the chain moves


def test_ffm_predictor_averages_the_samples():
    X, fs = _multi_hot()
    d, m = X.shape[1], len(fs)
    r = np.random.default_rng(6)
    w0, w, V = r.normal(size=3), r.normal(size=(3, d)), r.normal(size=(3, d, m, 2)) * 0.3
    raw = [ffm_scores_naive(X.toarray(), fs, w0[s], w[s], V[s], True) for s in range(3)]
    reg = FFMPredictor(w0, w, V, fs + [d], True, "identity", d)
    np.testing.assert_allclose(reg.predict(X), np.mean(raw, axis=0), rtol=1e-12)
    from scipy.stats import norm

    cls = FFMPredictor.from_arrays(dict(reg.to_arrays(), link="probit"))
    p = np.mean([norm.cdf(v) for v in raw], axis=0)
    np.testing.assert_allclose(cls.predict(X)[:, 1], p, rtol=1e-10)
    np.testing.assert_allclose(cls.predict_raw(X), norm.ppf(p), rtol=1e-8)
    assert cls.n_samples == 3 and cls.to_arrays()["V"].shape == (3, d, m, 2)
    np.testing.assert_allclose(cls.V, V.mean(axis=0))  # the attributes: posterior means
    with pytest.raises(ValueError, match="expected"):
        FFMPredictor(w0, w[0], V, fs + [d], True, "identity", d)


@pytest.mark.parametrize("solver,task", [("als", "classification"), ("mcmc", "regression"),
                                         ("mcmc", "classification")])
def test_ffm_cd_same_model_for_one_and_two_workers(solver, task):
    X, fs = _one_hot(200, [5, 6, 4], seed=12, extra_dense=1)
    fs = fs + [X.shape[1] - 1]
    r = np.random.default_rng(2)
    y = X @ r.normal(size=X.shape[1])
    if task == "classification":
        y = (y > np.median(y)).astype(float)
    params = dict(CD, solver=solver, task=task, fieldStarts=fs, maxIter=4)
    one, h1 = _fit(X, y, params, workers=1, kind="ffm")
    two, h2 = _fit(X, y, params, workers=2, shuffle=5, kind="ffm")
    for key in one:
        np.testing.assert_array_equal(two[key], one[key], err_msg=key)
    assert h1.get("objective") == h2.get("objective") and h1["n_blocks"] == h2["n_blocks"]


def test_ffm_cd_learns_a_field_dependent_interaction():
    """a·b for fields (A, B) plus a'·c for (A, C), a and a' independent: A's features need
    one factor against B and another against C. ALS and MCMC fit it with k = 1, a one-field
    model (a plain rank-1 FM, whose A-factor must serve both) cannot."""
    import scipy.sparse as sp

    r = np.random.default_rng(5)
    n, s = 1000, 8
    ia, ib, ic = (r.integers(s, size=n) for _ in range(3))
    a, a2 = np.tile([1.0, 1.0, -1.0, -1.0], 2), np.tile([1.0, -1.0], 4)  # orthogonal
    b, c = (r.permutation(a) for _ in range(2))
    y = a[ia] * b[ib] + a2[ia] * c[ic] + 0.1 * r.normal(size=n)
    cols = np.column_stack([ia, s + ib, 2 * s + ic])
    X = sp.csr_matrix((np.ones(3 * n), cols.ravel(), np.arange(0, 3 * n + 1, 3)),
                      shape=(n, 3 * s))
    for solver in ("als", "mcmc"):
        params = dict(CD, solver=solver, task="regression", factorSize=1, maxIter=20,
                      burnIn=5, regParam=1e-4, normalize=False, fieldStarts=[0, s, 2 * s])
        rmse = {}
        for name, fs in (("ffm", [0, s, 2 * s]), ("fm", [0])):
            arrays, _ = _fit(X, y, dict(params, fieldStarts=fs), workers=1, kind="ffm")
            pred = FFMPredictor.from_arrays(arrays).predict(X)
            rmse[name] = float(np.sqrt(np.mean((pred - y) ** 2)))
        assert rmse["ffm"] < 0.2 and rmse["ffm"] < 0.25 * rmse["fm"], (solver, rmse)
