"""Growing the top levels of FastXML trees data-parallel, over row shards.

When the training set does not fit one task, every task holds a *shard*: a run of
consecutive rows of the global row order (the content order, or the input order). A tree's
nodes that hold more rows than one task can take are grown by all shards together: each step
of the authors' node algorithm that sums over the node's points (the nDCG step's label sums,
the separator's column sums, gradients and line-search losses, the leaf sums) is an *ordered
fold* over the shards (``collective.ordered_fold``): shard 0 adds its points' terms one by one
to the running value, passes it to shard 1, which continues, and so on. That is the very
sequence of float32 / float64 additions one process performs, so the result is bit for bit
the one-process value, for any number of shards and wherever the shard boundaries fall.
Everything else is computed identically on every shard from those values: each shard holds a
copy of the tree's MT19937 state and draws the same numbers (for the random starting sides,
a shard keeps the draws of its own points and skips the others'), the rankings, the
coordinate shuffles, the solver's decisions. Per-point state (sides, X d, exp(w.x)) lives on
the point's shard.

Which nodes are grown this way: the tree grows level by level, and a whole level is grown
data-parallel as long as one of its nodes holds more than ``threshold`` rows. The first level
whose nodes all fit is the *frontier*: each of its nodes becomes a subtree that one task grows
alone with the ordinary kernel (``forest.train_forest``), from its own MT19937 seed
(:func:`subtree_seed`). Consequences, exactly:

- every node above the frontier is the node the one-process kernel grows (same separator
  weights, same leaf distributions, same node ids): processing whole levels keeps the
  authors' breadth-first order of random draws;
- a subtree below the frontier draws from its own stream instead of continuing the tree's
  (which would need the draws of all the nodes before it in breadth-first order, across
  subtrees held by other tasks), so it differs from the one-process subtree; when the root
  itself fits (frontier = root), the subtree seed is the tree's own and the whole tree is the
  one-process tree;
- so the forest depends on the rows (as a multiset, in their order), the seed and
  ``threshold`` only: not on the number of shards or where their boundaries fall.

Trees are independent, so several trees (*lanes*) advance in lockstep: one fold per round
carries every lane's request (:func:`run_lanes`). A lane is a generator that yields
:class:`Fold` requests and finally returns its result.

Cost: a node's work is serialised across shards (each waits for the running value), and the
separator's coordinate descent needs one fold per coordinate step (a few thousand per node on
Delicious), so data-parallel levels run at one core's speed plus a network round trip per
step; they exist for memory, and the subtrees below (most of a tree's nodes) train in
parallel.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ._common import MT_STATE, NOMAP, mt_seed
from .logreg import (
    EPS,
    MAX_INNER,
    MAX_LINESEARCH,
    MAX_NEWTON,
    NU,
    SIGMA,
    lr_accept_rows,
    lr_column_sums,
    lr_coord_grad,
    lr_coord_step,
    lr_delta,
    lr_halve,
    lr_hess_grad,
    lr_init_rows,
    lr_ls_cond,
    lr_outer_active,
    lr_refresh_ewx,
    lr_round_end,
    lr_row_dot,
    lr_shuffle,
)
from .ndcg import NDCG_EPS, SORT_STACK, ndcg_rank_gain, ndcg_side_sums, ndcg_update_sides
from .tree import (
    class_weights,
    draw_sides,
    keep_weights,
    leaf_finalize,
    leaf_label_sums,
    node_idcg,
    route_prods,
)

_M64 = (1 << 64) - 1


class Fold:
    """A lane's request for one ordered fold: ``init`` (rank 0's starting value; shape and
    dtype must agree on every rank) and ``add(acc)``, which adds this shard's terms to the
    view ``acc`` in place."""

    __slots__ = ("init", "add")

    def __init__(self, init: np.ndarray, add):
        self.init = np.ascontiguousarray(init)
        self.add = add


def run_lanes(coll, lanes) -> list:
    """Run generator ``lanes`` in lockstep until all return; return their results in order.

    Each round, every live lane's pending :class:`Fold` goes into ONE ``coll.ordered_fold``
    over a byte buffer (segments 8-byte aligned, lanes in index order), and each lane gets
    back its segment, viewed in its dtype and shape. Every rank must run the same lanes with
    the same requests (they are computed from folded values only).
    """
    results = [None] * len(lanes)
    pending = {}
    for i, lane in enumerate(lanes):
        try:
            pending[i] = next(lane)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        layout = []
        size = 0
        for i in sorted(pending):
            nbytes = pending[i].init.nbytes
            layout.append((i, size, nbytes))
            size += (nbytes + 7) & ~7
        buf = np.zeros(max(size, 8), np.uint8)
        for i, off, nbytes in layout:
            buf[off:off + nbytes] = pending[i].init.reshape(-1).view(np.uint8)

        def add(acc, layout=layout):
            for i, off, nbytes in layout:
                f = pending[i]
                f.add(acc[off:off + nbytes].view(f.init.dtype).reshape(f.init.shape))

        out = coll.ordered_fold(buf, add)
        for i, off, nbytes in layout:
            f = pending[i]
            value = out[off:off + nbytes].view(f.init.dtype).reshape(f.init.shape)
            try:
                pending[i] = lanes[i].send(value)
            except StopIteration as stop:
                results[i] = stop.value
                del pending[i]
    return results


def subtree_seed(tree_state: int, node_id: int) -> int:
    """MT19937 seed of the subtree rooted at frontier node ``node_id`` of the tree seeded
    ``tree_state``: the tree's own seed for the root, otherwise a SplitMix64 mix of both."""
    if int(node_id) == 0:
        return int(tree_state)
    z = ((int(tree_state) << 32) | (int(node_id) & 0xFFFFFFFF)) & _M64
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return (z ^ (z >> 31)) & 0xFFFFFFFF


class Shard:
    """This task's rows, consecutive in the global row order (CSR; see ``train_forest``)."""

    def __init__(self, X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features: int,
                 n_labels: int):
        self.X_indptr = np.ascontiguousarray(X_indptr, np.int64)
        self.X_indices = np.ascontiguousarray(X_indices, np.int32)
        self.X_data = np.ascontiguousarray(X_data, np.float32)
        self.Y_indptr = np.ascontiguousarray(Y_indptr, np.int64)
        self.Y_indices = np.ascontiguousarray(Y_indices, np.int32)
        self.n_rows = len(self.X_indptr) - 1
        self.n_features = int(n_features)
        self.n_labels = int(n_labels)
        # unsigned views, as the kernels index with them (see _common.NOMAP)
        self.Xp, self.Xi = self.X_indptr.view(np.uint64), self.X_indices.view(np.uint32)
        self.Yp, self.Yi = self.Y_indptr.view(np.uint64), self.Y_indices.view(np.uint32)

    def take(self, rows) -> dict:
        """The CSR arrays of ``rows`` (ascending shard row indices)."""
        from .._dtypes import INDEX, INDPTR, VALUE

        rows = np.asarray(rows, np.int64)
        out = {}
        for key, ptr, parts in (("X", self.X_indptr, (self.X_indices, self.X_data)),
                                ("Y", self.Y_indptr, (self.Y_indices,))):
            starts, lens = ptr[rows], ptr[rows + 1] - ptr[rows]
            indptr = np.zeros(len(rows) + 1, INDPTR)
            np.cumsum(lens, out=indptr[1:])
            gather = np.repeat(starts - indptr[:-1], lens) + np.arange(indptr[-1])
            out[key + "_indptr"] = indptr
            out[key + "_indices"] = parts[0][gather].astype(INDEX, copy=False)
            if len(parts) > 1:
                out[key + "_data"] = parts[1][gather].astype(VALUE, copy=False)
        return out


def concat_csr(parts, n_values: int):
    """Stack CSR row blocks ``[(indptr, values_1, ..., values_k), ...]`` (k = ``n_values``:
    1 for labels, 2 for features) into one block; no blocks give zero rows."""
    from .._dtypes import INDEX, INDPTR, VALUE

    dtypes = (INDEX, VALUE)[:n_values]
    if not parts:
        return (np.zeros(1, INDPTR),) + tuple(np.zeros(0, dt) for dt in dtypes)
    ptrs = [np.asarray(p[0], np.int64) for p in parts]
    base = np.cumsum([0] + [int(q[-1]) for q in ptrs[:-1]])
    indptr = np.concatenate([ptrs[0][:1] * 0] + [q[1:] + b for q, b in zip(ptrs, base)])
    return (indptr.astype(INDPTR),) + tuple(
        np.concatenate([np.asarray(p[1 + v]) for p in parts]).astype(dt, copy=False)
        for v, dt in enumerate(dtypes))


class GrowConfig:
    """What every lane needs: the FastXML params and the derived tables.

    ``threshold``: a level is grown data-parallel while one of its nodes holds more rows
    (over all shards) than this. ``disc``, ``csum``: ``ndcg.discount_tables`` (their values do
    not depend on the row range they were sized for). ``label_weight``: float32 (max(L, 1),),
    ``ndcg.label_weights``.
    """

    def __init__(self, threshold: int, max_leaf: int, labels_per_leaf: int,
                 log_loss_coeff: float, bias: float, disc, csum, label_weight):
        self.threshold = int(threshold)
        self.max_leaf = int(max_leaf)
        self.labels_per_leaf = int(labels_per_leaf)
        self.coeff32 = np.float32(log_loss_coeff)
        self.bias32 = np.float32(bias)
        self.disc = disc
        self.csum = csum
        self.label_weight = label_weight


def lane_bytes(n_rows: int, n_features: int, n_labels: int) -> int:
    """Working memory of one lane (:class:`_Workspace`) over a shard of ``n_rows`` rows, plus
    the fold buffers of one round."""
    return 64 * n_rows + 72 * (n_features + 2) + 48 * max(n_labels, 1)


class _Workspace:
    """One lane's scratch, allocated once and reused over its nodes (as the kernel's)."""

    def __init__(self, n_rows: int, n_features: int, n_labels: int):
        n = max(n_rows, 1)
        D1 = n_features + 1
        L1 = max(n_labels, 1)
        self.side = np.empty(n, np.int8)
        self.idcg = np.empty(n, np.float32)
        self.Cw = np.empty(n, np.float32)
        self.Cneg = np.empty(n, np.float32)
        self.prods = np.empty(n, np.float32)
        self.xTd, self.ewx, self.ewx_new, self.tau, self.Dd = (np.empty(n) for _ in range(5))
        self.w, self.wpd, self.Hdiag, self.Grad, self.xjneg = (np.empty(D1) for _ in range(5))
        self.index, self.w_idx = (np.empty(D1, np.int32) for _ in range(2))
        self.w_val = np.empty(D1, np.float32)
        self.colmap = np.full(D1, -1, np.int32)
        self.lab_map = np.full(L1, NOMAP, np.uint32)
        self.ids, self.order, self.otmp, self.leaf_lab = (np.empty(L1, np.int32)
                                                           for _ in range(4))
        self.diff, self.keys, self.leaf_val = (np.empty(L1, np.float32) for _ in range(3))
        self.score = np.empty(L1, np.float64)
        self.stack = np.empty(SORT_STACK, np.int64)


@njit(cache=True, nogil=True)
def mark_present(X_indptr, X_indices, Y_indptr, Y_indices, rows, feat, lab):
    """Set feat[f] = 1 for every feature and lab[l] = 1 for every label of ``rows``."""
    for k in range(rows.shape[0]):
        r = rows[k]
        for p in range(X_indptr[r], X_indptr[r + 1]):
            feat[X_indices[p]] = 1
        for p in range(Y_indptr[r], Y_indptr[r + 1]):
            lab[Y_indices[p]] = 1


@njit(cache=True, nogil=True)
def build_node_columns(X_indptr, X_indices, X_data, rows, colmap, m, bias32, col_ptr, ent_row,
                       ent_val):
    """Column-major copy of this shard's part of a node, columns as the node's (``m``
    columns over all shards: features ascending, the bias last; ``colmap`` maps a feature to
    its column), entries of a column in node order (local point index k). Columns this shard
    lacks are empty. ``col_ptr`` uint64 (m+1,), ``ent_row`` uint32 and ``ent_val`` float32
    (entries + len(rows),)."""
    nr = rows.shape[0]
    for c in range(m + 1):
        col_ptr[c] = 0
    for k in range(nr):
        r = rows[k]
        for p in range(X_indptr[r], X_indptr[r + 1]):
            col_ptr[colmap[X_indices[p]] + 1] += 1
    col_ptr[m] += nr
    for c in range(m):
        col_ptr[c + 1] += col_ptr[c]
    cur = col_ptr[:m].copy()
    for k in range(nr):
        r = rows[k]
        for p in range(X_indptr[r], X_indptr[r + 1]):
            c = colmap[X_indices[p]]
            q = cur[c]
            ent_row[q] = k
            ent_val[q] = X_data[p]
            cur[c] = q + 1
    for k in range(nr):
        q = cur[m - 1]
        ent_row[q] = k
        ent_val[q] = bias32
        cur[m - 1] = q + 1


class _Node:
    __slots__ = ("id", "rows", "n", "off")

    def __init__(self, node_id, rows, n, off):
        self.id = node_id
        self.rows = rows  # int32, ascending shard row indices
        self.n = n        # rows over all shards
        self.off = off    # rows of the node on the lower shards


def _count(local: int):
    """Fold a count: returns (total over shards, total over the lower shards)."""
    box = [0]

    def add(acc):
        box[0] = int(acc[0])
        acc[0] += local

    out = yield Fold(np.zeros(1, np.int64), add)
    return int(out[0]), box[0]


def grow_top(shard: Shard, cfg: GrowConfig, state: int):
    """Lane growing one tree's data-parallel levels (see the module docstring).

    Returns
    -------
    dict
        The top of the tree, nodes in breadth-first order: ``children`` int32 (M, 2) (-1 at
        leaves and frontier nodes), ``frontier`` int64 (M,) (the frontier index of a
        frontier node, else -1), separator CSR ``w_indptr/w_index/w_value`` and leaf CSR
        ``leaf_indptr/leaf_label/leaf_score`` (empty rows for frontier nodes),
        ``frontier_ids`` int64 (F,) node ids, ``frontier_n`` int64 (F,) rows over all shards,
        and ``frontier_rows``: a list of F int32 arrays, this shard's rows of each.
    """
    ws = _Workspace(shard.n_rows, shard.n_features, shard.n_labels)
    mt = np.empty(MT_STATE, np.uint32)
    mt_seed(mt, state)
    rows = np.arange(shard.n_rows, dtype=np.int32)
    n, off = yield from _count(len(rows))
    level = [_Node(0, rows, n, off)]
    nodes = {}  # id -> ("split", children, w_idx, w_val) | ("leaf", labels, scores)
    next_id = 1
    frontier = []
    if n > cfg.threshold:
        while True:
            children = []
            for node in level:
                res = yield from _grow_node(shard, cfg, ws, mt, node)
                if res[0] == "split":
                    pos, neg = res[3], res[4]
                    pos.id, neg.id = next_id, next_id + 1
                    next_id += 2
                    nodes[node.id] = ("split", (pos.id, neg.id), res[1], res[2])
                    children += [pos, neg]
                else:
                    nodes[node.id] = res
            if not children:
                break
            if all(c.n <= cfg.threshold for c in children):
                frontier = children
                break
            level = children
    else:
        frontier = level
    return _top_arrays(nodes, frontier, next_id if nodes else 1)


def _top_arrays(nodes: dict, frontier: list, count: int) -> dict:
    children = np.full((count, 2), -1, np.int32)
    fidx = np.full(count, -1, np.int64)
    w_len = np.zeros(count, np.int64)
    l_len = np.zeros(count, np.int64)
    w_idx, w_val, l_lab, l_val = [], [], [], []
    for i in range(count):
        rec = nodes.get(i)
        if rec is None:
            continue
        if rec[0] == "split":
            children[i] = rec[1]
            w_idx.append(rec[2])
            w_val.append(rec[3])
            w_len[i] = len(rec[2])
        else:
            l_lab.append(rec[1])
            l_val.append(rec[2])
            l_len[i] = len(rec[1])
    for k, node in enumerate(frontier):
        fidx[node.id] = k

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    return {"children": children, "frontier": fidx,
            "w_indptr": np.concatenate([[0], np.cumsum(w_len)]).astype(np.int64),
            "w_index": cat(w_idx, np.int32), "w_value": cat(w_val, np.float32),
            "leaf_indptr": np.concatenate([[0], np.cumsum(l_len)]).astype(np.int64),
            "leaf_label": cat(l_lab, np.int32), "leaf_score": cat(l_val, np.float32),
            "frontier_ids": np.array([nd.id for nd in frontier], np.int64),
            "frontier_n": np.array([nd.n for nd in frontier], np.int64),
            "frontier_rows": [nd.rows for nd in frontier]}


def _grow_node(sh: Shard, cfg: GrowConfig, ws: _Workspace, mt, node: _Node):
    # The one-process kernel's node step (tree.train_trees_kernel), sums folded over shards.
    rows, n, nr = node.rows, node.n, len(node.rows)
    D, L = sh.n_features, max(sh.n_labels, 1)
    present = yield Fold(np.zeros(D + L, np.uint8),
                         lambda a: mark_present(sh.Xp, sh.Xi, sh.Yp, sh.Yi, rows, a[:D], a[D:]))
    act_lab = np.flatnonzero(present[D:D + sh.n_labels]).astype(np.int32)
    nl = len(act_lab)
    ws.lab_map[act_lab] = np.arange(nl, dtype=np.uint32)
    act_w = np.ascontiguousarray(cfg.label_weight[act_lab])
    try:
        if n > cfg.max_leaf:
            side = ws.side[:nr]
            draw_sides(mt, side, node.off, nr, n - node.off - nr)
            idcg = ws.idcg[:nr]
            node_idcg(sh.Yp, rows, cfg.csum, idcg)
            ok, npos0 = yield from _ndcg(sh, cfg, ws, rows, side, nl, act_w, idcg, n)
            if ok:
                split = yield from _separate(sh, cfg, ws, mt, node, present[:D], side, npos0)
                if split is not None:
                    return split
        lsum = np.zeros(0, np.float32)
        if nl:
            lsum = yield Fold(np.zeros(nl, np.float32),
                              lambda a: leaf_label_sums(sh.Yp, sh.Yi, rows, ws.lab_map, act_w,
                                                        a))
        kk = leaf_finalize(lsum, n, nl, act_lab, ws.ids, ws.keys, ws.stack, ws.score,
                           ws.order, ws.otmp, cfg.labels_per_leaf, ws.leaf_lab,
                           ws.leaf_val) if nl else 0
        return ("leaf", ws.leaf_lab[:kk].copy(), ws.leaf_val[:kk].copy())
    finally:
        ws.lab_map[act_lab] = NOMAP


def _ndcg(sh, cfg, ws, rows, side, nl, act_w, idcg, n):
    # ndcg.optimize_ndcg_kernel with the label sums folded; returns (ok, positives)
    fn = np.float32(n)
    ndcg = np.float32(-2.0)
    while True:
        sums = yield Fold(np.zeros(2 * nl, np.float32),
                          lambda a: ndcg_side_sums(sh.Yp, sh.Yi, rows, side, ws.lab_map, act_w,
                                                   idcg, a[:nl], a[nl:]))
        gain = np.float32(ndcg_rank_gain(sums[:nl], sums[nl:], nl, ws.diff, ws.ids, ws.keys,
                                         ws.stack, cfg.disc))
        new_ndcg = gain / fn
        ndcg_update_sides(sh.Yp, sh.Yi, rows, side, ws.lab_map, act_w, idcg, ws.diff)
        if new_ndcg - ndcg < NDCG_EPS:
            break
        ndcg = new_ndcg
    npos, _ = yield from _count(int(np.count_nonzero(side > 0)))
    return 0 < npos < n, npos


def _separate(sh, cfg, ws, mt, node, feat_present, side, npos0):
    # The separator (class weights, columns, solver, kept weights, routing) of a node whose
    # nDCG step succeeded; returns the split or None when a child would be empty.
    rows, n, nr = node.rows, node.n, len(node.rows)
    c_pos, c_neg = class_weights(cfg.coeff32, npos0, n)
    Cw = ws.Cw[:nr]
    Cw[:] = np.where(side > 0, np.float32(c_pos), np.float32(c_neg))
    feats = np.flatnonzero(feat_present).astype(np.int32)
    cfeat = np.append(feats, np.int32(sh.n_features)).astype(np.int32)
    m = len(cfeat)
    ws.colmap[cfeat] = np.arange(m, dtype=np.int32)
    try:
        a, b = sh.X_indptr[rows], sh.X_indptr[rows + 1]
        entries = int((b - a).sum()) + nr
        col_ptr = np.empty(m + 1, np.uint64)
        ent_row = np.empty(entries, np.uint32)
        ent_val = np.empty(entries, np.float32)
        build_node_columns(sh.Xp, sh.Xi, sh.X_data, rows, ws.colmap, m, cfg.bias32, col_ptr,
                           ent_row, ent_val)
        cols = (col_ptr, ent_row, ent_val)
        w = yield from _solve(cols, m, n, nr, side, Cw, mt, ws)
        nw = keep_weights(w, m, cfeat, ws.w_idx, ws.w_val)
        prods = ws.prods[:nr]
        route_prods(col_ptr, ent_row, ent_val, m, w, nr, prods)
    finally:
        ws.colmap[cfeat] = -1
    pos = prods >= 0.0
    npos_loc = int(np.count_nonzero(pos))
    box = [0, 0]

    def add(acc):
        box[0], box[1] = int(acc[0]), int(acc[1])
        acc[0] += npos_loc
        acc[1] += nr - npos_loc

    counts = yield Fold(np.zeros(2, np.int64), add)
    npos = int(counts[0])
    if npos == 0 or npos == n:
        return None
    return ("split", ws.w_idx[:nw].copy(), ws.w_val[:nw].copy(),
            _Node(-1, rows[pos], npos, box[0]), _Node(-1, rows[~pos], n - npos, box[1]))


def _solve(cols, m, n, nr, y, C, mt, ws):
    # logreg.l1r_lr_kernel with every sum over points folded over the shards; n is the
    # node's points over all shards (the shrinking thresholds use it), nr this shard's.
    col_ptr, col_row, col_val = cols
    w, wpd, Hdiag, Grad, index = ws.w[:m], ws.wpd[:m], ws.Hdiag[:m], ws.Grad[:m], ws.index[:m]
    xTd, ewx, ewx_new, tau, Dd = (a[:nr] for a in (ws.xTd, ws.ewx, ws.ewx_new, ws.tau, ws.Dd))
    Cneg = ws.Cneg[:nr]
    inner_eps = 1.0
    Gmax_old = np.inf
    Gnorm1_init = 0.0
    w_norm = 0.0
    lr_init_rows(y, C, nr, ewx, tau, Dd, Cneg)
    index[:] = np.arange(m, dtype=np.int32)
    w[:] = 0.0
    wpd[:] = 0.0
    xjneg = (yield Fold(np.zeros(m),
                        lambda a: lr_column_sums(col_ptr, col_row, col_val, m, Cneg, a))).copy()
    newton_iter = 0
    while newton_iter < MAX_NEWTON:
        hg = yield Fold(np.concatenate([np.full(m, NU), np.zeros(m)]),
                        lambda a: lr_hess_grad(col_ptr, col_row, col_val, m, Dd, tau, a[:m],
                                               a[m:]))
        Hdiag[:] = hg[:m]
        Grad[:] = -hg[m:] + xjneg
        active, Gmax_new, Gnorm1_new = lr_outer_active(Grad, w, index, m, Gmax_old / n)
        if newton_iter == 0:
            Gnorm1_init = Gnorm1_new
        if Gnorm1_new <= EPS * Gnorm1_init:
            break
        it = 0
        qp_Gmax_old = np.inf
        qp_active = active
        xTd[:] = 0.0
        while it < MAX_INNER:
            qp_Gmax_new = 0.0
            qp_Gnorm1_new = 0.0
            qp_shrink = qp_Gmax_old / n
            lr_shuffle(mt, index, qp_active)
            s = 0
            while s < qp_active:
                j = int(index[s])
                g = yield Fold(np.array([Grad[j] + (wpd[j] - w[j]) * NU]),
                               lambda a, j=j: a.__setitem__(0, lr_coord_grad(
                                   col_ptr, col_row, col_val, Dd, xTd, j, a[0])))
                s, qp_active, qp_Gmax_new, qp_Gnorm1_new = lr_coord_step(
                    float(g[0]), j, s, qp_active, qp_shrink, qp_Gmax_new, qp_Gnorm1_new, index,
                    wpd, Hdiag, col_ptr, col_row, col_val, xTd)
            it += 1
            stop, qp_active, qp_Gmax_old = lr_round_end(qp_Gnorm1_new, inner_eps, Gnorm1_init,
                                                        qp_active, active, qp_Gmax_new)
            if stop:
                break
        delta, w_norm_new = lr_delta(Grad, w, wpd, m, w_norm)
        negsum_xTd = float((yield Fold(np.zeros(1), lambda a: a.__setitem__(
            0, lr_row_dot(Cneg, xTd, nr, a[0]))))[0])
        num_ls = 0
        while num_ls < MAX_LINESEARCH:
            start = w_norm_new - w_norm + negsum_xTd - SIGMA * delta
            cond = float((yield Fold(np.array([start]), lambda a: a.__setitem__(
                0, lr_ls_cond(C, xTd, ewx, ewx_new, nr, a[0]))))[0])
            if cond <= 0.0:
                w_norm = w_norm_new
                w[:] = wpd
                lr_accept_rows(C, ewx, ewx_new, tau, Dd, nr)
                break
            w_norm_new = lr_halve(w, wpd, m)
            delta *= 0.5
            negsum_xTd *= 0.5
            xTd *= 0.5
            num_ls += 1
        if num_ls >= MAX_LINESEARCH:
            lr_refresh_ewx(col_ptr, col_row, col_val, m, w, nr, ewx)
        if it == 1:
            inner_eps *= 0.25
        newton_iter += 1
        Gmax_old = Gmax_new
    return w
