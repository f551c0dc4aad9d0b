"""FMRegressor(loss="ordinal") over Spark Connect: the label check job, the barrier stage,
transform, save/load and the JVM-free loader."""
import numpy as np
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import FMRegressor
from sparkxml.fm.fm import FMRegressionModel


def test_ordinal_fm_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    rng = np.random.default_rng(0)
    X = (rng.random((500, 10)) < 0.3).astype(float)
    score = X[:, 0] * X[:, 1] + X[:, 2] - X[:, 3] + 0.3 * rng.normal(size=500)
    y = np.digitize(score, [-0.3, 0.5]).astype(float)  # 0, 1, 2
    df = spark.createDataFrame([(Vectors.dense(X[i]), float(y[i])) for i in range(500)],
                               ["features", "label"])
    model = FMRegressor(loss="ordinal", maxIter=15, burnIn=3, factorSize=3,
                        numWorkers=2).fit(df)
    assert [i["world_size"] for i in model.summary.workerInfo] == [2, 2]
    out = model.transform(df).select("prediction", "probability").collect()
    P = np.array([r.probability.toArray() for r in out])
    assert P.shape == (500, 3) and np.mean(P.argmax(axis=1) == y) > 0.6
    path = str(tmp_path / "ord")
    model.write().save(path)
    loaded = FMRegressionModel.load(path)
    assert loaded.classes == [0.0, 1.0, 2.0]
    again = [r.prediction for r in loaded.transform(df).select("prediction").collect()]
    assert again == [r.prediction for r in out]
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_proba(X), P)
