"""Best split of each node from its histogram: XGBoost's second-order gain.

For a node with gradient/hessian sums (G, H) and a candidate split into (G_L, H_L), (G_R, H_R)::

    score(G, H) = T(G)^2 / (H + lambda)     T(G) = sign(G) max(|G| - alpha, 0)  (L1)
                = 0 when H < min_child_weight or H <= 0
    gain        = score(G_L, H_L) + score(G_R, H_R) - score(G, H) - gamma
    leaf weight = -T(G) / (H + lambda)     (0 when H < min_child_weight or H <= 0)

This is XGBoost's unhalved ``loss_chg`` minus ``min_split_loss`` (gamma). A split is valid when
both children have H >= min_child_weight and gain > 1e-6 (XGBoost's kRtEps). Unlike XGBoost,
gamma is applied when the split is chosen (pre-pruning) rather than by pruning the finished
tree bottom-up; with gamma = 0 (the default) the two agree.

Scan order and ties follow XGBoost's hist evaluator: features ascending; per feature a forward
scan over thresholds t = 0 .. n_bins-1 ("bin <= t" left) with missing values sent right, then,
only when the node has missing values for the feature, a backward scan (t = n_bins-2 .. 0)
with missing values sent left; a candidate replaces the best only when better by more than
``TIE_RTOL x (score(G, H) + |best|)`` (so ties and near-ties -- rounding-level differences --
keep the lower feature, forward before backward; XGBoost uses strictly-greater). The
threshold t = n_bins-1 with missing right is "present vs missing" (raw threshold +inf). When
a node has no missing values the default direction is right, as in XGBoost. "All present
right, missing left" is the same partition as "present vs missing" and is not tried twice.

Empty bins: a threshold is only evaluated right after a bin that holds hessian mass above
``empty_hess`` (and the missing bin only counts when its hessian exceeds it). Thresholds
separated by empty bins split the node's rows identically, so with exact arithmetic this
changes nothing (the scan keeps the first of equal gains: the lowest threshold forward, the
highest backward, as XGBoost does). But histograms derived by subtraction carry rounding noise
(~1e-16 of the parent's sums) in slots that should be zero, and without this rule the noise
would pick among equivalent thresholds -- or switch on the missing-value scan -- differently
depending on how the rows were split across workers. The grower passes ``empty_hess = 1e-11
x`` the root's hessian sum, far above that noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._dtypes import FLOAT, NODE
from .._jit import njit

K_RT_EPS = 1e-6
# Near-ties: a candidate must beat the best by this much (relative to the node's score scale)
# to replace it. Gains of equivalent splits (e.g. two features that separate the same rows)
# differ only by rounding, which depends on how rows are split across workers; without the
# tolerance, that rounding would pick the feature and numWorkers=1 and 2 would grow different
# trees. (Spark layer change, see test_gbt.py::test_same_model_1_and_2_workers.)
TIE_RTOL = 1e-9


@dataclass(frozen=True)
class SplitParams:
    """Regularisation of the split gain (XGBoost names in brackets).

    reg_lambda (lambda) : L2 on leaf weights, default 1.0
    reg_alpha (alpha) : L1 on leaf weights, default 0.0
    min_split_loss (gamma) : minimum gain to split, default 0.0
    min_child_weight : minimum hessian sum in each child, default 1.0
    """

    reg_lambda: float = 1.0
    reg_alpha: float = 0.0
    min_split_loss: float = 0.0
    min_child_weight: float = 1.0

    def __post_init__(self):
        if self.reg_lambda < 0 or self.reg_alpha < 0 or self.min_split_loss < 0 \
                or self.min_child_weight < 0:
            raise ValueError(f"regularisation parameters must be >= 0: {self}")


@njit(cache=True, nogil=True)
def _soft(g, alpha):
    if g > alpha:
        return g - alpha
    if g < -alpha:
        return g + alpha
    return 0.0


@njit(cache=True, nogil=True)
def _score(g, h, lam, alpha, mcw):
    if h < mcw or h <= 0.0:
        return 0.0
    t = _soft(g, alpha)
    return t * t / (h + lam)


def leaf_weight(G: float, H: float, params: SplitParams) -> float:
    """Optimal leaf weight -T(G)/(H+lambda) (0 when H < min_child_weight or H <= 0)."""
    if H < params.min_child_weight or H <= 0.0:
        return 0.0
    a = params.reg_alpha
    t = G - a if G > a else (G + a if G < -a else 0.0)
    return -t / (H + params.reg_lambda)


@njit(cache=True, nogil=True)
def _bounded_weight(g, h, lam, alpha, mcw, lo, hi):
    """XGBoost's leaf weight under monotone constraints: clamped to the node's [lo, hi]."""
    if h < mcw or h <= 0.0:
        w = 0.0
    else:
        w = -_soft(g, alpha) / (h + lam)
    if w < lo:
        return lo
    if w > hi:
        return hi
    return w


@njit(cache=True, nogil=True)
def _gain_given_weight(g, h, lam, w):
    # XGBoost's CalcGainGivenWeight: the loss reduction of weight w (no L1 term), used for
    # every node once a model has monotone constraints
    if h <= 0.0:
        return 0.0
    return -(2.0 * g * w + (h + lam) * w * w)


@njit(cache=True, nogil=True)
def _constrained_gain(gl, hl, gr, hr, parent, lam, alpha, mcw, c, lo, hi):
    """Gain of a candidate split under monotone constraints (before gamma); -inf when its
    children's weights break the feature's constraint ``c``."""
    wl = _bounded_weight(gl, hl, lam, alpha, mcw, lo, hi)
    wr = _bounded_weight(gr, hr, lam, alpha, mcw, lo, hi)
    if (c > 0 and wl > wr) or (c < 0 and wl < wr):
        return -np.inf
    return _gain_given_weight(gl, hl, lam, wl) + _gain_given_weight(gr, hr, lam, wr) - parent


@njit(cache=True, nogil=True, inline="always")
def write_children(out_left, out_right, j, G, H, gl, hl):
    """Node ``j``'s children's (gradient, hessian) sums: (gl, hl) left, the rest of the
    node's (G, H) right."""
    out_left[j, 0] = gl
    out_left[j, 1] = hl
    out_right[j, 0] = G - gl
    out_right[j, 1] = H - hl


@njit(cache=True, nogil=True, inline="always")
def split_gain(gl, hl, gr, hr, parent, lam, alpha, mcw, constrained, c, lo, hi):
    """The gain of children (gl, hl) | (gr, hr) under a parent of score ``parent``; -inf
    when a child's hessian sum is below ``mcw`` (``minChildWeight``). ``constrained``: the
    monotone constraint ``c`` and the weight bounds [lo, hi] apply."""
    if hl < mcw or hr < mcw:
        return -np.inf
    if constrained:
        return _constrained_gain(gl, hl, gr, hr, parent, lam, alpha, mcw, c, lo, hi)
    return _score(gl, hl, lam, alpha, mcw) + _score(gr, hr, lam, alpha, mcw) - parent


def _make_split_kernel(constrained: bool):
    """The split-finding kernel, compiled twice: ``constrained`` is a compile-time constant,
    so the kernel of unconstrained models carries none of the monotone-constraint code."""

    @njit(cache=True, nogil=True)
    def find_splits(hists, sums, n_bins, feature_mask, lam, alpha, gamma, mcw, empty,
                    constraints, bounds,
                    out_feature, out_bin, out_dl, out_gain, out_left, out_right):
        m, d, n_slots, _ = hists.shape
        miss = n_slots - 1
        lo = -np.inf
        hi = np.inf
        c = 0
        for j in range(m):
            G = sums[j, 0]
            H = sums[j, 1]
            if constrained:
                lo = bounds[j, 0]
                hi = bounds[j, 1]
                parent = _gain_given_weight(G, H, lam,
                                            _bounded_weight(G, H, lam, alpha, mcw, lo, hi))
            else:
                parent = _score(G, H, lam, alpha, mcw)
            tie = TIE_RTOL * abs(parent)
            best = -np.inf
            margin = -np.inf  # best + tolerance: the gain a candidate must exceed
            bf, bb, bdl, bgl, bhl = -1, -1, 0, 0.0, 0.0  # the best split: feature, bin, ...
            for f in range(d):
                if feature_mask[f] == 0:
                    continue
                if constrained:
                    c = constraints[f]
                nb = n_bins[f]
                hf = hists[j, f]
                # forward scan: missing values go right
                gl = 0.0
                hl = 0.0
                for t in range(nb):
                    gl += hf[t, 0]
                    hl += hf[t, 1]
                    if hf[t, 1] <= empty:
                        continue
                    gain = split_gain(gl, hl, G - gl, H - hl, parent, lam, alpha, mcw,
                                      constrained, c, lo, hi)
                    if gain > margin:
                        best, bf, bb, bdl, bgl, bhl = gain, f, t, 0, gl, hl
                        margin = best + tie + TIE_RTOL * abs(best)
                if hf[miss, 1] > empty:
                    # backward scan: the right side accumulates from the top bin down,
                    # missing values stay on the left
                    gr = 0.0
                    hr = 0.0
                    for t in range(nb - 1, 0, -1):
                        gr += hf[t, 0]
                        hr += hf[t, 1]
                        if hf[t, 1] <= empty:
                            continue
                        gl = G - gr
                        hl = H - hr
                        gain = split_gain(gl, hl, gr, hr, parent, lam, alpha, mcw, constrained,
                                          c, lo, hi)
                        if gain > margin:
                            best, bf, bb, bdl, bgl, bhl = gain, f, t - 1, 1, gl, hl
                            margin = best + tie + TIE_RTOL * abs(best)
            gain = best - gamma
            if bf >= 0 and gain > K_RT_EPS:
                out_feature[j] = bf
                out_bin[j] = bb
                out_dl[j] = bdl
                out_gain[j] = gain
                write_children(out_left, out_right, j, G, H, bgl, bhl)
            else:
                out_feature[j] = -1
                out_bin[j] = -1
                out_dl[j] = 0
                out_gain[j] = -np.inf
                out_left[j, 0] = 0.0
                out_left[j, 1] = 0.0
                out_right[j, 0] = 0.0
                out_right[j, 1] = 0.0

    return find_splits


_find_splits = _make_split_kernel(False)
_find_splits_monotone = _make_split_kernel(True)


@dataclass
class SplitResult:
    """Best split per node; ``feature == -1`` where no valid split exists.

    feature : int32 (m,)
    bin : int32 (m,)          left iff bin value <= bin (missing: default_left)
    threshold : float64 (m,)  left iff raw x <= threshold (NaN when no edges were given)
    default_left : uint8 (m,)
    gain : float64 (m,)       loss_chg - gamma (-inf when no split)
    left_sums, right_sums : float64 (m, 2)   (G, H) of each child (missing included)
    """

    feature: np.ndarray
    bin: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    gain: np.ndarray
    left_sums: np.ndarray
    right_sums: np.ndarray


def split_threshold(edges, f: int, t: int) -> float:
    """Raw threshold of "bin <= t" on feature ``f``: ``edges[f][t]``, or +inf when ``t`` is
    the last real bin (present vs missing)."""
    e = edges[f]
    return float(e[t]) if t < len(e) else float("inf")


_NO_CONSTRAINTS = np.zeros(1, np.int8)
_NO_BOUNDS = np.zeros((1, 2), FLOAT)


def check_monotone(constraints, d: int):
    """Monotone constraints as int8 (d,) (-1 decreasing, 0 none, 1 increasing), or None when
    there are none. A shorter list is padded with 0 (as XGBoost's ``monotone_constraints``)."""
    if constraints is None:
        return None
    c = np.asarray(list(constraints), dtype=np.float64).reshape(-1)
    if c.size > d:
        raise ValueError(f"monotoneConstraints has {c.size} entries for {d} features")
    if not np.all(np.isin(c, (-1.0, 0.0, 1.0))):
        raise ValueError(f"monotoneConstraints must hold -1, 0 or 1, got {c.tolist()}")
    if not c.any():
        return None
    out = np.zeros(d, np.int8)
    out[:c.size] = c.astype(np.int8)
    return out


def bounded_leaf_weight(G: float, H: float, params: SplitParams, lo: float = -np.inf,
                        hi: float = np.inf) -> float:
    """:func:`leaf_weight` clamped to ``[lo, hi]`` (a node's bounds under monotone
    constraints, XGBoost's ``TreeEvaluator::CalcWeight``)."""
    return min(max(leaf_weight(G, H, params), lo), hi)


def find_best_splits(hists, sums, n_bins, feature_mask, params: SplitParams,
                     edges=None, empty_hess: float = 0.0, monotone=None,
                     bounds=None) -> SplitResult:
    """Best split of each of ``m`` nodes.

    Parameters
    ----------
    hists : float64 (m, d, n_slots, 2), C order
        Node histograms (see histogram.py for the layout).
    sums : float64 (m, 2)
        (G, H) of each node, missing values included.
    n_bins : int32 (d,)
        Real bins per feature.
    feature_mask : uint8 (d,)
        Features allowed to split (column sampling).
    params : SplitParams
    edges : list of float64 arrays, optional
        When given, ``threshold`` holds raw thresholds.
    empty_hess : float
        Bins with hessian sum <= this count as empty (see the module docstring).
    monotone : int8 (d,), optional
        Monotone constraints (:func:`check_monotone`). When given, gains follow XGBoost's
        ``TreeEvaluator`` for constrained models: children's weights are clamped to the
        node's ``bounds``, a split whose left/right weights break its feature's direction is
        rejected, and every gain is ``-(2 G w + (H + lambda) w^2)`` at the clamped weight.
    bounds : float64 (m, 2), optional
        [lower, upper] weight bound of each node (with ``monotone``; default unbounded).

    Returns
    -------
    SplitResult
    """
    hists = np.ascontiguousarray(hists, FLOAT)
    m = hists.shape[0]
    feature = np.empty(m, NODE)
    bins = np.empty(m, np.int32)
    dl = np.empty(m, np.uint8)
    gain = np.empty(m, FLOAT)
    left = np.empty((m, 2), FLOAT)
    right = np.empty((m, 2), FLOAT)
    constrained = monotone is not None
    if constrained:
        constraints = np.ascontiguousarray(monotone, np.int8)
        bounds = (np.tile([-np.inf, np.inf], (m, 1)) if bounds is None
                  else np.ascontiguousarray(bounds, FLOAT).reshape(m, 2))
    else:
        constraints, bounds = _NO_CONSTRAINTS, _NO_BOUNDS
    kernel = _find_splits_monotone if constrained else _find_splits
    kernel(hists, np.ascontiguousarray(sums, FLOAT), np.asarray(n_bins, np.int32),
           np.asarray(feature_mask, np.uint8), float(params.reg_lambda),
           float(params.reg_alpha), float(params.min_split_loss),
           float(params.min_child_weight), float(empty_hess), constraints, bounds, feature,
           bins, dl, gain, left, right)
    thr = np.empty(m, FLOAT)
    for j in range(m):  # m is a round's few candidates: a Python loop beats flatnonzero
        f = feature[j]
        thr[j] = split_threshold(edges, f, bins[j]) if edges is not None and f >= 0 \
            else np.nan
    return SplitResult(feature, bins, thr, dl, gain, left, right)


def find_best_splits_naive(hists, sums, n_bins, feature_mask, params: SplitParams,
                           edges=None, empty_hess: float = 0.0, monotone=None,
                           bounds=None) -> SplitResult:
    """Slow twin of :func:`find_best_splits`: every candidate's sums recomputed from scratch."""
    lam, alpha = params.reg_lambda, params.reg_alpha
    gamma, mcw = params.min_split_loss, params.min_child_weight

    def score(g, h):
        if h < mcw or h <= 0:
            return 0.0
        t = np.sign(g) * max(abs(g) - alpha, 0.0)
        return t * t / (h + lam)

    def weight_gain(g, h, lo, hi):  # (clamped weight, XGBoost's gain given that weight)
        w = bounded_leaf_weight(g, h, params, lo, hi)
        return w, (0.0 if h <= 0 else -(2 * g * w + (h + lam) * w * w))

    m, d, n_slots, _ = hists.shape
    res = SplitResult(np.full(m, -1, NODE), np.full(m, -1, np.int32), np.full(m, np.nan),
                      np.zeros(m, np.uint8), np.full(m, -np.inf), np.zeros((m, 2)),
                      np.zeros((m, 2)))
    for j in range(m):
        G, H = sums[j]
        lo, hi = (-np.inf, np.inf) if bounds is None else bounds[j]
        parent = score(G, H) if monotone is None else weight_gain(G, H, lo, hi)[1]
        best = None
        for f in range(d):
            if not feature_mask[f]:
                continue
            nb = int(n_bins[f])
            miss = hists[j, f, n_slots - 1]
            nonempty = hists[j, f, :, 1] > empty_hess
            cands = [(t, 0) for t in range(nb) if nonempty[t]]
            if miss[1] > empty_hess:
                cands += [(t, 1) for t in range(nb - 2, -1, -1) if nonempty[t + 1]]
            for t, dleft in cands:
                lsum = hists[j, f, :t + 1].sum(axis=0) + (miss if dleft else 0.0)
                rsum = np.array([G, H]) - lsum
                if lsum[1] < mcw or rsum[1] < mcw:
                    continue
                if monotone is None:
                    g = score(*lsum) + score(*rsum) - parent
                else:
                    (wl, gl), (wr, gr) = weight_gain(*lsum, lo, hi), weight_gain(*rsum, lo, hi)
                    if monotone[f] * (wr - wl) < 0:
                        continue
                    g = gl + gr - parent
                if best is None or g > best[0] + TIE_RTOL * (abs(parent) + abs(best[0])):
                    best = (g, f, t, dleft, lsum, rsum)
        if best is not None and best[0] - gamma > K_RT_EPS:
            g, f, t, dleft, lsum, rsum = best
            res.feature[j], res.bin[j], res.default_left[j] = f, t, dleft
            res.gain[j] = g - gamma
            res.left_sums[j], res.right_sums[j] = lsum, rsum
            if edges is not None:
                res.threshold[j] = split_threshold(edges, f, t)
    return res


def child_bounds(constraint, bounds, w_left, w_right):
    """Weight bounds of the two children of a node split on a feature with monotone
    ``constraint`` (XGBoost's ``TreeEvaluator::AddSplit``): both inherit the node's
    ``bounds``; an increasing split caps the left child and floors the right one at the mean
    of the children's (clamped, unscaled) weights ``w_left``, ``w_right``; decreasing the
    reverse."""
    lo, hi = bounds
    mid = 0.5 * (w_left + w_right)
    if constraint > 0:
        return (lo, mid), (mid, hi)
    if constraint < 0:
        return (mid, hi), (lo, mid)
    return bounds, bounds
