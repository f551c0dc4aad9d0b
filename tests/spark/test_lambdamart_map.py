"""LambdaMART(objective="map") on local[2]: binary labels, MAP improves over the rounds,
save/load and the kernel loader; graded labels and labelGain are refused early."""
import numpy as np
import pandas as pd
import pytest

import sparkxml_kernels
from sparkxml import LambdaMART, LambdaMARTModel

COLS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def frame(spark):
    rng = np.random.default_rng(7)
    sizes = rng.integers(4, 12, size=20)
    qid = np.repeat(np.arange(20), sizes)
    X = rng.normal(size=(qid.size, 3))
    rel = (X[:, 0] + 0.5 * rng.normal(size=qid.size) > 0.5).astype(float)
    pdf = pd.DataFrame(X, columns=COLS).assign(qid=qid, label=rel, grade=2 * rel)
    return spark.createDataFrame(pdf), pdf


def test_map_fits_persists_and_serves(frame, tmp_path):
    df, pdf = frame
    model = LambdaMART(featuresCols=COLS, objective="map", maxIter=8, maxDepth=3, stepSize=0.3,
                       numWorkers=2, evalMetrics=["map@5"]).fit(df)
    hist = model.summary.metricHistory["map@5"]["train"]
    assert hist[-1] > hist[0] and model.predictor.objective == "map"
    path = str(tmp_path / "map")
    model.write().save(path)
    assert LambdaMARTModel.load(path).getObjective() == "map"
    got = model.transform(df).orderBy("qid", "a").toPandas()["prediction"].to_numpy()
    order = pdf.sort_values(["qid", "a"])
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predict(order[COLS].to_numpy()),
                               got, rtol=1e-12)


def test_map_refuses_grades_and_label_gain(frame):
    df, _ = frame
    with pytest.raises(ValueError, match="binary relevance labels.*'grade' holds the grade 2"):
        LambdaMART(featuresCols=COLS, labelCol="grade", objective="map", maxIter=1,
                   numWorkers=1).fit(df)
    with pytest.raises(ValueError, match="labelGain does not apply"):
        LambdaMART(featuresCols=COLS, objective="map", labelGain=[0.0, 1.0], maxIter=1).fit(df)
