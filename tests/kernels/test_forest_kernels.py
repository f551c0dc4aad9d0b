"""Tree/forest kernels against their naive twins; forest determinism and OOB."""

import numpy as np
import pytest
from _tree_data import forest_grown as _forest
from _tree_data import pen_small_data
from _tree_data import same_arrays as _same

from sparkxml_kernels import binning
from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.forest import criteria, forest, histogram
from sparkxml_kernels.forest.predictor import ForestPredictor
from sparkxml_kernels.forest.split_naive import best_split_naive
from sparkxml_kernels.forest.splitter import (
    compact_rows,
    draw_subset,
    node_state,
    scan_feature,
)
from sparkxml_kernels.forest.tree import SplitParams, TreeArrays


# ------------------------------------------------------------------ criteria and scan
@pytest.mark.parametrize("crit", ["gini", "entropy", "squared_error", "poisson",
                                  "absolute_error"])
def test_impurity_matches_naive(crit):
    rng = np.random.default_rng(0)
    c = criteria.criterion_id(crit)
    y = rng.integers(0, 4, 50).astype(float)
    w = rng.integers(1, 4, 50).astype(float)
    st = histogram.row_stats(c, 4, y.astype(np.int64), y, histogram.ylny(y), w).sum(axis=0)
    yv = np.arange(4.0)  # absolute_error's label values: class k is the target k
    got = criteria.impurity(c, st, criteria.node_weight(c, st), yv)
    assert got == pytest.approx(criteria.impurity_naive(c, y, w, 4), rel=1e-12, abs=1e-14)


def _y_with_median_ties(rng, n):
    # integer targets and weights: the cumulative weight often lands on exactly half
    return rng.integers(-5, 6, n).astype(float) * 2.5, rng.integers(1, 4, n).astype(float)


def test_median_abs_error_matches_naive_on_every_prefix():
    rng = np.random.default_rng(4)
    for trial in range(30):
        y, w = _y_with_median_ties(rng, int(rng.integers(1, 40)))
        if trial % 3 == 0:
            w[:] = 1.0  # unit weights: even counts take the midpoint of the two middle ones
        yv = np.unique(y)
        st = np.zeros(yv.size + 1)
        for i in range(y.size):  # every prefix, as a split scan adds rows
            st[0] += 1
            st[1 + np.searchsorted(yv, y[i])] += w[i]
            med, ae = criteria.median_abs_error(st, w[:i + 1].sum(), yv)
            ref = criteria.median_naive(y[:i + 1], w[:i + 1])
            assert med == ref
            assert ae == (w[:i + 1] * np.abs(y[:i + 1] - ref)).sum()


def test_median_abs_error_matches_sklearn_precompute():
    _criterion = pytest.importorskip("sklearn.tree._criterion")
    if not hasattr(_criterion, "_py_precompute_absolute_errors"):
        pytest.skip("scikit-learn without the Fenwick-tree MAE (< 1.8)")
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(2, 60))
        y, w = _y_with_median_ties(rng, n)
        idx = np.arange(n, dtype=np.intp)
        ae_sk, med_sk = _criterion._py_precompute_absolute_errors(
            y[:, None].copy(), w, idx, 0, n, n)  # forward: the prefixes y[:i + 1]
        yv = np.unique(y)
        st = np.zeros(yv.size + 1)
        for i in range(n):
            st[0] += 1
            st[1 + np.searchsorted(yv, y[i])] += w[i]
            med, ae = criteria.median_abs_error(st, w[:i + 1].sum(), yv)
            assert (med, ae) == (med_sk[i], ae_sk[i])


@pytest.mark.parametrize("crit", ["gini", "entropy", "squared_error", "friedman_mse",
                                  "poisson", "absolute_error"])
@pytest.mark.parametrize("missing", [False, True])
def test_scan_finds_the_naive_best_split(crit, missing):
    rng = np.random.default_rng(1)
    c = criteria.criterion_id(crit)
    n, d, K = 120, 3, 3
    Xb = rng.integers(0, 9, (n, d)).astype(np.uint8)
    if missing:  # bin 9 is the missing slot; feature 2 missing everywhere but one bin
        Xb[rng.random((n, d)) < 0.2] = 9
        Xb[Xb[:, 2] != 9, 2] = 4
    y = rng.integers(0, K, n).astype(float) + (0 if c <= 1 else rng.random(n))
    w = np.ones(n)
    cls = y.astype(np.int64)
    yv = criteria.NO_VALUES
    if c == criteria.ABSOLUTE_ERROR:  # integer targets: sums exact in any order
        y = rng.integers(0, 30, n).astype(float)
        yv = np.unique(y)
        cls = np.searchsorted(yv, y)
        K = yv.size
    rs = histogram.row_stats(c, K, cls, y, histogram.ylny(y), w)
    total = rs.sum(axis=0)
    wn = criteria.node_weight(c, total)
    rows = np.arange(n, dtype=np.int32)
    vals = np.full((d, 10), np.nan)
    best, found = -np.inf, (-1, -1, False)
    for f in range(d):
        bins = np.empty(10, np.int64)
        st = np.empty((10, rs.shape[1]))
        m = compact_rows(Xb, rows, 0, n, f, rs, bins, st)
        i, p, ml = scan_feature(c, bins, st, m, vals[f], total, wn, 2.0, 0.0, best,
                                np.empty(rs.shape[1]), np.empty(rs.shape[1]),
                                np.empty(rs.shape[1]), np.zeros(3), yv)
        if i >= 0:
            best, found = p, (f, bins[i], ml)
    assert found == best_split_naive(c, Xb, rows, y, w, range(d), K, 2, 0.0, miss=9)


def test_histograms_and_partition_match_naive():
    rng = np.random.default_rng(2)
    n, d = 200, 4
    Xb = rng.integers(0, 300, (n, d)).astype(np.uint16)
    cls = rng.integers(0, 3, n).astype(np.int32)
    y = rng.random(n)
    rw = rng.integers(1, 3, n).astype(float)
    counts = rng.integers(0, 3, (2, n)).astype(np.uint8)
    part = np.arange(n, dtype=np.int32)
    starts, ends = np.array([0, 80]), np.array([80, 200])
    feats = np.array([[0, 2], [3, -1]])
    for c, S in ((criteria.GINI, 4), (criteria.SQUARED_ERROR, 5)):
        out = np.zeros((2, 2, 300, S))
        histogram.build_histograms(c, Xb, part, starts, ends, feats, [0, 1], counts, cls, y,
                                   histogram.ylny(y), rw, out)
        ref = histogram.build_histograms_naive(c, Xb, part, starts, ends, feats, [0, 1],
                                               counts, cls, y, histogram.ylny(y), rw, 300, S)
        np.testing.assert_allclose(out, ref, rtol=1e-12)
    Xb[rng.random((n, d)) < 0.1] = 299  # the missing slot: left only where mls says so
    for mls in ([False, False], [True, False], [False, True]):
        p2 = part.copy()
        nl = histogram.partition_nodes(Xb, p2, starts, ends, [1, 2], [150, 40], None, mls, 299)
        ref_p, ref_nl = histogram.partition_nodes_naive(Xb, part, starts, ends, [1, 2],
                                                        [150, 40], mls, 299)
        np.testing.assert_array_equal(p2, ref_p)
        np.testing.assert_array_equal(nl, ref_nl)


def test_wide_bins_match_naive_and_keep_uint8_path():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(3000, 2)), 3)
    sk = binning.sketch(X, None, 256, size=8 * 2000)
    wide = binning.edges_from_sketch(sk, 2000, wide=True)
    b = binning.bin_data(X, wide)
    assert b.dtype == np.uint16 and b.max() > 255
    np.testing.assert_array_equal(b, binning.bin_data_naive(X, wide))
    narrow = binning.edges_from_sketch(sk, 256)
    assert binning.bin_data(X, narrow).dtype == np.uint8
    with pytest.raises(ValueError):
        binning.n_real_bins(257)
    assert binning.n_real_bins(302, wide=True) == 302


def test_bootstrap_counts_match_naive_and_poisson_mean():
    keys = np.arange(-500, 1500, dtype=np.int64) * 7919
    got = forest.bootstrap_counts(keys, 5, 3, True, 1.0)
    np.testing.assert_array_equal(got, forest.bootstrap_counts_naive(keys, 5, 3, True, 1.0))
    assert abs(got.mean() - 1.0) < 0.05 and abs((got == 0).mean() - np.exp(-1)) < 0.03
    sub = forest.bootstrap_counts(keys, 5, 2, False, 0.5)
    np.testing.assert_array_equal(sub, forest.bootstrap_counts_naive(keys, 5, 2, False, 0.5))
    assert set(np.unique(sub)) == {0, 1}


def test_draw_subset_is_a_fisher_yates_prefix():
    state = np.empty(1, np.uint32)
    node_state(np.uint64(7), 3, np.uint64(12345), state)
    out = np.empty(16, np.int64)
    draw_subset(16, 16, state, out)
    assert sorted(out) == list(range(16))


# ------------------------------------------------------------------ forests
@pytest.fixture(scope="module")
def pen_small():
    return pen_small_data()


@pytest.mark.parametrize("random_splits", [False, True])
def test_absolute_error_forest_same_for_any_world_size_and_medians_at_leaves(random_splits):
    """RandomForest / ExtraTrees with absolute_error: bit-equal for any spread of rows and
    whether nodes grow from histograms or from their rows; each leaf holds the weighted
    median of its bootstrap rows."""
    from _tree_data import binned

    X, y = pytest.importorskip("sklearn.datasets").load_diabetes(return_X_y=True)
    X, y = X[:300], y[:300]
    Xb, edges, vals = binned(X)
    keys = (np.arange(len(y), dtype=np.int64) * 2654435761) ^ 0x5DEECE66D
    data = (X, y, Xb, edges, vals, keys)
    kw = dict(crit="absolute_error", n_trees=3, max_depth=6, random_splits=random_splits)
    ref, counts = _forest(data, **kw)
    _same(ref, _forest(data, world=2, **kw)[0])
    _same(ref, _forest(data, small_rows=1, **kw)[0])        # every node from histograms
    _same(ref, _forest(data, small_rows=10 ** 9, **kw)[0])  # every subtree from its rows
    pred = ForestPredictor.from_arrays(dict(
        {k: v for k, v in ref.items() if k != "bin"}, n_features=10, n_classes=0,
        criterion="absolute_error"))
    leaves = pred.apply(X)  # (n, T)
    for t in range(3):
        for leaf in np.unique(leaves[counts[t] > 0, t])[:20]:
            rows = (leaves[:, t] == leaf) & (counts[t] > 0)
            assert pred.value[leaf, 0] == criteria.median_naive(y[rows], counts[t][rows])


def test_forest_same_for_any_world_size_and_small_node_threshold(pen_small):
    ref, _ = _forest(pen_small)
    _same(ref, _forest(pen_small, world=2)[0])
    _same(ref, _forest(pen_small, world=3)[0])
    _same(ref, _forest(pen_small, small_rows=1)[0])        # every node distributed
    _same(ref, _forest(pen_small, small_rows=10 ** 9)[0])  # every subtree in one process
    _same(ref, _forest(pen_small, world=2, max_message_bytes=200_000)[0])  # many rounds/level


def test_forest_changes_with_seed(pen_small):
    a, _ = _forest(pen_small)
    X, y, Xb, edges, vals, keys = pen_small
    yy = y.astype(np.float64)
    b, _ = forest.grow_forest(Xb, y.astype(np.int32), yy, yy * 0, np.ones(len(y)), keys,
                              SplitParams(0, n_classes=10, max_features=4), 8, 12, True, 1.0,
                              LocalCollective(), vals, edges)
    assert a["feature"].size != b["feature"].size or not np.array_equal(a["threshold"],
                                                                        b["threshold"])


def test_forest_regression_same_for_world_sizes(pen_small):
    ref, _ = _forest(pen_small, crit="squared_error", max_depth=8)
    _same(ref, _forest(pen_small, world=2, crit="squared_error", max_depth=8)[0])


def test_forest_predictor_matches_naive_and_oob_matches_routing(pen_small):
    X, y, Xb, edges, vals, keys = pen_small
    res, counts = _forest(pen_small)
    pred = ForestPredictor.from_arrays(dict({k: v for k, v in res.items() if k != "bin"},
                                            n_features=16, n_classes=10, criterion="gini"))
    np.testing.assert_allclose(pred.predict_values(X[:200]),
                               pred.predict_values_naive(X[:200]), rtol=1e-12)
    # OOB from binned routing equals OOB from raw-feature prediction tree by tree
    assert res["missing_go_to_left"].any() and np.isinf(res["threshold"]).any()
    sums, n_oob = forest.oob_sums(Xb, counts, res, vals.shape[1] - 1)
    ref = np.zeros_like(sums)
    leaves = pred.apply(X)
    for t in range(pred.n_trees):
        oob = counts[t] == 0
        ref[oob] += pred.value[leaves[oob, t]]
    np.testing.assert_allclose(sums, ref, rtol=1e-12)
    np.testing.assert_array_equal(n_oob, (counts == 0).sum(axis=0))
    score = forest.oob_score(forest.oob_statistics(sums, n_oob, y, 10), 10)
    assert 0.85 < score < 1.0
    assert pred.feature_importances().sum() == pytest.approx(1.0)
    # every tree is in depth-first preorder: a left child right after its parent
    for t in range(pred.n_trees):
        tr = pred.tree_arrays(t)
        inner = np.flatnonzero(tr.children_left >= 0)
        np.testing.assert_array_equal(tr.children_left[inner], inner + 1)


def test_random_splits_same_for_any_spread_and_route_as_thresholds(pen_small):
    """ExtraTrees' random thresholds: the same forest for any world size and small-node
    threshold; thresholds lie between training values; OOB routing of binned rows matches
    raw-feature routing."""
    ref, counts = _forest(pen_small, n_trees=4, random_splits=True, max_depth=10)
    _same(ref, _forest(pen_small, world=2, n_trees=4, random_splits=True, max_depth=10)[0])
    _same(ref, _forest(pen_small, small_rows=10 ** 9, n_trees=4, random_splits=True,
                       max_depth=10)[0])
    X, y, Xb, edges, vals, keys = pen_small
    best, _ = _forest(pen_small, n_trees=4, max_depth=10)
    assert not np.array_equal(ref["threshold"][:50], best["threshold"][:50])
    pred = ForestPredictor.from_arrays(dict({k: v for k, v in ref.items() if k != "bin"},
                                            n_features=16, n_classes=10, criterion="gini"))
    sums, n_oob = forest.oob_sums(Xb, counts, ref, vals.shape[1] - 1)
    leaves = pred.apply(X)
    exp = np.zeros_like(sums)
    for t in range(pred.n_trees):
        oob = counts[t] == 0
        exp[oob] += pred.value[leaves[oob, t]]
    np.testing.assert_allclose(sums, exp, rtol=1e-12)


def test_leaf_ordinals_count_each_trees_leaves_left_to_right():
    sk_tree = pytest.importorskip("sklearn.tree")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    trees = []
    for depth in (2, 5):
        t = sk_tree.DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y).tree_
        v = t.value / t.value.sum(axis=2, keepdims=True)
        trees.append(TreeArrays(t.children_left, t.children_right, t.feature, t.threshold,
                                t.impurity, t.n_node_samples, t.weighted_n_node_samples, v,
                                t.missing_go_to_left))
    pred = ForestPredictor.from_trees(trees, 3, 2, "gini")
    got = pred.leaf_ordinals()
    for i, t in enumerate(trees):
        seg = got[pred.tree_offsets[i]:pred.tree_offsets[i + 1]]
        leaves = np.flatnonzero(t.children_left < 0)  # preorder ids: left to right
        np.testing.assert_array_equal(seg[leaves], np.arange(leaves.size))
        assert (seg[t.children_left >= 0] == -1).all()
