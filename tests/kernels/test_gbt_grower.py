"""Tree growth: the batched, data-parallel grower against its naive twin; partitioning;
workers simulated in-process."""
import threading

import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.collective import InProcessGroup, LocalCollective
from sparkxml_kernels.gbt.grower import TreeGrower, TreeParams, grow_tree, grow_tree_naive
from sparkxml_kernels.gbt.partition import (
    column_copy,
    partition_nodes,
    partition_nodes_naive,
    route_binned,
    route_binned_naive,
)
from sparkxml_kernels.gbt.splitting import SplitParams


def _problem(seed=0, n=3000, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 1] = rng.integers(0, 3, n)
    X[rng.random((n, d)) < 0.08 * (np.arange(d) % 2)] = np.nan
    y = np.sin(2 * np.nan_to_num(X[:, 0])) + (X[:, 1] == 2) + np.isnan(X[:, 3]) \
        + 0.3 * rng.standard_normal(n)
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    g = -(y - y.mean())
    h = rng.uniform(0.5, 1.5, n)
    return bin_data(X, edges), edges, g, h


def _assert_same_tree(a, b, rtol=1e-9):
    np.testing.assert_array_equal(a.feature, b.feature)
    np.testing.assert_array_equal(a.bin, b.bin)
    np.testing.assert_array_equal(a.threshold, b.threshold)
    np.testing.assert_array_equal(a.default_left, b.default_left)
    np.testing.assert_array_equal(a.left, b.left)
    np.testing.assert_array_equal(a.right, b.right)
    np.testing.assert_allclose(a.value, b.value, rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(a.gain, b.gain, rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(a.cover, b.cover, rtol=rtol)


@pytest.mark.parametrize("params", [
    TreeParams("depthwise", max_depth=4, learning_rate=0.3),
    TreeParams("depthwise", max_depth=6, split=SplitParams(min_child_weight=40.0,
                                                           reg_alpha=1.0)),
    TreeParams("lossguide", max_depth=0, max_leaves=13),
    TreeParams("lossguide", max_depth=3, max_leaves=0, split=SplitParams(min_split_loss=2.0)),
])
def test_grower_matches_naive(params):
    binned, edges, g, h = _problem()
    rows = np.sort(np.random.default_rng(5).choice(len(g), 2000, replace=False)).astype(np.int32)
    mask = np.ones(binned.shape[1], np.uint8)
    mask[4] = 0
    for r, m in ((None, None), (rows, mask)):
        tree, leaf = grow_tree(binned, g, h, edges, params, rows=r, feature_mask=m)
        ref, ref_leaf = grow_tree_naive(binned, g, h, edges, params, rows=r, feature_mask=m)
        _assert_same_tree(tree, ref)
        np.testing.assert_array_equal(leaf, ref_leaf)
        np.testing.assert_array_equal(leaf, route_binned(binned, tree))
        assert tree.n_nodes > 3
        if m is not None:
            assert not (tree.feature == 4).any()
        if params.grow_policy == "lossguide" and params.max_leaves:
            assert tree.n_leaves <= params.max_leaves
        depth = np.zeros(tree.n_nodes, int)
        for i in range(tree.n_nodes):
            if tree.left[i] >= 0:
                depth[tree.left[i]] = depth[tree.right[i]] = depth[i] + 1
        if params.max_depth:
            assert depth.max() <= params.max_depth


def test_root_only_trees():
    binned, edges, g, h = _problem()
    tree, leaf = grow_tree(binned, g, h, edges, TreeParams(max_depth=0, learning_rate=1.0))
    assert tree.n_nodes == 1 and (leaf == 0).all()
    assert tree.value[0] == pytest.approx(-g.sum() / (h.sum() + 1.0))
    tree, _ = grow_tree(binned, g, h, edges, TreeParams(split=SplitParams(min_child_weight=1e9)))
    assert tree.n_nodes == 1


def test_partition_and_route_match_naive():
    binned, edges, g, h = _problem(seed=1)
    rng = np.random.default_rng(2)
    part = rng.permutation(len(g)).astype(np.int32)
    starts, ends = np.array([0, 700, 2000]), np.array([700, 2000, 3000])
    feats, bins, dl = np.array([0, 3, 1]), np.array([10, 5, 0]), np.array([1, 0, 1], np.uint8)
    ref_part, ref_nl = partition_nodes_naive(binned, part, starts, ends, feats, bins, dl)
    nl = partition_nodes(binned, part, np.empty(len(g), np.int32), starts, ends, feats, bins, dl)
    np.testing.assert_array_equal(part, ref_part)
    np.testing.assert_array_equal(nl, ref_nl)
    # the column-copy kernel (what the grower runs on dense uint8 data), missing bins too
    binned = binned.copy()
    binned[rng.random(binned.shape) < 0.1] = 255
    part = rng.permutation(len(g)).astype(np.int32)
    bins = np.array([10, 5, 254])
    for dl in (np.array([1, 0, 1], np.uint8), np.array([0, 1, 0], np.uint8)):
        ref_part, ref_nl = partition_nodes_naive(binned, part, starts, ends, feats, bins, dl)
        got = part.copy()
        nl = partition_nodes(binned, got, np.empty(len(g), np.int32), starts, ends, feats,
                             bins, dl, columns=column_copy(binned))
        np.testing.assert_array_equal(got, ref_part)
        np.testing.assert_array_equal(nl, ref_nl)
    with pytest.raises(ValueError, match="columns"):
        partition_nodes(binned, part, np.empty(len(g), np.int32), starts, ends, feats, bins,
                        dl, columns=binned)
    tree, _ = grow_tree(binned, g, h, edges, TreeParams(max_depth=5))
    np.testing.assert_array_equal(route_binned(binned, tree), route_binned_naive(binned, tree))


class CountingCollective(LocalCollective):
    def __init__(self):
        self.calls = 0

    def reduce_and_decide(self, local, decide):
        self.calls += 1
        return super().reduce_and_decide(local, decide)


def test_one_round_trip_per_level():
    binned, edges, g, h = _problem()
    coll = CountingCollective()
    tree, _ = TreeGrower(binned, np.array([len(e) + 1 for e in edges]), edges,
                         TreeParams(max_depth=5), coll).grow(g, h)
    # levels 0..4 need histograms; the children at depth 5 are leaves and need none
    assert coll.calls == 5
    assert tree.n_leaves > 16


@pytest.mark.parametrize("params,split", [
    (TreeParams(max_depth=5), "interleaved"),
    (TreeParams("lossguide", max_leaves=20), "interleaved"),
    (TreeParams(max_depth=4), "one worker empty"),
])
def test_two_workers_grow_the_single_worker_tree(params, split):
    binned, edges, g, h = _problem(seed=3)
    n_bins = np.array([len(e) + 1 for e in edges], np.int32)
    mask = np.ones(binned.shape[1], np.uint8)
    single, single_leaf = TreeGrower(binned, n_bins, edges, params).grow(g, h, None, mask)
    group = InProcessGroup(2, timeout=120)
    if split == "interleaved":
        parts = [np.arange(0, len(g), 2), np.arange(1, len(g), 2)]
    else:
        parts = [np.arange(len(g)), np.arange(0)]
    out = [None, None]
    errors = []

    def work(rank):
        try:
            rows = parts[rank]
            grower = TreeGrower(binned[rows], n_bins, edges, params, group.collective(rank))
            out[rank] = grower.grow(g[rows], h[rows], None, mask)
        except Exception as e:  # pragma: no cover - surfaced below
            errors.append(e)
            group.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for rank in range(2):
        tree, leaf = out[rank]
        _assert_same_tree(tree, single, rtol=1e-9)
        np.testing.assert_array_equal(leaf, single_leaf[parts[rank]])
