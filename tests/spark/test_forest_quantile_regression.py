"""Quantile regression forests on local[2]: quantilesCol beside quantile-forest's pinball loss,
the same quantiles from transform, the model and the JVM-free loader, save/load and Pipelines,
the checks on the quantiles param; and the distributed permutation importance on that
model."""

import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import RandomForestRegressor
from sparkxml.forest.forest import RandomForestRegressionModel

QS = [0.1, 0.5, 0.9]


def heteroscedastic(n, seed):
    """y = 4 x0 + 2 sin(6 x1) + (0.2 + 2 x0) e: the spread grows with x0."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 4))
    y = 4 * X[:, 0] + 2 * np.sin(6 * X[:, 1]) + (0.2 + 2 * X[:, 0]) * rng.normal(size=n)
    return X, y


def pinball(y, pred, q):
    d = y - pred
    return float(np.mean(np.maximum(q * d, (q - 1) * d)))


def _frame(spark, X, y, parts=2):
    rows = [(Vectors.dense(r), float(v)) for r, v in zip(X.tolist(), y.tolist())]
    return spark.createDataFrame(rows, ["features", "label"]).repartition(parts)


@pytest.fixture(scope="module")
def fitted(spark):
    X, y = heteroscedastic(1000, 0)
    Xt, yt = heteroscedastic(600, 1)
    est = RandomForestRegressor(numTrees=30, maxDepth=8, minInstancesPerNode=5, maxBins=2048,
                                featureSubsetStrategy="all", seed=3, numWorkers=2,
                                quantiles=QS)
    model = est.fit(_frame(spark, X, y))
    return X, y, Xt, yt, model


def test_pinball_loss_beside_quantile_forest(spark, fitted):
    qf = pytest.importorskip("quantile_forest")
    X, y, Xt, yt, model = fitted
    ref = qf.RandomForestQuantileRegressor(n_estimators=30, max_depth=8, min_samples_leaf=5,
                                           max_features=1.0, bootstrap=True,
                                           max_samples_leaf=None, random_state=3).fit(X, y)
    theirs = ref.predict(Xt, quantiles=QS)
    ours = model.predictQuantiles(Xt)
    # one seed of each: the bootstrap draws differ (the benchmark's mean over seeds is
    # within 2%), so 5% here
    for k, q in enumerate(QS):
        a, b = pinball(yt, ours[:, k], q), pinball(yt, theirs[:, k], q)
        assert abs(a - b) <= 0.05 * b, (q, a, b)
    # the spread follows x0: the 0.1-0.9 band is wider where x0 is large
    width = ours[:, 2] - ours[:, 0]
    assert width[Xt[:, 0] > 0.8].mean() > 2 * width[Xt[:, 0] < 0.2].mean()
    cover = np.mean((yt >= ours[:, 0]) & (yt <= ours[:, 2]))
    assert 0.7 < cover < 0.9


def test_transform_model_and_loader_agree_after_save_and_pipeline(spark, fitted, tmp_path):
    X, y, Xt, yt, model = fitted
    df = _frame(spark, Xt, yt, parts=3)
    rows = model.transform(df).select("features", "prediction", "quantiles").collect()
    Xr = np.array([r[0].toArray() for r in rows])
    got = np.array([r[2] for r in rows])
    np.testing.assert_array_equal(got, model.predictQuantiles(Xr))
    np.testing.assert_array_equal([r[1] for r in rows], model.predictor.predict(Xr))
    path = str(tmp_path / "qrf")
    model.write().save(path)
    loaded = RandomForestRegressionModel.load(path)
    assert loaded.hasLeafSamples and loaded.getQuantiles() == QS
    served = sparkxml_kernels.load_model(path)
    np.testing.assert_array_equal(served.predict_quantiles(Xr), got)
    np.testing.assert_array_equal(served.predict_quantiles(Xr, [0.25]),
                                  model.predictQuantiles(Xr, [0.25]))
    np.testing.assert_array_equal(served.predict(Xr), [r[1] for r in rows])
    # other quantiles on the fitted model, and another output column
    other = loaded.setQuantiles([0.3, 0.7]).setQuantilesCol("q").transform(df)
    q2 = np.array([r[0] for r in other.select("q").collect()])
    np.testing.assert_array_equal(q2, model.predictQuantiles(Xr, [0.3, 0.7]))
    pipe = Pipeline(stages=[RandomForestRegressor(numTrees=3, maxDepth=3, numWorkers=1,
                                                  quantiles=[0.5])]).fit(df)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    a = pipe.transform(df).select("quantiles").collect()
    b = PipelineModel.load(ppath).transform(df).select("quantiles").collect()
    assert a == b and len(a[0][0]) == 1


def test_quantiles_are_checked(spark):
    X, y = heteroscedastic(60, 2)
    df = _frame(spark, X, y)
    for bad in ([0.0], [0.5, 1.0], [1.5]):
        with pytest.raises(ValueError, match="quantiles"):
            RandomForestRegressor(quantiles=bad, numWorkers=1).fit(df)
    plain = RandomForestRegressor(numTrees=2, maxDepth=2, numWorkers=1).fit(df)
    assert not plain.hasLeafSamples and "quantiles" not in plain.transform(df).columns
    with pytest.raises(ValueError, match="no leaf samples"):
        plain.setQuantiles([0.5]).transform(df)
    with pytest.raises(ValueError, match="quantiles: 60 rows x 1000000 trees"):
        RandomForestRegressor(numTrees=1_000_000, quantiles=[0.5], numWorkers=1).fit(df)


def test_distributed_permutation_importance(spark, fitted):
    """mode="distributed": the same numbers for any partitioning, the exact mode's ranking."""
    X, y, Xt, yt, model = fitted
    df = _frame(spark, Xt, yt, parts=2)
    a = model.permutationImportance(df, nRepeats=2, seed=4, mode="distributed", blockRows=150)
    b = model.permutationImportance(df.repartition(3), nRepeats=2, seed=4, mode="distributed",
                                    blockRows=150)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    exact = model.permutationImportance(df, nRepeats=2, seed=4)
    assert a["baseline_score"] == pytest.approx(exact["baseline_score"], rel=1e-9)
    assert a["importances"].shape == (4, 2)
    # 2 sin(6 x1) varies more than 4 x0; x2 and x3 are noise
    assert np.argmax(a["importances_mean"]) == np.argmax(exact["importances_mean"]) == 1
    assert np.all(a["importances_mean"][2:] < 0.05)
    np.testing.assert_allclose(a["importances_mean"], exact["importances_mean"], atol=0.1)
    with pytest.raises(ValueError, match="mode"):
        model.permutationImportance(df, mode="sometimes")
