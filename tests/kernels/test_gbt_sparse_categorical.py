"""Sparse binned storage, uint16 bins and categorical splits of the GBT engine (binned.py,
categorical.py): fast kernels against their naive twins and the dense uint8 path, the
predictor's category sets, persistence, and LightGBM where the algorithms coincide."""
import numpy as np
import pytest
import scipy.sparse as sp
from _gbt_helpers import run_ranks

from sparkxml_kernels import binning
from sparkxml_kernels.gbt import binned as B
from sparkxml_kernels.gbt import booster
from sparkxml_kernels.gbt import grower as G
from sparkxml_kernels.gbt.categorical import (
    CatParams,
    check_categories,
    find_categorical_splits,
    find_categorical_splits_naive,
)
from sparkxml_kernels.gbt.histogram import interleave, n_hist_slots
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.gbt.splitting import SplitParams


def _sparse_data(n=2000, d=30, seed=1):
    X = sp.random(n, d, density=0.1, random_state=seed, format="csr")
    X.data = np.round(X.data * 6) - 2.0  # negatives, zeros stored explicitly, positives
    X.data[::13] = np.nan
    return X


def _cat_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 10, n), rng.integers(0, 3, n),
                         rng.integers(0, 25, n), rng.normal(size=n)]).astype(float)
    eff0, eff1, eff2 = rng.normal(size=10) * 2, np.array([0, 1.5, -1]), rng.normal(size=25)
    y = (eff0[X[:, 0].astype(int)] + eff1[X[:, 1].astype(int)] + eff2[X[:, 2].astype(int)]
         + X[:, 3] + rng.normal(size=n) * 0.3)
    cats = [np.unique(X[:, f]) for f in range(3)] + [None]
    return X, y, cats


def test_sparse_binning_matches_dense_and_is_smaller():
    X = _sparse_data()
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    sb = B.bin_matrix(X, edges, sparse=True)
    dense = binning.bin_data(X, edges)
    assert isinstance(sb, B.SparseBinned)
    np.testing.assert_array_equal(sb.to_dense(), dense)
    assert sb.nbytes < 0.7 * dense.nbytes
    sub = sb.take(np.array([5, 0, 7]))
    np.testing.assert_array_equal(sub.to_dense(), dense[[5, 0, 7]])


def test_sparse_histogram_matches_naive():
    X = _sparse_data(seed=3)
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    sb = B.bin_matrix(X, edges, sparse=True)
    rng = np.random.default_rng(0)
    g, h = rng.normal(size=sb.shape[0]), rng.uniform(0.5, 1.5, sb.shape[0])
    S = n_hist_slots(binning.n_bins_from_edges(edges))
    rows = np.sort(rng.choice(sb.shape[0], 700, replace=False)).astype(np.int32)
    feats = np.array([0, 3, 4, 17], np.int32)
    out = np.zeros((1, sb.shape[1], S, 2))
    B.build_histograms_any(sb, rows, [0], [rows.size], interleave(g, h), out, feats)
    want = B.build_histogram_any_naive(sb, rows, g, h, S, feats)
    np.testing.assert_allclose(out[0], want, atol=1e-10)


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_sparse_and_wide_grow_the_dense_tree(policy):
    X = _sparse_data(seed=5)
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    dense = binning.bin_data(X, edges)
    rng = np.random.default_rng(1)
    g, h = rng.normal(size=dense.shape[0]), np.ones(dense.shape[0])
    p = G.TreeParams(grow_policy=policy, max_depth=4, max_leaves=12)
    rows = np.flatnonzero(rng.uniform(size=dense.shape[0]) < 0.8).astype(np.int32)
    t0, l0 = G.grow_tree(dense, g, h, edges, p, rows=rows)
    wide = B.bin_matrix(X, edges, sparse=False, wide=True)
    np.testing.assert_array_equal(wide, np.where(dense == 255, 65535, dense.astype(np.uint16)))
    for other in (B.bin_matrix(X, edges, sparse=True), wide):
        t1, l1 = G.grow_tree(other, g, h, edges, p, rows=rows)
        np.testing.assert_array_equal(t0.feature, t1.feature)
        np.testing.assert_array_equal(t0.bin, t1.bin)
        np.testing.assert_allclose(t0.value, t1.value, rtol=1e-12)
        np.testing.assert_array_equal(l0, l1)
        tn, ln = G.grow_tree_naive(other, g, h, edges, p, rows=rows)
        np.testing.assert_array_equal(tn.feature, t1.feature)
        np.testing.assert_array_equal(ln, l1)


def test_wide_bins_beyond_255():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4000, 2))
    y = np.sin(3 * X[:, 0]) + rng.normal(size=4000) * 0.05
    sk = binning.sketch(X, None, 256, size=4000)
    edges = binning.edges_from_sketch(sk, 1024, wide=True)
    Xb = B.bin_matrix(X, edges)
    assert Xb.dtype == np.uint16 and Xb.max() > 255
    np.testing.assert_array_equal(Xb, binning.bin_data_naive(X, edges))
    pred, hist = booster.train(Xb, y, None, edges, dict(maxIter=5, maxBins=1024, maxDepth=3))
    np.testing.assert_allclose(pred.predict_raw(X), pred.predict_raw_naive(X))


def test_categorical_split_kernel_matches_naive():
    rng = np.random.default_rng(4)
    m, d, S = 5, 4, 41
    hists = np.zeros((m, d, S, 2))
    n_bins = np.array([3, 40, 12, 30], np.int32)
    for f in range(d):
        hists[:, f, :n_bins[f], 1] = rng.integers(0, 30, (m, n_bins[f]))
        hists[:, f, :n_bins[f], 0] = rng.normal(size=(m, n_bins[f])) * hists[:, f, :n_bins[f], 1]
    hists[:, :, S - 1, 1] = rng.integers(0, 5, (m, d))
    sums = hists[:, 0].sum(axis=1)
    for f in range(1, d):  # every feature holds the same rows
        hists[:, f, 0] += sums - hists[:, f].sum(axis=1)
    mask = np.array([1, 1, 0, 1], np.uint8)
    for cat in (CatParams(), CatParams(max_cat_to_onehot=1, cat_smooth=0.0, cat_l2=0.0,
                                       max_cat_threshold=8)):
        a = find_categorical_splits(hists, sums, n_bins, mask, SplitParams(), cat)
        b = find_categorical_splits_naive(hists, sums, n_bins, mask, SplitParams(), cat)
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_allclose(a.gain, b.gain)
        np.testing.assert_array_equal(a.sets, b.sets)
        np.testing.assert_allclose(a.left_sums, b.left_sums)
        assert (a.feature >= 0).all()


def test_categorical_grower_matches_naive_and_sparse():
    X, y, cats = _cat_data()
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    Xb = B.bin_matrix(X, edges, categories=cats)
    p = G.TreeParams(max_depth=4, categorical=(0, 1, 2), cat=CatParams(cat_smooth=1.0))
    g, h = -y, np.ones(y.size)
    t, leaf = G.grow_tree(Xb, g, h, edges, p)
    tn, ln = G.grow_tree_naive(Xb, g, h, edges, p)
    assert t.is_cat.any()
    np.testing.assert_array_equal(t.feature, tn.feature)
    np.testing.assert_array_equal(t.cat_sets, tn.cat_sets)
    np.testing.assert_array_equal(leaf, ln)
    ts, ls = G.grow_tree(B.to_sparse(Xb), g, h, edges, p)
    np.testing.assert_array_equal(ts.cat_sets, t.cat_sets)
    np.testing.assert_array_equal(ls, leaf)


def test_categorical_model_predicts_and_persists():
    X, y, cats = _cat_data()
    edges = binning.edges_from_sketch(binning.sketch(X[:1500], None, 256), 256)
    Xb = B.bin_matrix(X, edges, categories=cats)
    params = dict(maxIter=15, categoricalFeatures=[0, 1, 2], catSmooth=1.0)
    pred, hist = booster.train(Xb, y, None, edges, params, categories=cats)
    num, hnum = booster.train(binning.bin_data(X, edges), y, None, edges, dict(maxIter=15))
    assert hist["train"][-1] < 0.9 * hnum["train"][-1]  # categories beat their ranks here
    raw = pred.predict_raw(X)
    np.testing.assert_allclose(np.sqrt(np.mean((raw - y) ** 2)), hist["train"][-1])
    np.testing.assert_allclose(raw, pred.predict_raw_naive(X))
    np.testing.assert_allclose(pred.predict_raw(sp.csr_matrix(np.nan_to_num(X))), raw)
    Xu = X.copy()
    Xu[:5, 0] = [99.0, -1.0, 2.5, np.nan, 1e12]  # unseen, negative, fractional, missing
    np.testing.assert_allclose(pred.predict_raw(Xu), pred.predict_raw_naive(Xu))
    again = TreeEnsemblePredictor.from_arrays(pred.to_arrays())
    np.testing.assert_array_equal(again.predict_raw(X), raw)
    np.testing.assert_array_equal(pred.truncate(3).predict_raw(X),
                                  again.truncate(3).predict_raw(X))
    both = pred.truncate(2).concat(num.truncate(2))
    np.testing.assert_allclose(both.predict_raw(X), pred.truncate(2).predict_raw(X)
                               + num.truncate(2).predict_raw(X) - num.base_score[0])
    with pytest.raises(ValueError, match="categorical"):
        pred.predict_contributions(X[:3])
    old = {k: v for k, v in num.to_arrays().items() if not k.startswith("cat_")}
    assert not TreeEnsemblePredictor.from_arrays(old).has_categorical
    bad = pred.to_arrays()
    bad["cat_ptr"] = bad["cat_ptr"][:-1]
    with pytest.raises(ValueError, match="cat_ptr"):
        TreeEnsemblePredictor.from_arrays(bad)


def test_category_values_checked():
    assert check_categories([3.0, 1.0, np.nan, 3.0], "c").tolist() == [1.0, 3.0]
    with pytest.raises(ValueError, match="feature 'c'.*-1"):
        check_categories([1.0, -1.0], "c")
    with pytest.raises(ValueError, match="0.5"):
        check_categories([0.5], "c")


def test_categorical_matches_lightgbm():
    """Where the algorithms coincide (squared error: hessian = rows; lambda 0, catL2 0,
    LightGBM's min_data_per_group 1), leaf-wise trees on categorical features predict what
    LightGBM predicts, to its kEpsilon."""
    lgb = pytest.importorskip("lightgbm")
    X, y, cats = _cat_data(4000, seed=7)
    X, cats = X[:, :3], cats[:3]
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    Xb = B.bin_matrix(X, edges, categories=cats)
    R, lr, L = 5, 0.3, 4
    pred, _ = booster.train(Xb, y, None, edges, dict(
        maxIter=R, stepSize=lr, growPolicy="lossguide", maxLeaves=L, maxDepth=0,
        regLambda=0.0, categoricalFeatures=[0, 1, 2], catSmooth=1.0, catL2=0.0),
        categories=cats)
    m = lgb.train(dict(objective="regression", learning_rate=lr, num_leaves=L, lambda_l2=0.0,
                       min_data_in_leaf=1, min_sum_hessian_in_leaf=1.0, cat_smooth=1.0,
                       cat_l2=0.0, max_cat_threshold=32, max_cat_to_onehot=4,
                       min_data_per_group=1, verbose=-1, min_data_in_bin=1),
                  lgb.Dataset(X, y, categorical_feature=[0, 1, 2]), R)
    np.testing.assert_allclose(pred.predict_raw(X), m.predict(X), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_partition_with_category_sets_matches_naive(dtype):
    from sparkxml_kernels.gbt.partition import (
        column_copy,
        partition_nodes_sets,
        partition_nodes_sets_naive,
    )
    rng = np.random.default_rng(4)
    n, d = 2000, 3
    top = 40 if dtype == np.uint8 else 3000  # the uint16 sets span many words
    binned = rng.integers(0, top, (n, d)).astype(dtype)
    binned[rng.random((n, d)) < 0.1] = np.iinfo(dtype).max  # missing
    part = rng.permutation(n).astype(np.int32)
    starts, ends = np.array([0, 700, 701, 1500]), np.array([700, 701, 1500, 2000])
    feats = np.array([0, 1, 2, 1], np.int32)
    bins = np.array([20, 5, 17, 0], np.int64)
    dl = np.array([1, 0, 0, 1], np.uint8)
    is_cat = np.array([1, 0, 1, 0], np.uint8)
    sets = rng.integers(0, 2**32, (4, (top + 31) // 32), dtype=np.uint64).astype(np.uint32)
    want_part, want_left = partition_nodes_sets_naive(binned, part, starts, ends, feats, bins,
                                                      dl, is_cat, sets)
    got = part.copy()
    nl = partition_nodes_sets(column_copy(binned), got, np.empty(n, np.int32), starts, ends,
                              feats, bins, dl, is_cat, sets)
    np.testing.assert_array_equal(nl, want_left)
    np.testing.assert_array_equal(got, want_part)
    assert 0 < want_left[0] < 700 and 0 < want_left[2] < 799
    # without sets the numeric nodes split as the uint8/uint16 column kernels do
    got2 = part.copy()
    nl2 = B.partition_nodes_any(binned, got2, np.empty(n, np.int32), starts, ends, feats, bins,
                                dl, is_cat, sets, columns=column_copy(binned))
    np.testing.assert_array_equal(got2, want_part)
    np.testing.assert_array_equal(nl2, want_left)


@pytest.mark.parametrize("missing", [True, False])
def test_wide_dense_histograms_match_naive(missing):
    rng = np.random.default_rng(8)
    n, nb = 1500, np.array([4000, 3, 700, 1], np.int32)
    binned = np.column_stack([rng.integers(0, b, n) for b in nb]).astype(np.uint16)
    if missing:
        binned[rng.random(binned.shape) < 0.05] = np.iinfo(np.uint16).max
    g, h = rng.normal(size=n), rng.uniform(0.5, 1.5, n)
    S = n_hist_slots(nb)
    part = rng.permutation(n).astype(np.int32)
    starts, ends = np.array([0, 500, 501]), np.array([500, 501, 1500])
    for feats in (None, np.array([0, 2], np.int32)):
        out = np.zeros((3, nb.size, S, 2))
        B.build_histograms_any(binned, part, starts, ends, interleave(g, h), out, feats,
                               has_missing=missing)
        for j in range(3):
            rows = np.sort(part[starts[j]:ends[j]])
            want = B.build_histogram_any_naive(binned, rows, g, h, S, feats)
            np.testing.assert_allclose(out[j], want, atol=1e-10)


def test_raw_category_sets_match_naive():
    from sparkxml_kernels.gbt.categorical import raw_category_sets, raw_category_sets_naive
    rng = np.random.default_rng(2)
    n = 4000
    # sparse category values (up to 5,000): the value bitsets span many words
    values = [rng.choice(5000, 60, replace=False), rng.choice(40, 12, replace=False)]
    X = np.column_stack([rng.choice(values[0], n), rng.choice(values[1], n),
                         rng.normal(size=n)]).astype(float)
    eff = {v: e for v, e in zip(values[0], rng.normal(size=60) * 2)}
    y = np.array([eff[v] for v in X[:, 0]]) + 0.5 * X[:, 2] + rng.normal(size=n) * 0.3
    cats = [np.unique(X[:, 0]), np.unique(X[:, 1]), None]
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    Xb = B.bin_matrix(X, edges, categories=cats)
    p = G.TreeParams(max_depth=4, categorical=(0, 1), cat=CatParams(cat_smooth=1.0))
    trees = []
    for k in range(4):
        t, _ = G.grow_tree(Xb, -(y - 0.1 * k), np.ones(n), edges, p)
        trees.append(t)
    ptr, words = raw_category_sets(trees, cats)
    want_ptr, want_words = raw_category_sets_naive(trees, cats)
    assert sum(int(t.is_cat.sum()) for t in trees) >= 4
    assert np.diff(ptr).max() > 10  # values in the thousands
    np.testing.assert_array_equal(ptr, want_ptr)
    np.testing.assert_array_equal(words, want_words)
    numeric, _ = G.grow_tree(Xb, -y, np.ones(n), edges, G.TreeParams(max_depth=2))
    assert raw_category_sets([numeric], None) == (None, None)


def _logistic_cat_problem(n=4000, seed=6):
    # a binary label: hessians p (1 - p) far below 1, so a category's hessian sum is well
    # below its row count and the cat_smooth filter depends on counting rows
    rng = np.random.default_rng(seed)
    # 150 categories of about 27 rows: below the root, their rows cross cat_smooth (12)
    X = np.column_stack([rng.integers(0, 150, n), rng.integers(0, 8, n),
                         rng.normal(size=n)]).astype(float)
    eff = rng.normal(size=150)
    p = 1 / (1 + np.exp(-(eff[X[:, 0].astype(int)] + 0.5 * X[:, 2])))
    y = (rng.random(n) < p).astype(float)
    cats = [np.unique(X[:, 0]), np.unique(X[:, 1]), None]
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    q = np.full(n, y.mean())
    return B.bin_matrix(X, edges, categories=cats), edges, q - y, q * (1 - q)


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_category_rows_filter_matches_naive_and_two_workers(policy):
    Xb, edges, g, h = _logistic_cat_problem()
    p = G.TreeParams(policy, max_depth=4, max_leaves=12, categorical=(0, 1),
                     cat=CatParams(cat_smooth=12.0, max_cat_to_onehot=4))
    t, leaf = G.grow_tree(Xb, g, h, edges, p)
    tn, ln = G.grow_tree_naive(Xb, g, h, edges, p)
    assert t.is_cat.sum() >= 2
    np.testing.assert_array_equal(t.feature, tn.feature)
    np.testing.assert_array_equal(t.cat_sets, tn.cat_sets)
    np.testing.assert_array_equal(leaf, ln)
    # two workers: the nodes' rows are summed over both, or the filter would halve them
    n_bins = np.array([len(e) + 1 for e in edges], np.int32)
    parts = [np.arange(0, len(g), 2), np.arange(1, len(g), 2)]

    def rank(r, collective):
        rows = parts[r]
        return G.TreeGrower(Xb[rows], n_bins, edges, p, collective).grow(g[rows], h[rows])

    for r, (tree, lf) in enumerate(run_ranks(2, rank)):
        np.testing.assert_array_equal(tree.cat_sets, t.cat_sets)
        np.testing.assert_array_equal(tree.feature, t.feature)
        np.testing.assert_array_equal(lf, leaf[parts[r]])


def test_category_rows_change_the_search_under_small_hessians():
    # a node of 400 rows in 4 categories of 100 rows, hessian 0.05 a row: each category
    # holds 5.0 of hessian but 100 rows; cat_smooth 10 keeps them all by rows, none by hessian
    hists = np.zeros((1, 1, 5, 2))
    hists[0, 0, :4, 0] = [-4.0, -1.0, 1.0, 4.0]
    hists[0, 0, :4, 1] = 5.0
    sums = np.array([[0.0, 20.0]])
    args = (sums, np.array([4], np.int32), np.array([1], np.uint8), SplitParams(),
            CatParams(cat_smooth=10.0, max_cat_to_onehot=2))
    by_hess = find_categorical_splits(hists, *args)
    by_rows = find_categorical_splits(hists, *args, counts=np.array([400.0]))
    assert by_hess.feature[0] == -1
    assert by_rows.feature[0] == 0
    naive = find_categorical_splits_naive(hists, *args, counts=np.array([400.0]))
    np.testing.assert_array_equal(naive.sets, by_rows.sets)
    assert naive.feature[0] == 0
