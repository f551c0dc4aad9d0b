"""Coordinate descent over fixed row blocks (``sparkxml_kernels.labeltree.blocked``): against
its naive twin, split into segments held by different "tasks" (bit for bit the one-process
solve), and at liblinear's optimum."""
import numpy as np
import pytest
from test_labeltree_kernels import _node_data

from sparkxml_kernels.labeltree import blocked as bl
from sparkxml_kernels.labeltree.naive import blocked_segment_naive
from sparkxml_kernels.labeltree.nodes import SQUARED_HINGE, row_blocks, row_norms2, solve_binary
from sparkxml_kernels.linear._rng import stream_state


def _grouped(seed=0, num_rows=None):
    X, y = _node_data(seed)
    if num_rows is not None:
        X, y = X[:num_rows], y[:num_rows]
    keys = np.random.default_rng(seed).integers(-2**62, 2**62, X.shape[0])
    order, boff, ids = bl.block_offsets(row_blocks(keys, X.shape[0]))
    return X[order], y[order], boff, ids


def test_block_offsets_group_rows_by_block_in_row_order():
    blocks = np.array([3, 0, 3, 1, 0, 3])
    order, boff, ids = bl.block_offsets(blocks)
    assert order.tolist() == [1, 4, 3, 0, 2, 5]
    assert boff.tolist() == [0, 2, 3, 6] and ids.tolist() == [0, 1, 3]


def test_row_blocks_are_the_key_modulo_the_block_count():
    keys = np.array([-1, 0, bl.NUM_BLOCKS + 1, 2**62 + 5], np.int64)
    assert row_blocks(keys, 4).tolist() == [bl.NUM_BLOCKS - 1, 0, 1, 5 % bl.NUM_BLOCKS]
    n = bl.NUM_BLOCKS + 2
    assert row_blocks(None, n).tolist() == list(range(bl.NUM_BLOCKS)) + [0, 1]
    with pytest.raises(ValueError, match="keys has 3 entries for 4 rows"):
        row_blocks(keys[:3], 4)


@pytest.mark.parametrize("C", [0.5, 8.0])
def test_segment_is_its_naive_twin_pass_by_pass(C):
    X, y, boff, ids = _grouped(1)
    n = X.shape[0]
    base = stream_state(0, 2, 1, 0)
    shard = bl.Shard(X, np.arange(n), y, row_norms2(X), boff, ids, C)
    alpha, index = np.zeros(n), np.arange(n, dtype=np.int64)
    active, u_ref = np.zeros(len(ids), np.int64), np.zeros(X.shape[1])
    u, carry, carry_ref = np.zeros(X.shape[1]), bl.new_carry(), bl.new_carry()
    shrunk = False
    for _ in range(12):
        shard.visit(u, base, carry)
        blocked_segment_naive(X, y, C, shard.qd, alpha, boff, ids, index, active, u_ref, base,
                              carry_ref, bl.ALL_BLOCKS)
        np.testing.assert_array_equal(shard.alpha, alpha)
        np.testing.assert_array_equal(shard.index, index)
        np.testing.assert_array_equal(shard.active, active)
        np.testing.assert_array_equal(u, u_ref)
        np.testing.assert_array_equal(carry, carry_ref)
        shrunk |= carry[bl.ACTIVE] < n
        done = bl.end_pass(carry, n, 1e-3, 50)
        assert bl.end_pass(carry_ref, n, 1e-3, 50) == done
        if done:
            break
    assert carry[bl.PASSES] >= 3 and shrunk  # several passes, shrinking included


def test_pass_order_is_a_permutation_that_changes_by_pass():
    from sparkxml_kernels.labeltree.naive import pass_order_naive

    base = stream_state(0, 1, 2, 3)
    orders = [bl.pass_order(base, p) for p in range(3)]
    for p, order in enumerate(orders):
        assert sorted(order.tolist()) == list(range(bl.NUM_BLOCKS))
        assert order.tolist() == pass_order_naive(base, p)
    assert orders[0].tolist() != orders[1].tolist()


@pytest.mark.parametrize("cuts", [[4], [1, 5], [1, 2, 3, 5, 6, 7]])
def test_segments_split_over_tasks_are_the_one_process_solve(cuts):
    X, y, boff, ids = _grouped(2)
    C, tol, it = 1.0, 1e-3, 40
    base = stream_state(0, 1, 3, 1)
    ref = bl.solve_blocked(X, y, boff, ids, C, tol, it, base)
    # "tasks" holding consecutive ranges of block ids; the weights and the carry go to the
    # task holding the next block of the pass's order
    edges = [0] + cuts + [bl.NUM_BLOCKS]
    qd = row_norms2(X)
    holder = np.zeros(bl.NUM_BLOCKS, np.int64)
    shards = []
    for t, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        holder[a:b] = t
        held = np.zeros(bl.NUM_BLOCKS, np.uint8)
        held[a:b] = 1
        k0, k1 = np.searchsorted(ids, a), np.searchsorted(ids, b)
        lo, hi = boff[k0], boff[k1]
        if t % 2:  # a copy of its rows, or rows of the whole matrix
            shards.append(bl.Shard(X[lo:hi], np.arange(hi - lo), y[lo:hi], qd[lo:hi],
                                   boff[k0:k1 + 1] - lo, ids[k0:k1], C, held=held))
        else:
            # the norms of all of X's rows, indexed by the shard's rows
            shards.append(bl.Shard(X, np.arange(lo, hi), y[lo:hi], qd,
                                   boff[k0:k1 + 1] - lo, ids[k0:k1], C, held=held))
    u, carry = np.zeros(X.shape[1]), bl.new_carry()
    hops = 0
    while True:
        while carry[bl.POS] < bl.NUM_BLOCKS:
            b = bl.pass_order(base, int(carry[bl.PASSES]))[int(carry[bl.POS])]
            shards[holder[b]].visit(u, base, carry)
            hops += 1
        if bl.end_pass(carry, X.shape[0], tol, it):
            break
    np.testing.assert_array_equal(u, ref)
    assert carry[bl.PASSES] > 1 and hops > carry[bl.PASSES] * len(shards)


def test_blocked_solve_reaches_liblinears_optimum():
    from sklearn.svm import LinearSVC

    X, y, boff, ids = _grouped(0)
    C = 2.0
    w = bl.solve_blocked(X, y, boff, ids, C, 1e-6, 2000, stream_state(0, 0, 0, 0))
    ref = LinearSVC(C=C, loss="squared_hinge", dual=True, fit_intercept=False, tol=1e-7,
                    max_iter=100000).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_.ravel(), atol=2e-4)
    # and the one-permutation solver's, from the same start
    w1 = solve_binary(X, y, SQUARED_HINGE, C, 1e-6, 2000, stream_state(0, 0, 0, 0))
    np.testing.assert_allclose(w, w1, atol=2e-4)


def test_blocked_solve_stops_at_max_iter_and_handles_no_rows():
    X, y, boff, ids = _grouped(3)
    base = stream_state(0, 0, 0, 0)
    one = bl.solve_blocked(X, y, boff, ids, 1.0, 1e-12, 1, base)
    two = bl.solve_blocked(X, y, boff, ids, 1.0, 1e-12, 2, base)
    assert np.abs(one).sum() > 0 and not np.array_equal(one, two)
    empty = bl.solve_blocked(X[:0], y[:0], np.zeros(1, np.int64), np.zeros(0, np.int64), 1.0,
                             0.1, 20, base)
    assert empty.shape == (X.shape[1],) and not empty.any()


def test_row_norms_of_a_shard_are_the_whole_matrix_rows():
    X, _, boff, _ = _grouped(4)
    np.testing.assert_array_equal(row_norms2(X[boff[2]:boff[5]]),
                                  row_norms2(X)[boff[2]:boff[5]])


def test_split_rule_takes_the_larger_of_the_floor_and_the_share():
    from sparkxml_kernels.labeltree.forest import check_params
    from sparkxml_kernels.labeltree.nodes import split_node

    p = check_params(dict(split_nodes=True, split_rows=100, split_share=0.25))
    assert split_node(100, 400, p) and not split_node(99, 400, p)  # the floor
    assert split_node(250, 1000, p) and not split_node(249, 1000, p)  # the share of the rows
    assert not split_node(10**6, 10**6, check_params(dict(split_nodes=True, loss="logistic")))
    # only the level-wise mode splits nodes: by default every node keeps one permutation
    assert not split_node(10**6, 10**6, check_params({}))
    for bad in (dict(split_rows=-1), dict(split_share=1.5), dict(split_share=-0.1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            check_params(bad)
