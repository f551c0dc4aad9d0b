"""Histogram gradient boosting on Spark: ``GBTRegressor`` and ``GBTClassifier``.

A fit runs at most three Spark jobs, whatever the number of trees (two below the size
threshold of step 2):

1. a checks job: one no-op write of the input with the checks as observed metrics
   (``sparkxml._core.validation.aggregate_once``; JVM only, no Python, no shuffle): row
   counts, label range, and the first offending value of each check (non-finite or non-class
   labels, negative weights, null vectors), so bad input fails before any training with an
   error naming the column and the value. A vector column's size comes from its metadata or
   from the first rows of each input partition; the Python tasks check every vector against
   it;
2. a sketch job: weighted quantile summaries of a uniform sample of about 100,000 training
   rows (``DataFrame.sample``, one ``mapInArrow`` task per input partition), merged on the
   driver in partition order into at most ``maxBins`` bins per feature. With numWorkers=1 and
   at most 100,000 training rows there is no sample and no such job: the training task
   summarises each input partition itself, in the same order, and gets the same edges;
3. ONE training stage (``sparkxml._core.barrier``) over ``numWorkers`` partitions: each task bins
   its rows once (uint8), then all tasks boost in lockstep (``sparkxml_kernels.gbt.booster``),
   exchanging per-level histograms over direct authenticated sockets
   (``sparkxml_kernels.collective``); rank 0 decides the splits and returns the model arrays.
   With one worker it is a plain (non-barrier) task.

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

import numpy as np
from pyspark import keyword_only
from pyspark.sql import types as T

from sparkxml._core.params import add_setters
from sparkxml._core.progress import FitProgress
from sparkxml._core.validation import inferred_classes
from sparkxml.gbt.custom_params import HasCustomFunctions
from sparkxml.gbt.estimator_params import (  # noqa: F401 - GBTParams, COMMON_PARAMS: LambdaMART's
    _CLASSIFIER_PARAMS,
    _MODEL_PARAMS,
    _REGRESSOR_PARAMS,
    COMMON_PARAMS,
    GBTParams,
    _GBTClassifierParams,
    _GBTRegressorParams,
)
from sparkxml.gbt.fit import GBTEstimator
from sparkxml.gbt.metric_params import (
    BINARY_DEFAULTS,
    MULTI_METRICS,
    check_classification_metric,
    classification_metrics,
    evaluation_metrics,
)
from sparkxml.gbt.models import GBTModelBase, single_row_classifier_api
from sparkxml.gbt.summary import (
    GBTClassificationEvaluation,
    GBTRegressionEvaluation,
    GBTTrainingSummary,
)
from sparkxml_kernels.gbt.loss import make_loss
from sparkxml_kernels.gbt.objectives import LOG_LINK
from sparkxml_kernels.gbt.predictor import MAX_OUTPUTS

__all__ = ["GBTRegressor", "GBTRegressionModel", "GBTClassifier", "GBTClassificationModel",
           "GBTTrainingSummary"]


class GBTRegressor(HasCustomFunctions, GBTEstimator, _GBTRegressorParams):
    """Histogram gradient-boosted regression trees, trained in one barrier stage.

    Parameters
    ----------
    objective : str, default "squared_error"
        "squared_error", "absolute_error", "huber", "quantile", "poisson", "tweedie",
        "gamma" or "cox" (survival times; a negative label is a time censored at ``-y``, as
        XGBoost's ``survival:cox``). poisson, tweedie, gamma and cox model the log of the
        mean (the hazard ratio for cox): ``predictionCol`` holds ``exp(margin)`` and
        ``rawPredictionCol`` the margin. absolute_error and quantile refit every leaf to the
        quantile of its rows' residuals (XGBoost's rules: interpolated without weightCol, the
        lower weighted quantile with). See the GBT page of the documentation for
        the gradients and where XGBoost and LightGBM differ.
    lossType : {"squared", "absolute"}, optional
        Spark MLlib's name for objective squared_error / absolute_error.
    huberDelta : float, default 1.0
        huber: the residual where the loss turns linear (LightGBM's ``alpha``).
    quantileAlpha : float, default 0.5
        quantile: the quantile fitted, in (0, 1).
    tweedieVariancePower : float, default 1.5
        tweedie: the variance power, in (1, 2).
    maxDeltaStep : float, optional
        XGBoost's ``max_delta_step``: bound on each leaf weight before the learning rate
        (0 = none) and, for poisson, the hessian's inflation ``exp(maxDeltaStep)``. Unset:
        leaves unbounded, poisson's 0.7 (XGBoost's defaults).
    baseScore : float, optional
        Prediction every row starts from, on the response scale (XGBoost's
        ``base_score``). Unset, as XGBoost: the weighted mean label (squared_error, huber,
        poisson, tweedie, gamma), the median (absolute_error), the quantileAlpha-quantile
        (quantile) -- XGBoost's interpolated quantile without weightCol, the lower weighted
        one with -- and 1 (cox).
    rawPredictionCol : str, optional
        Output column (double) of the margin. Written by default (as "rawPrediction") for
        the log-link objectives, otherwise only when set.
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
    colsampleByLevel, colsampleByNode, interactionConstraints
        Per-level and per-node feature sampling, feature interaction sets (names or
        indices): XGBoost's ``colsample_bylevel``, ``colsample_bynode``,
        ``interaction_constraints`` (``sparkxml.gbt.node_params``).
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
        The objective's own by default (XGBoost's: "rmse", "mae", "quantile",
        "poisson-nloglik", "gamma-nloglik", "tweedie-nloglik@rho", "cox-nloglik" (training
        rows only: cox takes no validation set); LightGBM's "huber"). Identity-link objectives take "rmse", "mae", "quantile" or "huber" (of
        the margin), log-link ones "poisson-nloglik", "gamma-nloglik", "gamma-deviance" or
        "tweedie-nloglik" (of ``exp(margin)``); "quantile", "huber", "tweedie-nloglik"
        take the objective's parameter, or one given as "quantile@0.9".
    evalMetrics : list of str, optional
        Several of those metrics, each recorded every round on the training and validation
        rows (``summary.metricHistory``); early stopping follows ``evalMetric`` when set,
        else the first of them.
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
    boosterType, rateDrop, skipDrop, oneDrop, normalizeType, sampleType : default "gbtree"
        XGBoost's DART with its defaults: see :mod:`sparkxml.gbt.booster_params`.
    processType, updater : default "default", "refresh"
        "update" refreshes or prunes ``initModel``'s trees: :mod:`sparkxml.gbt.booster_params`.
    treeMethod : {"hist", "approx", "exact"}, default "hist"
        Split candidates, XGBoost's ``tree_method``: the fit's bins; hessian-weighted
        quantiles proposed for every tree; every distinct value (at most 65534 a feature,
        depthwise only). See :mod:`sparkxml.gbt.tree_method_params`.

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
                 colsampleByLevel=1.0, colsampleByNode=1.0, interactionConstraints=None,
                 earlyStoppingRounds=0, evalMetric=None, timeoutSeconds=600.0, missing=None,
                 baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                 leafCol=None, verbose=0, initModel=None, categoricalCols=None,
                 maxCatToOnehot=4, catSmooth=10.0, catL2=10.0, maxCatThreshold=32, nthread=None,
                 objective="squared_error", lossType=None, huberDelta=1.0, quantileAlpha=0.5,
                 tweedieVariancePower=1.5, maxDeltaStep=None, baseScore=None,
                 rawPredictionCol=None, evalMetrics=None, boosterType="gbtree", rateDrop=0.0,
                 skipDrop=0.0, oneDrop=False, normalizeType="tree", sampleType="uniform",
                 processType="default", updater="refresh", treeMethod="hist",
                 useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                 stochasticRounding=True):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", maxIter=100, stepSize=0.1,
                  maxDepth=6, maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                  regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                  colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                  colsampleByLevel=1.0, colsampleByNode=1.0, interactionConstraints=None,
                  earlyStoppingRounds=0, evalMetric=None, timeoutSeconds=600.0, missing=None,
                  baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                  leafCol=None, verbose=0, initModel=None, categoricalCols=None,
                  maxCatToOnehot=4, catSmooth=10.0, catL2=10.0, maxCatThreshold=32,
                  nthread=None, objective="squared_error", lossType=None, huberDelta=1.0,
                  quantileAlpha=0.5, tweedieVariancePower=1.5, maxDeltaStep=None,
                  baseScore=None, rawPredictionCol=None, evalMetrics=None,
                  boosterType="gbtree", rateDrop=0.0, skipDrop=0.0, oneDrop=False,
                  normalizeType="tree", sampleType="uniform", processType="default",
                  updater="refresh", treeMethod="hist",
                  useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                  stochasticRounding=True):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBTRegressionModel

    def _check_policy(self):
        # the objective's param checks, before any Spark job
        super()._check_policy()
        self.check_validation(self._opt(self.validationIndicatorCol))
        self.booster_options()

    def _objective(self, label, label_max, distinct=None):
        return self.objective_spec(), 2, self.resolved_metrics()[0]

    def _label_checks(self, label) -> dict:
        return self.label_checks(label)

    def _check_labels(self, label, extra) -> None:
        self.check_labels(label, extra)

    def _objective_options(self) -> dict:
        return self.booster_options()


class GBTClassifier(HasCustomFunctions, GBTEstimator, _GBTClassifierParams):
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
        Two classes: "logloss" (default), "error", "error@t" (probability threshold t),
        "auc", "aucpr"; more: "mlogloss" (default), "merror". XGBoost's definitions.
    evalMetrics : list of str, optional
        Several of those, each recorded every round on the training and validation rows
        (``summary.metricHistory``); early stopping follows ``evalMetric`` when set, else
        the first of them.
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
                 seed=0, numWorkers=None, validationIndicatorCol=None,
                 colsampleByLevel=1.0, colsampleByNode=1.0, interactionConstraints=None,
                 earlyStoppingRounds=0, evalMetric=None, numClasses=None, timeoutSeconds=600.0, missing=None,
                 baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                 leafCol=None, verbose=0, initModel=None, thresholds=None, scalePosWeight=1.0,
                 categoricalCols=None, maxCatToOnehot=4, catSmooth=10.0, catL2=10.0,
                 maxCatThreshold=32, nthread=None, evalMetrics=None, boosterType="gbtree",
                 rateDrop=0.0, skipDrop=0.0, oneDrop=False, normalizeType="tree",
                 sampleType="uniform", processType="default", updater="refresh",
                 treeMethod="hist",
                 useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                 stochasticRounding=True):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                  probabilityCol="probability", maxIter=100, stepSize=0.1, maxDepth=6,
                  maxLeaves=0, growPolicy="depthwise", maxBins=256, regLambda=1.0,
                  regAlpha=0.0, minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                  colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                  colsampleByLevel=1.0, colsampleByNode=1.0, interactionConstraints=None,
                  earlyStoppingRounds=0, evalMetric=None, numClasses=None,
                  timeoutSeconds=600.0, missing=None, baseMarginCol=None,
                  monotoneConstraints=None, predContribCol=None, leafCol=None, verbose=0,
                  initModel=None, thresholds=None, scalePosWeight=1.0, categoricalCols=None,
                  maxCatToOnehot=4, catSmooth=10.0, catL2=10.0, maxCatThreshold=32, nthread=None,
                  evalMetrics=None, boosterType="gbtree", rateDrop=0.0, skipDrop=0.0,
                  oneDrop=False, normalizeType="tree", sampleType="uniform",
                  processType="default", updater="refresh", treeMethod="hist",
                  useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                  stochasticRounding=True):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBTClassificationModel

    def _objective(self, label, label_max, distinct=None):
        k = self._opt(self.numClasses)
        if k is None:
            k = inferred_classes(label, label_max, distinct, MAX_OUTPUTS)
        elif label_max >= k:
            raise ValueError(f"labelCol: column '{label}' holds the label {label_max!r}, "
                             f"outside 0..{k - 1} (numClasses={k})")
        if k > 2 and self.getScalePosWeight() != 1.0:
            raise ValueError(f"scalePosWeight applies to two classes; this fit has {k}")
        metric, _ = classification_metrics(self, int(k))
        return ("logistic" if k == 2 else "softmax"), int(k), metric

    def _objective_options(self) -> dict:
        # checked against the classes by _objective
        return {"evalMetrics": self._opt(self.evalMetrics) or None}


add_setters(GBTRegressor, COMMON_PARAMS + _REGRESSOR_PARAMS)
add_setters(GBTClassifier, COMMON_PARAMS + _CLASSIFIER_PARAMS)


# ============================================================================ models
class GBTRegressionModel(GBTModelBase, _GBTRegressorParams):
    """Fitted :class:`GBTRegressor`: adds ``predictionCol`` (double: ``exp(margin)`` for the
    log-link objectives poisson, tweedie, gamma and cox, the margin otherwise),
    ``rawPredictionCol`` (double: the margin; by default for the log-link objectives only),
    and ``predContribCol`` / ``leafCol`` when set (both in margin units).

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

    _objectives = ("squared_error", "absolute_error", "poisson", "gamma", "tweedie", "cox")

    def _log_link(self) -> bool:
        return self._predictor.objective in LOG_LINK

    def _outputs(self):
        # pyspark's mixin gives rawPredictionCol a default: only a set one counts for the
        # identity-link objectives
        raw = (self.getRawPredictionCol() if self.isSet(self.rawPredictionCol)
               else "rawPrediction" if self._log_link() else None)
        out = [] if raw is None else [(raw, "raw")]
        return out + [(self.getPredictionCol(), "pred")]

    def _output_type(self, kind):
        return T.DoubleType() if kind == "raw" else super()._output_type(kind)

    def predict(self, value) -> float:
        """Prediction for one feature vector (``exp(margin)`` for the log-link
        objectives)."""
        m = self.predictRaw(value)
        return float(np.exp(m)) if self._log_link() else m

    def predictRaw(self, value) -> float:
        """The margin for one feature vector."""
        return float(self._raw_one(value)[0])

    def _iteration_metric(self, objective):
        if objective == "squared_error":
            return "rmse"
        if objective == "cox":
            return None
        return make_loss(self.objective_spec()).default_metric()

    def evaluate(self, dataset, metrics=None) -> GBTRegressionEvaluation:
        """Regression metrics of this model on ``dataset`` (labelCol, weightCol if set);
        ``metrics`` (the result's ``metrics`` dict, XGBoost's names as ``evalMetrics``):
        default the objective's own and those recorded in training (none for cox, whose
        metric needs the training risk sets)."""
        obj = self._predictor.objective
        names = ([self.resolved_metric(m) for m in metrics] if metrics is not None
                 else [] if obj == "cox" else
                 evaluation_metrics(self._trained_metrics(), [self._iteration_metric(obj)]))
        with FitProgress(dataset.sparkSession, self).phase("evaluate"):
            ev = GBTRegressionEvaluation(self._plain().transform(dataset), self.getLabelCol(),
                                         self.getPredictionCol(), _weight_col(self, dataset))
        ev._metrics_job = lambda: self._metric_values(dataset, names)[0] if names else {}
        return ev


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

    _objectives = ("logistic", "softmax")

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

    def evaluate(self, dataset, metrics=None) -> GBTClassificationEvaluation:
        """Classification metrics of this model on ``dataset`` (labelCol, weightCol if
        set), as Spark ML's classification summaries, and ``metrics``, a dict of XGBoost's
        (default: logloss, error, auc, aucpr for two classes, mlogloss, merror for more,
        and those recorded in training)."""
        self._thresholds()
        k = self.numClasses
        names = evaluation_metrics(self._trained_metrics(), BINARY_DEFAULTS if k == 2
                                   else MULTI_METRICS) if metrics is None else list(metrics)
        for m in names:
            check_classification_metric(m, k)
        with FitProgress(dataset.sparkSession, self).phase("evaluate"):
            ev = GBTClassificationEvaluation(
                self._plain().transform(dataset), self.getLabelCol(), self.getPredictionCol(),
                self.getProbabilityCol(), _weight_col(self, dataset), k)
        ev._metrics_job = lambda: self._metric_values(dataset, names)[0]
        return ev


def _weight_col(model, dataset):
    w = model._opt(model.weightCol) or None
    return w if w is not None and w in dataset.columns else None


add_setters(GBTRegressionModel, _MODEL_PARAMS + ("labelCol", "weightCol",
                                                  "rawPredictionCol"))
add_setters(GBTClassificationModel, _MODEL_PARAMS + ("labelCol", "weightCol",
                                                      "rawPredictionCol", "probabilityCol",
                                                      "thresholds"))
