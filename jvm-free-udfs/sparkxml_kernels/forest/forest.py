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

Modules: ``bootstrap`` (row counts), ``levels`` (the per-level split and small-subtree
kernels), ``nodes`` (the node store and its assembly), ``oob`` (out-of-bag statistics); this
module drives the levels.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._jit import njit
from .bootstrap import bootstrap_counts, bootstrap_counts_naive, subsample_class_weights
from .criteria import NO_VALUES, is_classification, n_stats, per_label
from .exactsum import collapse, stat_plan
from .histogram import build_histograms, no_class_weights, partition_nodes
from .levels import _LARGE, _LEAF, _SMALL, _grow_smalls, _split_level
from .nodes import NodeStore, assemble, concat_forests
from .oob import (
    oob_score,
    oob_statistics,
    oob_sums,
    oob_terms,
    pack_for_routing,
    unpack_for_routing,
)
from .splitter import bin_representatives, child_key, draw_subset, node_state
from .tree import SplitParams

# the grower's API in one place (the pieces live in bootstrap, levels, nodes and oob)
__all__ = ["bootstrap_counts", "bootstrap_counts_naive", "grow_forest", "small_node_rows",
           "oob_sums", "oob_terms", "oob_statistics", "oob_score", "pack_for_routing",
           "unpack_for_routing"]


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
def _pack_rows(binned, part, starts, ends, caps, trees, target, rw, counts, tcw, rank, world,
               msg, pos):
    """Write each small node's rows into its rank's slot: [1, bins..., target, weight]
    (the weight in the node's tree: ``histogram.build_histograms``'s)."""
    d = binned.shape[1]
    per_tree = tcw.shape[0] > 0
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
            w = rw[r] * counts[t, r]
            if per_tree:
                w *= tcw[t, np.int64(target[r])]
            msg[o + d + 2] = w
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
                max_message_bytes=64 << 20, on_trees_done=None, balanced_subsample=False,
                yv=NO_VALUES, is_cat=None, n_threads=1):
    """Grow ``n_trees`` trees over the rows of every rank (call on every rank, in lockstep).

    Parameters as :func:`builder.grow_tree`, plus ``keys`` int64 (n,) row content keys,
    ``n_trees``, ``seed``, ``bootstrap`` and ``rate`` (subsamplingRate); ``small_rows``
    overrides the node size up to which a subtree is grown in one process (the same trees
    whatever it is; tests check that). A level takes one reduce per ``max_message_bytes`` of
    histograms and rows (float64 before any float32 narrowing); the trees do not depend on it.
    ``balanced_subsample`` (classification): each tree weighs its rows' classes by
    ``bootstrap.subsample_class_weights`` of its own sample (scikit-learn's
    ``class_weight="balanced_subsample"``), on top of ``rw``. ``yv``: absolute_error's
    target values, ``is_cat``: categorical features, as :func:`builder.grow_tree`'s.
    ``n_threads`` > 1 with a single rank: that many threads grow consecutive groups of trees
    side by side (the kernels release the GIL; the groups share ``max_message_bytes``). A
    tree depends only on its own draws, so the forest is the same whatever ``n_threads``.

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
    reps = bin_representatives(vals, edges) if p.random_splits else np.zeros((0, 0))
    counts = bootstrap_counts(keys, seed, n_trees, bootstrap, rate)
    counts[:, rw <= 0] = 0
    # a tree whose sample is empty (likely on a few rows: e**-n per tree) takes every row
    # once instead: a root without weight has no impurity nor value
    drawn = collective.allreduce_sum((counts > 0).sum(axis=1).astype(np.float64)) \
        if n_trees else np.zeros(0)
    for t in np.flatnonzero(np.asarray(drawn) == 0):
        counts[t, rw > 0] = 1
    tcw = subsample_class_weights(cls, counts, p.n_classes, collective) \
        if balanced_subsample and is_classification(crit) else None
    # histogram sums that do not depend on which rank holds a row nor on the row order
    plan = stat_plan(collective, per_label(crit), p.n_classes, cls, y, ylny_, rw,
                     counts.max(axis=0) if n_trees and n else np.zeros(n), tcw)
    Wd = plan.width
    cst = p.internal_cst()
    is_cat = np.zeros(0, np.uint8) if is_cat is None or not np.any(is_cat) else \
        np.ascontiguousarray(is_cat, np.uint8)
    n_mask = n_slots if is_cat.size else 0  # a categorical split's left set, per record
    w_total = np.zeros(n_trees)  # (each group writes its own trees' entries)
    min_wleaf = np.zeros(n_trees)
    width = d + 3
    target = cls.astype(np.float64) if per_label(crit) else y
    yv = np.ascontiguousarray(yv, np.float64)
    H = mtry * n_slots * Wd
    # [feature, bin, kinds, sizes, children's features, missing-left, categorical left set]
    rw_ = 7 + 2 * mtry + n_mask
    ml_col = 6 + 2 * mtry
    # per-label sums with integer weights: every sum is an integer; while a tree's total weight
    # stays below 2**24 they are exact in float32, which halves what travels each level
    frac = float(np.any(rw != np.round(rw)) or
                 (tcw is not None and bool(np.any(tcw != np.round(tcw)))))
    wmax = rw * (tcw.max() if tcw is not None and tcw.size else 1.0)
    bound = float((counts.astype(np.float64) @ wmax).max()) if n_trees and n else 0.0
    flags = collective.allreduce_sum(np.array([frac, bound]))
    use32 = bool(per_label(crit) and flags[0] == 0 and flags[1] < 2.0 ** 24
                 and plan.plain)
    tcw_arr = no_class_weights() if tcw is None else tcw

    def grow_group(first, stop, max_floats, on_done):
        """Trees ``first..stop-1``, level by level: (``assemble``'s dict on rank 0, timing)."""
        T = stop - first
        per_tree = [np.flatnonzero(counts[t]).astype(np.int32) for t in range(first, stop)]
        offs = np.zeros(T + 1, np.int64)
        offs[1:] = np.cumsum([a.size for a in per_tree])
        part = np.concatenate(per_tree) if per_tree else np.zeros(0, np.int32)
        scratch = np.empty(max((a.size for a in per_tree), default=0), np.int32)
        # the frontier, the same on every rank (rank 0 also keeps what its nodes need)
        fr = {"tree": np.arange(first, stop), "key": np.zeros(T, np.uint64),
              "depth": np.zeros(T, np.int64),
              "imp": np.full(T, np.inf), "parent": np.full(T, -1, np.int64),
              "isleft": np.zeros(T, np.int64), "first": np.ones(T, np.bool_),
              "kind": np.full(T, _LARGE, np.int64), "cap": np.zeros(T, np.int64),
              "feats": np.empty((T, mtry), np.int64), "start": offs[:-1].copy(),
              "end": offs[1:].copy(), "bounds": np.tile([-np.inf, np.inf], (T, 1))}
        state = np.empty(1, np.uint32)
        for t in range(T):
            node_state(seed_u, first + t, np.uint64(0), state)
            draw_subset(d, mtry, state, fr["feats"][t])
        store = NodeStore(S, mask_width=max(n_mask, 1)) if rank == 0 else None
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
                                 msg[:lg.size * H].reshape(lg.size, mtry, n_slots, Wd), plan, tcw)
            pos = lg.size * H
            t1 = clock()
            timing["hist"] += t1 - t0
            timing["message_floats"] += msg.size
            if sm.size:
                _pack_rows(binned, part, fr_["start"][sm], fr_["end"][sm], caps, fr_["tree"][sm],
                           target, rw, counts, tcw_arr, rank, world, msg, pos)
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
                cb = np.empty((2 * m, 2))
                hists = np.ascontiguousarray(collapse(summed[:m * H].reshape(m, mtry, n_slots, Wd),
                                                      plan))
                store.n, nc = _split_level(
                    crit, hists, fr_["feats"][lg], fr_["tree"][lg], fr_["key"][lg], fr_["depth"][lg],
                    fr_["imp"][lg], fr_["parent"][lg], fr_["isleft"][lg], fr_["first"][lg], w_total,
                    min_wleaf, p.min_weight_fraction, vals, reps, seed_u, mtry, p.max_depth,
                    p.min_samples_split, float(p.min_samples_leaf), p.min_impurity_decrease,
                    small_rows, cst, fr_["bounds"][lg], *store.args(), store.n, recs, c["tree"],
                    c["key"], c["depth"], c["imp"], c["parent"], c["isleft"], c["kind"], c["cap"],
                    cf, cb, yv, is_cat, store.a["cmask"])
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
                        fr_["first"][sm], w_total, min_wleaf, p.min_weight_fraction, vals, reps, seed_u,
                        mtry, p.max_depth, p.min_samples_split, float(p.min_samples_leaf),
                        p.min_impurity_decrease, cst, fr_["bounds"][sm], *store.args(), store.n,
                        yv, is_cat, store.a["cmask"])
                timing["small"] += clock() - t4
                kept_children["imp"] = c["imp"][:nc]
                kept_children["parent"] = c["parent"][:nc]
                kept_children["bounds"] = cb[:nc]
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
            recs_parts, imp_parts, parent_parts, bound_parts = [], [], [], []
            for lg, sm in _chunks(lg_all, sm_all, H, fr["cap"] * world * width, max_floats):
                recs, kids = _round(lg, sm)
                recs_parts.append(recs)
                imp_parts.append(kids.get("imp", np.zeros(0)))
                parent_parts.append(kids.get("parent", np.zeros(0, np.int64)))
                bound_parts.append(kids.get("bounds", np.zeros((0, 2))))
            lg = lg_all
            recs = np.concatenate(recs_parts) if recs_parts else np.zeros((0, rw_))
            kept_children = {"imp": np.concatenate(imp_parts),
                             "parent": np.concatenate(parent_parts),
                             "bounds": np.concatenate(bound_parts)} if rank == 0 else {}
            t5 = clock()
            split = recs[:, 0] >= 0 if lg.size else np.zeros(0, bool)
            js = lg[split]
            n_left = partition_nodes(binned, part, fr["start"][js], fr["end"][js],
                                     recs[split, 0].astype(np.int64), recs[split, 1].astype(np.int64),
                                     scratch, recs[split, ml_col] > 0, n_slots - 1,
                                     recs[split, ml_col + 1:] if n_mask else None) \
                if js.size else np.zeros(0, np.int64)
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
            fr["bounds"] = kept_children.get("bounds", np.zeros((k, 2)))
            fr["first"] = np.zeros(k, np.bool_)
            if on_done is not None:
                on_done(T - int(np.unique(fr["tree"]).size))
        timing["reduce"] -= timing["split"] + timing["small"]
        return (assemble(store, T, crit, p.n_classes, vals, edges, monotonic=cst.size > 0, yv=yv,
                         categorical=bool(is_cat.size), first_tree=first)
                if rank == 0 else None), timing

    max_bytes = int(max_message_bytes)
    groups = tree_groups(n_trees, n_threads if world == 1 else 1)
    if len(groups) <= 1:
        notify = None if on_trees_done is None else (lambda done: on_trees_done(done, n_trees))
        res, timing = grow_group(0, n_trees, max(1, max_bytes // 8), notify)
    else:
        done = [0] * len(groups)
        lock = threading.Lock()

        def notifier(g):
            def cb(k):
                with lock:
                    done[g] = k
                    on_trees_done(sum(done), n_trees)
            return None if on_trees_done is None else cb

        floats = max(1, max_bytes // (8 * len(groups)))
        with ThreadPoolExecutor(len(groups)) as pool:
            parts = list(pool.map(lambda g: grow_group(*groups[g], floats, notifier(g)),
                                  range(len(groups))))
        res = concat_forests([r for r, _ in parts])
        # seconds summed over the threads; levels: the deepest group's
        timing = {k: (max if k == "levels" else sum)(t[k] for _, t in parts) for k in parts[0][1]}
    grow_forest.last_timing = timing
    return res, counts


def tree_groups(n_trees: int, n_threads: int) -> list:
    """Consecutive tree ranges ``(first, stop)``, one per thread (at most one per tree)."""
    k = max(1, min(int(n_threads), int(n_trees)))
    cuts = [n_trees * g // k for g in range(k + 1)]
    return [(cuts[g], cuts[g + 1]) for g in range(k)]
