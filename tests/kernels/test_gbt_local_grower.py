"""The compiled loop of a worker alone (gbt/local_grower.py) against the grower's
round-by-round growth, its naive twin: the same trees bit for bit, and the same leaf of every
row, depth-wise and loss-guided."""
import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.collective import InProcessGroup
from sparkxml_kernels.gbt import booster, local_grower
from sparkxml_kernels.gbt.binned import bin_matrix
from sparkxml_kernels.gbt.categorical import CatParams
from sparkxml_kernels.gbt.grower import TreeGrower, TreeParams
from sparkxml_kernels.gbt.splitting import SplitParams

TREE_FIELDS = ("feature", "bin", "threshold", "default_left", "left", "right", "value",
               "gain", "cover", "is_cat", "cat_sets")


def _data(seed=0, n=4000, wide=False):
    """Numerical columns with NaN, a few-level and a many-level categorical column (a
    5,000-level one with ``wide``: uint16 bins)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    X[rng.random((n, 6)) < 0.1 * (np.arange(6) % 2)] = np.nan
    levels = 5000 if wide else 40
    X[:, 4] = rng.integers(0, 3, n)
    X[:, 5] = np.minimum(rng.zipf(1.3, n) - 1, levels - 1)
    eff = rng.standard_normal(levels)
    y = np.sin(2 * np.nan_to_num(X[:, 0])) + (X[:, 4] == 2) + eff[X[:, 5].astype(int)] \
        + 0.3 * rng.standard_normal(n)
    max_bins = 5001 if wide else 64
    edges = edges_from_sketch(sketch(X, None, min(max_bins, 256),
                                     4 * max_bins if wide else None), max_bins, wide=wide)
    cats = [None] * 6
    for f in (4, 5):
        cats[f] = np.unique(X[:, f])
        edges[f] = (cats[f][:-1] + cats[f][1:]) / 2
    return X, y, edges, cats


def _same_tree(a, b):
    for name in TREE_FIELDS:
        x, z = getattr(a, name), getattr(b, name)
        if x is None or z is None:
            assert x is None and z is None, name
        else:
            np.testing.assert_array_equal(x, z, err_msg=name)


def _grow_both(binned, edges, params, g, h, rows=None, mask=None):
    n_bins = np.array([len(e) + 1 for e in edges], np.int32)
    fast = TreeGrower(binned, n_bins, edges, params)
    slow = TreeGrower(binned, n_bins, edges, params, compiled=False)
    a = fast.grow(g, h, rows, mask)
    b = slow.grow(g, h, rows, mask)
    assert "compiled" in fast._bufs and "compiled" not in slow._bufs  # each path ran
    return a, b


@pytest.mark.parametrize("params", [
    TreeParams("depthwise", max_depth=6),
    TreeParams("depthwise", max_depth=3, learning_rate=0.3,
               split=SplitParams(min_child_weight=30.0, reg_alpha=0.5, min_split_loss=1.0)),
    TreeParams("depthwise", max_depth=0),
    TreeParams("depthwise", max_depth=5, categorical=(4, 5),
               cat=CatParams(max_cat_to_onehot=4, cat_smooth=10.0, cat_l2=10.0)),
    TreeParams("lossguide", max_depth=0, max_leaves=31),
    TreeParams("lossguide", max_depth=3, max_leaves=31, learning_rate=0.3),
    TreeParams("lossguide", max_depth=0, max_leaves=2),
    TreeParams("lossguide", max_depth=0, max_leaves=64,
               split=SplitParams(min_child_weight=30.0, reg_alpha=0.5, min_split_loss=1.0)),
    TreeParams("lossguide", max_depth=0, max_leaves=31, categorical=(4, 5),
               cat=CatParams(max_cat_to_onehot=4, cat_smooth=10.0, cat_l2=10.0)),
    TreeParams("lossguide", max_depth=5, max_leaves=20, categorical=(5,),
               cat=CatParams(max_cat_to_onehot=64)),
])
@pytest.mark.parametrize("wide", [False, True])
def test_compiled_loop_grows_the_rounds_trees(params, wide):
    X, y, edges, cats = _data(wide=wide)
    binned = bin_matrix(X, edges, cats if params.categorical else None)
    assert binned.dtype == (np.uint16 if wide else np.uint8)
    rng = np.random.default_rng(1)
    g = -(y - y.mean())
    h = rng.uniform(0.2, 1.5, y.size)
    rows = np.sort(rng.choice(y.size, 3000, replace=False)).astype(np.int32)
    mask = np.ones(6, np.uint8)
    mask[2] = 0
    for r, m in ((None, None), (rows, mask)):
        (a, leaf_a), (b, leaf_b) = _grow_both(binned, edges, params, g, h, r, m)
        _same_tree(a, b)
        np.testing.assert_array_equal(leaf_a, leaf_b)
        assert a.n_leaves <= (params.max_leaves or 2 ** params.max_depth)


def test_a_root_that_cannot_split():
    X, y, edges, _ = _data()
    binned = bin_data(X[:, :4], edges[:4])
    g, h = -(y - y.mean()), np.full(y.size, 1e-4)  # H < 2 min_child_weight
    (a, _), (b, _) = _grow_both(binned, edges[:4], TreeParams("lossguide", max_leaves=8), g, h)
    _same_tree(a, b)
    assert a.n_nodes == 1


@pytest.mark.parametrize("extra", [
    {},
    {"growPolicy": "depthwise", "maxDepth": 6},
    {"growPolicy": "depthwise", "maxDepth": 4, "categoricalFeatures": [4, 5]},
    {"categoricalFeatures": [4, 5], "maxCatToOnehot": 4, "catSmooth": 10.0, "catL2": 10.0},
    {"subsamplingRate": 0.7, "colsampleByTree": 0.8, "seed": 3},
])
def test_boosted_models_equal(extra):
    X, y, edges, cats = _data(seed=4, n=3000)
    yb = (y > np.median(y)).astype(float)
    binned = bin_matrix(X, edges, cats if "categoricalFeatures" in extra else None)
    params = dict(dict(maxIter=15, stepSize=0.2, growPolicy="lossguide", maxLeaves=15,
                       maxDepth=0, objective="logistic"), **extra)
    fast, _ = booster.train(binned, yb, None, edges, params, categories=cats)
    original = TreeGrower.__init__.__defaults__
    TreeGrower.__init__.__defaults__ = original[:-1] + (False,)  # every grower round by round
    try:
        slow, _ = booster.train(binned, yb, None, edges, params, categories=cats)
    finally:
        TreeGrower.__init__.__defaults__ = original
    assert fast.tree_offsets.size == slow.tree_offsets.size == 16
    for name in ("feature", "threshold", "default_left", "left", "right", "value", "gain",
                 "cover", "tree_offsets", "cat_ptr", "cat_words"):
        x, z = getattr(fast, name), getattr(slow, name)
        assert (x is None) == (z is None), name
        if x is not None:
            np.testing.assert_array_equal(x, z, err_msg=name)
    np.testing.assert_array_equal(fast.predict_raw(X), slow.predict_raw(X))


def test_who_takes_the_compiled_loop():
    X, y, edges, _ = _data()
    binned = bin_data(X[:, :4], edges[:4])
    n_bins = np.array([len(e) + 1 for e in edges[:4]], np.int32)

    def takes(params, **kw):
        return local_grower.eligible(TreeGrower(binned, n_bins, edges[:4], params, **kw),
                                     None)

    assert takes(TreeParams("lossguide", max_leaves=31))
    assert takes(TreeParams("depthwise", max_depth=6))
    assert not takes(TreeParams("lossguide", max_leaves=0))      # no leaf bound
    assert not takes(TreeParams("depthwise", max_depth=17))      # too many nodes
    assert not takes(TreeParams("lossguide", max_leaves=31), n_threads=2)
    assert not takes(TreeParams("lossguide", max_leaves=31, monotone=(1, 0, 0, 0)))
    assert not takes(TreeParams("lossguide", max_leaves=31), compiled=False)
    assert not takes(TreeParams("lossguide", max_leaves=31),
                     collective=InProcessGroup(1).collective(0))
    assert not takes(TreeParams("lossguide", max_leaves=2 ** 20))  # the pool's bound
