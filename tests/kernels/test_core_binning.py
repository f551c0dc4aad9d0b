"""Binning: quantile sketches (accuracy, merging, transport) and the binning kernel."""
import numpy as np
import pytest

from sparkxml_kernels.binning import (
    Sketch,
    bin_data,
    bin_data_naive,
    edges_from_sketch,
    merge_sketches,
    n_bins_from_edges,
    n_real_bins,
    sketch,
)


def weighted_cdf(values, weights, x):
    """Exact weighted fraction of values <= x."""
    return weights[values <= x].sum() / weights.sum()


def test_n_real_bins_range():
    assert n_real_bins(256) == 255
    assert n_real_bins(255) == 255
    assert n_real_bins(2) == 2
    for bad in (1, 257):
        with pytest.raises(ValueError):
            n_real_bins(bad)


def test_exact_bins_for_few_distinct_values_are_midpoints():
    X = np.array([[3.0], [1.0], [2.0], [1.0], [np.nan], [10.0]])
    e = edges_from_sketch(sketch(X, None, 256), 256)
    np.testing.assert_array_equal(e[0], [1.5, 2.5, 6.5])
    # x goes to bin b with edges[b-1] < x <= edges[b]; NaN -> 255
    b = bin_data(np.array([[1.0], [1.5], [1.6], [2.5], [7.0], [np.nan], [-5.0]]), e)
    np.testing.assert_array_equal(b[:, 0], [0, 0, 1, 1, 3, 255, 0])


def test_constant_and_all_missing_features_get_no_edges():
    X = np.column_stack([np.full(20, 4.0), np.full(20, np.nan), np.arange(20.0)])
    e = edges_from_sketch(sketch(X, None, 8), 8)
    assert e[0].size == 0 and e[1].size == 0
    assert e[2].size == 7  # 8 real bins
    np.testing.assert_array_equal(n_bins_from_edges(e), [1, 1, 8])
    b = bin_data(X, e)
    assert (b[:, 0] == 0).all() and (b[:, 1] == 255).all()


def test_midpoint_never_merges_adjacent_floats():
    a = 1.0
    b = np.nextafter(a, 2.0)
    X = np.array([[a], [b], [np.inf], [-np.inf]])
    e = edges_from_sketch(sketch(X, None, 16), 16)
    bins = bin_data(X, e)[:, 0]
    assert len(set(bins.tolist())) == 4


@pytest.mark.parametrize("weighted", [False, True])
def test_sketch_accuracy_against_exact_weighted_quantiles(weighted):
    rng = np.random.default_rng(0)
    n, parts = 60_000, 6
    x = np.concatenate([rng.standard_normal(n // 2), rng.exponential(3.0, n // 2)])
    w = rng.uniform(0.1, 3.0, n) if weighted else np.ones(n)
    max_bins = 64
    n_real = n_real_bins(max_bins)
    sketches = [sketch(x[i::parts, None], w[i::parts] if weighted else None, max_bins)
                for i in range(parts)]
    merged = merge_sketches([Sketch.from_arrays(s.to_arrays()) for s in sketches])
    assert merged.exact[0] == 0  # too many distinct values: it was pruned
    e = edges_from_sketch(merged, max_bins)[0]
    assert n_real - 3 <= e.size <= n_real - 1
    ranks = np.array([weighted_cdf(x, w, t) for t in e])
    targets = np.arange(1, e.size + 1) / n_real
    # the sketch keeps 8 entries per bin; three merge levels: error well under a bin width
    assert np.abs(ranks - targets[:e.size]).max() < 0.35 / n_real
    # and the bins hold about the same weight
    b = bin_data(x[:, None], [e])[:, 0]
    mass = np.bincount(b, weights=w, minlength=e.size + 1) / w.sum()
    assert mass.max() < 1.7 / n_real and mass.min() > 0.3 / n_real


def test_merged_exact_sketch_equals_single_sketch():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 50, size=(3000, 3)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    w = rng.uniform(0.5, 2.0, 3000)
    whole = sketch(X, w, 256)
    parts = merge_sketches([sketch(X[i::4], w[i::4], 256) for i in range(4)])
    for f in range(3):
        for a, b in zip(whole.feature(f), parts.feature(f)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    assert parts.exact.all()
    for ea, eb in zip(edges_from_sketch(whole, 256), edges_from_sketch(parts, 256)):
        np.testing.assert_array_equal(ea, eb)


def test_unweighted_sketch_equals_unit_weights_bit_for_bit():
    # the sketch tasks of unweighted fits pass no weights (a plain sort per feature): the
    # summaries, and so the bin edges, must be those of unit weights exactly
    rng = np.random.default_rng(3)
    X = np.round(rng.standard_normal((20000, 4)), 2)  # ties, and one feature of few values
    X[:, 3] = rng.integers(0, 5, 20000)
    X[rng.random(X.shape) < 0.05] = np.nan
    csr = (np.arange(0, 2 * 20000 + 1, 2), np.tile([0, 2], 20000), X[:, :2].ravel(), 4)
    for data in (X, csr):
        a = sketch(data, None, 256).to_arrays()
        b = sketch(data, np.ones(20000), 256).to_arrays()
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_sketch_arrays_are_plain_and_roundtrip():
    X = np.random.default_rng(2).standard_normal((500, 4))
    s = sketch(X, None, 32)
    arrays = s.to_arrays()
    assert set(arrays) == set(Sketch.ARRAY_KEYS)
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
    s2 = Sketch.from_arrays(arrays)
    for k in ("feature_ptr", "values", "rmin", "rmax", "wmin", "exact"):
        np.testing.assert_array_equal(getattr(s, k), getattr(s2, k))
    with pytest.raises(ValueError):
        Sketch.from_arrays({k: v for k, v in arrays.items() if k != "rmax"})


def _dense_from_csr(indptr, indices, data, d):
    X = np.zeros((len(indptr) - 1, d))
    for i in range(len(indptr) - 1):
        X[i, indices[indptr[i]:indptr[i + 1]]] = data[indptr[i]:indptr[i + 1]]
    return X


def _random_csr(rng, n, d, density):
    mask = rng.random((n, d)) < density
    vals = np.round(rng.standard_normal((n, d)), 1)
    vals[rng.random((n, d)) < 0.05] = np.nan
    indptr = np.concatenate([[0], np.cumsum(mask.sum(1))]).astype(np.int64)
    indices = np.nonzero(mask)[1].astype(np.int32)
    data = vals[mask]
    return indptr, indices, data


def test_csr_sketch_and_binning_match_dense_with_zeros():
    rng = np.random.default_rng(3)
    n, d = 400, 6
    indptr, indices, data = _random_csr(rng, n, d, 0.3)
    X = _dense_from_csr(indptr, indices, data, d)
    w = rng.uniform(0.5, 1.5, n)
    sd = sketch(X, w, 16)
    sc = sketch((indptr, indices, data, d), w, 16)
    for f in range(d):
        for a, b in zip(sd.feature(f), sc.feature(f)):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    e = edges_from_sketch(sc, 16)
    np.testing.assert_array_equal(bin_data((indptr, indices, data, d), e), bin_data(X, e))


def test_bin_data_matches_naive():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((2000, 7))
    X[:, 3] = rng.integers(0, 4, 2000)
    X[rng.random(X.shape) < 0.05] = np.nan
    e = edges_from_sketch(sketch(X, None, 256), 256)
    np.testing.assert_array_equal(bin_data(X, e), bin_data_naive(X, e))
    assert bin_data(X, e).dtype == np.uint8
    assert e[3].size == 3
    e = edges_from_sketch(sketch(X, None, 2), 2)
    b = bin_data(X, e)
    np.testing.assert_array_equal(b, bin_data_naive(X, e))
    assert set(np.unique(b)) <= {0, 1, 255}
