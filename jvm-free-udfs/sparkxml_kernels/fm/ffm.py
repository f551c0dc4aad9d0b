"""Field-aware factorization machines (Juan et al., RecSys 2016; libffm): the model, its
prediction, and adagrad SGD in a worker-count independent order (coordinate descent and
Gibbs sampling: ``ffm_cd``).

Model (``modelKind`` "ffm"), features split into m fields by ``field_starts``, f(j) the field
of feature j, r = 1 / ||x||² with instance-wise normalisation (libffm's default), else 1:

    ŷ(x) = w0 + Σ_j w_j x_j √r + Σ_{a<b} ⟨V[j_a, f(j_b)], V[j_b, f(j_a)]⟩ x_a x_b r

Each feature has one k-vector per field (V: d x m x k). libffm has no w0 / w (they are
``fitIntercept`` / ``fitLinear`` here; both off is libffm's model); the linear term uses
x √r, the pairs x_a x_b r, so normalisation scales x to unit length in both.

Adagrad SGD as libffm runs it (one thread, no Hogwild): rows one at a time; per row the
margin, κ = w_i ℓ'(ŷ) (logistic or squared loss, w_i the row weight), then for every pair
a < b in the row and every factor c (old values on both sides of the pair):
g = λ V[j_a, f_b, c] + κ V[j_b, f_a, c] x_a x_b r, G += g², V -= η g / √G, the same for
the partner; G starts at 1, V ~ U(0, 1/√k) (libffm's init). w and w0 get the same adagrad
step (w with λ, w0 without).

Row order, the same for any number of workers: an epoch visits the 16 row blocks (``order``)
in block order and, inside a block, its rows in the order of a per-epoch uniform of (seed,
epoch, row id) (a shuffle as libffm's, that does not depend on where a row lives). The
parameters and their adagrad sums travel as ONE accumulator through the collective's
``ordered_fold``: rank 0 runs its blocks, hands the model to rank 1, and so on; the last
rank's model goes to every rank. That is the sequential pass over all rows, bit for bit, for
any number of workers up to 16. The price: the workers run one after the other (training
does not get faster with more workers; they hold the rows and add memory), and each epoch
sends the model plus its adagrad sums (2 (1 + d + d m k) float64) world - 1 times in
sequence, then to every rank.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .order import seq_sum
from .predictor import LINKS, _link_array, _Predictor
from .rng import param_rng, uniforms
from .solver import logistic_parts
from .watch import end_iteration

__all__ = ["FFMPredictor", "FFM_KEYS", "ffm_scores", "ffm_scores_naive", "ffm_sgd_rows",
           "ffm_sgd_rows_naive", "run_ffm", "field_of_features", "STREAM_FFM_ORDER"]

FFM_KEYS = ("w0", "w", "V", "field_starts", "normalize", "link", "n_features")
STREAM_FFM_ORDER = 0x4646  # per-epoch row order inside a row block


def field_of_features(field_starts, d: int) -> np.ndarray:
    """int32 (d,): the field of every feature (fields run from a start to the next)."""
    fs = np.asarray(list(field_starts) + [d], np.int64)
    return np.repeat(np.arange(fs.size - 1, dtype=np.int32), np.diff(fs))


@njit(cache=True, nogil=True)
def _row_scale(data, lo, hi, normalize):
    """r = 1 / ||x||² (1 for an empty row or without normalisation)."""
    if not normalize:
        return 1.0
    s = 0.0
    for p in range(lo, hi):
        s += data[p] * data[p]
    return 1.0 / s if s > 0.0 else 1.0


@njit(cache=True, nogil=True)
def _margin(lo, hi, indices, data, field_of, w0, w, V, r):
    k = V.shape[2]
    sr = math.sqrt(r)
    y = w0
    for a in range(lo, hi):
        y += w[indices[a]] * data[a] * sr
    for a in range(lo, hi):
        ja, fa = indices[a], field_of[indices[a]]
        for b in range(a + 1, hi):
            jb, fb = indices[b], field_of[indices[b]]
            t = 0.0
            for c in range(k):
                t += V[ja, fb, c] * V[jb, fa, c]
            y += t * data[a] * data[b] * r
    return y


@njit(cache=True, nogil=True)
def ffm_scores_into(indptr, indices, data, field_of, w0, w, V, normalize, out):
    """out_i = ŷ(x_i) (the raw score) for CSR rows; O(k nnz²) a row."""
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        out[i] = _margin(lo, hi, indices, data, field_of, w0, w, V,
                         _row_scale(data, lo, hi, normalize))


def ffm_scores(indptr, indices, data, field_of, w0, w, V, normalize: bool) -> np.ndarray:
    """float64 (n,) raw FFM scores of CSR rows."""
    out = np.empty(indptr.size - 1, FLOAT)
    ffm_scores_into(indptr, indices, np.asarray(data, FLOAT), field_of, float(w0),
                    np.asarray(w, FLOAT), np.asarray(V, FLOAT), bool(normalize), out)
    return out


def ffm_scores_naive(X, field_starts, w0, w, V, normalize: bool) -> np.ndarray:
    """Slow twin of :func:`ffm_scores` on a dense (n, d) matrix: normalise the row, then the
    definition's double sum over feature pairs (zeros included)."""
    X = np.asarray(X, FLOAT)
    n, d = X.shape
    f = field_of_features(field_starts, d)
    out = np.zeros(n)
    for i in range(n):
        x = X[i]
        s = float(x @ x)
        xt = x / math.sqrt(s) if normalize and s > 0 else x
        y = float(w0) + float(np.asarray(w, FLOAT) @ xt)
        for a in range(d):
            for b in range(a + 1, d):
                y += float(np.dot(V[a, f[b]], V[b, f[a]])) * xt[a] * xt[b]
        out[i] = y
    return out


@njit(cache=True, nogil=True)
def ffm_sgd_rows(rows, indptr, indices, data, field_of, y, wt, loss, eta, lam, normalize,
                 fit_w0, fit_lin, head, w, gw, V, GV):
    """One adagrad pass over ``rows`` (in that order), updating in place: ``head`` =
    [w0, G(w0), Σ w_i ℓ_i, Σ w_i] (the loss before each row's update, as libffm's training
    loss), w / gw (d,) linear weights and their adagrad sums, V / GV (d, m, k). ``loss``:
    0 squared (½ (ŷ - y)²), 1 logistic (y in {0, 1}). Rows of weight 0 are skipped."""
    k = V.shape[2]
    for t in range(rows.shape[0]):
        i = rows[t]
        wi = wt[i]
        if wi <= 0.0:
            continue
        lo, hi = indptr[i], indptr[i + 1]
        r = _row_scale(data, lo, hi, normalize)
        m = _margin(lo, hi, indices, data, field_of, head[0], w, V, r)
        if loss == 0:
            e = m - y[i]
            kappa = wi * e
            head[2] += wi * 0.5 * e * e
        else:
            pr, sp = logistic_parts(m)
            kappa = wi * (pr - y[i])
            head[2] += wi * (sp - y[i] * m)
        head[3] += wi
        if fit_w0:
            head[1] += kappa * kappa
            head[0] -= eta / math.sqrt(head[1]) * kappa
        if fit_lin:
            sr = math.sqrt(r)
            for a in range(lo, hi):
                j = indices[a]
                g = lam * w[j] + kappa * data[a] * sr
                gw[j] += g * g
                w[j] -= eta / math.sqrt(gw[j]) * g
        for a in range(lo, hi):
            ja, fa = indices[a], field_of[indices[a]]
            for b in range(a + 1, hi):
                jb, fb = indices[b], field_of[indices[b]]
                v = kappa * data[a] * data[b] * r
                for c in range(k):
                    v1 = V[ja, fb, c]
                    v2 = V[jb, fa, c]
                    g1 = lam * v1 + v * v2
                    g2 = lam * v2 + v * v1
                    GV[ja, fb, c] += g1 * g1
                    GV[jb, fa, c] += g2 * g2
                    V[ja, fb, c] = v1 - eta / math.sqrt(GV[ja, fb, c]) * g1
                    V[jb, fa, c] = v2 - eta / math.sqrt(GV[jb, fa, c]) * g2


def ffm_sgd_rows_naive(rows, X, field_starts, y, wt, loss, eta, lam, normalize, fit_w0,
                       fit_lin, head, w, gw, V, GV):
    """Slow twin of :func:`ffm_sgd_rows` on a dense matrix: the margin by
    :func:`ffm_scores_naive`, the loss by numpy, the updates pair by pair in Python."""
    X = np.asarray(X, FLOAT)
    d = X.shape[1]
    f = field_of_features(field_starts, d)
    for i in rows:
        if wt[i] <= 0:
            continue
        x = X[i]
        nz = np.flatnonzero(x)
        s = float(x @ x)
        r = 1.0 / s if normalize and s > 0 else 1.0
        m = float(ffm_scores_naive(x[None, :], field_starts, head[0], w, V, normalize)[0])
        if loss == 0:
            dl, lv = m - y[i], 0.5 * (m - y[i]) ** 2
        else:
            p = 1.0 / (1.0 + math.exp(-m))
            dl, lv = p - y[i], float(np.logaddexp(0.0, m)) - y[i] * m
        kappa = wt[i] * dl
        head[2] += wt[i] * lv
        head[3] += wt[i]
        if fit_w0:
            head[1] += kappa ** 2
            head[0] -= eta / math.sqrt(head[1]) * kappa
        if fit_lin:
            g = lam * w[nz] + kappa * x[nz] * math.sqrt(r)
            gw[nz] += g ** 2
            w[nz] -= eta / np.sqrt(gw[nz]) * g
        for ai, a in enumerate(nz):
            for b in nz[ai + 1:]:
                v1, v2 = V[a, f[b]].copy(), V[b, f[a]].copy()
                g1 = lam * v1 + kappa * x[a] * x[b] * r * v2
                g2 = lam * v2 + kappa * x[a] * x[b] * r * v1
                GV[a, f[b]] += g1 ** 2
                GV[b, f[a]] += g2 ** 2
                V[a, f[b]] = v1 - eta / np.sqrt(GV[a, f[b]]) * g1
                V[b, f[a]] = v2 - eta / np.sqrt(GV[b, f[a]]) * g2


class _Layout:
    """Where each part of the flat accumulator lives: [w0, G(w0), Σ wℓ, Σ w | w | gw | V | GV].
    """

    def __init__(self, d: int, m: int, k: int):
        self.d, self.m, self.k = d, m, k
        self.size = 4 + 2 * d + 2 * d * m * k

    def views(self, theta):
        d, m, k = self.d, self.m, self.k
        dv = d * m * k
        return (theta[:4], theta[4:4 + d], theta[4 + d:4 + 2 * d],
                theta[4 + 2 * d:4 + 2 * d + dv].reshape(d, m, k),
                theta[4 + 2 * d + dv:].reshape(d, m, k))


def _initial_intercept(data, y, weights, classification: bool, coll) -> float:
    """w0 at the (weighted) mean label, or its log-odds (a fixed-order sum over the rows)."""
    rb = data.rb
    sums = rb.total(coll, lambda lo, hi: [seq_sum(weights[lo:hi] * y[lo:hi]),
                                          seq_sum(weights[lo:hi])], 2)
    mean = float(sums[0] / max(sums[1], 1e-300))
    if not classification:
        return mean
    p = min(max(mean, 1e-6), 1.0 - 1e-6)
    return math.log(p / (1.0 - p))


def run_ffm(data, y, weights, rids, params: dict, coll):
    """Adagrad SGD on this rank's rows (``data``: ``layout.BlockedData`` of rows in (row
    block, key) order); every rank returns the same arrays (``FFMPredictor``) and history
    ({"loss": mean training loss of each epoch, "seconds"})."""
    d = data.d
    fs = [int(v) for v in params["fieldStarts"]]
    m, k = len(fs), int(params["factorSize"])
    field_of = field_of_features(fs, d)
    classification = params["task"] == "classification"
    loss = 1 if classification else 0
    eta, lam = float(params["stepSize"]), float(params["regParam"])
    normalize = bool(params["normalize"])
    fit_w0, fit_lin = bool(params["fitIntercept"]), bool(params["fitLinear"])
    seed = int(params["seed"])
    y = np.ascontiguousarray(y, FLOAT)
    weights = (np.ones(data.n, FLOAT) if weights is None
               else np.ascontiguousarray(weights, FLOAT))
    lay = _Layout(d, m, k)
    theta = np.zeros(lay.size, FLOAT)
    head, w, gw, V, GV = lay.views(theta)
    V[...] = param_rng(seed).uniform(0.0, 1.0, size=(d, m, k)) / math.sqrt(k)
    head[1], gw[:], GV[...] = 1.0, 1.0, 1.0  # libffm starts the adagrad sums at 1
    if fit_w0:
        head[0] = _initial_intercept(data, y, weights, classification, coll)
    rb = data.rb
    hist = {"loss": [], "seconds": []}
    on_iteration = params.get("on_iteration")
    t0 = time.perf_counter()
    for epoch in range(int(params["maxIter"])):
        u = uniforms(seed, STREAM_FFM_ORDER, epoch, rids)
        rows = np.concatenate([lo + np.argsort(u[lo:hi], kind="stable")
                               for lo, hi in rb.ranges()] or [np.zeros(0, np.int64)])
        rows = rows.astype(np.int64)

        def run_mine(acc):
            h, ww, gg, VV, GG = lay.views(acc)
            ffm_sgd_rows(rows, data.indptr, data.indices, data.data, field_of, y, weights,
                         loss, eta, lam, normalize, fit_w0, fit_lin, h, ww, gg, VV, GG)

        theta[2:4] = 0.0
        theta = np.asarray(coll.ordered_fold(theta, run_mine), FLOAT)
        head = theta[:4]
        hist["loss"].append(float(head[2] / max(head[3], 1e-300)))
        end_iteration(hist, t0, on_iteration)
    head, w, gw, V, GV = lay.views(theta)
    arrays = {"w0": np.asarray(head[0], FLOAT), "w": w.copy(), "V": V.copy(),
              "field_starts": np.asarray(fs + [d], np.int64),
              "normalize": np.asarray(normalize),
              "link": np.asarray("logistic" if classification else "identity"),
              "n_features": np.asarray(d, np.int64)}
    return arrays, hist


class FFMPredictor(_Predictor):
    """A field-aware FM (see the module docstring).

    =============  ===================  ===================================================
    key            dtype, shape         meaning
    =============  ===================  ===================================================
    w0             float64 ()           intercept
    w              float64 (d,)         linear weights
    V              float64 (d, m, k)    V[j, f]: feature j's factors against field f
    field_starts   int64 (m + 1,)       field c is features [field_starts[c], [c + 1])
    normalize      bool ()              instance-wise L2 normalisation of each row
    link           str ()               "identity" | "logistic" | "probit"
    n_features     int64 ()             d
    =============  ===================  ===================================================

    An MCMC model (``ffm_cd``) holds S posterior samples: w0 (S,), w (S, d), V (S, d, m, k).
    Its prediction is the mean over the samples of link(ŷ_s), as ``FMPredictor``'s (ŷ for
    regression, Φ(ŷ_s) for probit classification); ``w0``, ``w`` and ``V`` as attributes are
    then the posterior means.
    """

    keys = FFM_KEYS

    def __init__(self, w0, w, V, field_starts, normalize: bool, link: str, n_features: int):
        self.n_features = int(n_features)
        d = self.n_features
        self.field_starts = np.ascontiguousarray(field_starts, np.int64).reshape(-1)
        fs = self.field_starts
        if fs.size < 2 or fs[0] != 0 or fs[-1] != d or np.any(np.diff(fs) <= 0):
            raise ValueError("field_starts must rise strictly from 0 to n_features")
        m = fs.size - 1
        w0 = np.asarray(w0, FLOAT)
        self._sampled = w0.ndim == 1  # MCMC: a leading sample axis on w0, w and V
        self.w0s = w0.reshape(-1)
        S = self.w0s.size
        self.ws = np.ascontiguousarray(w, FLOAT)
        self.Vs = np.ascontiguousarray(V, FLOAT)
        lead = (S,) if self._sampled else ()
        if S < 1 or w0.ndim > 1 or self.ws.shape != lead + (d,) or self.Vs.ndim != len(lead) + 3 \
                or self.Vs.shape[:len(lead) + 2] != lead + (d, m):
            raise ValueError(f"w0 has shape {w0.shape}, w {self.ws.shape} and V "
                             f"{self.Vs.shape}; expected (), ({d},), ({d}, {m}, k) or, "
                             f"for S samples, (S,), (S, {d}), (S, {d}, {m}, k)")
        self.ws, self.Vs = self.ws.reshape(S, d), self.Vs.reshape((S, d, m) + self.Vs.shape[-1:])
        if str(link) not in ("identity", "logistic", "probit"):
            raise ValueError(f"unknown FFM link {link!r}")
        if not (np.isfinite(self.w0s).all() and np.isfinite(self.ws).all()
                and np.isfinite(self.Vs).all()):
            raise ValueError("FFM parameters hold NaN or infinite values")
        # the parameters (MCMC: their posterior mean; the prediction averages the samples')
        self.w0 = float(self.w0s[0]) if S == 1 else float(np.mean(self.w0s))
        self.w = self.ws[0] if S == 1 else self.ws.mean(axis=0)
        self.V = self.Vs[0] if S == 1 else self.Vs.mean(axis=0)
        self.link_name = str(link)
        self.normalize = bool(normalize)
        self.field_of = field_of_features(fs[:-1].tolist(), d)

    @property
    def n_samples(self) -> int:
        """Parameter sets the prediction averages over (MCMC samples; 1 otherwise)."""
        return int(self.w0s.size)

    @property
    def factor_size(self) -> int:
        return self.V.shape[2]

    @property
    def n_fields(self) -> int:
        return self.V.shape[1]

    def _scores(self, indptr, indices, data):
        """(mean of ŷ_s, mean of link(ŷ_s)) over the samples (one sample: ŷ, link(ŷ))."""
        link = LINKS[self.link_name]
        mean = mean_link = None
        for s in range(self.n_samples):
            raw = ffm_scores(indptr, indices, data, self.field_of, self.w0s[s], self.ws[s],
                             self.Vs[s], self.normalize)
            lk = _link_array(raw, link)
            if mean is None:
                mean, mean_link = raw, lk
            else:
                mean, mean_link = mean + raw, mean_link + lk
        S = self.n_samples
        return (mean, mean_link) if S == 1 else (mean / S, mean_link / S)

    def to_arrays(self) -> dict:
        if self._sampled:
            w0, w, V = self.w0s, self.ws, self.Vs
        else:
            w0, w, V = np.asarray(self.w0, FLOAT), self.w, self.V
        return {"w0": w0, "w": w, "V": V, "field_starts": self.field_starts,
                "normalize": np.asarray(self.normalize), "link": np.asarray(self.link_name),
                "n_features": np.asarray(self.n_features, np.int64)}

    @classmethod
    def from_arrays(cls, a: dict) -> "FFMPredictor":
        return cls(a["w0"], a["w"], a["V"], a["field_starts"], bool(a["normalize"]),
                   str(a["link"]), int(a["n_features"]))
