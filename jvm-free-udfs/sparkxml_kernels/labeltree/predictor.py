"""Label-tree prediction: beam search down every tree, scores averaged over the trees.

A row is L2-normalised and gets the bias feature, as in training (``data``), then scattered
into a dense vector once, so every classifier costs one pass over its (thresholded) weights.
In each tree the beam starts at the root with score 1; each round every internal node of the
beam is replaced by its children, each scored parent score x p(child), a leaf stays as it is,
and the ``beam`` best (ties: the smaller node id) are kept; rounds stop when the beam holds
only leaves. A label of a leaf in the final beam scores leaf score x p(label); a label's score
is the sum over the trees divided by the number of trees (0 in a tree whose beam missed it).

p(margin m) is the model's probability: 1 / (1 + exp(-m)) for the logistic loss, and
exp(-max(0, 1 - m)^2) for the squared hinge (the loss's own likelihood, as Parabel scores).
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from ..fastxml.predictor import check_rows, finish_topk_row, topk_start
from .forest import FOREST_DTYPES, FOREST_KEYS
from .nodes import LOGISTIC, LOSSES


@njit(cache=True, nogil=True, inline="always")
def prob(m, loss):
    if loss == LOGISTIC:
        return 1.0 / (1.0 + math.exp(-m))
    z = 1.0 - m
    return 1.0 if z <= 0.0 else math.exp(-z * z)


@njit(cache=True, nogil=True)
def unit_row(indptr, indices, data, r, n_features, bias, xj, xv):
    """Row r (sorted, unique feature ids) L2-normalised, then the bias feature, into
    xj / xv; returns the entry count."""
    ss = 0.0
    for p in range(indptr[r], indptr[r + 1]):
        ss += np.float64(data[p]) * np.float64(data[p])
    scale = 1.0 / math.sqrt(ss) if ss > 0.0 else 0.0
    m = 0
    for p in range(indptr[r], indptr[r + 1]):
        xj[m] = indices[p]
        xv[m] = np.float64(data[p]) * scale
        m += 1
    xj[m] = n_features
    xv[m] = bias
    return m + 1


@njit(cache=True, nogil=True)
def node_scores(g, xj, xv, m, wf_indptr, wf_feature, we_indptr, we_slot, we_value, out, n):
    """out[:n] = the margins of node g's slots for the row (xj, xv)[:m]: each row feature is
    looked up by binary search in the node's ascending features, from the last hit on."""
    for s in range(n):
        out[s] = 0.0
    lo = wf_indptr[g]
    hi = wf_indptr[g + 1]
    for q in range(m):
        if lo >= hi:
            break
        j = xj[q]
        a = lo + np.searchsorted(wf_feature[lo:hi], j)  # first feature >= j
        lo = a
        if a < hi and wf_feature[a] == j:
            v = xv[q]
            for e in range(we_indptr[a], we_indptr[a + 1]):
                out[we_slot[e]] += v * np.float64(we_value[e])


@njit(cache=True, nogil=True)
def tree_beam(base, child_indptr, child_index, wf_indptr, wf_feature, we_indptr, we_slot,
              we_value, xj, xv, m, loss, beam, bn, bs, nn, ns, margins):
    """Beam search in the tree whose root is global node ``base``; the final beam (tree-local
    node ids, scores) is bn[:count], bs[:count]; returns count."""
    count = 1
    bn[0] = 0
    bs[0] = 1.0
    while True:
        nc = 0
        internal = False
        for b in range(count):
            g = base + bn[b]
            c0 = child_indptr[g]
            c1 = child_indptr[g + 1]
            if c0 == c1:
                nn[nc] = bn[b]
                ns[nc] = bs[b]
                nc += 1
                continue
            internal = True
            node_scores(g, xj, xv, m, wf_indptr, wf_feature, we_indptr, we_slot, we_value,
                        margins, c1 - c0)
            for q in range(c0, c1):
                nn[nc] = child_index[q]
                ns[nc] = bs[b] * prob(margins[q - c0], loss)
                nc += 1
        if not internal:
            return count
        count = min(beam, nc)
        for b in range(count):  # selection of the best `count`, best first
            best = b
            for q in range(b + 1, nc):
                if ns[q] > ns[best] or (ns[q] == ns[best] and nn[q] < nn[best]):
                    best = q
            tn, ts = nn[b], ns[b]
            nn[b], ns[b] = nn[best], ns[best]
            nn[best], ns[best] = tn, ts
            bn[b] = nn[b]
            bs[b] = ns[b]


@njit(cache=True, nogil=True)
def predict_kernel(indptr, indices, data, n_features, n_labels, bias, loss, beam, k,
                   tree_offsets, child_indptr, child_index, leaf_indptr, leaf_label,
                   wf_indptr, wf_feature, we_indptr, we_slot, we_value):
    """Top-k labels int32 (n, k) (-1 padding) and scores float32 (n, k) (0 padding), best
    first, ties to the smaller label; labels scoring 0 are left out. Rows must have sorted,
    unique feature ids."""
    n, T, out_lab, out_sc, top_s, top_l = topk_start(indptr, tree_offsets, k)
    if T == 0 or n == 0 or k == 0:
        return out_lab, out_sc
    M = child_indptr.shape[0] - 1
    maxc = 1
    for g in range(M):
        maxc = max(maxc, child_indptr[g + 1] - child_indptr[g],
                   leaf_indptr[g + 1] - leaf_indptr[g])
    cap = beam * maxc + 1
    bn = np.empty(cap, np.int64)
    bs = np.empty(cap, np.float64)
    nn = np.empty(cap, np.int64)
    ns = np.empty(cap, np.float64)
    margins = np.empty(maxc, np.float64)
    maxrow = 0
    for r in range(n):
        maxrow = max(maxrow, indptr[r + 1] - indptr[r])
    xj = np.empty(maxrow + 1, np.int64)
    xv = np.empty(maxrow + 1, np.float64)
    acc = np.zeros(max(n_labels, 1), np.float64)
    lmark = np.zeros(max(n_labels, 1), np.int64)
    touched = np.empty(max(n_labels, 1), np.int64)
    for r in range(n):
        m = unit_row(indptr, indices, data, r, n_features, bias, xj, xv)
        nt = 0
        for t in range(T):
            base = tree_offsets[t]
            if tree_offsets[t + 1] == base:
                continue
            count = tree_beam(base, child_indptr, child_index, wf_indptr, wf_feature,
                              we_indptr, we_slot, we_value, xj, xv, m, loss, beam, bn, bs, nn,
                              ns, margins)
            for b in range(count):
                g = base + bn[b]
                l0 = leaf_indptr[g]
                nl = leaf_indptr[g + 1] - l0
                node_scores(g, xj, xv, m, wf_indptr, wf_feature, we_indptr, we_slot,
                            we_value, margins, nl)
                for s in range(nl):
                    lab = leaf_label[l0 + s]
                    if lmark[lab] != r + 1:
                        lmark[lab] = r + 1
                        touched[nt] = lab
                        nt += 1
                    acc[lab] += bs[b] * prob(margins[s], loss)
        finish_topk_row(acc, touched, nt, T, top_s, top_l, k, out_lab, out_sc, r)
    return out_lab, out_sc


def sorted_rows(indptr, indices, data, n_features: int):
    """The CSR rows with ascending, unique feature ids (duplicates summed), as the kernel
    needs; returned as given when they already are."""
    if indices.size < 2:
        return indptr, indices, data
    d = np.diff(indices.astype(np.int64))
    starts = np.zeros(indices.size, bool)
    starts[indptr[:-1][np.diff(indptr) > 0]] = True
    if np.all((d > 0) | starts[1:]):
        return indptr, indices, data
    import scipy.sparse as sp

    X = sp.csr_matrix((data.astype(np.float64), indices, indptr),
                      shape=(indptr.size - 1, n_features))
    X.sum_duplicates()
    return (X.indptr.astype(np.int64), X.indices.astype(np.int32),
            X.data.astype(np.float32))


def check_forest(f: dict, n_features: int, n_labels: int) -> None:
    """Raise ValueError unless the arrays form trees the kernel can walk safely."""
    T = f["tree_ids"].shape[0]
    off = f["tree_offsets"]
    M = f["child_indptr"].shape[0] - 1
    if off.shape != (T + 1,) or off[0] != 0 or off[-1] != M or np.any(np.diff(off) < 0):
        raise ValueError("tree_offsets must be (T+1,), start at 0, rise, end at the node count")
    F = f["wf_feature"].shape[0]
    for ptr, idx, rows in (("child_indptr", "child_index", M), ("leaf_indptr", "leaf_label", M),
                           ("wf_indptr", "wf_feature", M), ("we_indptr", "we_slot", F)):
        p = f[ptr]
        if (p.shape != (rows + 1,) or p[0] != 0 or p[-1] != f[idx].size
                or np.any(np.diff(p) < 0)):
            raise ValueError(f"{ptr} must be ({rows}+1,), start at 0, rise, end at len({idx})")
    if f["we_slot"].shape != f["we_value"].shape:
        raise ValueError("we_slot and we_value differ in length")
    lab = f["leaf_label"]
    if lab.size and (lab.min() < 0 or lab.max() >= n_labels):
        raise ValueError(f"leaf_label holds ids outside [0, n_labels={n_labels})")
    nchild, nleaf = np.diff(f["child_indptr"]), np.diff(f["leaf_indptr"])
    if np.any((nchild > 0) & (nleaf > 0)):
        raise ValueError("an internal node carries leaf labels")
    _check_weights(f, np.maximum(nchild, nleaf), n_features)
    # children point forward inside their tree, every non-root node has exactly one parent
    tree_of = np.repeat(np.arange(T), np.diff(off))
    parent = np.repeat(np.arange(M), nchild)
    root = off[:-1][tree_of[parent]]
    ci = f["child_index"].astype(np.int64)
    if np.any((ci <= parent - root) | (ci >= np.diff(off)[tree_of[parent]])):
        raise ValueError("corrupt tree: a child id does not point forward inside its tree")
    want = np.ones(M, np.int64)
    want[off[:-1][np.diff(off) > 0]] = 0
    if np.any(np.bincount(ci + root, minlength=M) != want):
        raise ValueError("corrupt tree: every node must be reached exactly once")


# entries checked at a time by _check_weights: its temporaries stay a few hundred MB whatever
# the forest (a 500k-row, 50k-label forest holds several hundred million entries)
CHECK_ENTRIES = 1 << 24


def _check_weights(f: dict, slots: np.ndarray, n_features: int) -> None:
    """The classifier arrays' checks of :func:`check_forest`, over ranges of whole features
    of about ``CHECK_ENTRIES`` entries."""
    wf, wf_ptr, we_ptr = f["wf_feature"], f["wf_indptr"], f["we_indptr"]
    F = wf.shape[0]
    if F and (wf.min() < 0 or wf.max() > n_features):
        raise ValueError(f"wf_feature holds ids outside [0, n_features={n_features}]")
    a = 0
    while a < F:
        # features [a, b): at least one, and entries up to CHECK_ENTRIES past a's start
        b = int(np.searchsorted(we_ptr, we_ptr[a] + CHECK_ENTRIES, side="right")) - 1
        b = min(F, max(b, a + 1))
        lo = max(a - 1, 0)  # one feature back: the pair across the range's edge too
        node = np.searchsorted(wf_ptr, np.arange(lo, b), side="right") - 1
        if np.any((np.diff(wf[lo:b]) <= 0) & (np.diff(node) == 0)):
            raise ValueError("wf_feature must rise strictly within each node")
        node = node[a - lo:]
        e0, e1 = int(we_ptr[a]), int(we_ptr[b])
        if not np.isfinite(f["we_value"][e0:e1]).all():
            raise ValueError("we_value holds non-finite values")
        slot = f["we_slot"][e0:e1]
        bound = np.repeat(slots[node], np.diff(we_ptr[a:b + 1]))
        if slot.size and (slot.min() < 0 or np.any(slot >= bound)):
            raise ValueError("we_slot holds a slot outside its node's children or labels")
        a = b


class LabelTreePredictor:
    """Serve a trained Parabel / Bonsai forest without Spark.

    Parameters
    ----------
    arrays : dict of str -> ndarray
        The forest (keys ``FOREST_KEYS``, see ``forest``); extra keys are ignored.
    n_features, n_labels : int
    bias : float
        Bias feature value used in training.
    loss : str
        "squared_hinge" or "logistic": how margins become probabilities.
    beam_width : int
        Nodes kept per tree level.
    """

    def __init__(self, arrays: dict, n_features: int, n_labels: int, bias: float, loss: str,
                 beam_width: int):
        missing = [key for key in FOREST_KEYS if key not in arrays]
        if missing:
            raise ValueError(f"label-tree arrays lack {missing}")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
        if int(beam_width) < 1:
            raise ValueError(f"beam_width must be >= 1, got {beam_width}")
        if not np.isfinite(bias):
            raise ValueError(f"bias={bias} is not finite")
        self.n_features, self.n_labels = int(n_features), int(n_labels)
        self.bias, self.loss, self.beam_width = float(bias), loss, int(beam_width)
        f = {k: np.ascontiguousarray(arrays[k], dtype=FOREST_DTYPES[k]) for k in FOREST_KEYS}
        check_forest(f, self.n_features, self.n_labels)
        self.forest = f

    @property
    def num_trees(self) -> int:
        return int(self.forest["tree_ids"].shape[0])

    def predict(self, indptr, indices, data, k: int):
        """Top-k labels of each row of the CSR matrix (indptr, indices, data).

        Returns
        -------
        labels : int32 (n, k)
            Best first, ties to the smaller label id; -1 where fewer than k labels score > 0.
        scores : float32 (n, k)
            Mean over the trees of the path probability x the label's probability; 0 as
            padding.
        """
        k = int(k)
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        indptr, indices, data = check_rows(indptr, indices, data, self.n_features)
        indptr, indices, data = sorted_rows(indptr, indices, data, self.n_features)
        f = self.forest
        return predict_kernel(indptr, indices, data, self.n_features, self.n_labels,
                              self.bias, LOSSES[self.loss], self.beam_width, k,
                              *(f[key] for key in FOREST_KEYS[1:]))

    def predict_csr(self, X, k: int = 5):
        """:meth:`predict` on a scipy.sparse matrix with at most n_features columns."""
        import scipy.sparse as sp

        X = sp.csr_matrix(X)
        if X.shape[1] > self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model n_features={self.n_features}")
        return self.predict(X.indptr, X.indices, X.data, k)

    def predict_topk(self, X, k: int = 5):
        """Per row of X (scipy.sparse or dense), the list of its top-k labels and the list of
        their scores, as ``transform`` writes them (padding left out)."""
        labels, scores = self.predict_csr(X, k)
        keep = labels >= 0
        return ([row[m].tolist() for row, m in zip(labels, keep)],
                [row[m].tolist() for row, m in zip(scores, keep)])

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None):
        """Load from a saved Parabel / Bonsai model directory."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=FOREST_KEYS + MODEL_SCALARS)
        try:
            return cls.from_arrays(arrays)
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
            raise ModelFormatError(f"{path}: label-tree arrays are inconsistent: {e}") from None

    @classmethod
    def from_arrays(cls, arrays: dict):
        """From the forest arrays and the 0-d ``MODEL_SCALARS``."""
        loss = {v: k for k, v in LOSSES.items()}[int(arrays["loss"])]
        return cls(arrays, int(arrays["n_features"]), int(arrays["n_labels"]),
                   float(arrays["bias"]), loss, int(arrays["beam_width"]))


# 0-d arrays a saved model carries beside the forest
MODEL_SCALARS = ("n_features", "n_labels", "bias", "loss", "beam_width")
