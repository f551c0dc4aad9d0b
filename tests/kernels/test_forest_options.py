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
from sparkxml_kernels.forest.splitter import sklearn_seed  # noqa: E402
from sparkxml_kernels.forest.tree import SplitParams  # noqa: E402


@pytest.fixture(scope="module")
def pen_small():
    return pen_small_data()


# ------------------------------------------------------------------ balanced_subsample
def test_balanced_subsample_weights_and_trees_equal_sklearns_forest():
    """Given scikit-learn's bootstrap sample of each tree, the weights are its forest's bit
    for bit, and the tree grown with them and the tree's splitter seed is scikit-learn's
    node for node. Depth 4: the weights are not integers, so deeper down candidate splits
    within rounding of each other occur, and scikit-learn's summation order picks one."""
    X, y = pendigits()
    n = len(y)
    Xb, edges, vals = binned(X)
    rf = RandomForestClassifier(n_estimators=4, class_weight="balanced_subsample",
                                max_depth=4, random_state=0).fit(X, y)
    yy = y.astype(np.float64)
    for est in rf.estimators_:
        idx = _generate_sample_indices(est.random_state, n, n, None)
        counts = np.bincount(idx, minlength=n)
        w = counts * subsample_class_weights(y, counts[None], 10)[0, y]
        np.testing.assert_array_equal(w, counts * compute_sample_weight("balanced", y,
                                                                        indices=idx))
        p = SplitParams(0, n_classes=10, max_features=4, max_depth=4)
        ours = builder.grow_tree(Xb, y.astype(np.int32), yy, histogram.ylny(yy), w, p,
                                 LocalCollective(), vals, edges, sklearn_seed(est.random_state))
        assert_same_tree(ours, est.tree_, rtol=1e-12)
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
