"""LinearSVC over Spark Connect: row count + barrier stage, the same model for numWorkers 1
and 2, a bad label named by the training tasks, transform, save/overwrite/load, Pipeline
persistence and the JVM-free loader."""
import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import LinearSVC, LinearSVCModel


def test_linear_svm_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) > 0.2).astype(float)
    df = spark.createDataFrame([(Vectors.dense(X[i]), float(y[i])) for i in range(600)],
                               ["features", "label"])
    pipe = Pipeline(stages=[LinearSVC(numBlocks=2, numWorkers=2, maxIter=20, seed=1)]).fit(df)
    m1 = pipe.stages[0]
    m2 = LinearSVC(numBlocks=2, numWorkers=1, maxIter=20, seed=1).fit(df.repartition(3))
    assert np.array_equal(m1.coefficients.toArray(), m2.coefficients.toArray())
    assert len(m1.summary.workerInfo) == 2 and m1.summary.converged
    bad = spark.createDataFrame([(Vectors.dense(X[i]), 0.5 if i == 7 else float(y[i]))
                                 for i in range(40)], ["features", "label"])
    with pytest.raises(ValueError, match=r"labelCol.*0\.5"):
        LinearSVC().fit(bad)
    pred = np.array([r[0] for r in m1.transform(df).select("prediction").collect()])
    assert np.mean(pred == y) > 0.9
    path = str(tmp_path / "m")
    m1.write().save(path)
    m1.write().overwrite().save(path)
    back = LinearSVCModel.load(path)
    assert back.transform(df).select("rawPrediction").collect() == \
        m1.transform(df).select("rawPrediction").collect()
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(X), pred)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    assert PipelineModel.load(ppath).transform(df).select("prediction").collect() == \
        pipe.transform(df).select("prediction").collect()
