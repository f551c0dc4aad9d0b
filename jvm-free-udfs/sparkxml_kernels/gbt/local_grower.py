"""One worker's tree, grown in one compiled loop.

:class:`~sparkxml_kernels.gbt.grower.TreeGrower` grows a tree round by round in Python and
calls each round's kernels one at a time, so that a collective can sum the histograms between
them. A worker alone (a ``LocalCollective``) has nothing to exchange, and on small data the
Python around those calls costs as much as the kernels: a loss-guided tree of 31 leaves is 30
rounds, and on Adult's 32,561 rows and 14 categorical features that Python was half of a
100-tree fit. :func:`grow_local` runs the same rounds inside one numba function, depth-wise
(every valid split of a level) or loss-guided (best gain first): the same kernels on the same
arrays in the same order, and so the same trees, bit for bit
(``tests/kernels/test_gbt_local_grower.py`` grows both ways).

The grower takes this loop (:func:`eligible`) for trees of one worker on one thread, dense
bins, no monotone constraints, per-level or per-node column sampling or interaction
constraints, and a bounded size (loss-guided: ``max_leaves`` > 0); it grows every other tree
itself. Its root round stays in Python (the root's sums are numpy's, as the round-by-round
grower takes them).

Node histograms are rows of one pool, ``(slots, d, n_slots, 2)`` float64 (:func:`pool_rows`:
at most one histogram per candidate, plus a round's parents, built nodes and siblings), so
:func:`eligible` also bounds the pool's size. Only the slots a search reads are zeroed and
subtracted (each feature's real bins and its missing slot, as ``histogram.subtract_used``):
beside a 5,000-category feature most slots of the others are never used.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .._dtypes import FLOAT, LEVELS, NODE
from .._jit import njit
from ..collective import LocalCollective
from .categorical import _find_cat_splits
from .histogram import (
    _build_histograms,
    _build_histograms_blocks,
    _combine_used,
    build_histograms,
)
from .histogram_quantized import _build_quantized, build_histograms_quantized, chunk_rows
from .partition import _split_slice
from .quantize import scale_histograms
from .splitting import _NO_BOUNDS, _NO_CONSTRAINTS, TIE_RTOL, _find_splits, split_threshold

# the histogram pool's limit: above it the grower grows the tree round by round
POOL_BYTES = 256 * 2 ** 20


def tree_nodes(params) -> int:
    """The most nodes a tree of ``params`` (TreeParams) can have, or 0 when unbounded."""
    if params.grow_policy == "depthwise":
        return 2 ** (params.max_depth + 1) - 1 if params.max_depth <= 16 else 0
    return 2 * params.max_leaves - 1 if params.max_leaves > 0 else 0


def pool_rows(params) -> int:
    """Histograms held at once: loss-guided, one per open candidate (at most one per leaf)
    plus a round's parent, built child and sibling; depth-wise, a level's parents and their
    two children."""
    if params.grow_policy == "depthwise":
        return 3 * 2 ** max(params.max_depth - 1, 0) + 1
    return params.max_leaves + 4


def eligible(grower, node_masks) -> bool:
    """Whether ``grower`` (a TreeGrower) grows its next tree with :func:`grow_local`: one
    worker on one thread, dense bins, no monotone constraints, no per-node feature masks
    (``node_masks``: the tree's NodeFeatures), a bounded tree whose histograms fit
    :data:`POOL_BYTES`."""
    p = grower.params
    if (not grower.compiled or not tree_nodes(p) or grower.n_threads != 1
            or grower._columns is None or grower._mono is not None or node_masks is not None
            or type(grower.collective) is not LocalCollective):
        return False
    d = grower.binned.shape[1]
    return pool_rows(p) * d * grower.n_slots * 16 <= POOL_BYTES


def _pool(grower):
    """The grower's histogram pool: (complex128 (m, d * n_slots), float64 (m, d, n_slots, 2))
    views of one array, kept between trees."""
    m = pool_rows(grower.params)
    d = grower.binned.shape[1]
    pool = grower._bufs.get("compiled")
    if pool is None or pool.shape[0] != m:
        pool = grower._bufs["compiled"] = np.empty((m, d * grower.n_slots), np.complex128)
    return pool, pool.view(FLOAT).reshape(m, d, grower.n_slots, 2)


def grow_local(grower, gradhess, k, hist_features, searches, empty_rel, quant=None):
    """Grow one tree of ``grower`` on ``grower._partition[:k]`` with gradients ``gradhess``
    (float64 (n, 2)); ``hist_features`` int32, the features histograms accumulate;
    ``searches`` the (numerical, categorical) feature masks, uint8 (d,) or None where that
    search does not run; ``empty_rel`` the grower's empty-bin fraction of the root's hessian;
    ``quant`` the grower's quantised gradients (packed int32 words, scales, levels; then
    ``gradhess`` is None): each built histogram sums the levels and is scaled, as the
    grower's rounds do. Returns the growth state the grower's ``_finish`` reads."""
    p = grower.params
    sp, cat = p.split, p.cat
    binned = grower.binned
    d = binned.shape[1]
    pool_c, pool_f = _pool(grower)
    # the root round as the grower runs it: its histogram, then its sums by numpy
    pool_f[0].fill(0.0)
    if quant is None:
        build_histograms(binned, grower._partition, [0], [k], gradhess, pool_f[0:1],
                         hist_features, 1, grower._has_missing)
        packed, (sg, sh), chunk = np.zeros(0, LEVELS), (1.0, 1.0), 1
        gh = gradhess.view(np.complex128).reshape(-1)
    else:
        packed, (sg, sh), bins = quant
        build_histograms_quantized(binned, grower._partition, [0], [k], packed, pool_f[0:1],
                                   bins, hist_features, 1, grower._has_missing)
        scale_histograms(pool_f[0], (sg, sh))
        chunk, gh = chunk_rows(bins), np.zeros(0, np.complex128)
    G0, H0 = pool_f[0, hist_features[0]].sum(axis=0)
    num_mask, cat_mask = searches
    zero = np.zeros(d, np.uint8)
    W = max(grower._W, 1)
    n_max = tree_nodes(p)
    out = SimpleNamespace(
        feature=np.full(n_max, -1, NODE), bin=np.full(n_max, -1, np.int32),
        default_left=np.zeros(n_max, np.uint8), gain=np.zeros(n_max, FLOAT),
        left=np.full(n_max, -1, NODE), right=np.full(n_max, -1, NODE),
        G=np.zeros(n_max, FLOAT), H=np.zeros(n_max, FLOAT), start=np.zeros(n_max, np.int64),
        end=np.zeros(n_max, np.int64), is_cat=np.zeros(n_max, np.uint8),
        sets=np.zeros((n_max, W), np.uint32))
    n = _grow(binned, grower._columns, gh, grower._partition, grower._scratch, np.int64(k), hist_features, grower.n_bins,
              zero if num_mask is None else num_mask, zero if cat_mask is None else cat_mask,
              num_mask is not None, cat_mask is not None, binned.dtype == np.uint8,
              bool(grower._has_missing), np.int64(np.iinfo(binned.dtype).max),
              float(G0), float(H0), float(sp.reg_lambda), float(sp.reg_alpha),
              float(sp.min_split_loss), float(sp.min_child_weight), float(empty_rel),
              np.int64(cat.max_cat_to_onehot), float(cat.cat_smooth), float(cat.cat_l2),
              np.int64(cat.max_cat_threshold), p.grow_policy == "depthwise",
              np.int64(p.max_depth), np.int64(p.max_leaves), pool_c, pool_f, out.feature,
              out.bin, out.default_left, out.gain, out.left, out.right, out.G, out.H,
              out.start, out.end, out.is_cat, out.sets, quant is not None, packed,
              np.int64(chunk), float(sg), float(sh),
              pool_f.reshape(pool_f.shape[0], -1))
    st = SimpleNamespace(**{name: getattr(out, name)[:n] for name in vars(out)})
    st.threshold = np.full(n, np.nan)
    for node in np.flatnonzero((st.left >= 0) & (st.is_cat == 0)):
        st.threshold[node] = split_threshold(grower.edges, int(st.feature[node]),
                                             int(st.bin[node]))
    st.value_bounds = None
    return st


@njit(cache=True, nogil=True)
def _scale(h, sg, sh):
    # quantize.scale_histograms of one flat histogram: integer sums -> gradient and hessian
    for t in range(0, h.shape[0], 2):
        h[t] *= sg
        h[t + 1] *= sh


@njit(cache=True, nogil=True, inline="always")
def _zero_used(h, n_bins):
    # zero the slots a histogram build adds to and a search reads (histogram.copy_used's):
    # beside one wide feature most of every feature's slots are never touched
    miss = h.shape[1] - 1
    for f in range(h.shape[0]):
        for t in range(n_bins[f]):
            h[f, t, 0] = 0.0
            h[f, t, 1] = 0.0
        h[f, miss, 0] = 0.0
        h[f, miss, 1] = 0.0


@njit(cache=True, nogil=True, inline="always")
def _can_expand(depthwise, depth, H, n_leaves, max_depth, max_leaves, mcw):
    # TreeGrower._can_expand
    if depthwise:
        if depth >= max_depth:
            return False
    else:
        if max_depth > 0 and depth >= max_depth:
            return False
        if max_leaves > 0 and n_leaves >= max_leaves:
            return False
    return H > 0.0 and H >= 2.0 * mcw


@njit(cache=True, nogil=True, inline="always")
def _needs_hist(depthwise, depth, HL, HR, n_leaves, max_depth, max_leaves, mcw):
    # TreeGrower._children_need_hist
    return (_can_expand(depthwise, depth, HL, n_leaves, max_depth, max_leaves, mcw)
            or _can_expand(depthwise, depth, HR, n_leaves, max_depth, max_leaves, mcw))


@njit(cache=True, nogil=True, inline="always")
def _take(free, n_free):
    if n_free == 0:
        raise RuntimeError("local grower: histogram pool exhausted")
    return free[n_free - 1], n_free - 1


@njit(cache=True, nogil=True)
def _grow(binned, columns, gh, partition, scratch, k, features, n_bins, num_mask, cat_mask,
          has_num, has_cat, u8, has_missing, miss_code, G0, H0, lam, alpha, gamma, mcw,
          empty_rel, onehot_max, smooth, cat_l2, max_thr, depthwise, max_depth, max_leaves,
          pool_c, pool_f, feature, bin_, dl, gain, left, right, G, H, start, end, is_cat,
          sets, quant, packed, chunk, sg, sh, pool_q):
    # The rounds of TreeGrower.grow/_decide/_apply, one worker: pool row 0 holds the root's
    # histogram on entry. Returns the number of nodes. ``quant``: histograms sum the packed
    # levels into pool_q (pool_f's rows, flat) and are scaled by (sg, sh).
    n_max = feature.shape[0]
    n_pool = pool_f.shape[0]
    W = sets.shape[1]
    empty = empty_rel * H0
    depth = np.zeros(n_max, np.int64)
    rows = np.zeros(n_max, FLOAT)          # rows of a node (category row estimates)
    slot = np.full(n_max, -1, np.int64)    # pool row holding a node's histogram
    # a candidate's best split, kept until it is expanded or the tree ends
    c_open = np.zeros(n_max, np.uint8)
    c_feat = np.zeros(n_max, np.int64)
    c_bin = np.zeros(n_max, np.int64)
    c_dl = np.zeros(n_max, np.uint8)
    c_gain = np.zeros(n_max, FLOAT)
    c_sums = np.zeros((n_max, 4), FLOAT)
    c_cat = np.zeros(n_max, np.uint8)
    free = np.empty(n_pool, np.int64)      # a stack of free pool rows
    n_free = 0
    for q in range(n_pool - 1, 0, -1):
        free[n_free] = q
        n_free += 1
    # searches over one node: (1, d, n_slots, 2) views of the pool, (1, ...) outputs
    sums1 = np.empty((1, 2), FLOAT)
    counts1 = np.empty(1, FLOAT)
    f1 = np.empty(1, NODE)
    b1 = np.empty(1, np.int32)
    dl1 = np.empty(1, np.uint8)
    g1 = np.empty(1, FLOAT)
    l1 = np.empty((1, 2), FLOAT)
    r1 = np.empty((1, 2), FLOAT)
    cf1 = np.empty(1, NODE)
    cg1 = np.empty(1, FLOAT)
    cl1 = np.empty((1, 2), FLOAT)
    cr1 = np.empty((1, 2), FLOAT)
    cs1 = np.zeros((1, W), np.uint32)
    st1 = np.zeros(1, np.int64)
    en1 = np.zeros(1, np.int64)
    out_nodes = np.empty(n_max, np.int64)
    cands = np.empty(n_max, np.int64)
    # this round's nodes: built (b), sibling (s, -1 for the root), parent (p, -1 for the
    # root), and the pool row of b's histogram
    pend_b = np.empty(n_max, np.int64)
    pend_s = np.empty(n_max, np.int64)
    pend_p = np.empty(n_max, np.int64)
    built = np.empty(n_max, np.int64)
    G[0] = G0
    H[0] = H0
    start[0] = 0
    end[0] = k
    rows[0] = k
    n_nodes = 1
    n_leaves = 1
    pend_b[0], pend_s[0], pend_p[0], built[0] = 0, -1, -1, 0
    n_pend = 1
    first = True
    while n_pend > 0:
        if not first:  # (the root's histogram came built)
            for j in range(n_pend):
                q, n_free = _take(free, n_free)
                built[j] = q
                _zero_used(pool_f[q], n_bins)
                st1[0] = start[pend_b[j]]
                en1[0] = end[pend_b[j]]
                if quant:
                    _build_quantized(binned, partition, st1, en1, features, packed,
                                     pool_q[q:q + 1], miss_code, has_missing, chunk)
                    _scale(pool_q[q], sg, sh)
                elif u8:
                    _build_histograms(binned, partition, st1, en1, features, gh,
                                      pool_c[q:q + 1], has_missing)
                else:
                    _build_histograms_blocks(binned, partition, st1, en1, features, gh,
                                             pool_c[q:q + 1], miss_code, has_missing)
        first = False
        # ---- decide: the candidates' histograms, their best splits
        n_c = 0
        for j in range(n_pend):
            pb, ps, pp = pend_b[j], pend_s[j], pend_p[j]
            if has_cat:
                rows[pb] = end[pb] - start[pb]
                if ps >= 0:
                    rows[ps] = rows[pp] - rows[pb]
            b_cand = _can_expand(depthwise, depth[pb], H[pb], n_leaves, max_depth,
                                 max_leaves, mcw)
            s_cand = ps >= 0 and _can_expand(depthwise, depth[ps], H[ps], n_leaves,
                                             max_depth, max_leaves, mcw)
            if s_cand:
                q, n_free = _take(free, n_free)
                _combine_used(pool_f[slot[pp]], pool_f[built[j]], pool_f[q], n_bins, True)
                slot[ps] = q
                cands[n_c] = ps
                n_c += 1
            if b_cand:
                slot[pb] = built[j]
                cands[n_c] = pb
                n_c += 1
            else:
                free[n_free] = built[j]
                n_free += 1
            if pp >= 0:  # the parent's histogram is no longer needed
                free[n_free] = slot[pp]
                n_free += 1
                slot[pp] = -1
        for i in range(1, n_c):  # candidates in node order, as the grower sorts them
            c = cands[i]
            j = i - 1
            while j >= 0 and cands[j] > c:
                cands[j + 1] = cands[j]
                j -= 1
            cands[j + 1] = c
        n_out = 0
        for i in range(n_c):
            c = cands[i]
            q = slot[c]
            h1 = pool_f[q:q + 1]
            sums1[0, 0] = G[c]
            sums1[0, 1] = H[c]
            num_ok = False
            cat_ok = False
            if has_num:
                _find_splits(h1, sums1, n_bins, num_mask, lam, alpha, gamma, mcw, empty,
                             _NO_CONSTRAINTS, _NO_BOUNDS, f1, b1, dl1, g1, l1, r1)
                num_ok = f1[0] >= 0
            if has_cat:
                counts1[0] = rows[c]
                _find_cat_splits(h1, sums1, n_bins, cat_mask, lam, alpha, gamma, mcw, empty,
                                 onehot_max, smooth, cat_l2, max_thr, counts1, cf1, cg1, cl1,
                                 cr1, cs1)
                cat_ok = cf1[0] >= 0
            if cat_ok and num_ok:  # decision.split_record
                cat_ok = cg1[0] > g1[0] + TIE_RTOL * 2.0 * abs(g1[0])
            if not (cat_ok or num_ok):
                free[n_free] = q
                n_free += 1
                slot[c] = -1
                continue
            c_open[c] = 1
            if cat_ok:
                c_cat[c] = 1
                c_feat[c] = cf1[0]
                c_bin[c] = -1
                c_dl[c] = 0
                c_gain[c] = cg1[0]
                c_sums[c, 0], c_sums[c, 1] = cl1[0, 0], cl1[0, 1]
                c_sums[c, 2], c_sums[c, 3] = cr1[0, 0], cr1[0, 1]
                for w in range(W):
                    sets[c, w] = cs1[0, w]
            else:
                c_cat[c] = 0
                c_feat[c] = f1[0]
                c_bin[c] = b1[0]
                c_dl[c] = dl1[0]
                c_gain[c] = g1[0]
                c_sums[c, 0], c_sums[c, 1] = l1[0, 0], l1[0, 1]
                c_sums[c, 2], c_sums[c, 3] = r1[0, 0], r1[0, 1]
            if depthwise:  # every valid split of the level, in node order
                c_open[c] = 0
                out_nodes[n_out] = c
                n_out += 1
        # ---- loss-guided: the expansions of this round, best gain first, ties to the lower
        # node id (the grower's heap)
        nl = n_leaves
        while not depthwise and (max_leaves == 0 or nl < max_leaves):
            best = -1
            for c in range(n_nodes):
                if c_open[c] and (best < 0 or c_gain[c] > c_gain[best]):
                    best = c
            if best < 0:
                break
            c_open[best] = 0
            out_nodes[n_out] = best
            n_out += 1
            nl += 1
            if _needs_hist(False, depth[best] + 1, c_sums[best, 1], c_sums[best, 3], nl,
                           max_depth, max_leaves, mcw):
                break
            free[n_free] = slot[best]
            n_free += 1
            slot[best] = -1
        for i in range(n_out):
            c = out_nodes[i]
            if slot[c] >= 0 and not _needs_hist(depthwise, depth[c] + 1, c_sums[c, 1],
                                                c_sums[c, 3], n_leaves + n_out, max_depth,
                                                max_leaves, mcw):
                free[n_free] = slot[c]
                n_free += 1
                slot[c] = -1
        # ---- apply: split the rows, add the children, the next round's nodes
        n_pend = 0
        for i in range(n_out):
            c = out_nodes[i]
            s = start[c]
            e = end[c]
            f = c_feat[c]
            nleft = _split_slice(columns[f], partition, scratch, s, e, c_bin[c],
                                 c_dl[c] != 0, miss_code, c_cat[c] != 0, sets, c)
            lc = n_nodes
            rc = n_nodes + 1
            n_nodes += 2
            depth[lc] = depth[rc] = depth[c] + 1
            start[lc], end[lc], start[rc], end[rc] = s, s + nleft, s + nleft, e
            G[lc], H[lc], G[rc], H[rc] = c_sums[c, 0], c_sums[c, 1], c_sums[c, 2], c_sums[c, 3]
            feature[c] = f
            bin_[c] = c_bin[c]
            dl[c] = c_dl[c]
            gain[c] = c_gain[c]
            is_cat[c] = c_cat[c]
            left[c] = lc
            right[c] = rc
            n_leaves += 1
            if _needs_hist(depthwise, depth[c] + 1, H[lc], H[rc], n_leaves, max_depth,
                           max_leaves, mcw):
                if H[lc] <= H[rc]:
                    pend_b[n_pend], pend_s[n_pend] = lc, rc
                else:
                    pend_b[n_pend], pend_s[n_pend] = rc, lc
                pend_p[n_pend] = c
                n_pend += 1
    return n_nodes
