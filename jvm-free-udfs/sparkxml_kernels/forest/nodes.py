"""The node store of a forest being grown, and its assembly into scikit-learn's layout."""
from __future__ import annotations

import numpy as np

from .._jit import njit
from .criteria import ABSOLUTE_ERROR, NO_VALUES, is_classification, median_abs_error
from .tree import bitset_words, mask_to_bitset


class NodeStore:
    """All trees' nodes in creation order, as flat arrays numba appends to."""

    def __init__(self, S: int, cap: int = 1024, mask_width: int = 1):
        self.n = 0
        self.S = S
        self.mask_width = mask_width  # bin slots of a categorical split's left set
        self._alloc(cap)

    def _alloc(self, cap):
        old = getattr(self, "a", None)
        a = {"tree": np.empty(cap, np.int64), "parent": np.empty(cap, np.int64),
             "is_left": np.empty(cap, np.int64), "feat": np.empty(cap, np.int64),
             "bl": np.empty(cap, np.int64), "br": np.empty(cap, np.int64),
             "ml": np.empty(cap, np.uint8), "thr": np.empty(cap), "imp": np.empty(cap),
             "sums": np.empty((cap, self.S)), "lo": np.empty(cap), "hi": np.empty(cap),
             "cmask": np.zeros((cap, self.mask_width), np.uint8)}
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
        return (a["tree"], a["parent"], a["is_left"], a["feat"], a["bl"], a["br"], a["ml"],
                a["thr"], a["imp"], a["sums"], a["lo"], a["hi"])


@njit(cache=True, nogil=True)
def _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_ml, st_thr, st_imp, st_sums,
         st_lo, st_hi, i, tree, parent, is_left, imp, total, lo, hi):
    # lo, hi: the node's value bounds under monotonic constraints (its value is clipped)
    st_tree[i] = tree
    st_parent[i] = parent
    st_isleft[i] = is_left
    st_feat[i] = -1
    st_bl[i] = -1
    st_br[i] = -1
    st_ml[i] = 0
    st_thr[i] = np.nan
    st_imp[i] = imp
    for t in range(total.shape[0]):
        st_sums[i, t] = total[t]
    st_lo[i] = lo
    st_hi[i] = hi


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


def assemble(store: NodeStore, n_trees: int, crit: int, n_classes: int, vals, edges,
             monotonic: bool = False, yv=NO_VALUES, categorical: bool = False,
             first_tree: int = 0):
    """All trees in scikit-learn's layout, each renumbered depth-first: a dict of the
    ``predictor.ARRAY_KEYS`` node arrays, ``tree_offsets``, and ``bin`` (left bin per node, -1
    on leaves: rows with bin <= it go left, the same way as by the raw threshold, missing ones
    by ``missing_go_to_left``; what OOB routing of binned rows uses). ``monotonic``: values
    clipped to the nodes' bounds as scikit-learn's ``clip_node_value``; ``yv``:
    absolute_error's target values (its nodes' values are their weighted medians).
    ``categorical``: the dict also holds ``categories_left`` (``tree.TreeArrays``), and a
    categorical split has threshold NaN and ``bin`` -2 (binned rows go by their category's
    bit). The store holds trees ``first_tree .. first_tree + n_trees - 1``."""
    N = store.n
    a = {k: v[:N] for k, v in store.a.items()}
    a["tree"] = a["tree"] - first_tree
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
    miss = vals.shape[1] - 1
    rthr = a["thr"][order][inner]
    rand = ~np.isnan(rthr)  # a random (ExtraTrees) threshold, kept where the bins are exact
    to_inf = (bri == miss) & ~rand  # every present value left, the missing rows right
    exact_r = rand & ~np.isnan(va) & (~np.isnan(vb) | (bri == miss))
    thr_inner = thr[inner]
    thr_inner[to_inf] = np.inf
    thr_inner[exact_r] = rthr[exact_r]
    thr_inner[np.isnan(thr_inner)] = np.inf  # an inexact last bin left: every present value
    thr[inner] = thr_inner
    sums = a["sums"][order]
    if is_classification(crit):
        w = sums[:, 1:].sum(axis=1)
        value = sums[:, 1:] / w[:, None]
    elif crit == ABSOLUTE_ERROR:
        w = sums[:, 1:].sum(axis=1)
        yv = np.ascontiguousarray(yv, np.float64)
        value = np.array([[median_abs_error(s, wi, yv)[0]] for s, wi in zip(sums, w)])
        value = value.reshape(-1, 1)
    else:
        w = sums[:, 1]
        value = (sums[:, 2] / w)[:, None]
    if monotonic:
        v0 = np.minimum(np.maximum(value[:, 0], a["lo"][order]), a["hi"][order])
        value[:, 0] = v0
        if is_classification(crit):
            value[:, 1] = 1 - v0

    def child(c):
        c = c[order]
        return np.where(c >= 0, new[np.maximum(c, 0)] - base, -1)

    # the largest bin whose rows go left: with exact bins an unseen row's bin may lie between
    # the node's two bins (its value then goes by the midpoint); else the left bin itself
    route = np.where(inner, bl, -1)
    exact = (~(np.isnan(va) | np.isnan(vb)) & ~rand) | exact_r
    route_inner = route[inner]
    route_inner[exact] = (vals[fi[exact]] <= thr[inner][exact][:, None]).sum(axis=1) - 1
    route_inner[to_inf] = miss - 1
    route[inner] = route_inner
    extra = {}
    if categorical:
        cat = (bl == -2) & inner
        thr[cat] = np.nan
        route[cat] = -2
        words = bitset_words(vals.shape[1] - 1)
        cl = np.zeros((N, words), np.uint64)
        masks = a["cmask"][order]
        for i in np.flatnonzero(cat):
            cl[i] = mask_to_bitset(masks[i, :vals.shape[1] - 1], words)
        extra["categories_left"] = cl
    return {"children_left": child(left), "children_right": child(right),
            "feature": np.where(inner, feat, -2), "threshold": thr,
            "impurity": a["imp"][order], "n_node_samples": np.rint(sums[:, 0]).astype(np.int64),
            "weighted_n_node_samples": w, "value": value,
            "missing_go_to_left": np.where(inner, a["ml"][order], 0).astype(np.uint8),
            "tree_offsets": offsets, "bin": route, **extra}


def concat_forests(parts: list) -> dict:
    """One forest from :func:`assemble`'s dicts of consecutive tree ranges, in order (node
    ids are per tree, so only ``tree_offsets`` shift)."""
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "tree_offsets"}
    offsets = [np.zeros(1, np.int64)]
    for p in parts:
        offsets.append(offsets[-1][-1] + np.asarray(p["tree_offsets"][1:], np.int64))
    out["tree_offsets"] = np.concatenate(offsets)
    return out
