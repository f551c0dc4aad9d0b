"""``processType="update"`` of GBTRegressor / GBTClassifier: an updater applied to
``initModel``'s trees instead of boosting new ones (XGBoost's ``process_type="update"``).

* ``updater="prune"`` reads no data: the model's splits whose subtree's gains are all below
  ``minSplitLoss`` (or that lie deeper than ``maxDepth``) collapse
  (``sparkxml_kernels.gbt.prune``).
* ``updater="refresh"`` runs the data-check job, then ONE barrier stage: each task reads its
  rows' raw features, and all tasks refresh the trees round by round, exchanging per-leaf
  gradient sums (``sparkxml_kernels.gbt.updaters.refresh``); rank 0 returns the model. The
  model is the same whatever ``numWorkers``.

The returned model has the initial model's trees (same splits) and no training summary.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from sparkxml._core.arrow import batch_features, float_column
from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.histogram_engine import data_checks, training_columns
from sparkxml._core.histogram_tasks import ROW_ID, task_threads
from sparkxml._core.workers import check_slots, workers_for
from sparkxml.gbt.models import feature_names
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor


def fit_update(est, dataset):
    """The model ``est`` (processType "update") makes from its ``initModel``."""
    spark = dataset.sparkSession
    spec = est._features_spec()
    label = est.getLabelCol()
    weight = est._opt(est.weightCol) or None
    for name in ("baseMarginCol", "validationIndicatorCol"):
        if est._opt(getattr(est, name)):
            raise ValueError(f"{name} is not used with processType='update'; unset it")
    est._check_schema(dataset, spec, label, weight, None)
    if est.getUpdater() == "prune":
        pred = _predictor_of(est._opt(est.initModel))
        pruned = _update(pred, "prune", params={"minSplitLoss": est.getMinSplitLoss(),
                                                "maxDepth": est.getMaxDepth()})
        return est._model_class(pruned.with_options(missing=est.getMissing()), None)
    n_workers = est._opt(est.numWorkers)
    if n_workers is not None:
        check_slots(spark, n_workers)
    stats = data_checks(dataset, spec, label, weight, None, est._task,
                        dict(est._label_checks(label)))
    est._check_labels(label, stats["extra"])
    d = stats["d"]
    objective, n_classes, _ = est._objective(label, stats["label_max"],
                                             stats["label_distinct"])
    k = 1 if objective != "softmax" else int(n_classes)
    pred = est._init_predictor(d, objective, k)
    params = dict(est._booster_params(est.getMaxBins()), objective=objective,
                  numClasses=n_classes, **est._objective_options())
    params, custom = est._with_custom(params)
    for key in ("evalMetrics", "evalMetric", "baseScore"):  # the model keeps its base score
        params.pop(key, None)
    n_workers = workers_for(spark, stats, None, n_workers)
    cols = training_columns(spec, label, weight, None, [])
    df = dataset.select(*cols).withColumn(ROW_ID, F.monotonically_increasing_id())
    result = run_barrier_training(
        df, n_workers, _load_fn(spec, label, weight, d, float(est.getMissing())),
        _refresh_fn(pred.to_arrays(), params, custom), timeout_s=est.getTimeoutSeconds(),
        coalesce_single=True)
    out = TreeEnsemblePredictor.from_arrays(result.arrays)
    return est._model_class(out.with_options(missing=est.getMissing(),
                                             feature_names=feature_names(dataset, spec, d)),
                            None)


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


def _load_fn(spec, label, weight, d, missing):
    def load(batches, rank, world):
        import numpy as np

        X, y, w = [], [], []
        for b in batches:
            if b.num_rows == 0:
                continue
            X.append(np.asarray(batch_features(b, spec, d, missing), np.float64))
            y.append(float_column(b, label))
            if weight is not None:
                w.append(float_column(b, weight))
        X = np.concatenate(X) if X else np.zeros((0, d))
        return {"X": X, "y": np.concatenate(y) if y else np.zeros(0),
                "w": (np.concatenate(w) if w else np.zeros(0)) if weight else None}

    return load


def _refresh_fn(init_arrays, params, custom):
    def train_fn(state, coll, rank, world):
        from sparkxml.gbt.custom_params import register_in_task
        from sparkxml_kernels.gbt.updaters import refresh

        register_in_task(custom)
        p = dict(params, nthread=task_threads(params.get("nthread")))
        pred = TreeEnsemblePredictor.from_arrays(init_arrays)
        out = refresh(pred, state["X"], state["y"], state["w"], p, collective=coll,
                      n_threads=p["nthread"])
        return (out.to_arrays() if rank == 0 else None), {"n_train": int(state["y"].size)}

    return train_fn
