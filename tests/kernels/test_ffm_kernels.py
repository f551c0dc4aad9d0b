"""Field-aware FM kernels against their naive twins, the worker-count invariance of the
adagrad pass, and that FFM learns a field-dependent interaction an FM cannot."""
import numpy as np
import pytest
from test_fm_kernels import _one_hot
from test_fm_solvers import _fit

from sparkxml_kernels.fm.ffm import (
    FFMPredictor,
    ffm_scores,
    ffm_scores_naive,
    ffm_sgd_rows,
    ffm_sgd_rows_naive,
    field_of_features,
)

FFM = dict(solver="adagrad", factorSize=3, maxIter=4, stepSize=0.2, regParam=2e-5, seed=3,
           normalize=True, fitIntercept=True, fitLinear=True)


def _multi_hot():
    """One-hot fields, a multi-hot field (two features of one field in a row: the partner
    parameter a later pair reads was moved by an earlier pair) and a dense real column."""
    X, starts = _one_hot(30, [4, 5, 3], seed=4, extra_dense=1)
    X = X.tolil()
    X[::3, starts[1]] = 0.7  # a second feature in field 1 on every third row
    X = X.tocsr()
    X.sort_indices()
    return X, starts + [X.shape[1] - 1]  # the dense column is its own field


@pytest.mark.parametrize("normalize", [True, False])
def test_ffm_scores_match_the_pairwise_definition(normalize):
    X, fs = _multi_hot()
    d, m = X.shape[1], len(fs)
    r = np.random.default_rng(0)
    w0, w, V = 0.3, r.normal(size=d), r.normal(size=(d, m, 2))
    got = ffm_scores(X.indptr, X.indices, X.data, field_of_features(fs, d), w0, w, V,
                     normalize)
    want = ffm_scores_naive(X.toarray(), fs, w0, w, V, normalize)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    pred = FFMPredictor(w0, w, V, fs + [d], normalize, "logistic", d)
    np.testing.assert_allclose(pred.predict(X.toarray())[:, 1], 1 / (1 + np.exp(-want)),
                               rtol=1e-12)
    assert FFMPredictor.from_arrays(pred.to_arrays()).predict_raw(X).tolist() == got.tolist()


@pytest.mark.parametrize("loss,normalize,fit", [(0, True, True), (1, True, False),
                                                (1, False, True)])
def test_ffm_adagrad_pass_matches_the_naive_twin(loss, normalize, fit):
    X, fs = _multi_hot()
    n, d, m, k = X.shape[0], X.shape[1], len(fs), 2
    r = np.random.default_rng(1)
    y = (r.random(n) < 0.5).astype(float) if loss else r.normal(size=n)
    wt = r.uniform(0.5, 2.0, n)
    wt[5] = 0.0  # skipped
    rows = r.permutation(n).astype(np.int64)
    start = (np.array([0.1, 1.0, 0.0, 0.0]), r.normal(size=d) * 0.1, np.ones(d),
             r.uniform(0, 0.5, (d, m, k)), np.ones((d, m, k)))
    a = [s.copy() for s in start]
    b = [s.copy() for s in start]
    ffm_sgd_rows(rows, X.indptr, X.indices, X.data, field_of_features(fs, d), y, wt, loss,
                 0.2, 1e-3, normalize, fit, fit, *a)
    ffm_sgd_rows_naive(rows, X.toarray(), fs, y, wt, loss, 0.2, 1e-3, normalize, fit, fit, *b)
    for got, want in zip(a, b):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert not np.array_equal(a[3], start[3])  # the pass moved the factors
    assert a[0][3] == pytest.approx(wt.sum())  # every row of positive weight counted once


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_ffm_same_model_for_one_two_and_three_workers(task):
    X, fs = _one_hot(300, [5, 6, 4], seed=12, extra_dense=1)
    fs = fs + [X.shape[1] - 1]
    r = np.random.default_rng(2)
    y = X @ r.normal(size=X.shape[1])
    if task == "classification":
        y = (y > np.median(y)).astype(float)
    params = dict(FFM, task=task, fieldStarts=fs)
    one, h1 = _fit(X, y, params, workers=1, kind="ffm")
    two, h2 = _fit(X, y, params, workers=2, shuffle=5, kind="ffm")
    three, h3 = _fit(X, y, params, workers=3, shuffle=9, kind="ffm")
    for key in one:  # the same sequential pass, bit for bit
        np.testing.assert_array_equal(two[key], one[key], err_msg=key)
        np.testing.assert_array_equal(three[key], one[key], err_msg=key)
    assert h1["loss"] == h2["loss"] == h3["loss"]
    assert h1["loss"][-1] < h1["loss"][0]  # training lowers the loss
    other, _ = _fit(X, y, dict(params, seed=4), workers=1, kind="ffm")
    assert not np.array_equal(other["V"], one["V"])  # the seed sets the init and row order


def test_ffm_learns_a_field_dependent_interaction():
    """Three one-hot fields A, B, C; the label is +a·b for the (A, B) pair and -a·c for (A, C)
    with the SAME a: FFM's per-field factors of A's features fit both, a rank-1 FM's shared
    factor cannot (its A-factor must serve both signs)."""
    r = np.random.default_rng(5)
    n, s = 3000, 6
    ia, ib, ic = (r.integers(s, size=n) for _ in range(3))
    a, b, c = (r.choice([-1.0, 1.0], size=s) for _ in range(3))
    y = a[ia] * b[ib] - a[ia] * c[ic]
    import scipy.sparse as sp

    cols = np.column_stack([ia, s + ib, 2 * s + ic])
    X = sp.csr_matrix((np.ones(3 * n), cols.ravel(), np.arange(0, 3 * n + 1, 3)),
                      shape=(n, 3 * s))
    params = dict(FFM, task="regression", factorSize=1, maxIter=15, normalize=False,
                  fieldStarts=[0, s, 2 * s])
    arrays, hist = _fit(X, y, params, workers=1, kind="ffm")
    pred = FFMPredictor.from_arrays(arrays).predict(X)
    rmse_ffm = float(np.sqrt(np.mean((pred - y) ** 2)))
    one_field, _ = _fit(X, y, dict(params, fieldStarts=[0]), workers=1, kind="ffm")
    pred1 = FFMPredictor.from_arrays(one_field).predict(X)  # one field: a plain FM
    rmse_fm = float(np.sqrt(np.mean((pred1 - y) ** 2)))
    assert rmse_ffm < 0.25 * rmse_fm, (rmse_ffm, rmse_fm)
