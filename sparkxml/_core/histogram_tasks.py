"""The task side of the histogram engine (GBT, LambdaMART, trees and forests): the sketch task
that summarises a partition's feature values for the bin edges, and the barrier-stage load
function that bins a partition once and keeps it for the whole training.

Functions here take plain values only (no Spark objects, no Estimator), and the module imports
no ``pyspark.ml`` (about 2 s of imports in each new worker process).
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkxml._core.arrow import (
    batch_features,
    bool_column,
    column_of,
    concat_features,
    float_column,
    margin_column,
    n_values,
)
from sparkxml._core.barrier import encode_arrays
from sparkxml._core.workers import task_threads
from sparkxml_kernels import binning
from sparkxml_kernels.gbt import binned as gbt_binned
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.gbt.ranking import group_ptr_from_sorted_ids
from sparkxml_kernels.threads import use_threads

ROW_ID = "__sparkxml_row_id"


def summarise_batches(batches, spec, weight, n_features, max_bins, chunk_values, size=None,
                      missing=float("nan")):
    """The weighted quantile summary of the (already sampled, training-only) rows of
    ``batches``, summarised in chunks of about ``chunk_values`` values and merged (``size``
    entries a feature at most; default from ``max_bins``): ``(Sketch or None, rows, error
    message or None)``. One input partition's summary (:func:`make_sketch_task`)."""
    sketches, xs, ws, held, n = [], [], [], 0, 0

    def flush():
        if xs:
            X = concat_features(xs)
            # unweighted: no weights at all, so each feature's values are sorted alone
            # (the same summary as unit weights, without the argsort and gather)
            sketches.append(binning.sketch(X, np.concatenate(ws) if weight is not None
                                           else None, max_bins, size))
            xs.clear()
            ws.clear()

    for b in batches:
        if b.num_rows == 0:
            continue
        try:
            xs.append(batch_features(b, spec, n_features, missing))
        except ValueError as e:  # bad input (e.g. a vector of another size): the driver
            # raises it as a ValueError, not as a Spark task failure
            return None, n, str(e)
        if weight is not None:
            ws.append(float_column(b, weight))
        n += b.num_rows
        held += n_values(xs[-1])
        if held >= chunk_values:
            flush()
            held = 0
    flush()
    if not sketches:
        return None, n, None
    return (sketches[0] if len(sketches) == 1 else binning.merge_sketches(sketches)), n, None


def make_sketch_task(spec, weight, n_features, max_bins, chunk_values, size=None,
                      missing=float("nan")):
    """Per input partition: :func:`summarise_batches` of its rows, as result rows."""

    def sketch_task(batches):
        from pyspark import TaskContext

        from sparkxml_kernels.precompile import warm_async

        warm_async("gbt")  # load/compile the training kernels while the sketch job runs
        t_start = time.perf_counter()
        pid = TaskContext.get().partitionId()
        sk, n, error = summarise_batches(batches, spec, weight, n_features, max_bins,
                                         chunk_values, size, missing)
        info = {"partition": pid, "n": n, "seconds": time.perf_counter() - t_start}
        if error is not None:
            info.update(seconds=0.0, error=error)
        yield encode_arrays(pid, None if sk is None else sk.to_arrays(), info)

    return sketch_task


def spec_columns(spec):
    return [spec["col"]] if spec["kind"] == "vector" else list(spec["cols"])


def make_load_fn(spec, label, weight, valid, edges, n_features, id_col=ROW_ID, group=None,
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
    255 bins, sparse for a sparse-shipped vector column (``sparkxml.gbt.features``), ``nthread``
    (threads for binning; None: the task's cores, :func:`task_threads`). With margins
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
        from sparkxml_kernels.precompile import warm_async

        n_threads = use_threads(task_threads(opts.get("nthread")))
        warm_async("gbt", *(("gbt_threads",) if n_threads > 1 else ()))
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
            X = batch_features(b, spec, n_features, missing)
            t2 = time.perf_counter()
            parts["X"].append(gbt_binned.bin_matrix(X, edges, categories, sparse=sparse,
                                                      n_threads=n_threads))
            if margin_col is not None or init_pred is not None:
                m = None if margin_col is None else margin_column(b, margin_col, k_out)
                if init_pred is not None:
                    m = init_pred.predict_raw(X, base_margin=m, n_threads=n_threads)
                parts["m"].append(np.asarray(m, np.float64).reshape(b.num_rows, -1))
            del X
            t = time.perf_counter()
            timing["convert"] += t2 - t1
            timing["bin"] += t - t2
            parts["y"].append(float_column(b, label))
            if weight is not None:
                parts["w"].append(float_column(b, weight))
            if valid is not None:
                parts["v"].append(bool_column(b, valid))
            # copies, not views: a view would keep the whole Arrow batch alive (as float_column)
            parts["id"].append(np.array(column_of(b, id_col).to_numpy(zero_copy_only=False),
                                        np.int64))
            if group is not None:
                g = column_of(b, group)
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



# ``monotonically_increasing_id`` puts the input partition's index above bit 33
_PARTITION_SHIFT = 33


def make_sketch_load_fn(spec, label, weight, valid, n_features, sketch, make_edges,
                        id_col=ROW_ID, group=None, options=None, extra_state=None):
    """The loader of a small single-task fit that computes its own bin edges: the rows the
    sketch job would have summarised, summarised here, then :func:`make_load_fn`'s binning,
    so that the fit needs no sketch job.

    ``sketch``: :func:`summarise_batches`' ``max_bins``, ``chunk_values``, ``size`` and
    ``missing``; ``canonical``: None, or the (partition, key) columns of a canonical sketch
    (``histogram_engine.canonical_sketch_columns``): the rows grouped by that partition, each
    group sorted by the key, as the canonical sketch job's hashed partitions are. Otherwise
    ``by_partition``: one summary per input partition (the partition read from ``id_col``, a
    ``monotonically_increasing_id``), merged in partition order, as the sketch job over the
    input does; else one summary of all rows, as over a frame already in one partition. Only
    for inputs the sketch job would not sample, whose partitions it would summarise in one
    chunk: the edges are then the sketch job's.
    ``make_edges(sketch) -> (edges, categories)``; a ValueError from it, a bad row or no
    training rows give a state ``{"error": message}`` (the driver raises it).
    ``extra_state(sketch, edges) -> dict``: more the train function needs, added to the state.
    """
    sk_opts = dict(sketch)
    by_partition = bool(sk_opts.pop("by_partition"))
    canonical = sk_opts.pop("canonical", None)

    def load(batches, rank, world):
        t0 = time.perf_counter()
        held = [b for b in batches if b.num_rows]
        if canonical is not None:
            parts = _canonical_groups(held, valid, *canonical)
        else:
            parts = _input_partitions(held, valid, by_partition, id_col)
        sketches, infos = [], []
        for p in sorted(parts):
            t = time.perf_counter()
            sk, n, error = summarise_batches(parts[p], spec, weight, n_features, **sk_opts)
            if error is not None:
                return {"error": error}
            infos.append({"partition": p, "n": n, "seconds": time.perf_counter() - t})
            if sk is not None:
                sketches.append(sk)
        if not sketches:
            return {"error": "no training rows to compute bin edges from"}
        merged = binning.merge_sketches(sketches) if len(sketches) > 1 else sketches[0]
        try:
            edges, categories = make_edges(merged)
        except ValueError as e:
            return {"error": str(e)}
        more = {} if extra_state is None else extra_state(merged, edges)
        sketch_seconds = time.perf_counter() - t0
        inner = make_load_fn(spec, label, weight, valid, edges, n_features, id_col, group,
                             dict(options or {}, categories=categories))
        state = inner(iter(held), rank, world)
        state.update(more, edges=edges, sketch_info=infos, sketch_seconds=sketch_seconds)
        return state

    return load


def task_sketch_info(state) -> dict:
    """What a training function adds to its info when its loader computed the bin edges
    (:func:`make_sketch_load_fn`): the sketch infos and seconds that
    ``histogram_engine.task_sketch`` reads back on the driver; {} otherwise."""
    if "sketch_info" not in state:
        return {}
    return {"sketch_info": state["sketch_info"], "sketch_seconds": state["sketch_seconds"]}


def _training_rows(b, valid):
    return b if valid is None else b.filter(pa.array(~bool_column(b, valid)))


def _input_partitions(held, valid, by_partition, id_col) -> dict:
    """Input partition -> its training rows (batches, in order); all under 0 unless
    ``by_partition``."""
    parts: dict = {}
    for b in held:
        rows = _training_rows(b, valid)
        if not by_partition:
            parts.setdefault(0, []).append(rows)
            continue
        pid = np.asarray(column_of(rows, id_col).to_numpy(zero_copy_only=False),
                         np.int64) >> _PARTITION_SHIFT
        cut = np.flatnonzero(np.diff(pid)) + 1
        for lo, hi in zip(np.r_[0, cut], np.r_[cut, pid.size]):
            if hi > lo:
                parts.setdefault(int(pid[lo]), []).append(rows.slice(lo, hi - lo))
    return parts


def _canonical_groups(held, valid, part_col, key_col) -> dict:
    """Hashed partition -> its training rows sorted by the content key (one batch): what
    ``repartition(n, key).sortWithinPartitions(key)`` gives each sketch task. Rows with equal
    keys have equal features and weight, so their order among themselves changes nothing."""
    rows = [_training_rows(b, valid) for b in held]
    rows = [b for b in rows if b.num_rows]
    if not rows:
        return {}
    table = pa.Table.from_batches(rows)
    part = np.asarray(table.column(part_col).to_numpy(), np.int64)
    key = np.asarray(table.column(key_col).to_numpy(), np.int64)
    order = np.lexsort((key, part))
    table, part = table.take(pa.array(order)), part[order]
    cut = np.flatnonzero(np.diff(part)) + 1
    return {int(part[lo]): table.slice(lo, hi - lo).combine_chunks().to_batches()
            for lo, hi in zip(np.r_[0, cut], np.r_[cut, part.size])}
