"""Histogram gradient boosting on Spark: ``GBTRegressor`` and ``GBTClassifier``.

A fit runs three Spark jobs, whatever the number of trees:

1. a checks job: one SQL aggregate over every row (JVM only, no Python): row counts, label
   range, and the first offending value of each check (non-finite or non-class labels,
   negative weights, null vectors), so bad input fails before any training with an error
   naming the column and the value. A vector column's size comes from its metadata or first
   row; the Python tasks check every vector against it (sizing each vector in the JVM made
   an array per row: most of this job's time);
2. a sketch job: weighted quantile summaries of a uniform sample of about 100,000 training
   rows (``DataFrame.sample``, one ``mapInArrow`` task per input partition), merged on the
   driver in partition order into at most ``maxBins`` bins per feature;
3. ONE barrier stage (``sparkxml._core.barrier``) over ``numWorkers`` partitions: each task bins
   its rows once (uint8), then all tasks boost in lockstep (``sparkxml_kernels.gbt.booster``),
   exchanging per-level histograms over direct authenticated sockets
   (``sparkxml_kernels.collective``); rank 0 decides the splits and returns the model arrays.

Vector columns reach Python as dense arrays made in the JVM (``vector_to_array``), which Arrow
ships ~6x faster than the VectorUDT struct. When the input already has ``numWorkers``
partitions the barrier stage reads them as they are; otherwise it repartitions round-robin,
except with numWorkers=1, where one plain (non-barrier) task reads every input partition in
turn (``coalesce(1)``): no shuffle of all rows into one partition.

Same ``seed``, same data: the same model whatever ``numWorkers`` (bin edges come from the input
partitions, row subsampling hashes global row ids, histogram sums are reduced in a fixed order
and near-tied splits are resolved the same way), up to floating-point rounding.

Every job runs labelled with the fit's job group, a description of its phase ("checks",
"sketch", "train") and tags (``sparkxml._core.progress``); with ``verbose = N`` rank 0 sends a log
line every N rounds to the driver while the stage runs.

Models predict with compiled tree traversal on raw features inside ``mapInArrow`` and save as
plain arrays (``modelKind`` "gbt"): ``sparkxml_kernels.load_model(path)`` serves them without
Spark. They also behave as Spark MLlib's tree-ensemble models (``sparkxml.gbt.models``:
``evaluate``, ``evaluateEachIteration``, one-vector predictions, ``trees``,
``toDebugString``) and offer SHAP contributions, leaf indices and JSON dumps.
"""
from __future__ import annotations

import time

from pyspark import keyword_only
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.base import SparkXMLEstimator

# shared with LambdaMART, trees and forests; still importable from here
from sparkxml._core.histogram_engine import (
    check_schema,
    data_checks,
    finite_col,
    sketch_pass,
    training_columns,
)
from sparkxml._core.histogram_tasks import ROW_ID, make_load_fn
from sparkxml._core.params import (
    HasEarlyStoppingRounds,
    HasFeaturesCol,
    HasFeaturesCols,
    HasLabelCol,
    HasMaxIter,
    HasNumWorkers,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasSeed,
    HasStepSize,
    HasSubsamplingRate,
    HasThresholds,
    HasTimeoutSeconds,
    HasValidationIndicatorCol,
    HasVerbose,
    HasWeightCol,
    add_setters,
)
from sparkxml._core.progress import FitProgress
from sparkxml._core.workers import check_slots, needs_repartition, workers_for
from sparkxml.gbt import features as _gbt_features
from sparkxml.gbt.models import GBTModelBase, _feature_names, single_row_classifier_api
from sparkxml.gbt.params import (
    HasBaseMarginCol,
    HasCategoricalCols,
    HasCatL2,
    HasCatSmooth,
    HasColsampleByTree,
    HasEvalMetric,
    HasGrowPolicy,
    HasInitModel,
    HasLeafCol,
    HasMaxBins,
    HasMaxCatThreshold,
    HasMaxCatToOnehot,
    HasMaxDepth,
    HasMaxLeaves,
    HasMinChildWeight,
    HasMinSplitLoss,
    HasMissing,
    HasMonotoneConstraints,
    HasNthread,
    HasNumClasses,
    HasPredContribCol,
    HasRegAlpha,
    HasRegLambda,
    HasScalePosWeight,
)
from sparkxml.gbt.summary import (
    GBTClassificationEvaluation,
    GBTRegressionEvaluation,
    GBTTrainingSummary,
)
from sparkxml.gbt.tasks import _make_train_fn, address_hook
from sparkxml_kernels.gbt.predictor import MAX_OUTPUTS, TreeEnsemblePredictor
from sparkxml_kernels.gbt.splitting import check_monotone

__all__ = ["GBTRegressor", "GBTRegressionModel", "GBTClassifier", "GBTClassificationModel",
           "GBTTrainingSummary"]

_REGRESSION_METRICS = ("rmse",)
_BINARY_METRICS = ("logloss", "error", "auc")
_MULTI_METRICS = ("mlogloss",)


# ============================================================================ params
class GBTParams(HasFeaturesCol, HasFeaturesCols, HasLabelCol, HasWeightCol, HasPredictionCol,
                 HasMaxIter, HasStepSize, HasMaxDepth, HasMaxLeaves, HasGrowPolicy, HasMaxBins,
                 HasRegLambda, HasRegAlpha, HasMinSplitLoss, HasMinChildWeight,
                 HasSubsamplingRate, HasColsampleByTree, HasSeed, HasNumWorkers,
                 HasValidationIndicatorCol, HasEarlyStoppingRounds, HasEvalMetric,
                 HasTimeoutSeconds, HasMissing, HasBaseMarginCol, HasMonotoneConstraints,
                 HasPredContribCol, HasLeafCol, HasCategoricalCols, HasMaxCatToOnehot,
                 HasCatSmooth, HasCatL2, HasMaxCatThreshold, HasNthread):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", predictionCol="prediction",
                         maxIter=100, stepSize=0.1, maxDepth=6, maxLeaves=0,
                         growPolicy="depthwise", maxBins=256, regLambda=1.0, regAlpha=0.0,
                         minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                         colsampleByTree=1.0, seed=0, earlyStoppingRounds=0,
                         timeoutSeconds=600.0, missing=float("nan"), maxCatToOnehot=4,
                         catSmooth=10.0, catL2=10.0, maxCatThreshold=32)

    def _features_spec(self) -> dict:
        if self.isSet(self.featuresCols) and self.getFeaturesCols():
            return {"kind": "columns", "cols": list(self.getFeaturesCols())}
        return {"kind": "vector", "col": self.getFeaturesCol()}


class _GBTClassifierParams(GBTParams, HasRawPredictionCol, HasProbabilityCol, HasNumClasses,
                           HasThresholds, HasScalePosWeight):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(rawPredictionCol="rawPrediction", probabilityCol="probability",
                         scalePosWeight=1.0)


COMMON_PARAMS = ("featuresCol", "featuresCols", "labelCol", "weightCol", "predictionCol",
                  "maxIter", "stepSize", "maxDepth", "maxLeaves", "growPolicy", "maxBins",
                  "regLambda", "regAlpha", "minSplitLoss", "minChildWeight", "subsamplingRate",
                  "colsampleByTree", "seed", "numWorkers", "validationIndicatorCol",
                  "earlyStoppingRounds", "evalMetric", "timeoutSeconds", "missing",
                  "baseMarginCol", "monotoneConstraints", "predContribCol", "leafCol",
                  "verbose", "initModel", "categoricalCols", "maxCatToOnehot", "catSmooth",
                  "catL2", "maxCatThreshold", "nthread")
_CLASSIFIER_PARAMS = ("rawPredictionCol", "probabilityCol", "numClasses", "thresholds",
                      "scalePosWeight")
# what a fitted model lets you change before transform
_MODEL_PARAMS = ("featuresCol", "featuresCols", "predictionCol", "predContribCol", "leafCol",
                 "missing", "baseMarginCol", "nthread")



class GBTEstimator(SparkXMLEstimator, HasVerbose, HasInitModel):
    _task = "regression"
    _fault_injection = None  # test hook: dict(rank, after_round, kind, marker, seconds)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(verbose=0)

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
            "monotoneConstraints": self._opt(self.monotoneConstraints) or None,
            "scalePosWeight": (float(self.getScalePosWeight())
                               if self.hasParam("scalePosWeight") else 1.0),
            "maxCatToOnehot": self.getMaxCatToOnehot(), "catSmooth": self.getCatSmooth(),
            "catL2": self.getCatL2(), "maxCatThreshold": self.getMaxCatThreshold(),
            # None: the task's spark.task.cpus (_gbt_tasks.task_threads)
            "nthread": self._opt(self.nthread),
        }

    def _fit_validated(self, dataset):
        spark = dataset.sparkSession
        spec = self._features_spec()
        label = self.getLabelCol()
        weight = self._opt(self.weightCol) or None
        valid = self._opt(self.validationIndicatorCol) or None
        self._check_schema(dataset, spec, label, weight, valid)
        spec = _gbt_features.with_sparse(dataset, spec)
        if self.getEarlyStoppingRounds() > 0 and valid is None:
            raise ValueError("earlyStoppingRounds > 0 needs validationIndicatorCol")
        self._check_policy()
        n_workers = self._opt(self.numWorkers)
        if n_workers is not None:
            check_slots(spark, n_workers)
        max_bins = self.getMaxBins()
        with FitProgress(spark, self, self.getVerbose()) as progress:
            t0 = time.perf_counter()
            with progress.phase("checks"):
                stats = data_checks(dataset, spec, label, weight, valid, self._task,
                                     self._margin_checks(dataset))
            d = stats["d"]
            objective, n_classes, metric = self._objective(label, stats["label_max"],
                                                           stats["label_distinct"])
            n_workers = workers_for(spark, stats, valid, n_workers)
            engine = self._engine_options(dataset, spec, stats, objective, n_classes)
            checks_seconds = time.perf_counter() - t0
            edges, infos, sketch_seconds = self._sketch_phase(progress, dataset, spec, weight,
                                                              valid, stats, engine)
            params = dict(self._booster_params(max_bins), objective=objective,
                          numClasses=n_classes, evalMetric=metric,
                          categoricalFeatures=engine["cat_ids"] or None)
            cols = training_columns(spec, label, weight, valid, engine["cols"])
            df = dataset.select(*cols).withColumn(ROW_ID, F.monotonically_increasing_id())
            fault = dict(self._fault_injection) if self._fault_injection else None
            with progress.phase("train"):
                result = run_barrier_training(
                    df, n_workers,
                    make_load_fn(spec, label, weight, valid, edges, d,
                                  options=dict(engine["load"], nthread=params["nthread"])),
                    _make_train_fn(edges, params, fault, progress=progress.task_spec()),
                    timeout_s=self.getTimeoutSeconds(),
                    # the sketch ran on the training rows only: with a validation column its
                    # partitions need not be the input's (a filter on a literal prunes a
                    # union branch)
                    repartition=valid is not None or needs_repartition(infos, n_workers),
                    on_addresses=address_hook(fault), coalesce_single=True)
            summary = GBTTrainingSummary._from_fit(result, checks_seconds, sketch_seconds,
                                                   infos)
            return self._model_from(result, engine, summary, progress)

    # ------------------------------------------------------------------ shared by the engine
    def _sketch_phase(self, progress, frame, spec, weight, valid, stats, engine):
        """The sketch job as the fit's "sketch" phase: (bin edges, per-partition infos,
        seconds)."""
        t0 = time.perf_counter()
        sketch_bins, size = _gbt_features.sketch_args(self.getMaxBins())
        with progress.phase("sketch"):
            sketch, infos = sketch_pass(frame, spec, weight, valid, stats, sketch_bins,
                                         self.getSeed(), size=size,
                                         missing=engine["load"]["missing"])
        edges, cats = _gbt_features.edges_and_categories(sketch, self.getMaxBins(),
                                                         engine["cat_ids"], engine["names"])
        engine["load"]["categories"] = cats
        return edges, infos, time.perf_counter() - t0

    def _margin_checks(self, dataset) -> dict:
        """Aggregates riding along the data-check job for ``baseMarginCol``: nulls and
        non-finite values of a double column, nulls and sizes of an array/vector one."""
        name = self._opt(self.baseMarginCol)
        if not name:
            return {}
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        if name not in fields:
            raise ValueError(f"baseMarginCol: column '{name}' is not in the DataFrame "
                             f"(columns: {list(fields)})")
        t = fields[name]
        c = F.col(name)
        if isinstance(t, T.NumericType):
            m = c.cast("double")
            return {"margin_null": F.sum(c.isNull().cast("long")),
                    "margin_bad": F.first(F.when(~finite_col(m), m), ignorenulls=True)}
        if isinstance(t, (VectorUDT, T.ArrayType)):
            arr = vector_to_array(c) if isinstance(t, VectorUDT) else c
            return {"margin_null": F.sum(c.isNull().cast("long")),
                    "margin_size_min": F.min(F.size(arr)), "margin_size_max": F.max(F.size(arr))}
        raise TypeError(f"baseMarginCol: column '{name}' must be numeric, an array or a "
                        f"vector, got {t.simpleString()}")

    def _engine_options(self, dataset, spec, stats, objective, n_classes) -> dict:
        """Checks and task options of ``missing``, ``baseMarginCol``, ``initModel`` and
        ``monotoneConstraints``, after the data-check job: ``{"load": loader options,
        "cols": extra columns for the training frame, "init": predictor or None,
        "names": feature names or None}``."""
        d = stats["d"]
        k = 1 if objective not in ("softmax",) else int(n_classes)
        r = stats["extra"]
        name = self._opt(self.baseMarginCol)
        cols = []
        if name:
            if r.get("margin_null"):
                raise ValueError(f"baseMarginCol: column '{name}' has {r['margin_null']} null "
                                 f"value(s)")
            if r.get("margin_bad") is not None:
                raise ValueError(f"baseMarginCol: column '{name}' holds the non-finite value "
                                 f"{float(r['margin_bad'])!r}")
            sizes = {r.get("margin_size_min"), r.get("margin_size_max")} - {None}
            if (sizes and sizes != {k}) or (not sizes and k != 1):
                raise ValueError(f"baseMarginCol: column '{name}' must hold {k} value(s) per "
                                 f"row (one per output), found sizes {sorted(sizes) or [1]}")
            t = dataset.schema[name].dataType
            m = F.col(name)
            cols.append((vector_to_array(m) if isinstance(t, VectorUDT)
                         else m.cast("double") if k == 1 else m.cast("array<double>"))
                        .alias(name))
        try:
            check_monotone(self._opt(self.monotoneConstraints), d)
        except ValueError as e:
            raise ValueError(f"monotoneConstraints: {e}") from None
        init = self._init_predictor(d, objective, k)
        load = {"missing": float(self.getMissing()), "margin_col": name or None,
                "n_outputs": k, "init": None if init is None else init.to_arrays()}
        cat_ids = _gbt_features.categorical_features(dataset, spec,
                                                     self._opt(self.categoricalCols), d)
        if cat_ids and self._opt(self.monotoneConstraints):
            mono = list(self.getMonotoneConstraints())
            bad = [f for f in cat_ids if f < len(mono) and mono[f]]
            if bad:
                raise ValueError(f"monotoneConstraints: categorical feature {bad[0]} cannot "
                                 f"have a monotone constraint")
        return {"load": load, "cols": cols, "init": init, "cat_ids": cat_ids,
                "names": _feature_names(dataset, spec, d)}

    def _init_predictor(self, d, objective, k):
        """The model ``initModel`` names (a fitted model or a saved path), checked against
        this fit: same features, objective and outputs."""
        init = self._opt(self.initModel)
        if init is None:
            return None
        if isinstance(init, str):
            import sparkxml_kernels

            pred = sparkxml_kernels.load_model(init)
            if not isinstance(pred, TreeEnsemblePredictor):
                raise ValueError(f"initModel: {init} is not a model of the GBT engine")
        else:
            pred = init.predictor
        if (pred.n_features, pred.objective, pred.n_outputs) != (d, objective, k):
            raise ValueError(f"initModel: the model has {pred.n_features} features, objective "
                             f"{pred.objective!r} and {pred.n_outputs} output(s); this fit has "
                             f"{d}, {objective!r} and {k}")
        return pred

    def _model_from(self, result, engine, summary, progress):
        """The fitted model: rank 0's trees (appended to ``initModel``'s), with ``missing``
        and the feature names; logs the round history when no line came back live."""
        predictor = TreeEnsemblePredictor.from_arrays(result.arrays)
        if engine["init"] is not None:
            predictor = engine["init"].concat(predictor)
        predictor = predictor.with_options(missing=self.getMissing(),
                                           feature_names=engine["names"])
        if progress.verbose > 0 and not progress.live_lines:
            progress.log_rounds(summary._rows(), self.getMaxIter())
        return self._model_class(predictor, summary)

    # ------------------------------------------------------------------ checks
    def _check_schema(self, dataset, spec, label, weight, valid):
        check_schema(dataset, spec, label, weight, valid)

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


class GBTRegressor(GBTEstimator, GBTParams):
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
        Histogram bins per feature, 2..65536 (256 = 255 value bins + missing; above 256 the
        bins are uint16, e.g. for categorical features with many categories).
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
    missing : float, default NaN
        A feature value read as missing besides NaN and null (XGBoost's ``missing``; with
        0.0 the absent entries of sparse vectors are missing too). Kept by the model.
    baseMarginCol : str, optional
        Per-row raw scores to start from instead of the base score (XGBoost's
        ``base_margin``): a double column, or an array/vector of numClasses values for
        multiclass. The model then reads the same column at transform.
    monotoneConstraints : list of int, optional
        -1 / 0 / 1 per feature (XGBoost's ``monotone_constraints``, enforced as its ``hist``
        does: a split whose children's weights break the direction is rejected and the
        descendants' weights are bounded by the midpoint of their parent split's weights).
    predContribCol : str, optional
        Output column of SHAP contributions (TreeSHAP, XGBoost's ``pred_contribs``):
        array<double> of numFeatures + 1 values, the last one the bias; per class
        array<array<double>> for multiclass. Sums to the raw prediction.
    leafCol : str, optional
        Output vector of the leaf reached in each tree (Spark MLlib's ``leafCol``).
    verbose : int, default 0
        Log one line every ``verbose`` rounds (training and validation metric, elapsed
        time) through the Python logger ``sparkxml`` at INFO, live from the training task
        (``sparkxml._core.progress``); 0 = silent. Job groups and descriptions are always set.
    initModel : model or str, optional
        Continue training from a fitted model of the same kind (or its saved path), as
        XGBoost's ``xgb_model``: the new rounds start from its raw scores and the returned
        model holds its trees followed by the new ones. Same features, objective, classes.
    categoricalCols : list of str, optional
        Features split as categories, LightGBM-style (categories sorted by gradient / hessian,
        scanned from both ends; ``sparkxml_kernels.gbt.categorical``): names in
        ``featuresCols``, or ML attribute names of the vector column, whose nominal
        attributes are categorical too. Integer values in [0, 2**31 - 1), at most as many
        categories as real bins (255 for maxBins 256; raise maxBins for more); NaN and
        categories unseen at fit go right.
    maxCatToOnehot, catSmooth, catL2, maxCatThreshold : default 4, 10.0, 10.0, 32
        LightGBM's ``max_cat_to_onehot``, ``cat_smooth`` (here in hessian units), ``cat_l2``
        and ``max_cat_threshold``.

    A vector column of 1024 slots or more travels to the tasks sparse (its stored entries)
    and is binned into sparse storage (``sparkxml.gbt.features``): memory grows with the
    non-zeros. Models with categorical splits predict, save and load as the others; SHAP
    (``predContribCol``) and dumps refuse them.
    nthread : int, optional
        Threads each training task uses for binning, histogram building and partitioning,
        and each transform task for prediction (as XGBoost's ``nthread``). Unset: the task's
        ``spark.task.cpus`` (read in the task, as xgboost.spark does). The model is the same
        whatever its value. Give a task the cores, e.g. ``spark.task.cpus=4`` with
        ``numWorkers`` = executors, or ``nthread`` <= the cores an executor has per task.

    Examples
    --------
    >>> from pyspark.ml.evaluation import RegressionEvaluator
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> y = 2 * X[:, 0] + X[:, 1]
    >>> df = from_dense(spark, X, columns={"label": y})
    >>> model = GBTRegressor(maxIter=10, maxDepth=2, stepSize=0.3, seed=0).fit(df)
    >>> model.getNumTrees, model.transform(df).columns
    (10, ['features', 'label', 'prediction'])
    >>> RegressionEvaluator().evaluate(model.transform(df)) < 0.5 * float(y.std())   # RMSE
    True
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", maxIter=100, stepSize=0.1,
                 maxDepth=6, maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                 regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                 colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                 earlyStoppingRounds=0, evalMetric=None, timeoutSeconds=600.0, missing=None,
                 baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                 leafCol=None, verbose=0, initModel=None, categoricalCols=None,
                 maxCatToOnehot=4, catSmooth=10.0, catL2=10.0, maxCatThreshold=32, nthread=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", maxIter=100, stepSize=0.1,
                  maxDepth=6, maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                  regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                  colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                  earlyStoppingRounds=0, evalMetric=None, timeoutSeconds=600.0, missing=None,
                  baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                  leafCol=None, verbose=0, initModel=None, categoricalCols=None,
                 maxCatToOnehot=4, catSmooth=10.0, catL2=10.0, maxCatThreshold=32, nthread=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBTRegressionModel


class GBTClassifier(GBTEstimator, _GBTClassifierParams):
    """Histogram gradient-boosted classification trees: logistic loss for two classes, softmax
    (one tree per class per round) for more. Labels are 0, 1, ..., numClasses-1.

    Takes every parameter of :class:`GBTRegressor`, plus:

    rawPredictionCol : str, default "rawPrediction"
        Vector of raw scores: [-margin, margin] for two classes (as Spark ML), the K class
        scores otherwise.
    probabilityCol : str, default "probability"
        Vector of class probabilities.
    numClasses : int, optional
        Number of classes (default: largest label + 1, at least 2).
    evalMetric : str, optional
        Two classes: "logloss" (default), "error", "auc"; more: "mlogloss" (default).
    thresholds : list of float, optional
        Per class, as Spark ML's probabilistic classifiers: the predicted class maximises
        probability / threshold (kept by the model, settable there).
    scalePosWeight : float, default 1.0
        Two classes: positive rows' gradients and hessians are multiplied by it (XGBoost's
        ``scale_pos_weight``, e.g. negatives / positives for unbalanced data).

    Examples
    --------
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> df = from_dense(spark, X, columns={"label": (X[:, 0] + X[:, 1] > 0).astype(float)})
    >>> model = GBTClassifier(maxIter=10, maxDepth=2, seed=0).fit(df)
    >>> model.transform(df).columns
    ['features', 'label', 'rawPrediction', 'probability', 'prediction']
    >>> model.transform(df).filter("prediction = label").count() >= 36   # of 40
    True
    """

    _task = "classification"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", maxIter=100, stepSize=0.1, maxDepth=6,
                 maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0, regAlpha=0.0,
                 minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0, colsampleByTree=1.0,
                 seed=0, numWorkers=None, validationIndicatorCol=None, earlyStoppingRounds=0,
                 evalMetric=None, numClasses=None, timeoutSeconds=600.0, missing=None,
                 baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                 leafCol=None, verbose=0, initModel=None, thresholds=None, scalePosWeight=1.0,
                 categoricalCols=None, maxCatToOnehot=4, catSmooth=10.0, catL2=10.0,
                 maxCatThreshold=32, nthread=None):
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
                  timeoutSeconds=600.0, missing=None, baseMarginCol=None,
                  monotoneConstraints=None, predContribCol=None, leafCol=None, verbose=0,
                  initModel=None, thresholds=None, scalePosWeight=1.0, categoricalCols=None,
                  maxCatToOnehot=4, catSmooth=10.0, catL2=10.0, maxCatThreshold=32, nthread=None):
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
        if k > 2 and self.getScalePosWeight() != 1.0:
            raise ValueError(f"scalePosWeight applies to two classes; this fit has {k}")
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


add_setters(GBTRegressor, COMMON_PARAMS)
add_setters(GBTClassifier, COMMON_PARAMS + _CLASSIFIER_PARAMS)


# ============================================================================ models
class GBTRegressionModel(GBTModelBase, GBTParams):
    """Fitted :class:`GBTRegressor`: adds ``predictionCol`` (double), and ``predContribCol``
    / ``leafCol`` when set.

    Besides ``transform``: ``predict(vector)``, ``evaluate(dataset)`` (RMSE, MAE, R2 ... as
    Spark ML's regression summaries), ``evaluateEachIteration(dataset)``, ``trees``,
    ``toDebugString`` / ``dump(format)``, ``featureImportances`` /
    ``getFeatureImportances(importanceType)``, ``featureNames``, ``summary``.

    Save format: ``path/metadata`` (Spark ML params, ``modelKind`` "gbt") and ``path/data/``
    (the arrays as parquet chunk rows, ``sparkxml_kernels.persist``) with the arrays of
    ``sparkxml_kernels.gbt.predictor`` (trees as flat node arrays, base score, objective,
    ``missing``, ``feature_names``) plus the training summary's ``summary.*`` arrays;
    ``sparkxml_kernels.load_model(path)`` serves it.
    """

    def _outputs(self):
        return [(self.getPredictionCol(), "pred")]

    def evaluate(self, dataset) -> GBTRegressionEvaluation:
        """Regression metrics of this model on ``dataset`` (labelCol, weightCol if set)."""
        with FitProgress(dataset.sparkSession, self).phase("evaluate"):
            return GBTRegressionEvaluation(self._plain().transform(dataset), self.getLabelCol(),
                                           self.getPredictionCol(), _weight_col(self, dataset))


@single_row_classifier_api
class GBTClassificationModel(GBTModelBase, _GBTClassifierParams):
    """Fitted :class:`GBTClassifier`: adds ``rawPredictionCol`` (vector), ``probabilityCol``
    (vector) and ``predictionCol`` (double: the class maximising probability / thresholds,
    the most probable without ``thresholds``), as Spark ML's probabilistic classifiers, and
    ``predContribCol`` / ``leafCol`` when set.

    Besides ``transform`` (as Spark ML's ``ProbabilisticClassificationModel``):
    ``predict`` / ``predictRaw`` / ``predictProbability`` on one vector, ``evaluate(dataset)``
    (accuracy, per-label and weighted precision/recall/F-measure, log loss; AUC, ROC and PR
    for two classes), ``evaluateEachIteration(dataset)``, ``trees``, ``toDebugString`` /
    ``dump(format)``, importances and feature names. Save format: see
    :class:`GBTRegressionModel`.
    """

    @property
    def numClasses(self) -> int:
        k = int(self._predictor.n_outputs)
        return 2 if k == 1 else k

    def _outputs(self):
        return [(self.getRawPredictionCol(), "raw"), (self.getProbabilityCol(), "prob"),
                (self.getPredictionCol(), "pred")]

    def _thresholds(self):
        t = self._opt(self.thresholds)
        if t is not None and len(t) != self.numClasses:
            raise ValueError(f"thresholds has {len(t)} values; the model has "
                             f"{self.numClasses} classes")
        return None if t is None else [float(x) for x in t]

    def _debug_header(self) -> str:
        return (f"GBTClassificationModel: uid={self.uid}, numTrees={self.getNumTrees}, "
                f"numClasses={self.numClasses}, numFeatures={self.numFeatures}")

    def evaluate(self, dataset) -> GBTClassificationEvaluation:
        """Classification metrics of this model on ``dataset`` (labelCol, weightCol if
        set), as Spark ML's classification summaries."""
        self._thresholds()
        with FitProgress(dataset.sparkSession, self).phase("evaluate"):
            return GBTClassificationEvaluation(
                self._plain().transform(dataset), self.getLabelCol(), self.getPredictionCol(),
                self.getProbabilityCol(), _weight_col(self, dataset), self.numClasses)


def _weight_col(model, dataset):
    w = model._opt(model.weightCol) or None
    return w if w is not None and w in dataset.columns else None


add_setters(GBTRegressionModel, _MODEL_PARAMS + ("labelCol", "weightCol"))
add_setters(GBTClassificationModel, _MODEL_PARAMS + ("labelCol", "weightCol",
                                                      "rawPredictionCol", "probabilityCol",
                                                      "thresholds"))
