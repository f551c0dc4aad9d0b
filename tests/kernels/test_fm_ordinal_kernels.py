"""Ordered probit FM kernels: the truncated normal, the cutpoint sums and the class
probabilities against their naive twins, worker-count invariance, and the sampler against
myFM's MyFMOrderedProbit."""
import numpy as np
import pytest
import scipy.sparse as sp
from test_fm_solvers import BASE, _fit

from sparkxml.synthetic import make_ratings, one_hot_fields
from sparkxml_kernels.fm import ordinal as O
from sparkxml_kernels.fm.predictor import FMOrdinalPredictor, FMPredictor


def test_truncated_normal_between_matches_scipy():
    rng = np.random.default_rng(0)
    cases = [(0.3, -np.inf, -1.0), (-0.2, 2.0, np.inf), (0.0, -0.5, 0.7), (1.0, 4.0, 6.0),
             (-1.0, -7.0, -5.0), (0.5, 0.49, 0.52), (0.0, -np.inf, np.inf)]
    for mean, lo, hi in cases:
        for u in rng.random(20):
            got = O.truncated_normal_between(mean, lo, hi, u)
            want = O.truncated_normal_between_naive(mean, lo, hi, u)
            assert lo <= got <= hi
            assert abs(got - want) < 1e-7 * max(1.0, abs(want)), (mean, lo, hi, u, got, want)
    # far tails stay inside the interval and finite
    for lo, hi in ((40.0, np.inf), (-np.inf, -45.0), (50.0, 50.5)):
        z = O.truncated_normal_between(0.0, lo, hi, 0.5)
        assert np.isfinite(z) and lo <= z <= hi


def test_cutpoint_sums_match_naive_and_sampler_is_ordered():
    rng = np.random.default_rng(1)
    pred = rng.normal(0, 1.5, 300)
    gamma = np.array([-1.2, -0.1, 0.4, 1.9])
    cls = rng.integers(0, 5, 300)
    got = O.cutpoint_sums(pred, cls, gamma)
    want = O.cutpoint_sums_naive(pred, cls, gamma)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-4, atol=1e-3)
    # the mode the Newton search finds has zero gradient of the penalised objective
    s = O.CutpointSampler(5)
    totals = lambda g: O.cutpoint_sums(pred, cls, g)  # noqa: E731
    a, H = s.mode(totals)
    f, g, _ = s.objective(a, totals)
    assert np.linalg.norm(g) < 1e-4 and np.all(np.linalg.eigvalsh(H) > 0)
    r = np.random.default_rng(2)
    for _ in range(5):
        assert np.all(np.diff(s.step(totals, r)) > 0)


def test_ordinal_proba_matches_naive():
    rng = np.random.default_rng(3)
    X = sp.random(40, 6, density=0.5, random_state=4, format="csr")
    S, d, k = 3, 6, 2
    w0, W = rng.normal(size=S), rng.normal(size=(S, d)).astype(np.float32)
    V = rng.normal(size=(S, d, k)).astype(np.float32)
    cut = np.sort(rng.normal(size=(S, 3)) * 2, axis=1)
    got = O.ordinal_proba(X.indptr.astype(np.int64), X.indices, X.data, w0, W, V, cut)
    want = O.ordinal_proba_naive(X.toarray(), w0, W, V, cut)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    P = FMOrdinalPredictor(w0, W, V, cut, [2.0, 3.0, 4.0, 5.0], d)
    np.testing.assert_allclose(P.predict(X), want @ np.arange(2.0, 6.0), rtol=1e-12)
    again = FMPredictor.from_arrays(P.to_arrays())
    np.testing.assert_array_equal(again.predict_proba(X), P.predict_proba(X))
    with pytest.raises(ValueError, match="cutpoints must be finite and ascending"):
        FMOrdinalPredictor(w0, W, V, cut[:, ::-1], [0.0, 1.0, 2.0, 3.0], d)


def test_ordinal_mcmc_matches_myfm_and_any_worker_count():
    # accuracy and RMSE of the expected class within 0.03 of myFM's on held-out rows, class
    # probabilities within 0.05 on average, same data, rank, sweeps and kept samples
    myfm = pytest.importorskip("myfm")
    cols, rating, _ = make_ratings(5000, n_users=100, n_items=60, seed=5)
    ip, ix, dv, d, _ = one_hot_fields(cols)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(rating), d))
    y = np.digitize(rating, np.quantile(rating, [0.1, 0.3, 0.6, 0.85])).astype(float)
    tr, te = slice(0, 4000), slice(4000, None)
    params = dict(BASE, solver="mcmc", task="regression", loss="ordinal",
                  classes=[0.0, 1.0, 2.0, 3.0, 4.0], factorSize=4, maxIter=50, burnIn=5)
    ours, hist = _fit(X[tr], y[tr], params)
    assert hist["mh_accepted"][-1] > 10  # the Metropolis-Hastings step moves
    P = FMPredictor.from_arrays(ours)
    p1 = P.predict_proba(X[te])
    ref = myfm.MyFMOrderedProbit(rank=4, random_seed=0).fit(
        X[tr], y[tr].astype(int), n_iter=50, n_kept_samples=45)
    p2 = ref.predict_proba(X[te])
    acc1, acc2 = (np.mean(p.argmax(axis=1) == y[te]) for p in (p1, p2))
    rm1, rm2 = (np.sqrt(np.mean((p @ np.arange(5.0) - y[te]) ** 2)) for p in (p1, p2))
    assert abs(acc1 - acc2) < 0.03 and abs(rm1 - rm2) < 0.03, (acc1, acc2, rm1, rm2)
    assert acc1 > 0.45  # the majority class holds 30%
    assert np.abs(p1 - p2).mean() < 0.05
    short = dict(params, maxIter=6, burnIn=2)
    one, _ = _fit(X[tr], y[tr], short, workers=1)
    two, _ = _fit(X[tr], y[tr], short, workers=2, shuffle=1)
    assert sorted(one) == sorted(two)
    for key in one:
        np.testing.assert_array_equal(one[key], two[key], err_msg=key)
