"""Trees and forests over Spark Connect: checks, sketch and barrier stages, transform,
save/overwrite/load, Pipeline persistence and the JVM-free loader."""
import numpy as np
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import DecisionTreeRegressor, RandomForestClassifier
from sparkxml.forest.forest import RandomForestClassificationModel


def _label(X):
    """Three classes from two rules."""
    return (X[:, 0] + X[:, 1] > 20).astype(float) + (X[:, 2] > 12)


def test_trees_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    rng = np.random.default_rng(0)
    X = rng.integers(0, 20, size=(1500, 5)).astype(float)
    y = _label(X)
    df = spark.createDataFrame([(Vectors.dense(r), float(v)) for r, v in zip(X.tolist(), y)],
                               ["features", "label"])
    model = RandomForestClassifier(numTrees=10, maxDepth=12, numWorkers=2, seed=4,
                                   oobScore=True).fit(df)
    assert [i["world_size"] for i in model.trainingInfo["workerInfo"]] == [2, 2]
    assert model.outOfBagScore > 0.9
    rows = model.transform(df).select("features", "probability", "prediction").collect()
    Xr = np.array([r[0].toArray() for r in rows])
    assert np.mean(np.array([r[2] for r in rows]) == _label(Xr)) > 0.97

    path = str(tmp_path / "rf")
    model.write().save(path)
    model.write().overwrite().save(path)
    loaded = RandomForestClassificationModel.load(path)
    p1 = np.array([r[1].toArray() for r in rows])
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_values(Xr), p1)
    p2 = np.array([r[0].toArray() for r in loaded.transform(df).select("probability").collect()])
    assert p2.shape == p1.shape

    cols = spark.createDataFrame([tuple(r) + (float(v),) for r, v in zip(X.tolist(), y)],
                                 ["a", "b", "c", "d", "e", "label"])
    pipe = Pipeline(stages=[DecisionTreeRegressor(featuresCols=["a", "b", "c", "d", "e"],
                                                  maxDepth=6, numWorkers=2)]).fit(cols)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = [r[0] for r in pipe.transform(cols).select("prediction").collect()]
    b = [r[0] for r in again.transform(cols).select("prediction").collect()]
    assert a == b


def test_quantile_forest_over_connect(spark_connect, tmp_path):
    """quantiles: fit, transform (quantilesCol), save/load, Pipeline and the loader."""
    from sparkxml import RandomForestRegressor
    from sparkxml.forest.forest import RandomForestRegressionModel

    spark = spark_connect
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(300, 3))
    y = X[:, 0] + (0.1 + X[:, 0]) * rng.normal(size=300)
    df = spark.createDataFrame([(Vectors.dense(r), float(v)) for r, v in zip(X.tolist(), y)],
                               ["features", "label"])
    est = RandomForestRegressor(numTrees=5, maxDepth=4, numWorkers=2, seed=1,
                                quantiles=[0.2, 0.8])
    model = est.fit(df)
    rows = model.transform(df).select("features", "quantiles").collect()
    Xr = np.array([r[0].toArray() for r in rows])
    q = np.array([r[1] for r in rows])
    np.testing.assert_array_equal(q, model.predictQuantiles(Xr))
    path = str(tmp_path / "qrf")
    model.write().save(path)
    loaded = RandomForestRegressionModel.load(path)
    assert loaded.getQuantiles() == [0.2, 0.8]
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_quantiles(Xr), q)
    pipe = Pipeline(stages=[est]).fit(df)
    ppath = str(tmp_path / "qpipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath).transform(df).select("quantiles").collect()
    assert again == pipe.transform(df).select("quantiles").collect()


def test_categorical_tree_over_connect(spark_connect, tmp_path):
    """categoricalCols over Connect: the ids checked, the left sets saved and served."""
    from sparkxml import DecisionTreeClassifier
    from sparkxml.forest.tree import DecisionTreeClassificationModel

    rng = np.random.default_rng(1)
    c = rng.integers(0, 12, 600)
    x = rng.normal(size=600)
    y = np.isin(c, [1, 4, 5, 9]).astype(float)
    df = spark_connect.createDataFrame(
        [(float(a), float(b), float(v)) for a, b, v in zip(c, x, y)], ["c", "x", "label"])
    model = DecisionTreeClassifier(featuresCols=["c", "x"], categoricalCols=["c"], maxDepth=1,
                                   numWorkers=2).fit(df)
    assert np.isnan(model.treeArrays(0)["threshold"][0])
    pred = [r[0] for r in model.transform(df).select("prediction").collect()]
    assert pred == y.tolist()
    path = str(tmp_path / "dt_cat")
    model.write().save(path)
    assert DecisionTreeClassificationModel.load(path).getCategoricalCols() == ["c"]
    X = np.column_stack([c, x]).astype(float)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(X), y)
