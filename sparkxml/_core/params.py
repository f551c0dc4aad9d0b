"""Shared Params: one ``HasX`` mixin per param, and the declarative validation table.

Every param has a ``typeConverter``; its allowed range is stated in its doc and enforced by
``RULES`` below, in one place, by ``validate_params`` at the start of ``_fit``, at
``transform`` and after ``load``. Error messages name the param and the value.
"""
from __future__ import annotations

import math

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (  # noqa: F401  (re-exported: the pyspark.ml spellings)
    HasFeaturesCol,
    HasFitIntercept,
    HasLabelCol,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasRegParam,
    HasSeed,
    HasThresholds,
    HasTol,
    HasValidationIndicatorCol,
    HasWeightCol,
)


def _param(name: str, doc: str, conv) -> Param:
    return Param(Params._dummy(), name, doc, typeConverter=conv)


class HasLabelsCol(Params):
    labelsCol = _param("labelsCol", "multi-label target column, array<int> of label ids >= 0",
                       TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(labelsCol="labels")

    def getLabelsCol(self) -> str:
        return self.getOrDefault(self.labelsCol)


class HasScoresCol(Params):
    scoresCol = _param("scoresCol", "output column of scores, array<float> aligned with the "
                       "prediction column", TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(scoresCol="scores")

    def getScoresCol(self) -> str:
        return self.getOrDefault(self.scoresCol)


class HasTopK(Params):
    topK = _param("topK", "number of labels to predict per row (>= 1)", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(topK=5)

    def getTopK(self) -> int:
        return self.getOrDefault(self.topK)


class HasNumWorkers(Params):
    numWorkers = _param("numWorkers", "number of Spark tasks training runs on (>= 1); unset: "
                        "the session's default parallelism", TypeConverters.toInt)

    def getNumWorkers(self) -> int:
        return self.getOrDefault(self.numWorkers)


class HasNumTrees(Params):
    numTrees = _param("numTrees", "number of trees (>= 1)", TypeConverters.toInt)

    def getNumTrees(self) -> int:
        return self.getOrDefault(self.numTrees)


class HasK(Params):
    k = _param("k", "cut-off rank k of the metric (>= 1)", TypeConverters.toInt)

    def getK(self) -> int:
        return self.getOrDefault(self.k)


# ---------------------------------------------------------------- declarative validation
def _ge(lo):
    return (lambda v: v >= lo), f"must be >= {lo}"


def _gt(lo):
    return (lambda v: v > lo), f"must be > {lo}"


def _between(lo, hi):
    return (lambda v: lo <= v <= hi), f"must be in [{lo}, {hi}]"


def _open_closed(lo, hi):
    return (lambda v: lo < v <= hi), f"must be in ({lo}, {hi}]"


def _one_of(*options):
    return (lambda v: v in options), f"must be one of {list(options)}"


def _finite():
    return (lambda v: math.isfinite(v)), "must be finite"


def _nonempty():
    return (lambda v: isinstance(v, str) and len(v) > 0), "must be a non-empty column name"


# param name -> (predicate, what it must be). Params shared by several estimators share a rule.
RULES: dict[str, tuple] = {
    "featuresCol": _nonempty(),
    "labelsCol": _nonempty(),
    "labelCol": _nonempty(),
    "predictionCol": _nonempty(),
    "scoresCol": _nonempty(),
    "numTrees": _ge(1),
    "numWorkers": _ge(1),
    "topK": _ge(1),
    "k": _ge(1),
    "maxLeaf": _ge(1),
    "labelsPerLeaf": _ge(1),
    "logLossCoeff": _gt(0.0),
    "bias": _finite(),
    "seed": _finite(),
    "maxIter": _ge(1),
    "stepSize": _open_closed(0.0, 1.0),
    "propensityA": _finite(),
    "propensityB": _finite(),
}


def validate_params(instance: Params) -> None:
    """Check every defined param of ``instance`` against ``RULES``.

    Raises
    ------
    ValueError
        naming the class, the param and the offending value.
    """
    # a class may name a prefix under which RULES holds its own rule for a shared param name
    # (trees: "tree:maxBins" allows 2..65536 where GBT's maxBins is 2..256)
    prefix = getattr(instance, "_rules_prefix", None)
    for p in instance.params:
        rule = (RULES.get(f"{prefix}:{p.name}") if prefix else None) or RULES.get(p.name)
        if rule is None or not instance.isDefined(p):
            continue
        value = instance.getOrDefault(p)
        if value is None:
            continue
        ok, what = rule
        try:
            good = ok(value)
        except TypeError:
            good = False
        if not good:
            raise ValueError(f"{type(instance).__name__}: param {p.name}={value!r} is invalid: "
                             f"{what}")


# ---------------------------------------------------------------- gradient boosting (GBT)
# Names follow pyspark.ml where it has one (maxDepth, maxBins, subsamplingRate, ...) and
# XGBoost's meaning otherwise (regLambda = lambda, regAlpha = alpha, minSplitLoss = gamma).
def _simple_mixin(cls_name: str, name: str, doc: str, conv, getter: str):
    p = _param(name, doc, conv)

    def get(self):
        return self.getOrDefault(name)

    return type(cls_name, (Params,), {name: p, getter: get})


HasFeaturesCols = _simple_mixin(
    "HasFeaturesCols", "featuresCols", "numeric input columns used as features instead of "
    "featuresCol (non-empty list of column names; null means missing)",
    TypeConverters.toListString, "getFeaturesCols")
HasMaxDepth = _simple_mixin(
    "HasMaxDepth", "maxDepth", "maximum depth of a tree (>= 0; 0 = unlimited, only with "
    "growPolicy 'lossguide' and maxLeaves > 0)", TypeConverters.toInt, "getMaxDepth")
HasMaxLeaves = _simple_mixin(
    "HasMaxLeaves", "maxLeaves", "maximum number of leaves of a tree (>= 0; 0 = no limit)",
    TypeConverters.toInt, "getMaxLeaves")
HasGrowPolicy = _simple_mixin(
    "HasGrowPolicy", "growPolicy", "'depthwise' (split every node of a level) or 'lossguide' "
    "(split the leaf with the highest gain first)", TypeConverters.toString, "getGrowPolicy")
HasMaxBins = _simple_mixin(
    "HasMaxBins", "maxBins", "maximum number of histogram bins per feature (2..65536; above "
    "256 the bins are uint16)",
    TypeConverters.toInt, "getMaxBins")
HasRegLambda = _simple_mixin(
    "HasRegLambda", "regLambda", "L2 regularisation of leaf weights (>= 0)",
    TypeConverters.toFloat, "getRegLambda")
HasRegAlpha = _simple_mixin(
    "HasRegAlpha", "regAlpha", "L1 regularisation of leaf weights (>= 0)",
    TypeConverters.toFloat, "getRegAlpha")
HasMinSplitLoss = _simple_mixin(
    "HasMinSplitLoss", "minSplitLoss", "minimum loss reduction to make a split (gamma, >= 0)",
    TypeConverters.toFloat, "getMinSplitLoss")
HasMinChildWeight = _simple_mixin(
    "HasMinChildWeight", "minChildWeight", "minimum sum of hessians in a child (>= 0)",
    TypeConverters.toFloat, "getMinChildWeight")
HasSubsamplingRate = _simple_mixin(
    "HasSubsamplingRate", "subsamplingRate", "fraction of rows sampled per tree, in (0, 1]",
    TypeConverters.toFloat, "getSubsamplingRate")
HasColsampleByTree = _simple_mixin(
    "HasColsampleByTree", "colsampleByTree", "fraction of features sampled per tree, in "
    "(0, 1]", TypeConverters.toFloat, "getColsampleByTree")
HasEarlyStoppingRounds = _simple_mixin(
    "HasEarlyStoppingRounds", "earlyStoppingRounds", "stop when the validation metric has not "
    "improved for this many rounds (>= 0; 0 = off; needs validationIndicatorCol)",
    TypeConverters.toInt, "getEarlyStoppingRounds")
HasEvalMetric = _simple_mixin(
    "HasEvalMetric", "evalMetric", "validation metric: rmse, logloss, error, auc or mlogloss "
    "(unset: rmse for regression, logloss for binary, mlogloss for multiclass)",
    TypeConverters.toString, "getEvalMetric")
HasNumClasses = _simple_mixin(
    "HasNumClasses", "numClasses", "number of classes (2..10000; unset: max label + 1)",
    TypeConverters.toInt, "getNumClasses")
HasTimeoutSeconds = _simple_mixin(
    "HasTimeoutSeconds", "timeoutSeconds", "seconds a training task waits for a silent peer "
    "before failing (> 0)", TypeConverters.toFloat, "getTimeoutSeconds")


def _column_list():
    return ((lambda v: isinstance(v, list) and len(v) > 0
             and all(isinstance(c, str) and c for c in v)),
            "must be a non-empty list of column names")


RULES.update({
    "featuresCols": _column_list(),
    "maxDepth": _ge(0),
    "maxLeaves": _ge(0),
    "growPolicy": _one_of("depthwise", "lossguide"),
    "maxBins": _between(2, 65536),  # above 256: uint16 bins
    "regLambda": _ge(0.0),
    "regAlpha": _ge(0.0),
    "minSplitLoss": _ge(0.0),
    "minChildWeight": _ge(0.0),
    "subsamplingRate": _open_closed(0.0, 1.0),
    "colsampleByTree": _open_closed(0.0, 1.0),
    "earlyStoppingRounds": _ge(0),
    "evalMetric": _one_of("rmse", "logloss", "error", "auc", "mlogloss"),
    "numClasses": _between(2, 10_000),  # = sparkxml_kernels.gbt.predictor.MAX_OUTPUTS
    "timeoutSeconds": _gt(0.0),
    "weightCol": _nonempty(),
    "validationIndicatorCol": _nonempty(),
    "rawPredictionCol": _nonempty(),
    "probabilityCol": _nonempty(),
})


# ---------------------------------------------------------------- evaluators (and ranking)
HasGroupCol = _simple_mixin(
    "HasGroupCol", "groupCol", "query (group) id column: rows with the same id are ranked "
    "together (integer or string)", TypeConverters.toString, "getGroupCol")
HasInversePropensities = _simple_mixin(
    "HasInversePropensities", "inversePropensities", "inverse label propensities 1/p_l, one a "
    "label id (finite, > 0); see sparkxml.evaluation.label_propensities",
    TypeConverters.toListFloat, "getInversePropensities")


def _positive_floats():
    return ((lambda v: all(math.isfinite(x) and x > 0 for x in v)),
            "must be a list of finite floats > 0")


RULES.update({
    "groupCol": _nonempty(),
    "inversePropensities": _positive_floats(),
    # union over the evaluators; each evaluator also checks its own list
    "metricName": _one_of("precisionAtK", "ndcgAtK", "recallAtK", "pspAtK", "psndcgAtK",
                          "mapAtK"),
})


# ---------------------------------------------------------------- learning to rank (LambdaMART)
HasObjective = _simple_mixin(
    "HasObjective", "objective", "ranking objective: 'lambdarank' (LambdaMART, NDCG lambdas) "
    "or 'pairwise' (RankNet)", TypeConverters.toString, "getObjective")
HasNdcgTruncation = _simple_mixin(
    "HasNdcgTruncation", "ndcgTruncation", "lambdarank truncation level (>= 1): pairs need a "
    "document ranked above it; the ideal DCG normalising a query is taken at this depth "
    "(LightGBM's lambdarank_truncation_level)", TypeConverters.toInt, "getNdcgTruncation")
HasLabelGain = _simple_mixin(
    "HasLabelGain", "labelGain", "gain of each relevance grade 0, 1, 2, ... (non-empty list of "
    "finite floats; unset: 2^rel - 1)", TypeConverters.toListFloat, "getLabelGain")
HasSigma = _simple_mixin(
    "HasSigma", "sigma", "steepness of the pair sigmoid (> 0)", TypeConverters.toFloat,
    "getSigma")
HasLambdarankNorm = _simple_mixin(
    "HasLambdarankNorm", "lambdarankNorm", "normalise lambdas per query (LightGBM's "
    "lambdarank_norm)", TypeConverters.toBoolean, "getLambdarankNorm")


def _finite_floats():
    return ((lambda v: isinstance(v, list) and len(v) > 0 and all(math.isfinite(x) for x in v)),
            "must be a non-empty list of finite floats")


def _eval_metric():
    # GBT metrics, or a ranking metric 'ndcg@k' / 'map@k' (k >= 1; bare 'ndcg'/'map' = @10).
    # Each estimator also checks that the metric fits its task.
    gbt = ("rmse", "logloss", "error", "auc", "mlogloss")

    def ok(v):
        if v in gbt:
            return True
        base, _, k = v.partition("@")
        return base in ("ndcg", "map") and (not k or (k.isdigit() and int(k) >= 1
                                                      and str(int(k)) == k))

    return ok, f"must be one of {list(gbt)}, 'ndcg@k' or 'map@k' (k >= 1)"


RULES.update({
    "objective": _one_of("lambdarank", "pairwise"),
    "ndcgTruncation": _ge(1),
    "labelGain": _finite_floats(),
    "sigma": _gt(0.0),
    "evalMetric": _eval_metric(),
})


# ---------------------------------------------------------------- linear SVM (LinearSVC)

HasC = _simple_mixin(
    "HasC", "C", "penalty of the loss: primal 0.5|w|^2 + C sum_i weight_i loss_i (> 0; "
    "Spark MLlib's regParam equals 1 / (C n))", TypeConverters.toFloat, "getC")
HasLoss = _simple_mixin(
    "HasLoss", "loss", "'hinge' (L1-loss SVM, liblinear -s 3) or 'squared_hinge' (L2-loss, "
    "liblinear -s 1)", TypeConverters.toString, "getLoss")
HasMultiClass = _simple_mixin(
    "HasMultiClass", "multiClass", "more than two classes: 'ovr' (one-vs-rest, K binary SVMs) "
    "or 'crammer_singer' (one K-class SVM)", TypeConverters.toString, "getMultiClass")
HasSchedule = _simple_mixin(
    "HasSchedule", "schedule", "order of the dual coordinates: 'shark' (Shark QpBoxLinear's "
    "gain-based preferences) or 'permutation' (liblinear's random order with shrinking)",
    TypeConverters.toString, "getSchedule")
HasNumBlocks = _simple_mixin(
    "HasNumBlocks", "numBlocks", "number of CoCoA+ blocks the rows are hashed into (>= 0; 0 = "
    "1 below 16384 rows, else max(2, ceil(rows / 1e6))); the model depends on it, never on "
    "numWorkers",
    TypeConverters.toInt, "getNumBlocks")
HasMarginThreshold = _simple_mixin(
    "HasMarginThreshold", "threshold", "binary prediction is 1 when the margin w.x + b > "
    "threshold (finite)", TypeConverters.toFloat, "getThreshold")

# Under the "svm:" prefix (LinearSVC's ``_rules_prefix``): names such as loss, threshold and C
# mean other things, with other ranges, in other estimators (a probability threshold lies in
# [0, 1]). tol has one rule for LinearSVC and FM (below): 0 runs maxIter rounds.
RULES.update({
    "svm:C": ((lambda v: math.isfinite(v) and v > 0), "must be finite and > 0"),
    "svm:loss": _one_of("hinge", "squared_hinge"),
    "svm:multiClass": _one_of("ovr", "crammer_singer"),
    "svm:schedule": _one_of("shark", "permutation"),
    "svm:numBlocks": _ge(0),
    "svm:threshold": _finite(),
})


# ---------------------------------------------------------------- FastXML and PfastreXML
HasRowOrder = _simple_mixin(
    "HasRowOrder", "rowOrder", "order of the training rows, which the trees depend on: "
    "'content' (by a hash of features and labels computed in the JVM: the model depends only "
    "on the multiset of rows and the seed) or 'input' (the DataFrame's order, as the authors' "
    "C++ reads a file; it changes with the partitioning)", TypeConverters.toString,
    "getRowOrder")

RULES.update({
    "rowOrder": _one_of("content", "input"),
    # PfastreXML's tail classifiers (Jain, Prabhu & Varma, KDD'16); the params live in
    # sparkxml.fastxml.pfastrexml, propensityA / propensityB use the rules above
    "gamma": ((lambda v: math.isfinite(v) and v > 0), "must be finite and > 0"),
    "alpha": _between(0.0, 1.0),
    "numCandidates": _ge(1),
})


# ---------------------------------------------------------------- factorization machines (FM, GBFM)
# FMRegressor / FMClassifier (sparkxml.fm), GBFMRegressor / GBFMClassifier (sparkxml.fm.gbfm),
# FieldEncoder (sparkxml.fm.fields). Names follow pyspark.ml's FM estimators where they exist.

HasFactorSize = _simple_mixin(
    "HasFactorSize", "factorSize", "dimensionality of the factors (>= 1)",
    TypeConverters.toInt, "getFactorSize")
HasFMSolver = _simple_mixin(
    "HasFMSolver", "solver", "FM training algorithm: 'mcmc' (Gibbs sampling with hyper-priors, "
    "libFM/myFM; no regularisation to tune), 'als' (coordinate descent) or 'adamw' (mini-batch)",
    TypeConverters.toString, "getSolver")
HasInitStd = _simple_mixin(
    "HasInitStd", "initStd", "standard deviation of the initial factors (> 0)",
    TypeConverters.toFloat, "getInitStd")
HasFitLinear = _simple_mixin(
    "HasFitLinear", "fitLinear", "whether to fit the linear (first-order) terms",
    TypeConverters.toBoolean, "getFitLinear")
HasBurnIn = _simple_mixin(
    "HasBurnIn", "burnIn", "MCMC sweeps discarded before samples are kept (>= 0, < maxIter)",
    TypeConverters.toInt, "getBurnIn")
HasThinning = _simple_mixin(
    "HasThinning", "thinning", "MCMC: keep every thinning-th sample after burn-in (>= 1)",
    TypeConverters.toInt, "getThinning")
HasMiniBatchFraction = _simple_mixin(
    "HasMiniBatchFraction", "miniBatchFraction", "adamw: fraction of the rows in one "
    "mini-batch, in (0, 1]", TypeConverters.toFloat, "getMiniBatchFraction")
HasFieldStarts = _simple_mixin(
    "HasFieldStarts", "fieldStarts", "start index of each field of the feature vector: strictly "
    "ascending, first 0, all below the vector size (a field runs to the next start or the end)",
    TypeConverters.toListInt, "getFieldStarts")
HasNumStages = _simple_mixin(
    "HasNumStages", "numStages", "number of boosting stages, one field pair each (>= 1)",
    TypeConverters.toInt, "getNumStages")
HasInputCols = _simple_mixin(
    "HasInputCols", "inputCols", "categorical input columns (string, integer or boolean; "
    "array<...> for multi-valued ones), one field each", TypeConverters.toListString,
    "getInputCols")
HasOutputCol = _simple_mixin(
    "HasOutputCol", "outputCol", "output column name", TypeConverters.toString, "getOutputCol")
HasHandleInvalid = _simple_mixin(
    "HasHandleInvalid", "handleInvalid", "category unseen at fit, or null: 'keep' (no feature "
    "for that field), 'skip' (drop the row) or 'error'", TypeConverters.toString,
    "getHandleInvalid")


def _field_starts():
    return ((lambda v: isinstance(v, list) and len(v) >= 1 and v[0] == 0
             and all(b > a for a, b in zip(v, v[1:]))),
            "must be a non-empty strictly ascending list of ints starting at 0")


RULES.update({
    "factorSize": _ge(1),
    "solver": _one_of("mcmc", "als", "adamw"),
    "regParam": _ge(0.0),
    "initStd": _gt(0.0),
    "burnIn": _ge(0),
    "thinning": _ge(1),
    "miniBatchFraction": _open_closed(0.0, 1.0),
    # LinearSVC (relative duality gap) and FM (relative change); 0 = run maxIter rounds
    "tol": _ge(0.0),
    "fieldStarts": _field_starts(),
    "numStages": _ge(1),
    "inputCols": _column_list(),
    "outputCol": _nonempty(),
    "handleInvalid": _one_of("keep", "skip", "error"),
})


# ---------------------------------------------------------------- decision trees, random forests
# scikit-learn's tree parameters under Spark ML names (sklearn's name in the doc).
HasCriterion = _simple_mixin(
    "HasCriterion", "criterion", "split criterion: 'gini', 'entropy' (= 'log_loss') for "
    "classification; 'squared_error', 'friedman_mse', 'poisson' for regression",
    TypeConverters.toString, "getCriterion")
HasTreeMaxDepth = _simple_mixin(
    "HasTreeMaxDepth", "maxDepth", "maximum depth of a tree (>= 0; 0 = a single leaf; "
    "scikit-learn's max_depth)", TypeConverters.toInt, "getMaxDepth")
HasTreeMaxBins = _simple_mixin(
    "HasTreeMaxBins", "maxBins", "maximum number of bins per feature (2..65536); a feature "
    "with at most this many distinct values gets a bin per value (exact splits)",
    TypeConverters.toInt, "getMaxBins")
HasMinInstancesPerNode = _simple_mixin(
    "HasMinInstancesPerNode", "minInstancesPerNode", "minimum rows in each child of a split "
    "(>= 1; scikit-learn's min_samples_leaf)", TypeConverters.toInt, "getMinInstancesPerNode")
HasMinSamplesSplit = _simple_mixin(
    "HasMinSamplesSplit", "minSamplesSplit", "minimum rows for a node to be split (>= 2; "
    "scikit-learn's min_samples_split)", TypeConverters.toInt, "getMinSamplesSplit")
HasMinWeightFractionPerNode = _simple_mixin(
    "HasMinWeightFractionPerNode", "minWeightFractionPerNode", "minimum fraction of the total "
    "weight in each child of a split, in [0, 0.5] (scikit-learn's min_weight_fraction_leaf)",
    TypeConverters.toFloat, "getMinWeightFractionPerNode")
HasMaxLeafNodes = _simple_mixin(
    "HasMaxLeafNodes", "maxLeafNodes", "grow best-first up to this many leaves (0 = no limit, "
    "else >= 2; scikit-learn's max_leaf_nodes)", TypeConverters.toInt, "getMaxLeafNodes")
HasMinInfoGain = _simple_mixin(
    "HasMinInfoGain", "minInfoGain", "minimum weighted impurity decrease of a split (>= 0; "
    "scikit-learn's min_impurity_decrease)", TypeConverters.toFloat, "getMinInfoGain")
HasFeatureSubsetStrategy = _simple_mixin(
    "HasFeatureSubsetStrategy", "featureSubsetStrategy", "features drawn per node: 'auto', "
    "'all', 'sqrt', 'log2', 'onethird', a fraction in (0, 1] or a count >= 1 (as a string)",
    TypeConverters.toString, "getFeatureSubsetStrategy")
HasClassWeight = _simple_mixin(
    "HasClassWeight", "classWeight", "'balanced': weight classes by n / (K * count), as "
    "scikit-learn's class_weight='balanced' (unset: no class weights)",
    TypeConverters.toString, "getClassWeight")
HasBootstrap = _simple_mixin(
    "HasBootstrap", "bootstrap", "resample rows per tree (Poisson counts) instead of using "
    "each row once", TypeConverters.toBoolean, "getBootstrap")
HasOobScore = _simple_mixin(
    "HasOobScore", "oobScore", "compute the out-of-bag score (accuracy or R^2) after fitting",
    TypeConverters.toBoolean, "getOobScore")


def _subset_strategy():
    names = ("auto", "all", "sqrt", "log2", "onethird")

    def ok(v):
        if v in names:
            return True
        try:
            x = float(v)
        except ValueError:
            return False
        if "." in v or "e" in v.lower():
            return 0.0 < x <= 1.0
        return x >= 1 and float(int(x)) == x

    return ok, f"must be one of {list(names)}, a fraction in (0, 1] or a count >= 1"


RULES.update({
    "criterion": _one_of("gini", "entropy", "log_loss", "squared_error", "friedman_mse",
                         "poisson"),
    "tree:maxDepth": _ge(0),
    "tree:maxBins": _between(2, 65536),
    "minInstancesPerNode": _ge(1),
    "minSamplesSplit": _ge(2),
    "minWeightFractionPerNode": _between(0.0, 0.5),
    "maxLeafNodes": ((lambda v: v == 0 or v >= 2), "must be 0 (no limit) or >= 2"),
    "minInfoGain": _ge(0.0),
    "featureSubsetStrategy": _subset_strategy(),
    "classWeight": _one_of("balanced"),
})


# ---------------------------------------------------------------- GBT models and progress
# (MLlib-compatible GBT models, XGBoost parity, progress of long fits)
# pyspark's HasMaxIter / HasStepSize say ">= 0"; sparkxml's checks want >= 1 and (0, 1]:
# the same param names with docs that state the ranges RULES enforce.
HasMaxIter = _simple_mixin(
    "HasMaxIter", "maxIter", "maximum number of iterations: boosting rounds, solver rounds "
    "or sweeps (>= 1)",
    TypeConverters.toInt, "getMaxIter")
HasStepSize = _simple_mixin(
    "HasStepSize", "stepSize", "step size (learning rate) applied to each iteration, in (0, 1]",
    TypeConverters.toFloat, "getStepSize")
HasVerbose = _simple_mixin(
    "HasVerbose", "verbose", "log progress through the Python logger 'sparkxml' at INFO every "
    "this many rounds (or trees), with the training and validation metrics (>= 0; 0 = "
    "silent)", TypeConverters.toInt, "getVerbose")
HasMissing = _simple_mixin(
    "HasMissing", "missing", "feature value that means 'missing' besides NaN and null "
    "(XGBoost's missing; NaN = only NaN; with 0.0, absent sparse entries are missing too)",
    TypeConverters.toFloat, "getMissing")
HasScalePosWeight = _simple_mixin(
    "HasScalePosWeight", "scalePosWeight", "weight multiplier of the positive class in the "
    "gradients (XGBoost's scale_pos_weight; binary classification; finite, > 0)",
    TypeConverters.toFloat, "getScalePosWeight")
HasBaseMarginCol = _simple_mixin(
    "HasBaseMarginCol", "baseMarginCol", "column of per-row raw scores to start from instead "
    "of the base score, at fit and at predict (XGBoost's base_margin): double, or an array/"
    "vector of numClasses values for multiclass", TypeConverters.toString,
    "getBaseMarginCol")
HasMonotoneConstraints = _simple_mixin(
    "HasMonotoneConstraints", "monotoneConstraints", "per-feature monotone constraint, -1 "
    "(decreasing), 0 (none) or 1 (increasing), as XGBoost's monotone_constraints (a shorter "
    "list leaves the other features unconstrained)", TypeConverters.toListInt,
    "getMonotoneConstraints")
HasPredContribCol = _simple_mixin(
    "HasPredContribCol", "predContribCol", "output column of SHAP feature contributions "
    "(TreeSHAP): array<double> of numFeatures + 1 values (last: bias), array<array<double>> "
    "per class for multiclass; unset: not computed", TypeConverters.toString,
    "getPredContribCol")
HasLeafCol = _simple_mixin(
    "HasLeafCol", "leafCol", "output column of leaf indices: a vector with, per tree, the "
    "index of the reached leaf among its tree's leaves counted left to right (Spark MLlib's "
    "leafCol); unset: not computed", TypeConverters.toString, "getLeafCol")


def _model_or_path(value):
    """initModel: a saved model's path, or a fitted model of the same estimator family."""
    if isinstance(value, str) or hasattr(value, "predictor"):
        return value
    raise TypeError(f"initModel must be a model path (str) or a fitted model, got "
                    f"{type(value).__name__}")


HasInitModel = _simple_mixin(
    "HasInitModel", "initModel", "model to continue training from (XGBoost's xgb_model): "
    "a fitted model or its saved path; training starts from its raw scores and the new "
    "trees are appended to its trees", _model_or_path, "getInitModel")


def _thresholds():
    return ((lambda v: isinstance(v, list) and len(v) >= 2
             and all(math.isfinite(x) and x >= 0 for x in v) and sum(x == 0 for x in v) <= 1),
            "must be a list of >= 2 finite values >= 0 with at most one 0")


def _constraints():
    return ((lambda v: isinstance(v, list) and all(c in (-1, 0, 1) for c in v)),
            "must be a list of -1, 0 or 1")


RULES.update({
    "verbose": _ge(0),
    "missing": ((lambda v: not math.isinf(v)), "must be a finite value or NaN"),
    "scalePosWeight": ((lambda v: math.isfinite(v) and v > 0), "must be finite and > 0"),
    "baseMarginCol": _nonempty(),
    "monotoneConstraints": _constraints(),
    "predContribCol": _nonempty(),
    "leafCol": _nonempty(),
    "thresholds": _thresholds(),
})


# ---------------------------------------------------------------- FastXML / PfastreXML training mode
# (XML models larger than one task)
HasTrainingMode = _simple_mixin(
    "HasTrainingMode", "trainingMode", "how the trees are trained: 'replicated' (every task "
    "holds the whole training set and grows whole trees), 'distributed' (every task holds a "
    "shard of the rows; the top levels of every tree are grown by all tasks together until "
    "a node fits one task, then each such subtree is grown by one task) or 'auto' "
    "(replicated when the estimated per-task memory fits, else distributed)",
    TypeConverters.toString, "getTrainingMode")

RULES.update({
    "trainingMode": _one_of("auto", "replicated", "distributed"),
})


# --------------------------------------------------------------------------------------------
# GBT categorical features (GBTRegressor / GBTClassifier / LambdaMART): LightGBM's
# categorical knobs under camelCase names (sparkxml_kernels.gbt.categorical)


def _str_list():
    return ((lambda v: isinstance(v, list) and all(isinstance(c, str) and c for c in v)),
            "must be a list of feature names")


HasCategoricalCols = _simple_mixin(
    "HasCategoricalCols", "categoricalCols", "features split as categories (LightGBM-style "
    "splits on categories sorted by gradient statistics): names in featuresCols, or names "
    "of the vector column's ML attributes; a vector column's nominal attributes (e.g. from "
    "StringIndexer + VectorAssembler) are categorical too. Values must be integers in "
    "[0, 2**31 - 1), at most as many distinct ones as maxBins has real bins (255 for "
    "256)", TypeConverters.toListString,
    "getCategoricalCols")
HasMaxCatToOnehot = _simple_mixin(
    "HasMaxCatToOnehot", "maxCatToOnehot", "a categorical feature with at most this many "
    "categories splits one category against the rest (LightGBM's max_cat_to_onehot; >= 1)",
    TypeConverters.toInt, "getMaxCatToOnehot")
HasCatSmooth = _simple_mixin(
    "HasCatSmooth", "catSmooth", "added to a category's hessian sum when categories are "
    "sorted by gradient / hessian; categories with a smaller hessian sum are left out of the "
    "search (LightGBM's cat_smooth, which counts rows; >= 0)", TypeConverters.toFloat,
    "getCatSmooth")
HasCatL2 = _simple_mixin(
    "HasCatL2", "catL2", "extra L2 regularisation in the gain of many-vs-many categorical "
    "splits (LightGBM's cat_l2; >= 0)", TypeConverters.toFloat, "getCatL2")
HasMaxCatThreshold = _simple_mixin(
    "HasMaxCatThreshold", "maxCatThreshold", "most categories on the left of a many-vs-many "
    "categorical split (LightGBM's max_cat_threshold; >= 1)", TypeConverters.toInt,
    "getMaxCatThreshold")

RULES.update({
    "categoricalCols": _str_list(),
    "maxCatToOnehot": _ge(1),
    "catSmooth": _ge(0.0),
    "catL2": _ge(0.0),
    "maxCatThreshold": _ge(1),
})


# ---------------------------------------------------------------- threads inside a task
# (GBTRegressor, GBTClassifier, LambdaMART)
HasNthread = _simple_mixin(
    "HasNthread", "nthread", "threads each Spark task uses for binning, histogram building, "
    "partitioning and prediction (>= 1; capped at the cores numba sees); unset: the task's "
    "spark.task.cpus, read in the task as xgboost.spark does. Models are the same whatever "
    "its value", TypeConverters.toInt, "getNthread")

RULES.update({
    "nthread": _ge(1),
})


def add_setters(cls, names):
    for name in names:
        setter = "set" + name[0].upper() + name[1:]
        if not hasattr(cls, setter):
            def _set(self, value, _name=name):
                return self._set(**{_name: value})
            _set.__name__ = setter
            _set.__doc__ = f"Set ``{name}``."
            setattr(cls, setter, _set)
    return cls

