"""Per-node features: interaction constraints (every tree path walked), column sampling by
level and by node (grower against its naive twin, two in-process workers against one)."""
import json
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.collective import InProcessGroup
from sparkxml_kernels.gbt import booster
from sparkxml_kernels.gbt.grower import TreeGrower, TreeParams, grow_tree, grow_tree_naive
from sparkxml_kernels.gbt.node_features import allowed_features, check_interaction

SETS = ((0, 1), (2, 3, 4))


def _data(seed=0, n=2000, d=7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    # interactions across the sets (0 x 2, 1 x 3), which an unconstrained tree picks up, and
    # within them (0 x 1, 3 x 4)
    y = Z[:, 0] * Z[:, 2] + np.sin(Z[:, 1] * Z[:, 3]) + Z[:, 0] * Z[:, 1] + Z[:, 3] * Z[:, 4] \
        + 0.5 * Z[:, 5] + 0.1 * rng.standard_normal(n)
    edges = edges_from_sketch(sketch(X, None, 32), 32)
    return X, y, bin_data(X, edges), edges


def _paths(pred):
    """Every root-to-leaf path of every tree, as the list of features split on."""
    out = []
    for t in range(pred.n_trees):
        tr = pred.tree(t)
        stack = [(0, [])]
        while stack:
            node, feats = stack.pop()
            if tr["left"][node] < 0:
                out.append(feats)
            else:
                f = feats + [int(tr["feature"][node])]
                stack += [(tr["left"][node], f), (tr["right"][node], f)]
    return out


def _legal(path, sets):
    """XGBoost's rule, restated on a whole path: a path over two or more distinct features
    lies inside one interaction set."""
    used = set(path)
    return len(used) <= 1 or any(used <= set(s) for s in sets)


def test_interaction_constraints_every_path():
    X, y, binned, edges = _data()
    params = dict(maxIter=8, maxDepth=5, stepSize=0.3, objective="squared_error")
    free, _ = booster.train(binned, y, None, edges, params)
    assert not all(_legal(p, SETS) for p in _paths(free))  # the constraint has work to do
    for policy in ({}, {"growPolicy": "lossguide", "maxLeaves": 12, "maxDepth": 0}):
        pred, _ = booster.train(binned, y, None, edges,
                                dict(params, interactionConstraints=SETS, **policy))
        paths = _paths(pred)
        assert all(_legal(p, SETS) for p in paths)
        mixed = [set(p) for p in paths if len(set(p)) > 1]
        assert any(s <= {0, 1} for s in mixed) and any(s <= {2, 3, 4} for s in mixed)


def test_allowed_features_rule():
    sets = check_interaction([[0, 1], [0, 2], [3]], 5)
    np.testing.assert_array_equal(allowed_features(frozenset(), sets, 5), [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(allowed_features(frozenset({0}), sets, 5), [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(allowed_features(frozenset({0, 1}), sets, 5),
                                  [1, 1, 0, 0, 0])
    # a feature in no set: its subtree splits on it alone
    np.testing.assert_array_equal(allowed_features(frozenset({4}), sets, 5), [0, 0, 0, 0, 1])
    with pytest.raises(ValueError, match="feature id 7"):
        check_interaction([[0, 7]], 5)
    with pytest.raises(ValueError, match="empty"):
        check_interaction([[]], 5)


@pytest.mark.parametrize("params", [
    TreeParams(max_depth=5, colsample_bylevel=0.5),
    TreeParams(max_depth=5, colsample_bynode=0.5,
               interaction=check_interaction(((0, 1), (2, 3, 4, 5)), 7)),
    TreeParams("lossguide", max_depth=0, max_leaves=15, colsample_bylevel=0.7,
               colsample_bynode=0.6),
    TreeParams(max_depth=4, colsample_bynode=0.7, monotone=(1, 0, 0, 0, -1, 0, 0)),
])
def test_sampled_grower_matches_naive(params):
    X, y, binned, edges = _data(1)
    g, h = -(y - y.mean()), np.ones_like(y)
    mask = np.ones(X.shape[1], np.uint8)
    mask[6] = 0
    tree, leaf = grow_tree(binned, g, h, edges, params, feature_mask=mask, sample_key=(3, 0, 0))
    ref, ref_leaf = grow_tree_naive(binned, g, h, edges, params, feature_mask=mask,
                                    sample_key=(3, 0, 0))
    np.testing.assert_array_equal(tree.feature, ref.feature)
    np.testing.assert_array_equal(tree.bin, ref.bin)
    np.testing.assert_array_equal(leaf, ref_leaf)
    np.testing.assert_allclose(tree.value, ref.value, rtol=1e-9, atol=1e-12)
    assert tree.n_nodes > 7 and not (tree.feature == 6).any()
    # another key draws other features, so (here) another tree
    other, _ = grow_tree(binned, g, h, edges, params, feature_mask=mask, sample_key=(4, 0, 0))
    assert not np.array_equal(other.feature, tree.feature)


def test_by_level_shares_a_level_by_node_does_not():
    X, y, binned, edges = _data(2)
    g, h = -(y - y.mean()), np.ones_like(y)
    one = np.ones(X.shape[1], np.uint8)
    by_level, _ = grow_tree(binned, g, h, edges, TreeParams(max_depth=4, colsample_bylevel=0.3),
                            feature_mask=one, sample_key=(0, 1, 0))
    depth = np.zeros(by_level.n_nodes, int)
    for i in range(by_level.n_nodes):
        if by_level.left[i] >= 0:
            depth[by_level.left[i]] = depth[by_level.right[i]] = depth[i] + 1
    inner = by_level.left >= 0
    for lv in range(4):  # int(0.3 * 7) = 2 features a level
        assert len(set(by_level.feature[inner & (depth == lv)])) <= 2
    assert len(set(by_level.feature[inner])) > 2


def test_two_workers_same_sampled_tree():
    X, y, binned, edges = _data(3)
    g, h = -(y - y.mean()), np.ones_like(y)
    n_bins = np.array([len(e) + 1 for e in edges], np.int32)
    params = TreeParams(max_depth=5, colsample_bylevel=0.8, colsample_bynode=0.5,
                        interaction=check_interaction(SETS, 7))
    mask = np.ones(X.shape[1], np.uint8)
    single, _ = TreeGrower(binned, n_bins, edges, params).grow(g, h, None, mask, (9, 2, 0))
    group = InProcessGroup(2, timeout=120)
    parts = [np.arange(0, len(g), 2), np.arange(1, len(g), 2)]
    out, errors = [None, None], []

    def work(rank):
        try:
            r = parts[rank]
            out[rank] = TreeGrower(binned[r], n_bins, edges, params,
                                   group.collective(rank)).grow(g[r], h[r], None, mask,
                                                                (9, 2, 0))
        except Exception as e:  # pragma: no cover - surfaced below
            errors.append(e)
            group.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for tree, _ in out:
        np.testing.assert_array_equal(tree.feature, single.feature)
        np.testing.assert_array_equal(tree.bin, single.bin)


def test_booster_params_checked():
    X, y, binned, edges = _data()
    with pytest.raises(ValueError, match="colsampleByNode must be in"):
        booster.train(binned, y, None, edges, {"maxIter": 1, "colsampleByNode": 0.0})
    with pytest.raises(ValueError, match="feature id 9"):
        booster.train(binned, y, None, edges, {"maxIter": 1, "interactionConstraints": [[9]]})


def test_interaction_constraints_match_xgboost():
    """Exact bins (few distinct values): with the same interaction constraints the first
    tree is XGBoost hist's node for node, and a few rounds predict the same."""
    xgb = pytest.importorskip("xgboost")
    from test_gbt_xgboost import _data as exact_data
    from test_gbt_xgboost import _walk

    X, y = exact_data(0)
    sets = [[0, 2], [1, 3, 4]]
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    pred, _ = booster.train(bin_data(X, edges), y, None, edges,
                            dict(maxIter=3, maxDepth=4, stepSize=0.3,
                                 interactionConstraints=sets))
    bst = xgb.train(dict(tree_method="hist", max_depth=4, eta=0.3, max_bin=256, nthread=1,
                         base_score=float(pred.base_score[0]),
                         interaction_constraints=str(sets)),
                    xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=3)
    X_vals = [np.unique(X[:, f][~np.isnan(X[:, f])]) for f in range(X.shape[1])]
    leaves = []
    _walk(json.loads(bst.get_dump(dump_format="json")[0]), SimpleNamespace(**pred.tree(0)),
          0, X_vals, leaves)
    assert len(leaves) > 8
    np.testing.assert_allclose(pred.predict_raw(X), bst.predict(xgb.DMatrix(X),
                                                                output_margin=True),
                               rtol=1e-4, atol=1e-4)


def test_interaction_constraints_auc_beside_xgboost(data_path):
    """lightgbm_binary: test AUC with the same constraints as XGBoost's, within 0.01."""
    xgb = pytest.importorskip("xgboost")
    from sklearn.metrics import roc_auc_score

    tr = np.loadtxt(data_path("lightgbm_binary", "binary.train"))
    te = np.loadtxt(data_path("lightgbm_binary", "binary.test"))
    sets = [list(range(0, 10)), list(range(10, 21)), list(range(21, 28))]
    edges = edges_from_sketch(sketch(tr[:, 1:], None, 64), 64)
    params = dict(maxIter=30, maxDepth=5, stepSize=0.2, objective="logistic",
                  interactionConstraints=sets)
    pred, _ = booster.train(bin_data(tr[:, 1:], edges), tr[:, 0], None, edges, params)
    ours = roc_auc_score(te[:, 0], pred.predict_raw(te[:, 1:]))
    bst = xgb.train(dict(tree_method="hist", max_depth=5, eta=0.2, max_bin=64, nthread=1,
                         objective="binary:logistic", interaction_constraints=str(sets)),
                    xgb.DMatrix(tr[:, 1:], label=tr[:, 0]), num_boost_round=30)
    theirs = roc_auc_score(te[:, 0], bst.predict(xgb.DMatrix(te[:, 1:])))
    assert abs(ours - theirs) < 0.01, (ours, theirs)
    assert all(_legal(p, sets) for p in _paths(pred))
