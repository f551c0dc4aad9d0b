"""Categorical splits of trees and forests: the sorted-prefix scan against an exhaustive
search over category subsets, routing of unseen categories, and determinism of forests."""
import numpy as np
import pytest
from _tree_data import binned, on_ranks
from _tree_data import same_arrays as _same

from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.forest import builder, criteria, forest, histogram
from sparkxml_kernels.forest.predictor import ForestPredictor
from sparkxml_kernels.forest.split_naive import best_category_subset_naive
from sparkxml_kernels.forest.tree import SplitParams, bitset_to_mask


def _data(seed, k, n=400, classes=2, regression=False):
    """Category ids 0..k-1 (every one present) with an effect not monotone in the id, and a
    numeric feature."""
    rng = np.random.default_rng(seed)
    c = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    effect = rng.normal(size=k)
    x = rng.normal(size=n)
    if regression:
        y = np.exp(effect[c] + 0.3 * x + 0.3 * rng.normal(size=n))
    else:
        z = effect[c] + 0.5 * x + rng.normal(size=n)
        y = np.digitize(z, np.quantile(z, np.linspace(0, 1, classes + 1)[1:-1]))
    return np.column_stack([c, x]).astype(np.float64), y.astype(np.float64)


def _grow(X, y, crit, is_cat, w=None, **kw):
    Xb, edges, vals = binned(X)
    c = criteria.criterion_id(crit)
    k = int(y.max()) + 1 if criteria.is_classification(c) else 0
    p = SplitParams(c, n_classes=k, **kw)
    w = np.ones(len(y)) if w is None else w
    return builder.grow_tree(Xb, y.astype(np.int32), y, histogram.ylny(y), w, p,
                             LocalCollective(), vals, edges, 7, is_cat=np.asarray(is_cat))


@pytest.mark.parametrize("crit", ["gini", "entropy", "squared_error", "friedman_mse"])
def test_root_split_is_the_best_of_all_category_subsets(crit):
    """Binary classification and regression: sorting the categories by class 1's fraction or
    the mean target and scanning prefixes finds the best of all 2**(k-1) - 1 subsets
    (Breiman), with row weights."""
    regression = not criteria.is_classification(criteria.criterion_id(crit))
    for seed, k in [(0, 2), (1, 3), (2, 5), (3, 7), (4, 9), (5, 10)]:
        X, y = _data(seed, k, regression=regression)
        w = np.random.default_rng(seed).integers(1, 4, len(y)).astype(np.float64)
        tree = _grow(X[:, :1], y, crit, [1], w, max_depth=1)
        assert tree.node_count == 3 and np.isnan(tree.threshold[0])
        left = bitset_to_mask(tree.categories_left[0], k)
        cats = X[:, 0].astype(np.int64)
        c = criteria.criterion_id(crit)
        best, best_set = best_category_subset_naive(c, cats, y, w, 2)
        go = left[cats]
        ours = criteria.proxy_naive(c, y[go], w[go], y[~go], w[~go], 2)
        assert ours == pytest.approx(best, rel=1e-10, abs=1e-12)
        mine = tuple(np.flatnonzero(left if not left[k - 1] else ~left).tolist())
        assert mine == best_set, (seed, k)


def test_mixed_features_multiclass_and_predictor_routing():
    """A categorical and a numeric feature, three classes: both kinds of split occur; the
    predictor equals its naive twin and puts a NaN, an unseen id and a non-integer where
    missing_go_to_left says."""
    X, y = _data(7, 12, n=600, classes=3)
    tree = _grow(X, y, "gini", [1, 0], max_depth=6)
    inner = tree.children_left >= 0
    cat = inner & (tree.feature == 0)
    assert cat.any() and (inner & (tree.feature == 1)).any()
    assert np.isnan(tree.threshold[cat]).all() and np.isfinite(tree.threshold[inner & ~cat]).all()
    pred = ForestPredictor.from_trees([tree], 2, 3, "gini", n_categories=np.array([12, 0]))
    odd = np.array([[np.nan, 0.1], [12.0, 0.1], [40.0, -1.0], [2.5, 0.3], [-1.0, 0.0]])
    Z = np.vstack([X, odd])
    np.testing.assert_array_equal(pred.predict_values(Z), pred.predict_values_naive(Z))
    # a hand-made stump: categories {1, 3} left, NaN / unseen / non-integer left too
    stump = ForestPredictor(
        [1, -1, -1], [2, -1, -1], [0, -2, -2], [np.nan, -2.0, -2.0], [0.5, 0, 0], [9, 6, 3],
        [9.0, 6.0, 3.0], [[0.5], [1.0], [2.0]], [0, 3], 1, 0, "squared_error",
        missing_go_to_left=[1, 0, 0], categories_left=[[0b1010], [0], [0]],
        n_categories=[5])
    rows = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [np.nan], [5.0], [1.5], [-1.0]])
    np.testing.assert_array_equal(stump.apply(rows)[:, 0], [2, 1, 2, 1, 2, 1, 1, 1, 1])
    np.testing.assert_array_equal(stump.predict_values(rows), stump.predict_values_naive(rows))


def test_training_rows_routed_as_the_grower_split_them():
    """Leaves reached by the predictor hold the rows the grower counted in them."""
    X, y = _data(9, 20, n=800, regression=True)
    tree = _grow(X, y, "squared_error", [1, 0], max_depth=5)
    pred = ForestPredictor.from_trees([tree], 2, 0, "squared_error",
                                      n_categories=np.array([20, 0]))
    leaves = pred.apply(X)[:, 0]
    counts = np.bincount(leaves, minlength=tree.node_count)
    leaf = tree.children_left < 0
    np.testing.assert_array_equal(counts[leaf], tree.n_node_samples[leaf])


def _forest_data():
    X, y = _data(11, 30, n=1500, classes=2)
    Xb, edges, vals = binned(X)
    keys = (np.arange(len(y), dtype=np.int64) * 2654435761) ^ 0x5DEECE66D
    return X, y, Xb, edges, vals, keys


def _grow_forest(data, world=1, small_rows=None, random_splits=False):
    X, y, Xb, edges, vals, keys = data
    p = SplitParams(0, n_classes=2, max_features=1, max_depth=6, random_splits=random_splits)
    args = dict(params=p, n_trees=5, seed=3, bootstrap=True, rate=1.0, vals=vals, edges=edges,
                small_rows=small_rows, is_cat=np.array([1, 0], np.uint8))
    yy = y.astype(np.float64)
    if world == 1:
        return forest.grow_forest(Xb, y.astype(np.int32), yy, yy * 0, np.ones(len(y)), keys,
                                  collective=LocalCollective(), **args)
    order = np.random.default_rng(5).permutation(len(y))

    def run(r, coll):
        idx = np.sort(order[r::world])
        return forest.grow_forest(Xb[idx], y[idx].astype(np.int32), yy[idx], yy[idx] * 0,
                                  np.ones(idx.size), keys[idx], collective=coll, **args)

    return on_ranks(world, run)


def _forest_predictor(ref):
    return ForestPredictor.from_arrays(dict({k: v for k, v in ref.items() if k != "bin"},
                                            n_features=2, n_classes=2, criterion="gini",
                                            n_categories=np.array([30, 0])))


@pytest.mark.parametrize("random_splits", [False, True])
def test_categorical_forest_same_any_spread_and_oob_routes_as_predictor(random_splits):
    data = _forest_data()
    ref, counts = _grow_forest(data, random_splits=random_splits)
    _same(ref, _grow_forest(data, world=2, random_splits=random_splits)[0])
    _same(ref, _grow_forest(data, small_rows=10 ** 9, random_splits=random_splits)[0])
    _same(ref, _grow_forest(data, small_rows=1, random_splits=random_splits)[0])
    X, y, Xb, edges, vals, keys = data
    assert (ref["bin"] == -2).any()
    pred = _forest_predictor(ref)
    np.testing.assert_allclose(pred.predict_values(X[:300]), pred.predict_values_naive(X[:300]),
                               rtol=1e-12)
    packed = forest.unpack_for_routing(forest.pack_for_routing(ref))
    np.testing.assert_array_equal(packed["categories_left"], ref["categories_left"])
    sums, n_oob = forest.oob_sums(Xb, counts, packed, vals.shape[1] - 1)
    exp = np.zeros_like(sums)
    leaves = pred.apply(X)
    for t in range(pred.n_trees):
        oob = counts[t] == 0
        exp[oob] += pred.value[leaves[oob, t]]
    np.testing.assert_allclose(sums, exp, rtol=1e-12)


def test_quantile_leaf_entries_route_categorical_splits_as_the_predictor():
    """The in-bag rows gathered for quantile forests reach the leaves the predictor routes
    them to, through categorical splits too (binned routing by the left sets)."""
    from sparkxml_kernels.forest import quantiles

    data = _forest_data()
    ref, counts = _grow_forest(data)
    X, y, Xb, edges, vals, keys = data
    route = forest.unpack_for_routing(forest.pack_for_routing(ref))
    node, row, cnt = quantiles.leaf_entries(Xb, counts, route, vals.shape[1] - 1)
    for a, b in zip((node, row, cnt),
                    quantiles.leaf_entries_naive(Xb, counts, route, vals.shape[1] - 1)):
        np.testing.assert_array_equal(a, b)
    pred = _forest_predictor(ref)
    tree = np.searchsorted(pred.tree_offsets, node, side="right") - 1
    np.testing.assert_array_equal(pred.apply(X)[row, tree], node)
    assert np.isnan(pred.threshold[pred.feature == 0]).all() and (pred.feature == 0).any()
