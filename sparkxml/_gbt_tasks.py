"""The code GBT runs inside Spark tasks: Arrow batches -> arrays, the sketch task, the
barrier-stage load/train functions and the predict function.

Kept apart from ``sparkxml.gbt`` so that a Python worker unpickling these closures imports
only numpy, pyarrow, ``sparkxml_kernels`` and ``pyspark.sql`` (which every worker has), not
``pyspark.ml`` (~2 s of imports in each new worker process). Functions here take plain values
only (no Spark objects, no Estimator).
"""
from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkxml_kernels.arrow_io import vectors_to_csr
from sparkxml_kernels.gbt import binned as gbt_binned
from sparkxml_kernels.gbt import binning
from sparkxml_kernels.gbt.ranking import group_ptr_from_sorted_ids
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.model_cache import as_handle
from sparkxml_kernels.threads import max_threads, use_threads

from ._barrier import encode_arrays

ROW_ID = "__sparkxml_row_id"


def _task_threads(nthread) -> int:
    """Threads for this task's kernels: ``nthread`` when set, else the task's
    ``spark.task.cpus`` (``TaskContext.cpus()``, as xgboost.spark sizes its ``nthread``);
    1 outside a Spark task."""
    if nthread is not None:
        return int(nthread)
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return max(1, int(ctx.cpus())) if ctx is not None else 1


def _column(batch: pa.RecordBatch, name: str):
    return batch.column(batch.schema.get_field_index(name))


def _array_features(col, name: str, d: int) -> np.ndarray:
    """Dense float64 (n, d) from an Arrow list<double> column of length-d lists (a vector
    column after ``vector_to_array``): the flat values reshaped, no per-row work."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    if col.null_count:
        raise ValueError(f"featuresCol: column '{name}' has a null vector")
    lengths = col.value_lengths().to_numpy(zero_copy_only=False)
    if n and (lengths != d).any():
        bad = int(lengths[lengths != d][0])
        raise ValueError(f"featuresCol: column '{name}' has a vector of size {bad}, expected {d}")
    values = col.flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, np.float64).reshape(n, d)


def _batch_features(batch, spec, n_features, missing=float("nan")):
    """The batch's features as dense float64 (n, d); NaN (or a null column value) = missing,
    and so is ``missing`` (the ``missing`` param) when it is not NaN. ``spec["float32"]``
    (trees) rounds them to float32 first, as scikit-learn's trees do. ``spec["sparse"]``
    (a wide vector column shipped as the VectorUDT struct, ``sparkxml._gbt_features``):
    CSR ``(indptr, indices, data, d)`` instead, absent entries 0.0."""
    if spec.get("sparse"):
        indptr, indices, data, _ = vectors_to_csr(_column(batch, spec["col"]), spec["col"],
                                                  n_features, np.float64)
        if not np.isnan(missing):
            if missing == 0.0:
                raise ValueError("missing=0.0 (absent entries missing) is not supported for "
                                 "vector columns wide enough to be read sparse")
            data[data == missing] = np.nan
        if spec.get("float32"):
            data = data.astype(np.float32).astype(np.float64)
        return indptr, indices, data, n_features
    if spec["kind"] == "vector":
        X = _array_features(_column(batch, spec["col"]), spec["col"], n_features)
    else:
        cols = spec["cols"]
        X = np.empty((batch.num_rows, len(cols)), np.float64)
        for j, c in enumerate(cols):
            a = _column(batch, c)
            X[:, j] = a.cast(pa.float64()).to_numpy(zero_copy_only=False)  # null -> NaN
    if not np.isnan(missing):
        X[X == missing] = np.nan
    if spec.get("float32"):
        X = X.astype(np.float32).astype(np.float64)
    return X


def _margin_column(batch, name, k):
    """float64 (n,) or (n, k) base margins from a double column (k == 1) or an array/vector
    column of k values (a vector arrives as a dense array, see _feature_exprs)."""
    col = _column(batch, name)
    if k == 1:
        m = np.array(col.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    else:
        m = _array_features(col, name, k)
    if not np.all(np.isfinite(m)):
        raise ValueError(f"baseMarginCol: column '{name}' holds a null or non-finite value")
    return m


def _float_column(batch, name):
    # a copy: a zero-copy view would keep the whole IPC batch body (all columns) alive
    a = _column(batch, name)
    return np.array(a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _bool_column(batch, name):
    return np.asarray(_column(batch, name).to_numpy(zero_copy_only=False), bool)


def _make_sketch_task(spec, weight, n_features, max_bins, chunk_values, size=None,
                      missing=float("nan")):
    """Per input partition: weighted quantile summaries of the (already sampled, training-only)
    rows, summarised in chunks of about ``chunk_values`` values and merged (``size`` entries
    a feature at most; default from ``max_bins``)."""

    def sketch_task(batches):
        from pyspark import TaskContext

        t_start = time.perf_counter()
        pid = TaskContext.get().partitionId()
        sketches, xs, ws, held, n = [], [], [], 0, 0

        def flush():
            if xs:
                X = _concat_features(xs)
                sketches.append(binning.sketch(X, np.concatenate(ws), max_bins, size))
                xs.clear()
                ws.clear()

        for b in batches:
            if b.num_rows == 0:
                continue
            try:
                xs.append(_batch_features(b, spec, n_features, missing))
            except ValueError as e:  # bad input (e.g. a vector of another size): the driver
                # raises it as a ValueError, not as a Spark task failure
                yield encode_arrays(pid, None, {"partition": pid, "n": n, "seconds": 0.0,
                                                "error": str(e)})
                return
            ws.append(np.ones(b.num_rows) if weight is None else _float_column(b, weight))
            n += b.num_rows
            held += _n_values(xs[-1])
            if held >= chunk_values:
                flush()
                held = 0
        flush()
        arrays = None
        if sketches:
            sk = sketches[0] if len(sketches) == 1 else binning.merge_sketches(sketches)
            arrays = sk.to_arrays()
        yield encode_arrays(pid, arrays, {"partition": pid, "n": n,
                                          "seconds": time.perf_counter() - t_start})

    return sketch_task


def _n_values(X) -> int:
    """Values a feature block holds: stored entries of CSR, rows x d of dense."""
    return int(X[0][-1]) if isinstance(X, tuple) else int(X.size)


def _concat_features(xs):
    """Row-concatenate dense blocks or CSR tuples (indptr, indices, data, d)."""
    if len(xs) == 1:
        return xs[0]
    if not isinstance(xs[0], tuple):
        return np.concatenate(xs)
    ptrs, off = [np.zeros(1, np.int64)], 0
    for p, _, _, _ in xs:
        ptrs.append(p[1:] + off)
        off += int(p[-1])
    return (np.concatenate(ptrs), np.concatenate([x[1] for x in xs]),
            np.concatenate([x[2] for x in xs]), xs[0][3])


def _spec_columns(spec):
    return [spec["col"]] if spec["kind"] == "vector" else list(spec["cols"])


def _make_load_fn(spec, label, weight, valid, edges, n_features, id_col=ROW_ID, group=None,
                  options=None):
    """The barrier task's loader: Arrow batches -> binned features, label, weight, row ids.

    ``id_col`` names the int64 row-id column (what subsampling hashes). With ``group`` (a
    query-id column, rows arriving sorted by it, as LambdaMART sends them) the state also
    holds ``group_ptr``, and the validation tuple gets the validation rows' own as a fourth
    element. ``options`` (dict, all optional): ``missing`` (value read as NaN),
    ``margin_col`` + ``n_outputs`` (a base-margin column), ``init`` (model arrays to
    continue from: its raw scores on these rows become the starting margins), ``categories``
    (list of d: None or a categorical feature's category values; kept in the state for the
    booster). Rows are binned by ``binned.bin_matrix``: dense uint8 as before, uint16 above
    255 bins, sparse for a sparse-shipped vector column (``sparkxml._gbt_features``), ``nthread``
    (threads for binning; None: the task's cores, :func:`_task_threads`). With margins
    the state holds ``margin`` and the validation tuple gets the validation rows' margins as
    a fifth element.
    """
    opts = options or {}
    missing = float(opts.get("missing", float("nan")))
    margin_col, k_out, init = opts.get("margin_col"), int(opts.get("n_outputs", 1)), \
        opts.get("init")
    categories = opts.get("categories")
    sparse = bool(spec.get("sparse"))

    def load(batches, rank, world):
        n_threads = use_threads(_task_threads(opts.get("nthread")))
        init_pred = None if init is None else TreeEnsemblePredictor.from_arrays(init)
        parts = {"X": [], "y": [], "w": [], "v": [], "id": [], "g": [], "m": []}
        timing = {"input": 0.0, "convert": 0.0, "bin": 0.0}
        t = time.perf_counter()
        for b in batches:
            t1 = time.perf_counter()
            timing["input"] += t1 - t
            if b.num_rows == 0:
                t = time.perf_counter()
                continue
            X = _batch_features(b, spec, n_features, missing)
            t2 = time.perf_counter()
            parts["X"].append(gbt_binned.bin_matrix(X, edges, categories, sparse=sparse,
                                                      n_threads=n_threads))
            if margin_col is not None or init_pred is not None:
                m = None if margin_col is None else _margin_column(b, margin_col, k_out)
                if init_pred is not None:
                    m = init_pred.predict_raw(X, base_margin=m, n_threads=n_threads)
                parts["m"].append(np.asarray(m, np.float64).reshape(b.num_rows, -1))
            del X
            t = time.perf_counter()
            timing["convert"] += t2 - t1
            timing["bin"] += t - t2
            parts["y"].append(_float_column(b, label))
            if weight is not None:
                parts["w"].append(_float_column(b, weight))
            if valid is not None:
                parts["v"].append(_bool_column(b, valid))
            # copies, not views: a view would keep the whole Arrow batch alive (as _float_column)
            parts["id"].append(np.array(_column(b, id_col).to_numpy(zero_copy_only=False),
                                        np.int64))
            if group is not None:
                g = _column(b, group)
                parts["g"].append(g.take(pa.array(np.arange(len(g), dtype=np.int64))))
        d = n_features
        Xb = gbt_binned.concat_rows(parts["X"]) if parts["X"] else np.zeros((0, d), np.uint8)
        parts["X"] = None
        y = np.concatenate(parts["y"]) if parts["y"] else np.zeros(0)
        w = np.concatenate(parts["w"]) if parts["w"] else None
        ids = np.concatenate(parts["id"]) if parts["id"] else np.zeros(0, np.int64)
        v = np.concatenate(parts["v"]) if parts["v"] else None
        if w is None and weight is not None:
            w = np.zeros(0)
        margin = None
        if margin_col is not None or init is not None:
            margin = np.concatenate(parts["m"]) if parts["m"] else np.zeros((0, k_out))
        codes = None
        if group is not None:
            codes = np.zeros(0, np.int64)
            if parts["g"]:  # equal query ids -> equal codes (the rows are sorted by query id)
                g = pa.chunked_array(parts["g"]).combine_chunks()
                codes = np.asarray(pc.dictionary_encode(g).indices.to_numpy(
                    zero_copy_only=False), np.int64)
        state = {"valid": None, "timing": timing, "categories": categories}
        if valid is not None:
            if v is None:
                v = np.zeros(0, bool)
            tr = ~v
            state["valid"] = (gbt_binned.take_rows(Xb, v), y[v], None if w is None else w[v],
                              None if codes is None else group_ptr_from_sorted_ids(codes[v]),
                              None if margin is None else margin[v])
            if not tr.all():
                Xb, y, ids = gbt_binned.take_rows(Xb, tr), y[tr], ids[tr]
                w = None if w is None else w[tr]
                codes = None if codes is None else codes[tr]
                margin = None if margin is None else margin[tr]
        state.update(X=Xb, y=y, w=w, ids=ids, margin=margin)
        if codes is not None:
            state["group_ptr"] = group_ptr_from_sorted_ids(codes)
        return state

    return load


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


def _make_train_fn(edges, params: dict, fault, ranking: dict | None = None,
                   progress: dict | None = None):
    """The barrier task's training function. ``ranking`` (LambdaMART's objective settings)
    turns the params' objective and metric into ranking ones and trains on ``group_ptr``.
    ``progress`` (``FitProgress.task_spec()``): rank 0 reports rounds to the driver."""
    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.gbt import booster
        from sparkxml_kernels.progress import ProgressReporter

        # None: the task's cores; booster.train caps it at what numba can run
        p = dict(params, nthread=_task_threads(params.get("nthread")))
        if ranking is not None:
            from sparkxml_kernels.gbt import ranking as R

            p["objective"] = R.configure_objective(ranking["objective"], ranking["truncation"],
                                                   ranking["label_gain"], ranking["sigma"],
                                                   ranking["norm"])
            p["evalMetric"] = R.configure_metric(p["evalMetric"], ranking["label_gain"])
        callbacks = []
        if fault and fault.get("rank") == rank:
            callbacks.append(_fault_callback(fault))
        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        if reporter.enabled:
            callbacks.append(_progress_callback(reporter, int(p["maxIter"])))
        evals = [state["valid"]] if state["valid"] is not None else []
        group_ptr = state.get("group_ptr")
        try:
            pred, hist = booster.train(state["X"], state["y"], state["w"], edges, p,
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


def _address_hook(fault):
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


def _dense_vectors(mat: np.ndarray) -> pa.Array:
    """Arrow struct of Spark ML DenseVectors (VectorUDT's sqlType) from an (n, k) matrix."""
    n, k = mat.shape
    vtype = pa.array(np.ones(n, np.int8), pa.int8())
    size = pa.nulls(n, pa.int32())
    indices = pa.nulls(n, pa.list_(pa.int32()))
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int32))
    values = pa.ListArray.from_arrays(offsets, pa.array(np.ascontiguousarray(mat).reshape(-1),
                                                        pa.float64()))
    return pa.StructArray.from_arrays([vtype, size, indices, values],
                                      names=["type", "size", "indices", "values"])


def _scores(raw, n_outputs):
    """(raw vectors, probabilities) of a classifier: [-m, m] and [1 - p, p] for logistic
    (Spark ML's convention), the K scores and the softmax for multiclass."""
    if n_outputs == 1:
        m = np.asarray(raw, np.float64).reshape(-1)
        e = np.exp(-np.abs(m))  # the sigmoid without overflow warnings
        p1 = np.where(m >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        return np.column_stack([-m, m]), np.column_stack([1.0 - p1, p1])
    rawm = np.asarray(raw, np.float64).reshape(-1, n_outputs)
    if not rawm.size:
        return rawm, rawm
    e = np.exp(rawm - rawm.max(axis=1, keepdims=True))
    return rawm, e / e.sum(axis=1, keepdims=True)


def predict_from_probability(prob, thresholds=None):
    """Class index per row: argmax of p / t with ``thresholds`` t (a 0 threshold makes its
    class win whenever its probability is > 0), as Spark ML's probabilistic classifiers;
    argmax of p without."""
    if not prob.size:
        return np.zeros(0)
    if thresholds is None:
        return np.argmax(prob, axis=1).astype(np.float64)
    t = np.asarray(thresholds, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(t == 0.0, np.where(prob > 0, np.inf, 0.0), prob / np.where(t == 0,
                                                                                  1.0, t))
    return np.argmax(scaled, axis=1).astype(np.float64)


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
    classifier = pred.objective in ("logistic", "softmax")
    rawm = prob = None
    if classifier:
        rawm, prob = _scores(raw, pred.n_outputs)
    out = []
    for k in kinds:
        if k == "raw":
            out.append(_dense_vectors(rawm))
        elif k == "prob":
            out.append(_dense_vectors(prob))
        elif k == "pred" and classifier:
            out.append(pa.array(predict_from_probability(prob, thresholds), pa.float64()))
        elif k in ("pred", "score"):
            out.append(pa.array(np.asarray(raw, np.float64).reshape(-1), pa.float64()))
        elif k == "contrib":
            out.append(_contrib_array(pred.predict_contributions(X, base_margin=margin)))
        elif k == "leaf":
            leaves = pred.predict_leaf(X) + pred.tree_offsets[:-1].astype(np.int64)
            out.append(_dense_vectors(ordinals[leaves].astype(np.float64)))
        else:
            raise ValueError(f"unknown output kind {k!r}")
    return out


def _predictor_with_missing(handle, missing: float):
    """The handle's ``TreeEnsemblePredictor`` with the model's current ``missing`` value,
    built once per Python worker (``missing`` is a param: it may differ from the saved one)."""
    return handle.build(("TreeEnsemblePredictor", missing), lambda a: TreeEnsemblePredictor
                        .from_arrays({**a, "missing": np.asarray(missing)}))


def _make_predict_fn(model, spec, n_features, kinds, names, drop=(), options=None):
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
        n_threads = use_threads(_task_threads(opts.get("nthread")))
        pred = handle.build("TreeEnsemblePredictor", TreeEnsemblePredictor.from_arrays) \
            if missing is None else _predictor_with_missing(handle, missing)
        ordinals = pred.leaf_ordinals() if "leaf" in kinds else None
        for b in batches:
            keep = [i for i, n in enumerate(b.schema.names) if n not in drop]
            cols = [b.column(i) for i in keep]
            X = _batch_features(b, spec, n_features)
            margin = None if margin_col is None else \
                _margin_column(b, margin_col, pred.n_outputs)
            cols += _output_arrays(pred, X, margin, kinds, thresholds, ordinals, n_threads)
            yield pa.RecordBatch.from_arrays(cols, names=[b.schema.names[i] for i in keep]
                                             + names)

    return predict
