"""processType='update' through the public path: refresh on new rows over two workers equals
the kernel's single-process refresh; prune equals the kernel's prune; bad settings fail."""
import numpy as np
import pytest
from pyspark.sql import functions as F

from sparkxml import GBTRegressor
from sparkxml.datasets import from_dense
from sparkxml_kernels.gbt.prune import prune_predictor
from sparkxml_kernels.gbt.updaters import refresh

COMMON = dict(maxDepth=3, stepSize=0.3, seed=0)


def _frame(spark, seed, n=500):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.2 * rng.normal(size=n)
    return X, y, from_dense(spark, X, columns={"label": y}, numPartitions=2)


def test_refresh_and_prune_init_model(spark):
    _, _, df = _frame(spark, 0)
    X2, y2, df2 = _frame(spark, 1)
    base = GBTRegressor(maxIter=3, numWorkers=1, **COMMON).fit(df)
    got = GBTRegressor(processType="update", updater="refresh", initModel=base, numWorkers=2,
                       **COMMON).fit(df2)
    want = refresh(base.predictor, X2, y2, params=dict(stepSize=0.3))
    for k in ("value", "gain", "cover"):
        np.testing.assert_allclose(getattr(got.predictor, k), getattr(want, k), rtol=1e-9,
                                   atol=1e-12)
    np.testing.assert_array_equal(got.predictor.feature, base.predictor.feature)
    gamma = float(np.median(base.predictor.gain[base.predictor.left >= 0]))
    pruned = GBTRegressor(processType="update", updater="prune", initModel=base,
                          minSplitLoss=gamma, **COMMON).fit(df2)
    np.testing.assert_array_equal(pruned.predictor.left,
                                  prune_predictor(base.predictor, gamma, 3)[0].left)
    assert pruned.totalNumNodes < base.totalNumNodes
    with pytest.raises(ValueError, match="set initModel"):
        GBTRegressor(processType="update", **COMMON).fit(df2)
    with pytest.raises(ValueError, match="updater"):
        GBTRegressor(processType="update", updater="grow", initModel=base).fit(df2)


def test_update_with_base_margin_validation_and_summary(spark):
    _, _, df = _frame(spark, 0)
    X2, y2, _ = _frame(spark, 2, 600)
    rng = np.random.default_rng(3)
    m2 = rng.normal(0.0, 0.5, y2.size)
    is_val = np.arange(y2.size) % 3 == 0
    y2[~is_val] = 2 * y2.mean() - y2[~is_val]  # refreshing on reflected labels goes astray
    df2 = from_dense(spark, X2, columns={"label": y2, "m": m2, "v": is_val.astype(int)},
                     numPartitions=2).withColumn("isVal", F.col("v") == 1)
    base = GBTRegressor(maxIter=6, numWorkers=1, **COMMON).fit(df)
    est = GBTRegressor(processType="update", updater="refresh", initModel=base, numWorkers=2,
                       baseMarginCol="m", validationIndicatorCol="isVal",
                       evalMetrics=["rmse", "mae"], **COMMON)
    got = est.fit(df2)
    hist = {}
    tr, va = ~is_val, is_val
    want = refresh(base.predictor, X2[tr], y2[tr], params=dict(stepSize=0.3,
                                                               evalMetrics=["rmse", "mae"]),
                   base_margin=m2[tr], eval_sets=[(X2[va], y2[va], None, None, m2[va])],
                   history=hist)
    for k in ("value", "gain", "cover"):
        np.testing.assert_allclose(getattr(got.predictor, k), getattr(want, k), rtol=1e-9,
                                   atol=1e-12)
    s = got.summary
    assert got.hasSummary and s.numWorkers == 2 and s.roundsRun == s.numRounds == 6
    assert s.metricName == "rmse" and set(s.metricHistory) == {"rmse", "mae"}
    np.testing.assert_allclose(s.validationHistory, hist["eval"][0], rtol=1e-9)
    np.testing.assert_allclose(s.metricHistory["mae"]["train"],
                               hist["metrics"]["mae"]["train"], rtol=1e-9)
    assert s.bestIteration == int(np.argmin(hist["eval"][0])) < 4
    stopped = est.copy({est.earlyStoppingRounds: 1}).fit(df2)
    assert stopped.getNumTrees == stopped.summary.numRounds == s.bestIteration + 1
    assert stopped.summary.roundsRun == s.bestIteration + 2
    pruned = GBTRegressor(processType="update", updater="prune", initModel=base,
                          minSplitLoss=1.0, **COMMON).fit(df2)
    assert pruned.hasSummary and pruned.summary.numRounds == 6
    with pytest.raises(ValueError, match="updater='prune'"):
        GBTRegressor(processType="update", updater="prune", initModel=base,
                     baseMarginCol="m").fit(df2)
