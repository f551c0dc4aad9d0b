"""The code ``LinearSVC`` runs inside Spark tasks: the barrier stage's load and train
functions, and the transform function.

Kept apart from ``sparkxml.linear.svc`` so that a Python worker unpickling these closures
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

from sparkxml._core.arrow import dense_vectors
from sparkxml_kernels import arrow_io
from sparkxml_kernels.memory import release_freed, rss_bytes
from sparkxml_kernels.model_cache import as_handle

F_COL, Y_COL, W_COL, K_COL, B_COL = "f", "y", "w", "k", "b"
# per rank: error flag, rows, smallest and largest vector size, largest label, rows of
# positive weight
_NSTAT = 6


def column_of(table, name):
    return table.column(table.schema.get_field_index(name))


def _numbers(col) -> np.ndarray:
    return np.array(col.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _check_features(data, fcol):
    """The first non-finite feature value of this task, as a message."""
    badx = ~np.isfinite(data)
    if badx.any():
        return (f"featuresCol: column '{fcol}' holds the value "
                f"{float(data[np.flatnonzero(badx)[0]])!r}; features must be finite")
    return None


def _check_labels(col, lcol):
    """(labels float64, message of the first bad one or None): labels must be integers >= 0."""
    if col.null_count:
        return None, f"labelCol: column '{lcol}' has {col.null_count} null value(s)"
    y = _numbers(col)
    bad = ~np.isfinite(y)
    if bad.any():
        return None, (f"labelCol: column '{lcol}' holds the non-finite value "
                      f"{float(y[np.flatnonzero(bad)[0]])!r}")
    bad = (y != np.floor(y)) | (y < 0)
    if bad.any():
        return None, (f"labelCol: column '{lcol}' holds the value "
                      f"{float(y[np.flatnonzero(bad)[0]])!r}; class labels must be integers "
                      f"0, 1, ..., numClasses-1")
    return y, None


def _check_weights(col, wcol):
    """(weights float64, message of the first bad one or None): finite and >= 0."""
    if col.null_count:
        return None, f"weightCol: column '{wcol}' has {col.null_count} null value(s)"
    w = _numbers(col)
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        return None, (f"weightCol: column '{wcol}' holds the value "
                      f"{float(w[np.flatnonzero(bad)[0]])!r}; weights must be finite and >= 0")
    return w, None


# bound on K x d weights of a multiclass model (2 GiB of float64): a stray large label must
# not allocate a huge model before it is reported
MAX_WEIGHTS = 1 << 28


def make_load_fn(fcol: str, lcol: str, wcol: str | None, C: float, fit_intercept: bool,
                 cs: bool):
    """Arrow batches -> this task's ``LinearData`` (or an error), one batch at a time; the
    labels, weights and vectors are checked on the way (the first bad value is named).

    The batches are held until every row's place in (block, key) order is known (from the
    keys, the weights and the vectors' offsets, ``_placement``), then each one is converted,
    written row by row where it belongs in the final arrays
    (``sparkxml_kernels.linear.data.RowsBuilder``) and released: the Arrow input shrinks as
    the CSR grows, so the two are never both whole. The stage sorts each partition by key
    alone, so each block's rows arrive in order and its part of the CSR is written front to
    back (rows scattered over the whole CSR would make every page of it resident while the
    input is still whole). The kernels are warmed up first, while the tasks wait for each
    other's addresses, and the RSS right before the first batch is read is recorded
    (``rss_input_start``).
    """

    def load(batches, rank, world):
        from sparkxml_kernels.linear import data as kdata
        from sparkxml_kernels.linear import solver

        t0 = time.perf_counter()
        # the kernels and pyarrow's compute functions are loaded before the first batch is
        # read (a fresh Python worker: ~60 MiB of compiled code and ~40 MiB of Arrow's
        # function registry, whatever the data), so that the RSS taken here is the baseline
        # of the memory the rows cost (the aim: worker memory <= 2x its CSR partition)
        solver.warm_up(False)
        if cs:  # (Crammer-Singer's kernels too: used when the data has more than two classes)
            solver.warm_up(True)
        _warm_arrow(fcol, lcol, wcol)
        release_freed()
        rss_input = rss_bytes()
        # sizes first (offsets only), so that the CSR is written once, where it belongs
        held, rows, nnz = [], 0, 0
        for b in batches:
            if b.num_rows:
                held.append(b)
                rows += b.num_rows
                nnz += _stored_values(column_of(b, F_COL))
        del batches
        builder = kdata.RowsBuilder(C, fit_intercept, rows, nnz,
                                    _placement(held, wcol, fit_intercept))
        state = {"error": None, "n": 0, "d": -1, "ymax": -1.0}
        for i in range(len(held)):
            b, held[i] = held[i], None  # the batch goes once written
            if state["error"] is not None:
                continue
            try:
                indptr, indices, data, d = arrow_io.vectors_to_csr(
                    column_of(b, F_COL), fcol, value_dtype=np.float64)
            except (ValueError, TypeError) as e:
                msg = str(e)
                state["error"] = msg if msg.startswith("featuresCol") else f"featuresCol: {msg}"
                continue
            if state["d"] >= 0 and d != state["d"]:
                state["error"] = (f"featuresCol: column '{fcol}' holds vectors of different "
                                  f"sizes: {min(d, state['d'])} and {max(d, state['d'])}")
                continue
            state["d"] = d
            y, state["error"] = _check_labels(column_of(b, Y_COL), lcol)
            w = None
            if state["error"] is None and wcol is not None:
                w, state["error"] = _check_weights(column_of(b, W_COL), wcol)
            state["error"] = state["error"] or _check_features(data, fcol)
            if state["error"] is not None:
                continue
            builder.add(indptr, indices, data, y.astype(np.int32), w,
                        column_of(b, K_COL).to_numpy(zero_copy_only=False),
                        column_of(b, B_COL).to_numpy(zero_copy_only=False), d)
            state["n"] += int(y.size)
            state["ymax"] = max(state["ymax"], float(y.max()))
            del b, indptr, indices, data
            # hand the batch's memory back to the system at once. pyspark reads the batches
            # from a Python file object, so they live in glibc's heap, not Arrow's pool, and
            # in a reused worker (glibc's mmap threshold raised by earlier frees) the freed
            # batches stayed resident while the CSR grew: 2.26x the CSR at 2M rows, 1.2x
            # with this (~2 ms a batch)
            release_freed()
        if state["error"] is None:
            state["ld"] = builder.finish(max(state["d"], 0))
            state["in_order"] = builder.in_order
        del builder
        release_freed()
        state["rss_input_start"] = rss_input
        state["load_seconds"] = time.perf_counter() - t0
        return state

    return load


def _warm_arrow(fcol, lcol, wcol):
    """The conversions and checks of a batch, on two rows built here (loads the Arrow compute
    functions they use)."""
    ip = pa.array(np.array([0, 1, 1], np.int32))
    vec = pa.StructArray.from_arrays(
        [pa.array(np.array([0, 1], np.int8)), pa.array(np.array([2, 2], np.int32)),
         pa.ListArray.from_arrays(ip, pa.array(np.array([1], np.int32))),
         pa.ListArray.from_arrays(pa.array(np.array([0, 1, 3], np.int32)),
                                  pa.array(np.array([1.0, 0.0, 2.0])))],
        names=["type", "size", "indices", "values"])
    _, _, data, _ = arrow_io.vectors_to_csr(vec, fcol, value_dtype=np.float64)
    _check_features(data, fcol)
    _check_labels(pa.array(np.array([0.0, 1.0])), lcol)
    if wcol is not None:
        _check_weights(pa.array(np.array([1.0, 1.0])), wcol)


def _placement(held, wcol, fit_intercept):
    """``kdata.placement`` of the held batches' rows, or None where a batch's vectors or
    weights cannot be read (the conversion then names the fault, batch by batch)."""
    from sparkxml_kernels.linear import data as kdata

    try:
        keys = [column_of(b, K_COL).to_numpy(zero_copy_only=False) for b in held]
        blocks = [column_of(b, B_COL).to_numpy(zero_copy_only=False) for b in held]
        counts = [arrow_io.stored_counts(column_of(b, F_COL)) for b in held]
        if wcol is None:
            keep = np.ones(sum(len(k) for k in keys), bool)
        else:
            with np.errstate(invalid="ignore"):
                keep = np.concatenate([_numbers(column_of(b, W_COL)) > 0 for b in held])
    except (ValueError, TypeError, pa.ArrowException):
        return None
    if not keys:
        return None
    return kdata.placement(np.concatenate(keys), np.concatenate(blocks),
                           np.concatenate(counts), keep, fit_intercept)


def _stored_values(col) -> int:
    """Entries stored in a VectorUDT Arrow column (from the list offsets, no data read)."""
    vals = col.field("values")
    if len(vals) == 0:
        return 0
    offsets = vals.offsets
    return int(offsets[len(vals)].as_py() - offsets[0].as_py())


def _agree(state, coll, rank, world):
    """Every rank's (error, rows, sizes, label max) on every rank, exactly (one allreduce)."""
    mine = np.zeros((world, _NSTAT))
    n = state["n"]
    ymax = state["ymax"] if n and state["error"] is None else -1.0
    kept = state["ld"].n if state["error"] is None else 0
    mine[rank] = [1.0 if state["error"] else 0.0, n, state["d"] if n else np.inf,
                  state["d"] if n else -1.0, ymax, kept]
    allst = coll.allreduce_sum(mine)
    return allst


def make_train_fn(cfg: dict, fcol: str, lcol: str, progress: dict | None = None):
    """The barrier task's training function: checks agreed by all ranks, then CoCoA+
    (``sparkxml_kernels.linear.solver.train``). Problems with the data are returned as
    ``info['error']`` (never raised) so that Spark does not retry the stage for them (the
    driver raises the first rank's). ``progress`` (``FitProgress.task_spec()``): rank 0
    reports rounds to the driver.

    ``cfg["multi_class"]`` is the mode used when the labels show more than two classes; the
    number of classes (the largest label + 1) and the local passes are settled here."""

    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.linear import data as kdata
        from sparkxml_kernels.linear import solver

        allst = _agree(state, coll, rank, world)
        info = {"n_rows": int(state["n"]), "rows_in_key_order": bool(state.get("in_order"))}
        if allst[:, 0].any():
            info["error"] = state["error"]
            return None, info
        if int(allst[:, 1].sum()) and not int(allst[:, 5].sum()):
            info["error"] = "no training rows with a positive weight"
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
        if d == 0:
            info["error"] = (f"featuresCol: column '{fcol}' holds vectors of size 0; a linear "
                             f"SVM needs at least one feature")
            return None, info
        if d + 1 > MAX_WEIGHTS:
            # the weights, the scales and the solver's state are dense in d: a vector of
            # size 2**31 - 1 with 3 non-zeros would ask for 16 GiB a copy
            info["error"] = (f"featuresCol: column '{fcol}' holds vectors of size {d}: more "
                             f"weights than {MAX_WEIGHTS}, which a linear SVM holds dense; "
                             f"re-index the features to those that occur (or hash them "
                             f"into fewer)")
            return None, info
        label_max = int(allst[:, 4].max())
        c = dict(cfg)
        c["n_classes"] = max(label_max + 1, 2)
        if c["n_classes"] == 2:
            c["multi_class"] = "binary"
        elif c["n_classes"] * (d + 1) > MAX_WEIGHTS:
            info["error"] = (f"labelCol: column '{lcol}' holds the label {label_max}: "
                             f"{c['n_classes']} classes x {d} features is more weights than "
                             f"{MAX_WEIGHTS}; labels must be 0, 1, ..., numClasses-1")
            return None, info
        if c["n_classes"] > 2:
            # every class 0..K-1 must occur: labels {0, 40} are not 41 classes
            mine = np.zeros(c["n_classes"])
            if state["ld"].n:
                mine += np.bincount(state["ld"].labels, minlength=c["n_classes"])
            absent = np.flatnonzero(coll.allreduce_sum(mine) == 0)
            if absent.size:
                shown = ", ".join(str(int(k)) for k in absent[:10])
                more = f" and {absent.size - 10} more" if absent.size > 10 else ""
                info["error"] = (f"labelCol: column '{lcol}' has labels up to {label_max} but "
                                 f"no row of class {shown}{more} (of positive weight); labels "
                                 f"must be 0, 1, ..., numClasses-1, each present (re-index "
                                 f"them, e.g. with StringIndexer)")
                return None, info
        c["local_passes"] = solver.default_local_passes(c["num_blocks"], c["multi_class"])
        c["solver"] = solver.choose_solver(
            c["solver"], c["multi_class"], d + int(c["fit_intercept"]),
            1 if c["multi_class"] == "binary" else c["n_classes"], c["num_blocks"])
        rss_input = state.get("rss_input_start", 0)
        ld = state.pop("ld")
        if ld.n == 0:  # no rows here: the width is the others'
            ld = kdata.RowsBuilder(c["C"], c["fit_intercept"], 0, 0).finish(d)
        state.clear()
        inv = None
        if c["standardization"]:
            inv = kdata.feature_scales(ld, c["C"], c["num_blocks"], d, coll)
            kdata.scale_features(ld, inv)
        from sparkxml_kernels.progress import ProgressReporter

        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        if reporter.enabled:
            c["on_round"] = reporter.progress
        try:
            res = solver.train(ld, c, coll)
        finally:
            reporter.close()
        info.update(solver=c["solver"], rounds=res.rounds, local_passes=res.local_passes,
                    local_steps=res.local_steps, polishes=res.polishes,
                    polish_rows=res.polish_rows, train_loop_seconds=res.seconds,
                    **{f"{k}_seconds": v for k, v in res.timings.items()},
                    csr_bytes=int(ld.indptr.nbytes + ld.indices.nbytes + ld.data.nbytes),
                    rss_input_start_bytes=int(rss_input),
                    data_bytes=ld.nbytes(), blocks=[int(b) for b in ld.block_ids])
        arrays = None
        if rank == 0:
            W = res.W
            if c["fit_intercept"]:
                coef, icpt = W[:, :d], W[:, d].copy()
            else:
                coef, icpt = W, np.zeros(W.shape[0])
            if inv is not None:  # the model in the original scale of the features
                coef = coef * inv
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
                try:
                    indptr, indices, data, _ = arrow_io.vectors_to_csr(
                        b.column(b.schema.get_field_index(fcol)), fcol, num_features=d,
                        value_dtype=np.float64)
                except ValueError as e:  # a null vector or another size: the param named
                    raise ValueError(f"featuresCol: {e} (the model has {d} features)") \
                        from None
                if data.size and not np.isfinite(data).all():
                    bad = float(data[~np.isfinite(data)][0])
                    raise ValueError(f"featuresCol: column '{fcol}' holds the value {bad!r}")
                m = model.margins((indptr, indices, data, d))
            else:
                m = np.zeros((0, model.W.shape[0]))
            if raw_col:
                raw = (np.column_stack([-m[:, 0], m[:, 0]]) if model.num_classes == 2 else m)
                cols.append(dense_vectors(raw))
                names.append(raw_col)
            if pred_col:
                cols.append(pa.array(model.predict_from_margins(m), pa.float64()))
                names.append(pred_col)
            yield pa.RecordBatch.from_arrays(cols, names=names)

    return predict
