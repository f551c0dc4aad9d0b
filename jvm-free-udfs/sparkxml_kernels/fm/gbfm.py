"""Gradient Boosting Factorization Machines (Cheng, Xia, Zhang, King, Lyu; RecSys 2014).

Features are grouped in fields C_1..C_m (``fieldStarts``). The model starts from a constant
ŷ_0 (the loss minimiser: mean label, or its log-odds) and adds one factorised interaction per
stage s between a chosen pair of fields (p, q):

    ŷ_s(x) = ŷ_{s-1}(x) + stepSize · Σ_{i∈C_p} Σ_{j∈C_q} x_i x_j ⟨V_p^i, V_q^j⟩.

Each stage works on the second-order expansion of the loss at ŷ_{s-1} (gradient g_i and
hessian h_i of each row, weighted; squared loss for regression, logistic for classification):

1. **Greedy pair selection** (the paper's algorithm for a second-order term,
   f(x) = q_p(x) q_q(x) with q_C(x) = Σ_{j∈C} θ_j x_j): first fit q_C alone to the gradient for
   every field C, θ_j = -G_j / (H_j + λ), and pick p with the largest loss decrease
   ½ Σ_j G_j² / (H_j + λ); then, with q_p fixed, fit the multiplier q_C of every other field,
   θ_j = -Σ_i g_i q_p(x_i) x_ij / (Σ_i h_i q_p(x_i)² x_ij² + λ), and pick q the same way. Two
   passes over the data and 2m candidates per stage, not m(m-1)/2 pairs. (The per-feature fits
   are exact for fields whose features never share a row, such as one-hot columns; for others
   they ignore the coupling between features of the field.)
2. **Stage fit**: V_p, V_q (rank ``factorSize``) start from the greedy pair (θ_p, θ_q) as the
   first factor (the others ~ N(0, initStd²)) and are fitted by ``maxIter`` sweeps of exact
   coordinate descent (``cd`` CROSS mode, block by block as in ALS) on
   Σ_i [g_i f_i + ½ h_i f_i²] / W + regParam/2 |V|².
3. The stage is added with shrinkage ``stepSize``; the training loss decrease is its ``gain``.

With a validation set, the validation loss (RMSE or log-loss) is tracked after every stage;
``earlyStoppingRounds`` > 0 stops when it has not improved for that many stages, and the
model keeps the best number of stages.

With ``jointFit="mcmc"`` (the estimators' default) boosting only selects the pairs: the
distinct pairs of the kept stages are then refitted together, with a linear term for every
feature, by Gibbs sampling with hyper-priors (``gbfm_joint``), and the model holds one stage
per distinct pair. The selection then differs in three ways, each because only the set of
pairs is kept: boosting starts from a linear term for every feature (``maxIter`` sweeps of
coordinate descent), as the joint model has, so that a field that is a function of another
(the user's age band) is not paired with it for main effects alone; q_p is then field p's
fitted main effect (refitting it to the gradient would give about 0), every open pair (p, q)
is scored and the best taken; a pair is chosen once (``greedy_new_pair``: a repeat would add
nothing to the joint model); and pairs are scored by their *excess* gain (``excess_gains``),
the gain less its expectation on a gradient with no signal, so boosting stops when no new
pair explains more than noise would instead of running ``numStages`` stages (the first pair
is always taken, the best whatever its score: the joint fit's hyper-priors shrink an
interaction that explains nothing). On MovieLens 100K with context the selected pairs fitted
jointly are at least as accurate as FM over every pair (see docs/benchmarks.rst). Boosting
alone (``jointFit="none"``) fits each stage once, with a fixed shrinkage and penalty, and
trails a plain FM fitted by MCMC on real rating data (see docs/fm.rst); the joint fit is
what makes the selected pairs as accurate as FM.

Parameters are global and updated identically on every rank; each pass reduces per-feature
sums in a fixed order (``order``), so the model is the same bit for bit for any number of
workers.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._dtypes import FLOAT
from .cd import CROSS, LINEAR, cross_cache, feature_stats
from .layout import BlockedData, refine_blocks
from .order import fixed_sum, row_dots
from .rng import param_rng
from .solver import LOGISTIC, SQUARED, NewtonRule, loss_terms, update_blocks

__all__ = ["run_gbfm", "field_gains", "greedy_pair", "greedy_new_pair", "excess_gains"]


class _StageRows:
    """The caches of one stage fit: derivatives at ŷ_{s-1} (c1, c2) and the stage output r."""

    def __init__(self, c1, c2, r):
        self.c1, self.c2, self.r = c1, c2, r


def field_gains(A, G, field_starts, W: float, reg: float) -> np.ndarray:
    """Loss decrease of the best per-feature fit of each field: ½ Σ_j (G_j/W)² / (A_j/W + λ)."""
    den = A / W + reg
    g = np.where(den > 0, (G / W) ** 2 / np.where(den > 0, den, 1.0), 0.0) * 0.5
    return np.add.reduceat(g, field_starts[:-1]) if g.size else np.zeros(0)


def _coefs(A, G, W, reg):
    den = A / W + reg
    return np.where(den > 0, -(G / W) / np.where(den > 0, den, 1.0), 0.0)


def greedy_pair(data: BlockedData, field_blocks, field_starts, c1, c2, W, reg, coll):
    """The paper's greedy selection of (p, q) on this stage's gradient; returns
    (p, q, θ_p, θ_q, gain of q_p alone, gain of q_p q_q)."""
    A, G = _feature_sums(data, c1, c2, np.ones(data.n, FLOAT), coll)
    g1 = field_gains(A, G, field_starts, W, reg)
    p = int(np.argmax(g1))
    ps, pe = int(field_starts[p]), int(field_starts[p + 1])
    theta_p = _coefs(A[ps:pe], G[ps:pe], W, reg)
    f1 = np.zeros((1, data.n), FLOAT)
    for b in field_blocks[p]:
        _, _, lo, hi = data.block(b)
        cross_cache(lo, hi, data.rows, data.feats, data.vals, ps, theta_p[None, :], f1)
    # score partners on what q_p leaves: the gradient after the step-1 fit, c1 + c2 f1
    A, G = _feature_sums(data, c1 + c2 * f1[0], c2, f1[0], coll)
    g2 = field_gains(A, G, field_starts, W, reg)
    g2[p] = -np.inf
    q = int(np.argmax(g2))
    qs, qe = int(field_starts[q]), int(field_starts[q + 1])
    return p, q, theta_p, _coefs(A[qs:qe], G[qs:qe], W, reg), float(g1[p]), float(g2[q])


def excess_gains(A, G, B, field_starts, W: float, reg: float) -> np.ndarray:
    """Per field, the best per-feature fit's loss decrease less what it would be on a gradient
    with no signal: ½ Σ_j (G_j² - B_j) / W² / (A_j/W + λ), B_j = Σ_i (c1_i mult_i x_ij)².

    G_j² sums B_j (each row with itself) and the products of distinct rows; only the latter
    have a non-zero mean when the rows' gradients carry something the field explains, so
    G_j² - B_j is an unbiased estimate of (E G_j)² and a field of many rarely seen features
    scores about 0 on noise instead of about ½ σ² |C| / W."""
    den = A / W + reg
    g = np.where(den > 0, (G * G - B) / (W * W) / np.where(den > 0, den, 1.0), 0.0) * 0.5
    return np.add.reduceat(g, field_starts[:-1]) if g.size else np.zeros(0)


def greedy_new_pair(data: BlockedData, field_blocks, field_starts, c1, c2, W, reg, coll, chosen,
                    profile, need_gain: bool = True):
    """The greedy selection of a pair not in ``chosen`` (a set of (min, max) field pairs),
    for the joint fit: q_p is field p's main effect (``profile``, float64 (d,), the linear
    terms fitted first), and the pair (p, q) scores the excess gain (``excess_gains``) of the
    best multiplier of q_p by field q, fitted to the gradient. The open pair with the largest
    score; None when no open pair scores above 0 (with ``need_gain``; without it, the best open
    pair whatever its score: the first stage, so that the model has an interaction to fit).

    With the joint fit boosting only chooses which pairs interact, so a pair chosen again adds
    nothing, and the selection stops where the remaining pairs explain no more than noise
    would. The linear terms already explain what q_p alone would, so q_p is not refitted to
    the gradient (it would be about 0) but taken from them. Returns as ``greedy_pair``."""
    m = len(field_starts) - 1
    best = None
    for p in range(m):
        open_ = [q for q in range(m) if q != p and (min(p, q), max(p, q)) not in chosen]
        if not open_:
            continue
        ps, pe = int(field_starts[p]), int(field_starts[p + 1])
        theta_p = np.ascontiguousarray(profile[ps:pe])
        f1 = np.zeros((1, data.n), FLOAT)
        for b in field_blocks[p]:
            _, _, lo, hi = data.block(b)
            cross_cache(lo, hi, data.rows, data.feats, data.vals, ps, theta_p[None, :], f1)
        A, G = _feature_sums(data, c1, c2, f1[0], coll)
        B, _ = _feature_sums(data, c1, c1 * c1, f1[0], coll)
        g2 = excess_gains(A, G, B, field_starts, W, reg)
        q = max(open_, key=lambda c: (g2[c], -c))
        if (g2[q] > 0 or not need_gain) and (best is None or g2[q] > best[5]):
            qs, qe = int(field_starts[q]), int(field_starts[q + 1])
            best = (p, q, theta_p, _coefs(A[qs:qe], G[qs:qe], W, reg), 0.0, float(g2[q]))
    return best


def _feature_sums(data: BlockedData, c1, c2, mult, coll):
    """(A, G) float64 (d,) of ``cd.feature_stats`` over every rank's rows, per row block in a
    fixed order."""
    parts = np.zeros((data.rb.n_blocks, 2, data.d), FLOAT)
    for b, (lo, hi) in enumerate(data.rb.ranges()):
        feature_stats(data.indptr[lo:hi + 1], data.indices, data.data, c1[lo:hi], c2[lo:hi],
                      mult[lo:hi], parts[b, 0], parts[b, 1])
    s = fixed_sum(coll, parts)
    return s[0], s[1]


def _stage_output(data, field_blocks, p, q, fs, Vp, Vq):
    """(Qp, Qq, f): the two fields' embeddings of every row and the stage output Σ_f Qp Qq."""
    k = Vp.shape[0]
    Qp = np.zeros((k, data.n), FLOAT)
    Qq = np.zeros((k, data.n), FLOAT)
    for c, V, Q in ((p, Vp, Qp), (q, Vq, Qq)):
        for b in field_blocks[c]:
            _, _, lo, hi = data.block(b)
            cross_cache(lo, hi, data.rows, data.feats, data.vals, int(fs[c]), V, Q)
    return Qp, Qq, row_dots(Qp, Qq)


def _init_score(loss, y, w, coll, rb):
    sw, swy = rb.sums(coll, w, w * y)
    if sw <= 0:
        raise ValueError("the training rows have no weight")
    mean = swy / sw
    if loss == SQUARED:
        return mean
    mean = min(max(mean, 1e-12), 1 - 1e-12)
    return math.log(mean / (1.0 - mean))


def _mean_loss(loss, pred, y, w, coll, rb):
    """(Σ w loss over every rank's rows, c1, c2 of this rank's rows)."""
    c1 = np.empty(pred.size, FLOAT)
    c2 = np.empty(pred.size, FLOAT)
    (s,) = rb.total(coll, lambda lo, hi: [loss_terms(loss, pred[lo:hi], y[lo:hi], w[lo:hi],
                                                     c1[lo:hi], c2[lo:hi])], 1)
    return float(s), c1, c2


def run_gbfm(train, valid, params: dict, coll):
    """Boost GBFM stages on this rank's prepared rows (``train.Prepared``; ``valid`` may be
    None); every rank returns the same model.

    params: task, fieldStarts (list, first 0), numStages, stepSize, factorSize, maxIter,
    regParam, initStd, seed, earlyStoppingRounds.

    Returns (arrays of ``predictor.GBFMPredictor``, history dict).
    """
    d = train.d
    fs = np.asarray(list(params["fieldStarts"]) + [d], np.int64)
    m = fs.size - 1
    if m < 2:
        raise ValueError("GBFM needs at least two fields (fieldStarts)")
    blocks = refine_blocks(train.segments, fs)
    data = train.blocked(blocks)
    vdata = None if valid is None else valid.blocked(blocks)
    block_field = np.searchsorted(fs, blocks[:-1], side="right") - 1
    field_blocks = [np.flatnonzero(block_field == c).tolist() for c in range(m)]
    loss = LOGISTIC if params["task"] == "classification" else SQUARED
    k, reg = int(params["factorSize"]), float(params["regParam"])
    step, sweeps = float(params["stepSize"]), int(params["maxIter"])
    stop_after = int(params.get("earlyStoppingRounds") or 0)
    rng = param_rng(int(params["seed"]))
    y = train.y
    rw = np.ones(train.n, FLOAT) if train.w is None else train.w
    (W,) = data.rb.sums(coll, rw)
    w0 = _init_score(loss, y, rw, coll, data.rb)
    pred = np.full(train.n, w0, FLOAT)
    if vdata is not None:
        vy = valid.y
        vw = np.ones(valid.n, FLOAT) if valid.w is None else valid.w
        vpred = np.full(valid.n, w0, FLOAT)
        (VW,) = vdata.rb.sums(coll, vw)
    rule = NewtonRule(W, reg)
    stages, Vs, lins, gains, sel_gains, first_gains = [], [], [], [], [], []
    hist = {"train_loss": [], "valid_metric": [], "seconds": []}
    on_iteration = params.get("on_iteration")  # f(hist) after each stage
    best, best_at = np.inf, -1
    t0 = time.perf_counter()
    cur, c1, c2 = _mean_loss(loss, pred, y, rw, coll, data.rb)
    joint = params.get("jointFit", "none") == "mcmc"
    chosen: set = set()
    if joint:
        # the joint fit has a linear term for every feature: select the pairs on what those
        # leave, or a context field of the user (age band, sex) paired with the user would
        # look like an interaction where it only carries the user's main effect
        lin_all = np.zeros(d, FLOAT)
        rows = _StageRows(c1, c2, np.zeros(train.n, FLOAT))
        for _ in range(sweeps):
            update_blocks(data, range(data.n_blocks), LINEAR, lin_all, 0, None, None, rows,
                          coll, rule)
        pred += rows.r
        cur, c1, c2 = _mean_loss(loss, pred, y, rw, coll, data.rb)
        if vdata is not None:
            vlin = np.zeros((1, vdata.n), FLOAT)
            for b in range(vdata.n_blocks):
                _, _, lo, hi = vdata.block(b)
                cross_cache(lo, hi, vdata.rows, vdata.feats, vdata.vals, 0, lin_all[None, :],
                            vlin)
            vpred += vlin[0]
    for s in range(int(params["numStages"])):
        if joint:
            found = greedy_new_pair(data, field_blocks, fs, c1, c2, W, reg, coll, chosen,
                                    lin_all, need_gain=s > 0)
            if found is None:
                break  # no new pair explains more of the gradient than noise would
            p, q, theta_p, theta_q, g1, g2 = found
            chosen.add((min(p, q), max(p, q)))
        else:
            p, q, theta_p, theta_q, g1, g2 = greedy_pair(data, field_blocks, fs, c1, c2, W,
                                                         reg, coll)
            if not g2 > 1e-15:
                break  # no field pair explains any of the remaining gradient
        np_, nq = int(fs[p + 1] - fs[p]), int(fs[q + 1] - fs[q])
        Vp = np.ascontiguousarray(rng.normal(0.0, float(params["initStd"]), (k, np_)), FLOAT)
        Vq = np.ascontiguousarray(rng.normal(0.0, float(params["initStd"]), (k, nq)), FLOAT)
        Vp[0], Vq[0] = theta_p, theta_q
        # with the joint fit θ_p is p's main effect, already among the linear terms
        lin_p = np.zeros(np_, FLOAT) if joint else theta_p.copy()
        lin_q = np.zeros(nq, FLOAT)
        Qp, Qq, r = _stage_output(data, field_blocks, p, q, fs, Vp, Vq)
        lp = np.zeros((1, data.n), FLOAT)
        for b in field_blocks[p]:
            _, _, lo, hi = data.block(b)
            cross_cache(lo, hi, data.rows, data.feats, data.vals, int(fs[p]), lin_p[None, :], lp)
        rows = _StageRows(c1, c2, np.ascontiguousarray(r + lp[0]))
        for _ in range(sweeps):
            update_blocks(data, field_blocks[p], LINEAR, lin_p, int(fs[p]), None, None, rows,
                          coll, rule)
            update_blocks(data, field_blocks[q], LINEAR, lin_q, int(fs[q]), None, None, rows,
                          coll, rule)
            for f in range(k):
                update_blocks(data, field_blocks[p], CROSS, Vp[f], int(fs[p]), Qq[f], Qp[f],
                              rows, coll, rule)
                update_blocks(data, field_blocks[q], CROSS, Vq[f], int(fs[q]), Qp[f], Qq[f],
                              rows, coll, rule)
        Vp *= step
        lin_p *= step
        lin_q *= step
        pred += step * rows.r
        new, c1, c2 = _mean_loss(loss, pred, y, rw, coll, data.rb)
        if vdata is not None:
            vpred += _stage_output(vdata, field_blocks, p, q, fs, Vp, Vq)[2]
            vlin = np.zeros((1, vdata.n), FLOAT)
            for c, lin in ((p, lin_p), (q, lin_q)):
                for b in field_blocks[c]:
                    _, _, lo, hi = vdata.block(b)
                    cross_cache(lo, hi, vdata.rows, vdata.feats, vdata.vals, int(fs[c]),
                                lin[None, :], vlin)
            vpred += vlin[0]
            vloss = _mean_loss(loss, vpred, vy, vw, coll, vdata.rb)[0]
        stages.append((p, q))
        Vs.append(np.concatenate([Vp.T, Vq.T]))
        lins.append(np.concatenate([lin_p, lin_q]))
        gains.append((cur - new) / W)
        sel_gains.append(g2)
        first_gains.append(g1)
        cur = new
        hist["train_loss"].append(new / W)
        hist["seconds"].append(time.perf_counter() - t0)
        if vdata is not None:
            vm = vloss / max(VW, 1e-300)
            metric = math.sqrt(2.0 * vm) if loss == SQUARED else vm
            hist["valid_metric"].append(metric)
        if on_iteration is not None:
            on_iteration(hist)
        if vdata is not None:
            if metric < best - 1e-12:
                best, best_at = metric, s
            elif stop_after > 0 and s - best_at >= stop_after:
                break
    keep = len(stages)
    if vdata is not None and stop_after > 0 and best_at >= 0:
        keep = best_at + 1
    hist.update(selection_gain=sel_gains, first_field_gain=first_gains, stages_run=len(stages),
                best_stage=(best_at if vdata is not None else len(stages) - 1),
                n_blocks=int(data.n_blocks))
    if joint and keep:
        return _joint_arrays(train, data, fs, field_blocks, stages[:keep], gains[:keep],
                             sel_gains[:keep], params, coll, hist)
    offsets = np.zeros(keep + 1, np.int64)
    offsets[1:] = np.cumsum([v.shape[0] for v in Vs[:keep]])
    arrays = {
        "w0": np.asarray(w0, FLOAT), "field_starts": fs,
        "stage_fields": np.asarray(stages[:keep], np.int32).reshape(-1, 2),
        "stage_offsets": offsets,
        "stage_V": (np.concatenate(Vs[:keep]) if keep else np.zeros((0, k), FLOAT)),
        "stage_lin": (np.concatenate(lins[:keep]) if keep else np.zeros(0, FLOAT)),
        "stage_gain": np.asarray(gains[:keep], FLOAT),
        "link": np.asarray("logistic" if loss == LOGISTIC else "identity"),
        "n_features": np.asarray(d, np.int64)}
    return arrays, hist


def _joint_arrays(train, data, fs, field_blocks, stages, gains, sel_gains, params, coll, hist):
    """Refit the distinct pairs of ``stages`` jointly (``gbfm_joint``); the predictor arrays
    with one stage per pair (its gain: the boosting gains of its stages, summed)."""
    from .gbfm_joint import joint_pairs, run_joint_mcmc

    pairs = joint_pairs(stages)
    key = [(min(p, q), max(p, q)) for p, q in stages]
    first = [key.index((min(p, q), max(p, q))) for p, q in pairs]
    pair_gain = [float(sum(g for kk, g in zip(key, gains) if kk == (min(p, q), max(p, q))))
                 for p, q in pairs]
    w0, w, factors, jh = run_joint_mcmc(data, train.y, train.w, train.rids, pairs, fs,
                                        field_blocks, params, coll)
    r = max(a.shape[1] for a, _ in factors)
    blocks = []
    for a, b in factors:
        blk = np.zeros((a.shape[0] + b.shape[0], r), FLOAT)
        blk[:a.shape[0], :a.shape[1]] = a
        blk[a.shape[0]:, :b.shape[1]] = b
        blocks.append(blk)
    offsets = np.zeros(len(pairs) + 1, np.int64)
    offsets[1:] = np.cumsum([blk.shape[0] for blk in blocks])
    classify = params["task"] == "classification"
    hist.update(jh)
    hist.update(boost_fields=[list(s) for s in stages], boost_gain=list(gains),
                pair_first_stage=first, selection_gain=[sel_gains[i] for i in first])
    arrays = {
        "w0": np.asarray(w0, FLOAT), "field_starts": fs,
        "stage_fields": np.asarray(pairs, np.int32).reshape(-1, 2), "stage_offsets": offsets,
        "stage_V": np.concatenate(blocks), "stage_lin": np.zeros(int(offsets[-1]), FLOAT),
        "stage_gain": np.asarray(pair_gain, FLOAT),
        "link": np.asarray("probit" if classify else "identity"),
        "n_features": np.asarray(data.d, np.int64), "linear": np.asarray(w, FLOAT)}
    return arrays, hist
