"""PfastreXML (Jain, Prabhu & Varma, KDD'16): propensity weights, tail classifiers, reranking.

PfastreXML is FastXML trained on propensity-scored DCG: the trees are grown by
``forest.train_forest`` with the labels' inverse propensities as label weights and without
the IDCG normalisation (``label_weight=propensity_weights(...)``, ``normalise_dcg=False``).
On top of the trees ("PfastXML") it adds one tail classifier a label:

- centroid ``w_l`` = mean of the unit-normalised training vectors (bias feature appended
  before normalising) of the points that carry label l (:func:`tail_centroids`);
- tail score of a point x with unit-normalised x̂ (bias appended likewise):
  ``1 / (1 + exp(gamma (|w_l|² + 1 - 2 x̂·w_l)))``, a sigmoid of ``-gamma |x̂ - w_l|²``;
- final score ``pf^alpha * tail^(1 - alpha)`` over the ``num_candidates`` labels with the
  highest tree score pf (:class:`PfastreXMLPredictor`).

The centroids are computed with the authors' float32 operations in their order (their
``unit_normalize_columns`` and sparse product), so they equal the ``w`` file of
``PfastreXML_train`` up to the 6 decimals it prints. Scoring is float64 (a stable sigmoid),
where the authors' is float32: their ``exp`` overflows once ``gamma |x̂ - w_l|²`` exceeds
88.7 (possible with negative feature values; |x̂ - w_l|² <= 2 otherwise) and those labels'
final scores become 0 and tie; here they keep their order. The trees' scores are averaged in
float64 (theirs: float32 sums in thread completion order). Candidates tied at the
``num_candidates`` cut are taken smaller label id first (theirs follow ``std::sort``); with
fewer labels than ``num_candidates`` that never matters.

The naive twins (``*_naive``) spell the same computations out in plain Python for the tests.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import INDPTR, VALUE
from .._jit import njit
from ..metrics import inverse_propensities
from ._common import sort_desc
from .forest import check_csr
from .predictor import (
    CHUNK_ROWS,
    FastXMLPredictor,
    push_topk,
    route_chunk,
    route_workspace,
    sum_leaves,
    topk_start,
)

TAIL_KEYS = ("tail_indptr", "tail_index", "tail_value")
# candidates held in memory per chunk of rows (rows x num_candidates entries)
_CHUNK_ENTRIES = 1 << 22


def propensity_weights(Y_indptr, Y_indices, n_labels: int, A: float = 0.55,
                       B: float = 1.5) -> np.ndarray:
    """float32 (L,) inverse propensities ``1 + C (N_l + B)^-A``, ``C = (ln N - 1)(B + 1)^A``.

    N = rows, N_l = rows carrying label l (a label repeated in a row counts once), computed in
    float64 (``metrics.inverse_propensities``) and rounded once to float32, the precision the
    authors' code reads them in. Raises ValueError when a weight is not finite and > 0.
    """
    Y_indptr = np.asarray(Y_indptr, dtype=np.int64)
    Y_indices = np.asarray(Y_indices, dtype=np.int64)
    n = len(Y_indptr) - 1
    if n <= 0:
        raise ValueError("propensity weights need at least one row")
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(Y_indptr))
    L = max(int(n_labels), 1)
    pairs = np.unique(rows * L + Y_indices) if len(Y_indices) else np.zeros(0, np.int64)
    counts = np.bincount(pairs % L, minlength=int(n_labels))[:int(n_labels)]
    return propensity_weights_from_counts(counts, n, A, B)


def propensity_weights_from_counts(counts, n_rows: int, A: float = 0.55,
                                   B: float = 1.5) -> np.ndarray:
    """:func:`propensity_weights` from the label counts N_l (int, (L,)) and N = ``n_rows``
    (the data-parallel trainer counts them with Spark)."""
    counts = np.asarray(counts, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = inverse_propensities(counts, int(n_rows), A, B).astype(np.float32)
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError(f"propensityA={A}, propensityB={B} give inverse propensities that are "
                         f"not finite and > 0 (N={n_rows}); B must exceed -1, and 0 when some "
                         f"label has no training point")
    return w


# --------------------------------------------------------------------------- centroids

@njit(cache=True, nogil=True)
def unit_norms(X_indptr, X_data, bias32):
    # the authors' unit_normalize_columns on the bias-extended rows: float32 sum of squares in
    # row order (bias last), float32 sqrt, 1 for an all-zero row; returns the norms
    n = X_indptr.shape[0] - 1
    norms = np.empty(n, np.float32)
    for i in range(n):
        s = np.float32(0.0)
        for p in range(X_indptr[i], X_indptr[i + 1]):
            s += X_data[p] * X_data[p]
        s += bias32 * bias32
        s = np.sqrt(s)
        norms[i] = s if s != 0.0 else np.float32(1.0)
    return norms


@njit(cache=True, nogil=True)
def _label_rows(Y_indptr, Y_indices, n_labels):
    # transpose of the label matrix: for each label, its rows ascending (CSR)
    n = Y_indptr.shape[0] - 1
    ptr = np.zeros(n_labels + 1, np.int64)
    for p in range(Y_indptr[n]):
        ptr[Y_indices[p] + 1] += 1
    for j in range(n_labels):
        ptr[j + 1] += ptr[j]
    fill = ptr[:-1].copy()
    rows = np.empty(Y_indptr[n], np.int64)
    for i in range(n):
        for p in range(Y_indptr[i], Y_indptr[i + 1]):
            lab = Y_indices[p]
            rows[fill[lab]] = i
            fill[lab] += 1
    return ptr, rows


@njit(cache=True, nogil=True)
def centroid_add(X_indptr, X_indices, X_data, norms, rows, a, n_features, bias32, acc, seen,
                 touched, nt):
    """acc += x̂_i * a (float32, as ``tail_centroids_kernel``) for the points ``rows`` in
    order (``norms``: :func:`unit_norms` of all points), recording the touched features;
    returns the new count of touched features ``nt``."""
    for q in range(rows.shape[0]):
        i = rows[q]
        nrm = norms[i]
        for p in range(X_indptr[i], X_indptr[i + 1]):
            f = X_indices[p]
            if not seen[f]:
                seen[f] = True
                touched[nt] = f
                nt += 1
            acc[f] += (X_data[p] / nrm) * a
        if not seen[n_features]:
            seen[n_features] = True
            touched[nt] = n_features
            nt += 1
        acc[n_features] += (bias32 / nrm) * a
    return nt


@njit(cache=True, nogil=True)
def centroid_emit(acc, seen, touched, nt, index, value, nnz):
    """Write the non-zero entries of ``acc`` (features ascending) to ``index``/``value`` from
    ``nnz`` on (they must have room for ``nt`` more), reset acc/seen; return the new nnz."""
    ids = np.sort(touched[:nt])
    for f in ids:
        v = acc[f]
        if v != 0.0:
            index[nnz] = f
            value[nnz] = v
            nnz += 1
        acc[f] = 0.0
        seen[f] = False
    return nnz


@njit(cache=True, nogil=True)
def tail_centroids_kernel(X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features,
                          n_labels, bias):
    """Centroid of each label (see the module docstring) as CSR over labels.

    Per label, in ascending row order: ``sum[f] += x̂_if * a`` in float32 with
    ``a = float32(1.0 / N_l)`` (division in double, as the authors write it); feature ids
    ascending, the bias last (id ``n_features``); exact zeros are left out. A label's
    centroid depends only on its own rows, in order, so it can also be computed one label
    at a time over a stream of its rows (``centroid_add`` / ``centroid_emit``).

    Returns
    -------
    indptr int64 (L+1,), index int32, value float32
    """
    bias32 = np.float32(bias)
    norms = unit_norms(X_indptr, X_data, bias32)
    lptr, lrows = _label_rows(Y_indptr, Y_indices, n_labels)
    D1 = n_features + 1
    acc = np.zeros(D1, np.float32)
    seen = np.zeros(D1, np.bool_)
    touched = np.empty(D1, np.int64)
    indptr = np.zeros(n_labels + 1, np.int64)
    cap = 1024
    index = np.empty(cap, np.int32)
    value = np.empty(cap, np.float32)
    nnz = 0
    for lab in range(n_labels):
        cnt = lptr[lab + 1] - lptr[lab]
        nt = 0
        if cnt > 0:
            a = np.float32(1.0 / np.float64(cnt))
            nt = centroid_add(X_indptr, X_indices, X_data, norms, lrows[lptr[lab]:lptr[lab + 1]],
                              a, n_features, bias32, acc, seen, touched, nt)
        if nnz + nt > cap:
            cap = max(2 * cap, nnz + nt)
            index2 = np.empty(cap, np.int32)
            value2 = np.empty(cap, np.float32)
            for q in range(nnz):
                index2[q] = index[q]
                value2[q] = value[q]
            index = index2
            value = value2
        nnz = centroid_emit(acc, seen, touched, nt, index, value, nnz)
        indptr[lab + 1] = nnz
    return indptr, index[:nnz].copy(), value[:nnz].copy()


def tail_centroids(X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features: int,
                   n_labels: int, bias: float) -> dict:
    """The tail classifiers' centroids of a training set.

    Parameters
    ----------
    X_indptr, X_indices, X_data : int64 (N+1,), int32 (nnz,), float32 (nnz,)
        Training features (CSR, ids < n_features).
    Y_indptr, Y_indices : int64 (N+1,), int32
        Label sets (no label repeated within a row).
    n_features, n_labels : int
    bias : float
        Bias feature value appended to every row before normalising (feature id
        ``n_features``), as in training.

    Returns
    -------
    dict
        ``tail_indptr`` int64 (L+1,), ``tail_index`` int32 (feature ids <= n_features,
        ascending per label), ``tail_value`` float32.
    """
    Xp, Xi = check_csr("X", X_indptr, X_indices, None, int(n_features))
    n = Xp.size - 1
    Yp, Yi = check_csr("Y", Y_indptr, Y_indices, n, int(n_labels))
    Xv = np.ascontiguousarray(X_data, dtype=VALUE)
    if Xv.shape != Xi.shape or not np.all(np.isfinite(Xv)):
        raise ValueError("X data must be finite, one value an index")
    ptr, idx, val = tail_centroids_kernel(Xp, Xi, Xv, Yp, Yi, int(n_features), int(n_labels),
                                          float(bias))
    return {"tail_indptr": ptr, "tail_index": idx, "tail_value": val}


def tail_centroids_naive(X_rows, Y_rows, n_features: int, n_labels: int, bias: float) -> dict:
    """Plain-Python twin of :func:`tail_centroids`.

    ``X_rows``: each row's [(feature, value)]; ``Y_rows``: each row's labels.
    """
    f32 = np.float32
    b = f32(bias)
    unit = []
    for row in X_rows:
        s = f32(0.0)
        for _, v in row:
            s = f32(s + f32(f32(v) * f32(v)))
        s = f32(np.sqrt(f32(s + f32(b * b))))
        s = s if s != 0.0 else f32(1.0)
        unit.append([(f, f32(f32(v) / s)) for f, v in row] + [(n_features, f32(b / s))])
    ptr, idx, val = [0], [], []
    for lab in range(n_labels):
        members = [i for i, ys in enumerate(Y_rows) if lab in ys]
        acc = {}
        if members:
            a = f32(1.0 / len(members))
            for i in members:
                for f, v in unit[i]:
                    acc[f] = f32(acc.get(f, f32(0.0)) + f32(v * a))
        for f in sorted(acc):
            if acc[f] != 0.0:
                idx.append(f)
                val.append(acc[f])
        ptr.append(len(idx))
    return {"tail_indptr": np.array(ptr, np.int64), "tail_index": np.array(idx, np.int32),
            "tail_value": np.array(val, np.float32)}


# --------------------------------------------------------------------------- prediction

@njit(cache=True, nogil=True)
def _tail_score(sq, dot, gamma):
    # 1 / (1 + exp(gamma (|w|^2 + 1 - 2 x̂.w))), without overflow
    t = gamma * (sq + 1.0 - 2.0 * dot)
    if t > 0.0:
        e = np.exp(-t)
        return e / (1.0 + e)
    return 1.0 / (1.0 + np.exp(t))


@njit(cache=True, nogil=True)
def pfastre_predict_kernel(indptr, indices, data, tree_offsets, children, w_indptr, w_index,
                           w_value, leaf_indptr, leaf_label, leaf_score, t_indptr, t_index,
                           t_value, t_sq, n_features, n_labels, bias, k, num_candidates, gamma,
                           alpha):
    """Top-k labels by ``pf^alpha * tail^(1 - alpha)`` among each row's ``num_candidates``
    labels of highest tree score pf (ties to the smaller label id).

    Rows go in chunks: route through the trees, collect each row's candidates, then score
    candidates label by label (the label's centroid scattered into a dense vector once, each
    candidate row's features dotted against it), then keep each row's top k.

    Returns int32 (n, k) labels (-1 padding) and float32 (n, k) scores (0 padding).
    """
    n, T, out_lab, out_sc, top_s, top_l = topk_start(indptr, tree_offsets, k)
    biasd = np.float64(np.float32(bias))
    if T == 0 or n == 0 or k == 0:
        return out_lab, out_sc
    L1 = max(n_labels, 1)
    C = min(num_candidates, L1)
    chunk = min(n, CHUNK_ROWS, max(1, _CHUNK_ENTRIES // C))
    wd, perm, perm_tmp, nstart, nend, leaf_of = route_workspace(tree_offsets, n_features, chunk)
    acc = np.zeros(L1, np.float64)
    touched = np.empty(L1, np.int32)
    lab_ids = np.arange(L1).astype(np.int32)
    stmp = np.empty(L1, np.int32)
    cptr = np.zeros(chunk + 1, np.int64)
    clab = np.empty(chunk * C, np.int32)
    cpf = np.empty(chunk * C, np.float64)
    cfin = np.empty(chunk * C, np.float64)
    crow = np.empty(chunk * C, np.int64)
    lcnt = np.zeros(L1 + 1, np.int64)
    lent = np.empty(chunk * C, np.int64)
    inv_norm = np.empty(chunk, np.float64)
    for r0 in range(0, n, chunk):
        r1 = min(n, r0 + chunk)
        route_chunk(indptr, indices, data, r0, r1, tree_offsets, children, w_indptr, w_index,
                    w_value, n_features, biasd, wd, perm, perm_tmp, nstart, nend, leaf_of)
        # candidates of each row: its labels of highest tree score
        m = 0
        for row in range(r0, r1):
            i = row - r0
            nt = sum_leaves(leaf_of, i, T, leaf_indptr, leaf_label, leaf_score, acc, touched)
            if nt > C:
                sort_desc(touched, nt, acc, lab_ids, stmp)
            for j in range(nt):
                lab = touched[j]
                if j < C and acc[lab] > 0.0:
                    clab[m] = lab
                    cpf[m] = acc[lab] / T
                    crow[m] = i
                    m += 1
                acc[lab] = 0.0
            cptr[i + 1] = m
            s = 0.0
            for p in range(indptr[row], indptr[row + 1]):
                s += np.float64(data[p]) * np.float64(data[p])
            s = np.sqrt(s + biasd * biasd)
            inv_norm[i] = 1.0 / s if s > 0.0 else 1.0
        # group the candidate entries by label (counting sort), then score label by label
        for j in range(L1 + 1):
            lcnt[j] = 0
        for q in range(m):
            lcnt[clab[q] + 1] += 1
        for j in range(L1):
            lcnt[j + 1] += lcnt[j]
        for q in range(m):
            lab = clab[q]
            lent[lcnt[lab]] = q
            lcnt[lab] += 1
        start = 0
        for lab in range(L1):
            end = lcnt[lab]
            if end == start:
                continue
            for q in range(t_indptr[lab], t_indptr[lab + 1]):
                wd[t_index[q]] = np.float64(t_value[q])
            for e in range(start, end):
                q = lent[e]
                row = r0 + crow[q]
                dot = wd[n_features] * biasd
                for p in range(indptr[row], indptr[row + 1]):
                    dot += wd[indices[p]] * np.float64(data[p])
                tail = _tail_score(t_sq[lab], dot * inv_norm[crow[q]], gamma)
                cfin[q] = cpf[q] ** alpha * tail ** (1.0 - alpha)
            for q in range(t_indptr[lab], t_indptr[lab + 1]):
                wd[t_index[q]] = 0.0
            start = end
        for i in range(r1 - r0):
            nk = 0
            for q in range(cptr[i], cptr[i + 1]):
                if cfin[q] > 0.0:
                    nk = push_topk(cfin[q], clab[q], top_s, top_l, nk, k)
            for j in range(nk):
                out_lab[r0 + i, j] = top_l[j]
                out_sc[r0 + i, j] = np.float32(top_s[j])
    return out_lab, out_sc


def rerank_naive(pf_scores: dict, x_row, centroid: dict, n_features: int, bias: float, k: int,
                 num_candidates: int, gamma: float, alpha: float):
    """Plain-Python twin of one row of :func:`pfastre_predict_kernel`'s reranking.

    ``pf_scores``: label -> tree score (> 0); ``x_row``: [(feature, value)]; ``centroid``:
    label -> {feature: weight}. Returns [(label, score)] best first (at most k).
    """
    import math

    cands = sorted(pf_scores.items(), key=lambda kv: (-kv[1], kv[0]))[:num_candidates]
    b = float(np.float32(bias))
    x = dict((f, float(v)) for f, v in x_row)
    x[n_features] = x.get(n_features, 0.0) + b
    norm = math.sqrt(sum(v * v for v in x.values())) or 1.0
    out = []
    for lab, pf in cands:
        w = centroid.get(lab, {})
        dot = sum(wv * x.get(f, 0.0) for f, wv in w.items()) / norm
        sq = sum(float(np.float32(wv)) ** 2 for wv in w.values())
        t = gamma * (sq + 1.0 - 2.0 * dot)
        tail = 1.0 / (1.0 + math.exp(t)) if t < 700 else 0.0
        score = pf ** alpha * tail ** (1.0 - alpha)
        if score > 0.0:
            out.append((lab, score))
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))[:k]


class PfastreXMLPredictor(FastXMLPredictor):
    """Serve a trained PfastreXML model without Spark.

    Parameters
    ----------
    arrays : dict of str -> ndarray
        The forest (``forest.FOREST_KEYS``) and, for the tail classifiers, ``tail_indptr``
        int64 (L+1,), ``tail_index`` int32, ``tail_value`` float32 (:func:`tail_centroids`);
        empty tail arrays mean a model trained without them (PfastXML).
    n_features, n_labels : int
    bias : float
    tail_classifiers : bool
        False predicts with the trees alone (PfastXML).
    gamma, alpha : float
        Tail score steepness (> 0) and the weight of the tree score in [0, 1].
    num_candidates : int
        Labels of highest tree score that the tail classifiers rerank (>= 1).
    """

    def __init__(self, arrays: dict, n_features: int, n_labels: int, bias: float,
                 tail_classifiers: bool = True, gamma: float = 30.0, alpha: float = 0.8,
                 num_candidates: int = 1000):
        super().__init__(arrays, n_features, n_labels, bias)
        self.tail_classifiers = bool(tail_classifiers)
        self.gamma = float(gamma)
        self.alpha = float(alpha)
        self.num_candidates = int(num_candidates)
        if not (np.isfinite(self.gamma) and self.gamma > 0):
            raise ValueError(f"gamma must be > 0, got {gamma}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        if self.num_candidates < 1:
            raise ValueError(f"num_candidates must be >= 1, got {num_candidates}")
        ptr = np.ascontiguousarray(arrays.get("tail_indptr", np.zeros(0)), dtype=INDPTR)
        self.has_tail = ptr.size > 0
        if self.tail_classifiers and not self.has_tail:
            raise ValueError("this model was trained without tail classifiers (PfastXML): "
                             "predict with tail_classifiers=False")
        if self.has_tail:
            ptr, idx = check_csr("tail", ptr, arrays["tail_index"], self.n_labels,
                                 self.n_features + 1)
            val = np.ascontiguousarray(arrays["tail_value"], dtype=VALUE)
            if val.shape != idx.shape:
                raise ValueError("tail_index and tail_value differ in length")
            self.tail = {"tail_indptr": ptr, "tail_index": idx, "tail_value": val}
            sq = np.zeros(max(self.n_labels, 1), np.float64)
            np.add.at(sq, np.repeat(np.arange(self.n_labels), np.diff(ptr)),
                      val.astype(np.float64) ** 2)
            self.tail_sq = sq

    def predict(self, indptr, indices, data, k: int):
        """Top-k labels of each CSR row: final PfastreXML scores, or the trees' scores (the
        propensity-weighted leaf means) with ``tail_classifiers=False``.

        Returns
        -------
        labels : int32 (n, k)
            Best first, ties to the smaller label id; -1 where fewer than k labels score > 0.
        scores : float32 (n, k)
            0 as padding.
        """
        if not self.tail_classifiers:
            return super().predict(indptr, indices, data, k)
        k = int(k)
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        indptr, indices, data = self._check_input(indptr, indices, data)
        f, t = self.forest, self.tail
        return pfastre_predict_kernel(
            indptr.view(np.uint64), indices.view(np.uint32), data, f["tree_offsets"],
            f["children"], f["w_indptr"], f["w_index"], f["w_value"],
            f["leaf_indptr"].view(np.uint64), f["leaf_label"].view(np.uint32), f["leaf_score"],
            t["tail_indptr"], t["tail_index"], t["tail_value"], self.tail_sq, self.n_features,
            self.n_labels, self.bias, k, self.num_candidates, self.gamma, self.alpha)

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None):
        """Load a saved PfastreXMLModel directory; gamma, alpha, numCandidates and
        tailClassifiers come from its metadata's params."""
        from ..persist import ModelFormatError, load_arrays
        from .forest import FOREST_KEYS

        arrays = load_arrays(path, required=FOREST_KEYS + TAIL_KEYS +
                             ("n_features", "n_labels", "bias"))
        try:
            return cls.from_arrays(arrays, meta)
        except (ValueError, KeyError, IndexError) as e:
            raise ModelFormatError(f"{path}: PfastreXML arrays are inconsistent: {e}") from None

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict | None = None):
        """Build from a saved model's arrays and metadata (its params)."""
        meta = meta or {}

        def param(name, default):
            for key in ("paramMap", "defaultParamMap"):
                if name in meta.get(key, {}):
                    return meta[key][name]
            return default

        return cls(arrays, int(arrays["n_features"]), int(arrays["n_labels"]),
                   float(arrays["bias"]), bool(param("tailClassifiers", True)),
                   float(param("gamma", 30.0)), float(param("alpha", 0.8)),
                   int(param("numCandidates", 1000)))


__all__ = ["PfastreXMLPredictor", "TAIL_KEYS", "propensity_weights", "rerank_naive",
           "tail_centroids", "tail_centroids_naive"]
