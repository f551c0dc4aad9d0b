"""The tree grown in scikit-learn's summation order: its sort, its split kernel against the
naive twin, and whole trees against scikit-learn's with non-integer weights."""
import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from _tree_data import assert_same_tree, pen_small_data, pendigits, with_nan  # noqa: E402
from sklearn.utils._sorting import _py_simultaneous_sort  # noqa: E402

from sparkxml_kernels.forest.ordered import (  # noqa: E402
    grow_tree_ordered,
    introsort3,
    node_sums,
    split_node_ordered,
)
from sparkxml_kernels.forest.split_naive import split_node_ordered_naive  # noqa: E402
from sparkxml_kernels.forest.splitter import sklearn_seed  # noqa: E402
from sparkxml_kernels.forest.tree import SplitParams  # noqa: E402


def _sk_sort(values, idx):
    _py_simultaneous_sort(values, idx, values.size, use_three_way_partition=True)


def test_introsort3_leaves_ties_in_sklearns_order():
    """Equal values end in the order scikit-learn's three-way introsort leaves them (what
    decides the order its sums add rows in), for random, sorted and reversed inputs with few
    to many distinct values, in a sub-range of a longer array."""
    rng = np.random.default_rng(0)
    for trial in range(120):
        n = int(rng.integers(1, 2500))
        v = rng.integers(0, int(rng.integers(1, 60)), n).astype(np.float32)
        if trial % 3 == 1:
            v = np.sort(v)
        elif trial % 3 == 2:
            v = np.sort(v)[::-1].copy()
        idx = rng.permutation(n).astype(np.intp)
        a, ia = v.copy(), idx.copy()
        _sk_sort(a, ia)
        b = np.concatenate([[9.0], v, [-1.0]]).astype(np.float32)
        ib = np.concatenate([[-5], idx, [-6]]).astype(np.int64)
        introsort3(b, ib, 1, n)
        np.testing.assert_array_equal(ib[1:-1], ia, err_msg=str(trial))
        np.testing.assert_array_equal(b[1:-1], a)
        assert ib[0] == -5 and ib[-1] == -6
    if n > 1:
        assert not np.array_equal(ia, np.argsort(v, kind="stable"))  # not a stable sort
    # partitions that peel off one or two values at a time (found by search): the sort
    # runs out of depth and heapsorts a part holding ties
    v = np.array(DEEP, np.float32)
    assert np.unique(v).size < v.size
    a, ia = v.copy(), np.arange(v.size, dtype=np.intp)
    _sk_sort(a, ia)
    b, ib = v.copy(), np.arange(v.size, dtype=np.int64)
    introsort3(b, ib, 0, v.size)
    np.testing.assert_array_equal(ib, ia)


DEEP = [30, 27, 27, 26, 10, 14, 2, 29, 22, 19, 21, 20, 14, 10, 17, 3, 12, 1, 23, 29, 28, 15, 14,
        21, 22, 3, 5, 17, 6, 5, 3, 12, 19, 0, 23, 2, 30, 25, 29, 31]


def _pen_weighted(n=3000, nan=False):
    X, y = pendigits()
    X, y = X[:n], y[:n]
    if nan:
        X = with_nan(X, 0.1, range(4))
    # class weights that are not integers, as class_weight="balanced" gives
    cw = len(y) / (10 * np.bincount(y, minlength=10))
    return X.astype(np.float32), y.astype(np.int32), cw[y]


@pytest.mark.parametrize("crit,min_leaf,nan", [(0, 1, False), (1, 7, False), (0, 2, True)])
def test_split_node_ordered_equals_naive_twin(crit, min_leaf, nan):
    """The kernel and its twin (plain Python, scikit-learn's sort) give the same split and
    leave the samples, feature arrays and random state the same, node after node down the
    left spine and its right siblings (with missing values: 10% in features 0-3)."""
    X, y, w = _pen_weighted(nan=nan)
    d = X.shape[1]
    fs = [np.arange(d, dtype=np.int64) for _ in range(2)]
    cs = [np.zeros(d, np.int64) for _ in range(2)]
    st = [np.array([sklearn_seed(3)], np.uint32) for _ in range(2)]
    sm = [np.arange(len(y), dtype=np.int64) for _ in range(2)]
    fv = np.empty(len(y), np.float32)
    total, out = np.empty(11), np.zeros(5)
    nodes, n_split = [(0, len(y), 0)], 0
    while nodes and n_split < 8:
        s, e, nk = nodes.pop()
        wn = node_sums(y, w, sm[0], s, e, total)
        f, pos, nt = split_node_ordered(crit, X, y, w, sm[0], fv, s, e, total, wn, w.sum(),
                                        0.5, fs[0], cs[0], nk, 4, float(min_leaf), 0.0, st[0],
                                        out)
        g, pos2, nt2, thr, ml = split_node_ordered_naive(crit, X, y, w, sm[1], s, e, 10, fs[1],
                                                     cs[1], nk, 4, min_leaf, 0.0, st[1],
                                                     _sk_sort)
        assert (f, pos, nt) == (g, pos2, nt2)
        for pair in (sm, fs, cs, st):
            np.testing.assert_array_equal(pair[0], pair[1])
        if f >= 0:
            assert out[0] == thr and bool(out[4]) == ml
            n_split += 1
            go = X[sm[0][s:e], f]
            go = np.where(np.isnan(go), ml, go <= thr)
            assert go[:pos - s].all() and not go[pos - s:].any()
            nodes += [(pos, e, nt), (s, pos, nt)]
    assert n_split == 8


def _balanced_subsample_forest(X, y, crit, **kw):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.ensemble._forest import _generate_sample_indices

    from sparkxml_kernels.forest.bootstrap import subsample_class_weights

    rf = RandomForestClassifier(n_estimators=2, class_weight="balanced_subsample",
                                criterion=crit, random_state=0, **kw).fit(X, y)
    for est in rf.estimators_:
        idx = _generate_sample_indices(est.random_state, len(y), len(y), None)
        counts = np.bincount(idx, minlength=len(y))
        yield est, counts * subsample_class_weights(y, counts[None], 10)[0, y]


def test_weighted_tree_with_missing_values_equals_sklearns():
    """Missing values (pendigits with 10% NaN in features 0-3): the rows missing a feature
    move to the end before its sort and to the front for the second scan, as in
    scikit-learn, and the weighted tree is its tree node for node, missing sides included."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = pen_small_data()[:2]
    w = (len(y) / (10 * np.bincount(y, minlength=10)))[y]
    for seed, mf in ((0, None), (1, 4)):
        sk = DecisionTreeClassifier(random_state=seed, max_features=mf).fit(X, y,
                                                                         sample_weight=w)
        p = SplitParams(0, n_classes=10, max_features=mf or 0)
        ours = grow_tree_ordered(X, y, w, p, sklearn_seed(seed))
        assert_same_tree(ours, sk.tree_)
        assert np.isinf(ours.threshold).any() and ours.missing_go_to_left.any()


@pytest.mark.parametrize("crit", ["gini", "entropy"])
def test_balanced_subsample_trees_equal_sklearns_at_full_depth(crit):
    """RandomForestClassifier(class_weight="balanced_subsample") on pendigits: given each
    tree's bootstrap sample and splitter seed, the tree is scikit-learn's node for node to
    the last leaf, every float bit for bit (the binned grower matches to depth 4 only: its
    order-free sums round differently, and that picks other splits among near ties)."""
    X, y = pendigits()
    for est, w in _balanced_subsample_forest(X, y, crit):
        p = SplitParams(0 if crit == "gini" else 1, n_classes=10, max_features=4)
        ours = grow_tree_ordered(X, y, w, p, sklearn_seed(est.random_state))
        assert est.tree_.max_depth > 12
        assert_same_tree(ours, est.tree_)


def test_weighted_decision_tree_with_leaf_rules_equals_sklearns():
    """A single weighted tree with min_samples_leaf, min_weight_fraction_leaf, max_depth
    and min_impurity_decrease, all features per node."""
    from sklearn.tree import DecisionTreeClassifier

    X, y, w = _pen_weighted()
    kw = dict(min_samples_leaf=3, min_weight_fraction_leaf=0.001, max_depth=14,
              min_impurity_decrease=1e-4)
    sk = DecisionTreeClassifier(random_state=5, **kw).fit(X, y, sample_weight=w)
    p = SplitParams(0, n_classes=10, min_samples_leaf=3, min_weight_fraction=0.001,
                    max_depth=14, min_impurity_decrease=1e-4)
    assert_same_tree(grow_tree_ordered(X, y, w, p, sklearn_seed(5)), sk.tree_)


@pytest.mark.parametrize("nan", [False, True])
def test_weighted_best_first_tree_equals_sklearns(nan):
    """max_leaf_nodes: scikit-learn's best-first builder (children searched as they are
    added, a max-heap on improvement) over the ordered splits."""
    from sklearn.tree import DecisionTreeClassifier

    X, y, w = _pen_weighted(nan=nan)
    sk = DecisionTreeClassifier(random_state=2, max_leaf_nodes=60, max_features=6,
                                criterion="entropy").fit(X, y, sample_weight=w)
    p = SplitParams(1, n_classes=10, max_leaf_nodes=60, max_features=6)
    ours = grow_tree_ordered(X, y, w, p, sklearn_seed(2))
    assert (ours.children_left < 0).sum() == 60
    assert_same_tree(ours, sk.tree_)


def test_grow_tree_ordered_refuses_what_it_does_not_replay():
    X, y, w = _pen_weighted(50)
    p = SplitParams(0, n_classes=10)
    bad = X.copy()
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        grow_tree_ordered(bad, y, w, p)
    with pytest.raises(ValueError, match="criterion=2"):
        grow_tree_ordered(X, y, w, SplitParams(2))
    with pytest.raises(ValueError, match="n_classes=3"):
        grow_tree_ordered(X, y, w, SplitParams(0, n_classes=3))
    with pytest.raises(ValueError, match="class ids"):
        grow_tree_ordered(X, y + 0.5, w, p)
    with pytest.raises(ValueError, match="monotonic_cst"):
        grow_tree_ordered(X, y, w, SplitParams(0, n_classes=10, monotonic_cst=[1] * 16))
    with pytest.raises(ValueError, match="non-negative"):
        grow_tree_ordered(X, y, -w, p)
    with pytest.raises(ValueError, match="shape"):
        grow_tree_ordered(X, y[:10], w, p)

