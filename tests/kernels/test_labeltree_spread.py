"""Replicated label-tree training with the nodes spread over tasks
(``sparkxml_kernels.labeltree.spread``), run as the Spark tasks run it: every task gets every
row, the driver joins the nodes; the forest must be ``train_forest``'s bit for bit."""
import numpy as np
import pytest
from test_labeltree_kernels import topics

from sparkxml_kernels.labeltree import levels as lv
from sparkxml_kernels.labeltree import spread
from sparkxml_kernels.labeltree.forest import FOREST_KEYS, Prepared, check_params, train_forest


def _spread(xs, ys, d, L, trees, workers, params):
    outs, reports = [], []
    for rank in range(workers):
        seen = []
        outs.append(spread.train_spread(*xs, *ys, d, L, trees, rank, workers,
                                        report=lambda done, total: seen.append((done, total)),
                                        **params))
        reports.append(seen)
    built, ids = spread.unpack_trees(outs[0])
    weights: dict = {}
    for out in outs:
        weights.update(lv.unpack_nodes(out))
    return lv.assemble_forest(built, ids, weights), outs, reports


@pytest.mark.parametrize("params", [
    dict(max_leaf=3),
    dict(max_leaf=3, split_nodes=True, split_rows=60),  # the upper nodes over row blocks
    dict(max_leaf=2, branch=3, balanced=False, max_depth=2, loss="logistic"),
])
@pytest.mark.parametrize("workers", [1, 2, 5])
def test_spread_forest_is_the_one_task_forest(params, workers):
    xs, ys, d, L = topics(n=300, d=80, L=24)
    ref = train_forest(*xs, *ys, d, L, [0, 2], **params)
    forest, outs, reports = _spread(xs, ys, d, L, [0, 2], workers, params)
    for k in FOREST_KEYS:
        assert forest[k].dtype == ref[k].dtype, k
        np.testing.assert_array_equal(forest[k], ref[k], err_msg=k)
    # every node trained once, by one task
    nodes = [(int(t), int(g)) for o in outs for t, g in zip(o["tree"], o["node"])]
    assert len(nodes) == len(set(nodes)) == int(ref["tree_offsets"][-1])
    # only task 0 sends the structure; a task reports each tree it has nodes of, in order
    assert all("child_indptr" not in o for o in outs[1:])
    for o, seen in zip(outs, reports):
        shares = len(set(o["tree"].tolist()))
        assert seen == [(k, shares) for k in range(1, shares + 1)]


def test_node_plan_balances_the_estimated_cost():
    xs, ys, d, L = topics(n=400, d=80, L=40)
    p = check_params(dict(max_leaf=4))
    prep = Prepared(*xs, *ys, d, L, 1.0)
    trees = lv.build_trees(prep.R, prep.labels, [0, 1, 2], p)
    plan = spread.node_plan(prep, trees, 2)
    assert plan == spread.node_plan(prep, trees, 2)  # every task computes the same plan
    assert sorted(x for mine in plan for x in mine) == [
        (i, g) for i, (c, _) in enumerate(trees) for g in range(len(c))]
    # the plan's cost per task, recomputed the naive way: within the costliest node
    Y = prep.Yt.T.tocsr()
    row_nnz = np.diff(prep.X.indptr)
    cost = {}
    for i, (children, leaves) in enumerate(trees):
        under = lv.labels_under(children, leaves)
        for g in range(len(children)):
            rows = [r for r in range(prep.X.shape[0])
                    if set(Y[r].indices) & set(under[g].tolist())]
            slots = len(children[g]) or len(leaves[g])
            cost[(i, g)] = slots * int(row_nnz[rows].sum())
    loads = [sum(cost[x] for x in mine) for mine in plan]
    assert abs(loads[0] - loads[1]) <= max(cost.values())


def test_longest_first_deals_costliest_first_to_the_least_loaded():
    got = lv.longest_first([5, 1, 4, 4, 2], list("abcde"), 2)
    # a(5) -> 0; c(4) -> 1; d(4) -> 1 (4 < 5); e(2) -> 0 (5 < 8); b(1) -> 0 (7 < 8)
    assert got == [["a", "e", "b"], ["c", "d"]]
    assert lv.longest_first([], [], 3) == [[], [], []]
