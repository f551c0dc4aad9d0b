"""Shared data for the tree kernel tests: pendigits and diabetes, binned as the trees bin."""
import numpy as np
from _data import data_path


def pendigits(split="pendigits"):
    """pendigits (svmlight, labels 1..10 -> 0..9, 16 integer features)."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(data_path("pendigits", split), n_features=16)
    return X.toarray(), (y - 1).astype(np.int64)


def binned(X, max_bins=65536):
    """Bins as the trees bin (NaN in the last slot of ``vals``)."""
    from sparkxml_kernels.forest import bins

    edges, vals = bins.exact_edges(X, max_bins)
    return bins.tree_bins(X, edges, vals), edges, vals


def with_nan(X, frac=0.1, features=None, seed=0):
    """A copy of X with ``frac`` of the entries of ``features`` (all by default) set to NaN."""
    rng = np.random.default_rng(seed)
    X = np.array(X, np.float64)
    cols = range(X.shape[1]) if features is None else features
    for f in cols:
        X[rng.random(X.shape[0]) < frac, f] = np.nan
    return X


def assert_same_tree(ours, sk_tree, rtol=0.0):
    """Node for node: structure, features and counts exactly; floats exactly (rtol=0) or to
    rtol."""
    assert ours.node_count == sk_tree.node_count
    for f in ("children_left", "children_right", "feature", "n_node_samples"):
        np.testing.assert_array_equal(getattr(ours, f), getattr(sk_tree, f), err_msg=f)
    inner = sk_tree.children_left >= 0  # scikit-learn leaves its leaves' flag unset
    np.testing.assert_array_equal(ours.missing_go_to_left[inner],
                                  sk_tree.missing_go_to_left[inner], err_msg="missing side")
    for f in ("threshold", "impurity", "weighted_n_node_samples", "value"):
        a, b = getattr(ours, f), getattr(sk_tree, f)
        if rtol:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, err_msg=f)
        else:
            np.testing.assert_array_equal(a, b, err_msg=f)
