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


def test_tree_options_over_connect(spark_connect, tmp_path):
    """absolute_error, ccpAlpha, leafCol, a classWeight dict, monotonicConstraints and NaN
    features over Connect: fit, transform, Pipeline save/load and the JVM-free loader agree,
    and the distributed permutation importance runs as a DataFrame job."""
    from sparkxml import DecisionTreeRegressor, ExtraTreesClassifier

    spark = spark_connect
    rng = np.random.default_rng(2)
    X = rng.integers(0, 30, size=(800, 4)).astype(float)
    y = X[:, 0] + 3.0 * (X[:, 1] > 15) + rng.integers(0, 3, 800)
    cols = ["a", "b", "c", "d"]
    df = spark.createDataFrame([tuple(r) + (float(v),) for r, v in zip(X.tolist(), y)],
                               cols + ["label"])
    mae = DecisionTreeRegressor(featuresCols=cols, criterion="absolute_error", maxDepth=6,
                                ccpAlpha=0.05, leafCol="leaf", numWorkers=2)
    pipe = Pipeline(stages=[mae]).fit(df)
    path = str(tmp_path / "mae_pipe")
    pipe.write().save(path)
    got = PipelineModel.load(path).transform(df).select("prediction", "leaf").toPandas()
    ref = pipe.transform(df).select("prediction", "leaf").toPandas()
    assert got.equals(ref)
    tree = pipe.stages[0]
    # ccpAlpha pruned the depth-6 tree; predictions are medians of the training labels
    assert tree.treeArrays(0)["value"].size < 2 ** 7 - 1
    assert set(ref["prediction"]) <= set(y.tolist()) | {float(v) + 0.5 for v in y}
    tree.write().save(str(tmp_path / "mae"))
    np.testing.assert_array_equal(
        sparkxml_kernels.load_model(str(tmp_path / "mae")).predict(X),
        ref["prediction"].to_numpy())
    imp = tree.permutationImportance(df, nRepeats=2, seed=1, mode="distributed")
    means = np.asarray(imp["importances_mean"])
    assert means.shape == (4,) and means[0] > means[2] and means[0] > means[3]

    Xn = X.copy()
    Xn[rng.random(Xn.shape) < 0.1] = np.nan
    lab = (X[:, 0] > 14).astype(float)
    dfn = spark.createDataFrame([(Vectors.dense(r), float(v)) for r, v in zip(Xn.tolist(), lab)],
                                ["features", "label"])
    et = ExtraTreesClassifier(numTrees=8, maxDepth=6, seed=3, numWorkers=2,
                              classWeight={0: 1.0, 1: 2.0}, monotonicConstraints=[1, 0, 0, 0],
                              leafCol="leaves").fit(dfn)
    rows = et.transform(dfn).select("probability", "leaves").collect()
    proba = np.array([r[0].toArray() for r in rows])
    assert all(len(r[1]) == 8 for r in rows)
    ep = str(tmp_path / "et")
    et.write().save(ep)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(ep).predict_proba(Xn), proba)
    assert np.mean(proba.argmax(1) == lab) > 0.7  # the majority class is half the rows


def test_replayed_sklearn_forest_over_connect(spark_connect, tmp_path):
    """rowIndexCol over Connect: the replicated job, scikit-learn's trees node for node, a
    Pipeline saved and loaded."""
    from sklearn.ensemble import RandomForestClassifier as SkForest

    spark = spark_connect
    rng = np.random.default_rng(5)
    X = rng.integers(0, 20, size=(400, 5)).astype(float)
    y = _label(X)
    rows = [(int(i), Vectors.dense(X[i].tolist()), float(y[i])) for i in rng.permutation(400)]
    df = spark.createDataFrame(rows, ["id", "features", "label"])
    rf = RandomForestClassifier(numTrees=4, maxDepth=64, seed=2, numWorkers=2,
                                classWeight="balanced_subsample", rowIndexCol="id")
    pipe = Pipeline(stages=[rf]).fit(df)
    sk = SkForest(n_estimators=4, class_weight="balanced_subsample", random_state=2).fit(X, y)
    model = pipe.stages[0]
    for t, est in enumerate(sk.estimators_):
        for f in ("children_left", "feature", "threshold", "value"):
            np.testing.assert_array_equal(model.treeArrays(t)[f], getattr(est.tree_, f))
    path = str(tmp_path / "replayed_pipe")
    pipe.write().save(path)
    got = PipelineModel.load(path).transform(df).orderBy("id").select("prediction").collect()
    np.testing.assert_array_equal([r.prediction for r in got], sk.predict(X))
