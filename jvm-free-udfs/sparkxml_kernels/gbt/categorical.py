"""Categorical splits: LightGBM's many-vs-many search on categories sorted by their gradient
statistics, on the same histograms as numerical splits.

For a node with sums (G, H) and a categorical feature with ``k`` categories (its real bins;
see binned.py for how categories become bins):

* ``k <= max_cat_to_onehot``: one-vs-rest -- each category alone on the left, the rest (and
  missing values) on the right; gain as for numerical splits;
* otherwise the categories with at least ``cat_smooth`` rows are sorted by
  ``G_c / (H_c + cat_smooth)`` (a stable sort: ties keep the bin order) and scanned as
  prefixes from both ends, at most ``min(max_cat_threshold, (used + 1) // 2)`` categories
  on the left; the children's scores
  use ``lambda + cat_l2``, the parent's plain ``lambda`` (LightGBM's ``GetSplitGains`` with
  ``l2 += cat_l2`` against its ``min_gain_shift``). A prefix stops growing once the right side
  falls below ``min_child_weight``. A category's rows are estimated as LightGBM estimates
  them, ``round(H_c * n / H)`` for a node of ``n`` rows (the histograms hold no counts); for
  squared error without weights that is the count itself.

The missing bin (NaN, and categories the sketch never saw) always goes right, like LightGBM's
unseen categories. Leaf values below a categorical split use plain ``lambda`` (LightGBM uses
``lambda + cat_l2`` for the two children of the split; with ``cat_l2 = 0`` the two agree).
Unlike LightGBM, ``min_data_per_group`` is not applied (every prefix is a candidate).

The chosen left set travels as a bitset over bins: ``ceil(n_slots / 32)`` uint32 words, bit
``b % 32`` of word ``b // 32`` set when bin ``b`` goes left.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._dtypes import FLOAT, INDPTR, NODE
from .._jit import njit
from .splitting import K_RT_EPS, TIE_RTOL, _score, split_gain, write_children


@dataclass(frozen=True)
class CatParams:
    """LightGBM's categorical knobs (camelCase names of the Spark params in brackets).

    max_cat_to_onehot (maxCatToOnehot) : 4
    cat_smooth (catSmooth) : 10.0
    cat_l2 (catL2) : 10.0
    max_cat_threshold (maxCatThreshold) : 32
    """

    max_cat_to_onehot: int = 4
    cat_smooth: float = 10.0
    cat_l2: float = 10.0
    max_cat_threshold: int = 32

    def __post_init__(self):
        if self.max_cat_to_onehot < 1 or self.max_cat_threshold < 1:
            raise ValueError(f"maxCatToOnehot and maxCatThreshold must be >= 1: {self}")
        if not (self.cat_smooth >= 0 and self.cat_l2 >= 0):
            raise ValueError(f"catSmooth and catL2 must be >= 0: {self}")


def n_set_words(n_slots: int) -> int:
    """uint32 words of a node's bin bitset."""
    return (int(n_slots) + 31) // 32


@njit(cache=True, nogil=True, inline="always")
def _enough_rows(h, factor, smooth):
    # LightGBM's filter RoundInt(hess * cnt_factor) >= cat_smooth, RoundInt(x) = int(x + 0.5)
    if factor < 0.0:
        return h >= smooth
    return np.floor(h * factor + 0.5) >= smooth


@njit(cache=True, nogil=True)
def _find_cat_splits(hists, sums, n_bins, cat_mask, lam, alpha, gamma, mcw, empty, onehot_max,
                     smooth, cat_l2, max_thr, counts, out_feature, out_gain, out_left,
                     out_right, out_sets):
    m, d, n_slots, _ = hists.shape
    keys = np.empty(n_slots)
    order = np.empty(n_slots, np.int64)
    chosen = np.empty(n_slots, np.int64)
    best_bins = np.empty(n_slots, np.int64)
    lam2 = lam + cat_l2
    for j in range(m):
        G = sums[j, 0]
        H = sums[j, 1]
        # rows of a category, estimated as LightGBM does: its hessian times the node's rows
        # per unit of hessian (counts[j] < 0: no row counts, the hessian itself)
        factor = counts[j] / H if counts[j] >= 0.0 and H > 0.0 else -1.0
        parent = _score(G, H, lam, alpha, mcw)
        tie = TIE_RTOL * abs(parent)
        best = -np.inf
        margin = -np.inf
        bf, bcount, bgl, bhl = -1, 0, 0.0, 0.0  # the best split's feature, its bin count, ...
        for f in range(d):
            if cat_mask[f] == 0:
                continue
            nb = n_bins[f]
            hf = hists[j, f]
            if nb <= onehot_max:
                for t in range(nb):
                    gl = hf[t, 0]
                    hl = hf[t, 1]
                    if hl <= empty:
                        continue
                    gain = split_gain(gl, hl, G - gl, H - hl, parent, lam, alpha, mcw, False,
                                      0, -np.inf, np.inf)
                    if gain > margin:
                        best, bf, bcount, bgl, bhl = gain, f, 1, gl, hl
                        best_bins[0] = t
                        margin = best + tie + TIE_RTOL * abs(best)
                continue
            used = 0
            for t in range(nb):
                if hf[t, 1] > empty and _enough_rows(hf[t, 1], factor, smooth):
                    order[used] = t
                    keys[used] = hf[t, 0] / (hf[t, 1] + smooth)
                    used += 1
            if used < 2:
                continue
            idx = np.argsort(keys[:used], kind="mergesort")
            max_num = min(max_thr, (used + 1) // 2)
            for direction in range(2):
                gl = 0.0
                hl = 0.0
                for i in range(min(used, max_num)):
                    t = order[idx[i]] if direction == 0 else order[idx[used - 1 - i]]
                    chosen[i] = t
                    gl += hf[t, 0]
                    hl += hf[t, 1]
                    if hl < mcw:
                        continue
                    gr = G - gl
                    hr = H - hl
                    if hr < mcw:
                        break
                    gain = _score(gl, hl, lam2, alpha, mcw) + _score(gr, hr, lam2, alpha, mcw) \
                        - parent
                    if gain > margin:
                        best, bf, bcount, bgl, bhl = gain, f, i + 1, gl, hl
                        best_bins[:i + 1] = chosen[:i + 1]
                        margin = best + tie + TIE_RTOL * abs(best)
        out_sets[j, :] = 0
        gain = best - gamma
        if bf >= 0 and gain > K_RT_EPS:
            out_feature[j] = bf
            out_gain[j] = gain
            write_children(out_left, out_right, j, G, H, bgl, bhl)
            for i in range(bcount):
                b = best_bins[i]
                out_sets[j, b >> 5] |= np.uint32(1) << np.uint32(b & 31)
        else:
            out_feature[j] = -1
            out_gain[j] = -np.inf
            out_left[j, 0] = 0.0
            out_left[j, 1] = 0.0
            out_right[j, 0] = 0.0
            out_right[j, 1] = 0.0


@dataclass
class CatSplitResult:
    """Best categorical split per node (``feature == -1``: none).

    feature int32 (m,); gain float64 (m,); left_sums, right_sums float64 (m, 2);
    sets uint32 (m, W): the bins going left.
    """

    feature: np.ndarray
    gain: np.ndarray
    left_sums: np.ndarray
    right_sums: np.ndarray
    sets: np.ndarray


def find_categorical_splits(hists, sums, n_bins, cat_mask, params, cat: CatParams,
                            empty_hess: float = 0.0, counts=None) -> CatSplitResult:
    """Best categorical split of each of ``m`` nodes over the features in ``cat_mask``.

    Parameters
    ----------
    hists : float64 (m, d, n_slots, 2); sums : float64 (m, 2); n_bins : int32 (d,)
    cat_mask : uint8 (d,)
        Categorical features allowed to split.
    params : splitting.SplitParams
    cat : CatParams
    empty_hess : float
        Categories with hessian sum <= this are ignored.
    counts : float64 (m,), optional
        Rows of each node over all workers. A category joins the many-vs-many search when
        its estimated rows, ``round(H_c * counts[j] / H)``, reach ``cat_smooth``
        (LightGBM's estimate); without counts, when its hessian sum ``H_c`` does.
    """
    hists = np.ascontiguousarray(hists, FLOAT)
    m, _, n_slots, _ = hists.shape
    counts = np.full(m, -1.0) if counts is None else np.ascontiguousarray(counts, FLOAT)
    res = CatSplitResult(np.empty(m, NODE), np.empty(m, FLOAT), np.empty((m, 2), FLOAT),
                         np.empty((m, 2), FLOAT), np.zeros((m, n_set_words(n_slots)), np.uint32))
    _find_cat_splits(hists, np.ascontiguousarray(sums, FLOAT), np.asarray(n_bins, np.int32),
                     np.asarray(cat_mask, np.uint8), float(params.reg_lambda),
                     float(params.reg_alpha), float(params.min_split_loss),
                     float(params.min_child_weight), float(empty_hess),
                     int(cat.max_cat_to_onehot), float(cat.cat_smooth), float(cat.cat_l2),
                     int(cat.max_cat_threshold), counts, res.feature, res.gain,
                     res.left_sums, res.right_sums, res.sets)
    return res


def find_categorical_splits_naive(hists, sums, n_bins, cat_mask, params, cat: CatParams,
                                  empty_hess: float = 0.0, counts=None) -> CatSplitResult:
    """Slow twin of :func:`find_categorical_splits`: candidate sets enumerated as Python
    lists, children's sums recomputed from scratch."""
    lam, alpha, mcw = params.reg_lambda, params.reg_alpha, params.min_child_weight

    def score(g, h, lam_):
        if h < mcw or h <= 0:
            return 0.0
        t = np.sign(g) * max(abs(g) - alpha, 0.0)
        return t * t / (h + lam_)

    m, d, n_slots, _ = hists.shape
    res = CatSplitResult(np.full(m, -1, NODE), np.full(m, -np.inf), np.zeros((m, 2)),
                         np.zeros((m, 2)), np.zeros((m, n_set_words(n_slots)), np.uint32))
    for j in range(m):
        G, H = sums[j]
        parent = score(G, H, lam)
        best = None
        if counts is None:
            def enough(h):
                return h >= cat.cat_smooth
        else:
            def enough(h, rows=counts[j] / H if H > 0 else 0.0):
                return int(h * rows + 0.5) >= cat.cat_smooth
        for f in range(d):
            if not cat_mask[f]:
                continue
            nb = int(n_bins[f])
            hf = hists[j, f]
            cands = []  # (left bins, lambda of the children)
            if nb <= cat.max_cat_to_onehot:
                cands = [([t], lam) for t in range(nb) if hf[t, 1] > empty_hess]
            else:
                used = [t for t in range(nb) if hf[t, 1] > empty_hess and enough(hf[t, 1])]
                if len(used) >= 2:
                    srt = sorted(used, key=lambda t: hf[t, 0] / (hf[t, 1] + cat.cat_smooth))
                    k = min(cat.max_cat_threshold, (len(used) + 1) // 2, len(used))
                    for seq in (srt, srt[::-1]):
                        for i in range(k):
                            left = seq[:i + 1]
                            if H - hf[left, 1].sum() < mcw:
                                break
                            cands.append((left, lam + cat.cat_l2))
            for left, lam_c in cands:
                ls = hf[left].sum(axis=0)
                rs = np.array([G, H]) - ls
                if ls[1] < mcw or rs[1] < mcw:
                    continue
                g = score(*ls, lam_c) + score(*rs, lam_c) - parent
                if best is None or g > best[0] + TIE_RTOL * (abs(parent) + abs(best[0])):
                    best = (g, f, left, ls, rs)
        if best is not None and best[0] - params.min_split_loss > K_RT_EPS:
            g, f, left, ls, rs = best
            res.feature[j], res.gain[j] = f, g - params.min_split_loss
            res.left_sums[j], res.right_sums[j] = ls, rs
            for b in left:
                res.sets[j, b // 32] |= np.uint32(1 << (b % 32))
    return res


# --------------------------------------------------------------------------------------------
# raw category sets for the predictor


def bins_of_set(words) -> np.ndarray:
    """Bins whose bit is set in a node's bitset (int64, ascending)."""
    w = np.asarray(words, np.uint32)
    bits = (w[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & np.uint32(1)
    return np.flatnonzero(bits.reshape(-1))


def value_bitset(values) -> np.ndarray:
    """uint32 bitset over non-negative integer category values (LightGBM's
    ``cat_threshold`` layout): bit ``v % 32`` of word ``v // 32``."""
    v = np.asarray(values, np.int64)
    if v.size == 0:
        return np.zeros(1, np.uint32)
    if v.min() < 0:
        raise ValueError("category values must be >= 0")
    out = np.zeros(int(v.max()) // 32 + 1, np.uint32)
    np.bitwise_or.at(out, v // 32, (np.uint32(1) << (v % 32).astype(np.uint32)))
    return out


def check_categories(values, name: str) -> np.ndarray:
    """Category values of one feature as sorted float64, refusing what cannot be a category:
    LightGBM's rule, non-negative integers below 2**31 - 1."""
    v = np.asarray(values, FLOAT)
    bad = v[~np.isnan(v) & ((v < 0) | (v != np.floor(v)) | (v >= 2**31 - 1))]
    if bad.size:
        raise ValueError(f"categoricalCols: feature '{name}' holds the value {bad[0]!r}; "
                         f"categories must be integers in [0, 2**31 - 1)")
    return np.unique(v[~np.isnan(v)])


def raw_category_sets(trees, categories):
    """(cat_ptr, cat_words) of grower trees with categorical splits (bins -> values), or
    (None, None) when no tree has one.

    Node i of the trees taken in order (tree by tree) owns ``cat_words[cat_ptr[i]:cat_ptr[i
    + 1]]``: the :func:`value_bitset` of the category values its set sends left (no words
    for a node without a category set)."""
    if not any(getattr(t, "is_cat", None) is not None and t.is_cat.any() for t in trees):
        return None, None
    if categories is None:
        raise ValueError("trees with categorical splits need the features' categories")
    is_cat = np.concatenate([np.zeros(t.n_nodes, np.uint8) if getattr(t, "is_cat", None) is None
                             else np.asarray(t.is_cat, np.uint8) for t in trees])
    W = max(t.cat_sets.shape[1] for t in trees if getattr(t, "is_cat", None) is not None)
    sets = np.zeros((is_cat.size, W), np.uint32)
    feature = np.concatenate([np.asarray(t.feature, np.int64) for t in trees])
    at = 0
    for t in trees:
        if getattr(t, "is_cat", None) is not None:
            sets[at:at + t.n_nodes, :t.cat_sets.shape[1]] = t.cat_sets
        at += t.n_nodes
    vals = [np.zeros(0, FLOAT) if c is None else np.asarray(c, FLOAT) for c in categories]
    off = np.zeros(len(vals) + 1, np.int64)
    np.cumsum([v.size for v in vals], out=off[1:])
    flat = np.concatenate(vals) if vals else np.zeros(0, FLOAT)
    if (flat < 0).any():
        raise ValueError("category values must be >= 0")
    counts = np.zeros(is_cat.size, np.int64)
    _set_word_counts(is_cat, feature, sets, flat, off, counts)
    ptr = np.zeros(is_cat.size + 1, INDPTR)
    np.cumsum(counts, out=ptr[1:])
    words = np.zeros(int(ptr[-1]), np.uint32)
    _fill_value_sets(is_cat, feature, sets, flat, off, ptr, words)
    return ptr, words


@njit(cache=True, nogil=True)
def _set_word_counts(is_cat, feature, sets, flat, off, counts):
    # words of each category node's value bitset: its largest left value // 32 + 1
    for i in range(is_cat.shape[0]):
        if is_cat[i] == 0:
            continue
        base = off[feature[i]]
        top = -1
        for w in range(sets.shape[1]):
            word = np.int64(sets[i, w])
            for k in range(32):
                if (word >> k) & 1:
                    top = max(top, np.int64(flat[base + w * 32 + k]))
        counts[i] = top // 32 + 1 if top >= 0 else 1


@njit(cache=True, nogil=True)
def _fill_value_sets(is_cat, feature, sets, flat, off, ptr, words):
    # bit v % 32 of word v // 32 of a node's value bitset, for each value v it sends left
    for i in range(is_cat.shape[0]):
        if is_cat[i] == 0:
            continue
        base = off[feature[i]]
        for w in range(sets.shape[1]):
            word = np.int64(sets[i, w])
            for k in range(32):
                if (word >> k) & 1:
                    v = np.int64(flat[base + w * 32 + k])
                    words[ptr[i] + v // 32] |= np.uint32(1) << np.uint32(v % 32)


def raw_category_sets_naive(trees, categories):
    """Slow twin of :func:`raw_category_sets`: node by node, through :func:`bins_of_set` and
    :func:`value_bitset`."""
    if not any(getattr(t, "is_cat", None) is not None and t.is_cat.any() for t in trees):
        return None, None
    counts, words = [], []
    for t in trees:
        is_cat = getattr(t, "is_cat", None)
        for node in range(t.n_nodes):
            if is_cat is not None and is_cat[node]:
                f = int(t.feature[node])
                vals = np.asarray(categories[f], FLOAT)[bins_of_set(t.cat_sets[node])]
                w = value_bitset(vals)
                words.append(w)
                counts.append(w.size)
            else:
                counts.append(0)
    ptr = np.zeros(len(counts) + 1, INDPTR)
    np.cumsum(counts, out=ptr[1:])
    return ptr, np.concatenate(words).astype(np.uint32)
