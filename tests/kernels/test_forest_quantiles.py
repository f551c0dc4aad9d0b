"""Quantile regression forest kernels: leaf samples and weighted quantiles against their naive
twins, against quantile-forest's own ``calc_weighted_quantile`` on the same leaves, and the
same samples for 1 and 2 ranks."""

import numpy as np
import pytest
from _tree_data import binned, on_ranks

from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.forest import criteria, forest, histogram, quantiles
from sparkxml_kernels.forest.predictor import ForestPredictor
from sparkxml_kernels.forest.tree import SplitParams

QS = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.97]


def _data(n=600, ties=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + rng.normal(size=n) * (0.2 + np.abs(X[:, 1]))
    if ties:
        y = np.round(y)  # many equal labels within and across leaves
    Xb, edges, vals = binned(X)
    keys = (np.arange(n, dtype=np.int64) * 2654435761) ^ 0x5DEECE66D
    return X, y, Xb, edges, vals, keys


def _grow(data, w=None, world=1, n_trees=6):
    """Grow a regression forest over ``world`` ranks and gather its leaf samples; rank 0's
    (predictor, counts over all rows in the original order)."""
    X, y, Xb, edges, vals, keys = data
    n = y.size
    w = np.ones(n) if w is None else w
    p = SplitParams(criteria.criterion_id("squared_error"), n_classes=0, max_features=2,
                    max_depth=6, min_samples_leaf=3)
    order = np.random.default_rng(5).permutation(n)

    def run(r, coll):
        idx = np.arange(n) if world == 1 else np.sort(order[r::world])
        res, counts = forest.grow_forest(
            Xb[idx], np.zeros(idx.size, np.int32), y[idx], histogram.ylny(y[idx]), w[idx],
            keys[idx], p, n_trees, 3, True, 1.0, coll, vals, edges)
        route = forest.unpack_for_routing(coll.reduce_and_decide(
            np.zeros(1), lambda _: forest.pack_for_routing(res)))
        s = quantiles.gather_leaf_samples(coll, Xb[idx], counts, route, vals.shape[1] - 1,
                                          y[idx], None if np.all(w == 1) else w[idx],
                                          int(route["feature"].size))
        return res, s, idx, counts

    res, s, _, _ = run(0, LocalCollective()) if world == 1 else on_ranks(world, run)
    arrays = {k: v for k, v in res.items() if k != "bin"}
    pred = ForestPredictor.from_arrays(dict(arrays, n_features=X.shape[1], n_classes=0,
                                            criterion="squared_error", **s))
    counts = forest.bootstrap_counts(keys, 3, n_trees, True, 1.0)
    counts[:, w <= 0] = 0
    pred.route = forest.unpack_for_routing(forest.pack_for_routing(res))
    return pred, counts


def _reference(pred, X, y, counts, Xq, w=None):
    """quantile-forest's estimator from the same leaves: each training row weighs its
    bootstrap count (times its weight, rescaled) summed over the trees where it shares the
    query's leaf; ``calc_weighted_quantile`` on the labels sorted."""
    qf = pytest.importorskip("quantile_forest._quantile_forest_fast")
    train_leaves = pred.apply(X)  # float32 thresholds: an independent routing
    sw = np.ones(y.size) if w is None else w
    scale = counts.sum() / (counts * sw).sum()
    order = np.argsort(y, kind="stable")
    out = np.empty((Xq.shape[0], len(QS)))
    for i, leaves in enumerate(pred.apply(Xq)):
        wt = ((train_leaves == leaves).T * counts).sum(axis=0) * sw * scale
        out[i] = qf.calc_weighted_quantile(y[order].astype(float), wt[order].astype(float),
                                           list(QS), b"linear", True)
    return out


@pytest.fixture(scope="module")
def grown():
    data = _data()
    return data, _grow(data)


def test_leaf_entries_match_naive(grown):
    data, (pred, counts) = grown
    route = pred.route
    _, _, Xb, _, vals, _ = data
    fast = quantiles.leaf_entries(Xb, counts, route, vals.shape[1] - 1)
    slow = quantiles.leaf_entries_naive(Xb, counts, route, vals.shape[1] - 1)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    assert fast[0].size == np.count_nonzero(counts)


@pytest.mark.parametrize("ties", [False, True])
def test_quantiles_equal_quantile_forest_formula_on_the_same_leaves(ties):
    data = _data(ties=ties)
    X, y = data[0], data[1]
    pred, counts = _grow(data)
    Xq = np.random.default_rng(9).normal(size=(40, 4))
    ours = pred.predict_quantiles(Xq, QS)
    np.testing.assert_allclose(ours, _reference(pred, X, y, counts, Xq), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        ours, quantiles.predict_quantiles_naive(pred.apply(Xq), pred.samples, QS),
        rtol=0, atol=1e-12)
    # quantiles increase with q; the stored samples are each leaf's in-sample labels
    assert np.all(np.diff(ours, axis=1) >= 0)
    assert pred.samples["sample_w"].sum() == counts.sum()


def test_weighted_samples_match_naive_and_reference():
    data = _data(ties=True, seed=1)
    X, y = data[0], data[1]
    w = np.random.default_rng(2).choice([0.0, 0.5, 1.0, 3.0], size=y.size)
    pred, counts = _grow(data, w=w)
    Xq = X[:30]
    ours = pred.predict_quantiles(Xq, QS)
    np.testing.assert_allclose(
        ours, quantiles.predict_quantiles_naive(pred.apply(Xq), pred.samples, QS),
        rtol=0, atol=1e-12)
    # rows of weight 0 keep no sample; weights rescaled to the counts' total
    np.testing.assert_allclose(pred.samples["sample_w"].sum(), counts.sum(), rtol=1e-12)
    ref = _reference(pred, X, y, counts, Xq, w)
    # the reference keeps equal labels apart: with fractional weights only close
    assert np.mean(np.abs(ours - ref) < 1e-9) > 0.5


def test_same_samples_for_one_and_two_ranks():
    data = _data(n=400, ties=True, seed=3)
    one, _ = _grow(data, n_trees=4)
    two, _ = _grow(data, n_trees=4, world=2)
    a, b = one.to_arrays(), two.to_arrays()
    assert a.keys() == b.keys() and "sample_y" in a
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_bad_quantiles_and_corrupt_samples_are_refused(grown):
    _, (pred, _) = grown
    X = np.zeros((2, 4))
    for bad in ([], [0.0], [0.5, 1.0], [np.nan]):
        with pytest.raises(ValueError, match="quantiles"):
            pred.predict_quantiles(X, bad)
    arrays = pred.to_arrays()
    arrays["sample_w"] = -arrays["sample_w"]
    with pytest.raises(ValueError, match="leaf sample"):
        ForestPredictor.from_arrays(arrays)
    arrays = pred.to_arrays()
    arrays["sample_offsets"] = arrays["sample_offsets"][:-1]
    with pytest.raises(ValueError, match="leaf sample"):
        ForestPredictor.from_arrays(arrays)
    plain = {k: v for k, v in pred.to_arrays().items() if not k.startswith("sample_")}
    with pytest.raises(ValueError, match="fit it with quantiles"):
        ForestPredictor.from_arrays(plain).predict_quantiles(X, [0.5])
