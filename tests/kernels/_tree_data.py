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


def pen_small_data():
    """2500 pendigits rows with 10% NaN in features 0-3, binned, with row content keys."""
    X, y = pendigits()
    X, y = with_nan(X[:2500], 0.1, range(4)), y[:2500]
    Xb, edges, vals = binned(X)
    keys = (np.arange(len(y), dtype=np.int64) * 2654435761) ^ 0x5DEECE66D
    return X, y, Xb, edges, vals, keys


def forest_grown(data, world=1, small_rows=None, n_trees=8, crit="gini",
                 max_message_bytes=64 << 20, grow=None, **kw):
    """``forest.grow_forest`` on ``data`` (``pen_small_data``'s layout) over ``world``
    in-process ranks holding a random spread of the rows; ``kw``: ``SplitParams`` fields,
    ``grow``: more ``grow_forest`` arguments. Returns rank 0's (arrays, counts)."""
    from sparkxml_kernels.collective import LocalCollective
    from sparkxml_kernels.forest import criteria, forest, histogram
    from sparkxml_kernels.forest.tree import SplitParams

    X, y, Xb, edges, vals, keys = data
    c = criteria.criterion_id(crit)
    yy = y.astype(np.float64)
    K, cls, grow = (int(y.max()) + 1 if c <= 1 else 0), y.astype(np.int32), dict(grow or {})
    if c == criteria.ABSOLUTE_ERROR:  # per-label sums over the distinct targets
        grow["yv"] = np.unique(yy)
        cls, K = np.searchsorted(grow["yv"], yy).astype(np.int32), grow["yv"].size
    p = SplitParams(c, n_classes=K, max_features=kw.pop("max_features", 4), **kw)
    args = dict(params=p, n_trees=n_trees, seed=11, bootstrap=True, rate=1.0, vals=vals,
                edges=edges, small_rows=small_rows, max_message_bytes=max_message_bytes,
                **grow)
    if world == 1:
        return forest.grow_forest(Xb, cls, yy, histogram.ylny(yy),
                                  np.ones(len(y)), keys, collective=LocalCollective(), **args)
    order = np.random.default_rng(5).permutation(len(y))  # any spread of rows

    def run(r, coll):
        idx = np.sort(order[r::world])
        return forest.grow_forest(Xb[idx], cls[idx], yy[idx],
                                  histogram.ylny(yy[idx]), np.ones(idx.size), keys[idx],
                                  collective=coll, **args)

    return on_ranks(world, run)


def on_ranks(world, fn):
    """``fn(rank, collective)`` on ``world`` in-process ranks (threads, in lockstep); rank
    0's result. An error on any rank aborts the group and fails the test."""
    import threading

    from sparkxml_kernels.collective import InProcessGroup

    group, out, errs = InProcessGroup(world, timeout=60), [None] * world, []

    def run(r):
        try:
            out[r] = fn(r, group.collective(r))
        except BaseException as e:  # pragma: no cover - reported below
            errs.append(e)
            group.abort()

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errs, errs
    return out[0]


def same_arrays(a, b):
    """Two dicts of arrays equal key for key, bit for bit."""
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
