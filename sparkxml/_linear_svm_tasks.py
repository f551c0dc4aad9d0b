"""The code ``LinearSVC`` runs inside Spark tasks: the barrier stage's load and train
functions, and the transform function.

Kept apart from ``sparkxml.linear_svm`` so that a Python worker unpickling these closures
imports numpy, pyarrow and ``sparkxml_kernels`` only, not ``pyspark.ml``. Functions here
capture plain values only.

Input columns of the barrier stage: ``f`` (VectorUDT), ``y`` (double label), ``w`` (double
weight, optional), ``k`` (int64 content key, ``xxhash64`` of the training columns, computed
in the JVM) and ``b`` (int64 block id = pmod(k, numBlocks)).
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from sparkxml_kernels import arrow_io
from sparkxml_kernels.model_cache import as_handle

from ._gbt_tasks import _dense_vectors

F_COL, Y_COL, W_COL, K_COL, B_COL = "f", "y", "w", "k", "b"
# per rank: error flag, rows, smallest and largest vector size, largest label
_NSTAT = 5


def _column(table, name):
    return table.column(table.schema.get_field_index(name))


def _numbers(col) -> np.ndarray:
    return np.array(col.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _check_features(data, fcol):
    """The first non-finite feature value of this task, as a message (labels and weights are
    checked by the driver's aggregate job before the stage)."""
    badx = ~np.isfinite(data)
    if badx.any():
        return (f"featuresCol: column '{fcol}' holds the value "
                f"{float(data[np.flatnonzero(badx)[0]])!r}; features must be finite")
    return None


def make_load_fn(fcol: str, wcol: str | None):
    """Arrow batches -> (CSR, labels, weights, keys, blocks) of this task, or an error."""

    def load(batches, rank, world):
        t0 = time.perf_counter()
        tables = [b for b in batches if b.num_rows]
        state = {"error": None, "n": 0, "d": -1}
        if not tables:
            state.update(csr=(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0)),
                         y=np.zeros(0), w=None if wcol is None else np.zeros(0),
                         keys=np.zeros(0, np.int64), blocks=np.zeros(0, np.int64))
            return state
        t = pa.Table.from_batches(tables).combine_chunks()
        del tables
        try:
            indptr, indices, data, d = arrow_io.vectors_to_csr(_column(t, F_COL), fcol,
                                                               value_dtype=np.float64)
        except (ValueError, TypeError) as e:
            msg = str(e)
            state["error"] = msg if msg.startswith("featuresCol") else f"featuresCol: {msg}"
            return state
        y = _numbers(_column(t, Y_COL))
        w = _numbers(_column(t, W_COL)) if wcol is not None else None
        state["error"] = _check_features(data, fcol)
        state.update(csr=(indptr, indices, data), y=y, w=w, n=int(y.size), d=int(d),
                     keys=np.array(_column(t, K_COL).to_numpy(zero_copy_only=False), np.int64),
                     blocks=np.array(_column(t, B_COL).to_numpy(zero_copy_only=False),
                                     np.int64),
                     load_seconds=time.perf_counter() - t0)
        return state

    return load


def _agree(state, coll, rank, world):
    """Every rank's (error, rows, sizes, label max) on every rank, exactly (one allreduce)."""
    mine = np.zeros((world, _NSTAT))
    n = state["n"]
    ymax = float(state["y"].max()) if n and state["error"] is None else -1.0
    mine[rank] = [1.0 if state["error"] else 0.0, n, state["d"] if n else np.inf,
                  state["d"] if n else -1.0, ymax]
    allst = coll.allreduce_sum(mine)
    return allst


def make_train_fn(cfg: dict, fcol: str):
    """The barrier task's training function: checks agreed by all ranks, then CoCoA+
    (``sparkxml_kernels.linear.solver.train``). Problems with the data are returned as
    ``info['error']`` (never raised) so that Spark does not retry the stage for them."""

    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.linear import solver

        allst = _agree(state, coll, rank, world)
        info = {"n_rows": int(state["n"])}
        if allst[:, 0].any():
            info["error"] = state["error"]
            return None, info
        n_total = int(allst[:, 1].sum())
        if n_total == 0:
            info["error"] = "the training DataFrame is empty"
            return None, info
        dmin, dmax = allst[:, 2].min(), allst[:, 3].max()
        if dmin != dmax:
            info["error"] = (f"featuresCol: column '{fcol}' holds vectors of different sizes: "
                             f"{int(dmin)} and {int(dmax)}")
            return None, info
        d = int(dmax)
        label_max = int(allst[:, 4].max())
        c = dict(cfg)
        if c["multi_class"] == "binary":
            c["n_classes"] = 2
        else:
            c["n_classes"] = max(label_max + 1, 2)
        indptr, indices, data = state["csr"]
        ld = solver.prepare(indptr, indices, data, state["y"].astype(np.int32), state["w"],
                            state["keys"], state["blocks"], float(c["C"]),
                            bool(c["fit_intercept"]), d)
        state.clear()  # the raw copies are no longer needed
        res = solver.train(ld, c, coll)
        info.update(rounds=res.rounds, local_passes=res.local_passes,
                    local_steps=res.local_steps, train_loop_seconds=res.seconds,
                    csr_bytes=int(ld.indptr.nbytes + ld.indices.nbytes + ld.data.nbytes),
                    data_bytes=ld.nbytes(), blocks=[int(b) for b in ld.block_ids])
        arrays = None
        if rank == 0:
            W = res.W
            if c["fit_intercept"]:
                coef, icpt = W[:, :d], W[:, d].copy()
            else:
                coef, icpt = W, np.zeros(W.shape[0])
            arrays = {"coefficient_matrix": np.ascontiguousarray(coef),
                      "intercepts": icpt,
                      "num_classes": np.array(c["n_classes"], np.int64),
                      "summary.primal": np.asarray(res.primal, np.float64),
                      "summary.dual": np.asarray(res.dual, np.float64),
                      "summary.gap": np.asarray(res.gap, np.float64),
                      "summary.sv": np.stack([res.free_sv, res.bounded_sv]).astype(np.int64),
                      "summary.rounds": np.array([res.rounds, int(res.converged)], np.int64)}
        return arrays, info

    return train_fn


def make_predict_fn(arrays, fcol: str, raw_col: str | None, pred_col: str | None,
                    threshold: float | None = None):
    """``mapInArrow`` function of ``LinearSVCModel.transform``: input columns + outputs.
    ``arrays``: the model's ``ModelHandle`` (or its arrays); ``threshold`` overrides the
    saved one."""
    handle = as_handle(arrays)

    def predict(batches):
        from sparkxml_kernels.linear.predictor import LinearSVCPredictor

        model = handle.build(("LinearSVCPredictor", threshold),
                             lambda a: LinearSVCPredictor.from_arrays(a, threshold=threshold))
        d = model.n_features
        for b in batches:
            cols = list(b.columns)
            names = list(b.schema.names)
            if b.num_rows:
                indptr, indices, data, _ = arrow_io.vectors_to_csr(
                    b.column(b.schema.get_field_index(fcol)), fcol, num_features=d,
                    value_dtype=np.float64)
                if data.size and not np.isfinite(data).all():
                    bad = float(data[~np.isfinite(data)][0])
                    raise ValueError(f"featuresCol: column '{fcol}' holds the value {bad!r}")
                m = model.margins((indptr, indices, data, d))
            else:
                m = np.zeros((0, model.W.shape[0]))
            if raw_col:
                raw = (np.column_stack([-m[:, 0], m[:, 0]]) if model.num_classes == 2 else m)
                cols.append(_dense_vectors(raw))
                names.append(raw_col)
            if pred_col:
                cols.append(pa.array(model.predict_from_margins(m), pa.float64()))
                names.append(pred_col)
            yield pa.RecordBatch.from_arrays(cols, names=names)

    return predict
