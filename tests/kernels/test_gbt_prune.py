"""minSplitLoss as XGBoost's grow-then-prune, and the prune updater on an existing model:
node for node against XGBoost's ``exact`` (colmaker + prune) and its ``prune`` updater."""
import json
import warnings

import numpy as np
import pytest
from _gbt_helpers import few_values as _data

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.prune import prune_plan, prune_predictor

xgb = pytest.importorskip("xgboost")


def _walk(xn, tree, i, out):
    """Compare XGBoost's JSON node with node i of ``tree`` (dict of node arrays)."""
    if "leaf" in xn:
        assert tree["left"][i] == -1, f"node {i}: XGBoost has a leaf, we split"
        out.append((xn["leaf"], tree["value"][i]))
        return
    assert tree["left"][i] >= 0, f"node {i}: XGBoost splits, we have a leaf"
    assert tree["feature"][i] == int(xn["split"][1:]), f"node {i}: feature"
    out.append((xn["gain"], tree["gain"][i]))  # stored gains: the unreduced loss change
    kids = {c["nodeid"]: c for c in xn["children"]}
    _walk(kids[xn["yes"]], tree, tree["left"][i], out)
    _walk(kids[xn["no"]], tree, tree["right"][i], out)


def _same_trees(bst, pred, n_trees):
    for t in range(n_trees):
        out = []
        _walk(json.loads(bst.get_dump(dump_format="json", with_stats=True)[t]), pred.tree(t),
              0, out)
        xv, ov = np.array(out).T
        np.testing.assert_allclose(ov, xv, rtol=1e-5, atol=1e-5)  # XGBoost stores float32


def _fit(X, y, **kw):
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    assert all(len(e) < 40 for e in edges)  # exact bins
    return train(bin_data(X, edges), y, None, edges, dict(kw))[0]


@pytest.mark.parametrize("seed,gamma", [(0, 5.0), (1, 50.0), (2, 200.0)])
def test_first_tree_with_gamma_matches_xgboost_exact(seed, gamma):
    X, y = _data(seed)
    pred = _fit(X, y, maxIter=1, maxDepth=4, stepSize=0.3, minSplitLoss=gamma)
    bst = xgb.train(dict(tree_method="exact", max_depth=4, eta=0.3, gamma=gamma, nthread=1,
                         base_score=float(pred.base_score[0])), xgb.DMatrix(X, label=y), 1)
    _same_trees(bst, pred, 1)
    unpruned = _fit(X, y, maxIter=1, maxDepth=4, stepSize=0.3)
    assert pred.left.size < unpruned.left.size  # gamma removed something


def test_weak_split_with_strong_child_is_kept():
    # XOR: the root split alone gains little, its children's splits gain a lot
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (4000, 3)).astype(float)
    y = np.where(X[:, 0] == X[:, 1], 1.0, -1.0) + 0.05 * X[:, 0] + 0.1 * rng.standard_normal(4000)
    pred = _fit(X, y, maxIter=1, maxDepth=2, stepSize=1.0, minSplitLoss=50.0)
    t = pred.tree(0)
    assert t["left"][0] >= 0 and t["gain"][0] < 50.0  # the weak root split stays
    assert (t["left"] >= 0).sum() == 3
    bst = xgb.train(dict(tree_method="exact", max_depth=2, eta=1.0, gamma=50.0, nthread=1,
                         base_score=float(pred.base_score[0])), xgb.DMatrix(X, label=y), 1)
    _same_trees(bst, pred, 1)


def _prune_naive(left, right, gain, gamma, max_depth):
    """XGBoost's DoPrune order: every leaf in id order tries its parent, then upwards."""
    left, right = list(left), list(right)
    parent = {c: p for p in range(len(left)) if left[p] >= 0 for c in (left[p], right[p])}
    depth = {0: 0}
    for p in range(len(left)):
        if left[p] >= 0:
            depth[left[p]] = depth[right[p]] = depth[p] + 1
    gone = set()
    for nid in range(len(left)):
        if left[nid] >= 0 or nid in gone:
            continue
        node, d = nid, depth[nid]
        while node in parent:
            p = parent[node]
            if left[left[p]] < 0 and left[right[p]] < 0 and (
                    gain[p] < gamma or (max_depth > 0 and d > max_depth)):
                gone.update((left[p], right[p]))
                left[p] = right[p] = -1
                node, d = p, d - 1
            else:
                break
    return np.array([i not in gone for i in range(len(left))]), np.array(left) < 0


@pytest.mark.parametrize("seed", range(4))
def test_prune_plan_matches_naive(seed):
    rng = np.random.default_rng(seed)
    X, y = _data(seed, 1500)
    pred = _fit(X, y, maxIter=1, maxDepth=6, stepSize=0.3)
    t = pred.tree(0)
    for gamma, depth in ((float(np.median(t["gain"][t["left"] >= 0])), 0),
                         (float(rng.uniform(0, 100)), 3), (0.0, 2)):
        keep, leafed, owner = prune_plan(t["left"], t["right"], t["gain"], gamma, depth)
        keep_n, leaf_n = _prune_naive(t["left"], t["right"], t["gain"], gamma, depth)
        np.testing.assert_array_equal(keep, keep_n)
        np.testing.assert_array_equal(leafed, keep & leaf_n & (t["left"] >= 0))
        assert (owner[keep] == np.arange(keep.sum())).all()


@pytest.mark.parametrize("gamma", [5.0, 200.0])
def test_prune_updater_matches_xgboost(gamma):
    X, y = _data(0)
    pred = _fit(X, y, maxIter=3, maxDepth=4, stepSize=0.3)
    base = float(pred.base_score[0])
    common = dict(max_depth=4, eta=0.3, base_score=base, nthread=1)
    dm = xgb.DMatrix(X, label=y)
    bst = xgb.train(dict(common, tree_method="hist"), dm, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # XGBoost warns that `updater` overrides tree_method
        pruned = xgb.train(dict(common, process_type="update", updater="prune", gamma=gamma),
                           dm, 3, xgb_model=bst)
    ours, removed = prune_predictor(pred, gamma)
    assert removed > 0
    _same_trees(pruned, ours, 3)
    np.testing.assert_allclose(ours.predict_raw(X), pruned.predict(dm, output_margin=True),
                               rtol=1e-4, atol=1e-4)
    # pruning at gamma 0 changes nothing
    same, removed = prune_predictor(pred, 0.0)
    assert removed == 0
    np.testing.assert_array_equal(same.left, pred.left)
