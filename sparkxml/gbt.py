"""Histogram gradient boosting on Spark: ``GBTRegressor`` and ``GBTClassifier``.

A fit runs three Spark jobs, whatever the number of trees:

1. a checks job: one SQL aggregate over every row (JVM only, no Python): row counts, label
   range, and the first offending value of each check (non-finite or non-class labels,
   negative weights, null or differently sized vectors), so bad input fails before any
   training with an error naming the column and the value;
2. a sketch job: weighted quantile summaries of a uniform sample of about 100,000 training
   rows (``DataFrame.sample``, one ``mapInArrow`` task per input partition), merged on the
   driver in partition order into at most ``maxBins`` bins per feature;
3. ONE barrier stage (``sparkxml._barrier``) over ``numWorkers`` partitions: each task bins
   its rows once (uint8), then all tasks boost in lockstep (``sparkxml_kernels.gbt.booster``),
   exchanging per-level histograms over direct authenticated sockets
   (``sparkxml_kernels.collective``); rank 0 decides the splits and returns the model arrays.

Vector columns reach Python as dense arrays made in the JVM (``vector_to_array``), which Arrow
ships ~6x faster than the VectorUDT struct. When the input already has ``numWorkers``
partitions the barrier stage reads them as they are; otherwise it repartitions round-robin.

Same ``seed``, same data: the same model whatever ``numWorkers`` (bin edges come from the input
partitions, row subsampling hashes global row ids, histogram sums are reduced in a fixed order
and near-tied splits are resolved the same way), up to floating-point rounding.

Models predict with compiled tree traversal on raw features inside ``mapInArrow`` and save as
plain arrays (``modelKind`` "gbt"): ``sparkxml_kernels.load_model(path)`` serves them without
Spark.
"""
from __future__ import annotations

import os
import time

import numpy as np
from pyspark import keyword_only
import pyarrow as pa
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import DenseVector, VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml_kernels.gbt import binning
from sparkxml_kernels.gbt.predictor import ARRAY_KEYS, MAX_OUTPUTS, TreeEnsemblePredictor

from ._barrier import RESULT_SCHEMA, decode_arrays, run_barrier_training
from ._compat import to_arrow
from ._gbt_tasks import (ROW_ID, _address_hook, _make_load_fn, _make_predict_fn,
                         _make_sketch_task, _make_train_fn, _spec_columns)
from .base import SparkXMLEstimator, SparkXMLModel
from .params import (HasColsampleByTree, HasEarlyStoppingRounds, HasEvalMetric,
                     HasFeaturesCol, HasFeaturesCols, HasGrowPolicy, HasLabelCol, HasMaxBins,
                     HasMaxDepth, HasMaxIter, HasMaxLeaves, HasMinChildWeight, HasMinSplitLoss,
                     HasNumClasses, HasNumWorkers, HasPredictionCol, HasProbabilityCol,
                     HasRawPredictionCol, HasRegAlpha, HasRegLambda, HasSeed, HasStepSize,
                     HasSubsamplingRate, HasTimeoutSeconds, HasValidationIndicatorCol,
                     HasWeightCol)
from .session import default_parallelism

__all__ = ["GBTRegressor", "GBTRegressionModel", "GBTClassifier", "GBTClassificationModel",
           "GBTTrainingSummary"]

# Bin edges come from a uniform sample of about this many training rows (all rows when there
# are fewer), as LightGBM does (it bins from 200,000 rows): the sketch job then ships a tenth
# of a 1M-row input through Arrow and sorts a tenth of it. The quantile error of the sample,
# about 0.5 / sqrt(100000) = 0.16% of the rows, is under half a bin of 256.
_SKETCH_SAMPLE_ROWS = 100_000
# values a sketch task holds before it summarises them (64 MiB of float64)
_SKETCH_CHUNK_VALUES = 8 << 20
# With numWorkers unset, one worker per this many training rows, up to the parallelism.
_ROWS_PER_DEFAULT_WORKER = 50_000
# the dense-array copy of a vector column that transform hands to its Python tasks
_X_COL = "__sparkxml_features"
_REGRESSION_METRICS = ("rmse",)
_BINARY_METRICS = ("logloss", "error", "auc")
_MULTI_METRICS = ("mlogloss",)


# ============================================================================ params
class _GBTParams(HasFeaturesCol, HasFeaturesCols, HasLabelCol, HasWeightCol, HasPredictionCol,
                 HasMaxIter, HasStepSize, HasMaxDepth, HasMaxLeaves, HasGrowPolicy, HasMaxBins,
                 HasRegLambda, HasRegAlpha, HasMinSplitLoss, HasMinChildWeight,
                 HasSubsamplingRate, HasColsampleByTree, HasSeed, HasNumWorkers,
                 HasValidationIndicatorCol, HasEarlyStoppingRounds, HasEvalMetric,
                 HasTimeoutSeconds):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", predictionCol="prediction",
                         maxIter=100, stepSize=0.1, maxDepth=6, maxLeaves=0,
                         growPolicy="depthwise", maxBins=256, regLambda=1.0, regAlpha=0.0,
                         minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                         colsampleByTree=1.0, seed=0, earlyStoppingRounds=0,
                         timeoutSeconds=600.0)

    def _features_spec(self) -> dict:
        if self.isSet(self.featuresCols) and self.getFeaturesCols():
            return {"kind": "columns", "cols": list(self.getFeaturesCols())}
        return {"kind": "vector", "col": self.getFeaturesCol()}

    def _opt(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None


class _GBTClassifierParams(_GBTParams, HasRawPredictionCol, HasProbabilityCol, HasNumClasses):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(rawPredictionCol="rawPrediction", probabilityCol="probability")


_COMMON_PARAMS = ("featuresCol", "featuresCols", "labelCol", "weightCol", "predictionCol",
                  "maxIter", "stepSize", "maxDepth", "maxLeaves", "growPolicy", "maxBins",
                  "regLambda", "regAlpha", "minSplitLoss", "minChildWeight", "subsamplingRate",
                  "colsampleByTree", "seed", "numWorkers", "validationIndicatorCol",
                  "earlyStoppingRounds", "evalMetric", "timeoutSeconds")
_CLASSIFIER_PARAMS = ("rawPredictionCol", "probabilityCol", "numClasses")


def _add_setters(cls, names):
    for name in names:
        setter = "set" + name[0].upper() + name[1:]
        if not hasattr(cls, setter):
            def _set(self, value, _name=name):
                return self._set(**{_name: value})
            _set.__name__ = setter
            _set.__doc__ = f"Set ``{name}``."
            setattr(cls, setter, _set)
    return cls


def _feature_exprs(spec):
    """Projection of the feature columns for the Python tasks: a vector column becomes a dense
    array<double> in the JVM (``vector_to_array``; ~6x cheaper to ship through Arrow than the
    VectorUDT struct, and the binned matrix is dense anyway); numeric columns become double."""
    if spec["kind"] == "vector":
        return [vector_to_array(F.col(spec["col"])).alias(spec["col"])]
    return [F.col(c).cast("double").alias(c) for c in spec["cols"]]


def _finite(c):
    return (~F.isnan(c)) & (F.abs(c) != float("inf"))


def _data_checks(dataset, spec, label, weight, valid, task, extra=None) -> dict:
    """One aggregate job (JVM only, no Python) over every row: counts, label range, and the
    first offending value of each check, so that bad input fails before training with an
    error naming the column and the value. ``extra`` (name -> aggregate Column; LambdaMART's
    ranking checks) rides along in the same job; its values come back in ``["extra"]``."""
    L = F.col(label).cast("double")
    aggs = [F.count(F.lit(1)).alias("n"),
            F.sum(F.col(label).isNull().cast("long")).alias("label_null"),
            F.first(F.when(~_finite(L), L), ignorenulls=True).alias("label_bad"),
            F.max(F.when(_finite(L), L)).alias("label_max")]
    if task != "regression":
        aggs.append(F.first(F.when(_finite(L) & ((L != F.floor(L)) | (L < 0)), L),
                            ignorenulls=True).alias("label_nonclass"))
    if task == "classification":  # (HyperLogLog: a few % error, no shuffle)
        aggs.append(F.approx_count_distinct(F.when(_finite(L), L)).alias("label_distinct"))
    train = F.lit(True) if valid is None else ~F.col(valid)
    wexpr = F.lit(1.0) if weight is None else F.col(weight).cast("double")
    if weight is not None:
        aggs += [F.sum(F.col(weight).isNull().cast("long")).alias("weight_null"),
                 F.first(F.when(~_finite(wexpr) | (wexpr < 0), wexpr),
                         ignorenulls=True).alias("weight_bad")]
    if valid is not None:
        aggs += [F.sum(F.col(valid).isNull().cast("long")).alias("valid_null"),
                 F.sum(F.col(valid).cast("long")).alias("n_valid")]
    aggs.append(F.sum(F.when(train, wexpr).otherwise(0.0)).alias("weight_train"))
    if spec["kind"] == "vector":
        # (null first: vector_to_array fails on a null vector with a bare JVM error)
        size = F.when(F.col(spec["col"]).isNotNull(),
                      F.size(vector_to_array(F.col(spec["col"]))))
        aggs += [F.sum(F.col(spec["col"]).isNull().cast("long")).alias("features_null"),
                 F.min(size).alias("d_min"), F.max(size).alias("d_max")]
    aggs += [c.alias(name) for name, c in (extra or {}).items()]
    r = dataset.agg(*aggs).collect()[0].asDict()
    n = int(r["n"] or 0)
    if n == 0:
        raise ValueError("the training DataFrame is empty")
    if r["label_null"]:
        raise ValueError(f"labelCol: column '{label}' has {r['label_null']} null value(s)")
    if r["label_bad"] is not None:
        raise ValueError(f"labelCol: column '{label}' holds the non-finite value "
                         f"{float(r['label_bad'])!r}")
    if r.get("label_nonclass") is not None:
        raise ValueError(f"labelCol: column '{label}' holds the value "
                         f"{float(r['label_nonclass'])!r}; class labels must be integers 0, 1, "
                         f"..., numClasses-1")
    if r.get("weight_null"):
        raise ValueError(f"weightCol: column '{weight}' has {r['weight_null']} null value(s)")
    if r.get("weight_bad") is not None:
        raise ValueError(f"weightCol: column '{weight}' holds the value "
                         f"{float(r['weight_bad'])!r}; weights must be finite and >= 0")
    if r.get("valid_null"):
        raise ValueError(f"validationIndicatorCol: column '{valid}' has {r['valid_null']} null "
                         f"value(s)")
    if spec["kind"] == "vector":
        if r["features_null"]:
            raise ValueError(f"featuresCol: column '{spec['col']}' has {r['features_null']} "
                             f"null vector(s)")
        if r["d_min"] != r["d_max"]:
            raise ValueError(f"featuresCol: column '{spec['col']}' holds vectors of different "
                             f"sizes: {r['d_min']} and {r['d_max']}")
        d = int(r["d_max"])
    else:
        d = len(spec["cols"])
    n_valid = int(r.get("n_valid") or 0)
    return {"n": n, "n_valid": n_valid, "n_train": n - n_valid, "d": d,
            "label_max": r["label_max"], "label_distinct": r.get("label_distinct"),
            "weight_train": float(r["weight_train"] or 0.0),
            "extra": {name: r[name] for name in (extra or {})}}


def _sketch_pass(dataset, spec, weight, valid, stats, max_bins, seed):
    """Bin edges from a uniform sample of at most ``_SKETCH_SAMPLE_ROWS`` training rows:
    ``DataFrame.sample`` (deterministic for a given input and seed, whatever numWorkers), then
    one ``mapInArrow`` job summarising each partition; the driver merges in partition order."""
    src = dataset if valid is None else dataset.filter(~F.col(valid))
    cols = _feature_exprs(spec)
    if weight is not None:
        cols.append(F.col(weight).cast("double").alias(weight))
    src = src.select(*cols)
    fraction = _SKETCH_SAMPLE_ROWS / max(stats["n_train"], 1)
    if fraction < 1.0:
        src = src.sample(withReplacement=False, fraction=fraction, seed=int(seed) & 0x7FFFFFFF)
    fn = _make_sketch_task(spec, weight, stats["d"], max_bins, _SKETCH_CHUNK_VALUES)
    table = to_arrow(src.mapInArrow(fn, RESULT_SCHEMA))
    ranks = table.column("rank").to_numpy()
    sketches, infos = [], []
    for r in sorted(set(ranks.tolist())):
        arrays, info = decode_arrays(table.filter(pa.array(ranks == r)))
        infos.append(info[0])
        if arrays:
            sketches.append(binning.Sketch.from_arrays(arrays))
    if not sketches:
        raise ValueError("no training rows to compute bin edges from")
    merged = binning.merge_sketches(sketches) if len(sketches) > 1 else sketches[0]
    return merged, infos


# ============================================================================ summary
class GBTTrainingSummary:
    """What a fit reports: per-round validation metric, best iteration, timings, workers.

    Attributes
    ----------
    metricName : str
    validationHistory : list of float
        Validation metric after each round (empty without ``validationIndicatorCol``).
    bestIteration : int
        0-based round of the best validation score (the last round without validation).
    bestScore : float or None
    numRounds : int
        Rounds kept in the model (``bestIteration + 1`` with early stopping).
    roundsRun : int
    trainingSeconds : float
        Wall time of the barrier stage (driver view).
    workerInfo : list of dict
        Per rank: rows, binned/float bytes, peak RSS, load/train seconds, bytes exchanged.
    checksSeconds, sketchSeconds : float
        Wall time of the checks job and of the sketch job (after a fit only).
    sketchInfo : list of dict
        Per input partition of the sketch job: sampled rows, seconds (after a fit only).
    """

    def __init__(self, history: dict, training_seconds: float = 0.0, worker_info=None):
        ev = history.get("eval") or []
        self.metricName = history.get("metric")
        self.validationHistory = [float(x) for x in (ev[-1] if ev else [])]
        bi = history.get("best_iteration")
        self.bestIteration = int(bi) if bi is not None else None
        bs = history.get("best_score")
        self.bestScore = None if bs is None else float(bs)
        self.numRounds = int(history.get("n_rounds", 0))
        self.roundsRun = int(history.get("rounds_run", 0))
        self.trainingSeconds = float(training_seconds)
        self.workerInfo = list(worker_info or [])
        self.checksSeconds = self.sketchSeconds = None
        self.sketchInfo = []

    @classmethod
    def _from_fit(cls, result, checks_seconds, sketch_seconds, sketch_info=()):
        """A fit's summary from its barrier stage's result (rank 0 reports the history) and
        the times of the jobs before it."""
        history = result.infos[0].get("history", {})
        for info in result.infos:
            info.pop("history", None)
        summary = cls(history, result.seconds, result.infos)
        summary.checksSeconds = checks_seconds
        summary.sketchSeconds = sketch_seconds
        summary.sketchInfo = list(sketch_info)
        return summary

    def _to_arrays(self) -> dict:
        return {"summary.validationHistory": np.asarray(self.validationHistory, np.float64),
                "summary.rounds": np.asarray([self.bestIteration if self.bestIteration is not None
                                              else -1, self.numRounds, self.roundsRun],
                                             np.int64),
                "summary.metricName": np.asarray(self.metricName or "")}

    @classmethod
    def _from_arrays(cls, arrays):
        if "summary.rounds" not in arrays:
            return None
        bi, nr, rr = (int(x) for x in arrays["summary.rounds"])
        hist = [float(x) for x in arrays["summary.validationHistory"]]
        return cls({"metric": str(arrays["summary.metricName"]) or None, "eval": [hist],
                    "best_iteration": None if bi < 0 else bi, "n_rounds": nr, "rounds_run": rr,
                    "best_score": None})

    def __repr__(self):
        return (f"GBTTrainingSummary(metric={self.metricName}, rounds={self.numRounds}, "
                f"bestIteration={self.bestIteration}, bestScore={self.bestScore})")


# ============================================================================ estimators
def _workers_for(spark, stats: dict, valid, n_workers):
    """Check the data-check job's row counts; return the worker count (``n_workers``, or the
    default: the session's parallelism, but no more workers than the data pays for: every
    tree level exchanges d x maxBins histograms per node whatever the rows, so on small data
    extra workers only add communication and the ~1 s allGather)."""
    if stats["n_train"] == 0 or stats["weight_train"] <= 0:
        raise ValueError("no training rows with a positive weight"
                         + (f" (validationIndicatorCol '{valid}' marks every row)"
                            if valid else ""))
    if valid is not None and stats["n_valid"] == 0:
        raise ValueError(f"validationIndicatorCol: column '{valid}' marks no row as "
                         f"validation")
    if n_workers is None:
        n_workers = max(1, min(default_parallelism(spark),
                               -(-stats["n_train"] // _ROWS_PER_DEFAULT_WORKER)))
        _check_slots(spark, n_workers)
    return n_workers


class _GBTEstimator(SparkXMLEstimator):
    _task = "regression"
    # test hook: dict(rank, after_round, kind, marker, seconds), see _gbt_tasks
    _fault_injection = None

    def _booster_params(self, max_bins: int) -> dict:
        """The tree/boosting params every GBT-engine estimator passes to ``booster.train``."""
        return {
            "maxIter": self.getMaxIter(), "stepSize": self.getStepSize(),
            "maxDepth": self.getMaxDepth(), "maxLeaves": self.getMaxLeaves(),
            "growPolicy": self.getGrowPolicy(), "regLambda": self.getRegLambda(),
            "regAlpha": self.getRegAlpha(), "minSplitLoss": self.getMinSplitLoss(),
            "minChildWeight": self.getMinChildWeight(),
            "subsamplingRate": self.getSubsamplingRate(),
            "colsampleByTree": self.getColsampleByTree(), "seed": int(self.getSeed()),
            "maxBins": max_bins, "earlyStoppingRounds": self.getEarlyStoppingRounds(),
        }

    def _fit_validated(self, dataset):
        spark = dataset.sparkSession
        spec = self._features_spec()
        label = self.getLabelCol()
        weight = self._opt(self.weightCol) or None
        valid = self._opt(self.validationIndicatorCol) or None
        self._check_schema(dataset, spec, label, weight, valid)
        if self.getEarlyStoppingRounds() > 0 and valid is None:
            raise ValueError("earlyStoppingRounds > 0 needs validationIndicatorCol")
        self._check_policy()
        n_workers = self._opt(self.numWorkers)
        if n_workers is not None:
            _check_slots(spark, n_workers)
        max_bins = self.getMaxBins()
        t0 = time.perf_counter()
        stats = _data_checks(dataset, spec, label, weight, valid, self._task)
        d = stats["d"]
        objective, n_classes, metric = self._objective(label, stats["label_max"],
                                                       stats["label_distinct"])
        n_workers = _workers_for(spark, stats, valid, n_workers)
        checks_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        sketch, infos = _sketch_pass(dataset, spec, weight, valid, stats, max_bins,
                                     self.getSeed())
        sketch_seconds = time.perf_counter() - t0
        edges = binning.edges_from_sketch(sketch, max_bins)
        params = dict(self._booster_params(max_bins), objective=objective,
                      numClasses=n_classes, evalMetric=metric)
        cols = _feature_exprs(spec) + [F.col(label).cast("double").alias(label)]
        if weight is not None:
            cols.append(F.col(weight).cast("double").alias(weight))
        if valid is not None:
            cols.append(F.col(valid))
        df = dataset.select(*cols).withColumn(ROW_ID, F.monotonically_increasing_id())
        fault = dict(self._fault_injection) if self._fault_injection else None
        result = run_barrier_training(
            df, n_workers, _make_load_fn(spec, label, weight, valid, edges, d),
            _make_train_fn(edges, params, fault), timeout_s=self.getTimeoutSeconds(),
            # the sketch ran on the training rows only: with a validation column its
            # partitions need not be the input's (a filter on a literal prunes a union branch)
            repartition=valid is not None or _needs_repartition(infos, n_workers),
            on_addresses=_address_hook(fault))
        predictor = TreeEnsemblePredictor.from_arrays(result.arrays)
        summary = GBTTrainingSummary._from_fit(result, checks_seconds, sketch_seconds, infos)
        return self._model_class(predictor, summary)

    # ------------------------------------------------------------------ checks
    def _check_schema(self, dataset, spec, label, weight, valid):
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        numeric = (T.NumericType,)

        def need(name, param, kinds, what):
            if name not in fields:
                raise ValueError(f"{param}: column '{name}' is not in the DataFrame (columns: "
                                 f"{list(fields)})")
            if not isinstance(fields[name], kinds):
                raise TypeError(f"{param}: column '{name}' must be {what}, got "
                                f"{fields[name].simpleString()}")

        if spec["kind"] == "vector":
            need(spec["col"], "featuresCol", (VectorUDT,), "a Spark ML vector (VectorUDT)")
        else:
            for c in spec["cols"]:
                need(c, "featuresCols", numeric + (T.BooleanType,), "numeric")
        need(label, "labelCol", numeric, "numeric")
        if weight:
            need(weight, "weightCol", numeric, "numeric")
        if valid:
            need(valid, "validationIndicatorCol", (T.BooleanType,), "boolean")
        if ROW_ID in fields:
            raise ValueError(f"column name '{ROW_ID}' is reserved")

    def _check_policy(self):
        if self.getGrowPolicy() == "depthwise" and self.getMaxDepth() < 1:
            raise ValueError("maxDepth must be >= 1 with growPolicy 'depthwise'")
        if self.getGrowPolicy() == "lossguide":
            if self.getMaxLeaves() == 1:
                raise ValueError("maxLeaves must be 0 (no limit) or >= 2")
            if self.getMaxDepth() == 0 and self.getMaxLeaves() == 0:
                raise ValueError("growPolicy 'lossguide' needs maxDepth > 0 or maxLeaves > 0")

    def _objective(self, label, label_max, distinct=None):
        metric = self._opt(self.evalMetric)
        if metric is not None and metric not in _REGRESSION_METRICS:
            raise ValueError(f"evalMetric '{metric}' does not apply to regression; use one of "
                             f"{list(_REGRESSION_METRICS)}")
        return "squared_error", 2, metric


def _needs_repartition(sketch_infos, n_workers) -> bool:
    """The sketch job ran one task per input partition (empty ones too) over a uniform sample:
    when the input already has ``n_workers`` partitions of about equal size (sampled counts
    within 25% of the mean), train on them as they are and skip the shuffle."""
    counts = np.array([i["n"] for i in sketch_infos], np.float64)
    if counts.size != n_workers or counts.min() <= 0:
        return True
    return bool(counts.max() > 1.25 * counts.mean())


def _check_slots(spark, n_workers):
    """Barrier stages need all tasks at once: refuse more workers than a local master has."""
    try:
        master = spark.conf.get("spark.master", "") or ""
    except Exception:
        master = ""
    if not master.startswith("local"):
        return
    inner = master[master.find("[") + 1: master.find("]")] if "[" in master else "1"
    inner = inner.split(",")[0].strip()
    slots = (os.cpu_count() or 1) if inner == "*" else int(inner)
    try:
        cpus = int(spark.conf.get("spark.task.cpus", "1") or 1)
    except Exception:
        cpus = 1
    slots = max(1, slots // max(cpus, 1))
    if n_workers > slots:
        raise ValueError(f"numWorkers={n_workers} exceeds the {slots} task slots of this "
                         f"session ({master}); training runs all workers at once (barrier "
                         f"mode): lower numWorkers")


class GBTRegressor(_GBTEstimator, _GBTParams):
    """Histogram gradient-boosted regression trees (squared error), trained in one barrier
    stage.

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (dense or sparse; absent = 0.0, NaN = missing).
    featuresCols : list of str, optional
        Numeric columns used instead of ``featuresCol`` (null = missing).
    labelCol : str, default "label"
    weightCol : str, optional
        Non-negative row weights.
    predictionCol : str, default "prediction"
    maxIter : int, default 100
        Boosting rounds.
    stepSize : float, default 0.1
        Learning rate, in (0, 1].
    maxDepth : int, default 6
    maxLeaves : int, default 0
        Leaf limit for ``growPolicy='lossguide'`` (0 = none).
    growPolicy : {"depthwise", "lossguide"}, default "depthwise"
    maxBins : int, default 256
        Histogram bins per feature, 2..256 (256 = 255 value bins + missing).
    regLambda, regAlpha : float, default 1.0, 0.0
        L2 / L1 regularisation of leaf weights.
    minSplitLoss : float, default 0.0
        Minimum gain of a split (XGBoost's gamma).
    minChildWeight : float, default 1.0
        Minimum hessian sum of a child.
    subsamplingRate, colsampleByTree : float, default 1.0
        Row / feature fraction per tree.
    seed : int, default 0
    numWorkers : int, optional
        Barrier tasks; all must run at once. Default: the session's default parallelism,
        capped at one worker per 50,000 training rows (on small data more workers only add
        communication).
    validationIndicatorCol : str, optional
        Boolean column: true rows are the validation set (not trained on).
    earlyStoppingRounds : int, default 0
        Stop when the validation metric has not improved for this many rounds; the model
        keeps the best round.
    evalMetric : str, optional
        "rmse" (default).
    timeoutSeconds : float, default 600
        Bound on every wait for a peer task; a silent peer fails the stage in this time.

    Examples
    --------
    >>> model = GBTRegressor(maxIter=50, numWorkers=2).fit(train_df)
    >>> model.transform(test_df).select("prediction")
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", maxIter=100, stepSize=0.1,
                 maxDepth=6, maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                 regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                 colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                 earlyStoppingRounds=0, evalMetric=None, timeoutSeconds=600.0):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", maxIter=100, stepSize=0.1,
                  maxDepth=6, maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                  regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                  colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                  earlyStoppingRounds=0, evalMetric=None, timeoutSeconds=600.0):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBTRegressionModel


class GBTClassifier(_GBTEstimator, _GBTClassifierParams):
    """Histogram gradient-boosted classification trees: logistic loss for two classes, softmax
    (one tree per class per round) for more. Labels are 0, 1, ..., numClasses-1.

    Takes every parameter of :class:`GBTRegressor`, plus:

    rawPredictionCol : str, default "rawPrediction"
        Vector of raw scores: [-margin, margin] for two classes (as Spark ML), the K class
        scores otherwise.
    probabilityCol : str, default "probability"
        Vector of class probabilities.
    numClasses : int, optional
        Number of classes, 2..10000 (default: largest label + 1, at least 2; refused before
        training when that exceeds 10000 or twice the number of distinct labels plus 10).
    evalMetric : str, optional
        Two classes: "logloss" (default), "error", "auc"; more: "mlogloss" (default).
    """

    _task = "classification"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", maxIter=100, stepSize=0.1, maxDepth=6,
                 maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0, regAlpha=0.0,
                 minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0, colsampleByTree=1.0,
                 seed=0, numWorkers=None, validationIndicatorCol=None, earlyStoppingRounds=0,
                 evalMetric=None, numClasses=None, timeoutSeconds=600.0):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                  probabilityCol="probability", maxIter=100, stepSize=0.1, maxDepth=6,
                  maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                  regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                  colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                  earlyStoppingRounds=0, evalMetric=None, numClasses=None,
                  timeoutSeconds=600.0):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBTClassificationModel

    def _objective(self, label, label_max, distinct=None):
        k = self._opt(self.numClasses)
        if k is None:
            k = _inferred_classes(label, label_max, distinct)
        elif label_max >= k:
            raise ValueError(f"labelCol: column '{label}' holds the label {label_max!r}, "
                             f"outside 0..{k - 1} (numClasses={k})")
        metric = self._opt(self.evalMetric)
        allowed = _BINARY_METRICS if k == 2 else _MULTI_METRICS
        if metric is not None and metric not in allowed:
            raise ValueError(f"evalMetric '{metric}' does not apply to {k} classes; use one of "
                             f"{list(allowed)}")
        return ("logistic" if k == 2 else "softmax"), int(k), metric


def _inferred_classes(label, label_max, distinct) -> int:
    """numClasses from the largest label (at least 2), refused before any training when it
    exceeds ``MAX_OUTPUTS`` or is much larger than the number of distinct labels (a softmax
    grows one tree per class per round: labels such as 0, 1, 10**9 would need a billion)."""
    k = max(2, int(min(label_max, 2.0**62)) + 1)
    if k > MAX_OUTPUTS:
        raise ValueError(f"labelCol: column '{label}' holds the label {label_max!r}, so "
                         f"numClasses would be {k}, above the limit of {MAX_OUTPUTS} classes; "
                         f"class labels must be 0, 1, ..., numClasses-1 (re-index them, e.g. "
                         f"with StringIndexer)")
    if distinct is not None and k > 2 * int(distinct) + 10:
        raise ValueError(f"labelCol: column '{label}' holds the label {label_max!r}, so "
                         f"numClasses would be {k}, but only about {int(distinct)} distinct "
                         f"labels occur: re-index the labels to 0..{int(distinct) - 1} (e.g. "
                         f"with StringIndexer), or set numClasses explicitly to train {k} "
                         f"classes anyway")
    return k


_add_setters(GBTRegressor, _COMMON_PARAMS)
_add_setters(GBTClassifier, _COMMON_PARAMS + _CLASSIFIER_PARAMS)


# ============================================================================ models
class _GBTModelBase(SparkXMLModel):
    _model_kind = "gbt"
    _required_arrays = tuple(k for k in ARRAY_KEYS if k != "tree_outputs")

    def __init__(self, predictor: TreeEnsemblePredictor | None = None,
                 summary: GBTTrainingSummary | None = None):
        super().__init__()
        self._predictor = predictor
        self._summary = summary

    # ------------------------------------------------------------------ attributes
    @property
    def predictor(self) -> TreeEnsemblePredictor:
        """The JVM-free predictor (``predict_raw(X)`` on numpy / CSR input)."""
        return self._predictor

    @property
    def numFeatures(self) -> int:
        return int(self._predictor.n_features)

    @property
    def getNumTrees(self) -> int:
        """Number of trees (rounds x classes for multiclass), as pyspark's GBT models."""
        return int(self._predictor.n_trees)

    @property
    def totalNumNodes(self) -> int:
        return int(self._predictor.feature.size)

    @property
    def featureImportances(self) -> DenseVector:
        """Total split gain per feature, normalised to sum 1 (Spark ML's convention)."""
        return DenseVector(self._predictor.feature_importances("gain", normalize=True))

    @property
    def hasSummary(self) -> bool:
        return self._summary is not None

    @property
    def summary(self) -> GBTTrainingSummary:
        if self._summary is None:
            raise RuntimeError("no training summary available for this model")
        return self._summary

    # ------------------------------------------------------------------ persistence
    def _save_arrays(self) -> dict:
        arrays = dict(self._predictor.to_arrays())
        if self._summary is not None:
            arrays.update(self._summary._to_arrays())
        return arrays

    @classmethod
    def _from_arrays(cls, arrays: dict, path: str):
        from sparkxml_kernels.persist import ModelFormatError

        try:
            predictor = TreeEnsemblePredictor.from_arrays(arrays)
        except ValueError as e:
            raise ModelFormatError(f"{path}: {e}") from None
        return cls(predictor, GBTTrainingSummary._from_arrays(arrays))

    def copy(self, extra=None):
        that = super().copy(extra)
        that._predictor = self._predictor
        that._summary = self._summary
        return that

    # ------------------------------------------------------------------ transform
    def _outputs(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform_validated(self, dataset):
        if self._predictor is None:
            raise RuntimeError("this model has no trees (was it constructed directly?)")
        spec = self._features_spec()
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        for c in _spec_columns(spec):
            if c not in fields:
                raise ValueError(f"column '{c}' is not in the DataFrame (columns: "
                                 f"{list(fields)})")
        if spec["kind"] == "vector" and not isinstance(fields[spec["col"]], VectorUDT):
            raise TypeError(f"featuresCol: column '{spec['col']}' must be a Spark ML vector")
        outs = self._outputs()
        for name, _ in outs:
            if name in fields:
                raise ValueError(f"output column '{name}' already exists in the DataFrame")
        handle = self._task_model(dataset)  # not the trees themselves: see sparkxml._serving
        n_features = self.numFeatures
        kinds = [k for _, k in outs]
        schema = T.StructType(list(dataset.schema.fields)
                              + [T.StructField(n, VectorUDT() if k in ("raw", "prob")
                                               else T.DoubleType()) for n, k in outs])
        names = [n for n, _ in outs]
        drop = None
        if spec["kind"] == "vector":
            # the task reads the features as a dense array made in the JVM (see _feature_exprs)
            dataset = dataset.withColumn(_X_COL, vector_to_array(F.col(spec["col"])))
            spec, drop = {"kind": "vector", "col": _X_COL}, _X_COL
        predict = _make_predict_fn(handle, spec, n_features, kinds, names, drop)
        return dataset.mapInArrow(predict, schema)


class GBTRegressionModel(_GBTModelBase, _GBTParams):
    """Fitted :class:`GBTRegressor`: adds ``predictionCol`` (double)."""

    def _outputs(self):
        return [(self.getPredictionCol(), "pred")]


class GBTClassificationModel(_GBTModelBase, _GBTClassifierParams):
    """Fitted :class:`GBTClassifier`: adds ``rawPredictionCol`` (vector), ``probabilityCol``
    (vector) and ``predictionCol`` (double, the most probable class), as Spark ML's
    classifiers."""

    @property
    def numClasses(self) -> int:
        k = int(self._predictor.n_outputs)
        return 2 if k == 1 else k

    def _outputs(self):
        return [(self.getRawPredictionCol(), "raw"), (self.getProbabilityCol(), "prob"),
                (self.getPredictionCol(), "pred")]


_add_setters(GBTRegressionModel, ("featuresCol", "featuresCols", "predictionCol"))
_add_setters(GBTClassificationModel, ("featuresCol", "featuresCols", "predictionCol",
                                      "rawPredictionCol", "probabilityCol"))
