"""scikit-learn's RandomForestClassifier replayed (``forest.replay``): every tree equal to
its forest's, node for node and bit for bit, for each way scikit-learn 1.9 weighs and draws
the rows."""
import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from _tree_data import assert_same_tree, with_nan  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.ensemble._forest import _generate_sample_indices  # noqa: E402

from sparkxml_kernels.forest.replay import (  # noqa: E402
    n_bootstrap,
    replay_trees,
    sample_counts,
    tree_seeds,
)
from sparkxml_kernels.forest.tree import SplitParams  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return with_nan(X.astype(np.float64), 0.1, range(8), seed=1), y


def test_seeds_and_samples_are_sklearns(digits):
    X, y = digits
    rf = RandomForestClassifier(n_estimators=5, random_state=3).fit(X[:50], y[:50])
    seeds = tree_seeds(3, 5)
    assert seeds == [e.random_state for e in rf.estimators_]
    w = np.random.default_rng(0).random(len(y))
    for s in seeds:
        for weights, rate in ((None, 1.0), (w, 1.0), (None, 0.3), (w, 0.3)):
            n_boot = n_bootstrap(len(y), rate, weights)
            idx = _generate_sample_indices(s, len(y), n_boot, weights)
            np.testing.assert_array_equal(sample_counts(s, len(y), n_boot, weights),
                                          np.bincount(idx, minlength=len(y)))


@pytest.mark.parametrize("kw, weighted", [
    (dict(class_weight="balanced_subsample"), False),
    (dict(class_weight="balanced_subsample"), True),
    (dict(class_weight={0: 2.0, 3: 0.5}), False),
    (dict(class_weight="balanced"), True),
    (dict(class_weight="balanced_subsample", bootstrap=False), False),
    (dict(class_weight="balanced_subsample", bootstrap=False), True),
    (dict(bootstrap=False), True),
    (dict(max_samples=0.5), True),
    (dict(criterion="entropy", max_depth=6, min_samples_leaf=3), False),
    (dict(max_leaf_nodes=30), False),
])
def test_trees_equal_sklearns_forest(digits, kw, weighted):
    X, y = digits
    sw = np.random.default_rng(0).integers(1, 4, len(y)).astype(np.float64) if weighted \
        else None
    rf = RandomForestClassifier(n_estimators=3, random_state=0, **kw).fit(X, y,
                                                                           sample_weight=sw)
    cw = kw.get("class_weight")
    if isinstance(cw, dict):  # expanded per class, as the estimator passes it
        cw = [cw.get(c, 1.0) for c in range(10)]
    p = SplitParams(1 if kw.get("criterion") == "entropy" else 0, n_classes=10,
                    max_features=int(np.sqrt(X.shape[1])),
                    max_depth=kw.get("max_depth") or 2**31 - 1,
                    min_samples_leaf=kw.get("min_samples_leaf", 1),
                    max_leaf_nodes=kw.get("max_leaf_nodes") or 0)
    # trees grown out of order, one at a time: each depends only on its id
    boot, rate = kw.get("bootstrap", True), kw.get("max_samples") or 1.0
    got = dict(replay_trees(X, y, sw, cw, p, 0, 3, [2, 0], boot, rate))
    got.update(replay_trees(X, y, sw, cw, p, 0, 3, [1], boot, rate))
    for t, est in enumerate(rf.estimators_):
        assert_same_tree(got[t], est.tree_)


@pytest.mark.parametrize("kw", [dict(), dict(class_weight="balanced", max_samples=0.6)])
def test_out_of_bag_score_is_sklearns(digits, kw):
    """Trees added one by one, in tree order: scikit-learn's oob_decision_function_ and
    oob_score_."""
    from sparkxml_kernels.forest.replay import oob_score

    X, y = digits
    rf = RandomForestClassifier(n_estimators=6, random_state=4, oob_score=True, **kw).fit(X, y)
    cw, rate = kw.get("class_weight"), kw.get("max_samples", 1.0)
    p = SplitParams(0, n_classes=10, max_features=8)
    sums, n_pred = np.zeros((len(y), 10)), np.zeros(len(y), np.int64)
    replay_trees(X, y, None, cw, p, 4, 6, range(6), True, rate, oob=(sums, n_pred))
    score, decision = oob_score(sums, n_pred, y)
    np.testing.assert_array_equal(decision, rf.oob_decision_function_)
    assert score == rf.oob_score_
