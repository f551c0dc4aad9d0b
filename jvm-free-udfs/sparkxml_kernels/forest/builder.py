"""One decision tree grown node by node through a collective, replaying scikit-learn.

Every rank holds its own rows (binned features, classes or targets, weights). Rank 0 drives
scikit-learn's builder -- ``DepthFirstTreeBuilder`` (a stack: pop a node, test the leaf rules,
search its split, push right then left child) or, with ``max_leaf_nodes``,
``BestFirstTreeBuilder`` (a max-heap on improvement, ordered as libstdc++'s
``push_heap``/``pop_heap`` order equal improvements) -- with the splitter state that makes its
trees what they are: the xorshift state seeded from ``random_state``, and the ``features`` /
``constant_features`` arrays carried from node to node (``splitter.split_node``).

One collective round per split node: the ranks send the histogram of the split's smaller child
(their rows), rank 0 sums it, derives the sibling by subtraction, continues the depth-first
walk until the next node that splits and sends that decision back. Node numbering, impurities,
sample counts and values are scikit-learn's (``tree.TreeArrays``); with integer weights (and
integer targets for regression) every sum is exact, so the tree does not depend on how rows
are spread over ranks.
"""
from __future__ import annotations

import numpy as np

from .criteria import (
    EPSILON,
    NO_VALUES,
    impurity,
    is_classification,
    n_stats,
    node_weight,
    per_label,
    split_children,
)
from .exactsum import collapse, stat_plan
from .histogram import build_histograms, partition_nodes
from .splitter import split_node
from .tree import (
    NodeList,
    SplitParams,
    clip_value,
    monotonic_children,
    node_value,
    split_threshold,
)

_DONE, _SPLIT = 0.0, 1.0


class _Record:
    __slots__ = ("slot", "hist", "depth", "parent", "is_left", "impurity", "n_constant",
                 "node", "split", "improvement", "is_leaf", "bounds", "middle")

    def __init__(self, slot, depth, parent, is_left, imp, n_constant,
                 bounds=(-np.inf, np.inf)):
        self.slot, self.depth, self.parent, self.is_left = slot, depth, parent, is_left
        self.bounds = bounds  # monotonic constraints' value bounds (scikit-learn's)
        self.middle = 0.0
        self.impurity, self.n_constant = imp, n_constant
        self.hist = None
        self.node = -1
        self.split = None
        self.improvement = 0.0
        self.is_leaf = True


# ------------------------------------------------------------------ libstdc++ heap order
def _push_heap(h, item):
    h.append(item)
    _sift_up(h, len(h) - 1, 0, item)


def _sift_up(h, hole, top, item):
    parent = (hole - 1) // 2
    while hole > top and h[parent].improvement < item.improvement:
        h[hole] = h[parent]
        hole = parent
        parent = (hole - 1) // 2
    h[hole] = item


def _pop_heap(h):
    """std::pop_heap then pop_back: the max, removed; the rest re-heaped as libstdc++ does."""
    n = len(h)
    if n > 1:
        value = h[n - 1]
        h[n - 1] = h[0]
        length, hole, child = n - 1, 0, 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if h[child].improvement < h[child - 1].improvement:
                child -= 1
            h[hole] = h[child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            h[hole] = h[child - 1]
            hole = child - 1
        _sift_up(h, hole, 0, value)
    return h.pop()


class TreeDriver:
    """Rank 0's side: scikit-learn's builder over summed histograms (``__call__`` is the
    collective's ``decide``)."""

    def __init__(self, params: SplitParams, d: int, n_slots: int, vals: np.ndarray, edges,
                 rand_state: int, yv=NO_VALUES, is_cat: np.ndarray | None = None):
        self.p = params
        self.yv = np.ascontiguousarray(yv, np.float64)
        self.d, self.n_slots = d, n_slots
        self.S = n_stats(params.criterion, params.n_classes)
        self.vals = np.ascontiguousarray(vals, np.float64)
        self.edges = edges
        self.state = np.array([rand_state], np.uint32)
        self.features = np.arange(d, dtype=np.int64)
        self.constant = np.zeros(d, np.int64)
        self.fmap = np.arange(d, dtype=np.int64)
        self.nodes = NodeList(params.n_classes if is_classification(params.criterion) else 1)
        self.bins = np.empty(n_slots, np.int64)
        self.st = np.empty((n_slots, self.S))
        self.w_total = None
        self.min_wleaf = 0.0
        self.n_slot_ids = 1
        self.stack = []
        self.heap = []
        self.pending = None
        self.max_split_nodes = params.max_leaf_nodes - 1
        self.best_first = params.max_leaf_nodes > 0
        self.cst = params.internal_cst()
        self.is_cat = np.zeros(0, np.uint8) if is_cat is None else is_cat
        if self.is_cat.size:
            self.nodes.n_categories = n_slots - 1

    # -------------------------------------------------------------- collective entry
    def __call__(self, summed: np.ndarray) -> np.ndarray:
        h = summed.reshape(self.d, self.n_slots, self.S)
        if self.w_total is None:  # the root's histogram
            total = h[0].sum(axis=0)
            self.w_total = node_weight(self.p.criterion, total)
            self.min_wleaf = self.p.min_weight_fraction * self.w_total
            root = _Record(0, 0, -1, False, np.inf, 0)
            root.hist = h.copy()
            if self.best_first:
                self._add_split_node(root, first=True)
                _push_heap(self.heap, root)
            else:
                self.stack.append(root)
        else:
            self._children_arrived(h)
        return self._best_first_walk() if self.best_first else self._depth_first_walk()

    def _children_arrived(self, built):
        parent, left, right, built_left = self.pending
        other = parent.hist - built
        left.hist, right.hist = (built, other) if built_left else (other, built)
        left.hist = np.ascontiguousarray(left.hist)
        right.hist = np.ascontiguousarray(right.hist)
        parent.hist = None
        self.pending = None
        if self.best_first:
            for rec in (left, right):
                self._add_split_node(rec, first=False)
                _push_heap(self.heap, rec)

    # -------------------------------------------------------------- node evaluation
    def _totals(self, rec):
        total = rec.hist[0].sum(axis=0)
        return total, float(total[0]), node_weight(self.p.criterion, total)

    def _leaf_by_rules(self, rec, n, w):
        p = self.p
        return (rec.depth >= p.max_depth or n < p.min_samples_split
                or n < 2 * p.min_samples_leaf or w < 2 * self.min_wleaf)

    def _search(self, rec, total, w, n_known):
        """Split search; returns ((feature, bl, br, missing-go-left, left sums, left set of a
        categorical split or None) or None, n_constant)."""
        p = self.p
        out_left = np.zeros(self.S)
        mask = np.zeros(self.n_slots, np.uint8)
        max_f = p.max_features if p.max_features > 0 else self.d
        f, bl, br, ml, n_const = split_node(
            0, p.criterion, rec.hist, self.fmap, np.zeros((1, 1), np.uint8),
            np.zeros(1, np.int32), 0, 0, np.zeros((1, self.S)), self.vals, total, w,
            self.features, self.constant, n_known, max_f, float(p.min_samples_leaf),
            self.min_wleaf, self.state, self.bins, self.st, out_left, self.cst,
            np.asarray(rec.bounds, np.float64), self.yv, self.is_cat, mask)
        if f < 0:
            return None, n_const
        return (int(f), int(bl), int(br), bool(ml), out_left, mask if bl == -2 else None), \
            n_const

    def _evaluate(self, rec, total, w, n_known):
        """Search, then scikit-learn's post-search leaf test; fills rec.split etc."""
        crit = self.p.criterion
        found, n_const = self._search(rec, total, w, n_known)
        rec.n_constant = n_const
        if found is None:
            return False
        f, bl, br, ml, left, mask = found
        ok, right, wl, wr, il, ir, imp = split_children(
            crit, self.w_total, w, rec.impurity, total, left, self.p.min_impurity_decrease,
            self.yv)
        if not ok:
            return False
        rec.split = (f, bl, br, il, ir, float(left[0]), float(right[0]), ml, mask)
        rec.improvement = imp
        if self.cst.size:  # scikit-learn's criterion.middle_value() of the chosen split
            k = 1 if is_classification(crit) else 2
            rec.middle = left[k] / (2 * wl) + right[k] / (2 * wr)
        return True

    def _add(self, rec, total, n, w, split):
        value = node_value(self.p.criterion, total, w, self.yv)
        if self.cst.size:
            value = clip_value(value, rec.bounds[0], rec.bounds[1],
                               is_classification(self.p.criterion))
        rec.node = self.nodes.add(rec.parent, rec.is_left, n, w, rec.impurity, value)
        if split:
            f, bl, br = rec.split[:3]
            mask = rec.split[8]
            thr = np.nan if mask is not None else \
                split_threshold(f, bl, br, self.vals, self.edges)
            self.nodes.set_split(rec.node, f, thr, rec.split[7],
                                 None if mask is None else mask[:-1])

    def _children(self, rec):
        f, bl, br, il, ir, nl, nr, ml, mask = rec.split
        bl_, br_ = monotonic_children(int(self.cst[f]) if self.cst.size else 0,
                                      rec.bounds[0], rec.bounds[1], rec.middle)
        left = _Record(self.n_slot_ids, rec.depth + 1, rec.node, True, il, rec.n_constant, bl_)
        right = _Record(self.n_slot_ids + 1, rec.depth + 1, rec.node, False, ir,
                        rec.n_constant, br_)
        self.n_slot_ids += 2
        build_left = nl <= nr
        self.pending = (rec, left, right, build_left)
        dec = np.array([_SPLIT, rec.slot, f, bl, 1.0 if build_left else 0.0, left.slot,
                        right.slot, 1.0 if ml else 0.0])
        if self.is_cat.size:  # the left set of a categorical split rides along
            dec = np.concatenate([dec, mask if mask is not None else np.zeros(self.n_slots)])
        return left, right, dec

    # -------------------------------------------------------------- the two builders
    def _depth_first_walk(self):
        crit = self.p.criterion
        while self.stack:
            rec = self.stack.pop()
            total, n, w = self._totals(rec)
            is_leaf = self._leaf_by_rules(rec, n, w)
            if rec.node == -1 and rec.parent == -1 and rec.depth == 0:
                rec.impurity = impurity(crit, total, w, self.yv)
            is_leaf = is_leaf or rec.impurity <= EPSILON
            split = False
            if not is_leaf:
                split = self._evaluate(rec, total, w, rec.n_constant)
            self._add(rec, total, n, w, split)
            if split:
                left, right, dec = self._children(rec)
                self.stack.append(right)
                self.stack.append(left)
                return dec
            rec.hist = None
        return np.array([_DONE])

    def _add_split_node(self, rec, first):
        crit = self.p.criterion
        total, n, w = self._totals(rec)
        if first:
            rec.impurity = impurity(crit, total, w, self.yv)
        is_leaf = self._leaf_by_rules(rec, n, w) or rec.impurity <= EPSILON
        split = False
        if not is_leaf:
            split = self._evaluate(rec, total, w, 0)
        rec.is_leaf = not split
        if not split:
            rec.improvement = 0.0
        self._add(rec, total, n, w, split)

    def _best_first_walk(self):
        while self.heap:
            rec = _pop_heap(self.heap)
            if rec.is_leaf or self.max_split_nodes <= 0:
                self.nodes.set_leaf(rec.node)
                rec.hist = None
                continue
            self.max_split_nodes -= 1
            _, _, dec = self._children(rec)
            return dec
        return np.array([_DONE])


def grow_tree(binned, cls, y, ylny_, rw, params: SplitParams, collective, vals, edges,
              rand_state: int = 1, yv=NO_VALUES, is_cat=None):
    """Grow one tree over the rows of every rank (call on every rank, in lockstep).

    Parameters
    ----------
    binned : uint8 / uint16 (n, d) this rank's binned rows
    cls : int32 (n,) class ids (classification; absolute_error: the index of each row's
        target in ``yv``) ; y, ylny_ : float64 (n,) target, y·ln y
    rw : float64 (n,) row weights (rows with 0 take no part)
    params : SplitParams
    collective : object with ``reduce_and_decide``
    vals : float64 (d, n_slots) exact bin values (NaN: not exact; the last slot: missing
        values, ``bins.tree_binned``); edges : list of bin edges
    rand_state : scikit-learn's splitter seed (``splitter.sklearn_seed(random_state)``)
    yv : float64 (K,) absolute_error's distinct targets, ascending (the same on every rank;
        ``params.n_classes`` = K)
    is_cat : uint8 (d,) 1 for a categorical feature (bin b = category b, no missing rows), or
        None for none

    Returns
    -------
    TreeArrays on rank 0, None elsewhere.
    """
    n, d = binned.shape
    n_slots = vals.shape[1]
    crit = params.criterion
    part = np.flatnonzero(rw > 0).astype(np.int32)
    scratch = np.empty(part.size, np.int32)
    starts, ends = {0: 0}, {0: part.size}
    counts = np.ones((1, n), np.uint8)
    feats = np.arange(d, dtype=np.int64)[None, :]
    zero = np.zeros(1, np.int64)
    is_cat = np.zeros(0, np.uint8) if is_cat is None or not np.any(is_cat) else \
        np.ascontiguousarray(is_cat, np.uint8)
    driver = TreeDriver(params, d, n_slots, vals, edges, rand_state, yv, is_cat) \
        if collective.rank == 0 else None
    # sums that do not depend on the rows' order or ranks (plain, as scikit-learn's, when
    # they are exact anyway: integer weights and targets)
    plan = stat_plan(collective, per_label(crit), params.n_classes, cls, y, ylny_, rw,
                     np.ones(n))
    decide = None if driver is None else \
        (lambda summed: driver(collapse(summed.reshape(-1, plan.width), plan)))

    def hist_of(slot):
        h = np.zeros((1, d, n_slots, plan.width))
        build_histograms(crit, binned, part, [starts[slot]], [ends[slot]], feats, zero, counts,
                         cls, y, ylny_, rw, h, plan)
        return h

    local = hist_of(0)
    while True:
        dec = collective.reduce_and_decide(local.reshape(-1), decide)
        if dec[0] == _DONE:
            break
        slot, f, b, build_left, ls, rs, ml = (int(v) for v in dec[1:8])
        s, e = starts.pop(slot), ends.pop(slot)
        masks = dec[8:].reshape(1, -1) if b == -2 else None
        nl = int(partition_nodes(binned, part, [s], [e], [f], [b], scratch, [ml], n_slots - 1,
                                 masks)[0])
        starts[ls], ends[ls] = s, s + nl
        starts[rs], ends[rs] = s + nl, e
        local = hist_of(ls if build_left else rs)
    return driver.nodes.arrays() if driver is not None else None
