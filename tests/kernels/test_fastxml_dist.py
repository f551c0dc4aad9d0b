"""Data-parallel FastXML growth (``fastxml.dist``) against the one-process kernel, with shards
as threads talking over the real socket collective. No Spark."""
from __future__ import annotations

import numpy as np
import pytest
from test_core_collective import _run_ranks
from test_fastxml_kernels import assert_forest_equal

from sparkxml.synthetic import csr_rows, make_multilabel
from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.fastxml import dist, train_forest
from sparkxml_kernels.fastxml._common import tree_seed
from sparkxml_kernels.fastxml.forest import FOREST_KEYS, take_trees
from sparkxml_kernels.fastxml.ndcg import discount_tables, label_weights
from sparkxml_kernels.fastxml.pfastre import (
    centroid_add,
    centroid_emit,
    propensity_weights,
    propensity_weights_from_counts,
    tail_centroids,
    unit_norms,
)
from sparkxml_kernels.fastxml.splice import bfs_order, splice_tree

N, D, L = 300, 150, 25
TOP_KEYS = ("children", "frontier", "w_indptr", "w_index", "w_value", "leaf_indptr",
            "leaf_label", "leaf_score", "frontier_ids", "frontier_n")


@pytest.fixture(scope="module")
def data():
    X, Y = make_multilabel(n_rows=N, n_features=D, n_labels=L, seed=5)
    return X[0], X[1], X[2], Y[0], Y[1]


def _config(data, threshold, weights=None, max_leaf=10):
    normalise = weights is None
    disc, csum = discount_tables(L, int(np.diff(data[3]).max()), normalise)
    return dist.GrowConfig(threshold, max_leaf, 100, 1.0, 1.0, disc, csum,
                           label_weights(weights, L))


def _shard(data, a, b):
    (xi, xj, xv), (yi, yj) = csr_rows((data[0], data[1], data[2]), (data[3], data[4]), a, b)
    return dist.Shard(xi, xj, xv, yi, yj, D, L)


def _grow(data, cfg, trees, cuts):
    """grow_top of ``trees`` on len(cuts) - 1 shards (threads, sockets): per rank, the tops."""
    def body(coll):
        sh = _shard(data, cuts[coll.rank], cuts[coll.rank + 1])
        return dist.run_lanes(coll, [dist.grow_top(sh, cfg, tree_seed(3, t)) for t in trees])

    world = len(cuts) - 1
    if world == 1:
        return [body(LocalCollective())]
    results, errors = _run_ranks(world, body, timeout_s=60)
    assert errors == [None] * world, errors
    return results


def _node(forest, key_ptr, keys, i):
    a, b = forest[key_ptr][i], forest[key_ptr][i + 1]
    return [forest[k][a:b] for k in keys]


def _assert_top_is_kernel_tree(top, tree):
    """Every node above the frontier is the one-process tree's node with the same id."""
    inner = np.flatnonzero(top["frontier"] < 0)
    assert np.all(inner == np.arange(len(inner)))  # whole levels, breadth first
    for i in inner:
        np.testing.assert_array_equal(top["children"][i], tree["children"][i])
        for ptr, keys in (("w_indptr", ("w_index", "w_value")),
                          ("leaf_indptr", ("leaf_label", "leaf_score"))):
            for got, want in zip(_node(top, ptr, keys, i), _node(tree, ptr, keys, i)):
                np.testing.assert_array_equal(got, want)
    # the frontier nodes are the kernel tree's nodes with those ids, with their row counts
    for node, n in zip(top["frontier_ids"], top["frontier_n"]):
        assert node < len(tree["children"]) and n > 0


@pytest.mark.parametrize("pfastre,cuts", [(False, [0, 110, N]), (False, [0, 1, 200, N]),
                                          (True, [0, 150, N])])
def test_top_levels_are_the_kernels_nodes_for_any_shards(data, pfastre, cuts):
    weights = propensity_weights(data[3], data[4], L) if pfastre else None
    cfg = _config(data, N // 4, weights)
    tree = take_trees(train_forest(*data, D, L, [1], seed=3, label_weight=weights,
                                   normalise_dcg=not pfastre), [0])
    one = _grow(data, cfg, [1], [0, N])[0][0]
    assert len(one["frontier_ids"]) >= 4  # at least two levels grew data-parallel
    _assert_top_is_kernel_tree(one, tree)
    # several shards, one of them nearly empty: the same top on every rank, and each rank's
    # frontier rows are the one-shard rows between its cuts
    for rank, (top,) in enumerate(_grow(data, cfg, [1], cuts)):
        for key in TOP_KEYS:
            np.testing.assert_array_equal(top[key], one[key], err_msg=key)
        for got, rows in zip(top["frontier_rows"], one["frontier_rows"]):
            lo, hi = cuts[rank], cuts[rank + 1]
            np.testing.assert_array_equal(got, rows[(rows >= lo) & (rows < hi)] - lo)


def _subtrees(data, top, state, weights=None):
    subs = []
    for node, rows in zip(top["frontier_ids"], top["frontier_rows"]):
        (xi, xj, xv), (yi, yj) = _take(data, rows)
        subs.append(train_forest(xi, xj, xv, yi, yj, D, L, [0], label_weight=weights,
                                 normalise_dcg=weights is None,
                                 states=[dist.subtree_seed(state, node)]))
    return subs


def _take(data, rows):
    sh = _shard(data, 0, N).take(rows)
    return ((sh["X_indptr"], sh["X_indices"], sh["X_data"]), (sh["Y_indptr"], sh["Y_indices"]))


def test_root_that_fits_gives_the_kernels_tree(data):
    # frontier = root: one subtree, seeded with the tree's own seed, is the whole kernel tree
    top = _grow(data, _config(data, N), [4], [0, 250, N])[0][0]
    assert top["frontier_ids"].tolist() == [0] and top["frontier_n"].tolist() == [N]
    state = tree_seed(3, 4)
    tree = splice_tree(top, _subtrees(data, dict(top, frontier_rows=[np.arange(N)]),
                                      state), 4)
    assert_forest_equal(tree, train_forest(*data, D, L, [4], seed=3))


def test_spliced_tree_keeps_the_top_and_routes_every_point(data):
    from sparkxml_kernels.fastxml import FastXMLPredictor

    t = 2
    top = _grow(data, _config(data, N // 4), [t], [0, N])[0][0]
    tree = splice_tree(top, _subtrees(data, top, tree_seed(3, t)), t)
    assert set(tree) == set(FOREST_KEYS)
    ch = tree["children"]
    inner = np.flatnonzero(ch[:, 0] >= 0)
    kids = ch[inner].ravel()
    # breadth-first: children after their parent, each node but the root has one parent,
    # and the ids are the breadth-first positions
    assert np.all(kids > np.repeat(inner, 2))
    assert sorted(kids.tolist()) == list(range(1, len(ch)))
    np.testing.assert_array_equal(bfs_order(ch), np.arange(len(ch)))
    ref = take_trees(train_forest(*data, D, L, [t], seed=3), [0])
    _assert_top_is_kernel_tree(top, ref)
    for i in np.flatnonzero(top["frontier"] < 0):  # the splice kept the top's nodes
        np.testing.assert_array_equal(ch[i], top["children"][i])
    # every training point lands in a leaf that it helped build (a non-empty distribution)
    leaves = FastXMLPredictor(tree, D, L, 1.0).apply(*data[:3])[:, 0]
    assert np.all(ch[leaves, 0] < 0)
    counts = np.diff(tree["leaf_indptr"])
    has_labels = np.diff(data[3]) > 0
    assert np.all(counts[leaves[has_labels]] > 0)
    # the subtrees differ from the kernel's (their own random streams)
    assert len(ch) != len(ref["children"]) or not np.array_equal(
        tree["w_value"], ref["w_value"])


def test_subtree_seed():
    assert dist.subtree_seed(12345, 0) == 12345
    seeds = {dist.subtree_seed(s, n) for s in (0, 1, 2**32 - 1) for n in range(1, 200)}
    assert len(seeds) == 3 * 199 and all(0 <= s < 2**32 for s in seeds)


def test_run_lanes_mixes_dtypes_and_lengths():
    def lane(k):
        total = 0
        for step in range(k + 1):
            got = yield dist.Fold(np.full(step + 1, k, np.float32 if k % 2 else np.int64),
                                  lambda a: a.__iadd__(1))
            total += int(got.sum())
        return total

    out = dist.run_lanes(LocalCollective(), [lane(k) for k in range(4)])
    assert out == [sum((k + 1) * (s + 1) for s in range(k + 1)) for k in range(4)]


def test_concat_csr_and_take(data):
    sh = _shard(data, 0, N)
    rows = np.array([3, 4, 10, N - 1])
    part = sh.take(rows)
    for r, row in enumerate(rows):
        a, b = data[0][row], data[0][row + 1]
        np.testing.assert_array_equal(
            part["X_indices"][part["X_indptr"][r]:part["X_indptr"][r + 1]], data[1][a:b])
    xi, xj, xv = dist.concat_csr([(part["X_indptr"], part["X_indices"], part["X_data"])] * 2, 2)
    assert len(xi) == 9 and xi[-1] == 2 * len(part["X_indices"])
    empty = dist.concat_csr([], 1)
    assert empty[0].tolist() == [0] and empty[1].size == 0


def test_streamed_centroids_and_counted_weights(data):
    xi, xj, xv, yi, yj = data
    want = tail_centroids(xi, xj, xv, yi, yj, D, L, 1.0)
    # each label's rows in order, fed in two chunks, from counts made elsewhere
    counts = np.bincount(yj, minlength=L)
    np.testing.assert_array_equal(propensity_weights_from_counts(counts, N),
                                  propensity_weights(yi, yj, L))
    Xp, Xi = xi.view(np.uint64), xj.view(np.uint32)
    norms = unit_norms(Xp, xv, np.float32(1.0))
    acc, seen = np.zeros(D + 1, np.float32), np.zeros(D + 1, np.bool_)
    touched = np.empty(D + 1, np.int64)
    idx, val = np.empty(D + 1, np.int32), np.empty(D + 1, np.float32)
    for lab in range(L):
        rows = np.flatnonzero([lab in yj[yi[r]:yi[r + 1]] for r in range(N)])
        a = np.float32(1.0 / np.float64(len(rows)))
        nt = 0
        for chunk in np.array_split(rows, 2):
            nt = centroid_add(Xp, Xi, xv, norms, chunk, a, D, np.float32(1.0), acc, seen,
                              touched, nt)
        k = centroid_emit(acc, seen, touched, nt, idx, val, 0)
        s, e = want["tail_indptr"][lab], want["tail_indptr"][lab + 1]
        np.testing.assert_array_equal(idx[:k], want["tail_index"][s:e])
        np.testing.assert_array_equal(val[:k], want["tail_value"][s:e])
