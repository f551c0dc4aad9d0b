"""objective="map" (XGBoost's rank:map): the kernel against its naive twin (which recomputes
AP for every swap), a finite-difference sanity check of the sign, and a model beside
XGBoost's rank:map on the LightGBM rank sample (binary labels rel >= 2)."""
import numpy as np
import pytest

from sparkxml_kernels.gbt.loss import make_loss
from sparkxml_kernels.gbt.ranking import configure_objective, make_ranking_loss


def _queries(seed, n_q=25):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n_q)
    gp = np.concatenate([[0], np.cumsum(sizes)])
    n = gp[-1]
    y = (rng.random(n) < 0.3).astype(float)
    y[gp[3]:gp[4]] = 0.0  # a query without relevant documents
    raw = np.round(rng.normal(size=n), 1)  # ties
    raw[gp[5]:gp[6]] = 0.25  # a query whose scores all tie
    return y, raw, gp


@pytest.mark.parametrize("trunc,sigma,norm", [(30, 1.0, True), (5, 1.0, True),
                                              (100, 2.0, False)])
def test_map_kernel_matches_naive(trunc, sigma, norm):
    y, raw, gp = _queries(trunc)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    loss = make_ranking_loss("map", trunc, None, sigma, norm)
    g, h = np.empty(y.size), np.empty(y.size)
    gn, hn = np.empty(y.size), np.empty(y.size)
    loss.gradients(y, raw, w, g, h, gp)
    loss.gradients_naive(y, raw, w, gn, hn, gp)
    np.testing.assert_allclose(g, gn, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(h, hn, rtol=1e-10, atol=1e-14)
    assert (h >= 0).all() and np.abs(g).sum() > 0
    assert (g[gp[3]:gp[4]] == 0).all()
    # relevant documents are pushed up, irrelevant ones down
    assert (g[y == 1] <= 0).all() and (g[y == 0] >= 0).all()


def test_map_needs_binary_labels_and_registers():
    with pytest.raises(ValueError, match="binary relevance labels"):
        make_ranking_loss("map").gradients(np.array([0.0, 2.0]), np.zeros(2), None,
                                           np.empty(2), np.empty(2), np.array([0, 2]))
    with pytest.raises(ValueError, match="labelGain does not apply"):
        make_ranking_loss("map", label_gain=[0.0, 1.0])
    name = configure_objective("map", truncation=12)
    assert name == "map[truncation=12]" and make_loss(name).name == "map"
    assert make_loss("map").truncation == 30


def test_map_beside_xgboost_rank_map(data_path):
    """Same trees, rounds, pairs (truncation 32), bins: test MAP and NDCG close to XGBoost's."""
    xgb = pytest.importorskip("xgboost")
    from sklearn.datasets import load_svmlight_file

    from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
    from sparkxml_kernels.gbt import booster
    from sparkxml_kernels.gbt.ranking import ndcg_per_query
    from sparkxml_kernels.metrics import per_query

    def load(name):
        X, y = load_svmlight_file(data_path("lightgbm_rank", f"rank.{name}"), n_features=300)
        q = np.loadtxt(data_path("lightgbm_rank", f"rank.{name}.query"), dtype=np.int64)
        return X.toarray(), (y >= 2).astype(float), np.concatenate([[0], np.cumsum(q)])

    Xtr, ytr, gtr = load("train")
    Xte, yte, gte = load("test")
    edges = edges_from_sketch(sketch(Xtr, None, 64), 64)
    name = configure_objective("map", truncation=32)
    pred, _ = booster.train(bin_data(Xtr, edges), ytr, None, edges,
                            dict(maxIter=30, maxDepth=4, stepSize=0.1, objective=name),
                            group_ptr=gtr)
    d = xgb.DMatrix(Xtr, label=ytr)
    d.set_group(np.diff(gtr))
    bst = xgb.train(dict(objective="rank:map", tree_method="hist", max_depth=4, eta=0.1,
                         max_bin=64, nthread=1, lambdarank_num_pair_per_sample=32,
                         lambdarank_pair_method="topk"), d, 30)
    qid = np.repeat(np.arange(gte.size - 1), np.diff(gte))
    scores = {"ours": pred.predict_raw(Xte), "xgboost": bst.predict(xgb.DMatrix(Xte))}
    res = {k: (per_query("mapAtK", s, yte, qid, 10).mean(),
               ndcg_per_query(yte, s, gte, 10).mean()) for k, s in scores.items()}
    assert abs(res["ours"][0] - res["xgboost"][0]) < 0.02, res
    assert abs(res["ours"][1] - res["xgboost"][1]) < 0.02, res
