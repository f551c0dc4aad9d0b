"""LambdaMART(objective="xendcg") on local[2]: the same model on one and two workers (each
query seeds its draws from its rows), better than the first round, save/load and the kernel
loader."""
import numpy as np
import pandas as pd
import pytest

import sparkxml_kernels
from sparkxml import LambdaMART, LambdaMARTModel

COLS = ["a", "b", "c"]


def test_xendcg_same_model_on_one_and_two_workers_and_persists(spark, tmp_path):
    rng = np.random.default_rng(5)
    sizes = rng.integers(3, 10, size=20)
    qid = np.repeat(np.arange(20), sizes)
    X = rng.normal(size=(qid.size, 3))
    rel = np.clip(np.round(X[:, 0] + 0.3 * rng.normal(size=qid.size) + 1), 0, 3)
    df = spark.createDataFrame(pd.DataFrame(X, columns=COLS).assign(qid=qid, label=rel))
    params = dict(featuresCols=COLS, groupCol="qid", objective="xendcg", maxIter=8,
                  maxDepth=3, stepSize=0.3, seed=3, evalMetrics=["ndcg@5"])
    one = LambdaMART(numWorkers=1, **params).fit(df)
    two = LambdaMART(numWorkers=2, **params).fit(df)
    p1 = one.transform(df).orderBy("qid", "a").toPandas()["prediction"].to_numpy()
    p2 = two.transform(df).orderBy("qid", "a").toPandas()["prediction"].to_numpy()
    np.testing.assert_allclose(p1, p2, rtol=1e-9, atol=1e-12)
    hist = one.summary.metricHistory["ndcg@5"]["train"]
    assert hist[-1] > hist[0] and one.predictor.objective == "xendcg"
    path = str(tmp_path / "xendcg")
    one.write().save(path)
    served = sparkxml_kernels.load_model(path)
    order = pd.DataFrame(X, columns=COLS).assign(qid=qid).sort_values(["qid", "a"])
    np.testing.assert_allclose(served.predict(order[COLS].to_numpy()), p1, rtol=1e-12)
    assert LambdaMARTModel.load(path).getObjective() == "xendcg"


def test_unknown_ranking_objective_refused():
    with pytest.raises(ValueError, match="objective"):
        LambdaMART(objective="rank_xendcg")._validate_params()
