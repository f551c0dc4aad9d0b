"""boosterType='dart' through the public path: weights saved and served by
sparkxml_kernels.load_model, exact SHAP, XGBoost JSON export, and the refusal to continue
from an initModel (worker-count independence: tests/kernels/test_gbt_dart.py)."""
import json

import numpy as np
import pytest

import sparkxml_kernels
from sparkxml import GBTClassifier
from sparkxml.datasets import from_dense

DART = dict(maxIter=8, maxDepth=3, stepSize=0.3, seed=4, boosterType="dart", rateDrop=0.3,
            normalizeType="forest", sampleType="weighted", oneDrop=True)


@pytest.fixture(scope="module")
def data(spark):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=600) > 0).astype(float)
    return X, y, from_dense(spark, X, columns={"label": y}, numPartitions=2).cache()


def test_dart_model_saves_serves_and_explains(data, tmp_path):
    X, y, df = data
    one = GBTClassifier(numWorkers=2, predContribCol="shap", **DART).fit(df)
    w = one.predictor.tree_weights
    assert w is not None and w.shape == (8,) and (w < 1).any()
    raw = one.predictor.predict_raw(X)
    rows = one.transform(df).select("rawPrediction", "shap").collect()
    margin = np.array([r[0][1] for r in rows])
    np.testing.assert_allclose(np.array([sum(r[1]) for r in rows]), margin, atol=1e-9)
    path = str(tmp_path / "dart")
    one.save(path)
    served = sparkxml_kernels.load_model(path)
    np.testing.assert_allclose(served.predictor.tree_weights, w)
    np.testing.assert_allclose(served.predictor.predict_raw(X), raw)
    xgb = pytest.importorskip("xgboost")
    out = str(tmp_path / "dart.json")
    one.saveNativeModel(out)
    assert json.load(open(out))["learner"]["gradient_booster"]["name"] == "dart"
    np.testing.assert_allclose(xgb.Booster(model_file=out).predict(
        xgb.DMatrix(X), output_margin=True), raw, rtol=1e-5, atol=1e-5)


def test_dart_refuses_init_model(data):
    _, _, df = data
    base = GBTClassifier(maxIter=2, maxDepth=2, numWorkers=1).fit(df)
    with pytest.raises(ValueError, match="initModel: boosterType='dart'"):
        GBTClassifier(initModel=base, **DART).fit(df)
    with pytest.raises(ValueError, match="rateDrop"):
        GBTClassifier(boosterType="dart", rateDrop=1.5).fit(df)


def test_lambdamart_dart_saves_serves_explains_and_exports(spark, tmp_path):
    from sparkxml import LambdaMART, LambdaMARTModel

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4))
    qid = np.arange(400) // 10
    rel = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + 1 + 0.3 * rng.normal(size=400)), 0, 3)
    df = from_dense(spark, X, columns={"qid": qid, "label": rel, "i": np.arange(400)},
                    numPartitions=2).cache()
    params = dict(maxIter=8, maxDepth=3, stepSize=0.3, seed=4, boosterType="dart",
                  rateDrop=0.3, oneDrop=True, predContribCol="shap")
    one = LambdaMART(numWorkers=1, **params).fit(df)
    two = LambdaMART(numWorkers=2, **params).fit(df)
    w = one.predictor.tree_weights
    assert one.getBoosterType() == "dart" and w.shape == (8,) and (w < 1).any()
    np.testing.assert_allclose(two.predictor.tree_weights, w, rtol=1e-12)
    raw = one.predictor.predict_raw(X)
    rows = one.transform(df).orderBy("i").select("prediction", "shap").collect()
    np.testing.assert_allclose([r[0] for r in rows], raw, atol=1e-9)
    np.testing.assert_allclose([sum(r[1]) for r in rows], raw, atol=1e-9)
    path = str(tmp_path / "rank_dart")
    one.save(path)
    back = LambdaMARTModel.load(path)
    assert back.getBoosterType() == "dart"
    np.testing.assert_allclose(back.predictor.tree_weights, w)
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predictor.predict_raw(X), raw)
    xgb = pytest.importorskip("xgboost")
    out = str(tmp_path / "rank_dart.json")
    one.saveNativeModel(out)
    doc = json.load(open(out))["learner"]
    assert doc["gradient_booster"]["name"] == "dart"
    assert doc["objective"]["name"] == "rank:ndcg"
    np.testing.assert_allclose(xgb.Booster(model_file=out).predict(
        xgb.DMatrix(X), output_margin=True), raw, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="processType: LambdaMART"):
        LambdaMART(maxIter=2).setProcessType("update").fit(df)
