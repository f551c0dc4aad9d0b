"""One classification tree grown on its raw rows in scikit-learn's own summation order.

``builder.grow_tree`` sums node statistics over bins with ``exactsum``'s levels: the sums do
not depend on the order or the spread of the rows, and they equal scikit-learn's whenever
scikit-learn's own float64 sums are exact (integer weights: plain data, bootstrap counts).
With non-integer weights (``class_weight``, ``balanced_subsample``) scikit-learn's sums carry
the rounding of the order it adds samples in, and deep in a tree two candidate splits whose
proxies differ only by that rounding occur: scikit-learn keeps the first one that is strictly
larger *in its rounding*. This module reproduces that order, so the tree is scikit-learn's
node for node with any weights -- at the price of depending on the row order (one process,
rows in their original order), which is why it is a separate grower and not the default.

The order, as scikit-learn's ``BestSplitter`` with its ``DensePartitioner`` makes it:

* ``samples`` holds the rows of non-zero weight in index order; each node owns a contiguous
  range of it. A node's total sums (and ``weighted_n_node_samples``) add its samples in the
  range's current order.
* each visited feature sorts the node's range in place by the feature's float32 values with
  scikit-learn's introsort (:func:`introsort3`: median-of-three pivot, three-way partition,
  heapsort past depth ``2 * floor(log2 n)``, insertion sort below 16 rows); the sort starts
  from the order the previous feature's sort left, so ties end up in an order that depends on
  every feature visited before.
* the left sums of a candidate position are updated from the previous evaluated position
  forward, or -- when the end is nearer -- restarted from the node totals and reduced by the
  samples from the end backwards (the criterion's ``update`` / ``reverse_reset``); the right
  sums are the totals minus the left.
* a row missing the feature (NaN) is swapped to the end of the range before the sort; with
  missing rows, the candidates are scanned twice, first with them at the end (the last
  candidate sends every present value left, threshold +inf), then with the two blocks
  swapped (missing rows first, each block in its order) so the left side starts with them.
* after the search, the range is partitioned in place on the best split (a two-pointer swap
  partition of the order the last visited feature's sort left), the left sums are rebuilt in
  that order for the children's impurities, and the children inherit those sub-ranges.

Features are drawn as in ``splitter.split_node`` (same xorshift, constant-feature
bookkeeping). Supported: gini / entropy, depth-first and best-first (``max_leaf_nodes``)
growth, missing values; :func:`grow_tree_ordered` refuses monotonic constraints and random
splits.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from ..inplace import swap, swap_pair
from .criteria import ENTROPY, EPSILON, improvement, impurity, proxy
from .splitter import FEATURE_THRESHOLD, draw_candidate
from .tree import NodeList, SplitParams, TreeArrays


# ------------------------------------------------------------------------------ the sort
@njit(cache=True, nogil=True)
def _sift_down(v, s, lo, start, end):
    root = start
    while True:
        child = root * 2 + 1
        mx = root
        if child < end and v[lo + mx] < v[lo + child]:
            mx = child
        if child + 1 < end and v[lo + mx] < v[lo + child + 1]:
            mx = child + 1
        if mx == root:
            break
        swap_pair(v, s, lo + root, lo + mx)
        root = mx


@njit(cache=True, nogil=True)
def _heapsort(v, s, lo, n):
    start = (n - 2) // 2
    while True:
        _sift_down(v, s, lo, start, n)
        if start == 0:
            break
        start -= 1
    end = n - 1
    while end > 0:
        swap_pair(v, s, lo, lo + end)
        _sift_down(v, s, lo, 0, end)
        end -= 1


@njit(cache=True, nogil=True)
def _median3(v, lo, n):
    a = v[lo]
    b = v[lo + n // 2]
    c = v[lo + n - 1]
    if a < b:
        if b < c:
            return b
        if a < c:
            return c
        return a
    if b < c:
        if a < c:
            return a
        return c
    return b


@njit(cache=True, nogil=True)
def _insertion(v, s, lo, n):
    for i in range(1, n):
        tv = v[lo + i]
        ts = s[lo + i]
        j = i
        while j > 0 and v[lo + j - 1] > tv:
            v[lo + j] = v[lo + j - 1]
            s[lo + j] = s[lo + j - 1]
            j -= 1
        v[lo + j] = tv
        s[lo + j] = ts


@njit(cache=True, nogil=True)
def introsort3(v, s, lo, n):
    """Sort ``v[lo:lo + n]`` (float32, no NaN) and permute ``s`` (int64) alongside, leaving
    equal values in exactly the order scikit-learn's ``simultaneous_sort`` (three-way
    introsort) leaves them. Its recursion on the lower part becomes a stack here: the parts
    are disjoint, so the order they are sorted in does not change the result."""
    if n == 0:
        return
    maxd0 = 2 * int(math.log2(n))
    # pending parts are disjoint and hold >= 2 rows each
    st_lo = np.empty(n // 2 + 2, np.int64)
    st_n = np.empty_like(st_lo)
    st_d = np.empty_like(st_lo)
    st_lo[0], st_n[0], st_d[0] = lo, n, maxd0
    top = 1
    while top > 0:
        top -= 1
        a, m, maxd = st_lo[top], st_n[top], st_d[top]
        heaped = False
        while m > 15:
            if maxd <= 0:
                _heapsort(v, s, a, m)
                heaped = True
                break
            maxd -= 1
            pivot = _median3(v, a, m)
            i = 0
            lt = 0
            r = m
            while i < r:
                if v[a + i] < pivot:
                    swap_pair(v, s, a + i, a + lt)
                    i += 1
                    lt += 1
                elif v[a + i] > pivot:
                    r -= 1
                    swap_pair(v, s, a + i, a + r)
                else:
                    i += 1
            if lt > 1:  # parts of 0 or 1 rows are sorted already
                st_lo[top], st_n[top], st_d[top] = a, lt, maxd
                top += 1
            a += r
            m -= r
        if not heaped:
            _insertion(v, s, a, m)


# ------------------------------------------------------------------------------ criterion
@njit(cache=True, nogil=True)
def node_sums(cls, w, samples, start, end, total):
    """``total`` (K + 1,) <- [rows, Σw of each class] over ``samples[start:end]`` added in
    that order; returns their Σw (added in the same order, as scikit-learn's separate
    ``weighted_n_node_samples``)."""
    for c in range(total.shape[0]):
        total[c] = 0.0
    wn = 0.0
    for p in range(start, end):
        i = samples[p]
        total[1 + cls[i]] += w[i]
        wn += w[i]
    total[0] = end - start
    return wn


@njit(cache=True, nogil=True)
def _update(cls, w, samples, start, end, pos, new_pos, total, wn, left, right, wl):
    """scikit-learn's ``ClassificationCriterion.update`` from ``pos`` to ``new_pos``:
    returns the new Σw of the left side; ``left`` / ``right`` updated in place."""
    if new_pos - pos <= end - new_pos:
        for p in range(pos, new_pos):
            i = samples[p]
            left[1 + cls[i]] += w[i]
            wl += w[i]
    else:  # reverse_reset: left = the totals, then remove the rows from the end down
        for c in range(1, total.shape[0]):
            left[c] = total[c]
        wl = wn
        for p in range(end - 1, new_pos - 1, -1):
            i = samples[p]
            left[1 + cls[i]] -= w[i]
            wl -= w[i]
    left[0] = new_pos - start
    right[0] = end - new_pos
    for c in range(1, total.shape[0]):
        right[c] = total[c] - left[c]
    return wl


@njit(cache=True, nogil=True)
def _reset(left, right, total):
    left[:] = 0.0
    right[:] = total


@njit(cache=True, nogil=True)
def _gather_sorted(X, f, samples, fv, start, end):
    """scikit-learn's ``sort_samples_and_feature_values``: the rows with a missing value of
    ``f`` swapped to the end of the range (a two-pointer pass), the others' values copied to
    ``fv`` and sorted with :func:`introsort3`; returns the number missing."""
    n_miss = 0
    i = start
    cur = end - 1
    while i <= cur:
        if np.isnan(X[samples[cur], f]):
            n_miss += 1
            cur -= 1
            continue
        if np.isnan(X[samples[i], f]):
            t = samples[i]
            samples[i] = samples[cur]
            samples[cur] = t
            n_miss += 1
            cur -= 1
        fv[i] = X[samples[i], f]
        i += 1
    introsort3(fv, samples, start, end - start - n_miss)
    return n_miss


@njit(cache=True, nogil=True)
def _rotate(samples, fv, start, end, k):
    """[start, start + k) and [start + k, end) swap places, each keeping its order."""
    n = end - start
    s2 = samples[start:end].copy()
    v2 = fv[start:end].copy()
    for j in range(n):
        samples[start + j] = s2[(j + k) % n]
        fv[start + j] = v2[(j + k) % n]


# ------------------------------------------------------------------------------ node split
@njit(cache=True, nogil=True)
def split_node_ordered(crit, X, cls, w, samples, fv, start, end, total, wn, w_total, imp,
                       features, constant_features, n_known, max_features, min_leaf,
                       min_wleaf, state, out):
    """scikit-learn's ``node_split_best`` on ``samples[start:end]`` (dense; NaN: missing),
    permuting ``samples`` as it does.

    Parameters
    ----------
    crit : GINI or ENTROPY
    X : float32 (n, d) rows; cls : int32 (n,) classes; w : float64 (n,) weights
    samples : int64 (m,) the tree's sample order (mutated in [start, end))
    fv : float32 (m,) scratch for the feature values
    total : float64 (K + 1,) the node's :func:`node_sums`; wn their Σw; w_total the root's
    imp : the node's impurity
    features, constant_features : int64 (d,), persistent across nodes (mutated)
    n_known : constant features known from the parent; state : uint32 (1,) xorshift state
    out : float64 (5,) receives [threshold, left impurity, right impurity, improvement,
        missing-go-left]

    Returns
    -------
    (feature or -1, position of the first right sample, n_total_constants)
    """
    d = features.shape[0]
    K1 = total.shape[0]
    left = np.zeros(K1)
    right = np.zeros(K1)
    novals = np.zeros(0)
    f_i, n_visited, n_found, n_drawn, n_total = d, 0, 0, 0, n_known
    best = -np.inf
    best_f = -1
    best_pos = end
    best_thr = 0.0
    best_ml = False
    while f_i > n_total and (n_visited < max_features or n_visited <= n_found + n_drawn):
        n_visited += 1
        f_j, n_drawn = draw_candidate(features, n_drawn, n_found, f_i, n_known, state)
        if f_j < 0:
            continue
        f = features[f_j]
        n_miss = _gather_sorted(X, f, samples, fv, start, end)
        end_nm = end - n_miss
        if end_nm == start or (n_miss == 0
                               and fv[end_nm - 1] <= fv[start] + FEATURE_THRESHOLD):
            swap(features, f_j, n_total)  # to the block of constant features
            n_found, n_total = n_found + 1, n_total + 1
            continue
        f_i -= 1
        swap(features, f_i, f_j)  # to the block of drawn features
        for search in range(2 if n_miss > 0 else 1):
            ml = search == 1
            if ml:  # the missing rows to the front, both blocks keeping their order
                _rotate(samples, fv, start, end, end_nm - start)
            _reset(left, right, total)
            wl = 0.0
            pos = start
            p = start
            while p < end:
                # scikit-learn's next_p: the next position past ties (within 1e-7); with
                # missing rows on the right, end_nm (present left, missing right) is the
                # last candidate; on the left, the positions start past them
                if not ml and p == end_nm:
                    p = end
                    continue
                if ml and p == start:
                    p = start + n_miss
                p += 1
                lim = end if ml else end_nm
                while p < lim and fv[p] <= fv[p - 1] + FEATURE_THRESHOLD:
                    p += 1
                if p == end:
                    continue
                n_left = p - start
                n_right = end - p
                if n_left < min_leaf or n_right < min_leaf:
                    continue
                wl = _update(cls, w, samples, start, end, pos, p, total, wn, left, right, wl)
                pos = p
                wr = wn - wl
                if wl < min_wleaf or wr < min_wleaf:
                    continue
                q = proxy(crit, left, right, wl, wr, novals)
                if q > best:
                    best = q
                    best_f = f
                    best_pos = p
                    if p == end_nm and not ml:
                        best_thr = np.inf
                    else:
                        best_thr = np.float64(fv[p - 1]) / 2.0 + np.float64(fv[p]) / 2.0
                    best_ml = n_left > n_right if n_miss == 0 else ml
    if best_pos < end:
        a = start
        b = end
        while a < b:
            x = X[samples[a], best_f]
            go_left = best_ml if np.isnan(x) else np.float64(x) <= best_thr
            if go_left:
                a += 1
            else:
                b -= 1
                t = samples[a]
                samples[a] = samples[b]
                samples[b] = t
        _reset(left, right, total)
        wl = _update(cls, w, samples, start, end, start, best_pos, total, wn, left, right, 0.0)
        wr = wn - wl
        il = impurity(crit, left, wl, novals)
        ir = impurity(crit, right, wr, novals)
        out[0] = best_thr
        out[1] = il
        out[2] = ir
        out[3] = improvement(crit, w_total, wn, imp, left, right, wl, wr, il, ir)
        out[4] = 1.0 if best_ml else 0.0
    for k in range(n_known):
        features[k] = constant_features[k]
    for k in range(n_known, n_known + n_found):
        constant_features[k] = features[k]
    return best_f, best_pos, n_total


@njit(cache=True, nogil=True)
def _sequential_sum(w):
    s = 0.0
    for i in range(w.shape[0]):
        s += w[i]
    return s


# ------------------------------------------------------------------------------ the tree
def _checked(X, cls, rw, params: SplitParams):
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    X = np.ascontiguousarray(X, np.float32)
    if np.any(np.isinf(X)):
        raise ValueError("X has infinite values (or values beyond float32's range): "
                         "grow_tree_ordered takes finite values and NaN for missing ones")
    n = X.shape[0]
    cls = np.asarray(cls)
    rw = np.asarray(rw, np.float64)
    if cls.shape != (n,) or rw.shape != (n,):
        raise ValueError(f"cls and rw must have shape ({n},), got {cls.shape} and {rw.shape}")
    if params.criterion > ENTROPY:
        raise ValueError(f"criterion={params.criterion} is invalid here: grow_tree_ordered "
                         "grows classification trees (gini, entropy)")
    K = int(params.n_classes)
    if K < 1 or np.any(cls != np.round(cls)) or cls.min() < 0 or cls.max() >= K:
        raise ValueError(f"cls must hold integer class ids in [0, n_classes={K})")
    if not np.all(np.isfinite(rw)) or np.any(rw < 0):
        raise ValueError("rw must hold finite non-negative weights")
    if not np.any(rw > 0):
        raise ValueError("rw has no positive weight: nothing to grow")
    if params.random_splits or params.monotonic_cst is not None:
        raise ValueError("grow_tree_ordered grows best-split trees without constraints: "
                         "random_splits and monotonic_cst are invalid here")
    return X, np.ascontiguousarray(cls, np.int32), rw


def grow_tree_ordered(X, cls, rw, params: SplitParams, rand_state: int = 1) -> TreeArrays:
    """scikit-learn's ``DecisionTreeClassifier`` (splitter="best") on the rows
    of ``X`` in their order, with its float64 rounding for any weights.

    Parameters
    ----------
    X : float (n, d), finite or NaN (missing); compared in float32 as scikit-learn does
    cls : int (n,) class ids in [0, params.n_classes)
    rw : float64 (n,) non-negative row weights (rows with 0 take no part)
    params : SplitParams with a gini / entropy criterion, no monotonic constraints, no
        random splits (``max_leaf_nodes`` > 0: best-first growth)
    rand_state : scikit-learn's splitter seed (``splitter.sklearn_seed(random_state)``)

    Returns
    -------
    TreeArrays, node for node scikit-learn's ``tree_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkxml_kernels.forest.tree import SplitParams
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> t = grow_tree_ordered(X, [0, 0, 1, 1], np.array([0.5, 1.5, 1.0, 0.25]),
    ...                       SplitParams(0, n_classes=2))
    >>> t.feature.tolist(), t.threshold.tolist(), t.n_node_samples.tolist()
    ([0, -2, -2], [1.5, -2.0, -2.0], [4, 2, 2])
    """
    X, cls, rw = _checked(X, cls, rw, params)
    g = _Grower(X, cls, rw, params, rand_state)
    root = g.add_node(0, g.samples.size, 0, -1, False, np.inf, 0)
    if params.max_leaf_nodes > 0:
        g.best_first(root)
    else:
        g.depth_first(root)
    return g.nodes.arrays()


class _Record:
    """A node added to the tree with its split found (scikit-learn's stack / frontier
    record): ``pos`` = ``end`` when it is a leaf."""

    __slots__ = ("node", "start", "end", "pos", "depth", "improvement", "il", "ir",
                 "n_const", "is_leaf")

    def __init__(self, node, start, end, pos, depth, improvement, il, ir, n_const, is_leaf):
        self.node, self.start, self.end, self.pos, self.depth = node, start, end, pos, depth
        self.improvement, self.il, self.ir = improvement, il, ir
        self.n_const, self.is_leaf = n_const, is_leaf


class _Grower:
    """scikit-learn's tree builders over :func:`split_node_ordered`: ``add_node`` is the
    part both builders share (node sums, leaf rules, split search, the node appended)."""

    def __init__(self, X, cls, rw, p: SplitParams, rand_state):
        self.X, self.cls, self.rw, self.p = X, cls, rw, p
        self.samples = np.flatnonzero(rw != 0.0).astype(np.int64)
        self.fv = np.empty(self.samples.size, np.float32)
        self.w_total = float(_sequential_sum(rw))  # the splitter's running sum over rows
        self.min_wleaf = p.min_weight_fraction * float(np.sum(rw))  # numpy's, as sklearn
        self.max_f = p.max_features if p.max_features > 0 else X.shape[1]
        self.state = np.array([rand_state], np.uint32)
        self.features = np.arange(X.shape[1], dtype=np.int64)
        self.constant = np.zeros(X.shape[1], np.int64)
        self.nodes = NodeList(p.n_classes)
        self.total = np.empty(p.n_classes + 1)
        self.out = np.zeros(5)

    def add_node(self, start, end, depth, parent, is_left, imp, n_const) -> _Record:
        """``imp`` inf for the root (computed here); the best-first builder passes
        ``n_const`` 0 (its splitter forgets the parent's constant features)."""
        p, total, out = self.p, self.total, self.out
        n = end - start
        wn = float(node_sums(self.cls, self.rw, self.samples, start, end, total))
        if parent < 0:
            imp = float(impurity(p.criterion, total, wn, np.zeros(0)))
        is_leaf = (depth >= p.max_depth or n < p.min_samples_split
                   or n < 2 * p.min_samples_leaf or wn < 2 * self.min_wleaf
                   or imp <= EPSILON)
        f, pos = -1, end
        if not is_leaf:
            f, pos, n_const = split_node_ordered(
                p.criterion, self.X, self.cls, self.rw, self.samples, self.fv, start, end,
                total, wn, self.w_total, imp, self.features, self.constant, n_const,
                self.max_f, float(p.min_samples_leaf), self.min_wleaf, self.state, out)
            is_leaf = pos >= end or out[3] + EPSILON < p.min_impurity_decrease
        node = self.nodes.add(parent, is_left, n, wn, imp, total[1:] / wn)
        if is_leaf:
            return _Record(node, start, end, end, depth, 0.0, imp, imp, n_const, True)
        self.nodes.set_split(node, f, out[0], bool(out[4]))
        return _Record(node, start, end, int(pos), depth, float(out[3]), float(out[1]),
                       float(out[2]), n_const, False)

    def depth_first(self, root):
        """``DepthFirstTreeBuilder``: a stack; the right child pushed first, so the left
        subtree is grown (and numbered) first."""
        stack = [root]
        while stack:
            r = stack.pop()
            if not isinstance(r, _Record):  # a child, added (numbered) when popped
                r = self.add_node(*r)
            if not r.is_leaf:
                stack.append((r.pos, r.end, r.depth + 1, r.node, False, r.ir, r.n_const))
                stack.append((r.start, r.pos, r.depth + 1, r.node, True, r.il, r.n_const))

    def best_first(self, root):
        """``BestFirstTreeBuilder``: a max-heap on improvement (libstdc++'s order among
        equals); a popped node splits while ``max_leaf_nodes - 1`` splits remain, its two
        children added (left, then right) with their splits searched."""
        from .builder import _pop_heap, _push_heap

        heap = []
        _push_heap(heap, root)
        budget = self.p.max_leaf_nodes - 1
        while heap:
            r = _pop_heap(heap)
            if r.is_leaf or budget <= 0:
                self.nodes.set_leaf(r.node)
                continue
            budget -= 1
            left = self.add_node(r.start, r.pos, r.depth + 1, r.node, True, r.il, 0)
            right = self.add_node(r.pos, r.end, r.depth + 1, r.node, False, r.ir, 0)
            _push_heap(heap, left)
            _push_heap(heap, right)
