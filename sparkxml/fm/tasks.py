"""The code FM, FFM and GBFM run inside Spark tasks: the data-check task, the barrier stage's load
and train functions, and the transform function.

Kept apart from the estimators so that a Python worker unpickling these closures imports only
numpy, pyarrow and ``sparkxml_kernels`` (not ``pyspark.ml``). Functions here capture plain
values only (no Spark objects, no Estimator).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from sparkxml._core.arrow import column_of, dense_vectors
from sparkxml_kernels import arrow_io
from sparkxml_kernels.model_cache import as_handle

KEY = "__sparkxml_key"

STATS_SCHEMA = ("n long, nnz long, dmin long, dmax long, label_null long, label_bad double, "
                "label_nonbinary double, weight_null long, weight_bad double, x_bad double, "
                "n_valid long, valid_null long, weight_train double")


def _first(values, bad):
    idx = np.flatnonzero(bad)
    return float(values[idx[0]]) if idx.size else None


def make_stats_task(fcol, label, weight, valid, classification: bool):
    """One row per input partition: counts, vector sizes and the first offending value of each
    check (labels, weights, feature values), so that the driver can name what is wrong."""

    def stats(batches):
        acc = {"n": 0, "nnz": 0, "dmin": None, "dmax": None, "label_null": 0, "label_bad": None,
               "label_nonbinary": None, "weight_null": 0, "weight_bad": None, "x_bad": None,
               "n_valid": 0, "valid_null": 0, "weight_train": 0.0}
        for b in batches:
            if b.num_rows == 0:
                continue
            if fcol is None:  # relation blocks only: no vectors
                n = b.num_rows
                acc["n"] += n
            else:
                n, nnz, dmin, dmax = arrow_io.vector_stats(column_of(b, fcol), fcol)
                acc["n"] += n
                acc["nnz"] += nnz
                if n and dmin >= 0:
                    acc["dmin"] = dmin if acc["dmin"] is None else min(acc["dmin"], dmin)
                    acc["dmax"] = dmax if acc["dmax"] is None else max(acc["dmax"], dmax)
                col = column_of(b, fcol)
                vals = col.field("values").flatten().to_numpy(zero_copy_only=False)
                if acc["x_bad"] is None:
                    acc["x_bad"] = _first(vals, ~np.isfinite(vals))
            lab = column_of(b, label)
            acc["label_null"] += lab.null_count
            y = lab.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
            if acc["label_bad"] is None:
                acc["label_bad"] = _first(y, ~np.isfinite(y))
            if classification and acc["label_nonbinary"] is None:
                acc["label_nonbinary"] = _first(y, np.isfinite(y) & (y != 0.0) & (y != 1.0))
            w = np.ones(n)
            if weight is not None:
                wc = column_of(b, weight)
                acc["weight_null"] += wc.null_count
                w = wc.cast(pa.float64()).fill_null(1.0).to_numpy(zero_copy_only=False)
                if acc["weight_bad"] is None:
                    acc["weight_bad"] = _first(w, ~np.isfinite(w) | (w < 0))
            train = np.ones(n, bool)
            if valid is not None:
                vc = column_of(b, valid)
                acc["valid_null"] += vc.null_count
                v = np.asarray(vc.fill_null(False).to_numpy(zero_copy_only=False), bool)
                acc["n_valid"] += int(v.sum())
                train = ~v
            wt = w[train]
            acc["weight_train"] += float(wt[np.isfinite(wt)].sum())
        if acc["dmin"] is None:
            acc["dmin"] = acc["dmax"] = -1
        yield pa.RecordBatch.from_pylist([acc])

    return stats


def make_load_fn(fcol, label, weight, valid, d: int, column=None, relations=None):
    """The barrier task's loader: Arrow batches -> CSR (float64 values), labels, weights,
    content keys and the validation flags, all in arrival order. ``column``: the name of the
    vector column in the batches when it differs from ``fcol`` (used in messages); ``fcol``
    None: no vectors (empty rows, d = 0). ``relations``: the relation index columns, read into
    ``rel`` int64 (n, R)."""
    column = column or fcol

    def load(batches, rank, world):
        ip, ix, dv, ys, ws, ks, vs, rs = [], [], [], [], [], [], [], []
        offset = 0
        for b in batches:
            if b.num_rows == 0:
                continue
            if fcol is None:
                indptr = np.zeros(b.num_rows + 1, np.int64)
                indices, data = np.zeros(0, np.int32), np.zeros(0, np.float64)
            else:
                indptr, indices, data, _ = arrow_io.vectors_to_csr(
                    column_of(b, column), fcol, num_features=d, value_dtype=np.float64)
            if relations:
                rs.append(np.column_stack([
                    np.asarray(column_of(b, c).to_numpy(zero_copy_only=False), np.int64)
                    for c in relations]))
            ip.append(indptr[1:] + offset)
            offset += int(indptr[-1])
            ix.append(indices)
            dv.append(data)
            # copies: a view would keep the whole Arrow batch alive
            ys.append(np.array(column_of(b, label).cast(pa.float64())
                               .to_numpy(zero_copy_only=False), np.float64))
            if weight is not None:
                ws.append(np.array(column_of(b, weight).cast(pa.float64())
                                   .to_numpy(zero_copy_only=False), np.float64))
            if valid is not None:
                vs.append(np.asarray(column_of(b, valid).to_numpy(zero_copy_only=False), bool))
            ks.append(np.array(column_of(b, KEY).to_numpy(zero_copy_only=False), np.int64))
        cat = (lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt))
        return {"indptr": np.concatenate([[0], cat(ip, np.int64)]).astype(np.int64),
                "indices": cat(ix, np.int32), "data": cat(dv, np.float64),
                "y": cat(ys, np.float64), "w": cat(ws, np.float64) if weight else None,
                "valid": cat(vs, bool) if valid else None, "keys": cat(ks, np.int64),
                "d": int(d), "fcol": fcol or "relationBlocks",
                "rel": (np.concatenate(rs) if rs else np.zeros((0, len(relations)), np.int64))
                if relations else None}

    return load


def _iteration_callback(reporter, total: int, unit: str):
    """The solvers' ``on_iteration(history)``: iteration (stage) i, 1-based, with the last
    value of each curve of the history."""

    def cb(hist):
        done = len(hist.get("seconds") or ())
        if reporter.due(done, total):
            reporter.progress(done, total, {k: v[-1] for k, v in hist.items()
                                            if k != "seconds" and isinstance(v, list) and v
                                            and isinstance(v[-1], (int, float))}, unit=unit)

    return cb


def make_train_fn(kind: str, params: dict, progress: dict | None = None):
    """The barrier task's training function: canonical row order and blocks
    (``fm.train.prepare``), then the FM solver, FFM's or GBFM; rank 0 returns the model
    arrays.
    ``progress`` (``FitProgress.task_spec()``): rank 0 reports iterations (GBFM: stages)
    to the driver."""

    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.fm import train as T
        from sparkxml_kernels.progress import ProgressReporter

        valid, rel = state["valid"], state.get("rel")
        prep = T.prepare(state["indptr"], state["indices"], state["data"], state["y"],
                         state["w"], state["keys"], state["d"], coll, rank, world,
                         column=state["fcol"], extra=valid if rel is None else rel)
        relations = None
        if rel is not None:  # the relation blocks (validation rows are refused with them)
            from sparkxml_kernels.fm.relation import RelationBlock

            prep, rel = prep
            relations = ([RelationBlock(b["indptr"], b["indices"], b["data"], b["d"], b["name"])
                          for b in params["relations"]], np.ascontiguousarray(rel.T))
        elif valid is not None:
            prep, valid = prep
        state.clear()
        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        p = params
        if reporter.enabled:
            total, unit = {"fm": (int(params.get("maxIter", 0)), "iteration"),
                           "ffm": (int(params.get("maxIter", 0)), "epoch")}.get(
                kind, (int(params.get("numStages", 0)), "stage"))
            p = dict(params, on_iteration=_iteration_callback(reporter, total, unit))
            if kind == "gbfm" and params.get("jointFit") == "mcmc":
                p["on_joint_iteration"] = _iteration_callback(
                    reporter, int(params["jointIter"]), "joint-fit sweep")
        try:
            # validation rows: a (possibly empty) set on every rank, so that all ranks
            # take part in the validation sums
            tr = prep if valid is None else prep.subset(~valid)
            va = None if valid is None else prep.subset(valid)
            if kind == "fm":
                arrays, hist = T.train_fm(tr, p, coll, valid=va, relations=relations)
            elif kind == "ffm":
                arrays, hist = T.train_ffm(tr, p, coll)
            else:
                from sparkxml_kernels.fm.gbfm import run_gbfm

                arrays, hist = run_gbfm(tr, va, p, coll)
        finally:
            reporter.close()
        info = {"n_rows": int(prep.n), "nnz": int(prep.indices.size),
                "n_blocks": int(hist.get("n_blocks", 0))}
        if rank == 0:
            info["history"] = hist
            return arrays, info
        return None, info

    return train_fn


def output_arrays(raw, pred, classification: bool, kinds, proba=None):
    """Arrow arrays of the requested outputs: 'pred' (double: value, or 0/1 class), 'raw'
    ([-m, m]) and 'prob' ([1-p, p], or ``proba`` (n, K) when given: an ordinal model's class
    probabilities) vectors."""
    out = []
    for k in kinds:
        if k == "pred":
            v = (pred > 0.5).astype(np.float64) if classification else pred
            out.append(pa.array(np.asarray(v, np.float64), pa.float64()))
        elif k == "raw":
            out.append(dense_vectors(np.column_stack([-raw, raw])))
        elif proba is not None:
            out.append(dense_vectors(proba))
        else:
            out.append(dense_vectors(np.column_stack([1.0 - pred, pred])))
    return out


def make_predict_fn(kind: str, model, fcol: str, d: int, classification: bool, kinds,
                    names):
    """The ``mapInArrow`` function of a model's transform: input columns + outputs
    (``model``: a ``ModelHandle`` or the arrays)."""
    handle = as_handle(model)

    def predict(batches):
        from sparkxml_kernels.fm.ffm import FFMPredictor
        from sparkxml_kernels.fm.predictor import FMPredictor, GBFMPredictor

        cls = {"fm": FMPredictor, "gbfm": GBFMPredictor, "ffm": FFMPredictor}[kind]
        P = handle.build(kind, cls.from_arrays)
        for b in batches:
            indptr, indices, data, _ = arrow_io.vectors_to_csr(column_of(b, fcol), fcol,
                                                               num_features=d,
                                                               value_dtype=np.float64)
            if data.size and not np.isfinite(data).all():
                bad = data[~np.isfinite(data)][0]
                raise ValueError(f"featuresCol: column '{fcol}' holds the value {bad!r}; "
                                 f"features must be finite")
            proba = None
            if getattr(P, "link_name", "") == "ordinal":
                raw, pred, proba = P.predict_ordinal_csr(indptr, indices, data)
            else:
                raw, pred = P.predict_csr(indptr, indices, data)
            cols = list(b.columns) + output_arrays(raw, pred, classification, kinds, proba)
            yield pa.RecordBatch.from_arrays(cols, names=list(b.schema.names) + list(names))

    return predict
