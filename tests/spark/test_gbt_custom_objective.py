"""setCustomObjective / setCustomMetric on local[2]: a custom squared error gives the
built-in model on two workers, the custom metric is recorded per round, the model saves
with its objective's name and predicts its margin; wrong returns fail the fit."""
import numpy as np
import pandas as pd
import pytest
from pyspark.errors import PySparkException

import sparkxml_kernels
from sparkxml import GBTClassifier, GBTRegressor

COLS = ["a", "b", "c"]


def _frame(spark, n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return spark.createDataFrame(pd.DataFrame(X, columns=COLS).assign(
        label=y, w=rng.uniform(0.5, 2.0, n), valid=np.arange(n) % 4 == 0))


def test_custom_objective_and_metric_through_spark(spark, tmp_path):
    # defined here, not at module level: cloudpickle then ships them by value to the tasks
    def squared(label, margin, weight):
        return (margin - label) * weight, weight.copy()

    def wmae(label, margin, weight):
        return float(np.sum(weight * np.abs(margin - label))), float(np.sum(weight))

    df = _frame(spark)
    params = dict(featuresCols=COLS, weightCol="w", maxIter=6, maxDepth=3, stepSize=0.3,
                  baseScore=0.0, numWorkers=2, validationIndicatorCol="valid")
    custom = (GBTRegressor(**params).setCustomObjective(squared, "sq")
              .setCustomMetric(wmae, "wmae").fit(df))
    ref = GBTRegressor(evalMetric="mae", **params).fit(df)
    a = custom.transform(df).toPandas()["prediction"].to_numpy()
    b = ref.transform(df).toPandas()["prediction"].to_numpy()
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    hist = custom.summary.metricHistory
    assert custom.summary.metricName == "custom:wmae"
    np.testing.assert_allclose(hist["custom:wmae"]["validation"],
                               ref.summary.metricHistory["mae"]["validation"], rtol=1e-9)
    assert custom.predictor.objective == "custom:sq"
    path = str(tmp_path / "custom")
    custom.write().save(path)
    served = sparkxml_kernels.load_model(path)
    X = df.select(*COLS).toPandas().to_numpy()
    np.testing.assert_allclose(served.predict(X), a, rtol=1e-12)
    assert "custom:wmae" not in custom.evaluate(df).metrics  # its function stays behind


def test_custom_objective_errors(spark):
    df = _frame(spark, 40)

    def zero_hess(label, margin, weight):
        return margin - label, np.zeros_like(margin)

    def two_columns(label, margin, weight):  # two classes: the margin is (n,)
        return np.zeros((margin.size, 2)), np.ones((margin.size, 2))

    with pytest.raises((PySparkException, RuntimeError, ValueError), match="hessian <= 0"):
        GBTRegressor(featuresCols=COLS, maxIter=1, numWorkers=1).setCustomObjective(
            zero_hess, "z").fit(df)
    bin_df = df.withColumn("label", (df.label > 0).cast("double"))
    with pytest.raises((PySparkException, RuntimeError, ValueError), match=r"shape \(40, 2\)"):
        GBTClassifier(featuresCols=COLS, maxIter=1, numWorkers=1).setCustomObjective(
            two_columns, "two").fit(bin_df)
    with pytest.raises(TypeError, match="must be callable"):
        GBTRegressor().setCustomObjective(3)
    with pytest.raises(ValueError, match="non-empty word"):
        GBTRegressor().setCustomMetric(len, "a:b")
