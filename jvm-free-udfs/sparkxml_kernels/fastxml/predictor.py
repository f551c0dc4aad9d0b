"""FastXML prediction: route points down every tree, average the reached leaves, keep the top k.

Routing goes tree by tree and node by node (breadth-first order, so a parent is always done
before its children): a node's points sit in a contiguous range of a permutation array, its
weights are scattered into a dense vector once, and the range is partitioned stably into the
children's ranges. This costs one pass over each point's features per level, plus the node's
weights once per chunk of points, instead of a sparse-sparse merge per (point, node).
Scores are then accumulated per point in a dense float64 vector of length L, touching only the
labels of its leaves.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import INDEX, VALUE
from .._jit import njit
from .._tree_check import check_tree_structure
from ._common import row_dot
from .forest import _DTYPES, FOREST_KEYS, check_csr

CHUNK_ROWS = 16384


@njit(cache=True, nogil=True)
def route_chunk(indptr, indices, data, r0, r1, tree_offsets, children, w_indptr, w_index,
                w_value, n_features, biasd, wd, perm, perm_tmp, nstart, nend, leaf_of):
    # leaf_of[k, t] = global node id of the leaf that row r0 + k reaches in tree t
    n = r1 - r0
    T = tree_offsets.shape[0] - 1
    for t in range(T):
        base = tree_offsets[t]
        n_nodes = tree_offsets[t + 1] - base
        if n_nodes == 0:
            continue
        for k in range(n):
            perm[k] = r0 + k
        nstart[0] = 0
        nend[0] = n
        for i in range(n_nodes):
            g = base + i
            s = nstart[i]
            e = nend[i]
            pc = children[g, 0]
            if pc < 0:
                for q in range(s, e):
                    leaf_of[perm[q] - r0, t] = g
                continue
            nc = children[g, 1]
            if e == s:
                nstart[pc] = s
                nend[pc] = s
                nstart[nc] = s
                nend[nc] = s
                continue
            for q in range(w_indptr[g], w_indptr[g + 1]):
                wd[w_index[q]] = np.float64(w_value[q])
            a = s
            b = 0
            for q in range(s, e):
                r = perm[q]
                if row_dot(indptr, indices, data, r, wd, n_features, biasd) >= 0.0:
                    perm[a] = r
                    a += 1
                else:
                    perm_tmp[b] = r
                    b += 1
            for q in range(b):
                perm[a + q] = perm_tmp[q]
            for q in range(w_indptr[g], w_indptr[g + 1]):
                wd[w_index[q]] = 0.0
            nstart[pc] = s
            nend[pc] = a
            nstart[nc] = a
            nend[nc] = e


@njit(cache=True, nogil=True)
def route_workspace(tree_offsets, n_features, chunk):
    """Scratch of :func:`route_chunk` for chunks of up to ``chunk`` rows:
    (wd float64 (D+1,) zeros, perm, perm_tmp int64 (chunk,), nstart, nend int64 (largest
    tree's nodes,), leaf_of int64 (chunk, max(T, 1)))."""
    T = tree_offsets.shape[0] - 1
    max_nodes = 1
    for t in range(T):
        max_nodes = max(max_nodes, tree_offsets[t + 1] - tree_offsets[t])
    return (np.zeros(n_features + 1, np.float64), np.empty(chunk, np.int64),
            np.empty(chunk, np.int64), np.empty(max_nodes, np.int64),
            np.empty(max_nodes, np.int64), np.empty((chunk, max(T, 1)), np.int64))


@njit(cache=True, nogil=True)
def apply_kernel(indptr, indices, data, tree_offsets, children, w_indptr, w_index, w_value,
                 n_features, bias):
    """Leaf reached by each row in each tree: int32 (n, T), tree-local node ids."""
    n = indptr.shape[0] - 1
    T = tree_offsets.shape[0] - 1
    biasd = np.float64(np.float32(bias))
    wd, perm, perm_tmp, nstart, nend, leaf_of = route_workspace(tree_offsets, n_features, n)
    route_chunk(indptr, indices, data, 0, n, tree_offsets, children, w_indptr, w_index,
                w_value, n_features, biasd, wd, perm, perm_tmp, nstart, nend, leaf_of)
    out = np.empty((n, T), np.int32)
    for k in range(n):
        for t in range(T):
            out[k, t] = leaf_of[k, t] - tree_offsets[t]
    return out


@njit(cache=True, nogil=True)
def sum_leaves(leaf_of, i, T, leaf_indptr, leaf_label, leaf_score, acc, touched):
    """Add the distributions of the leaves row ``i`` of ``leaf_of`` reached (one a tree) into
    ``acc`` (float64, dense over labels, all 0 on entry); list the labels it touched in
    ``touched`` and return how many. Callers reset ``acc`` at those labels."""
    nt = 0
    for t in range(T):
        g = leaf_of[i, t]
        for q in range(leaf_indptr[g], leaf_indptr[g + 1]):
            lab = leaf_label[q]
            if acc[lab] == 0.0:
                touched[nt] = lab
                nt += 1
            acc[lab] += np.float64(leaf_score[q])
    return nt


@njit(cache=True, nogil=True)
def empty_topk(n, k):
    """Top-k outputs before filling: labels int32 (n, k) all -1, scores float32 (n, k) all 0."""
    return np.full((n, k), -1, np.int32), np.zeros((n, k), np.float32)


@njit(cache=True, nogil=True)
def push_topk(sc, lab, top_s, top_l, nk, k):
    """Insert (score ``sc``, label ``lab``) into the sorted top-k buffer (best first, ties to
    the smaller label) holding ``nk`` entries; return the new count. Cheap when k is small
    against the labels offered."""
    if nk == k:
        ls = top_s[k - 1]
        if sc < ls or (sc == ls and lab > top_l[k - 1]):
            return nk
        pos = k - 1
    else:
        pos = nk
        nk += 1
    while pos > 0 and (sc > top_s[pos - 1] or (sc == top_s[pos - 1] and lab < top_l[pos - 1])):
        top_s[pos] = top_s[pos - 1]
        top_l[pos] = top_l[pos - 1]
        pos -= 1
    top_s[pos] = sc
    top_l[pos] = lab
    return nk


@njit(cache=True, nogil=True, inline="always")
def topk_start(indptr, tree_offsets, k):
    """(rows n, trees T, labels, scores, top_s, top_l) of a top-k prediction: the outputs as
    ``empty_topk`` makes them and a row's top-k buffer for ``push_topk``."""
    n = indptr.shape[0] - 1
    T = tree_offsets.shape[0] - 1
    out_lab, out_sc = empty_topk(n, k)
    return n, T, out_lab, out_sc, np.empty(k, np.float64), np.empty(k, np.int32)


@njit(cache=True, nogil=True, inline="always")
def finish_topk_row(acc, touched, nt, T, top_s, top_l, k, out_lab, out_sc, row):
    """Row ``row``'s top-k from the label scores summed over T trees in ``acc`` at the
    ``nt`` labels ``touched``: the mean over trees, labels scoring 0 left out; ``acc`` is
    zeroed on the way for the next row."""
    nk = 0
    for j in range(nt):
        lab = touched[j]
        sc = acc[lab] / T
        acc[lab] = 0.0
        if sc > 0.0:
            nk = push_topk(sc, np.int32(lab), top_s, top_l, nk, k)
    for j in range(nk):
        out_lab[row, j] = top_l[j]
        out_sc[row, j] = np.float32(top_s[j])


@njit(cache=True, nogil=True)
def predict_kernel(indptr, indices, data, tree_offsets, children, w_indptr, w_index, w_value,
                   leaf_indptr, leaf_label, leaf_score, n_features, n_labels, bias, k):
    """Top-k labels and scores (sum of leaf scores / T), best first, ties to the smaller label.

    Returns int32 (n, k) labels (-1 as padding) and float32 (n, k) scores (0 as padding).
    """
    n, T, out_lab, out_sc, top_s, top_l = topk_start(indptr, tree_offsets, k)
    biasd = np.float64(np.float32(bias))
    if T == 0 or n == 0 or k == 0:
        return out_lab, out_sc
    chunk = min(n, CHUNK_ROWS)
    wd, perm, perm_tmp, nstart, nend, leaf_of = route_workspace(tree_offsets, n_features, chunk)
    acc = np.zeros(max(n_labels, 1), np.float64)
    touched = np.empty(max(n_labels, 1), np.int32)
    for r0 in range(0, n, chunk):
        r1 = min(n, r0 + chunk)
        route_chunk(indptr, indices, data, r0, r1, tree_offsets, children, w_indptr, w_index,
                    w_value, n_features, biasd, wd, perm, perm_tmp, nstart, nend, leaf_of)
        for row in range(r0, r1):
            nt = sum_leaves(leaf_of, row - r0, T, leaf_indptr, leaf_label, leaf_score, acc,
                            touched)
            finish_topk_row(acc, touched, nt, T, top_s, top_l, k, out_lab, out_sc, row)
    return out_lab, out_sc


def check_rows(indptr, indices, data, n_features: int):
    """The CSR rows (indptr, indices, data) a forest predicts on, checked: int64 indptr,
    int32 indices below ``n_features``, float32 data, all finite (a tree cannot route a NaN)."""
    indptr, indices = check_csr("X", indptr, indices, None, n_features)
    data = np.ascontiguousarray(data, dtype=VALUE)
    if data.shape != indices.shape:
        raise ValueError(f"X data has {data.size} values for {indices.size} indices")
    if not np.all(np.isfinite(data)):
        raise ValueError("X data holds NaN or infinite values; the trees cannot route them")
    return indptr, indices, data


class FastXMLPredictor:
    """Serve a trained FastXML forest without Spark.

    Parameters
    ----------
    arrays : dict of str -> ndarray
        The forest (keys ``FOREST_KEYS``, see ``forest.py``); extra keys are ignored.
    n_features : int
        D; the bias is feature D.
    n_labels : int
        L.
    bias : float
        Bias feature value used in training.
    """

    def __init__(self, arrays: dict, n_features: int, n_labels: int, bias: float):
        missing = [key for key in FOREST_KEYS if key not in arrays]
        if missing:
            raise ValueError(f"FastXML arrays lack {missing}")
        self.n_features = int(n_features)
        self.n_labels = int(n_labels)
        self.bias = float(bias)
        f = {key: np.ascontiguousarray(arrays[key], dtype=_DTYPES[key]) for key in FOREST_KEYS}
        f["children"] = f["children"].reshape(-1, 2)
        self._validate(f)
        self.forest = f

    def _validate(self, f):
        for name, v in (("n_features", self.n_features), ("n_labels", self.n_labels)):
            if not 0 <= v <= np.iinfo(INDEX).max:
                raise ValueError(f"{name}={v} is outside 0..{np.iinfo(INDEX).max}")
        if not np.isfinite(self.bias):
            raise ValueError(f"bias={self.bias} is not finite")
        T = f["tree_ids"].shape[0]
        off = f["tree_offsets"]
        M = f["children"].shape[0]
        if off.shape != (T + 1,) or off[0] != 0 or off[-1] != M or np.any(np.diff(off) < 0):
            raise ValueError("tree_offsets must be (T+1,), start at 0, rise, end at the node count")
        for ptr, idx, val in (("w_indptr", "w_index", "w_value"),
                              ("leaf_indptr", "leaf_label", "leaf_score")):
            p = f[ptr]
            if p.shape != (M + 1,) or p[0] != 0 or p[-1] != f[idx].size or np.any(np.diff(p) < 0):
                raise ValueError(f"{ptr} must be (M+1,), start at 0, rise, end at len({idx})")
            if f[idx].shape != f[val].shape:
                raise ValueError(f"{idx} and {val} differ in length")
        if f["w_index"].size and (f["w_index"].min() < 0
                                  or f["w_index"].max() > self.n_features):
            raise ValueError(f"w_index holds ids outside [0, n_features={self.n_features}]")
        if f["leaf_label"].size and (f["leaf_label"].min() < 0
                                     or f["leaf_label"].max() >= self.n_labels):
            raise ValueError(f"leaf_label holds ids outside [0, n_labels={self.n_labels})")
        # single-pass routing needs every child after its parent, inside the same tree
        ch = f["children"]
        leaf = ch[:, 0] < 0
        if np.any(leaf != (ch[:, 1] < 0)):
            raise ValueError("children must be both -1 (leaf) or both set")
        check_tree_structure(ch[:, 0], ch[:, 1], off)
        if np.any(np.diff(f["w_indptr"])[leaf] != 0):
            raise ValueError("a leaf carries separator weights")
        for key in ("w_value", "leaf_score"):
            if not np.isfinite(f[key]).all():
                raise ValueError(f"{key} holds non-finite values")

    @property
    def num_trees(self) -> int:
        return int(self.forest["tree_ids"].shape[0])

    def _check_input(self, indptr, indices, data):
        return check_rows(indptr, indices, data, self.n_features)

    def predict(self, indptr, indices, data, k: int):
        """Top-k labels of each row of the CSR matrix (indptr, indices, data).

        Parameters
        ----------
        indptr : int64 (n+1,)
        indices : int32 (nnz,)
            Feature ids; one >= n_features raises ValueError.
        data : float32 (nnz,)
            Finite values (NaN or inf raises ValueError).
        k : int
            Labels per row.

        Returns
        -------
        labels : int32 (n, k)
            Best first; ties go to the smaller label id; -1 where fewer than k labels score > 0.
        scores : float32 (n, k)
            Average over the trees of the reached leaves' scores; 0 as padding.
        """
        k = int(k)
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        indptr, indices, data = self._check_input(indptr, indices, data)
        f = self.forest
        # unsigned views (validated >= 0): see _common.NOMAP for why the kernels want them
        return predict_kernel(indptr.view(np.uint64), indices.view(np.uint32), data,
                              f["tree_offsets"], f["children"], f["w_indptr"], f["w_index"],
                              f["w_value"], f["leaf_indptr"].view(np.uint64),
                              f["leaf_label"].view(np.uint32), f["leaf_score"], self.n_features,
                              self.n_labels, self.bias, k)

    def predict_csr(self, X, k: int = 5):
        """:meth:`predict` on a scipy.sparse matrix (or anything ``scipy.sparse.csr_matrix``
        accepts) with at most n_features columns."""
        import scipy.sparse as sp

        X = sp.csr_matrix(X)
        if X.shape[1] > self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model n_features={self.n_features}")
        return self.predict(X.indptr, X.indices, X.data, k)

    def apply(self, indptr, indices, data):
        """Tree-local id of the leaf each row reaches in each tree: int32 (n, T)."""
        indptr, indices, data = self._check_input(indptr, indices, data)
        f = self.forest
        return apply_kernel(indptr.view(np.uint64), indices.view(np.uint32), data,
                            f["tree_offsets"], f["children"],
                            f["w_indptr"], f["w_index"], f["w_value"], self.n_features, self.bias)

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None):
        """Load from a saved model directory (its data holds the forest arrays plus
        0-d arrays ``n_features``, ``n_labels`` and ``bias``); ``meta`` is not needed."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=FOREST_KEYS + ("n_features", "n_labels", "bias"))
        try:
            return cls(arrays, int(arrays["n_features"]), int(arrays["n_labels"]),
                       float(arrays["bias"]))
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
            raise ModelFormatError(f"{path}: FastXML arrays are inconsistent: {e}") from None


def predict_naive(forest: dict, n_features: int, n_labels: int, bias: float, rows, k: int):
    """Obviously-correct prediction in plain Python: walk each tree from the root per point.

    Parameters
    ----------
    forest : dict
        Forest arrays.
    rows : list of list of (int, float)
        Each point's (feature, value) entries in storage order.

    Returns
    -------
    (int32 (n, k), float32 (n, k))
    """
    off = forest["tree_offsets"]
    T = len(forest["tree_ids"])
    b = float(np.float32(bias))
    labels = np.full((len(rows), k), -1, np.int32)
    scores = np.zeros((len(rows), k), np.float32)
    for r, row in enumerate(rows):
        acc = {}
        for t in range(T):
            node = 0
            while True:
                g = int(off[t]) + node
                pc, nc = (int(c) for c in forest["children"][g])
                if pc < 0:
                    a, z = forest["leaf_indptr"][g], forest["leaf_indptr"][g + 1]
                    for lab, sc in zip(forest["leaf_label"][a:z], forest["leaf_score"][a:z]):
                        acc[int(lab)] = acc.get(int(lab), 0.0) + float(sc)
                    break
                a, z = forest["w_indptr"][g], forest["w_indptr"][g + 1]
                w = {int(i): float(v) for i, v in zip(forest["w_index"][a:z], forest["w_value"][a:z])}
                s = 0.0
                for f, v in row:
                    s += w.get(f, 0.0) * float(v)
                s += w.get(n_features, 0.0) * b
                node = pc if s >= 0.0 else nc
        best = sorted(((-(v / T), lab) for lab, v in acc.items() if v / T > 0.0))[:k]
        for j, (neg, lab) in enumerate(best):
            labels[r, j] = lab
            scores[r, j] = np.float32(-neg)
    return labels, scores
