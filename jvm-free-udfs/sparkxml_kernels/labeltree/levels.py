"""Level-wise training of label-tree forests: the pieces Spark tasks and the driver run.

The replicated kernel (``forest.train_forest``) holds the whole training set. Level-wise
training splits the same computation so that no task needs it, and gives the forest
``train_forest`` gives with the same params bit for bit (the Spark level-wise mode sets
``split_nodes``, which the replicated mode leaves off: see ``nodes.split_node``):

1. **Label representations** (:func:`representations_part`). The rows, exploded to one copy
   per label and ordered by (label, row order), are cut into groups of whole labels; each
   group's rows of ``R`` are ``data.label_representations`` of those rows. A label's row
   sums its rows in the row order, exactly as the product over all rows does, so
   :func:`gather_representations` gives the replicated ``R``.
2. **Trees** (:func:`build_trees`): the clustering uses ``R`` only (``cluster.build_tree``).
3. **Classifiers, a subtree at a time** (:func:`subtree_plan`, :func:`train_parts`). The
   nodes that are not split form subtrees; each is given to one task, and a row goes to
   each task owning a subtree it belongs to (a label of the row lies under the subtree's
   root); the task orders its rows as the replicated task does and trains each node of its
   subtrees on the node's rows (``nodes.train_node``). A node's classifiers depend only on
   its rows in that order, its label groups and (seed, tree, node), so they are the
   replicated ones. The split nodes (:func:`split_nodes`) are trained before, by
   ``pipeline``.
4. :func:`pack_nodes` / :func:`unpack_nodes` carry the trained nodes back as flat arrays and
   :func:`assemble_forest` lays them out as ``forest``'s arrays.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .cluster import build_tree
from .data import label_representations, normalised_rows
from .forest import concat_forests, tree_arrays
from .nodes import labels_under, node_groups, node_rows, row_blocks, split_node, train_node

# a node without classifiers (feature-major: no features, one entry pointer)
_EMPTY = (np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(0, np.int32),
          np.zeros(0, np.float32))


def representations_part(xptr, xidx, xval, lab, n_features: int):
    """Rows of ``R`` for one group of whole labels.

    ``(xptr, xidx, xval)``: the exploded rows, ordered by (label, row order); ``lab`` (int,
    one per row): each copy's label. Returns (labels int64 ascending, counts int64 (rows per
    label), R_part CSR float64 (len(labels), n_features)).
    """
    lab = np.asarray(lab, np.int64)
    labels, inv, counts = np.unique(lab, return_inverse=True, return_counts=True)
    X = normalised_rows(xptr, xidx, xval, n_features, 0.0)
    Y = sp.csr_matrix((np.ones(len(lab)), inv.astype(np.int32).ravel(),
                       np.arange(len(lab) + 1, dtype=np.int64)), shape=(len(lab), len(labels)))
    return labels, counts.astype(np.int64), label_representations(X, Y, n_features)


def gather_representations(parts, n_labels: int, n_features: int):
    """(R (n_labels, n_features) CSR float64, labels with rows int32 ascending, counts int64
    (n_labels,)) from :func:`representations_part` results covering disjoint labels."""
    lens = np.zeros(n_labels, np.int64)
    counts = np.zeros(n_labels, np.int64)
    rows = {}
    for labels, cnt, R in parts:
        R = sp.csr_matrix(R)
        for q, label in enumerate(labels):
            a, b = int(R.indptr[q]), int(R.indptr[q + 1])
            rows[int(label)] = (R.indices[a:b], R.data[a:b])
            lens[label] = b - a
            counts[label] = cnt[q]
    order = sorted(rows)
    indptr = np.zeros(n_labels + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    R = sp.csr_matrix((cat([rows[k][1] for k in order], np.float64),
                       cat([rows[k][0] for k in order], np.int32), indptr),
                      shape=(n_labels, n_features))
    return R, np.asarray(order, np.int32), counts


def build_trees(R: sp.csr_matrix, labels: np.ndarray, tree_ids, params: dict) -> list:
    """Per tree id, (children, leaf_labels) as ``cluster.build_tree`` returns them."""
    p = params
    return [build_tree(R, labels, int(p["branch"]), bool(p["balanced"]), int(p["max_leaf"]),
                       int(p["max_depth"]), float(p["cluster_eps"]), int(p["seed"]), int(t))
            for t in tree_ids]


def node_depths(children: list) -> np.ndarray:
    """Depth of each node (root 0) of a breadth-first tree."""
    depth = np.zeros(len(children), np.int64)
    for g, kids in enumerate(children):
        for c in kids:
            depth[c] = depth[g] + 1
    return depth


def subtree_plan(trees: list, tree_ids, counts: np.ndarray, workers: int, n_labels: int,
                 params: dict, n_rows: int, cap: int = 0):
    """The nodes below the split nodes, a subtree at a time, and who trains them.

    A *subtree* is a node that is not split (``nodes.split_node`` on its labels' row counts
    and the training set's ``n_rows``, as ``train_forest`` decides it with the same params)
    whose parent is split or that is a root, with every node under it: a node's label rows
    are at least its children's, so the nodes that are not split are whole subtrees. Each
    subtree goes to one task, which holds the subtree root's rows (a node's rows are a subset
    of its parent's) and trains all its nodes; the rows travel once for all the levels.

    Returns (specs, label_task): ``specs[w]`` is task w's list of subtrees, each a list of
    (tree, node, labels under it int32, its slots' label groups, False) breadth-first from
    its root; ``label_task`` int32 (len(trees), n_labels): per tree, the task owning the
    subtree of each label (-1: the label's leaf is split). A subtree's estimated rows are
    the sum of its root's labels' row counts (at least its rows). Where a node is trained
    never changes its classifiers.

    The subtrees go to ``workers`` tasks, longest first on their estimated rows (ties by
    (tree, root)), unless ``cap`` > 0 and their estimated rows exceed ``workers * cap``: then
    they are cut, in (tree, root) order (neighbouring subtrees, which share rows), into
    consecutive groups of at most ``cap`` estimated rows (a subtree above it alone), one task
    each, costliest group first (Spark runs them ``workers`` at a time, in that order).
    """
    units = []
    for i, (children, leaf_labels) in enumerate(trees):
        under = labels_under(children, leaf_labels)
        split = [split_node(int(counts[under[g]].sum()), n_rows, params)
                 for g in range(len(children))]
        parent = np.full(len(children), -1, np.int64)
        for g, kids in enumerate(children):
            parent[kids] = g
        for root in range(len(children)):
            if split[root] or (parent[root] >= 0 and not split[parent[root]]):
                continue
            nodes, q = [root], 0
            while q < len(nodes):  # breadth-first below the root
                nodes += list(children[nodes[q]])
                q += 1
            unit = [(int(tree_ids[i]), g, np.asarray(under[g], np.int32),
                     [np.asarray(x, np.int32)
                      for x in node_groups(children, leaf_labels, under, g)], False)
                    for g in nodes]
            units.append((int(counts[under[root]].sum()), i, under[root], unit))
    costs = [u[0] for u in units]
    if cap > 0 and sum(costs) > workers * cap:
        groups_of = consecutive_groups(costs, units, cap)
        groups_of.sort(key=lambda grp: -sum(u[0] for u in grp))  # stable: ties in order
    else:
        groups_of = longest_first(costs, units, workers)
    label_task = np.full((len(trees), n_labels), -1, np.int32)
    specs: list = [[] for _ in groups_of]
    for w, mine in enumerate(groups_of):
        for _, i, under, unit in mine:
            specs[w].append(unit)
            label_task[i, under] = w
    return specs, label_task


def split_nodes(trees: list, tree_ids, counts: np.ndarray, params: dict, n_rows: int) -> list:
    """Every split node of the forest (``nodes.split_node``), by (depth, tree, node): the
    (tree id, node, labels under it int32, its slots' label groups) that
    ``pipeline.train_split_nodes`` takes. A node's label rows are at least its children's,
    so the split nodes are the top of each tree (:func:`subtree_plan` takes the rest)."""
    out = []
    for i, (children, leaf_labels) in enumerate(trees):
        under = labels_under(children, leaf_labels)
        depth = node_depths(children)
        for g in range(len(children)):
            if split_node(int(counts[under[g]].sum()), n_rows, params):
                out.append((int(depth[g]), int(tree_ids[i]), g, np.asarray(under[g], np.int32),
                            [np.asarray(x, np.int32)
                             for x in node_groups(children, leaf_labels, under, g)]))
    return [n[1:] for n in sorted(out, key=lambda n: n[:3])]


def consecutive_groups(costs, items: list, cap: int) -> list:
    """``items`` cut, in order, into consecutive groups whose costs sum to at most ``cap``
    (an item above it alone)."""
    out: list = []
    load = 0
    for cost, item in zip(costs, items):
        if not out or load + cost > cap:
            out.append([])
            load = 0
        out[-1].append(item)
        load += cost
    return out


def longest_first(costs, items: list, workers: int) -> list:
    """``items`` dealt to ``workers`` tasks: costliest first (ties in the given order), each
    to the task with the least cost so far (the lowest rank on ties); per task its items in
    the order dealt. A cost below 1 counts as 1."""
    order = sorted(range(len(items)), key=lambda q: (-costs[q], q))
    load = np.zeros(workers, np.int64)
    out: list = [[] for _ in range(workers)]
    for q in order:
        w = int(np.argmin(load))
        load[w] += max(int(costs[q]), 1)
        out[w].append(items[q])
    return out


def row_tasks(yptr, yidx, label_task: np.ndarray):
    """(row, task) pairs, int64 each, sorted by row then task: every task owning a node a
    row belongs to, once."""
    yptr = np.asarray(yptr, np.int64)
    yidx = np.asarray(yidx, np.int64)
    row_of = np.repeat(np.arange(len(yptr) - 1), np.diff(yptr))
    tasks = label_task[:, yidx]  # (trees, entries)
    rows = np.broadcast_to(row_of, tasks.shape).ravel()
    tasks = tasks.ravel().astype(np.int64)
    keep = tasks >= 0
    if not keep.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    width = int(tasks.max()) + 1
    pair = np.unique(rows[keep] * width + tasks[keep])
    return pair // width, pair % width


def train_level(X: sp.csr_matrix, Yt: sp.csr_matrix, spec: list, params: dict,
                keys=None) -> list:
    """Train a task's nodes on its rows (in the replicated task's row order).

    ``X``: the rows as ``data.normalised_rows`` gives them (with ``params``' bias); ``Yt``:
    their label matrix transposed (labels x rows: ``data.label_matrix(...).T``, its
    structure only is read, so bool does); ``spec``: nodes as (tree, node, labels under
    it, slot groups, split), e.g. a subtree of :func:`subtree_plan`; ``keys``: the rows'
    content keys (``forest.train_forest``'s). Returns [(tree, node, feature-major
    classifiers)] in ``spec`` order."""
    return [item for part in train_parts(X, Yt, spec, params, keys, 0) for item in part]


def train_parts(X: sp.csr_matrix, Yt: sp.csr_matrix, spec: list, params: dict, keys=None,
                part_bytes: int = 0):
    """:func:`train_level` in parts: yields lists of trained nodes, a part ending once its
    classifiers reach ``part_bytes`` (0: one part), so that a task sends a subtree's
    classifiers on as they come instead of holding them all."""
    blocks = row_blocks(keys, X.shape[0])
    part: list = []
    size = 0
    for tree, g, under, groups, split in spec:
        fm = train_node(X, Yt, node_rows(Yt, under), groups, params, tree, g,
                        blocks if split else None)
        part.append((tree, g, fm))
        size += sum(a.nbytes for a in fm)
        if part_bytes and size >= part_bytes:
            yield part
            part, size = [], 0
    if part:
        yield part


def pack_nodes(trained: list) -> dict:
    """Flat arrays of :func:`train_level` results: ``tree``, ``node``, ``n_feature`` (per
    node), ``feature``, ``n_entry`` (per feature), ``slot``, ``value``."""
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    return {"tree": np.array([t for t, _, _ in trained], np.int32),
            "node": np.array([g for _, g, _ in trained], np.int32),
            "n_feature": np.array([len(w[0]) for _, _, w in trained], np.int64),
            "feature": cat([w[0] for _, _, w in trained], np.int32),
            "n_entry": cat([np.diff(w[1]) for _, _, w in trained], np.int64),
            "slot": cat([w[2] for _, _, w in trained], np.int32),
            "value": cat([w[3] for _, _, w in trained], np.float32)}


def unpack_nodes(a: dict) -> dict:
    """{(tree, node): feature-major classifiers} from :func:`pack_nodes` arrays (views into
    them)."""
    out = {}
    f0 = e0 = 0
    for q in range(len(a["tree"])):
        nf = int(a["n_feature"][q])
        n_entry = a["n_entry"][f0:f0 + nf]
        ptr = np.zeros(nf + 1, np.int64)
        np.cumsum(n_entry, out=ptr[1:])
        ne = int(ptr[-1])
        # views, not copies: the arrays of a large forest are not held twice
        out[(int(a["tree"][q]), int(a["node"][q]))] = (
            a["feature"][f0:f0 + nf].astype(np.int32, copy=False), ptr,
            a["slot"][e0:e0 + ne].astype(np.int32, copy=False),
            a["value"][e0:e0 + ne].astype(np.float32, copy=False))
        f0 += nf
        e0 += ne
    return out


def pack_trees(trees: list, tree_ids) -> dict:
    """The trees' structure (as :func:`build_trees` returns it) as forest arrays without
    classifiers (``forest``'s layout, every node's weights empty)."""
    return concat_forests([tree_arrays(int(t), children, leaf_labels, [_EMPTY] * len(children))
                           for (children, leaf_labels), t in zip(trees, tree_ids)])


def assemble_forest(trees: list, tree_ids, weights: dict) -> dict:
    """The forest arrays of ``trees`` (as :func:`build_trees` returns them) with the trained
    nodes ``weights`` {(tree id, node): classifiers}; every node must be there.

    The classifier arrays are allocated once at their final size and each node's weights
    copied to their place: the driver holds the trained nodes and the forest, never a third
    copy (a forest of several GB comes back from a 500k-row training set)."""
    order = []
    for (children, _), t in zip(trees, tree_ids):
        t = int(t)
        missing = [g for g in range(len(children)) if (t, g) not in weights]
        if missing:
            raise RuntimeError(f"tree {t}: nodes {missing[:5]} were not trained")
        order += [weights[(t, g)] for g in range(len(children))]
    out = pack_trees(trees, tree_ids)
    n_feat = np.fromiter((len(w[0]) for w in order), np.int64, len(order))
    n_ent = np.fromiter((int(w[1][-1]) for w in order), np.int64, len(order))
    out["wf_indptr"] = np.zeros(len(order) + 1, np.int64)
    np.cumsum(n_feat, out=out["wf_indptr"][1:])
    nf, ne = int(n_feat.sum()), int(n_ent.sum())
    out["wf_feature"] = np.empty(nf, np.int32)
    out["we_indptr"] = np.zeros(nf + 1, np.int64)
    out["we_slot"] = np.empty(ne, np.int32)
    out["we_value"] = np.empty(ne, np.float32)
    f0 = e0 = 0
    for (feat, ptr, slot, val), f, e in zip(order, n_feat, n_ent):
        out["wf_feature"][f0:f0 + f] = feat
        out["we_indptr"][f0 + 1:f0 + f + 1] = ptr[1:] + e0
        out["we_slot"][e0:e0 + e] = slot
        out["we_value"][e0:e0 + e] = val
        f0 += int(f)
        e0 += int(e)
    return out
