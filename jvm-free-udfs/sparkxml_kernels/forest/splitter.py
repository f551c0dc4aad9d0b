"""Best-split search on binned node statistics, replaying scikit-learn's BestSplitter.

A feature's statistics in a node arrive either as a dense histogram row ``(n_slots, S)`` (the
distributed engine: sums reduced over workers) or as the node's rows themselves (a subtree
grown in one process: the rows are sorted by bin). Both are turned into the same compact form
-- the node's non-empty bins in ascending order with their sums -- and scanned by one kernel,
so both give the same split for the same sums.

What is replayed from scikit-learn (``tree/_splitter.pyx``, ``tree/_utils.pyx``):

* features are visited in a Fisher-Yates order drawn with its xorshift ``our_rand_r`` and
  ``rand_int(low, high) = low + r % (high - low)``; features known to be constant in the parent
  are drawn but skipped, features found constant are moved aside and passed to the children
  (``features`` / ``constant_features`` persist across nodes exactly as the splitter's arrays
  do); the search goes on past ``max_features`` until one non-constant feature was seen;
* a feature is constant when its largest value in the node is within 1e-7 (float32) of the
  smallest; candidate positions skip neighbours within 1e-7 (``FEATURE_THRESHOLD``);
* ``min_samples_leaf`` then ``min_weight_leaf`` reject candidates; a candidate wins only when
  its proxy is strictly greater than the best so far (ties go to the first visited);
* missing values (NaN, the last bin slot): a feature with missing rows in the node is searched
  twice, missing right then missing left, and the split "present left, missing right"
  (threshold +inf) is a candidate; a feature all missing is constant; without missing rows,
  a split sends missing values at prediction to the child with more training rows.

Forests use ``draw_subset``: ``mtry`` features by the same Fisher-Yates draws from a state
hashed from (seed, tree, node), evaluated in draw order; a node whose drawn features are all
constant becomes a leaf (as in Spark MLlib), so the subset does not depend on the data and the
same node gets the same features whether it is grown distributed or in one process.

The slow twins of these searches are in ``split_naive``.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ..inplace import swap
from .criteria import ENTROPY, impurity, node_weight, proxy

RAND_R_MAX = 0x7FFFFFFF
FEATURE_THRESHOLD = np.float32(1e-7)


@njit(cache=True, nogil=True)
def our_rand_r(state):
    """scikit-learn's xorshift32 step on ``state`` (uint32 array of one); returns the draw."""
    s = np.uint32(state[0])
    if s == 0:
        s = np.uint32(1)
    s ^= np.uint32(s << np.uint32(13))
    s ^= np.uint32(s >> np.uint32(17))
    s ^= np.uint32(s << np.uint32(5))
    state[0] = s
    return np.int64(s % np.uint32(0x80000000))


@njit(cache=True, nogil=True)
def rand_int(low, high, state):
    return low + our_rand_r(state) % (high - low)


@njit(cache=True, nogil=True, inline="always")
def draw_candidate(features, n_drawn, n_found, f_i, n_known, state):
    """One step of scikit-learn's Fisher-Yates walk over ``features``: a position drawn from
    [n_drawn, f_i - n_found). One below ``n_known`` holds a feature the parent found constant:
    it moves to ``n_drawn`` and ``(-1, n_drawn + 1)`` is returned (draw again); otherwise
    ``(position + n_found, n_drawn)``, the position of the feature to evaluate."""
    f_j = rand_int(n_drawn, f_i - n_found, state)
    if f_j < n_known:
        swap(features, n_drawn, f_j)
        return -1, n_drawn + 1
    return f_j + n_found, n_drawn


def sklearn_seed(random_state: int) -> int:
    """The splitter's initial ``rand_r_state`` for ``random_state`` (an int), as scikit-learn
    draws it: ``RandomState(random_state).randint(0, RAND_R_MAX)``."""
    return int(np.random.RandomState(int(random_state)).randint(0, RAND_R_MAX))


@njit(cache=True, nogil=True)
def mix64(x):
    """splitmix64 finaliser: a well-mixed uint64 from a uint64."""
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def child_key(key, is_left):
    """Node key of a child from its parent's key: the path from the root, hashed."""
    return mix64(np.uint64(key) * np.uint64(3) + np.uint64(1 + is_left))


@njit(cache=True, nogil=True)
def node_state(seed, tree, key, out):
    """Seed the xorshift state ``out`` (uint32 (1,)) for node ``key`` of ``tree``."""
    h = mix64(mix64(np.uint64(seed) ^ (np.uint64(tree) << np.uint64(32))) ^ np.uint64(key))
    s = np.uint32(h & np.uint64(0xFFFFFFFF))
    out[0] = s if s != 0 else np.uint32(1)


@njit(cache=True, nogil=True)
def draw_subset(d, mtry, state, out):
    """First ``mtry`` features of a Fisher-Yates permutation of 0..d-1 drawn as scikit-learn's
    splitter draws (without constant bookkeeping); ``out`` int64 (>= mtry,). Returns mtry."""
    feats = np.arange(d)
    f_i = d
    for k in range(mtry):
        j = rand_int(0, f_i, state)
        f_i -= 1
        swap(feats, f_i, j)
        out[k] = feats[f_i]
    return mtry


# ------------------------------------------------------------------------------ compaction
@njit(cache=True, nogil=True)
def compact_hist(h, bins_out, st_out):
    """Non-empty bins (count > 0) of one feature's histogram ``h`` (n_slots, S), ascending."""
    m = 0
    S = h.shape[1]
    for b in range(h.shape[0]):
        if h[b, 0] > 0.0:
            bins_out[m] = b
            for s in range(S):
                st_out[m, s] = h[b, s]
            m += 1
    return m


@njit(cache=True, nogil=True)
def compact_rows(binned, rows, s, e, f, rs, bins_out, st_out):
    """Non-empty bins of feature ``f`` over ``rows[s:e]`` with the sums of their rows' stats
    ``rs`` (n, S), ascending (the rows sorted by bin, stably)."""
    n = e - s
    keys = np.empty(n, np.int64)
    for i in range(n):
        keys[i] = binned[rows[s + i], f]
    if n <= 64:  # small nodes (most of them): a stable insertion sort, no allocation
        order = np.empty(n, np.int64)
        for i in range(n):
            k = keys[i]
            j = i
            while j > 0 and keys[order[j - 1]] > k:
                order[j] = order[j - 1]
                j -= 1
            order[j] = i
    else:
        order = np.argsort(keys, kind="mergesort")
    S = rs.shape[1]
    m = 0
    prev = -1
    for i in range(n):
        k = order[i]
        b = keys[k]
        if b != prev:
            bins_out[m] = b
            for t in range(S):
                st_out[m, t] = 0.0
            m += 1
            prev = b
        r = rows[s + k]
        for t in range(S):
            st_out[m - 1, t] += rs[r, t]
    return m


# ------------------------------------------------------------------------------ scan
@njit(cache=True, nogil=True)
def is_constant(bins, m, vals):
    """scikit-learn's test: max value <= min value + 1e-7 in float32 (one bin, or exact bins
    whose values are that close). ``vals`` float64 (n_slots,), NaN where unknown."""
    if m <= 1:
        return True
    hi = vals[bins[m - 1]]
    lo = vals[bins[0]]
    if np.isnan(hi) or np.isnan(lo):
        return False
    return np.float32(hi) <= np.float32(lo) + FEATURE_THRESHOLD


@njit(cache=True, nogil=True)
def monotonic_ok(crit, left, right, wl, wr, cst, lo, hi):
    """scikit-learn's ``check_monotonicity``: both children's values (class 0's fraction, or
    the mean) within the node's bounds [lo, hi] and ordered as ``cst`` (+1: left <= right,
    -1: left >= right; for classification the sign is already flipped to class 0's)."""
    k = 1 if crit <= ENTROPY else 2
    vl = left[k] / wl
    vr = right[k] / wr
    return (vl >= lo and vr >= lo and vl <= hi and vr <= hi
            and (vl - vr) * cst <= 0.0)


# _nrt=False: no reference counting per candidate (see criteria.node_weight)
@njit(cache=True, nogil=True, _nrt=False)
def _candidate(crit, left, total, wn, min_leaf, min_wleaf, right, mono, yv):
    """Proxy of the split with left sums ``left`` (-inf when a leaf rule or the monotonic
    constraint ``mono`` = [sign, lower bound, upper bound] rejects it); ``yv`` the target
    values of absolute_error's labels (``criteria.NO_VALUES`` otherwise)."""
    S = total.shape[0]
    n_left = left[0]
    n_right = total[0] - left[0]
    if n_left < min_leaf or n_right < min_leaf:
        return -np.inf
    wl = node_weight(crit, left)
    wr = wn - wl
    for t in range(S):
        right[t] = total[t] - left[t]
    if mono[0] != 0.0 and not monotonic_ok(crit, left, right, wl, wr, mono[0], mono[1],
                                           mono[2]):
        return -np.inf
    if wl < min_wleaf or wr < min_wleaf:
        return -np.inf
    return proxy(crit, left, right, wl, wr, yv)


@njit(cache=True, nogil=True)
def _feature_mono(cst, f, bounds, out):
    """``out`` = [constraint of feature f (0 without constraints), lower, upper bound]."""
    out[0] = np.float64(cst[f]) if cst.shape[0] > 0 else 0.0
    out[1] = bounds[0]
    out[2] = bounds[1]
    return out


@njit(cache=True, nogil=True)
def feature_constant(bins, m, vals):
    """scikit-learn's constant-feature test in a node whose compact bins ``bins[:m]`` may end
    with the missing slot (the last slot of ``vals``): constant when every value is missing,
    or when none is and the values span at most 1e-7."""
    miss = vals.shape[0] - 1
    if m > 0 and bins[m - 1] == miss:
        return m == 1
    return is_constant(bins, m, vals)


@njit(cache=True, nogil=True)
def scan_feature(crit, bins, st, m, vals, total, wn, min_leaf, min_wleaf, best, left, right,
                 best_left, mono, yv):
    """Scan the candidate positions of one feature (compact sums ``st[:m]``), in
    scikit-learn's order: with missing values in the node (the last compact bin is the missing
    slot), first the positions with the missing rows on the right, then the split of all
    present values left and the missing right (threshold +inf), then the positions with the
    missing rows on the left.

    Returns (position i or -1, proxy, missing-go-left): the left side holds the first
    ``i + 1`` non-empty present bins (plus the missing rows when missing-go-left); ``best`` is
    the proxy to beat (strictly); ``best_left`` receives the winner's left sums. Without
    missing rows, missing-go-left is scikit-learn's rule for prediction: the side with more
    training rows. ``mono`` float64 (3,): [monotonic constraint sign (0: none), the node's
    lower and upper value bounds]; ``yv`` as :func:`_candidate`'s.
    """
    S = st.shape[1]
    miss = vals.shape[0] - 1
    has_miss = m > 0 and bins[m - 1] == miss
    nm = m - 1 if has_miss else m
    best_i = -1
    best_ml = False
    for p in range(2 if has_miss else 1):
        for t in range(S):
            left[t] = st[m - 1, t] if p == 1 else 0.0
        for i in range(nm - 1):
            for t in range(S):
                left[t] += st[i, t]
            a = vals[bins[i]]
            b = vals[bins[i + 1]]
            if not (np.isnan(a) or np.isnan(b)):
                if np.float32(b) <= np.float32(a) + FEATURE_THRESHOLD:
                    continue
            q = _candidate(crit, left, total, wn, min_leaf, min_wleaf, right, mono, yv)
            if q > best:
                best = q
                best_i = i
                best_ml = p == 1 if has_miss else left[0] > total[0] - left[0]
                for t in range(S):
                    best_left[t] = left[t]
        if p == 0 and has_miss and nm >= 1:  # present values left, missing right
            for t in range(S):
                left[t] += st[nm - 1, t]
            q = _candidate(crit, left, total, wn, min_leaf, min_wleaf, right, mono, yv)
            if q > best:
                best = q
                best_i = nm - 1
                best_ml = False
                for t in range(S):
                    best_left[t] = left[t]
    return best_i, best, best_ml


# ------------------------------------------------------------------------------ categories
@njit(cache=True, nogil=True)
def category_order(crit, bins, st, m, keys, yv):
    """Order of the node's categories (compact bins ``bins[:m]``, ascending ids) for the
    prefix scan: by class 1's weighted fraction (binary classification), the weighted mean
    target (regression), or the category's own impurity (multiclass, Spark MLlib's centroid);
    ties by category id (a stable sort of bins already in id order); ``yv`` as
    :func:`_candidate`'s."""
    S = st.shape[1]
    for i in range(m):
        if crit <= ENTROPY:
            w = 0.0
            for c in range(1, S):
                w += st[i, c]
            if w <= 0.0:
                keys[i] = 0.0
            elif S == 3:
                keys[i] = st[i, 2] / w
            else:
                keys[i] = impurity(crit, st[i], w, yv)
        else:
            keys[i] = st[i, 2] / st[i, 1] if st[i, 1] > 0.0 else 0.0
    return np.argsort(keys[:m], kind="mergesort")


@njit(cache=True, nogil=True)
def _category_mask(bins, order, n_left, ml, mask):
    # categories absent from the node (and NaN, the last slot) go where missing values go
    for b in range(mask.shape[0]):
        mask[b] = 1 if ml else 0
    for i in range(order.shape[0]):
        mask[bins[order[i]]] = 1 if i < n_left else 0


@njit(cache=True, nogil=True)
def scan_categorical(crit, bins, st, m, total, wn, min_leaf, min_wleaf, best, left, right,
                     best_left, keys, mask, yv):
    """Best split of a categorical feature (compact sums ``st[:m]``, one bin per category,
    no missing rows): the categories sorted by :func:`category_order`, every prefix of
    ``1 .. m - 1`` of them a candidate left set (Breiman: for binary classification and
    regression the best of these is the best of all ``2**(m-1) - 1`` subsets). Returns
    (position i or -1, proxy, missing-go-left) as :func:`scan_feature`; when a split beats
    ``best``, ``mask`` (uint8 (n_slots,)) gets its left set: 1 for a category going left, and
    for categories absent from the node and the missing slot the side with more training
    rows (``missing-go-left``); ``yv`` as :func:`_candidate`'s."""
    S = st.shape[1]
    order = category_order(crit, bins, st, m, keys, yv)
    for t in range(S):
        left[t] = 0.0
    best_i = -1
    best_ml = False
    no_mono = np.zeros(3)
    for i in range(m - 1):
        for t in range(S):
            left[t] += st[order[i], t]
        q = _candidate(crit, left, total, wn, min_leaf, min_wleaf, right, no_mono, yv)
        if q > best:
            best = q
            best_i = i
            best_ml = left[0] > total[0] - left[0]
            for t in range(S):
                best_left[t] = left[t]
    if best_i >= 0:
        _category_mask(bins, order, best_i + 1, best_ml, mask)
    return best_i, best, best_ml


@njit(cache=True, nogil=True)
def random_categorical_split(crit, bins, st, m, total, wn, min_leaf, min_wleaf, state, left,
                             right, keys, mask, yv):
    """ExtraTrees on a categorical feature: the categories ordered as for the best split,
    and the number of them going left drawn uniformly in 1 .. m - 1. Returns (position or -1,
    proxy, missing-go-left); ``mask`` receives the left set (as :func:`scan_categorical`)."""
    S = st.shape[1]
    order = category_order(crit, bins, st, m, keys, yv)
    p = rand_int(0, m - 1, state)
    for t in range(S):
        left[t] = 0.0
    for i in range(p + 1):
        for t in range(S):
            left[t] += st[order[i], t]
    ml = left[0] > total[0] - left[0]
    q = _candidate(crit, left, total, wn, min_leaf, min_wleaf, right, np.zeros(3), yv)
    if q == -np.inf:
        return -1, q, ml
    _category_mask(bins, order, p + 1, ml, mask)
    return p, q, ml


# ------------------------------------------------------------------------------ node search
@njit(cache=True, nogil=True)
def _feature_sums(mode, f, hist, fmap, binned, rows, s, e, rs, bins, st):
    if mode == 0:
        return compact_hist(hist[fmap[f]], bins, st)
    return compact_rows(binned, rows, s, e, f, rs, bins, st)


@njit(cache=True, nogil=True)
def split_node(mode, crit, hist, fmap, binned, rows, s, e, rs, vals, total, wn, features,
               constant_features, n_known, max_features, min_leaf, min_wleaf, state,
               bins, st, out_left, cst, bounds, yv, is_cat, cat_mask):
    """scikit-learn's ``node_split_best`` over binned sums (see the module docstring).

    Parameters
    ----------
    mode : 0 (histograms ``hist[fmap[f]]``, (n_slots, S) each) or 1 (rows ``rows[s:e]`` of
        ``binned`` with per-row sums ``rs``)
    vals : float64 (d, n_slots)
        Raw value of each exact bin (float32-rounded), NaN where a bin is not one value; the
        last slot holds the missing values.
    total : float64 (S,) node sums; wn its weight
    features, constant_features : int64 (d,), persistent across nodes (mutated)
    n_known : constant features known from the parent
    state : uint32 (1,) xorshift state (advanced)
    bins, st : scratch (n_slots,), (n_slots, S); out_left : (S,) the best split's left sums
    cst : int8 (d,) monotonic constraints (sign already flipped to class 0 for
        classification), or (0,) for none; bounds : float64 (2,) the node's value bounds
    yv : float64 (K,) absolute_error's ascending target values (``criteria.NO_VALUES``
        for the other criteria)
    is_cat : uint8 (d,) 1 for a categorical feature (split by :func:`scan_categorical`), or
        (0,) for none; cat_mask : uint8 (n_slots,) receives a categorical winner's left set

    Returns
    -------
    (feature or -1, left bin, right bin, missing-go-left, n_total_constants)
        The split sends bins <= left bin of ``feature`` left, and the missing slot (the last
        of ``vals``) left when missing-go-left; ``right bin`` is the next non-empty bin (both
        ends of the threshold's midpoint; the missing slot for the +inf threshold). A
        categorical winner has left bin = right bin = -2 and sends the bins of ``cat_mask``
        left.
    """
    d = features.shape[0]
    S = total.shape[0]
    left = np.empty(S)
    right = np.empty(S)
    mono = np.zeros(3)
    keys = np.empty(vals.shape[1])
    f_i, n_visited, n_found, n_drawn, n_total = d, 0, 0, 0, n_known
    best = -np.inf
    best_f = -1
    best_bl = -1
    best_br = -1
    best_ml = False
    while f_i > n_total and (n_visited < max_features
                             or n_visited <= n_found + n_drawn):
        n_visited += 1
        f_j, n_drawn = draw_candidate(features, n_drawn, n_found, f_i, n_known, state)
        if f_j < 0:
            continue
        f = features[f_j]
        m = _feature_sums(mode, f, hist, fmap, binned, rows, s, e, rs, bins, st)
        if feature_constant(bins, m, vals[f]):
            swap(features, f_j, n_total)  # to the block of constant features
            n_found, n_total = n_found + 1, n_total + 1
            continue
        f_i -= 1
        swap(features, f_i, f_j)  # to the block of drawn features
        if is_cat.shape[0] > 0 and is_cat[f] != 0:
            i, best, ml = scan_categorical(crit, bins, st, m, total, wn, min_leaf, min_wleaf,
                                           best, left, right, out_left, keys, cat_mask, yv)
            if i >= 0:
                best_f, best_bl, best_br, best_ml = f, -2, -2, ml
            continue
        i, best, ml = scan_feature(crit, bins, st, m, vals[f], total, wn, min_leaf,
                                   min_wleaf, best, left, right, out_left,
                                   _feature_mono(cst, f, bounds, mono), yv)
        if i >= 0:
            best_f, best_bl, best_br, best_ml = f, bins[i], bins[i + 1], ml
    for k in range(n_known):
        features[k] = constant_features[k]
    for k in range(n_known, n_known + n_found):
        constant_features[k] = features[k]
    return best_f, best_bl, best_br, best_ml, n_total


@njit(cache=True, nogil=True)
def random_feature_split(crit, bins, st, m, reps, total, wn, min_leaf, min_wleaf, state,
                         left, right, mono, yv):
    """scikit-learn's random split of one feature (``node_split_random``): a threshold drawn
    uniformly between the node's smallest and largest present values (the largest drawn
    gives the smallest), and, with missing rows in the node, their side drawn 50/50.

    ``reps`` float64 (n_slots,): each bin's value (exact bins) or representative (the middle
    of its edges); the present bins with ``reps <= threshold`` go left. Returns (position i
    or -1, proxy, missing-go-left, threshold); -1 when a leaf rule rejects the split (the
    feature is then skipped, as scikit-learn skips it).
    """
    S = st.shape[1]
    miss = reps.shape[0] - 1
    has_miss = m > 0 and bins[m - 1] == miss
    nm = m - 1 if has_miss else m
    lo = reps[bins[0]]
    hi = reps[bins[nm - 1]]
    thr = (hi - lo) * np.float64(our_rand_r(state)) / np.float64(RAND_R_MAX) + lo
    if thr == hi:
        thr = lo
    ml = False
    if has_miss:
        ml = rand_int(0, 2, state) == 1
    for t in range(S):
        left[t] = st[m - 1, t] if ml else 0.0
    i = -1
    for k in range(nm):
        if reps[bins[k]] > thr:
            break
        for t in range(S):
            left[t] += st[k, t]
        i = k
    if not has_miss:
        ml = left[0] > total[0] - left[0]
    q = _candidate(crit, left, total, wn, min_leaf, min_wleaf, right, mono, yv)
    if q == -np.inf:
        return -1, q, ml, thr
    return i, q, ml, thr


@njit(cache=True, nogil=True)
def split_subset(mode, crit, hist, fmap, binned, rows, s, e, rs, vals, total, wn, subset, k,
                 min_leaf, min_wleaf, bins, st, out_left, reps, rstate, out_thr, cst, bounds,
                 yv, is_cat, cat_mask):
    """Forest split search over the drawn ``subset[:k]`` in order (constant ones skipped).
    Returns (feature or -1, left bin, right bin, missing-go-left) as :func:`split_node`.

    With ``reps`` of shape (d, n_slots) the splits are random (ExtraTrees,
    :func:`random_feature_split`, draws from ``rstate``): the best of one random threshold
    per feature wins, and ``out_thr[0]`` receives its threshold; ``reps`` of shape (0, 0):
    the best threshold of every feature. ``cst``, ``bounds``: monotonic constraints,
    ``yv``, ``is_cat``, ``cat_mask`` as :func:`split_node`'s (random splits of a categorical
    feature: :func:`random_categorical_split`)."""
    S = total.shape[0]
    left = np.empty(S)
    right = np.empty(S)
    tmp = np.empty(S)
    mono = np.zeros(3)
    keys = np.empty(vals.shape[1])
    cand = np.empty(vals.shape[1], np.uint8)
    rand = reps.shape[0] > 0
    best = -np.inf
    best_f = -1
    best_bl = -1
    best_br = -1
    best_ml = False
    for j in range(k):
        f = subset[j]
        m = _feature_sums(mode, f, hist, fmap, binned, rows, s, e, rs, bins, st)
        if feature_constant(bins, m, vals[f]):
            continue
        if is_cat.shape[0] > 0 and is_cat[f] != 0:
            if rand:
                i, q, ml = random_categorical_split(crit, bins, st, m, total, wn, min_leaf,
                                                    min_wleaf, rstate, tmp, right, keys,
                                                    cand, yv)
                if i >= 0 and q > best:
                    best = q
                    best_f, best_bl, best_br, best_ml = f, -2, -2, ml
                    for t in range(S):
                        out_left[t] = tmp[t]
                    for t in range(cand.shape[0]):
                        cat_mask[t] = cand[t]
                continue
            i, best, ml = scan_categorical(crit, bins, st, m, total, wn, min_leaf, min_wleaf,
                                           best, left, right, out_left, keys, cat_mask, yv)
            if i >= 0:
                best_f, best_bl, best_br, best_ml = f, -2, -2, ml
            continue
        mono_f = _feature_mono(cst, f, bounds, mono)
        if rand:  # one random threshold, kept if it beats the best so far
            i, q, ml, thr = random_feature_split(crit, bins, st, m, reps[f], total, wn,
                                                 min_leaf, min_wleaf, rstate, tmp, right,
                                                 mono_f, yv)
            if i >= 0 and q > best:
                best = q
                out_thr[0] = thr
                for t in range(S):
                    out_left[t] = tmp[t]
            else:
                i = -1
        else:
            i, best, ml = scan_feature(crit, bins, st, m, vals[f], total, wn, min_leaf,
                                       min_wleaf, best, left, right, out_left, mono_f, yv)
        if i >= 0:
            best_f, best_bl, best_br, best_ml = f, bins[i], bins[i + 1], ml
    return best_f, best_bl, best_br, best_ml


def bin_representatives(vals, edges) -> np.ndarray:
    """float64 (d, n_slots): each bin's value where bins are exact, else the middle of its
    edges (the outer bins: their one edge); what random thresholds are drawn between."""
    reps = np.array(vals, np.float64)
    for f, e in enumerate(edges):
        e = np.asarray(e, np.float64)
        nb = e.size + 1
        if nb < 2:
            continue
        mid = np.empty(nb)
        mid[0] = e[0]
        mid[-1] = e[-1]
        mid[1:-1] = (e[:-1] + e[1:]) / 2.0
        row = reps[f, :nb]
        row[np.isnan(row)] = mid[np.isnan(row)]
    return reps
