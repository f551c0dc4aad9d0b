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

from sparkxml_kernels.gbt import binning
from sparkxml_kernels.gbt.ranking import group_ptr_from_sorted_ids
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.model_cache import ModelHandle

from ._barrier import encode_arrays

ROW_ID = "__sparkxml_row_id"


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


def _batch_features(batch, spec, n_features):
    """The batch's features as dense float64 (n, d); NaN (or a null column value) = missing."""
    if spec["kind"] == "vector":
        return _array_features(_column(batch, spec["col"]), spec["col"], n_features)
    cols = spec["cols"]
    X = np.empty((batch.num_rows, len(cols)), np.float64)
    for j, c in enumerate(cols):
        a = _column(batch, c)
        X[:, j] = a.cast(pa.float64()).to_numpy(zero_copy_only=False)  # null -> NaN
    return X


def _float_column(batch, name):
    # a copy: a zero-copy view would keep the whole IPC batch body (all columns) alive
    a = _column(batch, name)
    return np.array(a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _bool_column(batch, name):
    return np.asarray(_column(batch, name).to_numpy(zero_copy_only=False), bool)


def _make_sketch_task(spec, weight, n_features, max_bins, chunk_values):
    """Per input partition: weighted quantile summaries of the (already sampled, training-only)
    rows, summarised in chunks of about ``chunk_values`` values and merged."""

    def sketch_task(batches):
        from pyspark import TaskContext

        t_start = time.perf_counter()
        pid = TaskContext.get().partitionId()
        sketches, xs, ws, held, n = [], [], [], 0, 0

        def flush():
            if xs:
                X = np.concatenate(xs) if len(xs) > 1 else xs[0]
                sketches.append(binning.sketch(X, np.concatenate(ws), max_bins))
                xs.clear()
                ws.clear()

        for b in batches:
            if b.num_rows == 0:
                continue
            xs.append(_batch_features(b, spec, n_features))
            ws.append(np.ones(b.num_rows) if weight is None else _float_column(b, weight))
            n += b.num_rows
            held += b.num_rows * max(n_features, 1)
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


def _spec_columns(spec):
    return [spec["col"]] if spec["kind"] == "vector" else list(spec["cols"])


def _make_load_fn(spec, label, weight, valid, edges, n_features, id_col=ROW_ID, group=None):
    """The barrier task's loader: Arrow batches -> binned features, label, weight, row ids.

    ``id_col`` names the int64 row-id column (what subsampling hashes). With ``group`` (a
    query-id column, rows arriving sorted by it, as LambdaMART sends them) the state also
    holds ``group_ptr``, and the validation tuple gets the validation rows' own as a fourth
    element.
    """
    def load(batches, rank, world):
        parts = {"X": [], "y": [], "w": [], "v": [], "id": [], "g": []}
        timing = {"input": 0.0, "convert": 0.0, "bin": 0.0}
        t = time.perf_counter()
        for b in batches:
            t1 = time.perf_counter()
            timing["input"] += t1 - t
            if b.num_rows == 0:
                t = time.perf_counter()
                continue
            X = _batch_features(b, spec, n_features)
            t2 = time.perf_counter()
            parts["X"].append(binning.bin_data(X, edges))
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
        Xb = (np.concatenate(parts["X"]) if len(parts["X"]) > 1 else parts["X"][0]) \
            if parts["X"] else np.zeros((0, d), np.uint8)
        parts["X"] = None
        y = np.concatenate(parts["y"]) if parts["y"] else np.zeros(0)
        w = np.concatenate(parts["w"]) if parts["w"] else None
        ids = np.concatenate(parts["id"]) if parts["id"] else np.zeros(0, np.int64)
        v = np.concatenate(parts["v"]) if parts["v"] else None
        if w is None and weight is not None:
            w = np.zeros(0)
        codes = None
        if group is not None:
            codes = np.zeros(0, np.int64)
            if parts["g"]:  # equal query ids -> equal codes (the rows are sorted by query id)
                g = pa.chunked_array(parts["g"]).combine_chunks()
                codes = np.asarray(pc.dictionary_encode(g).indices.to_numpy(
                    zero_copy_only=False), np.int64)
        state = {"valid": None, "timing": timing}
        if valid is not None:
            if v is None:
                v = np.zeros(0, bool)
            tr = ~v
            state["valid"] = (np.ascontiguousarray(Xb[v]), y[v], None if w is None else w[v])
            if codes is not None:
                state["valid"] += (group_ptr_from_sorted_ids(codes[v]),)
            if not tr.all():
                Xb, y, ids = np.ascontiguousarray(Xb[tr]), y[tr], ids[tr]
                w = None if w is None else w[tr]
                codes = None if codes is None else codes[tr]
        state.update(X=Xb, y=y, w=w, ids=ids)
        if codes is not None:
            state["group_ptr"] = group_ptr_from_sorted_ids(codes)
        return state

    return load


def _make_train_fn(edges, params: dict, fault, ranking: dict | None = None):
    """The barrier task's training function. ``ranking`` (LambdaMART's objective settings)
    turns the params' objective and metric into ranking ones and trains on ``group_ptr``."""
    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.gbt import booster

        p = params
        if ranking is not None:
            from sparkxml_kernels.gbt import ranking as R

            p = dict(params)
            p["objective"] = R.configure_objective(ranking["objective"], ranking["truncation"],
                                                   ranking["label_gain"], ranking["sigma"],
                                                   ranking["norm"])
            p["evalMetric"] = R.configure_metric(p["evalMetric"], ranking["label_gain"])
        callbacks = []
        if fault and fault.get("rank") == rank:
            callbacks.append(_fault_callback(fault))
        evals = [state["valid"]] if state["valid"] is not None else []
        group_ptr = state.get("group_ptr")
        pred, hist = booster.train(state["X"], state["y"], state["w"], edges, p,
                                   collective=coll, eval_sets=evals, callbacks=callbacks,
                                   row_ids=state["ids"], group_ptr=group_ptr)
        n, d = state["X"].shape
        K = int(pred.n_outputs)
        nv = evals[0][0].shape[0] if evals else 0
        info = {"n_train": int(n), "n_valid": int(nv), "load_timing": state.get("timing"),
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


def _output_arrays(raw, n_outputs, objective, kinds):
    out = []
    if objective == "squared_error" or list(kinds) == ["score"]:  # "score": LambdaMART
        return [pa.array(np.asarray(raw, np.float64).reshape(-1), pa.float64())]
    if n_outputs == 1:
        m = np.asarray(raw, np.float64).reshape(-1)
        rawm = np.column_stack([-m, m])
        p1 = 1.0 / (1.0 + np.exp(-m))
        prob = np.column_stack([1.0 - p1, p1])
    else:
        rawm = np.asarray(raw, np.float64).reshape(-1, n_outputs)
        z = rawm - rawm.max(axis=1, keepdims=True) if rawm.size else rawm
        e = np.exp(z)
        prob = e / e.sum(axis=1, keepdims=True) if rawm.size else rawm
    for k in kinds:
        if k == "raw":
            out.append(_dense_vectors(rawm))
        elif k == "prob":
            out.append(_dense_vectors(prob))
        else:
            out.append(pa.array(np.argmax(rawm, axis=1).astype(np.float64)
                                if rawm.size else np.zeros(0), pa.float64()))
    return out




def _make_predict_fn(arrays, spec, n_features, kinds, names, drop=None):
    """The ``mapInArrow`` function of a model's transform: input columns (but ``drop``) +
    outputs. ``arrays``: the model's ``ModelHandle`` (or its arrays)."""
    handle = arrays if isinstance(arrays, ModelHandle) else ModelHandle(inline=arrays)

    def predict(batches):
        pred = handle.build("TreeEnsemblePredictor", TreeEnsemblePredictor.from_arrays)
        for b in batches:
            keep = [i for i, n in enumerate(b.schema.names) if n != drop]
            cols = [b.column(i) for i in keep]
            if b.num_rows:
                raw = pred.predict_raw(_batch_features(b, spec, n_features))
            else:
                raw = np.zeros((0,) if pred.n_outputs == 1 else (0, pred.n_outputs))
            cols += _output_arrays(raw, pred.n_outputs, pred.objective, kinds)
            yield pa.RecordBatch.from_arrays(cols, names=[b.schema.names[i] for i in keep]
                                             + names)

    return predict
