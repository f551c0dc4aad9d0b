"""The boosting loop: what a single process runs, and what each Spark task runs on its rows.

Everything global goes through the collective (collective.py): the initial score and the
evaluation metrics by ``allreduce_sum``, tree growth by ``reduce_and_decide``. All random
choices are functions of (seed, round[, output], global row id), so the model does not depend
on how rows are split across workers:

* row subsampling keeps a row when ``u(seed, round, row_id) < subsamplingRate``, with ``u`` a
  splitmix64 hash -- pass ``row_ids`` (int64 global row ids) when rows are distributed;
* column sampling draws ``max(1, int(colsampleByTree * d))`` features per tree from
  ``numpy.random.default_rng([seed, round, output])``, the same on every rank.

Same seed and same data give the same model bit for bit in one process; across different
worker counts the histogram sums differ only by rounding (see collective.py).

Early stopping watches the LAST evaluation set (XGBoost's convention); the returned model is
truncated to the best round, ``history["best_iteration"]`` is 0-based.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
from numba import prange

from .._dtypes import FLOAT, INDEX
from .._jit import njit
from ..binning import n_bins_from_edges, n_real_bins
from ..collective import LocalCollective
from ..rng import row_uniforms
from ..threads import check_threads, use_threads, worth_threads
from .binned import as_binned, route_binned_any
from .categorical import CatParams
from .dart import BOOSTER_TYPES, Dropout, dart_params
from .grower import TreeGrower, TreeParams
from .leaf_quantile import leaf_quantiles
from .loss import make_loss
from .metrics import higher_is_better, is_known, known_metrics, metric_from_stats, metric_stats
from .node_features import check_interaction
from .predictor import TreeEnsemblePredictor
from .prune import prune_tree
from .quantize import GradQuantizer, check_quant_bins, check_quant_options, renew_leaves
from .splitting import SplitParams
from .tree_methods import ApproxCandidates, ExactSplits, check_tree_method


@dataclass(frozen=True)
class BoosterParams:
    """Training parameters, named as the Spark estimators name them.

    maxIter (100) boosting rounds; stepSize (0.1) learning rate; maxDepth (6); maxLeaves (0 =
    unlimited, lossguide only); growPolicy ("depthwise" | "lossguide"); regLambda (1.0);
    regAlpha (0.0); minSplitLoss (0.0, gamma: trees grow on every split with a positive
    gain, then splits whose gain and whose subtree's gains are all below it are pruned
    bottom-up, XGBoost's grow-then-prune of ``colmaker,prune``, prune.py; stored gains are
    the unreduced loss changes); minChildWeight (1.0); subsamplingRate (1.0);
    colsampleByTree (1.0); seed (0); maxBins (256, checked only: the edges are given);
    objective ("squared_error" | "logistic" | "softmax" | registered); numClasses (softmax);
    earlyStoppingRounds (0 = off); evalMetric (None = the objective's default: rmse, logloss,
    mlogloss; early stopping watches it); evalMetrics (None, or more metrics recorded every
    round beside it, ``history["metrics"]``; evalMetric defaults to its first);
    baseScore (None = from the data; else the raw base score of every output);
    monotoneConstraints (None, or -1/0/1 per feature as XGBoost's ``monotone_constraints``);
    scalePosWeight (1.0; logistic only: positive rows' gradients and hessians are multiplied
    by it, as XGBoost's ``scale_pos_weight``); categoricalFeatures (None, or the ids of the
    categorical features; ``train`` then needs their ``categories``) with LightGBM's knobs
    maxCatToOnehot (4), catSmooth (10.0), catL2 (10.0), maxCatThreshold (32) (categorical.py).
    maxBins may reach 65536 (uint16 bins, binned.py); nthread (1: threads for histogram
    building, partitioning, logistic gradients and the per-row updates of each round in
    this process or task, as XGBoost's ``nthread``; the model is the same whatever its
    value); maxDeltaStep (0.0 = off: XGBoost's ``max_delta_step``, every leaf weight is
    clipped to [-maxDeltaStep, maxDeltaStep] before the learning rate; the split gains stay
    those of the unclipped weights). Objectives with parameters are named
    ``"quantile[alpha=0.9]"`` (``objectives.objective_name``). boosterType ("gbtree" |
    "dart": dropout, dart.py, with XGBoost's rateDrop (0.0), skipDrop (0.0), oneDrop
    (False), normalizeType ("tree" | "forest") and sampleType ("uniform" | "weighted")).
    colsampleByLevel, colsampleByNode (1.0) and interactionConstraints (None, or lists of
    feature ids): XGBoost's ``colsample_bylevel``, ``colsample_bynode``,
    ``interaction_constraints`` (node_features.py). treeMethod ("hist" | "approx" |
    "exact", XGBoost's ``tree_method``, tree_methods.py): "exact" takes edges from
    ``tree_methods.exact_edges``; "approx" takes the fine grid's bins and edges and proposes
    each tree's candidates from its hessians, maxBins bounding their number.
    useQuantizedGrad (False), numGradQuantBins (4), quantTrainRenewLeaf (False),
    stochasticRounding (True): LightGBM's quantised training (quantize.py): each tree's
    gradients rounded to a few levels, histograms of integer sums; renewing refits the
    leaves from the true gradients.
    """

    maxIter: int = 100
    stepSize: float = 0.1
    maxDepth: int = 6
    maxLeaves: int = 0
    growPolicy: str = "depthwise"
    regLambda: float = 1.0
    regAlpha: float = 0.0
    minSplitLoss: float = 0.0
    minChildWeight: float = 1.0
    subsamplingRate: float = 1.0
    colsampleByTree: float = 1.0
    seed: int = 0
    maxBins: int = 256
    objective: str = "squared_error"
    numClasses: int = 2
    earlyStoppingRounds: int = 0
    evalMetric: str | None = None
    evalMetrics: tuple | None = None
    baseScore: float | None = None
    monotoneConstraints: tuple | None = None
    scalePosWeight: float = 1.0
    categoricalFeatures: tuple | None = None
    maxCatToOnehot: int = 4
    catSmooth: float = 10.0
    catL2: float = 10.0
    maxCatThreshold: int = 32
    nthread: int = 1
    maxDeltaStep: float = 0.0
    boosterType: str = "gbtree"
    rateDrop: float = 0.0
    skipDrop: float = 0.0
    oneDrop: bool = False
    normalizeType: str = "tree"
    sampleType: str = "uniform"
    colsampleByLevel: float = 1.0
    colsampleByNode: float = 1.0
    interactionConstraints: tuple | None = None
    # split finding (tree_methods.py)
    treeMethod: str = "hist"
    # quantised gradients (quantize.py), LightGBM's use_quantized_grad and its knobs
    useQuantizedGrad: bool = False
    numGradQuantBins: int = 4
    quantTrainRenewLeaf: bool = False
    stochasticRounding: bool = True

    @classmethod
    def from_dict(cls, params) -> "BoosterParams":
        if isinstance(params, BoosterParams):
            return params
        params = dict(params or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown boosting parameters {unknown}; known: {sorted(known)}")
        if params.get("evalMetrics"):
            params["evalMetrics"] = tuple(str(m) for m in params["evalMetrics"])
            params["evalMetric"] = params.get("evalMetric") or params["evalMetrics"][0]
        else:
            params["evalMetrics"] = None
        if params.get("monotoneConstraints") is not None:
            params["monotoneConstraints"] = tuple(int(c) for c in params["monotoneConstraints"])
        if params.get("categoricalFeatures") is not None:
            params["categoricalFeatures"] = tuple(sorted({int(c) for c in
                                                          params["categoricalFeatures"]})) or None
        if params.get("interactionConstraints") is not None:
            params["interactionConstraints"] = tuple(
                tuple(s) for s in params["interactionConstraints"]) or None
        p = cls(**params)
        if p.maxIter < 1:
            raise ValueError("maxIter must be >= 1")
        if not 0 < p.stepSize:
            raise ValueError("stepSize must be > 0")
        if not 0 < p.subsamplingRate <= 1 or not 0 < p.colsampleByTree <= 1:
            raise ValueError("subsamplingRate and colsampleByTree must be in (0, 1]")
        for name in ("colsampleByLevel", "colsampleByNode"):
            if not 0 < getattr(p, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(p, name)}")
        for m in (p.evalMetric,) + (p.evalMetrics or ()):
            if m is not None and not is_known(m):
                raise ValueError(f"evalMetric {m!r} is not one of {known_metrics()}")
        if not p.maxDeltaStep >= 0 or not np.isfinite(p.maxDeltaStep):
            raise ValueError(f"maxDeltaStep must be finite and >= 0, got {p.maxDeltaStep}")
        if not p.scalePosWeight > 0 or not np.isfinite(p.scalePosWeight):
            raise ValueError(f"scalePosWeight must be finite and > 0, got {p.scalePosWeight}")
        n_real_bins(p.maxBins, wide=True)
        if p.boosterType not in BOOSTER_TYPES:
            raise ValueError(f"boosterType must be one of {list(BOOSTER_TYPES)}, got "
                             f"{p.boosterType!r}")
        dart_params(p)
        check_tree_method(p.treeMethod, p.growPolicy, p.categoricalFeatures)
        p.cat_params()
        check_threads(p.nthread)
        check_quant_bins(p.numGradQuantBins)
        check_quant_options(p.useQuantizedGrad, p.quantTrainRenewLeaf, p.monotoneConstraints)
        return p

    def cat_params(self) -> CatParams:
        return CatParams(self.maxCatToOnehot, self.catSmooth, self.catL2, self.maxCatThreshold)

    def tree_params(self) -> TreeParams:
        return TreeParams(self.growPolicy, self.maxDepth, self.maxLeaves, self.stepSize,
                          # gamma prunes the grown tree (prune.py), not the growth
                          SplitParams(self.regLambda, self.regAlpha, 0.0,
                                      self.minChildWeight), self.monotoneConstraints,
                          self.categoricalFeatures, self.cat_params(),
                          self.interactionConstraints and tuple(
                              frozenset(int(f) for f in s) for s in self.interactionConstraints),
                          self.colsampleByLevel, self.colsampleByNode)


def sample_rows(seed: int, round_: int, row_ids, rate: float):
    """Sorted int32 local indices of the rows kept in this round (None = all rows)."""
    if rate >= 1.0:
        return None
    return np.flatnonzero(row_uniforms(seed, round_, row_ids) < rate).astype(INDEX)


def sample_features(seed: int, round_: int, output: int, d: int, rate: float):
    """uint8 (d,) mask of the features one tree may split on (None = all)."""
    if rate >= 1.0:
        return None
    k = max(1, int(rate * d))
    rng = np.random.default_rng([seed & (2**63 - 1), round_, output])
    mask = np.zeros(d, np.uint8)
    mask[rng.choice(d, size=k, replace=False)] = 1
    return mask


@njit(cache=True, nogil=True)
def _add_leaf_values(raw, k, value, leaf):
    for i in range(raw.shape[0]):
        raw[i, k] += value[leaf[i]]


@njit(cache=True, nogil=True, parallel=True)
def _add_leaf_values_parallel(raw, k, value, leaf):
    for i in prange(raw.shape[0]):
        raw[i, k] += value[leaf[i]]


def add_leaf_values(raw, k, value, leaf, n_threads=1):
    """``raw[:, k] += value[leaf]`` in one pass (numpy gathers into a temporary first), on
    threads when ``n_threads`` > 1 and the rows pay for them; the same sums either way."""
    if n_threads > 1 and worth_threads(np.array([raw.shape[0]])):
        _add_leaf_values_parallel(raw, k, value, leaf)
    else:
        _add_leaf_values(raw, k, value, leaf)


def _check_finite(tree, it: int, objective: str) -> None:
    # Every rank holds the same tree (rank 0 decided it), so every rank raises here together.
    if not np.isfinite(tree.value[tree.left < 0]).all():
        raise ValueError(f"round {it}: objective {objective} produced non-finite leaf values "
                         f"(its gradients overflowed: labels, weights or label gains too "
                         f"large?); refusing to build a model that predicts NaN")


def refit_leaves(tree, leaf, rows, residual, w, alpha, step, coll) -> None:
    """Set every leaf of ``tree`` to ``step`` x the alpha-quantile of the residuals
    of its rows (those in ``rows`` when subsampled) over all workers (``leaf_quantile``), as
    LightGBM refits its L1 and quantile leaves; a leaf without weight keeps its value."""
    leaves = np.flatnonzero(tree.left < 0)
    ids = np.full(tree.left.size, -1, np.int64)
    ids[leaves] = np.arange(leaves.size)
    lid = ids[leaf]
    if rows is not None:
        keep = np.zeros(lid.size, bool)
        keep[rows] = True
        lid[~keep] = -1
    q = leaf_quantiles(residual, lid, leaves.size, w, alpha, coll)
    ok = ~np.isnan(q)
    tree.value[leaves[ok]] = q[ok] * step


def _initial_raw(n, K, base, margin, what):
    """(n, K) raw scores to start from: the base score, or the given margins."""
    raw = np.empty((n, K), FLOAT)
    if margin is None:
        raw[:] = base
        return raw
    m = np.asarray(margin, FLOAT)
    if m.size != n * K:
        raise ValueError(f"{what} has {m.size} values for {n} rows x {K} outputs")
    raw[:] = m.reshape(n, K)
    if not np.all(np.isfinite(raw)):
        raise ValueError(f"{what} holds non-finite values")
    return raw


def _scaled_weights(y, w, scale_pos_weight, loss):
    """Training weights with XGBoost's ``scale_pos_weight`` folded in (positives x it)."""
    if scale_pos_weight == 1.0:
        return w
    if loss.name != "logistic":
        raise ValueError(f"scalePosWeight applies to binary classification only, not "
                         f"objective {loss.name}")
    factor = np.where(y > 0.5, scale_pos_weight, 1.0)
    return factor if w is None else w * factor


def train(X_binned, y, w, edges, params, collective=None, eval_sets=(), callbacks=(),
          row_ids=None, group_ptr=None, base_margin=None, categories=None):
    """Boost trees on binned data.

    Parameters
    ----------
    X_binned : uint8 / uint16 (n, d), C order, or binned.SparseBinned
        This worker's rows, from ``binning.bin_data`` or ``binned.bin_matrix`` (same
        ``edges`` on every worker).
    y : (n,) labels; w : float64 (n,) weights or None
    edges : list of d float64 arrays
    params : dict or BoosterParams (see :class:`BoosterParams`)
    collective : LocalCollective-like, optional
    eval_sets : sequence of (X_binned, y, w[, group_ptr[, base_margin]])
        This worker's part of each evaluation set (binned with the same edges).
    callbacks : sequence of callables ``cb(iteration, history) -> bool``
        Called after every round on every rank; returning True stops training (must be
        deterministic so that all ranks agree).
    row_ids : int64 (n,), optional
        Global row ids for row subsampling (default ``arange(n)``: single worker only).
    group_ptr : int64 (n_groups + 1,), optional
        Query groups for ranking losses.
    base_margin : float64 (n,) or (n, n_outputs), optional
        Raw scores the rows start from instead of the base score (XGBoost's
        ``base_margin``; continued training passes the previous model's raw scores). The
        returned model's ``base_score`` is still computed from the data (or ``baseScore``).
    categories : list of d (None or float64 array), optional
        Category values of the categorical features (``binned.bin_matrix``); needed with
        ``categoricalFeatures``.

    Returns
    -------
    predictor : TreeEnsemblePredictor
    history : dict
        ``metric`` name, ``eval`` (one list of per-round values per eval set), ``train``
        (the metric on the training rows after each round; empty without a metric),
        ``best_iteration``, ``best_score``, ``n_rounds`` (rounds kept), ``rounds_run``,
        ``seconds``.
    """
    t0 = time.perf_counter()
    p = BoosterParams.from_dict(params)
    coll = collective if collective is not None else LocalCollective()
    loss = make_loss(p.objective, p.numClasses)
    if loss.requires_groups and group_ptr is None:
        raise ValueError(f"objective {p.objective} needs group_ptr")
    X_binned = as_binned(X_binned)
    n, d = X_binned.shape
    check_interaction(p.interactionConstraints, d)
    if p.categoricalFeatures and (categories is None or any(
            categories[f] is None for f in p.categoricalFeatures if f < len(categories))):
        raise ValueError("categoricalFeatures needs the categories of those features")
    y = np.asarray(y, FLOAT).reshape(-1)
    if y.size != n:
        raise ValueError(f"y has {y.size} rows, X_binned {n}")
    w = None if w is None else np.ascontiguousarray(w, FLOAT).reshape(n)
    if getattr(loss, "wants_row_ids", False):  # xendcg seeds its draws from them
        loss.row_ids = row_ids
    if row_ids is None:
        if coll.world_size > 1 and p.subsamplingRate < 1:
            raise ValueError("row subsampling on several workers needs global row_ids")
        row_ids = np.arange(n, dtype=np.int64)
    K = loss.n_outputs
    w_grad = _scaled_weights(y, w, p.scalePosWeight, loss)

    if p.baseScore is not None:
        base = np.full(K, float(p.baseScore), FLOAT)
    else:
        base = loss.init_score_collective(y, w_grad, coll)
    if not np.isfinite(base).all():
        raise ValueError(f"objective {loss.name}: the initial score {base.tolist()} is not "
                         f"finite (labels or weights too large?)")
    raw = _initial_raw(n, K, base, base_margin, "base_margin")
    raw0 = raw.copy() if p.boosterType == "dart" else None  # DART sums kept trees from here
    g = np.empty((n, K), FLOAT)
    h = np.empty((n, K), FLOAT)
    one = K == 1

    evals = []
    for i, es in enumerate(eval_sets):
        Xe, ye, we, ge, me = (tuple(es) + (None, None))[:5]
        Xe = as_binned(Xe)
        re = _initial_raw(Xe.shape[0], K, base, me, f"eval set {i}'s base_margin")
        evals.append((Xe, np.asarray(ye, FLOAT).reshape(-1), we, ge, re))
    metric = p.evalMetric or loss.default_metric()
    if p.earlyStoppingRounds > 0 and not evals:
        raise ValueError("earlyStoppingRounds needs an evaluation set")
    if evals and metric is None:
        raise ValueError(f"objective {p.objective} has no default metric: set evalMetric")

    n_threads = use_threads(p.nthread)
    loss.n_threads = n_threads
    leaf_alpha = getattr(loss, "leaf_alpha", None)
    approx = exact = None
    if p.treeMethod == "exact":
        exact = ExactSplits(X_binned, edges, coll)
    if p.treeMethod == "approx":
        approx = ApproxCandidates(X_binned, edges, p.maxBins, coll, n_threads)
        grower = None  # one a tree, on that tree's candidates
    else:
        grower = TreeGrower(X_binned, n_bins_from_edges(edges), edges, p.tree_params(), coll,
                            n_threads)
    trees = []
    dart = Dropout(dart_params(p), p.seed, p.stepSize, K) if p.boosterType == "dart" else None
    # every metric recorded per round: the early-stopping one first, then evalMetrics' others
    extra = [m for m in (p.evalMetrics or ()) if m != metric]
    history = {"metric": metric, "eval": [[] for _ in evals], "train": [],
               "metrics": {m: {"train": [], "eval": [[] for _ in evals]}
                           for m in ([metric] if metric else []) + extra},
               "best_iteration": None, "best_score": None}
    best_it, best = -1, None
    rounds_run = 0

    def gradients():
        """Gradients of the current raw scores, and the training metric's statistics of
        these scores when the loss can give them on the way (else None)."""
        if one:
            return loss.gradients_and_stats(y, raw[:, 0], w_grad, g[:, 0], h[:, 0],
                                            group_ptr, metric, w)
        return loss.gradients_and_stats(y, raw, w_grad, g, h, group_ptr, metric, w)

    quantizer = None
    if p.useQuantizedGrad:
        quantizer = GradQuantizer(row_ids, p.numGradQuantBins, p.stochasticRounding,
                                  loss.name == "squared_error" and w_grad is None, p.seed)
    gradients()
    for it in range(p.maxIter):
        rows = sample_rows(p.seed, it, row_ids, p.subsamplingRate)
        dropped = None  # DART: the dropped trees' outputs on the training and eval rows
        if dart is not None and dart.begin(it).size:
            dropped = [dart.dropped_scores(X_binned, trees, n)] + [
                dart.dropped_scores(e[0], trees, e[0].shape[0]) for e in evals]
            full = raw.copy()
            # the gradients of the ensemble without the dropped trees
            kept = dart.kept_scores(X_binned, trees, raw0, loss.requires_groups)
            if kept is None:
                raw -= dropped[0]
            else:
                raw[:] = kept
            gradients()
            raw[:] = full
        w_new = 1.0 if dart is None else dart.weight_new()
        for k in range(K):
            mask = sample_features(p.seed, it, k, d, p.colsampleByTree)
            if approx is not None:
                grower = TreeGrower(*approx.propose(h[:, k], rows), p.tree_params(), coll,
                                    n_threads)
            if quantizer is None:
                tree, leaf = grower.grow(g[:, k], h[:, k], rows, mask,  # interleaved there
                                         (p.seed, it, k))
            else:
                gq, hq, packed, scale = quantizer.quantize(g[:, k], h[:, k], it, k, coll, rows)
                tree, leaf = grower.grow(gq, hq, rows, mask, (p.seed, it, k),
                                         quant=(packed, scale, quantizer.bins))
            if approx is not None:  # split bins of the fine grid, which every set holds
                tree = approx.to_fine(tree)
            if exact is not None:
                tree = exact.finish(tree, rows)
            if p.minSplitLoss > 0:
                tree, leaf = prune_tree(tree, p.minSplitLoss, 0, leaf)
            if quantizer is not None and p.quantTrainRenewLeaf:
                renew_leaves(tree, leaf, rows, g[:, k], h[:, k], p.tree_params(), coll)
            if leaf_alpha is not None:
                resid = y - raw[:, k] if dropped is None else y - raw[:, k] + dropped[0][:, k]
                refit_leaves(tree, leaf, rows, resid, w, leaf_alpha, p.stepSize, coll)
            if p.maxDeltaStep > 0:
                cap = p.maxDeltaStep * p.stepSize
                np.clip(tree.value, -cap, cap, out=tree.value)
            if w_new != 1.0:
                tree.value *= w_new
            _check_finite(tree, it, loss.name)
            add_leaf_values(raw, k, tree.value, leaf, n_threads)
            for Xe, _, _, _, re in evals:
                re[:, k] += tree.value[route_binned_any(Xe, tree)]
            trees.append(tree)
        if dart is not None:
            factor = dart.commit(trees, K)
            if dropped is not None:  # the dropped trees now count factor x what they did
                raw += (factor - 1.0) * dropped[0]
                for e, de in zip(evals, dropped[1:]):
                    e[4][:] += (factor - 1.0) * de
        rounds_run = it + 1
        # the next round's gradients, computed here so that the loss can give this round's
        # training metric on the way (loss.gradients_and_stats); after the last round they
        # only serve the metric, which costs the same as computing it alone
        train_stats = gradients() if it + 1 < p.maxIter or metric is not None else None
        if metric is not None:
            if train_stats is None:
                train_stats = metric_stats(metric, y, raw[:, 0] if one else raw, w, group_ptr)
            extra_stats = [metric_stats(m, y, raw[:, 0] if one else raw, w, group_ptr)
                           for m in extra]
            _record_metrics(history, [metric] + extra, coll, [train_stats] + extra_stats,
                            evals, one)
        stop = False
        if evals:
            score = history["eval"][-1][-1]
            better = best is None or (score > best if higher_is_better(metric) else score < best)
            if better:
                best, best_it = score, it
            elif p.earlyStoppingRounds > 0 and it - best_it >= p.earlyStoppingRounds:
                stop = True
        for cb in callbacks:
            stop = bool(cb(it, history)) or stop
        if stop:
            break
    keep = rounds_run
    if p.earlyStoppingRounds > 0 and best_it >= 0:
        keep = best_it + 1
    history["best_iteration"] = best_it if evals else rounds_run - 1
    history["best_score"] = best
    history["n_rounds"] = keep
    history["rounds_run"] = rounds_run
    predictor = TreeEnsemblePredictor.from_trees(
        trees[:keep * K], K, base, loss.name, d, categories,
        None if dart is None else dart.tree_weights(keep * K))
    history["seconds"] = time.perf_counter() - t0
    return predictor, history


def _record_metrics(history, names, coll, train_stats, evals, one):
    """Append this round's value of every metric in ``names`` on the training rows (from
    their local ``train_stats``, one array per metric) and on every eval set: all the
    statistics travel in ONE allreduce. The first metric is also ``history["train"]`` /
    ``history["eval"]`` (early stopping watches it)."""
    parts, slots = [], []
    for name, ts in zip(names, train_stats):
        parts.append(np.asarray(ts, FLOAT))
        slots.append((name, None))
        for i, (_, ye, we, ge, re) in enumerate(evals):
            parts.append(metric_stats(name, ye, re[:, 0] if one else re, we, ge))
            slots.append((name, i))
    sizes = np.cumsum([0] + [a.size for a in parts])
    total = coll.allreduce_sum(np.concatenate(parts))
    for (name, i), a, b in zip(slots, sizes[:-1], sizes[1:]):
        v = metric_from_stats(name, total[a:b])
        rec = history["metrics"][name]
        if i is None:
            rec["train"].append(v)
        else:
            rec["eval"][i].append(v)
    first = history["metrics"][names[0]]
    history["train"].append(first["train"][-1])
    for i in range(len(evals)):
        history["eval"][i].append(first["eval"][i][-1])
