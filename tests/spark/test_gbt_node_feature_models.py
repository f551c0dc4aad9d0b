"""interactionConstraints (by name), colsampleByLevel / colsampleByNode and importance types
through Spark: every tree path obeys the sets, the model does not depend on numWorkers,
params survive save/load, sparkxml_kernels serves the model, bad names fail early."""
import numpy as np
import pandas as pd
import pytest
from pyspark.ml.feature import VectorAssembler

import sparkxml_kernels
from sparkxml import GBTClassifier, GBTRegressor, LambdaMART
from sparkxml.gbt.estimators import GBTClassificationModel

COLS = ["a", "b", "c", "d", "e"]
SETS = [["a", "b"], ["c", "d"]]


@pytest.fixture(scope="module")
def frame(spark):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5))
    pdf = pd.DataFrame(X, columns=COLS)
    pdf["label"] = (X[:, 0] * X[:, 2] + X[:, 1] + X[:, 3] * X[:, 4] > 0).astype(float)
    pdf["qid"] = np.arange(600) // 20
    pdf["rel"] = np.clip(np.round(X[:, 0] + X[:, 1] + 1), 0, 3)
    df = spark.createDataFrame(pdf)
    return VectorAssembler(inputCols=COLS, outputCol="features").transform(df).cache(), X


def _paths(pred):
    out = []
    for t in range(pred.n_trees):
        tr = pred.tree(t)
        stack = [(0, set())]
        while stack:
            node, used = stack.pop()
            if tr["left"][node] < 0:
                out.append(used)
            else:
                u = used | {int(tr["feature"][node])}
                stack += [(tr["left"][node], u), (tr["right"][node], u)]
    return out


def test_constraints_sampling_workers_and_persistence(frame, tmp_path):
    df, X = frame
    est = GBTClassifier(maxIter=6, maxDepth=4, stepSize=0.3, interactionConstraints=SETS,
                        colsampleByLevel=0.8, colsampleByNode=0.75, seed=3, numWorkers=1)
    m1 = est.fit(df)
    sets = [{0, 1}, {2, 3}]
    paths = _paths(m1.predictor)
    assert all(len(p) <= 1 or any(p <= s for s in sets) for p in paths)
    assert any(len(p) > 1 for p in paths)
    m2 = est.copy({est.numWorkers: 2}).fit(df.repartition(2))
    np.testing.assert_array_equal(m1.predictor.feature, m2.predictor.feature)
    np.testing.assert_allclose(m1.predictor.value, m2.predictor.value, rtol=1e-9, atol=1e-12)
    path = str(tmp_path / "m")
    m1.write().save(path)
    back = GBTClassificationModel.load(path)
    assert back.getInteractionConstraints() == SETS
    assert back.getColsampleByNode() == 0.75 and back.getColsampleByLevel() == 0.8
    served = sparkxml_kernels.load_model(path).predict_proba(X)
    got = np.array([r.probability[1] for r in m1.transform(df).select("probability").collect()])
    np.testing.assert_allclose(served[:, 1], got, rtol=1e-12)
    ort = pytest.importorskip("onnxruntime")
    back.saveNativeModel(str(tmp_path / "m.onnx"), "onnx", dtype="float64")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    # float64 sums; the LOGISTIC post-transform runs in float32 (4e-7 relative seen)
    np.testing.assert_allclose(sess.run(None, {"features": X})[1][:, 1], got, rtol=1e-6)
    imp = back.getFeatureImportances("weight")
    total = back.getFeatureImportances("total_gain")
    avg = back.getFeatureImportances("gain")
    assert set(imp) <= set(COLS) and all(avg[f] * imp[f] == pytest.approx(total[f]) for f in imp)


def test_bad_constraints_fail_with_the_name(frame):
    df, _ = frame
    with pytest.raises(ValueError, match="unknown feature 'zz'"):
        GBTRegressor(maxIter=1, numWorkers=1, interactionConstraints=[["a", "zz"]]).fit(df)
    with pytest.raises(ValueError, match="feature index 7 is not in 0..4"):
        LambdaMART(maxIter=1, numWorkers=1, labelCol="rel", interactionConstraints=[[0, 7]]
                   ).fit(df)
    with pytest.raises(ValueError, match="colsampleByNode"):
        GBTRegressor(colsampleByNode=0.0).fit(df)
    with pytest.raises(TypeError, match="interactionConstraints"):
        GBTRegressor(interactionConstraints=[[True]])
