"""Replicated label-tree training with the nodes spread over the tasks.

Every task of a replicated fit holds the whole training set, so it can cluster every tree
(``cluster.build_tree`` on the label representations: a few seconds) and then train any node.
The nodes of all trees and all levels are dealt to the tasks longest first on an estimate of
their cost, so the tasks finish together whatever the number of trees (one tree a task left
a task idle whenever the trees did not divide evenly, and bounded the speed-up by the number
of trees). A node's classifiers depend only on its rows in the replicated order, its label
groups and (seed, tree, node) (``nodes.train_node``), so the forest is the one-task forest
bit for bit, whichever task trains each node.

Every task computes the same plan from the same data: :func:`node_plan`. Task 0 also sends
the trees' structure back (``levels.pack_trees``); the driver joins it with every task's
:func:`levels.pack_nodes` arrays (``levels.assemble_forest``).
"""
from __future__ import annotations

from itertools import groupby
from operator import itemgetter

import numpy as np

from .forest import Prepared, check_params, split_trees
from .levels import build_trees, longest_first, pack_nodes, pack_trees
from .nodes import labels_under, node_groups, node_rows, split_node, train_node


def node_plan(prep: Prepared, trees: list, workers: int, unders: list | None = None) -> list:
    """Per task, its nodes as (tree index, node) pairs. ``unders``: per tree the labels under
    each node (``nodes.labels_under``), computed when not given.

    A node's cost is estimated as its slots (children, or leaf labels: one binary problem
    each) times the stored entries of its rows (one pass of coordinate descent over them);
    nodes go to the least loaded task, costliest first, ties by (tree, node).
    """
    row_nnz = np.diff(prep.X.indptr).astype(np.int64)
    items = []
    if unders is None:
        unders = [labels_under(children, leaves) for children, leaves in trees]
    for i, ((children, leaf_labels), under) in enumerate(zip(trees, unders)):
        for g in range(len(children)):
            slots = len(children[g]) if children[g] else len(leaf_labels[g])
            cost = slots * int(row_nnz[node_rows(prep.Yt, under[g])].sum())
            items.append((cost, i, g))
    return [sorted(mine) for mine in longest_first([c for c, _, _ in items],
                                                   [(i, g) for _, i, g in items], workers)]


def train_spread(xptr, xidx, xval, yptr, yidx, n_features: int, n_labels: int, tree_ids,
                 rank: int, workers: int, report=None, keys=None, **params) -> dict:
    """Task ``rank`` of ``workers``: cluster every tree of ``tree_ids`` on the whole training
    set (CSR rows X, Y as ``forest.train_forest`` takes them) and train this task's share of
    their nodes (:func:`node_plan`). Returns :func:`levels.pack_nodes` arrays, plus
    ``levels.pack_trees`` arrays from task 0. ``report(done, total)`` is called as the task
    finishes its share of each tree (``total``: the trees it has nodes of).
    """
    p = check_params(params)
    prep = Prepared(xptr, xidx, xval, yptr, yidx, n_features, n_labels, float(p["bias"]),
                    keys)
    ids = [int(t) for t in tree_ids]
    counts = np.diff(prep.Yt.indptr)
    n_rows = prep.X.shape[0]
    trees = build_trees(prep.R, prep.labels, ids, p)
    unders = [labels_under(children, leaves) for children, leaves in trees]
    # this task's (tree, node) pairs, sorted: grouped by tree
    shares = [(i, [g for _, g in pairs])
              for i, pairs in groupby(node_plan(prep, trees, workers, unders)[rank],
                                      key=itemgetter(0))]
    trained = []
    for done, (i, nodes) in enumerate(shares, 1):
        children, leaf_labels = trees[i]
        under = unders[i]
        for g in nodes:
            split = split_node(counts[under[g]].sum(), n_rows, p)
            trained.append((ids[i], g, train_node(
                prep.X, prep.Yt, node_rows(prep.Yt, under[g]),
                node_groups(children, leaf_labels, under, g), p, ids[i], g,
                prep.blocks if split else None)))
        if report is not None:
            report(done, len(shares))
    out = pack_nodes(trained)
    if rank == 0:
        out.update(pack_trees(trees, ids))
    return out


def unpack_trees(arrays: dict) -> tuple:
    """(trees, tree ids) from ``levels.pack_trees`` arrays."""
    trees, ids = [], []
    for tree in split_trees(arrays):
        cp, ci = tree["child_indptr"], tree["child_index"]
        lp, ll = tree["leaf_indptr"], tree["leaf_label"]
        M = len(cp) - 1
        trees.append(([ci[cp[g]:cp[g + 1]].astype(np.int64).tolist() for g in range(M)],
                      [ll[lp[g]:lp[g + 1]].astype(np.int32) for g in range(M)]))
        ids.append(int(tree["tree_ids"][0]))
    return trees, ids
