"""What GBT and LambdaMART run inside Spark tasks: the barrier-stage train function (with its
progress and fault-injection hooks) and the predict function.

Functions here take plain values only (no Spark objects, no Estimator), and the module imports
no ``pyspark.ml`` (about 2 s of imports in each new worker process).
"""
from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa

from sparkxml._core.arrow import batch_features, dense_vectors, margin_column
from sparkxml._core.histogram_tasks import task_sketch_info
from sparkxml._core.workers import task_threads
from sparkxml_kernels.gbt.objectives import LOG_LINK
from sparkxml_kernels.gbt.outputs import (
    CLASSIFIER_OBJECTIVES,
    class_scores,
    predict_from_probability,
)
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.model_cache import as_handle
from sparkxml_kernels.threads import max_threads, use_threads


def _progress_callback(reporter, total):
    """Booster callback: rank 0 reports round, training and validation metric every N."""

    def cb(it, history):
        if reporter.due(it + 1, total):
            metric = history.get("metric") or "metric"
            metrics = {}
            if history.get("train"):
                metrics[f"train-{metric}"] = history["train"][-1]
            if history.get("eval") and history["eval"][-1]:
                metrics[f"validation-{metric}"] = history["eval"][-1][-1]
            reporter.progress(it + 1, total, metrics)
        return False

    return cb


def make_train_fn(edges, params: dict, fault, ranking: dict | None = None,
                   progress: dict | None = None, custom: dict | None = None):
    """The barrier task's training function (``edges``: None when the loader computed
    them, ``make_sketch_load_fn``). ``ranking`` (LambdaMART's objective settings)
    turns the params' objective and metric into ranking ones and trains on ``group_ptr``.
    ``progress`` (``FitProgress.task_spec()``): rank 0 reports rounds to the driver."""
    def train_fn(state, coll, rank, world):
        from sparkxml.gbt.custom_params import register_in_task
        from sparkxml_kernels.gbt import booster
        from sparkxml_kernels.progress import ProgressReporter

        if state.get("error"):  # bad input found by the task's own sketch
            return None, {"error": state["error"]}
        register_in_task(custom)  # the custom objective / metric, if any
        # None: the task's cores; booster.train caps it at what numba can run
        p = dict(params, nthread=task_threads(params.get("nthread")))
        if ranking is not None:
            from sparkxml_kernels.gbt import ranking as R

            p["objective"] = R.configure_objective(ranking["objective"], ranking["truncation"],
                                                   ranking["label_gain"], ranking["sigma"],
                                                   ranking["norm"], ranking.get("seed", 0))
            p["evalMetric"] = R.configure_metric(p["evalMetric"], ranking["label_gain"])
            if p.get("evalMetrics"):
                p["evalMetrics"] = [R.configure_metric(m, ranking["label_gain"])
                                    for m in p["evalMetrics"]]
        callbacks = []
        if fault and fault.get("rank") == rank:
            callbacks.append(_fault_callback(fault))
        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        if reporter.enabled:
            callbacks.append(_progress_callback(reporter, int(p["maxIter"])))
        evals = [state["valid"]] if state["valid"] is not None else []
        group_ptr = state.get("group_ptr")
        try:
            pred, hist = booster.train(state["X"], state["y"], state["w"],
                                       state.get("edges", edges), p,
                                       collective=coll, eval_sets=evals, callbacks=callbacks,
                                       row_ids=state["ids"], group_ptr=group_ptr,
                                       base_margin=state.get("margin"),
                                       categories=state.get("categories"))
        finally:
            reporter.close()
        n, d = state["X"].shape
        K = int(pred.n_outputs)
        nv = evals[0][0].shape[0] if evals else 0
        info = {"n_train": int(n), "n_valid": int(nv), "load_timing": state.get("timing"),
                "nthread": min(int(p["nthread"]), max_threads()),
                "binned_bytes": int(state["X"].nbytes + (evals[0][0].nbytes if evals else 0)),
                # what the booster holds per row in float64: y, w, raw, grad, hess (+ eval raw)
                "float_bytes": int(8 * (n * (2 + 3 * K) + nv * (2 + K)))}
        info.update(task_sketch_info(state))  # when the task computed the bin edges itself
        if group_ptr is not None:
            info["n_queries"] = int(group_ptr.size - 1)
            info["n_valid_queries"] = int(evals[0][3].size - 1) if evals else 0
        arrays = None
        if rank == 0:
            arrays = pred.to_arrays()
            info["history"] = {k: v for k, v in hist.items()}
        return arrays, info

    return train_fn


def _fault_callback(fault):
    """Test hook: make this rank fail, stop answering, die or freeze after a given round,
    once (with ``marker``). kind: "raise" (an exception), "hang" (sleeps ``seconds``),
    "kill" (SIGKILL: the worker process dies) or "stop" (SIGSTOP: the process freezes
    until Spark kills it)."""

    def cb(it, history):
        if it != fault.get("after_round", 0):
            return False
        marker = fault.get("marker")
        if marker:
            if os.path.exists(marker):
                return False
            with open(marker, "w"):
                pass
        kind = fault.get("kind", "raise")
        if kind == "hang":
            time.sleep(float(fault.get("seconds", 60)))
            return False
        if kind in ("kill", "stop"):
            import signal

            os.kill(os.getpid(), signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
            return False
        raise RuntimeError(f"injected fault in round {it}")

    return cb


def address_hook(fault):
    """Test hook (``fault["kind"] == "stray"``): once the addresses are exchanged, every
    rank opens ``fault["count"]`` connections to each other rank's listener before the
    ranks connect (so they queue ahead of the real peers), sending ``fault["send"]`` bytes
    (default nothing: silent connections); they stay open until the task ends."""
    if not fault or fault.get("kind") != "stray":
        return None
    count, payload = int(fault.get("count", 3)), fault.get("send", b"")

    def hook(rank, addresses):
        import socket

        socks = []
        for r, addr in enumerate(addresses):
            host, port = addr.rsplit(":", 1)
            for _ in range(count if r != rank else 0):
                s = socket.create_connection((host, int(port)), timeout=10)
                socks.append(s)
                if payload:
                    s.sendall(payload)
        return socks

    return hook


def _contrib_array(phi):
    """array<double> per row (one output) or array<array<double>> (per class)."""
    if phi.ndim == 2:
        n, w = phi.shape
        return pa.ListArray.from_arrays(pa.array(np.arange(0, n * w + 1, w, dtype=np.int32)),
                                        pa.array(phi.reshape(-1), pa.float64()))
    n, k, w = phi.shape
    inner = pa.ListArray.from_arrays(pa.array(np.arange(0, n * k * w + 1, w, dtype=np.int32)),
                                     pa.array(phi.reshape(-1), pa.float64()))
    return pa.ListArray.from_arrays(pa.array(np.arange(0, n * k + 1, k, dtype=np.int32)), inner)


def _output_arrays(pred, X, margin, kinds, thresholds=None, ordinals=None, n_threads=1):
    """The output columns ``kinds`` of a batch: "pred" (value, or class), "raw", "prob",
    "score" (LambdaMART), "contrib" (SHAP), "leaf" (MLlib leaf indices)."""
    raw = pred.predict_raw(X, base_margin=margin, n_threads=n_threads)
    classifier = pred.objective in CLASSIFIER_OBJECTIVES
    rawm = prob = None
    if classifier:
        rawm, prob = class_scores(raw, pred.n_outputs)
    out = []
    for k in kinds:
        if k == "raw" and not classifier:  # a regressor's margin (double)
            out.append(pa.array(np.asarray(raw, np.float64).reshape(-1), pa.float64()))
        elif k == "pred" and pred.objective in LOG_LINK:  # response scale: exp(margin)
            out.append(pa.array(np.exp(np.asarray(raw, np.float64).reshape(-1)), pa.float64()))
        elif k == "raw":
            out.append(dense_vectors(rawm))
        elif k == "prob":
            out.append(dense_vectors(prob))
        elif k == "pred" and classifier:
            out.append(pa.array(predict_from_probability(prob, thresholds), pa.float64()))
        elif k in ("pred", "score"):
            out.append(pa.array(np.asarray(raw, np.float64).reshape(-1), pa.float64()))
        elif k == "contrib":
            out.append(_contrib_array(pred.predict_contributions(X, base_margin=margin)))
        elif k == "leaf":
            leaves = pred.predict_leaf(X) + pred.tree_offsets[:-1].astype(np.int64)
            out.append(dense_vectors(ordinals[leaves].astype(np.float64)))
        else:
            raise ValueError(f"unknown output kind {k!r}")
    return out


def predictor_with_missing(handle, missing: float):
    """The handle's ``TreeEnsemblePredictor`` with the model's current ``missing`` value,
    built once per Python worker (``missing`` is a param: it may differ from the saved one)."""
    return handle.build(("TreeEnsemblePredictor", missing), lambda a: TreeEnsemblePredictor
                        .from_arrays({**a, "missing": np.asarray(missing)}))


def make_predict_fn(model, spec, n_features, kinds, names, drop=(), options=None):
    """The ``mapInArrow`` function of a model's transform: input columns (but those in
    ``drop``) + outputs ``kinds`` named ``names``. ``model``: a ``ModelHandle`` (or the
    arrays). ``options``: ``margin_col`` (base margins), ``thresholds`` (classifier),
    ``missing`` (the value read as missing; the saved one when absent), ``nthread``
    (threads for the raw scores; None: the task's cores)."""
    opts = dict(options or {})
    drop = set(drop or ())
    margin_col, thresholds = opts.get("margin_col"), opts.get("thresholds")
    handle, missing = as_handle(model), opts.get("missing")

    def predict(batches):
        n_threads = use_threads(task_threads(opts.get("nthread")))
        pred = handle.build("TreeEnsemblePredictor", TreeEnsemblePredictor.from_arrays) \
            if missing is None else predictor_with_missing(handle, missing)
        ordinals = pred.leaf_ordinals() if "leaf" in kinds else None
        for b in batches:
            keep = [i for i, n in enumerate(b.schema.names) if n not in drop]
            cols = [b.column(i) for i in keep]
            X = batch_features(b, spec, n_features)
            margin = None if margin_col is None else \
                margin_column(b, margin_col, pred.n_outputs)
            cols += _output_arrays(pred, X, margin, kinds, thresholds, ordinals, n_threads)
            yield pa.RecordBatch.from_arrays(cols, names=[b.schema.names[i] for i in keep]
                                             + names)

    return predict

