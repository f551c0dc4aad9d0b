"""Forest and tree model outputs computed from a DataFrame after the fit: permutation
importance (scored on the driver, or per row block in one distributed job) and the
out-of-bag decision function (a transform-like job). The model methods (``sparkxml.forest.base``) document them."""
from __future__ import annotations

import numpy as np
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.arrow import batch_features
from sparkxml._core.compat import to_arrow
from sparkxml._core.histogram_engine import check_schema, training_columns
from sparkxml._core.histogram_tasks import ROW_ID
from sparkxml.forest.tasks import make_oob_fn, make_permutation_fn
from sparkxml_kernels.forest.importance import METRICS, score_from_terms
from sparkxml_kernels.forest.importance import permutation_importance as _kernel_importance

_BLOCK = "__sparkxml_block"


def permutation_importance(model, dataset, metric, nRepeats, seed, weightCol, maxRows,
                           mode="exact", blockRows=4096) -> dict:
    """``TreeModel.permutationImportance``."""
    if model._predictor is None:
        raise RuntimeError("this model has no trees (was it constructed directly?)")
    metric = metric or ("accuracy" if model._predictor.n_classes else "r2")
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r} is invalid: must be one of {list(METRICS)}")
    if int(nRepeats) < 1:
        raise ValueError(f"nRepeats={nRepeats} is invalid: must be >= 1")
    if mode not in ("exact", "distributed"):
        raise ValueError(f"mode={mode!r} is invalid: must be 'exact' or 'distributed'")
    if int(blockRows) < 2:
        raise ValueError(f"blockRows={blockRows} is invalid: must be >= 2")
    spec = dict(model._features_spec(), float32=True)
    label = model.getLabelCol()
    check_schema(dataset, spec, label, weightCol, None)
    if mode == "distributed":
        return _distributed_importance(model, dataset, spec, label, weightCol, metric,
                                       int(nRepeats), int(seed), int(blockRows))
    n = dataset.count()
    if n > maxRows:
        raise ValueError(f"dataset has {n} rows, above maxRows={maxRows}: permutation "
                         f"importance scores on the driver; sample the rows")
    table = to_arrow(dataset.select(*training_columns(spec, label, weightCol, None)))
    d = model.numFeatures
    X = np.concatenate([batch_features(b, spec, d) for b in table.to_batches()]) \
        if table.num_rows else np.zeros((0, d))
    y = np.asarray(table.column(label).to_numpy(zero_copy_only=False), np.float64)
    w = None if weightCol is None else np.asarray(
        table.column(weightCol).to_numpy(zero_copy_only=False), np.float64)
    pred = model._predictor.predict
    return _kernel_importance(lambda A: np.asarray(pred(A), np.float64), X, y, metric,
                              int(nRepeats), int(seed), w)


def _distributed_importance(model, dataset, spec, label, weight, metric, R, seed, block_rows):
    """Rows go to blocks of about ``block_rows`` by a hash of (their content, seed); one
    ``mapInArrow`` job scores every block with each feature permuted within it; the
    driver sums the blocks' terms in block order (the same numbers for any partitioning)."""
    df = dataset.select(*training_columns(spec, label, weight, None))
    df = df.withColumn(ROW_ID, F.xxhash64(*[F.col(c) for c in df.columns]))
    n = df.count()
    if n == 0:
        raise ValueError("dataset has no rows: nothing to score")
    n_blocks = -(-n // block_rows)
    df = df.withColumn(_BLOCK, F.pmod(F.xxhash64(F.col(ROW_ID), F.lit(seed)), F.lit(n_blocks)))
    parts = min(n_blocks, int(dataset.sparkSession.conf.get("spark.sql.shuffle.partitions")))
    schema = T.StructType([T.StructField("block", T.LongType()),
                           T.StructField("index", T.LongType())]
                          + [T.StructField(f"s{i}", T.DoubleType()) for i in range(4)])
    fn = make_permutation_fn(model._task_model(dataset), spec, model.numFeatures, label,
                             weight, metric, R, seed % (1 << 63), _BLOCK, ROW_ID)
    t = to_arrow(df.repartition(parts, F.col(_BLOCK)).mapInArrow(fn, schema))
    idx = np.asarray(t.column("index").to_numpy(), np.int64)
    blk = np.asarray(t.column("block").to_numpy(), np.int64)
    terms = np.column_stack([t.column(f"s{i}").to_numpy() for i in range(4)])
    order = np.lexsort((blk, idx))  # sum each index's blocks in block order
    idx, terms = idx[order], terms[order]
    starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
    sums = np.add.reduceat(terms, starts, axis=0)
    scores = np.array([score_from_terms(metric, s) for s in sums])
    base = scores[0]
    imp = (base - scores[1:]).reshape(model.numFeatures, R)
    return {"importances": imp, "importances_mean": imp.mean(axis=1),
            "importances_std": imp.std(axis=1), "baseline_score": float(base)}


def oob_decision_function(model, dataset, outputCol):
    """``ForestModelMixin.oobDecisionFunction``."""
    if model._predictor is None:
        raise RuntimeError("this model has no trees (was it constructed directly?)")
    spec = model._features_spec()
    label = model.getLabelCol()
    weight = model._opt(model.weightCol) or None
    check_schema(dataset, spec, label, weight, None)
    df = dataset.select(*training_columns(spec, label, weight, None))
    if outputCol in df.columns:
        raise ValueError(f"outputCol: column '{outputCol}' already exists")
    df = df.withColumn(ROW_ID, F.xxhash64(*[F.col(c) for c in df.columns]))
    cfg = {"seed": int(model.getSeed()), "bootstrap": bool(model.getBootstrap()),
           "rate": float(model.getSubsamplingRate())}
    schema = T.StructType(list(df.schema.fields) + [T.StructField("__oob__", VectorUDT())])
    fn = make_oob_fn(model._task_model(dataset), dict(spec, float32=True),
                     model.numFeatures, weight, cfg, ROW_ID)
    return df.mapInArrow(fn, schema).drop(ROW_ID).withColumnRenamed("__oob__", outputCol)
