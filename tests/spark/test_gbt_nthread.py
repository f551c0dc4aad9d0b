"""nthread (issue 14): threads inside a GBT task give the same model as one thread; unset it
follows spark.task.cpus; bad values fail naming the param."""
import numba
import numpy as np
import pandas as pd
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import GBTClassifier, LambdaMART


@pytest.fixture(scope="module")
def frame(spark):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 6))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(3000) > 0)
    X[rng.random(X.shape) < 0.05] = np.nan
    pdf = pd.DataFrame({"features": [Vectors.dense(r) for r in X], "label": y.astype(float)})
    return spark.createDataFrame(pdf).cache()


def _arrays(model):
    return model.predictor.to_arrays()


def test_nthread_gives_the_same_model(frame):
    params = dict(maxIter=10, maxDepth=5, numWorkers=1, seed=1)
    one = GBTClassifier(nthread=1, **params).fit(frame)
    two = GBTClassifier(nthread=2, **params).fit(frame)
    a, b = _arrays(one), _arrays(two)
    for k in a:
        assert np.array_equal(a[k], b[k], equal_nan=np.asarray(a[k]).dtype.kind == "f"), k
    assert one.summary.workerInfo[0]["nthread"] == 1
    assert two.summary.workerInfo[0]["nthread"] == min(2, numba.config.NUMBA_NUM_THREADS)
    # unset: the task's spark.task.cpus (1 in the local[2] test session)
    default = GBTClassifier(**params).fit(frame)
    assert default.summary.workerInfo[0]["nthread"] == 1
    # prediction with threads on the model: the same probabilities
    p1 = np.array([r[0][1] for r in one.transform(frame).select("probability").collect()])
    one.setNthread(2)
    p2 = np.array([r[0][1] for r in one.transform(frame).select("probability").collect()])
    assert np.array_equal(p1, p2)


def test_nthread_is_validated(frame):
    with pytest.raises(ValueError, match="nthread"):
        GBTClassifier(maxIter=1, nthread=0).fit(frame)
    assert LambdaMART(nthread=3).getNthread() == 3
