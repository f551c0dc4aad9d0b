"""Histogram kernels against their naive twin; subtraction."""
import numpy as np
import pytest

from sparkxml_kernels.gbt.histogram import (
    build_histogram,
    build_histogram_naive,
    build_histograms,
    interleave,
    n_hist_slots,
    subtract,
)


def _data(seed=0, n=3000, d=6, n_bins=(255, 3, 17, 1, 64, 2)):
    rng = np.random.default_rng(seed)
    nb = np.array(n_bins, np.int32)
    binned = np.column_stack([rng.integers(0, b, n) for b in nb]).astype(np.uint8)
    binned[rng.random((n, d)) < 0.07] = 255
    return binned, nb, rng.standard_normal(n), rng.uniform(0.1, 1.0, n)


def test_n_hist_slots_is_odd_and_holds_missing():
    assert n_hist_slots(np.array([255, 3])) == 257
    assert n_hist_slots(np.array([2, 2])) == 3
    assert n_hist_slots(np.array([3])) == 5
    assert n_hist_slots(np.array([], np.int32)) == 3


@pytest.mark.parametrize("features", [None, np.array([0, 2, 5], np.int32)])
def test_build_histogram_matches_naive(features):
    binned, nb, g, h = _data()
    S = n_hist_slots(nb)
    rows = np.sort(np.random.default_rng(1).choice(len(g), 1111, replace=False)).astype(np.int32)
    out = np.zeros((binned.shape[1], S, 2))
    build_histogram(binned, rows, g, h, out, features)
    ref = build_histogram_naive(binned, rows, g, h, S, features)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    # every row lands in exactly one slot of every built feature
    feats = range(binned.shape[1]) if features is None else features
    for f in feats:
        np.testing.assert_allclose(out[f].sum(0), [g[rows].sum(), h[rows].sum()], rtol=1e-10)
    # odd row counts and empty nodes
    out2 = np.zeros_like(out)
    build_histogram(binned, rows[:1], g, h, out2, features)
    np.testing.assert_allclose(out2, build_histogram_naive(binned, rows[:1], g, h, S, features))
    out3 = np.zeros_like(out)
    build_histogram(binned, rows[:0], g, h, out3, features)
    assert not out3.any()


def test_batched_histograms_and_subtraction():
    binned, nb, g, h = _data(seed=2)
    n, d = binned.shape
    S = n_hist_slots(nb)
    perm = np.random.default_rng(3).permutation(n).astype(np.int32)
    starts = np.array([0, 1000, 1001, 2500])
    ends = np.array([1000, 1001, 2500, 3000])
    out = np.zeros((4, d, S, 2))
    build_histograms(binned, perm, starts, ends, interleave(g, h), out)
    for j in range(4):
        ref = build_histogram_naive(binned, perm[starts[j]:ends[j]], g, h, S)
        np.testing.assert_allclose(out[j], ref, rtol=1e-12, atol=1e-12)
    parent = np.zeros((d, S, 2))
    build_histogram(binned, np.arange(n, dtype=np.int32), g, h, parent)
    sibling = subtract(parent, out[:3].sum(0))
    np.testing.assert_allclose(sibling, out[3], atol=1e-9)


def test_layout_is_checked():
    binned, nb, g, h = _data()
    with pytest.raises(ValueError):
        build_histograms(binned, np.arange(10, dtype=np.int32), [0], [10], interleave(g, h),
                         np.zeros((1, binned.shape[1], 257, 2), order="F"))


def test_histogram_store_reuses_an_array_only_once_nothing_holds_it():
    """Rank 0's candidate arrays go back to the pool when their round is done and none of
    their nodes is held; an array still holding a node is never handed out again."""
    from sparkxml_kernels.gbt.histogram import HistogramStore

    store = HistogramStore((3, 5, 2))
    a = store.level(2)
    a[:] = 1.0
    store.hold(7, a, 0)
    store.hold(8, a, 1)
    store.done(a)
    b = store.level(2)
    assert b is not a  # a still holds nodes 7 and 8
    np.testing.assert_array_equal(store[7], np.ones((3, 5, 2)))
    store.pop(7)
    assert store.level(2) is not a  # node 8 still held
    store.pop(8)
    store.pop(8)  # forgetting twice changes nothing
    assert 8 not in store
    c = store.level(2)
    assert c is a  # free: recycled
    store.done(b)
    store.done(c)
    store.hold(1, c, 0)
    store.clear()  # end of a tree: every array free, nothing held
    assert 1 not in store
    assert {id(store.level(2)) for _ in range(3)} >= {id(b), id(c)}
    # arrays not from level() (the depth-wise grower's own buffers) are held uncounted
    buf = np.zeros((1, 3, 5, 2))
    store.hold(4, buf, 0)
    store.pop(4)
    store.done(buf)
    assert all(store.level(1) is not buf for _ in range(2))


def test_used_slot_copy_and_subtraction():
    from sparkxml_kernels.gbt.histogram import copy_used, subtract_used
    rng = np.random.default_rng(5)
    nb = np.array([5, 1, 9, 0], np.int32)
    S = n_hist_slots(nb)
    parent, child = rng.normal(size=(2, nb.size, S, 2))
    used = np.zeros((nb.size, S), bool)
    for f, b in enumerate(nb):
        used[f, :b] = True
    used[:, -1] = True
    out = np.full_like(parent, 7.0)
    subtract_used(parent, child, out, nb)
    np.testing.assert_array_equal(out[used], subtract(parent, child)[used])
    assert (out[~used] == 7.0).all()  # the slots no split search reads are left alone
    out2 = np.full_like(parent, 7.0)
    copy_used(parent, out2, nb)
    np.testing.assert_array_equal(out2[used], parent[used])
    assert (out2[~used] == 7.0).all()
