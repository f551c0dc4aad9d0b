"""Forest options against scikit-learn: class_weight="balanced_subsample"."""
import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from _tree_data import (  # noqa: E402
    assert_same_tree,
    binned,
    forest_grown,
    pen_small_data,
    pendigits,
    same_arrays,
)
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.ensemble._forest import _generate_sample_indices  # noqa: E402
from sklearn.utils.class_weight import compute_sample_weight  # noqa: E402

from sparkxml_kernels.collective import LocalCollective  # noqa: E402
from sparkxml_kernels.forest import builder, histogram  # noqa: E402
from sparkxml_kernels.forest.bootstrap import subsample_class_weights  # noqa: E402
from sparkxml_kernels.forest.ordered import grow_tree_ordered  # noqa: E402
from sparkxml_kernels.forest.splitter import sklearn_seed  # noqa: E402
from sparkxml_kernels.forest.tree import SplitParams  # noqa: E402


@pytest.fixture(scope="module")
def pen_small():
    return pen_small_data()


# ------------------------------------------------------------------ balanced_subsample
def test_balanced_subsample_weights_and_trees_equal_sklearns_forest():
    """Given scikit-learn's bootstrap sample of each tree, the weights are its forest's bit
    for bit, and the tree grown with them and the tree's splitter seed is scikit-learn's
    node for node: the binned grower to depth 4 (the weights are not integers, so deeper
    down candidate splits within rounding of each other occur, and scikit-learn's summation
    order picks one), ``ordered.grow_tree_ordered`` (that order replayed) to the last leaf,
    every float bit for bit."""
    X, y = pendigits()
    n = len(y)
    Xb, edges, vals = binned(X)
    rf = RandomForestClassifier(n_estimators=4, class_weight="balanced_subsample",
                                max_depth=4, random_state=0).fit(X, y)
    full = RandomForestClassifier(n_estimators=4, class_weight="balanced_subsample",
                                  random_state=0).fit(X, y)
    yy = y.astype(np.float64)
    for est, deep in zip(rf.estimators_, full.estimators_):
        idx = _generate_sample_indices(est.random_state, n, n, None)
        counts = np.bincount(idx, minlength=n)
        w = counts * subsample_class_weights(y, counts[None], 10)[0, y]
        np.testing.assert_array_equal(w, counts * compute_sample_weight("balanced", y,
                                                                        indices=idx))
        p = SplitParams(0, n_classes=10, max_features=4, max_depth=4)
        ours = builder.grow_tree(Xb, y.astype(np.int32), yy, histogram.ylny(yy), w, p,
                                 LocalCollective(), vals, edges, sklearn_seed(est.random_state))
        assert_same_tree(ours, est.tree_, rtol=1e-12)
        ordered = grow_tree_ordered(X, y, w, SplitParams(0, n_classes=10, max_features=4),
                                    sklearn_seed(deep.random_state))
        assert deep.tree_.max_depth > 12
        assert_same_tree(ordered, deep.tree_)
    # a class missing from a sample weighs 0 there, as in scikit-learn
    c = np.array([[1, 0, 2, 3], [0, 0, 1, 1]])
    got = subsample_class_weights(np.array([0, 1, 1, 2]), c, 3)
    np.testing.assert_array_equal(got, [[6 / 3, 6 / 6, 6 / 9], [0.0, 2 / 2, 2 / 2]])


def test_balanced_subsample_forest_same_any_spread_and_balanced_roots(pen_small):
    """The same forest for any spread of the rows over ranks (the weights are not integers:
    the level sums of ``exactsum`` make the node sums independent of the spread; a node's
    way -- histograms or rows -- depends on its size only)."""
    kw = dict(n_trees=4, max_depth=10, grow={"balanced_subsample": True})
    ref, counts = forest_grown(pen_small, **kw)
    same_arrays(ref, forest_grown(pen_small, world=2, **kw)[0])
    same_arrays(ref, forest_grown(pen_small, world=3, max_message_bytes=200_000, **kw)[0])
    plain, _ = forest_grown(pen_small, n_trees=4, max_depth=10)
    assert not np.array_equal(ref["value"][:20], plain["value"][:20])
    y = pen_small[1]
    for t in range(4):
        root = ref["tree_offsets"][t]
        # every class drawn weighs the same in the root: N_t / K_t each
        np.testing.assert_allclose(ref["value"][root], np.full(10, 0.1), rtol=1e-14)
        assert ref["weighted_n_node_samples"][root] == pytest.approx(counts[t].sum(),
                                                                     rel=1e-14)
        assert ref["n_node_samples"][root] == (counts[t] > 0).sum()
    # the histogram kernel's per-tree class weights against its naive twin
    Xb = pen_small[2]
    tcw = subsample_class_weights(y, counts, 10)
    part = np.flatnonzero(counts[1]).astype(np.int32)
    feats = np.array([[0, 5, 9]])
    args = (0, Xb, part, [0], [part.size], feats, np.array([1]), counts, y.astype(np.int32),
            y * 0.0, y * 0.0, np.ones(len(y)))
    got = np.zeros((1, 3, pen_small[4].shape[1], 11))
    histogram.build_histograms(*args, got, tcw=tcw)
    np.testing.assert_allclose(got, histogram.build_histograms_naive(
        *args, pen_small[4].shape[1], 11, tcw=tcw), rtol=1e-13)


# ------------------------------------------------------------------ monotonic constraints
DIABETES_CST = [1, 0, 1, 1, 0, 0, -1, 0, 1, 0]  # age, bmi, bp, s5 up; s3 down


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    return d.data, d.target


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("kw", [{}, {"max_leaf_nodes": 30}])
def test_monotonic_tree_equals_sklearn_on_diabetes(diabetes, nan, kw):
    from _tree_data import with_nan
    from sklearn.tree import DecisionTreeRegressor

    X, y = diabetes
    X = with_nan(X, 0.1) if nan else X
    Xb, edges, vals = binned(X)
    sk = DecisionTreeRegressor(random_state=0, monotonic_cst=DIABETES_CST, **kw).fit(X, y)
    p = SplitParams(2, monotonic_cst=DIABETES_CST, **kw)
    ours = builder.grow_tree(Xb, np.zeros(len(y), np.int32), y, histogram.ylny(y),
                             np.ones(len(y)), p, LocalCollective(), vals, edges,
                             sklearn_seed(0))
    assert_same_tree(ours, sk.tree_)
    free = DecisionTreeRegressor(random_state=0, **kw).fit(X, y).tree_
    assert free.node_count != ours.node_count or not np.array_equal(free.value, ours.value)


def test_monotonic_binary_classification_tree_equals_sklearn():
    from sklearn.tree import DecisionTreeClassifier

    X, y = pendigits()
    X, y = X[:3000], (y[:3000] >= 5).astype(np.int64)
    Xb, edges, vals = binned(X)
    cst = [1, -1] + [0] * 14
    sk = DecisionTreeClassifier(random_state=0, monotonic_cst=cst, max_depth=8).fit(X, y)
    p = SplitParams(0, n_classes=2, monotonic_cst=cst, max_depth=8)
    ours = builder.grow_tree(Xb, y.astype(np.int32), y * 1.0, y * 0.0, np.ones(len(y)), p,
                             LocalCollective(), vals, edges, sklearn_seed(0))
    assert_same_tree(ours, sk.tree_)


def _monotone_in(pred, X, f, sign):
    """Predictions of rows with feature ``f`` swept over its range never move against
    ``sign``."""
    grid = np.linspace(np.nanmin(X[:, f]), np.nanmax(X[:, f]), 25)
    rows = np.repeat(np.nan_to_num(X[:40]), grid.size, axis=0)
    rows[:, f] = np.tile(grid, 40)
    v = pred(rows).reshape(40, grid.size)
    return bool((sign * np.diff(v, axis=1) >= -1e-12).all())


@pytest.mark.parametrize("random_splits", [False, True])  # random forest, ExtraTrees
def test_monotonic_forest_same_any_spread_and_monotone(diabetes, random_splits):
    from sparkxml_kernels.forest.predictor import ForestPredictor

    X, y = diabetes
    Xb, edges, vals = binned(X)
    keys = np.arange(len(y), dtype=np.int64) * 7919
    data = (X, y, Xb, edges, vals, keys)
    kw = dict(n_trees=6, crit="squared_error", max_features=5, max_depth=12,
              monotonic_cst=DIABETES_CST, random_splits=random_splits)
    ref, _ = forest_grown(data, **kw)
    same_arrays(ref, forest_grown(data, world=2, **kw)[0])
    same_arrays(ref, forest_grown(data, world=3, small_rows=1, **kw)[0])
    same_arrays(ref, forest_grown(data, small_rows=10 ** 9, **kw)[0])
    pred = ForestPredictor.from_arrays(dict({k: v for k, v in ref.items() if k != "bin"},
                                            n_features=10, n_classes=0,
                                            criterion="squared_error"))
    for f, sign in enumerate(DIABETES_CST):
        if sign:
            assert _monotone_in(lambda R: pred.predict_values(R), X, f, sign), f
    free, _ = forest_grown(data, n_trees=6, crit="squared_error", max_features=5,
                           max_depth=12, random_splits=random_splits)
    pf = ForestPredictor.from_arrays(dict({k: v for k, v in free.items() if k != "bin"},
                                          n_features=10, n_classes=0,
                                          criterion="squared_error"))
    assert not all(_monotone_in(lambda R: pf.predict_values(R), X, f, s)
                   for f, s in enumerate(DIABETES_CST) if s)


# ------------------------------------------------------------------ permutation importance
@pytest.mark.parametrize("metric", ["r2", "neg_mean_absolute_error", "accuracy"])
def test_permutation_importance_equals_sklearns(diabetes, metric):
    from sklearn.inspection import permutation_importance as sk_pi
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from sparkxml_kernels.forest.importance import permutation_importance

    X, y = diabetes
    if metric == "accuracy":
        y = (y > 140).astype(np.float64)
        model = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    else:
        model = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    w = np.arange(len(y)) % 3 + 1.0
    for sw in (None, w):
        sk = sk_pi(model, X, y, scoring=metric, n_repeats=3, random_state=4, sample_weight=sw)
        ours = permutation_importance(model.predict, X, y, metric, 3, 4, sw)
        np.testing.assert_array_equal(ours["importances"], sk.importances)
        np.testing.assert_array_equal(ours["importances_std"], sk.importances_std)
    assert ours["importances_mean"].max() > 0.01
