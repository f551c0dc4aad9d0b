"""GBT over Spark Connect: the sketch job and the barrier stage with direct sockets, transform,
save/overwrite/load, Pipeline persistence and the JVM-free loader."""
import numpy as np
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import GBTClassifier, GBTRegressor
from sparkxml.gbt.estimators import GBTClassificationModel


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = ((X[:, 0] + X[:, 1] * X[:, 2]) > 0).astype(float)
    return X, y


def test_gbt_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    X, y = _data()
    rows = [(Vectors.dense(X[i]), float(y[i]), bool(i % 5 == 0)) for i in range(len(y))]
    df = spark.createDataFrame(rows, ["features", "label", "valid"])
    est = GBTClassifier(maxIter=15, maxDepth=3, stepSize=0.3, numWorkers=2, seed=2,
                        validationIndicatorCol="valid", evalMetric="auc")
    model = est.fit(df)
    assert [i["world_size"] for i in model.summary.workerInfo] == [2, 2]
    assert len(model.summary.validationHistory) == 15
    assert model.summary.validationHistory[-1] > 0.85
    out = model.transform(df).select("probability", "prediction").collect()
    p = np.array([r[0][1] for r in out])
    acc = np.mean((p > 0.5) == (y > 0.5))
    assert acc > 0.85, acc

    path = str(tmp_path / "m")
    model.write().save(path)
    model.write().overwrite().save(path)  # no JVM needed for overwrite
    loaded = GBTClassificationModel.load(path)
    p2 = np.array([r[0][1] for r in loaded.transform(df).select("probability").collect()])
    np.testing.assert_array_equal(p2, p)
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predict_proba(X)[:, 1], p,
                               rtol=0, atol=1e-12)

    # numeric columns as features, in a saved Pipeline
    cols = spark.createDataFrame([tuple(map(float, X[i])) + (float(y[i]),)
                                  for i in range(len(y))], ["a", "b", "c", "d", "label"])
    # (with interaction constraints by name and per-node column sampling)
    pipe = Pipeline(stages=[GBTRegressor(featuresCols=["a", "b", "c", "d"], maxIter=5,
                                         numWorkers=2, colsampleByNode=0.8,
                                         interactionConstraints=[["a", "b"], ["c", "d"]])]
                    ).fit(cols)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    assert again.stages[0].getInteractionConstraints() == [["a", "b"], ["c", "d"]]
    a = pipe.transform(cols).select("prediction").collect()
    b = again.transform(cols).select("prediction").collect()
    assert a == b


def test_gbt_one_worker_reads_every_partition_over_connect(spark_connect):
    # numWorkers=1 on a multi-partition frame: one plain task reads every partition
    # (coalesce) instead of a shuffle into one partition; the same model as two workers up
    # to rounding
    spark = spark_connect
    X, y = _data(seed=3)
    rows = [(i, Vectors.dense(X[i]), float(y[i])) for i in range(len(y))]
    df = spark.createDataFrame(rows, ["id", "features", "label"]).repartition(3)
    kw = dict(maxIter=8, maxDepth=3, stepSize=0.3, seed=1)
    one = GBTClassifier(numWorkers=1, **kw).fit(df)
    assert [i["world_size"] for i in one.summary.workerInfo] == [1]
    assert one.summary.workerInfo[0]["n_train"] == len(y)
    two = GBTClassifier(numWorkers=2, **kw).fit(df)
    p1, p2 = ([r[1][1] for r in sorted(m.transform(df).select("id", "probability").collect())]
              for m in (one, two))
    np.testing.assert_allclose(p1, p2, rtol=0, atol=1e-9)
