"""Random forests grown level-wise through a collective: one reduce per level for all trees.

Rows and bootstrap
------------------
Every rank holds its own rows. Row ``r``'s count in tree ``t`` is drawn from a hash of
(its content key, seed, t): Poisson(subsamplingRate) with ``bootstrap`` (Spark MLlib's
resampling), else 1 with probability subsamplingRate (all rows at 1.0); a tree that draws no
row at all (on a handful of rows) takes every row once. Counts depend on
neither the partitioning nor the number of ranks; rows with equal content share a key and so
their counts (exact duplicates are resampled together). A row's weight in tree t is its
sample (and class) weight times its count; rows at 0 take no part in t.

Feature subsets
---------------
A node draws ``mtry`` features from an xorshift state hashed from (seed, tree, node key), the
key being a hash of the node's path from the root (``splitter.node_state``/``draw_subset``).

Growth
------
Each level, every rank sends one message for all trees' frontier nodes: the histograms of the
large nodes (over their drawn features only) and, for each small node, its rows (a node is
small when shipping its rows costs less than its histogram). Rank 0 sums, splits the large
nodes, grows each small node's whole subtree in one process from its rows (the same split
search on the same sums, so the tree is the same as if it had stayed distributed), and
broadcasts the decisions; the ranks partition their rows. Trees come out in scikit-learn's
layout, renumbered depth-first (``tree.TreeArrays``).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._jit import njit
from .criteria import (
    ENTROPY,
    EPSILON,
    improvement,
    impurity,
    is_classification,
    n_stats,
    node_weight,
)
from .exactsum import collapse, stat_plan
from .histogram import build_histograms, partition_nodes, split_slice
from .splitter import child_key, draw_subset, mix64, node_state, split_subset
from .tree import SplitParams

_LEAF, _LARGE, _SMALL = 0, 1, 2


# ------------------------------------------------------------------------------ bootstrap
@njit(cache=True, nogil=True)
def _counts(keys, seed, n_trees, bootstrap, rate, out):
    lam = rate
    p0 = math.exp(-lam)
    for t in range(n_trees):
        salt = mix64(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(t))
        for r in range(keys.shape[0]):
            h = mix64(np.uint64(keys[r]) ^ salt)
            u = (h >> np.uint64(11)) * (1.0 / 9007199254740992.0)
            if bootstrap:
                k = 0
                p = p0
                F = p
                while u > F and k < 255:
                    k += 1
                    p *= lam / k
                    F += p
                out[t, r] = k
            else:
                out[t, r] = 1 if (rate >= 1.0 or u < rate) else 0


def bootstrap_counts(keys, seed: int, n_trees: int, bootstrap: bool, rate: float) -> np.ndarray:
    """uint8 (n_trees, n): each row's count in each tree (see the module docstring)."""
    keys = np.ascontiguousarray(keys).view(np.uint64) if np.asarray(keys).dtype == np.int64 \
        else np.ascontiguousarray(keys, np.uint64)
    out = np.empty((n_trees, keys.size), np.uint8)
    _counts(keys, np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF), n_trees, bool(bootstrap),
            float(rate), out)
    return out


def bootstrap_counts_naive(keys, seed, n_trees, bootstrap, rate):
    """Slow twin of :func:`bootstrap_counts` (Python integers, the same hash)."""
    M = (1 << 64) - 1

    def mix(x):
        z = (x + 0x9E3779B97F4A7C15) & M
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)

    keys = [int(k) & M for k in np.asarray(keys).astype(np.int64)]
    out = np.zeros((n_trees, len(keys)), np.uint8)
    for t in range(n_trees):
        salt = mix(((int(seed) & M) * 0x9E3779B97F4A7C15 + t) & M)
        for r, key in enumerate(keys):
            u = (mix(key ^ salt) >> 11) / 9007199254740992.0
            if bootstrap:
                k, p = 0, math.exp(-rate)
                F = p
                while u > F and k < 255:
                    k += 1
                    p *= rate / k
                    F += p
                out[t, r] = k
            else:
                out[t, r] = 1 if (rate >= 1.0 or u < rate) else 0
    return out


# ------------------------------------------------------------------------------ node store
class NodeStore:
    """All trees' nodes in creation order, as flat arrays numba appends to."""

    def __init__(self, S: int, cap: int = 1024):
        self.n = 0
        self.S = S
        self._alloc(cap)

    def _alloc(self, cap):
        old = getattr(self, "a", None)
        a = {"tree": np.empty(cap, np.int64), "parent": np.empty(cap, np.int64),
             "is_left": np.empty(cap, np.int64), "feat": np.empty(cap, np.int64),
             "bl": np.empty(cap, np.int64), "br": np.empty(cap, np.int64),
             "imp": np.empty(cap), "sums": np.empty((cap, self.S))}
        if old is not None:
            for k in a:
                a[k][:self.n] = old[k][:self.n]
        self.a = a

    def reserve(self, extra: int):
        cap = self.a["tree"].size
        if self.n + extra > cap:
            self._alloc(max(2 * cap, self.n + extra))

    def args(self):
        a = self.a
        return (a["tree"], a["parent"], a["is_left"], a["feat"], a["bl"], a["br"], a["imp"],
                a["sums"])


@njit(cache=True, nogil=True)
def _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_imp, st_sums, i, tree,
         parent, is_left, imp, total):
    st_tree[i] = tree
    st_parent[i] = parent
    st_isleft[i] = is_left
    st_feat[i] = -1
    st_bl[i] = -1
    st_br[i] = -1
    st_imp[i] = imp
    for t in range(total.shape[0]):
        st_sums[i, t] = total[t]


@njit(cache=True, nogil=True)
def _is_leaf(depth, n, w, imp, max_depth, min_split, min_leaf, min_wleaf):
    return (depth >= max_depth or n < min_split or n < 2 * min_leaf or w < 2 * min_wleaf
            or imp <= EPSILON)


@njit(cache=True, nogil=True)
def _split_level(crit, hists, feats, n_tree, n_key, n_depth, n_imp, n_parent, n_isleft,
                 n_first, w_total, min_wleaf, frac, vals, seed, mtry, max_depth, min_split,
                 min_leaf, min_dec, small_rows, st_tree, st_parent, st_isleft, st_feat, st_bl,
                 st_br, st_imp, st_sums, n_nodes, recs, c_tree, c_key, c_depth, c_imp,
                 c_parent, c_isleft, c_kind, c_cap, c_feats):
    """Split the large nodes of one level from their summed histograms; returns
    (nodes stored, children kept for the next level)."""
    m = hists.shape[0]
    d = vals.shape[0]
    S = hists.shape[3]
    n_slots = vals.shape[1]
    bins = np.empty(n_slots, np.int64)
    st = np.empty((n_slots, S))
    fmap = np.full(d, -1, np.int64)
    out_left = np.empty(S)
    total = np.empty(S)
    state = np.empty(1, np.uint32)
    sub = np.empty(d, np.int64)
    dummy_b = np.zeros((1, 1), np.uint8)
    dummy_r = np.zeros(1, np.int32)
    dummy_s = np.zeros((1, S))
    nc = 0
    for j in range(m):
        t = n_tree[j]
        h = hists[j]
        for s in range(S):
            total[s] = 0.0
        for b in range(n_slots):
            for s in range(S):
                total[s] += h[0, b, s]
        n = total[0]
        w = node_weight(crit, total)
        imp = n_imp[j]
        if n_first[j]:
            w_total[t] = w
            min_wleaf[t] = frac * w
            imp = impurity(crit, total, w)
        node = n_nodes
        _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_imp, st_sums, node, t,
             n_parent[j], n_isleft[j], imp, total)
        n_nodes += 1
        recs[j, 0] = -1.0
        if n_first[j] and _is_leaf(n_depth[j], n, w, imp, max_depth, min_split, min_leaf,
                                   min_wleaf[t]):
            continue
        for k in range(mtry):
            fmap[feats[j, k]] = k
        f, bl, br = split_subset(0, crit, h, fmap, dummy_b, dummy_r, 0, 0, dummy_s, vals,
                                 total, w, feats[j], mtry, min_leaf, min_wleaf[t], bins, st,
                                 out_left)
        for k in range(mtry):
            fmap[feats[j, k]] = -1
        if f < 0:
            continue
        right = total - out_left
        wl = node_weight(crit, out_left)
        wr = w - wl
        il = impurity(crit, out_left, wl)
        ir = impurity(crit, right, wr)
        if improvement(crit, w_total[t], w, imp, out_left, right, wl, wr, il, ir) + EPSILON \
                < min_dec:
            continue
        st_feat[node] = f
        st_bl[node] = bl
        st_br[node] = br
        recs[j, 0] = f
        recs[j, 1] = bl
        for side in range(2):
            sums = out_left if side == 0 else right
            ws = wl if side == 0 else wr
            ci = il if side == 0 else ir
            ns = sums[0]
            key = child_key(n_key[j], 1 - side)
            if _is_leaf(n_depth[j] + 1, ns, ws, ci, max_depth, min_split, min_leaf,
                        min_wleaf[t]):
                kind = _LEAF
                _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_imp, st_sums,
                     n_nodes, t, node, 1 - side, ci, sums)
                n_nodes += 1
            else:
                kind = _SMALL if ns <= small_rows else _LARGE
                c_tree[nc] = t
                c_key[nc] = key
                c_depth[nc] = n_depth[j] + 1
                c_imp[nc] = ci
                c_parent[nc] = node
                c_isleft[nc] = 1 - side
                c_kind[nc] = kind
                c_cap[nc] = int(ns)
                if kind == _LARGE:
                    node_state(seed, t, key, state)
                    draw_subset(d, mtry, state, sub)
                    for k in range(mtry):
                        c_feats[nc, k] = sub[k]
                        recs[j, 6 + side * mtry + k] = sub[k]
                nc += 1
            recs[j, 2 + side] = kind
            recs[j, 4 + side] = ns
    return n_nodes, nc


@njit(cache=True, nogil=True)
def _grow_smalls(crit, n_classes, buf, offsets, s_tree, s_key, s_depth, s_imp, s_parent,
                 s_isleft, s_first, w_total, min_wleaf, frac, vals, seed, mtry, max_depth,
                 min_split, min_leaf, min_dec, st_tree, st_parent, st_isleft, st_feat, st_bl,
                 st_br, st_imp, st_sums, n_nodes):
    """Grow the whole subtree of each small node from its collected rows ``buf`` (row
    [present, bins..., target, weight]), depth first, left subtree first."""
    d = vals.shape[0]
    S = st_sums.shape[1]
    n_slots = vals.shape[1]
    classification = crit <= ENTROPY
    bins = np.empty(n_slots, np.int64)
    sub = np.empty(d, np.int64)
    state = np.empty(1, np.uint32)
    fmap = np.zeros(1, np.int64)
    hist = np.zeros((1, 1, S))
    out_left = np.empty(S)
    total = np.empty(S)
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        m = b - a
        t = s_tree[q]
        binned = np.empty((m, d), np.int64)
        rs = np.zeros((m, S))
        for i in range(m):
            row = buf[a + i]
            for f in range(d):
                binned[i, f] = np.int64(row[1 + f])
            yv = row[d + 1]
            wv = row[d + 2]
            rs[i, 0] = 1.0
            if classification:
                rs[i, 1 + np.int64(yv)] = wv
            else:
                rs[i, 1] = wv
                rs[i, 2] = wv * yv
                rs[i, 3] = rs[i, 2] * yv
                rs[i, 4] = wv * (yv * math.log(yv) if yv > 0 else 0.0)
        if s_first[q]:
            for s in range(S):
                total[s] = 0.0
            for i in range(m):
                for s in range(S):
                    total[s] += rs[i, s]
            w_total[t] = node_weight(crit, total)
            min_wleaf[t] = frac * w_total[t]
        st = np.empty((max(n_slots, m), S))
        rows = np.arange(m).astype(np.int32)
        scratch = np.empty(m, np.int32)
        cap = 2 * m + 2
        k_start = np.empty(cap, np.int64)
        k_end = np.empty(cap, np.int64)
        k_depth = np.empty(cap, np.int64)
        k_parent = np.empty(cap, np.int64)
        k_isleft = np.empty(cap, np.int64)
        k_key = np.empty(cap, np.uint64)
        k_imp = np.empty(cap)
        k_start[0] = 0
        k_end[0] = m
        k_depth[0] = s_depth[q]
        k_parent[0] = s_parent[q]
        k_isleft[0] = s_isleft[q]
        k_key[0] = s_key[q]
        k_imp[0] = s_imp[q]
        top = 1
        first = s_first[q]
        while top > 0:
            top -= 1
            s = k_start[top]
            e = k_end[top]
            depth = k_depth[top]
            key = k_key[top]
            imp = k_imp[top]
            for u in range(S):
                total[u] = 0.0
            for i in range(s, e):
                r = rows[i]
                for u in range(S):
                    total[u] += rs[r, u]
            n = total[0]
            w = node_weight(crit, total)
            if first:
                imp = impurity(crit, total, w)
                first = False
            node = n_nodes
            _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_imp, st_sums, node,
                 t, k_parent[top], k_isleft[top], imp, total)
            n_nodes += 1
            if _is_leaf(depth, n, w, imp, max_depth, min_split, min_leaf, min_wleaf[t]):
                continue
            node_state(seed, t, key, state)
            draw_subset(d, mtry, state, sub)
            f, bl, br = split_subset(1, crit, hist, fmap, binned, rows, s, e, rs, vals, total,
                                     w, sub, mtry, min_leaf, min_wleaf[t], bins, st, out_left)
            if f < 0:
                continue
            right = total - out_left
            wl = node_weight(crit, out_left)
            wr = w - wl
            il = impurity(crit, out_left, wl)
            ir = impurity(crit, right, wr)
            if improvement(crit, w_total[t], w, imp, out_left, right, wl, wr, il, ir) \
                    + EPSILON < min_dec:
                continue
            st_feat[node] = f
            st_bl[node] = bl
            st_br[node] = br
            nl = split_slice(binned, rows, scratch, s, e, f, bl)
            for side in range(2):  # right pushed first: the left subtree comes first
                is_left = side
                k_start[top] = s if is_left else s + nl
                k_end[top] = s + nl if is_left else e
                k_depth[top] = depth + 1
                k_parent[top] = node
                k_isleft[top] = is_left
                k_key[top] = child_key(key, is_left)
                k_imp[top] = il if is_left else ir
                top += 1
    return n_nodes


@njit(cache=True, nogil=True)
def _preorder_ids(left, right, starts, ends, out):
    # out[k]: the k-th node of the result (trees in order, each in preorder), as store index
    pos = 0
    stack = np.empty(left.shape[0] + 1, np.int64)
    for t in range(starts.shape[0]):
        top = 0
        stack[0] = starts[t]
        top = 1
        while top > 0:
            top -= 1
            i = stack[top]
            out[pos] = i
            pos += 1
            if left[i] >= 0:
                stack[top] = right[i]
                top += 1
                stack[top] = left[i]
                top += 1
    return pos


def assemble(store: NodeStore, n_trees: int, crit: int, n_classes: int, vals, edges):
    """All trees in scikit-learn's layout, each renumbered depth-first: a dict of the
    ``predictor.ARRAY_KEYS`` node arrays, ``tree_offsets``, and ``bin`` (left bin per node, -1
    on leaves: rows with bin <= it go left, the same way as by the raw threshold; what OOB
    routing of binned rows uses)."""
    N = store.n
    a = {k: v[:N] for k, v in store.a.items()}
    left = np.full(N, -1, np.int64)
    right = np.full(N, -1, np.int64)
    has_p = a["parent"] >= 0
    idx = np.flatnonzero(has_p)
    is_l = a["is_left"][idx] == 1
    left[a["parent"][idx[is_l]]] = idx[is_l]
    right[a["parent"][idx[~is_l]]] = idx[~is_l]
    roots = np.flatnonzero(~has_p)
    roots = roots[np.argsort(a["tree"][roots], kind="stable")]
    if roots.size != n_trees:
        raise RuntimeError(f"forest has {roots.size} roots for {n_trees} trees")
    order = np.empty(N, np.int64)
    _preorder_ids(left, right, roots, roots, order)
    new = np.empty(N, np.int64)
    new[order] = np.arange(N)
    counts = np.bincount(a["tree"], minlength=n_trees)
    offsets = np.zeros(n_trees + 1, np.int64)
    offsets[1:] = np.cumsum(counts)
    base = np.repeat(offsets[:-1], counts)  # by new (sorted) position
    feat = a["feat"][order]
    bl = a["bl"][order]
    br = a["br"][order]
    inner = feat >= 0
    thr = np.full(N, -2.0)
    fi, bli, bri = feat[inner], bl[inner], br[inner]
    va, vb = vals[fi, bli], vals[fi, bri]
    edge_tab = np.full(vals.shape, np.nan)
    for f, e in enumerate(edges):
        edge_tab[f, :len(e)] = e
    thr[inner] = np.where(np.isnan(va) | np.isnan(vb), edge_tab[fi, bli], va / 2.0 + vb / 2.0)
    sums = a["sums"][order]
    if is_classification(crit):
        w = sums[:, 1:].sum(axis=1)
        value = sums[:, 1:] / w[:, None]
    else:
        w = sums[:, 1]
        value = (sums[:, 2] / w)[:, None]

    def child(c):
        c = c[order]
        return np.where(c >= 0, new[np.maximum(c, 0)] - base, -1)

    # the largest bin whose rows go left: with exact bins an unseen row's bin may lie between
    # the node's two bins (its value then goes by the midpoint); else the left bin itself
    route = np.where(inner, bl, -1)
    exact = ~(np.isnan(va) | np.isnan(vb))
    route_inner = route[inner]
    route_inner[exact] = (vals[fi[exact]] <= thr[inner][exact][:, None]).sum(axis=1) - 1
    route[inner] = route_inner
    return {"children_left": child(left), "children_right": child(right),
            "feature": np.where(inner, feat, -2), "threshold": thr,
            "impurity": a["imp"][order], "n_node_samples": np.rint(sums[:, 0]).astype(np.int64),
            "weighted_n_node_samples": w, "value": value, "tree_offsets": offsets,
            "bin": route}


# ------------------------------------------------------------------------------ level helpers
def _canonical_rows(buf, offsets):
    """Each small node's rows in one order whatever rank sent them (rows sorted by their
    content; equal rows are interchangeable): the sums of its subtree then do not depend on
    the partitioning."""
    out = np.empty_like(buf)
    for q in range(offsets.size - 1):
        seg = buf[offsets[q]:offsets[q + 1]]
        out[offsets[q]:offsets[q + 1]] = seg[np.lexsort(seg.T[::-1])] if seg.shape[0] > 1 \
            else seg
    return np.ascontiguousarray(out)


@njit(cache=True, nogil=True)
def _pack_rows(binned, part, starts, ends, caps, trees, target, rw, counts, rank, world, msg,
               pos):
    """Write each small node's rows into its rank's slot: [1, bins..., target, weight]."""
    d = binned.shape[1]
    width = d + 3
    for q in range(starts.shape[0]):
        base = pos + rank * caps[q] * width
        t = trees[q]
        for i in range(starts[q], ends[q]):
            r = part[i]
            o = base + (i - starts[q]) * width
            msg[o] = 1.0
            for f in range(d):
                msg[o + 1 + f] = binned[r, f]
            msg[o + d + 1] = target[r]
            msg[o + d + 2] = rw[r] * counts[t, r]
        pos += world * caps[q] * width
    return pos


@njit(cache=True, nogil=True)
def _next_frontier(recs, starts, ends, n_left, trees, keys, depths, mtry, o_tree, o_key,
                   o_depth, o_isleft, o_kind, o_cap, o_feats, o_start, o_end):
    k = 0
    for j in range(recs.shape[0]):
        if recs[j, 0] < 0:
            continue
        s = starts[j]
        e = ends[j]
        nl = n_left[j]
        for side in range(2):
            kind = np.int64(recs[j, 2 + side])
            if kind == _LEAF:
                continue
            o_tree[k] = trees[j]
            o_key[k] = child_key(keys[j], 1 - side)
            o_depth[k] = depths[j] + 1
            o_isleft[k] = 1 - side
            o_kind[k] = kind
            o_cap[k] = np.int64(recs[j, 4 + side])
            for f in range(mtry):
                o_feats[k, f] = np.int64(recs[j, 6 + side * mtry + f])
            o_start[k] = s if side == 0 else s + nl
            o_end[k] = s + nl if side == 0 else e
            k += 1
    return k


# ------------------------------------------------------------------------------ the loop
def _chunks(lg, sm, hist_floats, row_floats, max_floats):
    """Cut one level's frontier into rounds of at most ``max_floats`` message floats (a node
    larger than that gets a round of its own), large nodes first, order kept: what bounds a
    round's memory, as MLlib's maxMemoryInMB bounds its node groups."""
    out, cur_l, cur_s, size = [], [], [], 0
    for kind, idx in ((0, lg), (1, sm)):
        for j in idx:
            f = hist_floats if kind == 0 else int(row_floats[j])
            if size and size + f > max_floats:
                out.append((np.asarray(cur_l, np.int64), np.asarray(cur_s, np.int64)))
                cur_l, cur_s, size = [], [], 0
            (cur_l if kind == 0 else cur_s).append(j)
            size += f
    if cur_l or cur_s:
        out.append((np.asarray(cur_l, np.int64), np.asarray(cur_s, np.int64)))
    return out
def small_node_rows(mtry, n_slots, S, d) -> int:
    """A node is grown in one process once shipping its rows (zero-padded per rank: counted
    here for two ranks) costs no more than its histogram. The threshold must not depend on
    the number of ranks: a node summed from its rows and one summed from histograms round
    differently, so each node has to take the same way whatever the ranks."""
    return max(1, (mtry * n_slots * S) // (2 * (d + 3)))


def grow_forest(binned, cls, y, ylny_, rw, keys, params: SplitParams, n_trees: int, seed: int,
                bootstrap: bool, rate: float, collective, vals, edges, small_rows=None,
                max_message_bytes=64 << 20, on_trees_done=None):
    """Grow ``n_trees`` trees over the rows of every rank (call on every rank, in lockstep).

    Parameters as :func:`builder.grow_tree`, plus ``keys`` int64 (n,) row content keys,
    ``n_trees``, ``seed``, ``bootstrap`` and ``rate`` (subsamplingRate); ``small_rows``
    overrides the node size up to which a subtree is grown in one process (the same trees
    whatever it is; tests check that). A level takes one reduce per ``max_message_bytes`` of
    histograms and rows (float64 before any float32 narrowing); the trees do not depend on it.

    Returns
    -------
    (arrays, counts) : ``assemble``'s dict on rank 0 (None elsewhere), and this rank's
    bootstrap counts uint8 (n_trees, n).
    """
    n, d = binned.shape
    n_slots = vals.shape[1]
    crit = params.criterion
    S = n_stats(crit, params.n_classes)
    mtry = params.max_features if params.max_features > 0 else d
    world = collective.world_size
    rank = collective.rank
    p = params
    seed_u = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF)
    if small_rows is None:
        small_rows = small_node_rows(mtry, n_slots, S, d)
    counts = bootstrap_counts(keys, seed, n_trees, bootstrap, rate)
    counts[:, rw <= 0] = 0
    # a tree whose sample is empty (likely on a few rows: e**-n per tree) takes every row
    # once instead: a root without weight has no impurity nor value
    drawn = collective.allreduce_sum((counts > 0).sum(axis=1).astype(np.float64)) \
        if n_trees else np.zeros(0)
    for t in np.flatnonzero(np.asarray(drawn) == 0):
        counts[t, rw > 0] = 1
    # histogram sums that do not depend on which rank holds a row nor on the row order
    plan = stat_plan(collective, is_classification(crit), p.n_classes, cls, y, ylny_, rw,
                     counts.max(axis=0) if n_trees and n else np.zeros(n))
    Wd = plan.width
    per_tree = [np.flatnonzero(counts[t]).astype(np.int32) for t in range(n_trees)]
    offs = np.zeros(n_trees + 1, np.int64)
    offs[1:] = np.cumsum([a.size for a in per_tree])
    part = np.concatenate(per_tree) if per_tree else np.zeros(0, np.int32)
    scratch = np.empty(max((a.size for a in per_tree), default=0), np.int32)
    # the frontier, the same on every rank (rank 0 also keeps what its nodes need)
    T = n_trees
    fr = {"tree": np.arange(T), "key": np.zeros(T, np.uint64), "depth": np.zeros(T, np.int64),
          "imp": np.full(T, np.inf), "parent": np.full(T, -1, np.int64),
          "isleft": np.zeros(T, np.int64), "first": np.ones(T, np.bool_),
          "kind": np.full(T, _LARGE, np.int64), "cap": np.zeros(T, np.int64),
          "feats": np.empty((T, mtry), np.int64), "start": offs[:-1].copy(),
          "end": offs[1:].copy()}
    state = np.empty(1, np.uint32)
    for t in range(T):
        node_state(seed_u, t, np.uint64(0), state)
        draw_subset(d, mtry, state, fr["feats"][t])
    store = NodeStore(S) if rank == 0 else None
    w_total = np.zeros(T)
    min_wleaf = np.zeros(T)
    width = d + 3
    target = cls.astype(np.float64) if is_classification(crit) else y
    H = mtry * n_slots * Wd
    rw_ = 6 + 2 * mtry
    max_floats = max(1, int(max_message_bytes) // 8)
    # classification with integer weights: every sum is an integer; while a tree's total weight
    # stays below 2**24 they are exact in float32, which halves what travels each level
    frac = float(np.any(rw != np.round(rw)))
    bound = float((counts.astype(np.float64) @ rw).max()) if n_trees and n else 0.0
    flags = collective.allreduce_sum(np.array([frac, bound]))
    use32 = bool(is_classification(crit) and flags[0] == 0 and flags[1] < 2.0 ** 24
                 and plan.plain)
    timing = {"hist": 0.0, "rows": 0.0, "reduce": 0.0, "split": 0.0, "small": 0.0,
              "partition": 0.0, "levels": 0, "message_floats": 0}
    clock = time.perf_counter
    def _round(lg, sm):
        """One reduce: the histograms of large nodes ``lg`` and the rows of small nodes ``sm``
        (frontier indices); rank 0 decides. Returns (split records of lg, children kept)."""
        fr_ = fr
        t0 = clock()
        caps = fr_["cap"][sm]
        msg = np.zeros(lg.size * H + int(caps.sum()) * world * width)
        if lg.size:
            build_histograms(crit, binned, part, fr_["start"][lg], fr_["end"][lg],
                             fr_["feats"][lg], fr_["tree"][lg], counts, cls, y, ylny_, rw,
                             msg[:lg.size * H].reshape(lg.size, mtry, n_slots, Wd), plan)
        pos = lg.size * H
        t1 = clock()
        timing["hist"] += t1 - t0
        timing["message_floats"] += msg.size
        if sm.size:
            _pack_rows(binned, part, fr_["start"][sm], fr_["end"][sm], caps, fr_["tree"][sm],
                       target, rw, counts, rank, world, msg, pos)
        if use32:
            msg = msg.astype(np.float32)
        kept_children = {}

        def decide(summed, fr=fr_, lg=lg, sm=sm, caps=caps):
            summed = np.asarray(summed, np.float64)
            m = lg.size
            t3 = clock()
            recs = np.full((m, rw_), -1.0)
            store.reserve(3 * m + 2 * int(caps.sum()) + 2)
            c = {k: np.empty(2 * m, dt) for k, dt in (
                ("tree", np.int64), ("key", np.uint64), ("depth", np.int64), ("imp", np.float64),
                ("parent", np.int64), ("isleft", np.int64), ("kind", np.int64),
                ("cap", np.int64))}
            cf = np.empty((2 * m, mtry), np.int64)
            hists = np.ascontiguousarray(collapse(summed[:m * H].reshape(m, mtry, n_slots, Wd),
                                                  plan))
            store.n, nc = _split_level(
                crit, hists, fr_["feats"][lg], fr_["tree"][lg], fr_["key"][lg], fr_["depth"][lg],
                fr_["imp"][lg], fr_["parent"][lg], fr_["isleft"][lg], fr_["first"][lg], w_total,
                min_wleaf, p.min_weight_fraction, vals, seed_u, mtry, p.max_depth,
                p.min_samples_split, float(p.min_samples_leaf), p.min_impurity_decrease,
                small_rows, *store.args(), store.n, recs, c["tree"], c["key"], c["depth"],
                c["imp"], c["parent"], c["isleft"], c["kind"], c["cap"], cf)
            t4 = clock()
            timing["split"] += t4 - t3
            if sm.size:
                seg = summed[m * H:].reshape(-1, width)
                present = seg[:, 0] > 0
                # rows of small node q sit in world * cap_q slots; keep the present ones
                bounds = np.zeros(sm.size + 1, np.int64)
                bounds[1:] = np.cumsum(caps * world)
                kept = np.add.reduceat(present.astype(np.int64), bounds[:-1])
                offsets = np.zeros(sm.size + 1, np.int64)
                offsets[1:] = np.cumsum(kept)
                buf = _canonical_rows(seg[present], offsets)
                store.n = _grow_smalls(
                    crit, p.n_classes, buf, offsets, fr_["tree"][sm], fr_["key"][sm],
                    fr_["depth"][sm], fr_["imp"][sm], fr_["parent"][sm], fr_["isleft"][sm],
                    fr_["first"][sm], w_total, min_wleaf, p.min_weight_fraction, vals, seed_u,
                    mtry, p.max_depth, p.min_samples_split, float(p.min_samples_leaf),
                    p.min_impurity_decrease, *store.args(), store.n)
            timing["small"] += clock() - t4
            kept_children["imp"] = c["imp"][:nc]
            kept_children["parent"] = c["parent"][:nc]
            return recs.reshape(-1)

        t2 = clock()
        timing["rows"] += t2 - t1
        dec = collective.reduce_and_decide(msg, decide if rank == 0 else None)
        timing["reduce"] += clock() - t2
        return dec.reshape(lg.size, rw_), kept_children

    while fr["tree"].size:
        timing["levels"] += 1
        lg_all = np.flatnonzero(fr["kind"] == _LARGE)
        sm_all = np.flatnonzero(fr["kind"] == _SMALL)
        recs_parts, imp_parts, parent_parts = [], [], []
        for lg, sm in _chunks(lg_all, sm_all, H, fr["cap"] * world * width, max_floats):
            recs, kids = _round(lg, sm)
            recs_parts.append(recs)
            imp_parts.append(kids.get("imp", np.zeros(0)))
            parent_parts.append(kids.get("parent", np.zeros(0, np.int64)))
        lg = lg_all
        recs = np.concatenate(recs_parts) if recs_parts else np.zeros((0, rw_))
        kept_children = {"imp": np.concatenate(imp_parts),
                         "parent": np.concatenate(parent_parts)} if rank == 0 else {}
        t5 = clock()
        split = recs[:, 0] >= 0 if lg.size else np.zeros(0, bool)
        js = lg[split]
        n_left = partition_nodes(binned, part, fr["start"][js], fr["end"][js],
                                 recs[split, 0].astype(np.int64), recs[split, 1].astype(np.int64),
                                 scratch) if js.size else np.zeros(0, np.int64)
        m2 = 2 * int(split.sum())
        o = {"tree": np.empty(m2, np.int64), "key": np.empty(m2, np.uint64),
             "depth": np.empty(m2, np.int64), "isleft": np.empty(m2, np.int64),
             "kind": np.empty(m2, np.int64), "cap": np.empty(m2, np.int64),
             "feats": np.empty((m2, mtry), np.int64), "start": np.empty(m2, np.int64),
             "end": np.empty(m2, np.int64)}
        k = _next_frontier(np.ascontiguousarray(recs[split]), fr["start"][js], fr["end"][js],
                           n_left, fr["tree"][js], fr["key"][js], fr["depth"][js], mtry,
                           o["tree"], o["key"], o["depth"], o["isleft"], o["kind"], o["cap"],
                           o["feats"], o["start"], o["end"])
        timing["partition"] += clock() - t5
        fr = {name: v[:k] for name, v in o.items()}
        fr["imp"] = kept_children.get("imp", np.zeros(k))
        fr["parent"] = kept_children.get("parent", np.zeros(k, np.int64))
        fr["first"] = np.zeros(k, np.bool_)
        if on_trees_done is not None:
            on_trees_done(T - int(np.unique(fr["tree"]).size), T)
    timing["reduce"] -= timing["split"] + timing["small"]
    grow_forest.last_timing = timing
    return (assemble(store, T, crit, p.n_classes, vals, edges) if rank == 0 else None), counts


# ------------------------------------------------------------------------------ out-of-bag
@njit(cache=True, nogil=True)
def _oob_sums(binned, counts, left, right, feature, bins, value, offsets, out, n_out):
    for r in range(binned.shape[0]):
        for t in range(offsets.shape[0] - 1):
            if counts[t, r] != 0:
                continue
            base = offsets[t]
            node = 0
            while left[base + node] >= 0:
                j = base + node
                if binned[r, feature[j]] <= bins[j]:
                    node = left[j]
                else:
                    node = right[j]
            for k in range(value.shape[1]):
                out[r, k] += value[base + node, k]
            n_out[r] += 1


def oob_sums(binned, counts, arrays):
    """Per row: the sum of leaf values over the trees it is out of bag for (float64 (n, K))
    and the number of such trees (int64 (n,)), routing binned rows by the left-bin
    thresholds (``assemble``'s ``bin``)."""
    n = binned.shape[0]
    value = np.ascontiguousarray(arrays["value"]).reshape(arrays["value"].shape[0], -1)
    out = np.zeros((n, value.shape[1]))
    n_out = np.zeros(n, np.int64)
    _oob_sums(binned, counts, arrays["children_left"], arrays["children_right"],
              arrays["feature"], arrays["bin"], value, arrays["tree_offsets"], out, n_out)
    return out, n_out


def oob_terms(sums, n_oob, y, n_classes) -> np.ndarray:
    """Per row, the terms of the OOB statistics (n, 2) [correct, 1] (classification: the
    argmax of the averaged leaf fractions, class 0 for a row in every bootstrap sample, as
    scikit-learn) or (n, 4) [squared error, y, y², 1] (regression; prediction 0 for such a
    row). Summed with ``exactsum.exact_sums`` they do not depend on the partitioning."""
    pred = sums / np.maximum(n_oob, 1)[:, None]
    y = np.asarray(y, np.float64)
    ones = np.ones(y.size)
    if n_classes:
        return np.column_stack([(np.argmax(pred, axis=1) == y).astype(np.float64)
                                if y.size else np.zeros(0), ones])
    err = y - pred[:, 0]
    return np.column_stack([err * err, y, y * y, ones])


def oob_statistics(sums, n_oob, y, n_classes):
    """One rank's OOB statistics: the column sums of :func:`oob_terms`."""
    return oob_terms(sums, n_oob, y, n_classes).sum(axis=0)


def oob_score(stats, n_classes) -> float:
    """scikit-learn's ``oob_score_`` (accuracy, or R²) from the summed statistics."""
    if n_classes:
        return float(stats[0] / stats[1]) if stats[1] else float("nan")
    sse, sy, syy, n = stats
    sst = syy - sy * sy / n if n else 0.0
    return float(1.0 - sse / sst) if sst > 0 else float("nan")


def pack_for_routing(arrays) -> np.ndarray:
    """Rank 0's routing arrays as one float64 vector (to broadcast through a collective)."""
    v = np.asarray(arrays["value"], np.float64).reshape(arrays["value"].shape[0], -1)
    head = np.array([arrays["tree_offsets"].size, arrays["feature"].size, v.shape[1]], float)
    return np.concatenate([head, arrays["tree_offsets"], arrays["children_left"],
                           arrays["children_right"], arrays["feature"], arrays["bin"],
                           v.reshape(-1)]).astype(np.float64)


def unpack_for_routing(vec) -> dict:
    t1, N, K = (int(x) for x in vec[:3])
    pos = 3
    out = {}
    for name, size in (("tree_offsets", t1), ("children_left", N), ("children_right", N),
                       ("feature", N), ("bin", N)):
        out[name] = vec[pos:pos + size].astype(np.int64)
        pos += size
    out["value"] = vec[pos:pos + N * K].reshape(N, K)
    return out
