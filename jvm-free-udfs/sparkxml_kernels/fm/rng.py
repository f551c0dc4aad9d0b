"""Random numbers that do not depend on how rows are split across workers.

Two kinds of draws occur in training:

* draws for global parameters (MCMC's Gaussian / Gamma draws, initial factors): every rank
  holds the same parameters and makes the same calls on ``numpy.random.Generator(PCG64)``
  seeded from ``seed`` (:func:`param_rng`), so every rank draws the same numbers without
  communicating;
* draws per row (the probit latent targets, mini-batch membership): a uniform number that is a
  hash of (seed, sweep, row id) (:func:`row_uniforms`, the splitmix64 hash the boosting engine
  uses for row subsampling), where the row id (:func:`row_ids`) is built from the row's content
  key (``xxhash64`` of its columns, computed in the JVM) and its occurrence number among rows
  with the same key. Exact duplicate rows share a key; the occurrence number tells them apart
  because rows with one key always land in the same task (the data are partitioned by key).

The probit latent target of a row is drawn by inverting the truncated normal CDF
(:func:`truncated_normal`): one uniform per row and sweep, no rejection loop, so the draw is a
function of the row's uniform and its current prediction only.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from ..rng import row_uniforms, splitmix64

__all__ = ["param_rng", "row_ids", "row_uniforms", "ndtri", "ndtri_array", "norm_cdf", "truncated_normal",
           "truncated_normal_naive", "occurrences"]

# stream tags: which purpose a per-row uniform serves (mixed into the seed)
STREAM_PROBIT = 0x5052
STREAM_BATCH = 0x4241


def param_rng(seed: int, stream: int = 0) -> np.random.Generator:
    """The generator of global-parameter draws: the same sequence on every rank."""
    return np.random.Generator(np.random.PCG64([int(seed) & (2**63 - 1), int(stream)]))


def occurrences(keys: np.ndarray) -> np.ndarray:
    """int64 (n,): for keys sorted ascending, how many earlier rows share the key (0, 1, ...)."""
    keys = np.asarray(keys)
    n = keys.size
    if n == 0:
        return np.zeros(0, np.int64)
    starts = np.ones(n, bool)
    starts[1:] = keys[1:] != keys[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    return np.arange(n, dtype=np.int64) - first


def row_ids(keys: np.ndarray, occ: np.ndarray) -> np.ndarray:
    """int64 (n,) identity of each row: a hash of (content key, occurrence number)."""
    with np.errstate(over="ignore"):
        h = splitmix64(np.asarray(keys, np.int64).astype(np.uint64))
        h = splitmix64(h ^ np.asarray(occ, np.int64).astype(np.uint64))
    return h.view(np.int64)


def stream_seed(seed: int, stream: int) -> int:
    """The seed of one per-row stream (probit latents, mini-batches) of a fit."""
    return (int(seed) * 0x100000001B3 + int(stream)) & (2**63 - 1)


# --------------------------------------------------------------------------- normal CDF
_SQRT1_2 = 0.7071067811865476
_SQRT2PI = 2.5066282746310002

# Acklam's rational approximation of the normal quantile (relative error < 1.2e-9),
# refined below by one Halley step on erfc, which brings it to double precision.
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)


@njit(cache=True, nogil=True)
def norm_cdf(x):
    """Standard normal CDF, accurate in both tails (via erfc)."""
    return 0.5 * math.erfc(-x * _SQRT1_2)


@njit(cache=True, nogil=True)
def ndtri(p):
    """Standard normal quantile for p in (0, 1); -inf at 0, +inf at 1."""
    if p <= 0.0:
        return -np.inf
    if p >= 1.0:
        return np.inf
    plow = 0.02425
    if p < plow:
        q = math.sqrt(-2.0 * math.log(p))
        x = ((((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5])
             / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0))
    elif p <= 1.0 - plow:
        q = p - 0.5
        r = q * q
        x = ((((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
             / (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0))
    else:
        q = math.sqrt(-2.0 * math.log(1.0 - p))
        x = -((((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5])
              / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0))
    # one Halley step: e = Phi(x) - p, computed in the tail that keeps its digits
    if x < 0.0:
        e = 0.5 * math.erfc(-x * _SQRT1_2) - p
    else:
        e = (1.0 - p) - 0.5 * math.erfc(x * _SQRT1_2)
    u = e * _SQRT2PI * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@njit(cache=True, nogil=True)
def ndtri_array(p):
    """:func:`ndtri` of every element of a float64 array."""
    out = np.empty_like(p)
    for i in range(p.shape[0]):
        out[i] = ndtri(p[i])
    return out


@njit(cache=True, nogil=True)
def _left_tail_deviation(a, u):
    """eps ~ N(0, 1) conditioned on eps > a, from one uniform u in (0, 1), by inversion:
    eps = -Phi^-1(u * Phi(-a)). Far in the tail (Phi(-a) < 1e-300) the exponential
    approximation a + Exp(1)/a is used (relative error below 1/a^2 < 3e-3 there)."""
    tail = 0.5 * math.erfc(a * _SQRT1_2)  # Phi(-a)
    if tail < 1e-300:
        return a - math.log(u) / a
    return -ndtri(u * tail)


@njit(cache=True, nogil=True)
def truncated_normal(mean, positive, u):
    """A draw of z ~ N(mean, 1) truncated to z > 0 (positive) or z < 0, from uniform u."""
    if positive:
        return mean + _left_tail_deviation(-mean, u)
    return mean - _left_tail_deviation(mean, u)


@njit(cache=True, nogil=True)
def sample_probit_targets(pred, y, u, out):
    """Latent targets of probit regression: out[i] ~ N(pred[i], 1) restricted to the side of
    0 that y[i] (0 or 1) says, drawn from u[i]."""
    for i in range(pred.shape[0]):
        out[i] = truncated_normal(pred[i], y[i] > 0.5, u[i])


def truncated_normal_naive(mean: float, positive: bool, u: float) -> float:
    """Slow twin of :func:`truncated_normal` with scipy's ``truncnorm.ppf``."""
    from scipy.stats import truncnorm

    if positive:
        return float(mean + truncnorm.ppf(1.0 - u, -mean, np.inf))
    return float(mean + truncnorm.ppf(u, -np.inf, -mean))


def uniforms(seed: int, stream: int, counter: int, rids: np.ndarray) -> np.ndarray:
    """float64 (n,) uniforms in (0, 1) for rows ``rids`` at step ``counter`` of ``stream``."""
    u = row_uniforms(stream_seed(seed, stream), counter, rids)
    return np.asarray(u + 0.5 / 9007199254740992.0, FLOAT)  # (0, 1): never 0
