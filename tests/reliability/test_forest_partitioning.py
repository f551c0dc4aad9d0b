"""Trees and forests give the same model, bit for bit, for any partitioning of the same rows
and any numWorkers: random partitionings, row orders and worker counts, on data where plain
float64 sums and per-partition quantile sketches tell them apart (float targets and weights,
continuous features with more distinct values than maxBins)."""
import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

N = 400


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, 4))
    y_reg = X[:, 0] * np.exp(X[:, 1]) + 0.3 * rng.standard_normal(N)
    y_cls = (X[:, 0] + 0.5 * rng.standard_normal(N) > 0).astype(int) + (X[:, 2] > 1)
    w = rng.uniform(0.25, 4.0, N)
    return [(Vectors.dense(x), float(a), float(b), float(c))
            for x, a, b, c in zip(X.tolist(), y_reg, y_cls, w)]


def _frame(spark, rows, parts, seed):
    order = np.random.default_rng(seed).permutation(len(rows))
    df = spark.createDataFrame([rows[i] for i in order], ["features", "y", "c", "w"])
    return df.repartition(parts) if parts else df.coalesce(1)


FAMILIES = {
    "RandomForestRegressor": lambda: RandomForestRegressor(
        labelCol="y", weightCol="w", numTrees=4, maxDepth=6, maxBins=32, seed=7, oobScore=True,
        quantiles=[0.1, 0.5, 0.9]),  # leaf samples too (their arrays compared below)
    "RandomForestClassifier": lambda: RandomForestClassifier(
        labelCol="c", weightCol="w", numTrees=4, maxDepth=6, maxBins=32, seed=7, oobScore=True),
    "DecisionTreeRegressor": lambda: DecisionTreeRegressor(
        labelCol="y", weightCol="w", maxDepth=6, maxBins=32),
    "DecisionTreeClassifier": lambda: DecisionTreeClassifier(
        labelCol="c", weightCol="w", maxDepth=6, maxBins=32),
}


def _arrays(model):
    return model.predictor.to_arrays()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_model_for_any_partitioning_and_workers(spark, rows, family):
    make = FAMILIES[family]
    ref_model = make().setNumWorkers(1).fit(_frame(spark, rows, 1, 0))
    ref = _arrays(ref_model)
    probe = _frame(spark, rows, 2, 99)
    ref_pred = [r[0] for r in ref_model.transform(probe).select("prediction").collect()]
    rng = np.random.default_rng(sum(map(ord, family)))
    # the reference is one partition on one worker; each trial a random partitioning and
    # row order, on 2 workers then on 1 (a fit takes seconds: a few trials per family)
    for workers in ((2, 1) if family == "RandomForestRegressor" else (2,)):
        parts, seed = int(rng.integers(2, 6)), int(rng.integers(1 << 20))
        model = make().setNumWorkers(workers).fit(_frame(spark, rows, parts, seed))
        got = _arrays(model)
        where = f"{family}: {parts} partitions, numWorkers={workers}"
        assert got.keys() == ref.keys(), where
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=f"{k} ({where})")
        pred = [r[0] for r in model.transform(probe).select("prediction").collect()]
        assert pred == ref_pred, where
        if family == "RandomForestRegressor":
            assert "sample_y" in got, where
            q = [r[0] for r in model.transform(probe).select("quantiles").collect()]
            assert q == [r[0] for r in ref_model.transform(probe).select("quantiles").collect()]
        if family.startswith("RandomForest"):
            assert model.outOfBagScore == ref_model.outOfBagScore, where
