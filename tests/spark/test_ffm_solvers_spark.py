"""FFMRegressor / FFMClassifier with solver "als" and "mcmc" on local Spark: a planted
field-aware interaction, the same model for one and two workers, persistence and the
JVM-free loader."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparkxml_kernels
from sparkxml import FFMClassifier, FFMRegressor
from sparkxml.datasets import from_csr
from sparkxml.fm.ffm import FFMClassificationModel, FFMRegressionModel

S = 8  # categories per field


def _planted(n, seed):
    """Three one-hot fields A, B, C; y = a·b + a'·c + noise with a, a' orthogonal sign codes
    of A: A's features need one factor against B and another against C."""
    r = np.random.default_rng(seed)
    ia, ib, ic = (r.integers(S, size=n) for _ in range(3))
    a, a2 = np.tile([1.0, 1.0, -1.0, -1.0], 2), np.tile([1.0, -1.0], 4)
    b, c = r.permutation(a), r.permutation(a)
    ab, ac = a[ia] * b[ib], a2[ia] * c[ic]
    y = ab + ac + 0.1 * r.normal(size=n)
    cols = np.column_stack([ia, S + ib, 2 * S + ic])
    X = sp.csr_matrix((np.ones(3 * n), cols.ravel(), np.arange(0, 3 * n + 1, 3)),
                      shape=(n, 3 * S))
    return X, y, (ab + 0.5 * ac > 0).astype(float)  # a label with no noise


@pytest.fixture(scope="module")
def planted(spark):
    X, y, lab = _planted(1200, 0)
    df = from_csr(spark, X.indptr, X.indices, X.data, 3 * S, columns={"label": y, "lab": lab})
    return X, y, df.cache()


def _rmse(pred, y):
    return float(np.sqrt(np.mean((pred - y) ** 2)))


@pytest.mark.parametrize("solver,extra", [("als", {"regParam": 1e-4, "maxIter": 10}),
                                          ("mcmc", {"maxIter": 25})])
def test_ffm_solver_fits_the_planted_interaction_same_model_for_one_and_two_workers(
        planted, tmp_path, solver, extra):
    X, y, df = planted
    est = FFMRegressor(fieldStarts=[0, S, 2 * S], solver=solver, factorSize=2, seed=3,
                       **extra)
    one = est.copy({est.numWorkers: 1}).fit(df.repartition(3))
    two = est.copy({est.numWorkers: 2}).fit(df)
    a, b = one.predictor.to_arrays(), two.predictor.to_arrays()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert two.numSamples == (20 if solver == "mcmc" else 1)
    pred = np.array([r[0] for r in two.transform(df).select("prediction").collect()])
    linear = X.toarray() @ np.linalg.lstsq(X.toarray(), y, rcond=None)[0]  # no interactions
    assert _rmse(pred, y) < 0.2 < 0.5 * _rmse(linear, y), (_rmse(pred, y), _rmse(linear, y))
    hist = two.summary.history
    curve = hist["objective"] if solver == "als" else hist["train_rmse"]
    assert curve[-1] < curve[0]

    path = str(tmp_path / solver)
    two.write().save(path)
    loaded = FFMRegressionModel.load(path)
    again = np.array([r[0] for r in loaded.transform(df).select("prediction").collect()])
    np.testing.assert_array_equal(again, pred)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(X), pred)


def test_ffm_mcmc_probit_classifier_and_its_checks(spark, planted, tmp_path):
    X, y, df = planted
    dfc = df.drop("label").withColumnRenamed("lab", "label")
    lab = np.array([r[0] for r in dfc.select("label").collect()])
    model = FFMClassifier(fieldStarts=[0, S, 2 * S], solver="mcmc", factorSize=2, maxIter=15,
                          seed=1, numWorkers=2).fit(dfc)
    assert str(model.predictor.link_name) == "probit"
    out = model.transform(dfc).select("probability", "prediction").collect()
    p = np.array([r[0][1] for r in out])
    assert np.mean((p > 0.5) == lab) > 0.95, np.mean((p > 0.5) == lab)
    path = str(tmp_path / "cls")
    model.write().save(path)
    np.testing.assert_array_equal(
        sparkxml_kernels.load_model(path).predict_proba(X)[:, 1], p)
    assert FFMClassificationModel.load(path).numSamples == 10
    with pytest.raises(ValueError, match="burnIn=5 must be below maxIter=5"):
        FFMRegressor(fieldStarts=[0], solver="mcmc", maxIter=5).fit(df)
    with pytest.raises(ValueError, match="weightCol is not supported by solver 'mcmc'"):
        FFMClassifier(fieldStarts=[0], solver="mcmc", weightCol="label").fit(dfc)
