"""Level-wise label-tree training pieces (``sparkxml_kernels.labeltree.levels``), run here
the way the Spark tasks run them: representations from label groups, nodes from the rows a
task is sent, must give ``train_forest``'s forest bit for bit."""
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from test_labeltree_kernels import topics

from sparkxml_kernels.collective import InProcessGroup
from sparkxml_kernels.labeltree import levels as lv
from sparkxml_kernels.labeltree import pipeline
from sparkxml_kernels.labeltree.blocked import NUM_BLOCKS
from sparkxml_kernels.labeltree.data import label_matrix, label_representations, normalised_rows
from sparkxml_kernels.labeltree.forest import FOREST_KEYS, check_params, train_forest
from sparkxml_kernels.labeltree.nodes import row_blocks


def _levelwise(xs, ys, d, L, trees, workers, groups, params, keys, world=0, cap=None,
               part_bytes=0, **kw):
    """The level-wise forest: the split nodes (``world`` > 0: trained by ``world`` thread
    ranks holding blocks of the rows, ``pipeline``; else in one task), then the subtrees
    below them on the tasks of ``subtree_plan`` (``cap`` None: the Spark mode's, rows /
    (2 workers)), each task sent its subtrees' rows.
    Returns (forest, R, counts, seen): ``seen`` has the rows each split rank and each
    subtree task held and the plan."""
    p = check_params(params)
    X = sp.csr_matrix((xs[2], xs[1], xs[0]), shape=(len(xs[0]) - 1, d))
    Y = sp.csr_matrix((np.ones(len(ys[1])), ys[1], ys[0]), shape=(len(ys[0]) - 1, L))
    coo = Y.tocoo()
    order = np.lexsort((coo.row, coo.col))  # by label, then row order
    lab, rows = coo.col[order], coo.row[order]
    parts = []
    for grp in np.array_split(np.unique(lab), groups):
        m = np.isin(lab, grp)
        Xe = X[rows[m]]
        parts.append(lv.representations_part(Xe.indptr, Xe.indices, Xe.data, lab[m], d))
    R, labels, counts = lv.gather_representations(parts, L, d)
    built = lv.build_trees(R, labels, trees, p)
    weights, seen = {}, {"split": [], "tasks": [], "parts": 0}
    split = lv.split_nodes(built, trees, counts, p, X.shape[0])
    if world:
        assert split, "the test wants split nodes"
        for t, g, fm in _split_on_ranks(xs, ys, d, L, split, p, keys, world, seen["split"],
                                        **kw):
            weights[(t, g)] = fm
    elif split:  # in one task
        Xn = normalised_rows(*xs, d, float(p["bias"]))
        Yt = label_matrix(*ys, X.shape[0], L, bool).T.tocsr()
        out = lv.train_level(Xn, Yt, [(t, g, u, grp, True) for t, g, u, grp in split], p,
                             keys)
        weights.update(lv.unpack_nodes(lv.pack_nodes(out)))
    if cap is None:
        cap = max(1, X.shape[0] // (2 * workers))
    specs, owner = lv.subtree_plan(built, trees, counts, workers, L, p, X.shape[0], cap=cap)
    seen["specs"] = specs
    r, t = lv.row_tasks(ys[0], ys[1], owner)
    for w in range(len(specs)):
        if not specs[w]:  # every node is split
            continue
        Xw, Yw = X[r[t == w]], Y[r[t == w]]
        seen["tasks"].append(Xw.shape[0])
        Xw = normalised_rows(Xw.indptr, Xw.indices, Xw.data, d, float(p["bias"]))
        Yt = label_matrix(Yw.indptr, Yw.indices, Xw.shape[0], L, bool).T.tocsr()
        for unit in specs[w]:
            for part in lv.train_parts(Xw, Yt, unit, p, keys[r[t == w]], part_bytes):
                seen["parts"] += 1
                weights.update(lv.unpack_nodes(lv.pack_nodes(part)))
    return lv.assemble_forest(built, trees, weights), R, counts, seen


def _split_on_ranks(xs, ys, d, L, nodes, p, keys, world, held, spread=False, **kw):
    """Every rank's split nodes (``spread``: ``split_node_waves`` with wave w kept by rank
    w % world, checked against each other and returned in wave order)."""
    X = normalised_rows(*xs, d, 1.0)
    Y = label_matrix(*ys, X.shape[0], L)
    blocks = row_blocks(keys, X.shape[0])
    owner = pipeline.block_rank(blocks, world)
    group = InProcessGroup(world, timeout=60)
    results = [None] * world

    def run(r):
        rows = np.flatnonzero(owner == r)
        held.append(len(rows))
        try:
            if spread:
                results[r] = list(pipeline.split_node_waves(
                    X[rows], Y[rows].T.tocsr(), blocks[rows], nodes, p, group.collective(r),
                    keeper=lambda w: w % world == r, **kw))
            else:
                results[r] = pipeline.train_split_nodes(X[rows], Y[rows], blocks[rows],
                                                        nodes, p, group.collective(r), **kw)
        except BaseException:
            group.abort()
            raise

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(r is not None for r in results)
    if spread:  # each rank kept its own waves, and together they kept every wave once
        assert all(w % world == r for r in range(world) for w, _ in results[r])
        waves = sorted((w, t) for res in results for w, t in res)
        assert [w for w, _ in waves] == list(range(len(waves))) and len(waves) > world
        return [t for _, wave in waves for t in wave]
    for other in results[1:]:  # every rank ends with every node's weights
        for (t, g, a), (t2, g2, b) in zip(results[0], other):
            assert (t, g) == (t2, g2)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
    return results[0]


@pytest.mark.parametrize("world,kw", [(1, {}), (2, {}), (3, dict(wave_tokens=5)),
                                      (2, dict(wave_tokens=3, per_round=1)), (20, {}),
                                      (3, dict(wave_tokens=3, spread=True)),
                                      # every node split: leaves of 3 labels are cut into
                                      # parts of 2 and 1
                                      (2, dict(wave_tokens=2, every_node=True)),
                                      (3, dict(wave_tokens=2, spread=True, every_node=True))])
def test_split_nodes_on_ranks_holding_row_blocks_give_the_replicated_forest(world, kw):
    xs, ys, d, L = topics(n=300, d=80, L=24)
    keys = np.random.default_rng(6).integers(-2**62, 2**62, 300)
    params = dict(max_leaf=3, split_nodes=True, split_rows=60)
    kw = dict(kw)
    if kw.pop("every_node", False):
        params.update(split_rows=0, split_share=0.0)
    ref = train_forest(*xs, *ys, d, L, [0, 2], keys=keys, **params)
    forest, _, _, seen = _levelwise(xs, ys, d, L, [0, 2], 2, 1, params, keys, world, **kw)
    for k in FOREST_KEYS:
        np.testing.assert_array_equal(forest[k], ref[k], err_msg=k)
    held = seen["split"]
    ranks = min(world, NUM_BLOCKS)
    if ranks > 1:  # the split nodes' rows are divided: no rank holds them all
        assert max(held) < 300 and sum(held) == 300
    # a subtree root's label rows are below the split threshold, max(60, 300 / 2), and a
    # task holds subtrees of at most 300 / 4 estimated rows, or one alone
    assert all(0 < n < 150 for n in seen["tasks"])
    if world == 2 and not kw:  # a rank that keeps nothing trains the same, returns nothing
        from sparkxml_kernels.collective import LocalCollective

        p = check_params(params)
        X = normalised_rows(*xs, d, 1.0)
        Y = label_matrix(*ys, X.shape[0], L)
        R = label_representations(X, Y, d)
        built = lv.build_trees(R, np.flatnonzero(np.diff(Y.tocsc().indptr)), [0], p)
        counts = np.diff(Y.tocsc().indptr)
        split = lv.split_nodes(built, [0], counts, p, X.shape[0])
        assert split
        assert pipeline.train_split_nodes(X, Y, row_blocks(keys, 300), split, p,
                                          LocalCollective(), keep=False) == []


def test_wave_plan_bounds_a_wave_and_cuts_wide_nodes_into_parts():
    nodes = [(0, g, None, [None] * k) for g, k in enumerate([2, 2, 5, 1, 0, 3])]
    plan = pipeline.wave_plan(nodes, 4)
    assert plan == [[(0, 0, 2), (1, 0, 2)], [(2, 0, 4)], [(2, 4, 5), (3, 0, 1), (4, 0, 0)],
                    [(5, 0, 3)]]
    for wave in plan:
        assert sum(c1 - c0 for _, c0, c1 in wave) <= 4
    # every slot of every node once, in node and slot order
    assert [(i, c) for wave in plan for i, c0, c1 in wave for c in range(c0, c1)] == \
        [(i, c) for i, n in enumerate(nodes) for c in range(len(n[3]))]


@pytest.mark.parametrize("params", [
    dict(max_leaf=3),
    dict(max_leaf=3, split_nodes=True, split_rows=60),  # the upper nodes over row blocks
    dict(max_leaf=2, branch=3, balanced=False, max_depth=2, loss="logistic"),
])
@pytest.mark.parametrize("workers,groups", [(1, 1), (3, 4)])
def test_levelwise_forest_is_the_replicated_forest(params, workers, groups):
    xs, ys, d, L = topics(n=300, d=80, L=24)
    keys = np.random.default_rng(5).integers(-2**62, 2**62, 300)
    ref = train_forest(*xs, *ys, d, L, [0, 2], keys=keys, **params)
    forest, R, counts, seen = _levelwise(xs, ys, d, L, [0, 2], workers, groups, params, keys,
                                         part_bytes=4096)
    for k in FOREST_KEYS:
        assert forest[k].dtype == ref[k].dtype, k
        np.testing.assert_array_equal(forest[k], ref[k], err_msg=k)
    X = normalised_rows(*xs, d, 1.0)
    Y = label_matrix(*ys, X.shape[0], L)
    R_ref = label_representations(X, Y, d)
    assert (R != R_ref).nnz == 0
    np.testing.assert_array_equal(counts, np.diff(Y.T.tocsr().indptr))
    n_subtrees = sum(len(s) for s in seen["specs"])
    assert seen["parts"] > n_subtrees  # the classifiers came in several parts a subtree
    if params.get("split_nodes"):  # below the split nodes no task holds every row
        assert n_subtrees > 2 and max(seen["tasks"]) < 150
    else:  # nothing is split: a subtree is a tree, with all its labelled rows
        assert n_subtrees == 2


def test_subtrees_cut_into_groups_of_capped_rows_give_the_same_forest():
    xs, ys, d, L = topics(n=300, d=80, L=24)
    keys = np.arange(300)
    params = dict(max_leaf=3, split_nodes=True, split_rows=60)
    ref = train_forest(*xs, *ys, d, L, [0, 2], keys=keys, **params)
    forest, _, counts, seen = _levelwise(xs, ys, d, L, [0, 2], 2, 1, params, keys, cap=40)
    for k in FOREST_KEYS:
        np.testing.assert_array_equal(forest[k], ref[k], err_msg=k)
    assert len(seen["tasks"]) > 2 * 2  # more tasks than workers


def _plan_case():
    xs, ys, d, L = topics(n=300, d=80, L=24)
    p = check_params(dict(max_leaf=3, split_nodes=True, split_rows=60))
    X = sp.csr_matrix((np.ones(len(ys[1])), ys[1], ys[0]), shape=(300, L))
    counts = np.diff(X.T.tocsr().indptr)
    from sparkxml_kernels.labeltree.forest import Prepared

    prep = Prepared(*xs, *ys, d, L, 1.0)
    return lv.build_trees(prep.R, prep.labels, [0, 2], p), counts, p, L


def test_subtree_plan_covers_the_nodes_below_the_split_ones_once():
    built, counts, p, L = _plan_case()
    specs, owner = lv.subtree_plan(built, [0, 2], counts, 2, L, p, 300)
    split = {(t, g) for t, g, *_ in lv.split_nodes(built, [0, 2], counts, p, 300)}
    assert split and len(specs) == 2
    trained = [(t, g) for spec in specs for unit in spec for t, g, *_ in unit]
    every = {(t, g) for t, (children, _) in zip([0, 2], built) for g in range(len(children))}
    assert len(trained) == len(set(trained)) and set(trained) | split == every
    assert not set(trained) & split
    for w, spec in enumerate(specs):
        for unit in spec:
            t, root, under, _, is_split = unit[0]
            i = [0, 2].index(t)
            children, leaf_labels = built[i]
            parent = next(g for g, kids in enumerate(children) if root in kids)
            assert (t, parent) in split  # a topmost node that is not split
            assert not is_split and all(not n[4] for n in unit)
            # its nodes breadth-first: each node's children follow it
            nodes = [n[1] for n in unit]
            assert nodes[0] == root and all(nodes.index(c) > nodes.index(g)
                                            for g in nodes for c in children[g])
            assert (owner[i, under] == w).all()
    # every label lies under one subtree a tree (no leaf is split here)
    assert (owner >= 0).all()


def test_subtree_plan_cuts_consecutive_subtrees_under_the_cap():
    built, counts, p, L = _plan_case()
    specs, owner = lv.subtree_plan(built, [0, 2], counts, 2, L, p, 300, cap=40)
    est = [[int(counts[u[0][2]].sum()) for u in spec] for spec in specs]
    assert len(specs) > 2
    for e in est:  # within the cap, or one subtree alone
        assert sum(e) <= 40 or len(e) == 1
    assert [sum(e) for e in est] == sorted((sum(e) for e in est), reverse=True)
    roots = sorted(([u[0][:2] for u in spec] for spec in specs), key=lambda r: r[0])
    flat = [r for run in roots for r in run]
    assert flat == sorted(flat)  # consecutive (tree, root) runs
    # under the cap's total the plan is the workers' longest-first one
    few, _ = lv.subtree_plan(built, [0, 2], counts, 2, L, p, 300, cap=10**6)
    base, _ = lv.subtree_plan(built, [0, 2], counts, 2, L, p, 300)
    assert len(few) == 2 and [[u[0][:2] for u in s] for s in few] == [[u[0][:2] for u in s]
                                                                       for s in base]
    assert lv.consecutive_groups([5, 70, 20, 30, 10], list("abcde"), 60) == [
        ["a"], ["b"], ["c", "d", "e"]]


def test_row_tasks_sends_a_row_once_to_each_owner():
    label_task = np.array([[0, 0, 1, -1], [1, -1, 1, 0]], np.int32)
    yptr = np.array([0, 2, 3, 3, 4])
    yidx = np.array([0, 1, 3, 2])  # rows: {0, 1}, {3}, {}, {2}
    rows, tasks = lv.row_tasks(yptr, yidx, label_task)
    assert list(zip(rows.tolist(), tasks.tolist())) == [(0, 0), (0, 1), (1, 0), (3, 1)]


def test_exchange_gives_every_rank_the_visitors_weights_and_carries():
    """Rank 0's visit of token 0 changes 1 of its node's 10 columns, rank 1's of token 1
    changes 8 of them: every rank ends with both visitors' weights and carries bit for
    bit."""
    from sparkxml_kernels.labeltree.blocked import CARRY

    world, D = 2, 30
    cols = [np.arange(0, 20, 2, dtype=np.int32), np.arange(10, 20, dtype=np.int32)]
    start = np.random.default_rng(3).normal(size=D)
    group = InProcessGroup(world, timeout=30)
    results = [None] * world

    def run(r):
        tokens = [[0, c, None, start.copy(), np.full(CARRY, float(c)), None, 0, cols[c]]
                  for c in range(2)]
        changed = {}
        if r == 0:  # rank 0 visits token 0, rank 1 token 1
            before = tokens[0][3][cols[0]]
            tokens[0][3][4] = -7.25
            tokens[0][4][:] = 3.5
            changed[0] = pipeline._changes(tokens[0][3], cols[0], before)
            assert changed[0][0].tolist() == [2]
        else:
            before = tokens[1][3][cols[1]]
            tokens[1][3][cols[1][:8]] *= 1.5
            tokens[1][4][:] = np.inf
            changed[1] = pipeline._changes(tokens[1][3], cols[1], before)
        try:
            pipeline._exchange(tokens, [[0], [1]], changed, group.collective(r))
        except BaseException:
            group.abort()
            raise
        results[r] = tokens

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    want0, want1 = start.copy(), start.copy()
    want0[4] = -7.25
    want1[cols[1][:8]] *= 1.5
    for tokens in results:
        np.testing.assert_array_equal(tokens[0][3], want0)
        np.testing.assert_array_equal(tokens[1][3], want1)
        np.testing.assert_array_equal(tokens[0][4], np.full(CARRY, 3.5))
        np.testing.assert_array_equal(tokens[1][4], np.full(CARRY, np.inf))
