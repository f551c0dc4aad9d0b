"""processType='update' through the public path: refresh on new rows over two workers equals
the kernel's single-process refresh; prune equals the kernel's prune; bad settings fail."""
import numpy as np
import pytest

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
