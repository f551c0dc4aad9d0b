"""``processType="update"`` of GBTRegressor / GBTClassifier: an updater applied to
``initModel``'s trees instead of boosting new ones (XGBoost's ``process_type="update"``).

* ``updater="prune"`` reads no data: the model's splits whose subtree's gains are all below
  ``minSplitLoss`` (or that lie deeper than ``maxDepth``) collapse
  (``sparkxml_kernels.gbt.prune``). ``baseMarginCol`` and ``validationIndicatorCol`` do not
  apply (no rows are read).
* ``updater="refresh"`` runs the data-check job, then ONE barrier stage: each task reads its
  rows' raw features, and all tasks refresh the trees round by round, exchanging per-leaf
  gradient sums (``sparkxml_kernels.gbt.updaters.refresh``); rank 0 returns the model. The
  model is the same whatever ``numWorkers``. With ``baseMarginCol`` the refresh starts from
  the rows' margins instead of the model's base score (XGBoost's refresh on a DMatrix with
  ``base_margin``). Validation rows (``validationIndicatorCol``) are not refreshed on; the
  metrics of a normal fit are recorded after every refreshed round on both sets, and with
  ``earlyStoppingRounds`` the refresh stops once the validation metric has not improved for
  that many rounds, the model keeping the rounds up to the best one (later rounds are cut,
  not kept unrefreshed: XGBoost's refresh has no such stop).

The returned model has the initial model's trees (same splits) and a
:class:`~sparkxml.gbt.summary.GBTTrainingSummary` as a normal fit's (prune: no metric
history, ``roundsRun`` 0).
"""
from __future__ import annotations

import time

from pyspark.sql import functions as F

from sparkxml._core.arrow import batch_features, bool_column, float_column, margin_column
from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.histogram_engine import data_checks, training_columns
from sparkxml._core.histogram_tasks import ROW_ID
from sparkxml._core.workers import requested_workers, task_threads, workers_for
from sparkxml.gbt.models import feature_names
from sparkxml.gbt.summary import GBTTrainingSummary
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor


def fit_update(est, dataset):
    """The model ``est`` (processType "update") makes from its ``initModel``."""
    spark = dataset.sparkSession
    spec = est._features_spec()
    label = est.getLabelCol()
    weight = est._opt(est.weightCol) or None
    valid = est._opt(est.validationIndicatorCol) or None
    if est.getUpdater() == "prune":
        for name in ("baseMarginCol", "validationIndicatorCol"):
            if est._opt(getattr(est, name)):
                raise ValueError(f"{name} is not used with updater='prune' (it reads no "
                                 f"rows); unset it")
        est._check_schema(dataset, spec, label, weight, None)
        t0 = time.perf_counter()
        pred = _predictor_of(est._opt(est.initModel))
        pruned = _update(pred, "prune", params={"minSplitLoss": est.getMinSplitLoss(),
                                                "maxDepth": est.getMaxDepth()})
        rounds = pruned.n_trees // pruned.n_outputs
        summary = GBTTrainingSummary({"n_rounds": rounds, "best_iteration": rounds - 1},
                                     time.perf_counter() - t0)
        return est._model_class(pruned.with_options(missing=est.getMissing()), summary)
    est._check_schema(dataset, spec, label, weight, valid)
    if est.getEarlyStoppingRounds() > 0 and valid is None:
        raise ValueError("earlyStoppingRounds > 0 needs validationIndicatorCol")
    n_workers = requested_workers(spark, est)
    t0 = time.perf_counter()
    stats = data_checks(dataset, spec, label, weight, valid, est._task,
                        dict(est._margin_checks(dataset), **est._label_checks(label)))
    est._check_labels(label, stats["extra"])
    d = stats["d"]
    objective, n_classes, metric = est._objective(label, stats["label_max"],
                                                  stats["label_distinct"])
    k = 1 if objective != "softmax" else int(n_classes)
    margin_cols = est._margin_columns(dataset, stats, k)
    pred = est._init_predictor(d, objective, k)
    params = dict(est._booster_params(est.getMaxBins()), objective=objective,
                  numClasses=n_classes, evalMetric=metric, **est._objective_options())
    params, custom = est._with_custom(params)
    params.pop("baseScore", None)  # the model keeps its base score
    n_workers = workers_for(spark, stats, valid, n_workers)
    checks_seconds = time.perf_counter() - t0
    cols = training_columns(spec, label, weight, valid, margin_cols)
    df = dataset.select(*cols).withColumn(ROW_ID, F.monotonically_increasing_id())
    margin = est._opt(est.baseMarginCol) or None
    result = run_barrier_training(
        df, n_workers, _load_fn(spec, label, weight, valid, margin, k, d,
                                float(est.getMissing())),
        _refresh_fn(pred.to_arrays(), params, custom), timeout_s=est.getTimeoutSeconds(),
        repartition=valid is not None, coalesce_single=True)
    summary = GBTTrainingSummary._from_fit(result, checks_seconds, 0.0)
    out = TreeEnsemblePredictor.from_arrays(result.arrays)
    return est._model_class(out.with_options(missing=est.getMissing(),
                                             feature_names=feature_names(dataset, spec, d)),
                            summary)


def _update(pred, updater, **kw):
    from sparkxml_kernels.gbt.updaters import update

    return update(pred, updater, **kw)


def _predictor_of(init):
    if isinstance(init, str):
        import sparkxml_kernels

        pred = getattr(sparkxml_kernels.load_model(init), "predictor", None)
        if not isinstance(pred, TreeEnsemblePredictor):
            raise ValueError(f"initModel: {init} is not a model of the GBT engine")
        return pred
    return init.predictor


def _load_fn(spec, label, weight, valid, margin, k, d, missing):
    def load(batches, rank, world):
        import numpy as np

        parts: dict = {"X": [], "y": [], "w": [], "v": [], "m": []}
        for b in batches:
            if b.num_rows == 0:
                continue
            parts["X"].append(np.asarray(batch_features(b, spec, d, missing), np.float64))
            parts["y"].append(float_column(b, label))
            if weight is not None:
                parts["w"].append(float_column(b, weight))
            if valid is not None:
                parts["v"].append(bool_column(b, valid))
            if margin is not None:
                parts["m"].append(margin_column(b, margin, k))
        X = np.concatenate(parts["X"]) if parts["X"] else np.zeros((0, d))
        y = np.concatenate(parts["y"]) if parts["y"] else np.zeros(0)
        w = (np.concatenate(parts["w"]) if parts["w"] else np.zeros(0)) if weight else None
        m = None
        if margin is not None:
            m = np.concatenate(parts["m"]) if parts["m"] else np.zeros((0, k) if k > 1 else 0)
        state = {"valid": None}
        if valid is not None:
            v = np.concatenate(parts["v"]) if parts["v"] else np.zeros(0, bool)
            state["valid"] = tuple(None if a is None else a[v] for a in (X, y, w, m))
            X, y, w, m = (None if a is None else a[~v] for a in (X, y, w, m))
        state.update(X=X, y=y, w=w, margin=m)
        return state

    return load


def _refresh_fn(init_arrays, params, custom):
    def train_fn(state, coll, rank, world):
        from sparkxml.gbt.custom_params import register_in_task
        from sparkxml_kernels.gbt.updaters import refresh

        register_in_task(custom)
        p = dict(params, nthread=task_threads(params.get("nthread")))
        pred = TreeEnsemblePredictor.from_arrays(init_arrays)
        ev = state["valid"]
        evals = [] if ev is None else [(ev[0], ev[1], ev[2], None, ev[3])]
        history: dict = {}
        out = refresh(pred, state["X"], state["y"], state["w"], p, collective=coll,
                      base_margin=state["margin"], n_threads=p["nthread"], eval_sets=evals,
                      history=history)
        info = {"n_train": int(state["y"].size),
                "n_valid": 0 if ev is None else int(ev[1].size)}
        if rank == 0:
            info["history"] = history
        return (out.to_arrays() if rank == 0 else None), info

    return train_fn
