"""Threads inside a task (issue 14): every parallel GBT kernel against its serial kernel and
naive twin, and boosting that gives the same model bit for bit whatever ``nthread``."""
import numpy as np
import pytest

from sparkxml_kernels import binning, threads
from sparkxml_kernels.gbt import histogram, partition
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.histogram import (
    build_histogram_naive,
    build_histograms,
    interleave,
    n_hist_slots,
)
from sparkxml_kernels.gbt.partition import partition_nodes, partition_nodes_naive

# numba runs parallel regions on at most the machine's cores; 2 is what CI has
N_THREADS = (2, 3)


@pytest.fixture(autouse=True)
def _parallel_even_when_small(monkeypatch):
    # the kernels go serial below MIN_PARALLEL_ROWS rows; these tests use small data
    monkeypatch.setattr(threads, "MIN_PARALLEL_ROWS", 0)


def _binned(seed=0, n=4000, n_bins=(255, 3, 17, 1, 64, 2, 255)):
    rng = np.random.default_rng(seed)
    nb = np.array(n_bins, np.int32)
    binned = np.column_stack([rng.integers(0, b, n) for b in nb]).astype(np.uint8)
    binned[rng.random(binned.shape) < 0.07] = 255
    return binned, nb, rng.standard_normal(n), rng.uniform(0.1, 1.0, n)


def test_check_threads():
    assert threads.check_threads(3) == 3
    for bad in (0, -1, 1.5, "two", None):
        with pytest.raises(ValueError, match="nthread"):
            threads.check_threads(bad)
    assert threads.use_threads(10**6) == threads.max_threads()


@pytest.mark.parametrize("features", [None, np.array([0, 2, 3, 6], np.int32),
                                      np.array([5], np.int32)])
@pytest.mark.parametrize("n_threads", N_THREADS)
def test_parallel_histograms_equal_serial(features, n_threads):
    binned, nb, g, h = _binned()
    n, d = binned.shape
    S = n_hist_slots(nb)
    perm = np.random.default_rng(1).permutation(n).astype(np.int32)
    starts, ends = np.array([0, 1500, 1501, 1501, 3000]), np.array([1500, 1501, 1501, 3000, 4000])
    serial = np.zeros((5, d, S, 2))
    build_histograms(binned, perm, starts, ends, interleave(g, h), serial, features)
    par = np.zeros_like(serial)
    build_histograms(binned, perm, starts, ends, interleave(g, h), par, features,
                     threads.use_threads(n_threads))
    assert np.array_equal(par, serial)  # same additions in the same order: bit for bit
    for j in range(5):
        np.testing.assert_allclose(
            par[j], build_histogram_naive(binned, perm[starts[j]:ends[j]], g, h, S, features),
            rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lengths", [[1000], [300, 100], [5, 0, 7000, 12, 900], [0, 0]])
@pytest.mark.parametrize("n_threads", [2, 3, 8])
def test_histogram_plan_covers_each_node_feature_once(lengths, n_threads):
    n_feat = 7
    node, lo, hi, first = histogram.plan_histogram_tasks(lengths, n_feat, n_threads)
    assert first[0] == 0 and first[-1] == node.size and np.all(np.diff(first) >= 0)
    assert first.size == n_threads + 1
    seen = np.zeros((len(lengths), n_feat), int)
    for j, a, z in zip(node, lo, hi):
        seen[j, a:z] += 1
    want = (np.asarray(lengths) > 0)[:, None] * np.ones(n_feat, int)
    assert np.array_equal(seen, want)
    # the root alone is cut into one run of features per thread (up to the features)
    if lengths == [1000]:
        assert node.size == min(n_threads, n_feat)


@pytest.mark.parametrize("use_columns", [False, True])
@pytest.mark.parametrize("chunk", [7, partition.PARTITION_CHUNK])
def test_parallel_partition_equals_naive(monkeypatch, chunk, use_columns):
    monkeypatch.setattr(partition, "PARTITION_CHUNK", chunk)
    binned, _, _, _ = _binned(seed=3)
    n = binned.shape[0]
    perm = np.random.default_rng(4).permutation(n).astype(np.int32)
    starts, ends = np.array([0, 100, 101, 101, 2000]), np.array([100, 101, 101, 2000, 4000])
    feats = np.array([0, 1, 2, 4, 6], np.int32)
    bins = np.array([100, 0, 5, 30, 254], np.int32)
    dl = np.array([1, 0, 1, 0, 1], np.uint8)
    ref, ref_left = partition_nodes_naive(binned, perm, starts, ends, feats, bins, dl)
    columns = partition.column_copy(binned) if use_columns else None
    for nt in (1,) + N_THREADS:
        part = perm.copy()
        n_left = partition_nodes(binned, part, np.empty(n, np.int32), starts, ends, feats,
                                 bins, dl, threads.use_threads(nt), columns)
        assert np.array_equal(part, ref) and np.array_equal(n_left, ref_left)
    with pytest.raises(ValueError, match="scratch"):
        partition_nodes(binned, perm.copy(), np.empty(10, np.int32), starts, ends, feats,
                        bins, dl, 2)


def test_parallel_binning_equals_naive():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 5))
    X[:, 1] = rng.integers(0, 4, 3000)
    X[rng.random(X.shape) < 0.05] = np.nan
    edges = binning.edges_from_sketch(binning.sketch(X, None, 64), 64)
    ref = binning.bin_data_naive(X, edges)
    assert np.array_equal(binning.bin_data(X, edges, threads.use_threads(2)), ref)
    assert np.array_equal(binning.bin_data(X, edges), ref)


def test_grid_binning_is_exact_on_hard_values():
    # the lookup grid (binning.GRID_CELLS) against numpy's binary search: values on the
    # edges and next to them, crowded and huge edges, -0.0, infinities, constant features
    rng = np.random.default_rng(6)
    n = 20000
    cols = [rng.standard_normal(n), np.exp(4 * rng.standard_normal(n)),
            rng.integers(0, 3, n).astype(float), np.full(n, 2.5),
            np.concatenate([rng.standard_normal(n - 4), [1e300, -1e300, 0.0, -0.0]]),
            rng.standard_normal(n) * 1e-300,
            np.concatenate([rng.standard_normal(n - 2), [np.inf, -np.inf]])]
    X = np.column_stack(cols)
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    probes = np.concatenate([np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(
        e, -np.inf)]) for e in edges] + [[np.inf, -np.inf, np.nan, 0.0, -0.0]])
    Xp = np.vstack([X, np.tile(probes[:, None], (1, X.shape[1]))])
    ref = binning.bin_data_naive(Xp, edges)
    assert np.array_equal(binning.bin_data(Xp, edges), ref)
    assert np.array_equal(binning.bin_data(Xp, edges, threads.use_threads(2)), ref)


def _data(n=3000, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(n) > 0)
    X[rng.random(X.shape) < 0.05] = np.nan
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    return X, binning.bin_data(X, edges), y.astype(np.float64), edges


def _same(a, b):
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k], equal_nan=np.asarray(a[k]).dtype.kind == "f") for k in a)


@pytest.mark.parametrize("params", [
    dict(objective="logistic", maxDepth=5),
    dict(objective="squared_error", growPolicy="lossguide", maxDepth=0, maxLeaves=24,
         subsamplingRate=0.7, colsampleByTree=0.6),
])
def test_boosting_is_identical_whatever_nthread(params):
    X, Xb, y, edges = _data()
    p = dict(params, maxIter=8, stepSize=0.3)
    fits = {nt: train(Xb, y, None, edges, dict(p, nthread=nt)) for nt in (1, 2, 3)}
    models = {nt: f[0] for nt, f in fits.items()}
    ref = models[1].to_arrays()
    assert models[1].n_trees == 8
    for nt in (2, 3):
        assert _same(models[nt].to_arrays(), ref), f"nthread={nt} grew a different model"
        assert fits[nt][1]["train"] == fits[1][1]["train"]  # the training metric too
    # prediction with threads: the same scores as the serial kernel and the naive twin
    pred = models[1]
    raw = pred.predict_raw(X)
    assert np.array_equal(pred.predict_raw(X, n_threads=threads.use_threads(2)), raw)
    np.testing.assert_allclose(raw, pred.predict_raw_naive(X), rtol=1e-12, atol=1e-12)
    import scipy.sparse as sp

    Xs = sp.csr_matrix(np.nan_to_num(X, nan=0.0))
    assert np.array_equal(pred.predict_raw(Xs, n_threads=2), pred.predict_raw(Xs))


@pytest.mark.parametrize("weighted", [False, True])
def test_parallel_logistic_gradients_equal_serial(weighted):
    # the threaded gradients and log loss (loss._logistic_parallel) bit for bit as the serial
    # kernel, and close to the metric computed on its own (metrics.py)
    from sparkxml_kernels.gbt.loss import make_loss
    from sparkxml_kernels.gbt.metrics import metric_from_stats, metric_stats

    rng = np.random.default_rng(7)
    n = 5000
    y = (rng.random(n) < 0.4).astype(np.float64)
    raw = 3 * rng.standard_normal(n)
    raw[:3] = [40.0, -40.0, 0.0]  # clipped probabilities
    w = rng.uniform(0, 2, n) if weighted else None
    out = {}
    for nt in (1, 2):
        loss = make_loss("logistic")
        loss.n_threads = threads.use_threads(nt)
        g, h = np.empty(n), np.empty(n)
        stats = loss.gradients_and_stats(y, raw, w, g, h, None, "logloss", w)
        g2, h2 = np.empty(n), np.empty(n)
        assert loss.gradients_and_stats(y, raw, w, g2, h2, None, None, None) is None
        assert np.array_equal(g, g2) and np.array_equal(h, h2)
        out[nt] = (g, h, stats)
    for a, b in zip(out[1], out[2]):
        assert np.array_equal(a, b)
    np.testing.assert_allclose(metric_from_stats("logloss", out[2][2]),
                               metric_from_stats("logloss", metric_stats("logloss", y, raw, w)),
                               rtol=1e-6)  # (clipping computed differently)


def test_booster_rejects_bad_nthread():
    _, Xb, y, edges = _data(n=200)
    with pytest.raises(ValueError, match="nthread"):
        train(Xb, y, None, edges, dict(maxIter=1, nthread=0))


def test_leaf_index_and_leaf_values_on_threads_equal_serial():
    from sparkxml_kernels.gbt import booster

    rng = np.random.default_rng(8)
    n = 50000
    part = rng.permutation(n).astype(np.int32)
    cuts = np.sort(rng.choice(np.arange(1, n), 40, replace=False))
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    ends = np.concatenate([cuts, [n]]).astype(np.int64)
    order = rng.permutation(starts.size)  # leaves in any order of their slices
    starts, ends = starts[order], ends[order]
    leaves = rng.permutation(200)[:starts.size].astype(np.int32)
    ref = np.empty(n, np.int32)
    for s, e, leaf in zip(starts, ends, leaves):
        ref[part[s:e]] = leaf
    for kernel in (partition._leaf_index, partition._leaf_index_parallel):
        out = np.full(n, -1, np.int32)
        kernel(part, starts, ends, leaves, out)
        assert np.array_equal(out, ref)
    value = rng.standard_normal(200)
    raw = rng.standard_normal((n, 3))
    want = raw.copy()
    want[:, 1] += value[ref]
    for nt in (1, 2):
        got = raw.copy()
        booster.add_leaf_values(got, 1, value, ref, threads.use_threads(nt))
        assert np.array_equal(got, want)
    g, h = rng.standard_normal(n), rng.random(n)
    assert np.array_equal(interleave(g, h, n_threads=2), interleave(g, h))


@pytest.mark.parametrize("n_threads", (1,) + N_THREADS)
def test_histograms_without_missing_bins_skip_the_check(n_threads):
    # has_missing=False (dense data with no NaN, histogram.has_missing_bins) must give the
    # same sums as the checking kernels, serial and threaded
    binned, nb, g, h = _binned(seed=9)
    assert histogram.has_missing_bins(binned)
    binned[binned == 255] = 0
    assert not histogram.has_missing_bins(binned)
    n, d = binned.shape
    S = n_hist_slots(nb)
    perm = np.random.default_rng(2).permutation(n).astype(np.int32)
    starts, ends = np.array([0, 1000, 1001]), np.array([1000, 1001, 4000])
    nt = threads.use_threads(n_threads)
    ref = np.zeros((3, d, S, 2))
    build_histograms(binned, perm, starts, ends, interleave(g, h), ref, None, nt)
    got = np.zeros_like(ref)
    build_histograms(binned, perm, starts, ends, interleave(g, h), got, None, nt,
                     has_missing=False)
    assert np.array_equal(got, ref)
