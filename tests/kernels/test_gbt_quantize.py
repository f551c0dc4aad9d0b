"""Quantised gradients (LightGBM's use_quantized_grad): the levels against their naive twin,
the int32 histogram kernels against the float kernels and the naive sums (bit for bit), and
boosting: accuracy on the LightGBM binary sample, two workers against one, threads."""
import numpy as np
import pytest
from _data import data_path
from _gbt_helpers import run_ranks

from sparkxml_kernels import threads
from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.gbt.booster import train
from sparkxml_kernels.gbt.histogram import build_histograms, interleave, n_hist_slots
from sparkxml_kernels.gbt.histogram_quantized import (
    build_histograms_quantized,
    build_histograms_quantized_naive,
    chunk_rows,
    pack_levels,
)
from sparkxml_kernels.gbt.metrics import auc_exact
from sparkxml_kernels.gbt.quantize import GradQuantizer, quantize_naive


@pytest.mark.parametrize("stochastic", [True, False])
@pytest.mark.parametrize("bins,constant", [(4, False), (4, True), (16, False), (5, False)])
def test_levels_equal_the_naive_twin(stochastic, bins, constant):
    rng = np.random.default_rng(0)
    n = 3000
    g, h = rng.standard_normal(n), rng.uniform(0.0, 0.25, n)
    ids = rng.permutation(10 * n)[:n].astype(np.int64)
    q = GradQuantizer(ids, bins, stochastic, constant, seed=5)
    gq, hq, packed, scale = q.quantize(g, h, 3, 1, LocalCollective())
    ngq, nhq, nscale = quantize_naive(g, h, ids, bins, stochastic, constant, 5, 3, 1,
                                      np.abs(g).max(), np.abs(h).max())
    assert scale == nscale
    np.testing.assert_array_equal(gq, ngq)
    np.testing.assert_array_equal(hq, nhq)
    assert np.abs(gq).max() <= bins // 2 and hq.min() >= 0 and hq.max() <= bins
    np.testing.assert_array_equal(packed, pack_levels(gq, hq))
    if constant:
        assert (hq == 1).all() and scale[1] == np.abs(h).max()
    if not stochastic:  # to the nearest level
        assert np.abs(gq * scale[0] - g).max() <= scale[0] / 2 + 1e-12


def test_stochastic_rounding_is_unbiased_and_follows_the_row_not_its_position():
    rng = np.random.default_rng(1)
    n = 200_000
    g = np.full(n, 0.3)
    g[0] = 1.0  # the maximum: the scale is 0.5, so 0.3 is 0.6 of a level
    h = np.full(n, 0.2)
    ids = np.arange(n, dtype=np.int64)
    gq, hq, _, (sg, sh) = GradQuantizer(ids, 4, seed=2).quantize(g, h, 0, 0, LocalCollective())
    assert set(np.unique(gq[1:])) == {0.0, 1.0}
    assert abs(gq[1:].mean() * sg - 0.3) < 0.005 and abs(hq.mean() * sh - 0.2) < 0.005
    perm = rng.permutation(n)
    gp, _, _, _ = GradQuantizer(ids[perm], 4, seed=2).quantize(g[perm], h[perm], 0, 0,
                                                              LocalCollective())
    np.testing.assert_array_equal(gp, gq[perm])
    g2, _, _, _ = GradQuantizer(ids, 4, seed=2).quantize(g, h, 1, 0, LocalCollective())
    assert not np.array_equal(g2, gq)  # another tree, other draws


def _binned(dtype=np.uint8, n=6000, seed=0):
    rng = np.random.default_rng(seed)
    nb = np.array([255, 3, 17, 1, 64, 2, 255], np.int32)
    b = np.column_stack([rng.integers(0, k, n) for k in nb]).astype(dtype)
    return b, nb, rng


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("features", [None, np.array([0, 2, 3, 6], np.int32)])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_int32_histograms_equal_the_float_kernels_and_the_naive_sums(
        monkeypatch, dtype, missing, features, n_threads):
    monkeypatch.setattr(threads, "MIN_PARALLEL_ROWS", 0)
    binned, nb, rng = _binned(dtype)
    if missing:
        binned[rng.random(binned.shape) < 0.07] = np.iinfo(dtype).max
    n, d = binned.shape
    bins = 127  # chunks of 515 rows: every node below is flushed several times
    gq = rng.integers(-(bins // 2), bins // 2 + 1, n).astype(float)
    hq = rng.integers(0, bins + 1, n).astype(float)
    S = n_hist_slots(nb)
    perm = rng.permutation(n).astype(np.int32)
    starts, ends = np.array([0, 2500, 2501, 2501, 4000]), np.array([2500, 2501, 2501, 4000, n])
    out = np.zeros((5, d, S, 2))
    build_histograms_quantized(binned, perm, starts, ends, pack_levels(gq, hq), out, bins,
                               features, threads.use_threads(n_threads), missing)
    ref = np.zeros_like(out)
    build_histograms(binned, perm, starts, ends, interleave(gq, hq), ref, features, 1, missing)
    assert np.array_equal(out, ref)  # integer sums are exact in float64 either way
    naive = build_histograms_quantized_naive(
        binned, [perm[s:e] for s, e in zip(starts, ends)], gq, hq, S, features)
    assert np.array_equal(out, naive)


def test_sums_beyond_an_int16_half_do_not_overflow():
    # 40,000 rows in one bin at the extreme levels: the chunks flush before 2**15 / 2**16
    n, bins = 40_000, 4
    binned = np.zeros((n, 2), np.uint8)
    gq, hq = np.full(n, -2.0), np.full(n, 4.0)
    out = np.zeros((1, 2, n_hist_slots(np.array([1, 1])), 2))
    build_histograms_quantized(binned, np.arange(n, dtype=np.int32), [0], [n],
                               pack_levels(gq, hq), out, bins, has_missing=False)
    assert chunk_rows(bins) * bins < 2 ** 16
    assert out[0, 0, 0, 0] == -2.0 * n and out[0, 0, 0, 1] == 4.0 * n


def _load(name):
    a = np.loadtxt(data_path("lightgbm_binary", name))
    return np.ascontiguousarray(a[:, 1:]), a[:, 0]


QPARAMS = dict(maxIter=100, maxDepth=6, stepSize=0.1, objective="logistic", useQuantizedGrad=True)


@pytest.mark.parametrize("renew", [False, True])
def test_quantised_boosting_keeps_the_accuracy(renew):
    Xtr, ytr = _load("binary.train")
    Xte, yte = _load("binary.test")
    edges = edges_from_sketch(sketch(Xtr, None, 256), 256)
    Xb = bin_data(Xtr, edges)
    full, _ = train(Xb, ytr, None, edges, dict(QPARAMS, useQuantizedGrad=False))
    quant, _ = train(Xb, ytr, None, edges, dict(QPARAMS, quantTrainRenewLeaf=renew))
    a_full = auc_exact(yte, full.predict_raw(Xte))
    a_quant = auc_exact(yte, quant.predict_raw(Xte))
    # measured: AUC 0.8295 float, 0.8222 with 4 levels, 0.8296 with renewed leaves
    assert a_quant >= 0.82 and abs(a_quant - a_full) < 0.01
    assert not np.array_equal(quant.value, full.value)


def _ranks_data(seed=3, n=5000, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.05] = np.nan
    z = np.nan_to_num(X)
    y = (np.sin(2 * z[:, 0]) + z[:, 1] * z[:, 2] + 0.4 * rng.standard_normal(n) > 0) * 1.0
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    return bin_data(X, edges), y, edges


@pytest.mark.parametrize("extra", [{}, {"growPolicy": "lossguide", "maxLeaves": 12,
                                        "maxDepth": 0, "subsamplingRate": 0.7}])
def test_two_workers_and_two_threads_give_the_one_worker_model_bit_for_bit(extra):
    Xb, y, edges = _ranks_data()
    params = dict(QPARAMS, maxIter=15, **dict({"maxDepth": 4}, **extra))
    ids = np.arange(len(y), dtype=np.int64)
    single, _ = train(Xb, y, None, edges, params, row_ids=ids)
    threaded, _ = train(Xb, y, None, edges, dict(params, nthread=2), row_ids=ids)
    rows = [np.arange(0, len(y), 3), np.setdiff1d(ids, np.arange(0, len(y), 3))]
    out = run_ranks(2, lambda r, c: train(Xb[rows[r]], y[rows[r]], None, edges, params,
                                          collective=c, row_ids=ids[rows[r]])[0])
    want = single.to_arrays()
    for model in (threaded, *out):
        got = model.to_arrays()
        for k, v in want.items():  # integer histograms: the same sums in any order
            np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_parameter_checks():
    Xb, y, edges = _ranks_data(n=200)
    with pytest.raises(ValueError, match="numGradQuantBins"):
        train(Xb, y, None, edges, dict(QPARAMS, numGradQuantBins=1))
    with pytest.raises(ValueError, match="numGradQuantBins"):
        train(Xb, y, None, edges, dict(QPARAMS, numGradQuantBins=200))
    with pytest.raises(ValueError, match="quantTrainRenewLeaf.*monotoneConstraints"):
        train(Xb, y, None, edges, dict(QPARAMS, quantTrainRenewLeaf=True,
                                       monotoneConstraints=(1, 0, 0, 0, 0, 0)))


@pytest.mark.parametrize("policy", [dict(grow_policy="depthwise", max_depth=4),
                                    dict(grow_policy="lossguide", max_depth=0, max_leaves=10)])
def test_compiled_one_worker_loop_grows_the_round_by_round_tree(monkeypatch, policy):
    from sparkxml_kernels.binning import n_bins_from_edges
    from sparkxml_kernels.gbt import local_grower
    from sparkxml_kernels.gbt.grower import TreeGrower, TreeParams

    Xb, y, edges = _ranks_data()
    g = 0.5 - y + 0.1 * np.sin(np.arange(len(y)))
    h = np.full(len(y), 0.25)
    gq, hq, packed, scale = GradQuantizer(np.arange(len(y)), 8).quantize(
        g, h, 0, 0, LocalCollective())
    calls = []
    real = local_grower.grow_local
    monkeypatch.setattr(local_grower, "grow_local",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    trees = []
    for compiled in (True, False):
        grower = TreeGrower(Xb, n_bins_from_edges(edges), edges, TreeParams(**policy),
                            compiled=compiled)
        trees.append(grower.grow(gq.copy(), hq.copy(), quant=(packed.copy(), scale, 8)))
    assert calls == [1]  # the first grower took the compiled loop, the second did not
    (a, la), (b, lb) = trees
    assert a.n_nodes > 7
    for k in ("feature", "bin", "left", "right", "value", "gain", "cover"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    np.testing.assert_array_equal(la, lb)


def test_sparse_bins_sum_the_same_integers_as_dense():
    import scipy.sparse as sps

    from sparkxml_kernels.gbt.binned import bin_matrix

    X = sps.random(3000, 20, density=0.15, random_state=4, format="csr")
    X.data = np.round(X.data * 6) - 2.0
    y = (np.asarray(X[:, 0].todense()).ravel() + np.asarray(X[:, 1].todense()).ravel() > 0) * 1.0
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    params = dict(QPARAMS, maxIter=8, maxDepth=4)
    dense, _ = train(bin_matrix(X, edges), y, None, edges, params)
    sparse, _ = train(bin_matrix(X, edges, sparse=True), y, None, edges, params)
    for k, v in dense.to_arrays().items():  # float kernels on the levels: the same sums
        np.testing.assert_array_equal(sparse.to_arrays()[k], v, err_msg=k)


@pytest.mark.parametrize("extra", [
    dict(objective="softmax", numClasses=3),
    dict(objective="squared_error"),
    dict(boosterType="dart", rateDrop=0.2),
    dict(treeMethod="approx"),
    dict(treeMethod="exact"),
    dict(categoricalFeatures=[0]),
    dict(objective="lambdarank"),
])
def test_quantised_boosting_with_other_options_learns(extra):
    rng = np.random.default_rng(7)
    n = 3000
    X = rng.standard_normal((n, 5))
    X[:, 0] = rng.integers(0, 6, n)
    score = np.sin(2 * X[:, 1]) + X[:, 2] + 0.5 * (X[:, 0] % 2)
    y = (score > 0) * 1.0 + (score > 1.0)
    if extra.get("objective") not in ("softmax", "lambdarank"):
        y = (score > 0) * 1.0
    if extra.get("objective") == "squared_error":
        y = score
    method = extra.get("treeMethod", "hist")
    from sparkxml_kernels.gbt.binned import bin_matrix
    from sparkxml_kernels.gbt.tree_methods import method_edges

    edges = method_edges(X, None, method, 64)
    kw = {}
    if "categoricalFeatures" in extra:
        kw["categories"] = [np.unique(X[:, 0])] + [None] * 4
    if extra.get("objective") == "lambdarank":
        kw["group_ptr"] = np.arange(0, n + 1, 30, dtype=np.int64)
    params = dict(QPARAMS, maxIter=20, maxDepth=4, maxBins=64, **extra)
    Xb = bin_matrix(X, edges, kw.get("categories"))
    quant, hq = train(Xb, y, None, edges, params, **kw)
    plain, hp = train(Xb, y, None, edges, dict(params, useQuantizedGrad=False), **kw)
    # the quantised model learns about as well as the plain one on its training rows
    assert hq["train"][-1] == pytest.approx(hp["train"][-1], rel=0.25), (hq["train"][-1],
                                                                       hp["train"][-1])
    assert hq["train"][-1] < hq["train"][0] or extra.get("objective") == "lambdarank"
