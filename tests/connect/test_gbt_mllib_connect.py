"""Over Spark Connect: a GBT fit labels its jobs with tags (no SparkContext on the client),
its progress lines come back live, and the MLlib-style API works: evaluate(),
evaluateEachIteration, one-vector predictions, SHAP and leaf columns, base margins."""
import logging

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import GBTClassifier


def test_gbt_progress_and_model_api_over_connect(spark_connect, caplog):
    spark = spark_connect
    caplog.set_level(logging.INFO, logger="sparkxml")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 3))
    y = ((X[:, 0] + X[:, 1] * X[:, 2]) > 0).astype(float)
    df = spark.createDataFrame([(Vectors.dense(X[i]), float(y[i]), float(0.2 * X[i, 2]))
                                for i in range(len(y))], ["features", "label", "m"])
    est = GBTClassifier(maxIter=20, maxDepth=3, numWorkers=2, verbose=10, baseMarginCol="m",
                        predContribCol="shap", leafCol="leaves")
    model = est.fit(df)
    lines = [r.getMessage().split(" (")[0] for r in caplog.records if " round " in
             r.getMessage()]
    assert [ln.split(":")[0] for ln in lines] == ["GBTClassifier round 10/20",
                                                  "GBTClassifier round 20/20"]
    assert not any(t.startswith("sparkxml") for t in spark.getTags())  # tags removed

    ev = model.evaluate(df)
    assert ev.accuracy > 0.8 and ev.areaUnderROC > 0.85
    each = model.evaluateEachIteration(df)
    assert len(each) == 20 and each[-1] == pytest.approx(ev.logLoss, rel=1e-9)
    row = model.transform(df).first()
    assert sum(row.shap) == pytest.approx(row.rawPrediction[1], abs=1e-9)
    assert len(row.leaves) == 20
    # one vector: no base margin there, so the base score stands in for it
    raw = model.predictRaw(row.features)[1]
    assert raw == pytest.approx(row.rawPrediction[1] - row.m + model.predictor.base_score[0],
                                abs=1e-9)
