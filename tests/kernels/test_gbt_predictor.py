"""Predictor: compiled traversal against the naive twin, CSR input, model arrays, loading."""
import numpy as np
import pytest

from sparkxml_kernels import load_model
from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.predictor import ARRAY_KEYS, TreeEnsemblePredictor
from sparkxml_kernels.persist import ModelFormatError, metadata_json, save_directory


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    n, d = 1500, 8
    X = np.round(rng.standard_normal((n, d)), 1)
    X[rng.random((n, d)) < 0.3] = 0.0
    X[rng.random((n, d)) < 0.05] = np.nan
    y = rng.integers(0, 3, n).astype(float)
    y[np.nan_to_num(X[:, 0]) > 0.5] = 2
    e = edges_from_sketch(sketch(X, None, 32), 32)
    pred, _ = train(bin_data(X, e), y, None, e, dict(objective="softmax", numClasses=3,
                                                     maxIter=8, maxDepth=4, stepSize=0.3))
    return pred, X, y, e


def _csr(X):
    mask = X != 0.0  # NaN != 0 -> kept as explicit missing
    indptr = np.concatenate([[0], np.cumsum(mask.sum(1))])
    return indptr, np.nonzero(mask)[1], X[mask], X.shape[1]


def test_predict_raw_matches_naive_and_binned_route(model):
    pred, X, y, e = model
    raw = pred.predict_raw(X)
    assert raw.shape == (len(X), 3) and pred.n_trees == 24
    np.testing.assert_allclose(raw, pred.predict_raw_naive(X), rtol=1e-12, atol=1e-12)
    # raw thresholds route exactly like the bins seen in training
    from sparkxml_kernels.gbt.partition import _route_binned
    Xb = bin_data(X, e)
    total = np.tile(pred.base_score, (len(X), 1))
    for t in range(pred.n_trees):
        a, b = pred.tree_offsets[t], pred.tree_offsets[t + 1]
        bins = np.array([np.searchsorted(e[f], thr, side="left") if f >= 0 else -1
                         for f, thr in zip(pred.feature[a:b], pred.threshold[a:b])], np.int32)
        out = np.empty(len(X), np.int32)
        _route_binned(Xb, np.arange(len(X), dtype=np.int32), pred.feature[a:b], bins,
                      pred.default_left[a:b], pred.left[a:b], pred.right[a:b], out)
        total[:, pred.tree_outputs[t]] += pred.value[a:b][out]
    np.testing.assert_allclose(raw, total, rtol=1e-12, atol=1e-12)
    proba = pred.predict(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert (proba.argmax(1) == y).mean() > 0.5


def test_csr_input_equals_dense(model):
    pred, X, _, _ = model
    np.testing.assert_allclose(pred.predict_raw(_csr(X)), pred.predict_raw(X), rtol=0, atol=0)
    sp = pytest.importorskip("scipy.sparse")
    Xs = sp.csr_matrix(np.nan_to_num(X, nan=0.0))
    np.testing.assert_allclose(pred.predict_raw(Xs), pred.predict_raw(np.nan_to_num(X, nan=0.0)))


def test_arrays_roundtrip_and_directory_loading(model, tmp_path):
    pred, X, _, _ = model
    arrays = pred.to_arrays()
    assert set(arrays) == set(ARRAY_KEYS) | {"missing"}  # + "feature_names" when known
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
    assert arrays["objective"].shape == () and str(arrays["objective"]) == "softmax"
    again = TreeEnsemblePredictor.from_arrays(arrays)
    np.testing.assert_array_equal(again.predict_raw(X), pred.predict_raw(X))
    # models saved before "missing" / "feature_names" existed load as before
    older = TreeEnsemblePredictor.from_arrays({k: v for k, v in arrays.items()
                                               if k in ARRAY_KEYS})
    assert np.isnan(older.missing) and older.feature_names is None
    path = str(tmp_path / "m")
    save_directory(path, metadata_json("sparkxml.GBTClassificationModel", "uid1", {}, {},
                                       "gbt"), arrays, overwrite=False)
    loaded = load_model(path)
    assert isinstance(loaded.predictor, TreeEnsemblePredictor) and loaded.is_classifier
    np.testing.assert_array_equal(loaded.predict_proba(X), pred.predict(X))
    bad = dict(arrays, left=arrays["left"][::-1].copy())
    save_directory(path, metadata_json("x", "u", {}, {}, "gbt"), bad, overwrite=True)
    with pytest.raises(ModelFormatError):
        load_model(path)


def test_feature_importances_and_truncate(model):
    pred, X, _, _ = model
    gain = pred.feature_importances("gain")
    split = pred.feature_importances("split", normalize=False)
    assert gain.shape == (X.shape[1],) and gain.sum() == pytest.approx(1.0)
    assert gain.argmax() == 0
    assert split.sum() == (pred.left >= 0).sum()
    short = pred.truncate(3)
    assert short.n_trees == 9
    cover = pred.feature_importances("cover", normalize=False)
    assert cover.sum() == pytest.approx(pred.cover[pred.left >= 0].sum())
    with pytest.raises(ValueError):
        pred.feature_importances("weight")
    with pytest.raises(ValueError):
        pred.predict_raw(X[:, :3])


def test_missing_goes_default_and_inf_threshold():
    # a single stump: feature 0, x <= 1.0 left (value -1), else +1; NaN right
    p = TreeEnsemblePredictor(feature=[0, -1, -1], threshold=[1.0, np.nan, np.nan],
                              default_left=[0, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                              value=[0, -1.0, 1.0], gain=[1, 0, 0], cover=[2, 1, 1],
                              tree_offsets=[0, 3], n_outputs=1, base_score=[0.5],
                              objective="squared_error", n_features=1)
    np.testing.assert_allclose(p.predict_raw(np.array([[1.0], [1.5], [np.nan], [-np.inf]])),
                               [-0.5, 1.5, 1.5, -0.5])
    p.threshold[0] = np.inf  # present vs missing
    np.testing.assert_allclose(p.predict_raw(np.array([[1e300], [np.nan]])), [-0.5, 1.5])


def test_leaves_trees_and_dumps(model):
    import json

    from sparkxml_kernels.gbt.dump import dump_json, dump_text

    pred, X, _, _ = model
    leaves = pred.predict_leaf(X)
    assert leaves.shape == (len(X), pred.n_trees)
    # each tree's output: the value of the reached leaf; summed they are the raw scores
    per_tree = pred.tree_values(X)
    raw = np.tile(pred.base_score, (len(X), 1))
    for t in range(pred.n_trees):
        tr = pred.tree(t)
        assert (tr["left"][leaves[:, t]] == -1).all()
        np.testing.assert_array_equal(per_tree[:, t], tr["value"][leaves[:, t]])
        raw[:, tr["output"]] += per_tree[:, t]
    np.testing.assert_allclose(raw, pred.predict_raw(X), rtol=1e-12, atol=1e-12)
    # MLlib leaf numbering: leaves left to right
    ords = pred.leaf_ordinals()
    tr = pred.tree(0)
    inorder = []

    def walk(node):
        if tr["left"][node] < 0:
            inorder.append(node)
        else:
            walk(tr["left"][node])
            walk(tr["right"][node])

    walk(0)
    np.testing.assert_array_equal(ords[:tr["left"].size][inorder], np.arange(len(inorder)))
    assert tr["depth"][0] == 0 and tr["depth"].max() <= 4
    # the JSON dump holds the whole model: predicting from it gives the same raw scores
    doc = json.loads(dump_json(pred.with_options(feature_names=[f"c{i}" for i in range(8)])))
    assert doc["feature_names"][3] == "c3" and len(doc["trees"]) == pred.n_trees

    def score(node, x):
        while "leaf" not in node:
            v = x[node["feature"]]
            thr = np.inf if node["threshold"] == "inf" else node["threshold"]
            nxt = node["missing"] if np.isnan(v) else (node["yes"] if v <= thr else node["no"])
            node = next(c for c in node["children"] if c["nodeid"] == nxt)
        return node["leaf"]

    from_json = np.tile(doc["base_score"], (20, 1))
    for t in doc["trees"]:
        for i in range(20):
            from_json[i, t["output"]] += score(t["root"], X[i])
    np.testing.assert_allclose(from_json, pred.predict_raw(X[:20]), rtol=1e-12, atol=1e-12)
    text = dump_text(pred, feature_names=[f"c{i}" for i in range(8)])
    assert text.count("Tree ") == pred.n_trees and "(class 2, weight 1.0)" in text
    assert text.count("Predict: ") == (pred.left < 0).sum()
    assert "If (feature 0 (c0) <= " in text
