"""GBTRegressor's objectives over Spark Connect: the label checks in the data-check job, the
exact leaf quantiles and Cox's risk sets across two workers, transform on the response scale
and the saved model served by the JVM-free loader."""
import numpy as np
import pytest

import sparkxml_kernels
from sparkxml import GBTRegressor
from sparkxml.gbt.estimators import GBTRegressionModel

COLS = ["a", "b", "c"]


def _frame(spark, y, X):
    return spark.createDataFrame([tuple(map(float, X[i])) + (float(y[i]),)
                                  for i in range(len(y))], COLS + ["label"])


@pytest.mark.parametrize("objective,params", [("poisson", {}), ("quantile",
                                                                {"quantileAlpha": 0.7}),
                                              ("cox", {})])
def test_objectives_over_connect(spark_connect, tmp_path, objective, params):
    spark = spark_connect
    rng = np.random.default_rng(0)
    X = rng.integers(0, 8, size=(600, 3)).astype(float)
    mu = np.exp(0.2 * X[:, 0] - 0.1 * X[:, 1])
    if objective == "cox":
        t = rng.exponential(1 / mu)
        y = np.where(rng.random(600) < 0.3, -t, t)
    else:
        y = rng.poisson(mu * 3).astype(float)
    df = _frame(spark, y, X)
    model = GBTRegressor(featuresCols=COLS, objective=objective, maxIter=8, maxDepth=3,
                         numWorkers=2, **params).fit(df)
    out = model.transform(df).select("prediction").collect()
    p = np.array([r[0] for r in out])
    path = str(tmp_path / objective)
    model.write().save(path)
    assert GBTRegressionModel.load(path).getObjective() == objective
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predict(X), p, rtol=1e-12)
    one = GBTRegressor(featuresCols=COLS, objective=objective, maxIter=8, maxDepth=3,
                       numWorkers=1, **params).fit(df)
    np.testing.assert_allclose([r[0] for r in one.transform(df).select("prediction")
                                .collect()], p, rtol=1e-10)


def test_bad_labels_over_connect(spark_connect):
    X = np.zeros((20, 3))
    y = np.arange(20.0) - 1.0  # one label is -1
    with pytest.raises(ValueError, match="holds the value -1.0; objective 'poisson' needs "
                                         "labels >= 0"):
        GBTRegressor(featuresCols=COLS, objective="poisson").fit(_frame(spark_connect, y, X))
