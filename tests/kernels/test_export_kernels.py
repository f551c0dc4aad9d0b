"""sparkxml_kernels.export: GBT ensembles written as XGBoost JSON, LightGBM text and ONNX
predict what the predictor predicts in those libraries (missing values, category sets and
base scores included), XGBoost models read back predict what XGBoost predicts, and bad
exports fail with a message naming the problem."""
import json
import os

import numpy as np
import pytest

from sparkxml_kernels import binning
from sparkxml_kernels.export import FORMATS, export_bytes, export_model
from sparkxml_kernels.export.xgboost_json import from_xgboost_json, leq_threshold
from sparkxml_kernels.gbt import binned as B
from sparkxml_kernels.gbt import booster

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
ort = pytest.importorskip("onnxruntime")

N = 240


def _data(seed=0):
    """Float32-representable features (XGBoost and ONNX read float32): a real feature with
    20% NaN, a category code 0..5, another real feature."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=N), rng.integers(0, 6, N), rng.normal(size=N)])
    X = X.astype(np.float32).astype(np.float64)
    X[rng.random(N) < 0.2, 0] = np.nan
    y = X[:, 2] + np.where(np.isnan(X[:, 0]), 1.5, X[:, 0]) + (X[:, 1] % 2)
    return X, y


X, Y = _data()
EDGES = binning.edges_from_sketch(binning.sketch(X, None, 64), 64)
XB = binning.bin_data(X, EDGES)
CASES = {
    "regression": (dict(maxIter=4, maxDepth=3), Y, None),
    "binary": (dict(maxIter=4, maxDepth=3, objective="logistic"), (Y > 0.5) * 1.0, None),
    "multiclass": (dict(maxIter=3, maxDepth=2, objective="softmax", numClasses=3),
                   np.digitize(Y, [0, 1]) * 1.0, None),
    "lambdarank": (dict(maxIter=3, maxDepth=3, objective="lambdarank"),
                   np.digitize(Y, [0, 1, 2]) * 1.0, np.arange(0, N + 1, 30)),
    "poisson": (dict(maxIter=3, maxDepth=3, objective="poisson"), np.round(np.exp(Y / 3)),
                None),
    "map": (dict(maxIter=3, maxDepth=3, objective="map"), (Y > 0.5) * 1.0,
            np.arange(0, N + 1, 30)),
}


@pytest.fixture(scope="module")
def models():
    out = {}
    for name, (params, y, groups) in CASES.items():
        out[name] = booster.train(XB, y, None, EDGES, params, group_ptr=groups)[0]
    cats = [None, np.unique(X[:, 1]), None]
    out["categorical"] = booster.train(
        B.bin_matrix(X, EDGES, categories=cats), Y, None, EDGES,
        dict(maxIter=4, categoricalFeatures=[1], catSmooth=1.0), categories=cats)[0]
    assert out["categorical"].has_categorical
    return out


def _ours(pred, Xq):
    """What the target libraries return: P(class 1) for binary models."""
    p = pred.predict(Xq)
    return p[:, 1] if pred.objective == "logistic" else p


def _probe(name):
    """The training rows plus rows that take the unusual branches: NaN everywhere a split
    may look (default directions), and for the category feature unknown, negative, huge
    and missing codes."""
    Xq = X.copy()
    Xq[:6, 2] = np.nan
    if name == "categorical":
        Xq[6:10, 1] = [99.0, -1.0, 1e12, np.nan]
    return Xq


@pytest.mark.parametrize("name", list(CASES) + ["categorical"])
def test_xgboost_and_lightgbm_predict_what_sparkxml_predicts(models, name, tmp_path):
    pred = models[name]
    Xq = _probe(name)
    ours = _ours(pred, Xq)
    export_model(pred, str(tmp_path / "m.json"), "xgboost-json")
    bst = xgb.Booster(model_file=str(tmp_path / "m.json"))
    # float32 leaves, thresholds and sums in XGBoost: agreement to float32 rounding
    np.testing.assert_allclose(bst.predict(xgb.DMatrix(Xq)), ours, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bst.predict(xgb.DMatrix(Xq), output_margin=True),
                               pred.predict_raw(Xq), rtol=1e-5, atol=1e-6)
    export_model(pred, str(tmp_path / "m.txt"), "lightgbm-text")
    lg = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    # LightGBM adds the same doubles in the same order: equal to the last bit but the link
    np.testing.assert_array_equal(lg.predict(Xq, raw_score=True), pred.predict_raw(Xq))
    np.testing.assert_allclose(lg.predict(Xq), ours, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", list(CASES))
def test_onnx_runtime_predicts_what_sparkxml_predicts(models, name):
    pred = models[name]
    Xq = _probe(name)
    sess = ort.InferenceSession(export_bytes(pred, "onnx"), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"features": Xq.astype(np.float32)})
    ours = pred.predict(Xq)
    if name in ("binary", "multiclass"):
        np.testing.assert_allclose(got[1], ours, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[0], ours.argmax(axis=1))
    else:
        np.testing.assert_allclose(got[0][:, 0], ours, rtol=1e-5, atol=1e-6)


def test_missing_zero_and_refusals(models, tmp_path):
    pred = models["regression"].with_options(missing=0.0)
    X0 = X.copy()
    X0[::4, 0] = 0.0  # zeros are missing too: they follow the default directions
    lg = lgb.Booster(model_str=export_bytes(pred, "lightgbm-text").decode())
    np.testing.assert_array_equal(lg.predict(X0), pred.predict(X0))
    assert not np.array_equal(pred.predict(X0), models["regression"].predict(X0))
    with pytest.raises(ValueError, match=r"lightgbm-text.*missing=5\.0"):
        export_bytes(pred.with_options(missing=5.0), "lightgbm-text")
    with pytest.raises(ValueError, match="onnx.*categorical"):
        export_bytes(models["categorical"], "onnx")
    with pytest.raises(ValueError, match="format must be one of.*'pmml'"):
        export_bytes(pred, "pmml")
    with pytest.raises(TypeError, match="no export for dict"):
        export_bytes({}, "xgboost-json")
    huber = models["regression"].with_options()
    huber.objective = "huber"
    with pytest.raises(ValueError, match="'xgboost-json' cannot hold objective 'huber'"):
        export_bytes(huber, "xgboost-json")
    path = tmp_path / "m.json"
    export_model(pred, str(path), "xgboost-json")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="already exists.*overwrite=True"):
        export_model(models["binary"], str(path), "xgboost-json")
    assert path.read_bytes() == before
    export_model(models["binary"], str(path), "xgboost-json", overwrite=True)
    assert json.loads(path.read_bytes())["learner"]["objective"]["name"] == "binary:logistic"
    with pytest.raises(ValueError, match="is a directory"):
        export_model(pred, str(tmp_path), "xgboost-json", overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["m.json"]  # no temporary file left behind
    assert set(FORMATS) == {"xgboost-json", "lightgbm-text", "onnx"}


def _forest(classes, seed=0):
    """A scikit-learn forest as sparkxml's ForestPredictor (the same ``tree_`` arrays)."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    from sparkxml_kernels.forest.predictor import ForestPredictor
    from sparkxml_kernels.forest.tree import FIELDS, TreeArrays

    rng = np.random.default_rng(seed)
    Xf = rng.normal(size=(150, 4))
    s = Xf[:, 0] + Xf[:, 1]
    est = (RandomForestClassifier(4, max_depth=4, random_state=seed).fit(
        Xf, np.digitize(s, [0.0, 1.0][:classes - 1])) if classes else
        RandomForestRegressor(4, max_depth=4, random_state=seed).fit(Xf, s))
    trees = [TreeArrays(*[getattr(e.tree_, f) for f in FIELDS]) for e in est.estimators_]
    return ForestPredictor.from_trees(trees, 4, classes, "gini" if classes else
                                      "squared_error"), Xf


def _ort(payload, Xq):
    sess = ort.InferenceSession(payload, providers=["CPUExecutionProvider"])
    return sess.run(None, {"features": Xq.astype(np.float32)})


@pytest.mark.parametrize("classes", [0, 2, 3])
def test_forest_onnx_predicts_what_sparkxml_predicts(classes):
    pred, Xf = _forest(classes)
    got = _ort(export_bytes(pred, "onnx"), Xf)
    if classes:
        np.testing.assert_allclose(got[1], pred.predict_values(Xf), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[0], pred.predict(Xf))
    else:
        np.testing.assert_allclose(got[0][:, 0], pred.predict(Xf), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="ForestPredictor exports as 'onnx' only"):
        export_bytes(pred, "lightgbm-text")


@pytest.mark.parametrize("classes,threshold", [(2, 0.0), (2, 0.4), (3, 0.0)])
def test_linear_svc_onnx_predicts_what_sparkxml_predicts(classes, threshold):
    from sparkxml_kernels.linear.predictor import LinearSVCPredictor

    rng = np.random.default_rng(classes)
    k = 1 if classes == 2 else classes
    pred = LinearSVCPredictor(rng.normal(size=(k, 5)), rng.normal(size=k), classes,
                              threshold=threshold)
    Xf = rng.normal(size=(200, 5))
    label, scores = _ort(export_bytes(pred, "onnx"), Xf)
    np.testing.assert_array_equal(label, pred.predict(Xf))
    # binary: scores are rawPrediction [-m, m] shifted by the threshold
    shift = np.array([threshold, -threshold]) if classes == 2 else 0.0
    np.testing.assert_allclose(scores, pred.predict_raw(Xf) + shift, rtol=1e-5, atol=1e-5)


def test_leq_threshold_splits_float64_inputs_as_xgboost():
    """XGBoost sends float32(x) < c left: the converted threshold sends the same float64
    values left, including those that round to c or to the float32 below it."""
    c = np.float32(0.3)
    below = np.nextafter(c, np.float32(-1))
    t = leq_threshold(float(c))
    mid = (float(below) + float(c)) / 2
    xs = np.array([float(below), mid, np.nextafter(mid, -1), np.nextafter(mid, 1), float(c),
                   0.29999, 0.30001])
    np.testing.assert_array_equal(xs <= t, xs.astype(np.float32) < c)


def test_from_xgboost_predicts_what_xgboost_predicts():
    """Models XGBoost trained (float64 inputs, missing values, a categorical feature)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    Xf = rng.normal(size=(N, 3))
    Xf[rng.random(N) < 0.2, 1] = np.nan
    y = Xf[:, 0] + np.nan_to_num(Xf[:, 1]) ** 2
    for obj, yy, extra in (("reg:squarederror", y, {}),
                           ("binary:logistic", (y > 0.5) * 1.0, {}),
                           ("multi:softprob", np.digitize(y, [0, 1]) * 1.0, {"num_class": 3})):
        bst = xgb.train(dict(objective=obj, max_depth=3, eta=0.3, nthread=1, **extra),
                        xgb.DMatrix(Xf, yy), 5)
        pred = from_xgboost_json(bst.save_raw("json"))
        np.testing.assert_allclose(pred.predict_raw(Xf),
                                   bst.predict(xgb.DMatrix(Xf), output_margin=True),
                                   rtol=1e-6, atol=1e-6)
        # and back: the exported model is XGBoost's, to the last float32 bit
        again = xgb.Booster()
        again.load_model(bytearray(export_bytes(pred, "xgboost-json")))
        np.testing.assert_array_equal(again.predict(xgb.DMatrix(Xf), output_margin=True),
                                      bst.predict(xgb.DMatrix(Xf), output_margin=True))
    df = pd.DataFrame({"a": Xf[:, 0], "c": pd.Categorical(rng.integers(0, 40, N))})
    bst = xgb.train(dict(max_depth=3, max_cat_to_onehot=1, nthread=1),
                    xgb.DMatrix(df, y, enable_categorical=True), 4)
    pred = from_xgboost_json(bst.save_raw("json"))
    assert pred.has_categorical
    np.testing.assert_allclose(
        pred.predict(np.column_stack([df.a, df.c.cat.codes.astype(float)])),
        bst.predict(xgb.DMatrix(df, enable_categorical=True)), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="'reg:logistic' has no sparkxml counterpart"):
        from_xgboost_json(json.loads(bytes(xgb.train(
            dict(objective="reg:logistic", max_depth=1), xgb.DMatrix(Xf, (y > 0) * 1.0),
            1).save_raw("json")).decode()))
    with pytest.raises(ValueError, match="not an XGBoost JSON model"):
        from_xgboost_json({"trees": []})


@pytest.mark.parametrize("name", list(CASES))
def test_onnx_float64_input_sums_in_float64(models, name):
    """dtype="float64": the exact thresholds and leaves, summed in float64 by ONNX Runtime;
    only the operators' float32 output rounds (relative 6e-8). Raw float64 probes: values
    between two float32 split the same way as in sparkxml."""
    pred = models[name]
    Xq = _probe(name) + np.random.default_rng(1).normal(scale=1e-9, size=X.shape)
    sess = ort.InferenceSession(export_bytes(pred, "onnx", dtype="float64"),
                                providers=["CPUExecutionProvider"])
    got = sess.run(None, {"features": Xq})
    ours = pred.predict(Xq)
    if name in ("binary", "multiclass"):
        np.testing.assert_allclose(got[1], ours, rtol=2e-7, atol=1e-7)
        np.testing.assert_array_equal(got[0], ours.argmax(axis=1))
    else:
        np.testing.assert_allclose(got[0][:, 0], ours, rtol=2e-7, atol=0)
    with pytest.raises(ValueError, match="dtype must be"):
        export_bytes(pred, "onnx", dtype="float16")
