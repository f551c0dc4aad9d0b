"""Single trees equal scikit-learn's node for node (its splitter's draws replayed)."""
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from _tree_data import assert_same_tree, binned, on_ranks, pendigits, with_nan  # noqa: E402
from sklearn.datasets import load_diabetes  # noqa: E402
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

from sparkxml_kernels.collective import LocalCollective  # noqa: E402
from sparkxml_kernels.forest import builder, criteria, histogram  # noqa: E402
from sparkxml_kernels.forest.splitter import our_rand_r, sklearn_seed  # noqa: E402
from sparkxml_kernels.forest.tree import SplitParams  # noqa: E402


@pytest.fixture(scope="module")
def pen():
    X, y = pendigits()
    return X, y, binned(X)


@pytest.fixture(scope="module")
def diabetes():
    d = load_diabetes()
    return d.data, d.target, binned(d.data)


def _grow(Xb, y, edges, vals, crit, seed=0, world=1, weights=None, **kw):
    c = criteria.criterion_id(crit)
    K = int(y.max()) + 1 if criteria.is_classification(c) else 0
    yy = np.asarray(y, np.float64)
    cls, yv = y.astype(np.int32), criteria.NO_VALUES
    if c == criteria.ABSOLUTE_ERROR:  # per-label sums: each row's index among the targets
        yv = np.unique(yy)
        cls, K = np.searchsorted(yv, yy).astype(np.int32), yv.size
    p = SplitParams(c, n_classes=K, **kw)
    w = np.ones(len(y)) if weights is None else weights
    if world == 1:
        return builder.grow_tree(Xb, cls, yy, histogram.ylny(yy), w, p,
                                 LocalCollective(), vals, edges, sklearn_seed(seed), yv)
    def run(r, coll):
        idx = np.arange(r, len(y), world)
        return builder.grow_tree(Xb[idx], cls[idx], yy[idx],
                                 histogram.ylny(yy[idx]), w[idx], p, coll, vals, edges,
                                 sklearn_seed(seed), yv)

    return on_ranks(world, run)


def test_our_rand_r_matches_sklearn_xorshift():
    state = np.array([sklearn_seed(0)], np.uint32)
    s = int(state[0])
    for _ in range(5):
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        assert our_rand_r(state) == s % (1 << 31)


@pytest.mark.parametrize("crit", ["gini", "entropy"])
def test_pendigits_full_depth_two_workers_equals_sklearn(pen, crit):
    X, y, (Xb, edges, vals) = pen
    ours = _grow(Xb, y, edges, vals, crit, world=2)
    sk = DecisionTreeClassifier(criterion=crit, random_state=0).fit(X, y).tree_
    assert_same_tree(ours, sk)
    assert ours.node_count == {"gini": 563, "entropy": 485}[crit]


@pytest.mark.parametrize("crit", ["squared_error", "friedman_mse", "poisson"])
def test_diabetes_regression_two_workers_equals_sklearn(diabetes, crit):
    X, y, (Xb, edges, vals) = diabetes
    assert Xb.dtype == np.uint16  # 302 distinct values: wide bins
    ours = _grow(Xb, y, edges, vals, crit, world=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # friedman_mse -> squared_error
        sk = DecisionTreeRegressor(criterion=crit, random_state=0).fit(X, y).tree_
    # poisson's impurity comes from sums (sum wy ln y - sum wy ln mean): equal up to rounding
    assert_same_tree(ours, sk, rtol=1e-8 if crit == "poisson" else 0.0)


@pytest.mark.parametrize("kw, skw, weighted", [
    ({}, {}, False),  # full depth: 853 nodes, medians of even counts take midpoints
    (dict(max_leaf_nodes=30, max_features=4, min_samples_leaf=3),
     dict(max_leaf_nodes=30, max_features=4, min_samples_leaf=3), True),
])
def test_diabetes_absolute_error_two_workers_equals_sklearn(diabetes, kw, skw, weighted):
    """Weighted medians and mean absolute deviations, node for node; integer weights (zeros
    too) make the cumulative weight hit exactly half often."""
    X, y, (Xb, edges, vals) = diabetes
    w = (np.arange(len(y)) % 4).astype(np.float64) if weighted else None
    ours = _grow(Xb, y, edges, vals, "absolute_error", seed=3 if weighted else 0, world=2,
                 weights=w, **kw)
    sk = DecisionTreeRegressor(criterion="absolute_error", random_state=3 if weighted else 0,
                               **skw).fit(X, y, sample_weight=w).tree_
    assert_same_tree(ours, sk)
    if not weighted:
        assert ours.node_count == 853
        assert np.any(ours.value != np.round(ours.value))  # some medians are midpoints


@pytest.mark.parametrize("kw, skw", [
    (dict(max_leaf_nodes=40), dict(max_leaf_nodes=40)),
    (dict(max_features=4, max_depth=12), dict(max_features=4, max_depth=12)),
    (dict(min_samples_leaf=5, min_samples_split=7, max_depth=9),
     dict(min_samples_leaf=5, min_samples_split=7, max_depth=9)),
    (dict(min_impurity_decrease=0.001), dict(min_impurity_decrease=0.001)),
    (dict(min_weight_fraction=0.01, max_leaf_nodes=100, max_features=3),
     dict(min_weight_fraction_leaf=0.01, max_leaf_nodes=100, max_features=3)),
])
def test_options_equal_sklearn(pen, kw, skw):
    X, y, (Xb, edges, vals) = pen
    for seed in (0, 3):
        ours = _grow(Xb, y, edges, vals, "entropy", seed=seed, **kw)
        sk = DecisionTreeClassifier(criterion="entropy", random_state=seed, **skw).fit(X, y)
        assert_same_tree(ours, sk.tree_)


def test_integer_sample_weights_equal_sklearn(pen):
    X, y, (Xb, edges, vals) = pen
    w = (np.arange(len(y)) % 3).astype(np.float64)  # zeros too: those rows take no part
    ours = _grow(Xb, y, edges, vals, "gini", weights=w, max_depth=10)
    sk = DecisionTreeClassifier(random_state=0, max_depth=10).fit(X, y, sample_weight=w)
    assert_same_tree(ours, sk.tree_)


def test_feature_importances_equal_sklearn(pen):
    X, y, (Xb, edges, vals) = pen
    ours = _grow(Xb, y, edges, vals, "gini", max_depth=8)
    sk = DecisionTreeClassifier(random_state=0, max_depth=8).fit(X, y)
    np.testing.assert_allclose(ours.feature_importances(16), sk.feature_importances_,
                               rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ missing values
@pytest.fixture(scope="module")
def pen_nan():
    X, y = pendigits()
    X = with_nan(X, 0.1, range(8))  # 10% of the entries of features 0-7
    return X, y, binned(X)


@pytest.mark.parametrize("crit", ["gini", "entropy"])
def test_pendigits_with_nan_two_workers_equals_sklearn(pen_nan, crit):
    X, y, (Xb, edges, vals) = pen_nan
    ours = _grow(Xb, y, edges, vals, crit, world=2)
    sk = DecisionTreeClassifier(criterion=crit, random_state=0).fit(X, y).tree_
    assert_same_tree(ours, sk)
    inner = ours.children_left >= 0
    assert ours.missing_go_to_left[inner].any() and not ours.missing_go_to_left[inner].all()
    assert np.isinf(ours.threshold).any()  # splits of the missing rows alone


def test_diabetes_with_nan_equals_sklearn(diabetes):
    X, y, _ = diabetes
    X = with_nan(X, 0.1)
    Xb, edges, vals = binned(X)
    ours = _grow(Xb, y, edges, vals, "squared_error", world=2, max_leaf_nodes=60)
    sk = DecisionTreeRegressor(random_state=0, max_leaf_nodes=60).fit(X, y).tree_
    assert_same_tree(ours, sk)


def test_nan_at_predict_goes_where_sklearn_sends_it(pen_nan):
    """Trained without NaN, a NaN goes to the child with more training rows; trained with
    NaN, where the missing rows went: the same leaves as scikit-learn's ``apply``."""
    from sparkxml_kernels.forest.predictor import ForestPredictor

    X, y, (Xb, edges, vals) = pen_nan
    X0, _ = pendigits()
    Xq = with_nan(X0[:500], 0.3, seed=9)
    for Xfit, b in ((X0, binned(X0)), (X, (Xb, edges, vals))):
        ours = _grow(*b[:1], y, b[1], b[2], "gini", max_depth=8)
        sk = DecisionTreeClassifier(random_state=0, max_depth=8).fit(Xfit, y)
        pred = ForestPredictor.from_trees([ours], 16, 10, "gini")
        np.testing.assert_array_equal(pred.apply(Xq)[:, 0], sk.apply(Xq))
        np.testing.assert_array_equal(pred.predict_values(Xq), pred.predict_values_naive(Xq))


# ------------------------------------------------------------------ cost-complexity pruning
def test_pruning_path_and_pruned_trees_equal_sklearn(pen):
    from sparkxml_kernels.forest import pruning
    from sparkxml_kernels.forest.tree import TreeArrays

    X, y, _ = pen
    X, y = X[:1500], y[:1500]
    Xb, edges, vals = binned(X)
    ours = _grow(Xb, y, edges, vals, "gini")
    sk_path = DecisionTreeClassifier(random_state=0).cost_complexity_pruning_path(X, y)
    path = pruning.cost_complexity_pruning_path(ours.as_dict())
    np.testing.assert_array_equal(path["ccp_alphas"], sk_path.ccp_alphas)
    np.testing.assert_array_equal(path["impurities"], sk_path.impurities)
    for a in list(sk_path.ccp_alphas[1::15]) + [0.003, 1.0]:
        sk = DecisionTreeClassifier(random_state=0, ccp_alpha=a).fit(X, y)
        assert_same_tree(TreeArrays(**pruning.prune_tree(ours.as_dict(), a)), sk.tree_)
    # a best-first tree: scikit-learn rebuilds it in preorder, pruned or not
    best = _grow(Xb, y, edges, vals, "gini", max_leaf_nodes=60)
    for a in (1e-12, 0.003):
        sk = DecisionTreeClassifier(random_state=0, max_leaf_nodes=60, ccp_alpha=a).fit(X, y)
        assert_same_tree(TreeArrays(**pruning.prune_tree(best.as_dict(), a)), sk.tree_)
    # a forest's trees pruned one by one, other per-node arrays following their nodes
    two = {k: np.concatenate([v, v]) for k, v in ours.as_dict().items()}
    two["value"] = two["value"].reshape(-1, 10)
    two["bin"] = np.arange(two["feature"].size)
    two["tree_offsets"] = np.array([0, ours.node_count, 2 * ours.node_count])
    out = pruning.prune_forest(two, 0.003)
    one = pruning.prune_tree(ours.as_dict(), 0.003)
    n = one["feature"].size
    np.testing.assert_array_equal(out["tree_offsets"], [0, n, 2 * n])
    np.testing.assert_array_equal(out["feature"], np.concatenate([one["feature"]] * 2))
    kept_inner = out["bin"][:n][one["children_left"] >= 0]
    np.testing.assert_array_equal(two["feature"][kept_inner], one["feature"][
        one["children_left"] >= 0])
