"""Prediction with factorization machines and GBFM models, and their model arrays.

FM (``modelKind`` "fm")
-----------------------
ŷ(x) = w0 + Σ_j w_j x_j + ½ Σ_f [(Σ_j v_jf x_j)² − Σ_j v_jf² x_j²], O(k · nnz(x)) a row.

A model holds S parameter sets: S = 1 for ALS and AdamW; for MCMC the posterior samples kept
after burn-in (and thinning). The prediction is the average over the samples of link(ŷ_s), as
libFM and myFM predict: ŷ itself for regression, Φ(ŷ_s) for probit classification, σ(ŷ) for
logistic classification. Keeping the samples (not their mean) matters: the interaction term is
not linear in V, and the mean of Φ is not Φ of the mean.

=============  ===================  ===================================================
key            dtype, shape         meaning
=============  ===================  ===================================================
w0             float64 (S,)         intercept of each sample
w              float32 (S, d)       linear weights of each sample
V              float32 (S, d, k)    factors of each sample (row j: feature j)
link           str ()               "identity" | "logistic" | "probit" | "ordinal"
n_features     int64 ()             d, the width of the training vectors
cutpoints      float64 (S, K-1)     "ordinal" only: each sample's cutpoints, ascending
classes        float64 (K,)         "ordinal" only: the label value of each class
=============  ===================  ===================================================

An ordinal model (ordered probit, ``ordinal``) predicts the class probabilities
mean_s [Φ(γ_{s,c} - ŷ_s) - Φ(γ_{s,c-1} - ŷ_s)] and their expected label.

GBFM (``modelKind`` "gbfm")
---------------------------
ŷ(x) = w0 + Σ_j w_j x_j + Σ_s [Σ_{i∈C_p(s) ∪ C_q(s)} u_s[i] x_i
              + Σ_f (Σ_{i∈C_p(s)} V_s[i, f] x_i)(Σ_{j∈C_q(s)} V_s[j, f] x_j)]:
stage s adds first-order terms u_s of fields p(s) and q(s) and multiplies a rank-k embedding
of field p(s) with one of field q(s) (step size folded in). After the joint fit
(``gbfm_joint``) there is one stage per distinct pair, its rank that of the posterior mean of
the pair's interaction, and the linear weights w of every feature.

=============  ===================  ===================================================
key            dtype, shape         meaning
=============  ===================  ===================================================
w0             float64 ()           initial score
field_starts   int64 (m + 1,)       field c is features [field_starts[c], field_starts[c+1])
stage_fields   int32 (S, 2)         (p, q) of each stage
stage_offsets  int64 (S + 1,)       stage s's rows of stage_V: p's features, then q's
stage_V        float64 (R, k)       the stage embeddings (step size applied to p's rows)
stage_lin      float64 (R,)         the stage first-order terms u_s, rows as stage_V
stage_gain     float64 (S,)         training-loss decrease of each stage
link           str ()               "identity" | "logistic" | "probit"
n_features     int64 ()             d
linear         float64 (d,)         optional: w (absent: zeros)
=============  ===================  ===================================================
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from ..inputs import csr_parts, dense, is_csr
from .rng import ndtri_array, norm_cdf
from .solver import logistic_parts

LINKS = {"identity": 0, "logistic": 1, "probit": 2}
FM_KEYS = ("w0", "w", "V", "link", "n_features")
GBFM_KEYS = ("w0", "field_starts", "stage_fields", "stage_offsets", "stage_V", "stage_lin",
             "stage_gain", "link", "n_features")

__all__ = ["FMPredictor", "FMOrdinalPredictor", "GBFMPredictor", "fm_scores", "fm_scores_naive",
           "gbfm_scores",
           "gbfm_scores_naive", "LINKS", "FM_KEYS", "GBFM_KEYS"]


@njit(cache=True, nogil=True)
def _link(y, link):
    if link == 0:
        return y
    if link == 1:
        return logistic_parts(y)[0]
    return norm_cdf(y)


@njit(cache=True, nogil=True, inline="always")
def sample_score(indices, data, lo, hi, w0, W, V, s, q, q2):
    """The FM score of the CSR row held in ``[lo, hi)`` of ``indices``/``data`` under sample
    ``s`` of ``w0`` (S,), ``W`` (S, d), ``V`` (S, d, k); ``q``, ``q2`` float64 (k,) scratch."""
    k = V.shape[2]
    y = w0[s]
    for f in range(k):
        q[f] = 0.0
        q2[f] = 0.0
    for p in range(lo, hi):
        j = indices[p]
        x = data[p]
        y += W[s, j] * x
        for f in range(k):
            vx = V[s, j, f] * x
            q[f] += vx
            q2[f] += vx * vx
    for f in range(k):
        y += 0.5 * (q[f] * q[f] - q2[f])
    return y


@njit(cache=True, nogil=True)
def _fm_scores(indptr, indices, data, w0, W, V, link, out_mean, out_link):
    S, _, k = V.shape
    q = np.empty(k, np.float64)
    q2 = np.empty(k, np.float64)
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        acc, acc_link = 0.0, 0.0
        for s in range(S):
            y = sample_score(indices, data, lo, hi, w0, W, V, s, q, q2)
            acc += y
            acc_link += _link(y, link)
        out_mean[i] = acc / S
        out_link[i] = acc_link / S


def fm_scores(indptr, indices, data, w0, W, V, link: int):
    """(mean of ŷ_s, mean of link(ŷ_s)), float64 (n,) each, for CSR rows."""
    n = indptr.size - 1
    m, ml = np.empty(n, FLOAT), np.empty(n, FLOAT)
    _fm_scores(indptr, indices, data, w0, W, V, link, m, ml)
    return m, ml


def fm_scores_naive(X, w0, W, V, link: int):
    """Slow twin of :func:`fm_scores` on a dense (n, d) matrix, with the O(k d²) pairwise
    definition of the model."""
    X = np.asarray(X, FLOAT)
    n, d = X.shape
    m, ml = np.zeros(n), np.zeros(n)
    for s in range(len(w0)):
        Vs = np.asarray(V[s], FLOAT)
        pair = Vs @ Vs.T
        for i in range(n):
            x = X[i]
            y = w0[s] + float(np.dot(np.asarray(W[s], FLOAT), x))
            for a in range(d):
                for b in range(a + 1, d):
                    y += pair[a, b] * x[a] * x[b]
            m[i] += y
            ml[i] += [y, 1 / (1 + math.exp(-y)), 0.5 * math.erfc(-y / math.sqrt(2))][link]
    return m / len(w0), ml / len(w0)


def _rows(X, n_features):
    if is_csr(X):
        indptr, indices, data, n, d = csr_parts(X)
    else:
        Xd = dense(X)
        n, d = Xd.shape
        nz = Xd != 0
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(nz.sum(axis=1), out=indptr[1:])
        indices = np.nonzero(nz)[1].astype(np.int32)
        data = Xd[nz]
    if d != n_features:
        raise ValueError(f"X has {d} features; the model was trained on {n_features}")
    if data.size and not np.isfinite(data).all():
        raise ValueError("X holds NaN or infinite values")
    return indptr, indices, np.ascontiguousarray(data, FLOAT)


def _outputs(mean, mean_link, link):
    """(raw margin, prediction) from the sample means: regression -> (mean, mean); logistic
    -> (ŷ, σ(ŷ)); probit -> (Φ⁻¹(p̄), p̄)."""
    if link == LINKS["identity"]:
        return mean, mean
    if link == LINKS["logistic"]:
        return mean, mean_link
    p = np.clip(mean_link, 0.0, 1.0)
    # finite margins (about +-37.5 and +8.3 at the ends) rather than infinities
    q = np.clip(p, 1e-300, 1.0 - 2.0 ** -53)
    raw = ndtri_array(np.ascontiguousarray(q, FLOAT))
    return raw, p


class _Predictor:
    """Shared API: ``predict_raw(X)`` margins / values, ``predict(X)`` values or (n, 2)
    class probabilities. ``X``: dense (n, d), scipy CSR or (indptr, indices, data, d)."""

    keys: tuple = ()
    link_name = "identity"

    @property
    def is_classifier(self) -> bool:
        return self.link_name != "identity"

    def _scores(self, indptr, indices, data):  # pragma: no cover - abstract
        raise NotImplementedError

    def predict_raw(self, X) -> np.ndarray:
        raw, _ = _outputs(*self._scores(*_rows(X, self.n_features)), LINKS[self.link_name])
        return raw

    def predict(self, X) -> np.ndarray:
        _, pred = _outputs(*self._scores(*_rows(X, self.n_features)), LINKS[self.link_name])
        if not self.is_classifier:
            return pred
        return np.column_stack([1.0 - pred, pred])

    def predict_csr(self, indptr, indices, data):
        """(raw, prediction) for validated CSR arrays (the Spark transform's path)."""
        return _outputs(*self._scores(indptr, indices, np.asarray(data, FLOAT)),
                        LINKS[self.link_name])

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None):
        """Load the arrays of a saved model directory (``sparkxml_kernels.load_model``)."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=cls.keys)
        try:
            return cls.from_arrays(arrays)
        except (ValueError, KeyError, IndexError) as e:
            raise ModelFormatError(f"{path}: {e}") from None


class FMPredictor(_Predictor):
    """A factorization machine (one parameter set, or MCMC's samples); see the module
    docstring for the arrays."""

    keys = FM_KEYS

    def __init__(self, w0, w, V, link: str, n_features: int):
        self.w0 = np.ascontiguousarray(w0, FLOAT).reshape(-1)
        S = self.w0.size
        self.n_features = int(n_features)
        self.w = np.ascontiguousarray(w, np.float32).reshape(S, self.n_features)
        V = np.asarray(V, np.float32)
        if V.ndim != 3 or V.shape[:2] != (S, self.n_features):
            raise ValueError(f"V has shape {V.shape}, expected ({S}, {self.n_features}, k)")
        self.V = np.ascontiguousarray(V)
        if str(link) not in LINKS:
            raise ValueError(f"unknown link {link!r}")
        self.link_name = str(link)
        if S < 1:
            raise ValueError("an FM model needs at least one parameter sample")
        if not (np.isfinite(self.w0).all() and np.isfinite(self.w).all()
                and np.isfinite(self.V).all()):
            raise ValueError("FM parameters hold NaN or infinite values")

    @property
    def n_samples(self) -> int:
        return self.w0.size

    @property
    def factor_size(self) -> int:
        return self.V.shape[2]

    def _scores(self, indptr, indices, data):
        return fm_scores(indptr, indices, data, self.w0, self.w, self.V,
                         LINKS[self.link_name])

    def to_arrays(self) -> dict:
        return {"w0": self.w0, "w": self.w, "V": self.V, "link": np.asarray(self.link_name),
                "n_features": np.asarray(self.n_features, np.int64)}

    @classmethod
    def from_arrays(cls, a: dict) -> "FMPredictor":
        if str(a["link"]) == "ordinal":
            return FMOrdinalPredictor(a["w0"], a["w"], a["V"], a["cutpoints"], a["classes"],
                                      int(a["n_features"]))
        return cls(a["w0"], a["w"], a["V"], str(a["link"]), int(a["n_features"]))


class FMOrdinalPredictor(FMPredictor):
    """An ordered probit FM (``link`` "ordinal", ``sparkxml_kernels.fm.ordinal``): the FM
    arrays plus ``cutpoints`` float64 (S, K-1) (each sample's, ascending) and ``classes``
    float64 (K,) (the label value of each class, ascending). ``predict_proba`` gives the
    (n, K) class probabilities (the mean over the samples), ``predict`` the expected label
    Σ_c p_c classes[c]."""

    def __init__(self, w0, w, V, cutpoints, classes, n_features: int):
        super().__init__(w0, w, V, "identity", n_features)
        self.link_name = "ordinal"
        self.classes = np.ascontiguousarray(classes, FLOAT).reshape(-1)
        K = self.classes.size
        if K < 2 or np.any(np.diff(self.classes) <= 0) or not np.isfinite(self.classes).all():
            raise ValueError("classes must hold at least 2 finite ascending label values")
        cut = np.ascontiguousarray(cutpoints, FLOAT)
        if cut.shape != (self.n_samples, K - 1):
            raise ValueError(f"cutpoints has shape {cut.shape}, expected "
                             f"({self.n_samples}, {K - 1})")
        if not np.isfinite(cut).all() or np.any(np.diff(cut, axis=1) < 0):
            raise ValueError("cutpoints must be finite and ascending in every sample")
        self.cutpoints = cut

    @property
    def is_classifier(self) -> bool:
        return False

    @property
    def n_classes(self) -> int:
        return self.classes.size

    def _scores(self, indptr, indices, data):
        return fm_scores(indptr, indices, data, self.w0, self.w, self.V, LINKS["identity"])

    def predict_raw(self, X) -> np.ndarray:
        """float64 (n,): the mean over the samples of ŷ_s (the latent score)."""
        return self._scores(*_rows(X, self.n_features))[0]

    def predict_ordinal_csr(self, indptr, indices, data):
        """(raw: mean ŷ (n,), expected label (n,), class probabilities (n, K)) for validated
        CSR arrays (the Spark transform's path)."""
        from .ordinal import expected_values, ordinal_proba

        data = np.asarray(data, FLOAT)
        raw, _ = self._scores(indptr, indices, data)
        proba = ordinal_proba(indptr, indices, data, self.w0, self.w, self.V, self.cutpoints)
        return raw, expected_values(proba, self.classes), proba

    def predict_csr(self, indptr, indices, data):
        raw, expected, _ = self.predict_ordinal_csr(indptr, indices, data)
        return raw, expected

    def predict(self, X) -> np.ndarray:
        """float64 (n,): the expected label."""
        return self.predict_ordinal_csr(*_rows(X, self.n_features))[1]

    def predict_proba(self, X) -> np.ndarray:
        """float64 (n, K): the class probabilities."""
        return self.predict_ordinal_csr(*_rows(X, self.n_features))[2]

    def to_arrays(self) -> dict:
        return dict(super().to_arrays(), link=np.asarray("ordinal"),
                    cutpoints=self.cutpoints, classes=self.classes)


@njit(cache=True, nogil=True)
def _gbfm_scores(indptr, indices, data, w0, field_of, field_starts, stage_fields,
                 stage_offsets, stage_V, stage_lin, linear, out):
    S = stage_fields.shape[0]
    k = stage_V.shape[1]
    qp = np.empty(k, np.float64)
    qq = np.empty(k, np.float64)
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        y = w0
        for p in range(lo, hi):
            y += linear[indices[p]] * data[p]
        for s in range(S):
            fp, fq = stage_fields[s, 0], stage_fields[s, 1]
            op = stage_offsets[s] - field_starts[fp]
            oq = stage_offsets[s] + (field_starts[fp + 1] - field_starts[fp]) \
                - field_starts[fq]
            hp, hq = False, False
            qp[:] = 0.0
            qq[:] = 0.0
            for p in range(lo, hi):
                j = indices[p]
                c = field_of[j]
                if c == fp:
                    hp = True
                    y += stage_lin[op + j] * data[p]
                    for f in range(k):
                        qp[f] += stage_V[op + j, f] * data[p]
                elif c == fq:
                    hq = True
                    y += stage_lin[oq + j] * data[p]
                    for f in range(k):
                        qq[f] += stage_V[oq + j, f] * data[p]
            if hp and hq:
                for f in range(k):
                    y += qp[f] * qq[f]
        out[i] = y


def gbfm_scores_naive(X, w0, field_starts, stage_fields, stage_offsets, stage_V, stage_lin,
                      linear=None):
    """Slow twin of the GBFM kernel on a dense matrix: the paper's double sum over feature
    pairs of the two fields, plus the stages' first-order terms and ``linear``."""
    X = np.asarray(X, FLOAT)
    out = np.full(X.shape[0], float(w0))
    if linear is not None:
        out += X @ np.asarray(linear, FLOAT)
    for s, (p, q) in enumerate(stage_fields):
        ps, pe = field_starts[p], field_starts[p + 1]
        qs, qe = field_starts[q], field_starts[q + 1]
        Vs = stage_V[stage_offsets[s]:stage_offsets[s + 1]]
        us = stage_lin[stage_offsets[s]:stage_offsets[s + 1]]
        Vp, Vq = Vs[:pe - ps], Vs[pe - ps:]
        out += X[:, ps:pe] @ us[:pe - ps] + X[:, qs:qe] @ us[pe - ps:]
        for i in range(X.shape[0]):
            for a in range(ps, pe):
                for b in range(qs, qe):
                    if X[i, a] != 0 and X[i, b] != 0:
                        out[i] += float(Vp[a - ps] @ Vq[b - qs]) * X[i, a] * X[i, b]
    return out


class GBFMPredictor(_Predictor):
    """A GBFM model (see the module docstring for the arrays)."""

    keys = GBFM_KEYS

    def __init__(self, w0, field_starts, stage_fields, stage_offsets, stage_V, stage_lin,
                 stage_gain, link: str, n_features: int, linear=None):
        self.w0 = float(w0)
        self.n_features = int(n_features)
        self.linear = (np.zeros(self.n_features, FLOAT) if linear is None
                       else np.ascontiguousarray(linear, FLOAT).reshape(-1))
        if self.linear.size != self.n_features:
            raise ValueError(f"linear has {self.linear.size} weights for {self.n_features} "
                             f"features")
        self.field_starts = np.ascontiguousarray(field_starts, np.int64)
        fs = self.field_starts
        if fs.size < 2 or fs[0] != 0 or fs[-1] != self.n_features or np.any(np.diff(fs) <= 0):
            raise ValueError("field_starts must rise strictly from 0 to n_features")
        self.stage_fields = np.ascontiguousarray(stage_fields, np.int32).reshape(-1, 2)
        S = self.stage_fields.shape[0]
        self.stage_offsets = np.ascontiguousarray(stage_offsets, np.int64)
        self.stage_V = np.ascontiguousarray(stage_V, FLOAT)
        if self.stage_V.ndim != 2:
            raise ValueError("stage_V must be 2-D")
        self.stage_lin = np.ascontiguousarray(stage_lin, FLOAT).reshape(-1)
        if self.stage_lin.size != self.stage_V.shape[0]:
            raise ValueError("stage_lin and stage_V have different numbers of rows")
        self.stage_gain = np.ascontiguousarray(stage_gain, FLOAT).reshape(S)
        m = fs.size - 1
        if S and (self.stage_fields.min() < 0 or self.stage_fields.max() >= m
                  or np.any(self.stage_fields[:, 0] == self.stage_fields[:, 1])):
            raise ValueError("stage_fields name fields out of range")
        sizes = (np.diff(fs)[self.stage_fields[:, 0]] + np.diff(fs)[self.stage_fields[:, 1]]
                 if S else np.zeros(0, np.int64))
        off = self.stage_offsets
        if off.size != S + 1 or off[0] != 0 or np.any(np.diff(off) != sizes) \
                or off[-1] != self.stage_V.shape[0]:
            raise ValueError("stage_offsets are inconsistent with the stages and fields")
        if str(link) not in LINKS:
            raise ValueError(f"unknown GBFM link {link!r}")
        self.link_name = str(link)
        self.field_of = np.repeat(np.arange(m, dtype=np.int32), np.diff(fs))

    @property
    def n_stages(self) -> int:
        return self.stage_fields.shape[0]

    def _scores(self, indptr, indices, data):
        n = indptr.size - 1
        out = np.empty(n, FLOAT)
        _gbfm_scores(indptr, indices, data, self.w0, self.field_of, self.field_starts,
                     self.stage_fields, self.stage_offsets, self.stage_V, self.stage_lin,
                     self.linear, out)
        return out, _link_array(out, LINKS[self.link_name])

    def truncate(self, n_stages: int) -> "GBFMPredictor":
        """The first ``n_stages`` stages."""
        s = int(n_stages)
        e = self.stage_offsets[s]
        return GBFMPredictor(self.w0, self.field_starts, self.stage_fields[:s],
                             self.stage_offsets[:s + 1], self.stage_V[:e], self.stage_lin[:e],
                             self.stage_gain[:s], self.link_name, self.n_features, self.linear)

    def to_arrays(self) -> dict:
        return {"w0": np.asarray(self.w0, FLOAT), "field_starts": self.field_starts,
                "stage_fields": self.stage_fields, "stage_offsets": self.stage_offsets,
                "stage_V": self.stage_V, "stage_lin": self.stage_lin,
                "stage_gain": self.stage_gain,
                "link": np.asarray(self.link_name),
                "n_features": np.asarray(self.n_features, np.int64), "linear": self.linear}

    @classmethod
    def from_arrays(cls, a: dict) -> "GBFMPredictor":
        return cls(float(a["w0"]), a["field_starts"], a["stage_fields"], a["stage_offsets"],
                   a["stage_V"], a["stage_lin"], a["stage_gain"], str(a["link"]),
                   int(a["n_features"]), a.get("linear"))


def gbfm_scores(predictor: GBFMPredictor, indptr, indices, data) -> np.ndarray:
    """Raw GBFM scores float64 (n,) for CSR rows."""
    return predictor._scores(indptr, indices, np.asarray(data, FLOAT))[0]


@njit(cache=True, nogil=True)
def _link_into(y, link, out):
    for i in range(y.shape[0]):
        out[i] = _link(y[i], link)


def _link_array(y, link):
    out = np.empty_like(y)
    _link_into(y, link, out)
    return out
