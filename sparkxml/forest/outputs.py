"""Forest and tree model outputs computed from a DataFrame after the fit: permutation
importance (scored on the driver) and the out-of-bag decision function (a transform-like
job). The model methods (``sparkxml.forest.base``) document them."""
from __future__ import annotations

import numpy as np
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.arrow import batch_features
from sparkxml._core.compat import to_arrow
from sparkxml._core.histogram_engine import check_schema, training_columns
from sparkxml._core.histogram_tasks import ROW_ID
from sparkxml.forest.tasks import make_oob_fn
from sparkxml_kernels.forest.importance import METRICS
from sparkxml_kernels.forest.importance import permutation_importance as _kernel_importance


def permutation_importance(model, dataset, metric, nRepeats, seed, weightCol, maxRows) -> dict:
    """``TreeModel.permutationImportance``."""
    if model._predictor is None:
        raise RuntimeError("this model has no trees (was it constructed directly?)")
    metric = metric or ("accuracy" if model._predictor.n_classes else "r2")
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r} is invalid: must be one of {list(METRICS)}")
    if int(nRepeats) < 1:
        raise ValueError(f"nRepeats={nRepeats} is invalid: must be >= 1")
    spec = dict(model._features_spec(), float32=True)
    label = model.getLabelCol()
    check_schema(dataset, spec, label, weightCol, None)
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
