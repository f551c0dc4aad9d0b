"""DART (dart.py): test AUC beside XGBoost's dart, the weight bookkeeping against a
recomputation from the draws, exact SHAP, worker-count independence and XGBoost JSON export."""
import json

import numpy as np
import pytest
from _data import data_path
from _gbt_helpers import run_ranks

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.export import export_bytes
from sparkxml_kernels.export.xgboost_json import from_xgboost_json
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.dart import DartParams, draw_drops, normalization
from sparkxml_kernels.gbt.metrics import auc_exact
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def binary():
    """LightGBM's binary example with every feature replaced by its bin under our edges:
    XGBoost's hist then has the same candidate splits as we do (one bin per value), so its
    gbtree model is ours and what differs is DART's draws."""
    def load(name):
        a = np.loadtxt(data_path("lightgbm_binary", name))
        return np.ascontiguousarray(a[:, 1:]), a[:, 0]

    Xtr, ytr = load("binary.train")
    Xte, yte = load("binary.test")
    raw_edges = edges_from_sketch(sketch(Xtr, None, 256), 256)
    Btr, Bte = (bin_data(X, raw_edges).astype(float) for X in (Xtr, Xte))
    edges = edges_from_sketch(sketch(Btr, None, 256), 256)
    return Btr, ytr, Bte, yte, edges, bin_data(Btr, edges)


def _auc_pair(binary, rounds, seeds, **dart):
    """(our test AUCs, XGBoost's) over ``seeds`` seeds; ``dart`` in our param names."""
    Xtr, ytr, Xte, yte, edges, Xb = binary
    ours, xs = [], []
    names = dict(rateDrop="rate_drop", skipDrop="skip_drop", oneDrop="one_drop",
                 normalizeType="normalize_type", sampleType="sample_type")
    dtr, dte = xgb.DMatrix(Xtr, label=ytr), xgb.DMatrix(Xte)
    for s in range(seeds):
        pred, _ = train(Xb, ytr, None, edges, dict(maxIter=rounds, maxDepth=6, stepSize=0.1,
                                                   objective="logistic", seed=s, **dart))
        ours.append(auc_exact(yte, pred.predict_raw(Xte)))
        xp = {names[k]: (int(v) if k == "oneDrop" else v) for k, v in dart.items()
              if k in names}
        bst = xgb.train(dict(xp, booster=dart.get("boosterType", "gbtree"), max_depth=6,
                             eta=0.1, objective="binary:logistic", tree_method="hist",
                             max_bin=256, seed=s, nthread=1), dtr, rounds)
        xs.append(auc_exact(yte, bst.predict(dte, output_margin=True)))
    return np.array(ours), np.array(xs)


DART_CASES = [
    # (normalizeType, sampleType, rateDrop, skipDrop, oneDrop)
    ("tree", "uniform", 0.1, 0.0, False),
    ("forest", "weighted", 0.2, 0.5, True),
]


def test_gbtree_is_xgboost_on_these_bins(binary):
    ours, xs = _auc_pair(binary, 10, 1)
    assert ours[0] == pytest.approx(xs[0], abs=1e-6)


@pytest.mark.parametrize("nt,st,rd,sd,od", DART_CASES)
def test_dart_auc_beside_xgboost(binary, nt, st, rd, sd, od):
    # different generators drop different trees: compare mean test AUCs over 8 seeds
    # (their spread is ~0.003 a seed; 16 seeds x 30 rounds measured differences < 0.002)
    ours, xs = _auc_pair(binary, 20, 8, boosterType="dart", rateDrop=rd, skipDrop=sd,
                         oneDrop=od, normalizeType=nt, sampleType=st)
    assert abs(ours.mean() - xs.mean()) < 0.005, (ours, xs)


def test_all_dropped_equals_xgboost(binary):
    # rateDrop 1: every tree dropped every round, no randomness left: XGBoost's margins
    Xtr, ytr, Xte, _, edges, Xb = binary
    pred, _ = train(Xb, ytr, None, edges, dict(maxIter=4, maxDepth=6, stepSize=0.1,
                                               objective="logistic", boosterType="dart",
                                               rateDrop=1.0))
    bst = xgb.train(dict(booster="dart", rate_drop=1.0, max_depth=6, eta=0.1,
                         objective="binary:logistic", tree_method="hist", max_bin=256,
                         nthread=1, base_score=1 / (1 + np.exp(-pred.base_score[0]))),
                    xgb.DMatrix(Xtr, label=ytr), 4)
    np.testing.assert_allclose(pred.predict_raw(Xte),
                               bst.predict(xgb.DMatrix(Xte), output_margin=True), atol=1e-5)
    w = pred.tree_weights
    assert w.shape == (4,) and (w < 1).all()
    # SHAP stays exact: the contributions sum to the margin
    np.testing.assert_allclose(pred.predict_contributions(Xte[:50]).sum(1),
                               pred.predict_raw(Xte[:50]), atol=1e-9)


def _synthetic(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=n)
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    return X, y, edges, bin_data(X, edges)


@pytest.mark.parametrize("nt,st,rd,sd,od", DART_CASES + [("tree", "weighted", 0.3, 0.2, True)])
def test_weights_match_a_recomputation_from_the_draws(nt, st, rd, sd, od):
    X, y, edges, Xb = _synthetic()
    R, lr, seed = 15, 0.3, 7
    params = dict(maxIter=R, maxDepth=3, stepSize=lr, boosterType="dart", rateDrop=rd,
                  skipDrop=sd, oneDrop=od, normalizeType=nt, sampleType=st, seed=seed)
    Xv, yv = X[:300], y[:300]
    pred, hist = train(Xb, y, None, edges, params, eval_sets=[(Xb[:300], yv, None)])
    dp = DartParams(rd, sd, od, nt, st)
    w = []
    for it in range(R):  # XGBoost's DropTrees + NormalizeTrees, by hand
        drop = draw_drops(dp, w, seed, it)
        k = drop.size
        if k and nt == "tree":
            f, new = k / (k + lr), 1 / (k + lr)
        elif k:
            f = new = 1 / (1 + lr)
        else:
            f, new = 1.0, 1.0
        assert (f, new) == pytest.approx(normalization(dp, k, lr, 1))
        for i in drop:
            w[i] *= f
        w.append(new)
    np.testing.assert_allclose(pred.tree_weights, w, rtol=1e-12)
    # the raw scores kept while training (rescaled dropped trees included) are the model's
    rmse = np.sqrt(np.mean((pred.predict_raw(Xv) - yv) ** 2))
    assert hist["eval"][0][-1] == pytest.approx(rmse, rel=1e-9)


def test_no_drop_is_gbtree():
    X, y, edges, Xb = _synthetic(1)
    base = dict(maxIter=8, maxDepth=3, stepSize=0.3)
    plain, _ = train(Xb, y, None, edges, base)
    for extra in (dict(rateDrop=0.0), dict(rateDrop=0.5, skipDrop=1.0)):
        dart, _ = train(Xb, y, None, edges, dict(base, boosterType="dart", **extra))
        np.testing.assert_array_equal(dart.tree_weights, 1.0)
        np.testing.assert_allclose(dart.predict_raw(X), plain.predict_raw(X), rtol=1e-12)
    with pytest.raises(ValueError, match="rateDrop"):
        train(Xb, y, None, edges, dict(base, boosterType="dart", rateDrop=1.5))
    with pytest.raises(ValueError, match="boosterType"):
        train(Xb, y, None, edges, dict(base, boosterType="gblinear"))


def test_same_model_on_two_workers():
    X, y, edges, Xb = _synthetic(2)
    params = dict(maxIter=10, maxDepth=3, stepSize=0.3, boosterType="dart", rateDrop=0.3,
                  seed=5, subsamplingRate=0.8)
    single, _ = train(Xb, y, None, edges, params)
    parts = [np.arange(0, 1500, 3), np.setdiff1d(np.arange(1500), np.arange(0, 1500, 3))]
    out = run_ranks(2, lambda r, coll: train(Xb[parts[r]], y[parts[r]], None, edges, params,
                                             collective=coll,
                                             row_ids=parts[r].astype(np.int64))[0])
    for model in out:
        np.testing.assert_array_equal(model.feature, single.feature)
        np.testing.assert_allclose(model.tree_weights, single.tree_weights, rtol=1e-12)
        np.testing.assert_allclose(model.predict_raw(X), single.predict_raw(X), rtol=1e-9,
                                   atol=1e-9)


def test_weights_travel_with_the_arrays_and_export():
    X, y, edges, Xb = _synthetic(3)
    yb = (y > np.median(y)).astype(float)
    pred, _ = train(Xb, yb, None, edges, dict(maxIter=12, maxDepth=3, stepSize=0.3,
                                              objective="logistic", boosterType="dart",
                                              rateDrop=0.4, seed=2))
    assert (pred.tree_weights < 1).any()
    back = TreeEnsemblePredictor.from_arrays(pred.to_arrays())
    np.testing.assert_array_equal(back.tree_weights, pred.tree_weights)
    assert back.truncate(5).tree_weights.shape == (5,)
    # XGBoost JSON: its dart booster, unweighted leaves and weight_drop; XGBoost predicts
    doc = json.loads(export_bytes(pred, "xgboost-json"))
    gb = doc["learner"]["gradient_booster"]
    assert gb["name"] == "dart" and len(gb["weight_drop"]) == pred.n_trees
    bst = xgb.Booster(model_file=bytearray(json.dumps(doc).encode()))
    np.testing.assert_allclose(bst.predict(xgb.DMatrix(X), output_margin=True),
                               pred.predict_raw(X), rtol=1e-5, atol=1e-5)
    again = from_xgboost_json(doc)
    np.testing.assert_allclose(again.tree_weights, pred.tree_weights, rtol=1e-6)
    np.testing.assert_allclose(again.predict_raw(X), pred.predict_raw(X), rtol=1e-5,
                               atol=1e-5)
    # LightGBM (whose own DART shrinks the leaves too) and ONNX take the weighted trees
    lgb = pytest.importorskip("lightgbm")
    lg = lgb.Booster(model_str=export_bytes(pred, "lightgbm-text").decode())
    np.testing.assert_array_equal(lg.predict(X, raw_score=True), pred.predict_raw(X))
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(export_bytes(pred, "onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"features": X.astype(np.float32)})[1],
                               pred.predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nt", ["tree", "forest"])
def test_multiclass_all_dropped_equals_xgboost(nt):
    # softmax: lr is the learning rate / classes (XGBoost's NormalizeTrees); rateDrop 1
    # leaves no randomness, and few distinct values give XGBoost our bins
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, k, 2000) * s for k, s in
                         ((12, 1.0), (5, 0.5), (30, 0.1), (7, 3.0))]).astype(float)
    t = np.sin(X[:, 0]) + 0.8 * (X[:, 1] > 1) + X[:, 2] + 0.2 * rng.standard_normal(2000)
    y = np.digitize(t, np.quantile(t, [0.33, 0.66])).astype(float)
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, _ = train(bin_data(X, edges), y, None, edges, dict(
        maxIter=4, maxDepth=3, stepSize=0.3, objective="softmax", numClasses=3,
        boosterType="dart", rateDrop=1.0, normalizeType=nt))
    bm = np.tile(pred.base_score, (len(X), 1))
    bst = xgb.train(dict(booster="dart", rate_drop=1.0, normalize_type=nt, max_depth=3, eta=0.3,
                         objective="multi:softprob", num_class=3, tree_method="hist",
                         nthread=1), xgb.DMatrix(X, label=y, base_margin=bm), 4)
    np.testing.assert_allclose(pred.predict_raw(X), bst.predict(
        xgb.DMatrix(X, base_margin=bm), output_margin=True), atol=1e-5)
    doc = json.loads(bst.save_raw("json"))
    np.testing.assert_allclose(pred.tree_weights,
                               doc["learner"]["gradient_booster"]["weight_drop"], rtol=1e-6)


def test_lambdarank_all_dropped_equals_xgboost_dart():
    """LambdaMART's DART: rateDrop 1 leaves no randomness. XGBoost's dart booster trained on
    our lambdas (as its custom objective: its rank:ndcg's lambdas are computed otherwise) gives
    the same margins: its gradients come from the kept trees' scores, which must tie where the
    exact sums tie (with all trees dropped, every document scores the base again)."""
    from sklearn.datasets import load_svmlight_file

    from sparkxml_kernels.gbt.ranking import make_ranking_loss

    X, y = load_svmlight_file(data_path("lightgbm_rank", "rank.train"), n_features=300)
    sizes = np.loadtxt(data_path("lightgbm_rank", "rank.train.query"), dtype=np.int64)[:40]
    gp = np.concatenate([[0], np.cumsum(sizes)])
    X, y = X[:gp[-1]].toarray(), y[:gp[-1]]
    raw_edges = edges_from_sketch(sketch(X, None, 256), 256)
    B = bin_data(X, raw_edges).astype(float)  # one bin per value: XGBoost's hist candidates
    edges = edges_from_sketch(sketch(B, None, 256), 256)
    pred, _ = train(bin_data(B, edges), y, None, edges,
                    dict(maxIter=5, maxDepth=4, stepSize=0.1, objective="lambdarank",
                         boosterType="dart", rateDrop=1.0), group_ptr=gp)
    loss = make_ranking_loss("lambdarank")

    def lambdas(margin, _):
        g, h = np.empty(y.size), np.empty(y.size)
        loss.gradients(y, margin.astype(np.float64), None, g, h, gp)
        return g, h

    d = xgb.DMatrix(B, label=y)
    d.set_group(sizes)
    bst = xgb.train(dict(booster="dart", rate_drop=1.0, max_depth=4, eta=0.1,
                         tree_method="hist", max_bin=256, nthread=1, base_score=0.0),
                    d, 5, obj=lambdas)
    np.testing.assert_allclose(pred.predict_raw(B), bst.predict(xgb.DMatrix(B),
                                                                output_margin=True), atol=1e-6)
    w = json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["weight_drop"]
    np.testing.assert_allclose(pred.tree_weights, w, rtol=1e-6)
    np.testing.assert_allclose(pred.predict_contributions(B[:50]).sum(1),
                               pred.predict_raw(B[:50]), atol=1e-9)
