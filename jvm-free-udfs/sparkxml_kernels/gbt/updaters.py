"""Updaters on an existing model, XGBoost's ``process_type="update"``: ``refresh`` and ``prune``.

refresh (XGBoost's ``refresh`` updater with ``refresh_leaf=1``): the trees keep their splits;
round by round, the gradients of the rows at the margin of the rounds already refreshed
(from the model's base score, or ``base_margin``) give every node new statistics::

    cover = H,   weight = -T(G) / (H + lambda)   (0 when H < minChildWeight),
    gain  = score(G_L, H_L) + score(G_R, H_R) - score(G, H)   (splitting.py's score)

and every node's value becomes ``weight x stepSize`` (clipped to ``maxDeltaStep x stepSize``
when set, as the booster clips). A node's (G, H) sums the rows that pass through it: each
worker sums its rows per leaf, the leaf sums travel in one ``allreduce_sum`` a round (so the
model does not depend on how rows are split), and internal nodes add their children's.

Metrics (``refresh(..., history={})``): after each refreshed round the metrics of a normal fit
(``evalMetric`` or the objective's, then ``evalMetrics``' others) on the rows and on every
``eval_sets`` entry, with the booster's history layout (``booster.train``). With
``earlyStoppingRounds > 0`` and an eval set, the refresh stops once the first eval set's
metric has not improved for that many rounds and the model keeps the rounds up to the best
one (as a fit keeps its best round; XGBoost's refresh has no such stop: its later rounds would
keep their old values, which mixes two fits).

prune (XGBoost's ``prune`` updater): ``prune.prune_predictor`` with ``minSplitLoss`` and
``maxDepth``; no data needed.

Differences from XGBoost: refresh sums in float64 (XGBoost: float64 sums, float32 stats);
DART models and objectives that refit leaves to residual quantiles (absolute_error,
quantile) are refused by refresh.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from ..collective import LocalCollective
from .booster import BoosterParams, _record_metrics
from .loss import make_loss
from .metrics import higher_is_better, metric_stats
from .predictor import TreeEnsemblePredictor
from .prune import prune_predictor
from .splitting import leaf_weight

UPDATERS = ("refresh", "prune")


def _score(G, H, lam, alpha, mcw):
    """splitting.py's score T(G)^2 / (H + lambda), vectorised (0 below minChildWeight)."""
    t = np.sign(G) * np.maximum(np.abs(G) - alpha, 0.0)
    ok = (H >= mcw) & (H > 0)
    return np.where(ok, t * t / np.where(ok, H + lam, 1.0), 0.0)


def node_sums(pred, t: int, leaf, g, h):
    """(G, H) float64 (n_nodes,) of tree ``t``: per leaf the sums of the rows reaching it
    (``leaf``: their tree-local leaf ids), internal nodes the sums of their children."""
    m = int(pred.tree_offsets[t + 1] - pred.tree_offsets[t])
    G = np.bincount(leaf, weights=g, minlength=m).astype(FLOAT)
    H = np.bincount(leaf, weights=h, minlength=m).astype(FLOAT)
    return G, H


def _propagate(pred, t, G, H):
    a, b = int(pred.tree_offsets[t]), int(pred.tree_offsets[t + 1])
    left, right = pred.left[a:b], pred.right[a:b]
    for node in range(G.size - 1, -1, -1):  # children come after their parent
        if left[node] >= 0:
            G[node] = G[left[node]] + G[right[node]]
            H[node] = H[left[node]] + H[right[node]]


def refresh(pred: TreeEnsemblePredictor, X, y, w=None, params=None, collective=None,
            base_margin=None, group_ptr=None, n_threads=1, eval_sets=(),
            history=None) -> TreeEnsemblePredictor:
    """The model with every node's value, gain and cover recomputed on ``(X, y, w)``.

    Parameters
    ----------
    pred : TreeEnsemblePredictor
    X : float64 (n, d) or CSR
        This worker's rows (raw features, as ``predict_raw`` takes them).
    y : (n,) labels; w : (n,) weights or None
    params : dict or BoosterParams
        ``objective`` (the model's by default), ``numClasses``, ``regLambda``,
        ``regAlpha``, ``minChildWeight``, ``stepSize``, ``maxDeltaStep``.
    collective : LocalCollective-like, optional
    base_margin : (n,) or (n, n_outputs), optional
        Raw scores to start from instead of the base score.
    group_ptr : int64, optional
        Query groups (ranking objectives).
    eval_sets : sequence of (X, y, w[, group_ptr[, base_margin]])
        Rows scored after every round (raw features; this worker's part).
    history : dict, optional
        Filled with the per-round metrics (``booster.train``'s history keys: ``metric``,
        ``train``, ``eval``, ``metrics``, ``best_iteration``, ``best_score``, ``n_rounds``,
        ``rounds_run``). Without it and without eval sets no metric is computed.

    Returns
    -------
    TreeEnsemblePredictor
        Same trees, new ``value``, ``gain``, ``cover``; the same on every worker (with early
        stopping: the rounds up to the best one).
    """
    params = dict(params or {}) if not isinstance(params, BoosterParams) else params
    if isinstance(params, dict):
        params.setdefault("objective", pred.objective)
        if pred.n_outputs > 1:
            params.setdefault("numClasses", pred.n_outputs)
    p = BoosterParams.from_dict(params)
    if pred.tree_weights is not None:
        raise ValueError("updater 'refresh' does not apply to DART models (their trees carry "
                         "dropout weights); prune applies")
    loss = make_loss(p.objective, p.numClasses)
    if loss.name.partition("[")[0] != pred.objective:
        raise ValueError(f"objective {p.objective!r} is not the model's ({pred.objective!r})")
    if getattr(loss, "leaf_alpha", None) is not None:
        raise ValueError(f"updater 'refresh' does not apply to objective {pred.objective} "
                         f"(its leaves are residual quantiles, not gradient statistics)")
    if loss.requires_groups and group_ptr is None:
        raise ValueError(f"objective {p.objective} needs group_ptr")
    coll = collective if collective is not None else LocalCollective()
    K = pred.n_outputs
    y = np.asarray(y, FLOAT).reshape(-1)
    leaves = pred.predict_leaf(X)  # (n, T) tree-local leaf ids; the structure stays
    n = leaves.shape[0]
    if y.size != n:
        raise ValueError(f"y has {y.size} rows, X {n}")
    w = None if w is None else np.ascontiguousarray(w, FLOAT).reshape(n)
    raw = pred._start(n, base_margin)
    g = np.empty((n, K), FLOAT)
    h = np.empty((n, K), FLOAT)
    loss.n_threads = int(n_threads)
    out = pred.to_arrays()
    value, gain, cover = (out[k].copy() for k in ("value", "gain", "cover"))
    sp = p.tree_params().split
    lam, alpha, mcw = sp.reg_lambda, sp.reg_alpha, sp.min_child_weight
    cap = p.maxDeltaStep * p.stepSize
    n_rounds = pred.n_trees // K
    evals = [_eval_set(pred, es, i) for i, es in enumerate(eval_sets)]
    metric = (p.evalMetric or loss.default_metric()) if (evals or history is not None) \
        else None
    if evals and metric is None:
        raise ValueError(f"objective {p.objective} has no default metric: set evalMetric")
    extra = [m for m in (p.evalMetrics or ()) if m != metric] if metric else []
    hist = {"metric": metric, "eval": [[] for _ in evals], "train": [],
            "metrics": {m: {"train": [], "eval": [[] for _ in evals]}
                        for m in ([metric] if metric else []) + extra}}
    best_it, best, rounds_run = -1, None, 0
    for r in range(n_rounds):
        if K == 1:
            loss.gradients(y, raw[:, 0], w, g[:, 0], h[:, 0], group_ptr)
        else:
            loss.gradients(y, raw, w, g, h, group_ptr)
        ts = range(r * K, (r + 1) * K)
        local = [node_sums(pred, t, leaves[:, t], g[:, pred.tree_outputs[t]],
                           h[:, pred.tree_outputs[t]]) for t in ts]
        sizes = np.cumsum([0] + [2 * s[0].size for s in local])
        total = coll.allreduce_sum(np.concatenate([np.concatenate(s) for s in local]))
        for i, t in enumerate(ts):
            part = total[sizes[i]:sizes[i + 1]]
            m = part.size // 2
            G, H = part[:m].copy(), part[m:].copy()
            _propagate(pred, t, G, H)
            a = int(pred.tree_offsets[t])
            left, right = pred.left[a:a + m], pred.right[a:a + m]
            v = np.array([leaf_weight(Gj, Hj, sp) for Gj, Hj in zip(G, H)]) * p.stepSize
            if cap > 0:
                np.clip(v, -cap, cap, out=v)
            s = _score(G, H, lam, alpha, mcw)
            inner = left >= 0
            gn = np.zeros(m)
            gn[inner] = s[left[inner]] + s[right[inner]] - s[inner]
            value[a:a + m], gain[a:a + m], cover[a:a + m] = v, gn, H
            raw[:, pred.tree_outputs[t]] += v[leaves[:, t]]
            for le, re in ((e[5], e[4]) for e in evals):
                re[:, pred.tree_outputs[t]] += v[le[:, t]]
        rounds_run = r + 1
        if metric is None:
            continue
        one = K == 1
        names = [metric] + extra
        _record_metrics(hist, names, coll,
                        [metric_stats(nm, y, raw[:, 0] if one else raw, w, group_ptr)
                         for nm in names], [e[:5] for e in evals], one)
        if evals:
            score = hist["eval"][0][-1]
            if best is None or (score > best if higher_is_better(metric) else score < best):
                best, best_it = score, r
            elif p.earlyStoppingRounds > 0 and r - best_it >= p.earlyStoppingRounds:
                break
    keep = best_it + 1 if (p.earlyStoppingRounds > 0 and best_it >= 0) else n_rounds
    if history is not None:
        history.update(hist, best_iteration=best_it if evals else rounds_run - 1,
                       best_score=best, n_rounds=keep, rounds_run=rounds_run)
    out.update(value=value, gain=gain, cover=cover)
    refreshed = TreeEnsemblePredictor.from_arrays(out)
    return refreshed if keep == n_rounds else refreshed.truncate(keep)


def _eval_set(pred, es, i):
    """(X, y, w, group_ptr, raw, leaves) of eval set ``i``: its starting raw scores (base
    score or base margin) and the leaves its rows reach in every tree."""
    Xe, ye, we, ge, me = (tuple(es) + (None, None))[:5]
    leaves = pred.predict_leaf(Xe)
    n = leaves.shape[0]
    ye = np.asarray(ye, FLOAT).reshape(-1)
    if ye.size != n:
        raise ValueError(f"eval set {i} has {ye.size} labels for {n} rows")
    we = None if we is None else np.ascontiguousarray(we, FLOAT).reshape(n)
    return Xe, ye, we, ge, pred._start(n, me), leaves


def update(pred: TreeEnsemblePredictor, updater: str, X=None, y=None, w=None, params=None,
           collective=None, base_margin=None, group_ptr=None, n_threads=1):
    """Apply ``updater`` ("refresh" | "prune") to ``pred``: refresh needs the data; prune
    reads ``minSplitLoss`` and ``maxDepth`` from ``params`` (BoosterParams defaults)."""
    if updater == "refresh":
        if X is None or y is None:
            raise ValueError("updater 'refresh' needs the rows (X, y)")
        return refresh(pred, X, y, w, params, collective, base_margin, group_ptr, n_threads)
    if updater == "prune":
        p = dict(params or {})  # maxDepth 0: no depth limit
        return prune_predictor(pred, float(p.get("minSplitLoss", 0.0)),
                               int(p.get("maxDepth", 0)))[0]
    raise ValueError(f"updater must be one of {list(UPDATERS)}, got {updater!r}")
