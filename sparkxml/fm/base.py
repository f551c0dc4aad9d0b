"""What FM and GBFM share on the driver: input checks, the barrier fit, models and summaries.

A fit runs two Spark jobs:

1. a checks job: one ``mapInArrow`` task per input partition reads the vectors as Arrow
   structs (never densified) and reports counts, vector sizes and the first offending value
   of each check (non-finite features, labels or weights; labels other than 0/1 for
   classifiers; null vectors, labels, weights, validation flags), so bad input fails before
   training with an error naming the column and the value;
2. ONE barrier stage (``sparkxml._core.barrier``) over ``numWorkers`` partitions. Every row
   gets a content key (``xxhash64`` of the features, label and weight columns, computed in
   the JVM) and a row block (key mod ``ROW_BLOCKS`` = 16); task r receives the row blocks b
   with b * numWorkers // 16 == r and sorts its rows by (block, key)
   (``sparkxml_kernels.fm.train``). Every sum over rows is taken per row block and the blocks
   are added in block order (``sparkxml_kernels.fm.order``), so the model is the same, bit for
   bit, for any input partitioning and any numWorkers up to 16 (more are capped at 16, with a
   warning). Exact duplicate rows share a key and land in the same task. All tasks train in
   lockstep over the socket collective; rank 0 returns the model arrays.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.base import SparkXMLEstimator, SparkXMLPredictorModel
from sparkxml._core.params import HasVerbose
from sparkxml._core.params import add_setters as add_setters
from sparkxml._core.partitioning import partition_keys
from sparkxml._core.progress import FitProgress
from sparkxml._core.summary import TrainingSummary
from sparkxml._core.validation import (
    check_column,
    check_dense_width,
    check_output_columns,
    check_vector_column,
    refuse_null_vectors,
)
from sparkxml._core.workers import requested_workers, workers_for
from sparkxml.fm.tasks import (
    KEY,
    STATS_SCHEMA,
    make_load_fn,
    make_predict_fn,
    make_stats_task,
    make_train_fn,
)
from sparkxml_kernels.fm.order import ROW_BLOCKS

__all__ = ["FMTrainingSummary", "FMEstimatorBase", "FMModelBase", "add_setters"]


def data_checks(dataset, fcol, label, weight, valid, classification: bool) -> dict:
    """The checks job (see the module docstring); raises ValueError naming the column.
    ``fcol`` None: no feature vectors (a fit on relation blocks only), d = 0."""
    cols = list(dict.fromkeys([c for c in (fcol, label, weight, valid) if c]))
    rows = dataset.select(*cols).mapInArrow(
        make_stats_task(fcol, label, weight, valid, classification), STATS_SCHEMA).collect()
    r = {k: sum((row[k] or 0) for row in rows) for k in ("n", "nnz", "label_null",
                                                         "weight_null", "n_valid", "valid_null",
                                                         "weight_train")}

    def first(key):
        return next((row[key] for row in rows if row[key] is not None), None)

    if r["n"] == 0:
        raise ValueError("the training DataFrame is empty")
    if r["label_null"]:
        raise ValueError(f"labelCol: column '{label}' has {r['label_null']} null value(s)")
    if first("label_bad") is not None:
        raise ValueError(f"labelCol: column '{label}' holds the non-finite value "
                         f"{first('label_bad')!r}")
    if first("label_nonbinary") is not None:
        raise ValueError(f"labelCol: column '{label}' holds the label "
                         f"{first('label_nonbinary')!r}; binary classification needs labels "
                         f"0 and 1")
    if r["weight_null"]:
        raise ValueError(f"weightCol: column '{weight}' has {r['weight_null']} null value(s)")
    if first("weight_bad") is not None:
        raise ValueError(f"weightCol: column '{weight}' holds the value "
                         f"{first('weight_bad')!r}; weights must be finite and >= 0")
    if r["valid_null"]:
        raise ValueError(f"validationIndicatorCol: column '{valid}' has {r['valid_null']} "
                         f"null value(s)")
    if first("x_bad") is not None:
        raise ValueError(f"featuresCol: column '{fcol}' holds the value {first('x_bad')!r}; "
                         f"features must be finite")
    if fcol is None:  # relation blocks only: no flat features
        r.update(d=0, n_train=r["n"] - r["n_valid"])
        return r
    sizes = sorted({row["dmin"] for row in rows if row["dmin"] >= 0}
                   | {row["dmax"] for row in rows if row["dmax"] >= 0})
    if sizes and sizes[0] == 0:  # a null vector counts as size 0: name it as null
        refuse_null_vectors(dataset, fcol)
    if len(sizes) > 1:
        raise ValueError(f"featuresCol: column '{fcol}' holds vectors of different sizes: "
                         f"{sizes[0]} and {sizes[-1]}")
    if not sizes or sizes[0] < 1:
        raise ValueError(f"featuresCol: column '{fcol}' holds vectors of size 0")
    r.update(d=int(sizes[0]), n_train=r["n"] - r["n_valid"])
    return r


def check_field_starts(field_starts, d: int, param: str = "fieldStarts") -> list:
    """The field starts as ints, checked against the vector size d (they must cover it)."""
    fs = [int(x) for x in field_starts]
    if not fs or fs[0] != 0:
        raise ValueError(f"{param}={fs!r}: the first field must start at 0, or features "
                         f"0..{(fs[0] - 1) if fs else d - 1} belong to no field")
    if any(b <= a for a, b in zip(fs, fs[1:])):
        raise ValueError(f"{param}={fs!r} must be strictly ascending")
    if fs[-1] >= d:
        raise ValueError(f"{param}={fs!r} does not fit the vectors: the last field starts at "
                         f"{fs[-1]}, but the vectors have {d} features (indices 0..{d - 1})")
    return fs


def cap_workers(who: str, n_workers: int) -> int:
    """``n_workers`` capped at ``ROW_BLOCKS``, with a warning: more tasks than row blocks
    would leave tasks without rows (the blocks keep the model the same for any numWorkers)."""
    if n_workers > ROW_BLOCKS:
        warnings.warn(f"{who}: numWorkers={n_workers}, but the rows are split into "
                      f"{ROW_BLOCKS} row blocks (the unit that keeps the model the same for "
                      f"any numWorkers): training runs on {ROW_BLOCKS} tasks", stacklevel=4)
        return ROW_BLOCKS
    return n_workers


def _block_partitions(df, n_workers: int, block_key: str = KEY):
    """``df`` in ``n_workers`` partitions, partition r holding the row blocks b (pmod(key,
    ROW_BLOCKS), key the column ``block_key``) with b * n_workers // ROW_BLOCKS == r:
    contiguous ranges of blocks in rank order (``partition_keys`` gives the keys Spark's hash
    partitioning sends to partition r)."""
    block = F.pmod(F.col(block_key), F.lit(ROW_BLOCKS))
    rank = F.floor(block * F.lit(n_workers) / F.lit(ROW_BLOCKS)).cast("int")
    owner = F.element_at(F.array(*[F.lit(int(k)) for k in partition_keys(n_workers)]),
                         rank + F.lit(1))
    return (df.withColumn("__sparkxml_owner", owner)
            .repartition(n_workers, "__sparkxml_owner").drop("__sparkxml_owner"))


# ============================================================================ summary
class FMTrainingSummary(TrainingSummary):
    """What a fit reports (the common fields: ``sparkxml._core.summary.TrainingSummary``).

    Attributes
    ----------
    history : dict
        Per sweep / epoch / stage: "train_rmse" and "alpha" (MCMC regression; "alpha" only for
        classification and ordinal regression; ordinal: "mh_accepted", the cutpoint proposals
        accepted so far), "objective" (ALS), "loss" (AdamW), "train_loss" and "valid_metric"
        (GBFM), with "seconds" since the start of training.
    numBlocks : int
        Exclusive feature blocks the coordinate updates ran over (one all-reduce each).
    trainingSeconds : float
        Wall time of the barrier stage (driver view).
    checksSeconds : float
    numWorkers : int
    workerInfo : list of dict
        Per rank: rows, non-zeros, load/train seconds, bytes exchanged, peak memory.
    """

    def __init__(self, history: dict, training_seconds=0.0, worker_info=None,
                 checks_seconds=None):
        super().__init__(training_seconds, worker_info, checks_seconds)
        self.history = dict(history or {})
        self.numBlocks = int(self.history.get("n_blocks", 0))

    @classmethod
    def _from_fit(cls, result, checks_seconds):
        history = result.infos[0].pop("history", {})
        for info in result.infos:
            info.pop("history", None)
        return cls(history, result.seconds, result.infos, checks_seconds)

    def _family_arrays(self) -> dict:
        out = {}
        common = set(self._common_keys())
        for k, v in self.history.items():
            a = np.asarray(v)
            if a.dtype.kind in "fiub" and a.ndim <= 2 and f"summary.{k}" not in common:
                out[f"summary.{k}"] = a.astype(np.float64)
        return out

    @classmethod
    def _saved(cls, arrays: dict) -> bool:
        common = set(cls._common_keys())
        return any(k.startswith("summary.") and k not in common for k in arrays)

    @classmethod
    def _from_family_arrays(cls, arrays: dict):
        common = set(cls._common_keys())
        hist = {k[len("summary."):]: v.tolist() for k, v in arrays.items()
                if k.startswith("summary.") and k not in common}
        return cls(hist)

    # the per-iteration curves a progress line shows (first present wins the name)
    _CURVES = ("train_rmse", "objective", "loss", "train_loss", "valid_metric")

    def _rows(self) -> list:
        curves = {k: self.history[k] for k in self._CURVES
                  if isinstance(self.history.get(k), list)}
        n = len(self.history.get("seconds") or [])
        return [(i + 1, {k: float(v[i]) for k, v in curves.items()
                         if i < len(v) and np.ndim(v[i]) == 0})
                for i in range(n)]

    def __repr__(self):
        return f"FMTrainingSummary(blocks={self.numBlocks}, keys={sorted(self.history)})"


# ============================================================================ estimator
class FMEstimatorBase(SparkXMLEstimator, HasVerbose):
    """The fit shared by FM and GBFM estimators. Subclasses set ``_kind`` ("fm" | "gbfm" | "ffm"),
    ``_task`` and implement ``_train_params(stats)`` and ``_model_class``.

    Its jobs run labelled (``sparkxml._core.progress``: phases "checks" and "train"); with
    ``verbose = N`` rank 0 logs one line every N iterations (GBFM: stages)."""

    _kind = "fm"
    _task = "regression"
    _unit = "iteration"

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(verbose=0)

    def _dense_per_feature(self):
        """(values a feature holds in the dense model arrays, what they are): V (d x
        factorSize) and the linear terms are dense in the vector size."""
        k = int(self.getFactorSize())
        return k + 1, f"factorSize + 1 = {k + 1} values"

    def _train_params(self, stats: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_params(self, weight, valid) -> None:
        """Checks that need no data (run before any Spark job)."""

    def _check_mcmc(self, weight: bool, instead: str, iters: str = "maxIter",
                    by: str = "by solver 'mcmc'") -> None:
        """The MCMC sampler's checks shared by FM, FFM and GBFM's joint fit, before any Spark
        job: a sample must be kept (``burnIn`` below the ``iters`` param), and the probit
        classifier takes no row weights (``by`` names what chose MCMC, ``instead`` what to
        use)."""
        n_iter = self.getOrDefault(iters)
        burn_in = self.getOrDefault("burnIn")
        if burn_in >= n_iter:
            raise ValueError(f"burnIn={burn_in} must be below {iters}={n_iter}: no MCMC sample "
                             "would be kept")
        if weight and self._task == "classification":
            raise ValueError(f"weightCol is not supported {by} for classification (the probit "
                             f"likelihood has no row weights); use {instead}")

    def _label_checks(self, dataset, label: str) -> dict:
        """Checks of the label values beyond ``data_checks`` (after it, in the checks phase);
        what they find joins the stats ``_train_params`` receives."""
        return {}

    def _check_schema(self, dataset, fcol, label, weight, valid):
        numeric = (T.NumericType,)
        if fcol is not None:
            check_vector_column(dataset, fcol)
        check_column(dataset, label, "labelCol", numeric, "numeric")
        if weight:
            check_column(dataset, weight, "weightCol", numeric, "numeric")
        if valid:
            check_column(dataset, valid, "validationIndicatorCol", (T.BooleanType,),
                         "boolean")
        if KEY in dataset.columns:
            raise ValueError(f"column name '{KEY}' is reserved")

    def _fit_validated(self, dataset):
        spark = dataset.sparkSession
        fcol, label = self.getFeaturesCol(), self.getLabelCol()
        weight = self._opt(self.weightCol) or None
        valid = (self._opt(self.validationIndicatorCol) or None
                 if self.hasParam("validationIndicatorCol") else None)
        rel_cols = self._relation_cols()
        if rel_cols and fcol not in dataset.columns:
            fcol = None  # relation blocks only: the flat part has no features
        self._check_schema(dataset, fcol, label, weight, valid)
        self._check_params(weight, valid)
        rel = self._relation_spec(dataset) if rel_cols else None
        if rel is not None and valid:
            raise ValueError("validationIndicatorCol is not supported with relationCols")
        n_workers = requested_workers(spark, self)
        with FitProgress(spark, self, self.getVerbose()) as progress:
            t0 = time.perf_counter()
            with progress.phase("checks"):
                stats = data_checks(dataset, fcol, label, weight, valid,
                                    self._task != "regression")
                stats.update(self._label_checks(dataset, label))
            d_flat = stats["d"]
            if rel is not None:
                stats["d"] = d_flat + rel.width  # the model's features: flat, then blocks
            check_dense_width(fcol or "relationBlocks", stats["d"], *self._dense_per_feature())
            n_workers = cap_workers(type(self).__name__,
                                    workers_for(spark, stats, valid, n_workers))
            params = dict(self._train_params(stats), task=self._task)
            rel_names = []
            if rel is not None:
                params["relations"] = rel.blocks
                rel_names = [f"r{i}" for i in range(len(rel.cols))]
            checks_seconds = time.perf_counter() - t0
            # fixed internal names: the label may also serve as weight or be named like a param
            key_cols = (([F.col(fcol)] if fcol else []) + [F.col(label)]
                        + ([F.col(weight)] if weight else [])
                        + [F.col(c) for c in (rel.cols if rel is not None else [])])
            cols = (([F.col(fcol).alias("f")] if fcol else [])
                    + [F.col(label).cast("double").alias("y")])
            if weight:
                cols.append(F.col(weight).cast("double").alias("w"))
            if valid:
                cols.append(F.col(valid).alias("v"))
            if rel is not None:
                cols += [F.col(c).cast("long").alias(n) for c, n in zip(rel.cols, rel_names)]
            cols.append(F.xxhash64(*key_cols).alias(KEY))
            # one worker reads the input partitions in turn (no shuffle): the task puts the
            # rows in their canonical (content key) order whatever order they arrive in
            df = dataset.select(*cols)
            if int(n_workers) > 1:
                df = _block_partitions(df, int(n_workers))
            with progress.phase("train"):
                result = run_barrier_training(
                    df, n_workers, make_load_fn(fcol, "y", "w" if weight else None,
                                                "v" if valid else None, d_flat,
                                                column="f" if fcol else None,
                                                relations=rel_names or None),
                    make_train_fn(self._kind, params, progress=progress.task_spec()),
                    timeout_s=self.getTimeoutSeconds(), repartition=False,
                    coalesce_single=True)
            summary = FMTrainingSummary._from_fit(result, checks_seconds)
            if progress.verbose > 0 and not progress.live_lines:
                progress.log_rounds(summary._rows(), self._progress_total(params),
                                    unit=self._unit)
        return self._model_class._create(result.arrays, summary)

    def _relation_cols(self) -> list:
        """The relation index columns (FMRegressor / FMClassifier: relationCols)."""
        return []

    def _relation_spec(self, dataset):
        """The checked relation blocks (``sparkxml.fm.relations.RelationSpec``), or None."""
        return None

    def _progress_total(self, params: dict) -> int:
        return int(params.get("maxIter", 0))


# ============================================================================ models
class FMModelBase(SparkXMLPredictorModel):
    """Shared by FM and GBFM models: the JVM-free predictor, transform and persistence.
    Subclasses set ``_predictor_class`` and ``_task``."""

    _summary_class = FMTrainingSummary
    _task = "regression"

    @classmethod
    def _create(cls, arrays: dict, summary=None):
        return cls(cls._predictor_class.from_arrays(arrays), summary)

    def _outputs(self):
        if self._task == "regression":
            return [(self.getPredictionCol(), "pred")]
        return [(self.getRawPredictionCol(), "raw"), (self.getProbabilityCol(), "prob"),
                (self.getPredictionCol(), "pred")]

    def _transform_validated(self, dataset):
        if self._predictor is None:
            raise RuntimeError("this model has no parameters (was it constructed directly?)")
        fcol = self.getFeaturesCol()
        check_vector_column(dataset, fcol)
        outs = self._outputs()
        check_output_columns(dataset.columns, outs)
        schema = T.StructType(list(dataset.schema.fields)
                              + [T.StructField(n, VectorUDT() if k in ("raw", "prob")
                                               else T.DoubleType()) for n, k in outs])
        fn = make_predict_fn(self._model_kind, self._task_model(dataset), fcol,
                             self.numFeatures, self._task != "regression",
                             [k for _, k in outs], [n for n, _ in outs])
        return dataset.mapInArrow(fn, schema)


class SampledFMModel(FMModelBase):
    """An FM or FFM model whose prediction may average several parameter sets (the samples
    an MCMC fit keeps; one set for the other solvers)."""

    @property
    def numSamples(self) -> int:
        """Parameter sets averaged at prediction (MCMC samples kept; 1 otherwise)."""
        return int(self._predictor.n_samples)
