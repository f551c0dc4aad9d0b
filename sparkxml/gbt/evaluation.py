"""The evaluation metrics (XGBoost's names, ``sparkxml_kernels.gbt.metrics``) of a fitted GBT
model on a DataFrame, in one Spark job: every task scores its rows with the model and returns
each metric's summable statistics (``metric_stats``); the driver adds them and finishes the
metrics, so a value does not depend on how the rows are partitioned (up to rounding).

Ranking metrics need a query's rows together: the frame is then repartitioned by the query
column and sorted within partitions by (query, ``xxhash64`` of the row's feature, label, weight and
validation columns), so tied scores are ordered as LambdaMART's training orders them.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F

from sparkxml._core.arrow import batch_features, margin_column
from sparkxml._core.histogram_engine import X_COL
from sparkxml._core.histogram_tasks import spec_columns
from sparkxml._core.progress import FitProgress
from sparkxml.gbt.tasks import predictor_with_missing

_M_COL = "__sparkxml_margin"
_G_COL = "__sparkxml_group"


class GBTRankingEvaluation:
    """Metrics of a ranking model on a dataset (``LambdaMARTModel.evaluate``).

    Attributes
    ----------
    metrics : dict
        ``{name: value}`` for ``ndcg@k`` / ``map@k``, averaged over the queries (NDCG
        weighted by the query weight, the mean of its rows' ``weightCol``, as in training).
    numQueries : int

    Examples
    --------
    >>> ev = GBTRankingEvaluation({"ndcg@10": 0.75, "map@10": 0.5}, 3)
    >>> ev.metrics["ndcg@10"], ev.numQueries
    (0.75, 3)
    """

    def __init__(self, metrics: dict, num_queries: int):
        self.metrics = dict(metrics)
        self.numQueries = int(num_queries)

    def __repr__(self):
        return f"GBTRankingEvaluation(numQueries={self.numQueries}, metrics={self.metrics})"


def metric_frame(model, dataset):
    """``(columns to select, task feature spec, label, weight or None, margin or None)`` of
    ``dataset`` for scoring it with ``model`` next to its label (and weight, base margin)."""
    spec = model._features_spec()
    fields = {f.name: f.dataType for f in dataset.schema.fields}
    model._check_features(fields, spec)
    label = model.getLabelCol()
    if label not in fields:
        raise ValueError(f"labelCol: column '{label}' is not in the DataFrame")
    weight = model._opt(model.weightCol) or None
    if weight is not None and weight not in fields:
        weight = None
    margin = model._margin_col(fields)
    cols = [vector_to_array(F.col(spec["col"])).alias(X_COL) if spec["kind"] == "vector"
            else F.col(c).cast("double").alias(c) for c in spec_columns(spec)]
    cols.append(F.col(label).cast("double").alias(label))
    if weight is not None:
        cols.append(F.col(weight).cast("double").alias(weight))
    if margin is not None:
        m = F.col(margin)
        cols.append((vector_to_array(m) if isinstance(fields[margin], VectorUDT) else m)
                    .alias(_M_COL))
    if spec["kind"] == "vector":
        spec = {"kind": "vector", "col": X_COL}
    return cols, spec, label, weight, None if margin is None else _M_COL


def metric_values(model, dataset, names, group=None, label_gain=None):
    """``({metric: value}, number of queries or None)`` of ``model`` on ``dataset``;
    ``group`` (the query column) for ranking metrics."""
    names = list(names)
    cols, spec, label, weight, margin = metric_frame(model, dataset)
    frame = dataset
    if group is not None:
        if group not in dataset.columns:
            raise ValueError(f"groupCol: column '{group}' is not in the DataFrame")
        # the columns training hashed (with the validation column when the dataset has it)
        valid = model._opt(model.validationIndicatorCol) or None
        hashed = spec_columns(model._features_spec()) + [model.getLabelCol()] + [
            c for c in (weight, valid) if c and c in dataset.columns]
        frame = (dataset.withColumn(_G_COL, F.col(group))
                 .withColumn("__sparkxml_key", F.xxhash64(*hashed))
                 .repartition(F.col(_G_COL)).sortWithinPartitions(_G_COL, "__sparkxml_key"))
        cols.append(F.col(_G_COL))
    fn = _make_metrics_fn(model._task_model(dataset), float(model.getMissing()), spec,
                          model.numFeatures, label, weight, margin, names,
                          _G_COL if group is not None else None, label_gain)
    with FitProgress(dataset.sparkSession, model).phase("evaluate"):
        rows = frame.select(*cols).mapInArrow(fn, "stats binary, groups long").collect()
    total, queries = None, 0
    for r in rows:
        a = np.frombuffer(r["stats"], np.float64)
        total = a.copy() if total is None else total + a
        queries += int(r["groups"])
    if total is None:
        raise ValueError("the DataFrame is empty")
    return _finish(names, total, label_gain), (queries if group is not None else None)


def _register(names, label_gain):
    """Register the metrics (in this process): ranking ones with the model's gains."""
    from sparkxml_kernels.gbt import ranking as R
    from sparkxml_kernels.gbt.metrics import is_known

    for m in names:
        if R.parse_metric(m) is not None:
            R.configure_metric(m, label_gain)
        elif not is_known(m):
            raise ValueError(f"unknown metric {m!r}")


def _finish(names, total, label_gain):
    from sparkxml_kernels.gbt.metrics import metric_from_stats, metric_stats

    _register(names, label_gain)
    out, at = {}, 0
    for m in names:
        # the statistics' size of each metric: what it gives on one made-up row
        size = _stats_size(m, metric_stats)
        out[m] = metric_from_stats(m, total[at:at + size])
        at += size
    return out


def _stats_size(name, metric_stats):
    from sparkxml_kernels.gbt.ranking import parse_metric

    if name in ("mlogloss", "merror"):
        return metric_stats(name, np.zeros(1), np.zeros((1, 2))).size
    gp = np.array([0, 1]) if parse_metric(name) is not None else None
    return metric_stats(name, np.ones(1), np.zeros(1), None, gp).size


def _make_metrics_fn(handle, missing, spec, n_features, label, weight, margin_col, names,
                     group_col, label_gain):
    """Per partition: one row with every metric's statistics, concatenated in ``names``'
    order, and the number of queries (0 without ``group_col``)."""

    def column(b, name):
        return b.column(b.schema.get_field_index(name)).to_numpy(zero_copy_only=False)

    def metrics(batches):
        from sparkxml_kernels.gbt.metrics import metric_stats

        _register(names, label_gain)
        pred = predictor_with_missing(handle, missing)
        K = pred.n_outputs
        parts = []  # (y, raw, w, group ids) per batch
        total = None
        for b in batches:
            if b.num_rows == 0:
                continue
            X = batch_features(b, spec, n_features)
            y = np.asarray(column(b, label), np.float64)
            w = None if weight is None else np.asarray(column(b, weight), np.float64)
            base = None if margin_col is None else margin_column(b, margin_col, K)
            raw = pred.predict_raw(X, base)
            if group_col is not None:  # a query may span batches: score them all first
                parts.append((y, raw, w, column(b, group_col)))
                continue
            s = np.concatenate([metric_stats(m, y, raw, w) for m in names])
            total = s if total is None else total + s
        n_groups = 0
        if parts:
            y = np.concatenate([p[0] for p in parts])
            raw = np.concatenate([p[1] for p in parts])
            w = None if weight is None else np.concatenate([p[2] for p in parts])
            g = np.concatenate([p[3] for p in parts])
            starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
            gp = np.append(starts, g.size).astype(np.int64)
            n_groups = int(starts.size)
            total = np.concatenate([metric_stats(m, y, raw, w, gp) for m in names])
        if total is not None:
            yield pa.RecordBatch.from_pydict({"stats": [total.tobytes()],
                                              "groups": [n_groups]})

    return metrics
