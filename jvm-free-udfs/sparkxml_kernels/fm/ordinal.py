"""Ordered probit factorization machines (myFM's ``MyFMOrderedProbit``): kernels of the Gibbs
sampler and of prediction.

Model: classes 0 < 1 < ... < K-1 and K-1 ordered cutpoints γ_0 < ... < γ_{K-2}; a latent
z_i ~ N(ŷ(x_i), 1) gives class c when γ_{c-1} < z_i ≤ γ_c (γ_{-1} = -∞, γ_{K-1} = +∞), so

    P(y = c | x) = Φ(γ_c - ŷ(x)) - Φ(γ_{c-1} - ŷ(x)).

The cutpoints are parametrised by α (K-1,): γ_0 = α_0, γ_m = γ_{m-1} + exp(α_m) (ordered by
construction), with the prior α_m ~ N(0, 1/reg) (reg = 1, myFM's ``reg_0``). Each sweep
(myFM's order: after the FM parameters) draws α by one Metropolis-Hastings step whose
proposal is a multivariate t (ν = 5 degrees of freedom) centred at the mode of
p(α | ŷ, y) (z integrated out) with the inverse Hessian there as scale; the mode is found by
Newton's method with step halving, started from the current α. Then every z_i is drawn from
N(ŷ_i, 1) truncated to its class's interval (:func:`truncated_normal_between`, by inversion
from one uniform per row), and the FM parameters are drawn as in regression with α = 1 and
targets z.

Every sum over rows (the log-likelihood, its gradient and Hessian) is a fixed-order sum over
the row blocks (``order``), and all draws of α come from the generator every rank shares, so
the chain is the same for any number of workers.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .predictor import sample_score
from .rng import ndtri, norm_cdf

__all__ = ["truncated_normal_between", "truncated_normal_between_naive",
           "sample_ordinal_targets", "cutpoint_sums", "cutpoint_sums_naive",
           "alpha_to_gamma", "CutpointSampler", "ordinal_proba", "ordinal_proba_naive",
           "expected_values", "STREAM_ORDINAL", "NU", "REG"]

STREAM_ORDINAL = 0x4F50  # per-row uniforms of the latent draws
NU = 5.0  # degrees of freedom of the t proposal (myFM's nu_oprobit)
REG = 1.0  # prior precision of α (myFM's reg_0)

_SQRT1_2 = 0.7071067811865476
_INV_SQRT2PI = 0.3989422804014327


@njit(cache=True, nogil=True)
def _erfcx(t):
    """exp(t²) erfc(t) for t >= 0 (the scaled complementary error function)."""
    if t < 25.0:
        return math.exp(t * t) * math.erfc(t)
    # asymptotic series: relative error below 1e-13 for t >= 25
    s = 1.0 / (t * t)
    return (1.0 - 0.5 * s + 0.75 * s * s - 1.875 * s * s * s) / (t * 1.7724538509055159)


@njit(cache=True, nogil=True)
def _upper_tail_deviation(a, b, u):
    """eps ~ N(0, 1) conditioned on a < eps < b with 0 < a (b may be +inf), from u."""
    qa = 0.5 * math.erfc(a * _SQRT1_2)
    if qa < 1e-300:
        # far tail: eps - a is exponential with rate a (truncated at b - a)
        cap = 1.0 if b == np.inf else -math.expm1(-a * (b - a))
        return a - math.log1p(-u * cap) / a
    qb = 0.5 * math.erfc(b * _SQRT1_2)
    return -ndtri(qa - u * (qa - qb))


@njit(cache=True, nogil=True)
def truncated_normal_between(mean, lo, hi, u):
    """A draw of z ~ N(mean, 1) truncated to lo < z < hi (lo may be -inf, hi +inf), from one
    uniform u in (0, 1), by inverting the truncated CDF in the tail that keeps its digits."""
    a, b = lo - mean, hi - mean
    if a > 0.0:
        eps = _upper_tail_deviation(a, b, u)
    elif b < 0.0:
        eps = -_upper_tail_deviation(-b, -a, 1.0 - u)
    else:
        pa, pb = norm_cdf(a), norm_cdf(b)
        p = pa + u * (pb - pa)
        if p <= 0.5:
            eps = ndtri(p)
        else:  # the complement, so that p near 1 keeps its digits
            qa, qb = 0.5 * math.erfc(a * _SQRT1_2), 0.5 * math.erfc(b * _SQRT1_2)
            eps = -ndtri(qb + (1.0 - u) * (qa - qb))
    eps = min(max(eps, a), b)
    return mean + eps


def truncated_normal_between_naive(mean: float, lo: float, hi: float, u: float) -> float:
    """Slow twin of :func:`truncated_normal_between` with scipy's ``truncnorm.ppf``."""
    from scipy.stats import truncnorm

    return float(mean + truncnorm.ppf(u, lo - mean, hi - mean))


@njit(cache=True, nogil=True)
def sample_ordinal_targets(pred, cls, gamma, u, out):
    """Latent targets: out[i] ~ N(pred[i], 1) truncated to class cls[i]'s interval
    (γ_{c-1}, γ_c), drawn from u[i]. ``cls``: int64 (n,) in 0..K-1; ``gamma`` (K-1,)."""
    K = gamma.shape[0] + 1
    for i in range(pred.shape[0]):
        c = cls[i]
        lo = -np.inf if c == 0 else gamma[c - 1]
        hi = np.inf if c == K - 1 else gamma[c]
        out[i] = truncated_normal_between(pred[i], lo, hi, u[i])


@njit(cache=True, nogil=True)
def _interval_terms(a, b):
    """(log P, φ(a)/P, φ(b)/P) for P = Φ(b) - Φ(a), a < b (a may be -inf, b +inf), computed
    from the scaled erfc when both ends lie in one tail."""
    if a > 0.0:
        d_b = 0.0 if b == np.inf else math.exp(0.5 * (a * a - b * b)) * _erfcx(b * _SQRT1_2)
        D = _erfcx(a * _SQRT1_2) - d_b
        r = 2.0 * _INV_SQRT2PI / D
        rb = 0.0 if b == np.inf else r * math.exp(0.5 * (a * a - b * b))
        return -0.5 * a * a + math.log(0.5 * D), r, rb
    if b < 0.0:
        d_a = 0.0 if a == -np.inf else math.exp(0.5 * (b * b - a * a)) * _erfcx(-a * _SQRT1_2)
        D = _erfcx(-b * _SQRT1_2) - d_a
        r = 2.0 * _INV_SQRT2PI / D
        ra = 0.0 if a == -np.inf else r * math.exp(0.5 * (b * b - a * a))
        return -0.5 * b * b + math.log(0.5 * D), ra, r
    P = 0.5 * (math.erf(b * _SQRT1_2) - math.erf(a * _SQRT1_2))
    ra = 0.0 if a == -np.inf else _INV_SQRT2PI * math.exp(-0.5 * a * a) / P
    rb = 0.0 if b == np.inf else _INV_SQRT2PI * math.exp(-0.5 * b * b) / P
    return math.log(P), ra, rb


@njit(cache=True, nogil=True)
def _cutpoint_sums(pred, cls, gamma, out):
    K1 = gamma.shape[0]
    for i in range(out.shape[0]):
        out[i] = 0.0
    for i in range(pred.shape[0]):
        c = cls[i]
        a = -np.inf if c == 0 else gamma[c - 1] - pred[i]
        b = np.inf if c == K1 else gamma[c] - pred[i]
        lp, ra, rb = _interval_terms(a, b)
        out[0] += lp
        if c < K1:  # upper end γ_c
            out[1 + c] += rb
            out[1 + K1 + c] += -b * rb - rb * rb
        if c > 0:  # lower end γ_{c-1}
            out[1 + c - 1] -= ra
            out[1 + K1 + c - 1] += a * ra - ra * ra
        if c > 0 and c < K1:
            out[1 + 2 * K1 + c - 1] += ra * rb


def cutpoint_sums(pred, cls, gamma) -> np.ndarray:
    """float64 (3(K-1),): Σ_i log P(y_i | ŷ_i, γ), its gradient in γ (K-1,), the Hessian's
    diagonal (K-1,) and off-diagonal H[m, m+1] (K-2,), over the rows given (pred float64 (n,),
    cls int64 (n,), gamma float64 (K-1,))."""
    K1 = int(np.asarray(gamma).size)
    out = np.zeros(3 * K1, FLOAT)
    _cutpoint_sums(np.ascontiguousarray(pred, FLOAT), np.ascontiguousarray(cls, np.int64),
                   np.ascontiguousarray(gamma, FLOAT), out)
    return out


def cutpoint_sums_naive(pred, cls, gamma) -> np.ndarray:
    """Slow twin of :func:`cutpoint_sums`: scipy's log CDF differences, and the gradient and
    Hessian by central differences of that log-likelihood."""
    from scipy.special import log_ndtr

    pred = np.asarray(pred, FLOAT)
    K1 = len(gamma)

    def ll(g):
        lo = np.concatenate([[-np.inf], g])[cls] - pred
        hi = np.concatenate([g, [np.inf]])[cls] - pred
        # log(Φ(hi) - Φ(lo)) = log Φ(hi) + log1p(-exp(log Φ(lo) - log Φ(hi)))
        lhi, llo = log_ndtr(hi), log_ndtr(lo)
        upper = hi > 0  # use the upper tail there: Φ(-lo) - Φ(-hi)
        lhu, llu = log_ndtr(-lo), log_ndtr(-hi)
        v = np.where(upper, lhu + np.log1p(-np.exp(llu - lhu)),
                     lhi + np.log1p(-np.exp(llo - lhi)))
        return float(np.sum(v))

    g0 = np.asarray(gamma, FLOAT)
    h = 1e-4
    grad = np.zeros(K1)
    hess = np.zeros((K1, K1))
    for m in range(K1):
        e = np.zeros(K1)
        e[m] = h
        grad[m] = (ll(g0 + e) - ll(g0 - e)) / (2 * h)
        for q in range(K1):
            f = np.zeros(K1)
            f[q] = h
            hess[m, q] = (ll(g0 + e + f) - ll(g0 + e - f) - ll(g0 - e + f)
                          + ll(g0 - e - f)) / (4 * h * h)
    return np.concatenate([[ll(g0)], grad, np.diag(hess), np.diag(hess, 1)])


def alpha_to_gamma(alpha: np.ndarray) -> np.ndarray:
    """The cutpoints γ (K-1,) of the unconstrained α: γ_0 = α_0, γ_m = γ_{m-1} + exp(α_m)."""
    alpha = np.asarray(alpha, FLOAT)
    g = np.empty_like(alpha)
    g[0] = alpha[0]
    for m in range(1, alpha.size):
        g[m] = g[m - 1] + math.exp(alpha[m])
    return g


class CutpointSampler:
    """The cutpoints' Metropolis-Hastings step (see the module docstring).

    ``totals(gamma)`` returns :func:`cutpoint_sums` over every rank's rows (a fixed-order sum,
    the same on every rank); ``rng`` is the generator every rank shares.
    """

    def __init__(self, n_classes: int, reg: float = REG, nu: float = NU):
        self.K1 = int(n_classes) - 1
        self.reg, self.nu = float(reg), float(nu)
        self.alpha = np.zeros(self.K1, FLOAT)
        self.accepted = 0

    def objective(self, alpha, totals):
        """(f, ∇f, ∇²f) of f(α) = -log p(y | ŷ, γ(α)) + reg/2 |α|²."""
        K1 = self.K1
        gamma = alpha_to_gamma(alpha)
        s = totals(gamma)
        if not np.all(np.isfinite(s)):
            return np.inf, None, None
        ll, g = s[0], s[1:1 + K1]
        Hg = np.diag(s[1 + K1:1 + 2 * K1])
        if K1 > 1:
            off = s[1 + 2 * K1:]
            Hg += np.diag(off, 1) + np.diag(off, -1)
        # J[i, m] = dγ_m / dα_i: 1 for i = 0, exp(α_i) for 1 <= i <= m
        ea = np.exp(alpha)
        J = np.triu(np.ones((K1, K1)))
        J[1:] *= ea[1:, None]
        grad = J @ g
        H = J @ Hg @ J.T
        # second derivatives of γ_m: d²γ_m / dα_j² = exp(α_j) for 1 <= j <= m
        tail = np.cumsum(g[::-1])[::-1]  # Σ_{m >= j} g_m
        H[np.arange(1, K1), np.arange(1, K1)] += ea[1:] * tail[1:]
        f = -ll + 0.5 * self.reg * float(alpha @ alpha)
        return f, -grad + self.reg * alpha, -H + self.reg * np.eye(K1)

    def mode(self, totals, max_iter: int = 100):
        """(α̂, ∇²f(α̂)): Newton's method with step halving from the current α."""
        a = self.alpha.copy()
        f, g, H = self.objective(a, totals)
        for _ in range(max_iter):
            if np.linalg.norm(g) < 1e-5 * max(1.0, np.linalg.norm(a)):
                break
            step = -np.linalg.solve(H, g)
            t = 1.0
            for _ in range(60):
                f2, g2, H2 = self.objective(a + t * step, totals)
                if f2 <= f + 1e-12 * abs(f):
                    break
                t *= 0.5
            else:
                break
            a, done = a + t * step, abs(f - f2) <= 1e-12 * max(abs(f), 1.0)
            f, g, H = f2, g2, H2
            if done:
                break
        return a, H

    def start(self, totals) -> np.ndarray:
        """The first cutpoints: the mode (myFM starts there)."""
        self.alpha, _ = self.mode(totals)
        return alpha_to_gamma(self.alpha)

    def _log_q(self, x, center, H):
        d = x - center
        return -0.5 * (self.nu + self.K1) * math.log1p(float(d @ H @ d) / self.nu)

    def step(self, totals, rng) -> np.ndarray:
        """One Metropolis-Hastings step; returns the cutpoints γ (K-1,)."""
        center, H = self.mode(totals)
        L = np.linalg.cholesky(H)
        z = rng.standard_normal(self.K1)
        chi = rng.gamma(self.nu / 2.0) * 2.0 / self.nu
        cand = center + np.linalg.solve(L.T, z) / math.sqrt(chi)
        u = rng.random()
        f_new = self.objective(cand, totals)[0]
        f_old = self.objective(self.alpha, totals)[0]
        if np.isfinite(f_new):
            log_ratio = (-f_new - self._log_q(cand, center, H)
                         + f_old + self._log_q(self.alpha, center, H))
            if math.log(u) < log_ratio:
                self.alpha = cand
                self.accepted += 1
        return alpha_to_gamma(self.alpha)


@njit(cache=True, nogil=True)
def _ordinal_proba(indptr, indices, data, w0, W, V, cut, out):
    S, _, k = V.shape
    K1 = cut.shape[1]
    q = np.empty(k, np.float64)
    q2 = np.empty(k, np.float64)
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        for c in range(K1 + 1):
            out[i, c] = 0.0
        for s in range(S):
            y = sample_score(indices, data, lo, hi, w0, W, V, s, q, q2)
            prev = 0.0
            for c in range(K1):
                cdf = norm_cdf(cut[s, c] - y)
                out[i, c] += cdf - prev
                prev = cdf
            out[i, K1] += 1.0 - prev
        for c in range(K1 + 1):
            out[i, c] /= S


def ordinal_proba(indptr, indices, data, w0, W, V, cut) -> np.ndarray:
    """float64 (n, K): class probabilities of CSR rows, the mean over the S samples of
    Φ(γ_{s,c} - ŷ_s) - Φ(γ_{s,c-1} - ŷ_s) (w0 (S,), W (S, d), V (S, d, k), cut (S, K-1))."""
    out = np.empty((indptr.size - 1, np.asarray(cut).shape[1] + 1), FLOAT)
    _ordinal_proba(indptr, indices, np.asarray(data, FLOAT), w0, W, V,
                   np.ascontiguousarray(cut, FLOAT), out)
    return out


def ordinal_proba_naive(X, w0, W, V, cut) -> np.ndarray:
    """Slow twin of :func:`ordinal_proba` on a dense (n, d) matrix (scipy's normal CDF and
    the O(k d²) pairwise model)."""
    from scipy.stats import norm

    from .predictor import fm_scores_naive

    X = np.asarray(X, FLOAT)
    out = np.zeros((X.shape[0], np.asarray(cut).shape[1] + 1))
    for s in range(len(w0)):
        y, _ = fm_scores_naive(X, w0[s:s + 1], W[s:s + 1], V[s:s + 1], 0)
        cdf = norm.cdf(np.asarray(cut[s], FLOAT)[None, :] - y[:, None])
        cdf = np.column_stack([np.zeros(X.shape[0]), cdf, np.ones(X.shape[0])])
        out += np.diff(cdf, axis=1)
    return out / len(w0)


@njit(cache=True, nogil=True)
def _expected(proba, classes, out):
    for i in range(proba.shape[0]):
        e = 0.0
        for c in range(classes.shape[0]):
            e += proba[i, c] * classes[c]
        out[i] = e


def expected_values(proba: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """float64 (n,): Σ_c proba[i, c] classes[c] (the expected label), added class by class."""
    out = np.empty(proba.shape[0], FLOAT)
    _expected(np.ascontiguousarray(proba, FLOAT), np.ascontiguousarray(classes, FLOAT), out)
    return out
