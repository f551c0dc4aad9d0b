"""saveNativeModel and fromXGBoost on fitted Spark models: XGBoost, LightGBM and ONNX Runtime
predict what ``transform`` predicts (missing values and a categorical column included), and
an XGBoost model read back transforms as XGBoost predicts and continues training."""
import numpy as np
import pytest

from sparkxml import GBTClassifier, GBTRegressor, LambdaMART
from sparkxml.gbt import GBTClassificationModel, GBTRegressionModel

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
ort = pytest.importorskip("onnxruntime")

COLS = ["a", "b", "cat"]


@pytest.fixture(scope="module")
def frame(spark):
    """200 rows of float32-representable values: ``a`` with NaN, ``b``, a category code."""
    rng = np.random.default_rng(5)
    n = 200
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n), rng.integers(0, 5, n)])
    X = X.astype(np.float32).astype(np.float64)
    X[rng.random(n) < 0.2, 0] = np.nan
    s = np.nan_to_num(X[:, 0], nan=1.0) + X[:, 1] + (X[:, 2] % 2)
    rows = [(*[float(v) for v in X[i]], float(s[i]), float(s[i] > 0.8),
             float(np.digitize(s[i], [0.3, 1.3])), i // 20) for i in range(n)]
    df = spark.createDataFrame(rows, COLS + ["y", "label", "multi", "qid"])
    return X, df.cache()


MODELS = {
    "binary-categorical": lambda: GBTClassifier(featuresCols=COLS, categoricalCols=["cat"],
                                                catSmooth=1.0, maxIter=3, maxDepth=3,
                                                numWorkers=1),
    "multiclass": lambda: GBTClassifier(featuresCols=COLS, labelCol="multi", maxIter=3,
                                        maxDepth=2, numWorkers=1),
    "regressor": lambda: GBTRegressor(featuresCols=COLS, labelCol="y", maxIter=3,
                                      maxDepth=3, numWorkers=1),
    "lambdamart": lambda: LambdaMART(featuresCols=COLS, labelCol="multi", groupCol="qid",
                                     maxIter=3, maxDepth=3, numWorkers=1),
}


def _transformed(model, df):
    """``transform``'s prediction per row: P(class) rows for classifiers."""
    col = "probability" if isinstance(model, GBTClassificationModel) else "prediction"
    vals = [r[0] for r in model.transform(df).select(col).collect()]
    return np.array([v.toArray() for v in vals]) if col == "probability" else np.array(vals)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_native_formats_predict_what_transform_predicts(frame, name, tmp_path):
    X, df = frame
    model = MODELS[name]().fit(df)
    want = _transformed(model, df)
    flat = want[:, 1] if want.ndim == 2 and want.shape[1] == 2 else want
    model.saveNativeModel(str(tmp_path / "m.json"))  # "xgboost-json" by default
    bst = xgb.Booster(model_file=str(tmp_path / "m.json"))
    np.testing.assert_allclose(bst.predict(xgb.DMatrix(X)), flat, rtol=1e-5, atol=1e-6)
    model.saveNativeModel(str(tmp_path / "m.txt"), "lightgbm-text")
    np.testing.assert_allclose(lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(X),
                               flat, rtol=1e-12, atol=1e-15)
    if name == "binary-categorical":
        assert model.predictor.has_categorical
        with pytest.raises(ValueError, match="onnx.*categorical"):
            model.saveNativeModel(str(tmp_path / "m.onnx"), "onnx")
        return
    model.saveNativeModel(str(tmp_path / "m.onnx"), "onnx")
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"features": X.astype(np.float32)})
    got = got[1] if isinstance(model, GBTClassificationModel) else got[0][:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        model.saveNativeModel(str(tmp_path / "m.onnx"), "onnx")
    with pytest.raises(ValueError, match="format must be one of"):
        model.saveNativeModel(str(tmp_path / "m.bin"), "xgboost-ubj")


def test_from_xgboost_transforms_and_continues(frame, tmp_path):
    X, df = frame
    y = np.array([r[0] for r in df.select("y").collect()])
    bst = xgb.train(dict(max_depth=3, eta=0.3, nthread=1), xgb.DMatrix(X, y), 5)
    bst.save_model(str(tmp_path / "x.json"))
    model = GBTRegressionModel.fromXGBoost(str(tmp_path / "x.json")).setFeaturesCols(COLS)
    np.testing.assert_allclose(_transformed(model, df), bst.predict(xgb.DMatrix(X)),
                               rtol=1e-6, atol=1e-6)
    more = GBTRegressor(featuresCols=COLS, labelCol="y", maxIter=2, maxDepth=2, numWorkers=1,
                        initModel=model).fit(df)
    assert more.getNumTrees == 7
    with pytest.raises(ValueError, match="'squared_error' is not a GBTClassificationModel"):
        GBTClassificationModel.fromXGBoost(bst)
    with pytest.raises(ValueError, match="not an XGBoost JSON model.*UBJSON"):
        GBTRegressionModel.fromXGBoost(bytes(bst.save_raw("ubj")))


def test_forest_and_linear_svc_models_save_onnx(tmp_path):
    """The thin saveNativeModel of the ONNX-only models (no fit needed: built from their
    predictors)."""
    from sparkxml import LinearSVCModel, RandomForestRegressionModel
    from sparkxml_kernels.forest.predictor import ForestPredictor
    from sparkxml_kernels.linear.predictor import LinearSVCPredictor

    svc = LinearSVCModel(LinearSVCPredictor(np.array([[1.0, -2.0]]), np.array([0.5]), 2))
    svc.setThreshold(0.25)
    svc.saveNativeModel(str(tmp_path / "svc.onnx"))
    Xq = np.array([[0.0, 0.0], [1.0, 0.7], [1.0, 0.6]], np.float32)
    sess = ort.InferenceSession(str(tmp_path / "svc.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"features": Xq})[0],
                                  svc.predictor.predict(Xq.astype(float)))
    stump = ForestPredictor(
        children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[0, -2, -2],
        threshold=[0.5, -2.0, -2.0], impurity=[1.0, 0.0, 0.0], n_node_samples=[4, 2, 2],
        weighted_n_node_samples=[4.0, 2.0, 2.0], value=[[1.5], [1.0], [2.0]],
        tree_offsets=[0, 3], n_features=2, n_classes=0, criterion="squared_error")
    forest = RandomForestRegressionModel(stump)
    forest.saveNativeModel(str(tmp_path / "rf.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "rf.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"features": Xq})[0][:, 0], [1.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="exports as 'onnx' only"):
        forest.saveNativeModel(str(tmp_path / "rf.json"), "xgboost-json")
