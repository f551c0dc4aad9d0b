"""Params of the gradient-boosted trees: GBTRegressor, GBTClassifier and LambdaMART.

Names follow pyspark.ml where it has one (maxDepth, maxBins, ...) and XGBoost's meaning
otherwise (regLambda = lambda, regAlpha = alpha, minSplitLoss = gamma); the categorical
knobs are LightGBM's under camelCase names (``sparkxml_kernels.gbt.categorical``). The
params GBT shares with the forests and FM live in ``sparkxml._core.params``.
"""
from __future__ import annotations

from typing import Any

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import (
    Rule,
    between,
    feature_names,
    finite_floats,
    finite_positive,
    ge,
    gt,
    nonempty,
    not_infinite,
    one_of,
    open_closed,
)
from sparkxml._core.params import param
from sparkxml_kernels.gbt.classification_metrics import is_classification_metric
from sparkxml_kernels.gbt.regression_metrics import is_regression_metric

# 'error@t' takes a probability threshold t in (0, 1)
GBT_METRICS = ("rmse", "logloss", "error", "auc", "aucpr", "mlogloss", "merror")
# XGBoost's names; quantile, huber and tweedie-nloglik take the objective's parameter or one
# after '@' (sparkxml_kernels.gbt.regression_metrics)
REGRESSION_METRIC_NAMES = ("mae", "quantile", "huber", "poisson-nloglik", "gamma-nloglik",
                           "gamma-deviance", "tweedie-nloglik")


def eval_metric() -> Rule:
    """A GBT metric, or a ranking metric 'ndcg@k' / 'map@k' (k >= 1; bare 'ndcg' / 'map' =
    @10). Each estimator also checks that the metric fits its task."""

    def ok(v):
        if (v in GBT_METRICS or v in REGRESSION_METRIC_NAMES or is_regression_metric(v)
                or is_classification_metric(v)):
            return True
        base, _, k = v.partition("@")
        return base in ("ndcg", "map") and (not k or (k.isdigit() and int(k) >= 1
                                                      and str(int(k)) == k))

    return Rule(ok, f"must be one of {list(GBT_METRICS + REGRESSION_METRIC_NAMES)}, "
                    f"'error@t' (0 < t < 1), 'ndcg@k' or 'map@k' (k >= 1)")


def monotone_signs() -> Rule:
    """A list of -1, 0 or 1 (one monotone constraint a feature)."""
    return Rule(lambda v: isinstance(v, list) and all(c in (-1, 0, 1) for c in v),
                "must be a list of -1, 0 or 1")


def _model_or_path(value):
    """initModel: a saved model's path, or a fitted model of the same estimator family."""
    if isinstance(value, str) or hasattr(value, "predictor"):
        return value
    raise TypeError(f"initModel must be a model path (str) or a fitted model, got "
                    f"{type(value).__name__}")


class HasMaxDepth(Params):
    """Mixin for param maxDepth: maximum depth of a tree (>= 0; 0 = unlimited, only with growPolicy
    'lossguide' and maxLeaves > 0).
    """

    maxDepth: "Param[int]" = param("maxDepth", __doc__, TypeConverters.toInt, ge(0))

    def getMaxDepth(self) -> int:
        """Gets the value of maxDepth or its default value."""
        return self.getOrDefault(self.maxDepth)


class HasMaxLeaves(Params):
    """Mixin for param maxLeaves: maximum number of leaves of a tree (>= 0; 0 = no limit)."""

    maxLeaves: "Param[int]" = param("maxLeaves", __doc__, TypeConverters.toInt, ge(0))

    def getMaxLeaves(self) -> int:
        """Gets the value of maxLeaves or its default value."""
        return self.getOrDefault(self.maxLeaves)


class HasGrowPolicy(Params):
    """Mixin for param growPolicy: 'depthwise' (split every node of a level) or 'lossguide' (split
    the leaf with the highest gain first).
    """

    growPolicy: "Param[str]" = param("growPolicy", __doc__, TypeConverters.toString,
                                     one_of("depthwise", "lossguide"))

    def getGrowPolicy(self) -> str:
        """Gets the value of growPolicy or its default value."""
        return self.getOrDefault(self.growPolicy)


class HasMaxBins(Params):
    """Mixin for param maxBins: maximum number of histogram bins per feature (2..65536; above 256
    the bins are uint16).
    """

    maxBins: "Param[int]" = param("maxBins", __doc__, TypeConverters.toInt, between(2, 65536))

    def getMaxBins(self) -> int:
        """Gets the value of maxBins or its default value."""
        return self.getOrDefault(self.maxBins)


class HasRegLambda(Params):
    """Mixin for param regLambda: L2 regularisation of leaf weights (>= 0)."""

    regLambda: "Param[float]" = param("regLambda", __doc__, TypeConverters.toFloat, ge(0.0))

    def getRegLambda(self) -> float:
        """Gets the value of regLambda or its default value."""
        return self.getOrDefault(self.regLambda)


class HasRegAlpha(Params):
    """Mixin for param regAlpha: L1 regularisation of leaf weights (>= 0)."""

    regAlpha: "Param[float]" = param("regAlpha", __doc__, TypeConverters.toFloat, ge(0.0))

    def getRegAlpha(self) -> float:
        """Gets the value of regAlpha or its default value."""
        return self.getOrDefault(self.regAlpha)


class HasMinSplitLoss(Params):
    """Mixin for param minSplitLoss: minimum loss reduction to make a split (gamma, >= 0)."""

    minSplitLoss: "Param[float]" = param("minSplitLoss", __doc__, TypeConverters.toFloat, ge(0.0))

    def getMinSplitLoss(self) -> float:
        """Gets the value of minSplitLoss or its default value."""
        return self.getOrDefault(self.minSplitLoss)


class HasMinChildWeight(Params):
    """Mixin for param minChildWeight: minimum sum of hessians in a child (>= 0)."""

    minChildWeight: "Param[float]" = param("minChildWeight", __doc__, TypeConverters.toFloat,
                                           ge(0.0))

    def getMinChildWeight(self) -> float:
        """Gets the value of minChildWeight or its default value."""
        return self.getOrDefault(self.minChildWeight)


class HasColsampleByTree(Params):
    """Mixin for param colsampleByTree: fraction of features sampled per tree, in (0, 1]."""

    colsampleByTree: "Param[float]" = param("colsampleByTree", __doc__, TypeConverters.toFloat,
                                            open_closed(0.0, 1.0))

    def getColsampleByTree(self) -> float:
        """Gets the value of colsampleByTree or its default value."""
        return self.getOrDefault(self.colsampleByTree)


class HasEvalMetric(Params):
    """Mixin for param evalMetric: validation metric: rmse, logloss, error, error@t, auc,
    aucpr, mlogloss, merror or a regression objective's (mae, quantile, huber,
    poisson-nloglik, gamma-nloglik, gamma-deviance, tweedie-nloglik) (unset: the objective's
    own).
    """

    evalMetric: "Param[str]" = param("evalMetric", __doc__, TypeConverters.toString, eval_metric())

    def getEvalMetric(self) -> str:
        """Gets the value of evalMetric or its default value."""
        return self.getOrDefault(self.evalMetric)


class HasNumClasses(Params):
    """Mixin for param numClasses: number of classes (2..10000; unset: max label + 1)."""

    numClasses: "Param[int]" = param("numClasses", __doc__, TypeConverters.toInt,
                                     between(2, 10_000))

    def getNumClasses(self) -> int:
        """Gets the value of numClasses or its default value."""
        return self.getOrDefault(self.numClasses)


class HasObjective(Params):
    """Mixin for param objective: ranking objective: 'lambdarank' (LambdaMART, NDCG lambdas),
    'pairwise' (RankNet), 'xendcg' (LightGBM's rank_xendcg) or 'map' (XGBoost's rank:map, MAP
    lambdas, binary labels).
    """

    objective: "Param[str]" = param("objective", __doc__, TypeConverters.toString,
                                    one_of("lambdarank", "pairwise", "xendcg", "map"))

    def getObjective(self) -> str:
        """Gets the value of objective or its default value."""
        return self.getOrDefault(self.objective)


class HasNdcgTruncation(Params):
    """Mixin for param ndcgTruncation: lambdarank truncation level (>= 1): pairs need a document
    ranked above it; the ideal DCG normalising a query is taken at this depth (LightGBM's
    lambdarank_truncation_level).
    """

    ndcgTruncation: "Param[int]" = param("ndcgTruncation", __doc__, TypeConverters.toInt, ge(1))

    def getNdcgTruncation(self) -> int:
        """Gets the value of ndcgTruncation or its default value."""
        return self.getOrDefault(self.ndcgTruncation)


class HasLabelGain(Params):
    """Mixin for param labelGain: gain of each relevance grade 0, 1, 2, ... (non-empty list of
    finite floats; unset: 2^rel - 1).
    """

    labelGain: "Param[list[float]]" = param("labelGain", __doc__, TypeConverters.toListFloat,
                                            finite_floats())

    def getLabelGain(self) -> list[float]:
        """Gets the value of labelGain or its default value."""
        return self.getOrDefault(self.labelGain)


class HasSigma(Params):
    """Mixin for param sigma: steepness of the pair sigmoid (> 0)."""

    sigma: "Param[float]" = param("sigma", __doc__, TypeConverters.toFloat, gt(0.0))

    def getSigma(self) -> float:
        """Gets the value of sigma or its default value."""
        return self.getOrDefault(self.sigma)


class HasLambdarankNorm(Params):
    """Mixin for param lambdarankNorm: normalise lambdas per query (LightGBM's lambdarank_norm)."""

    lambdarankNorm: "Param[bool]" = param("lambdarankNorm", __doc__, TypeConverters.toBoolean)

    def getLambdarankNorm(self) -> bool:
        """Gets the value of lambdarankNorm or its default value."""
        return self.getOrDefault(self.lambdarankNorm)


class HasMissing(Params):
    """Mixin for param missing: feature value that means 'missing' besides NaN and null (XGBoost's
    missing; NaN = only NaN; with 0.0, absent sparse entries are missing too).
    """

    missing: "Param[float]" = param("missing", __doc__, TypeConverters.toFloat, not_infinite())

    def getMissing(self) -> float:
        """Gets the value of missing or its default value."""
        return self.getOrDefault(self.missing)


class HasScalePosWeight(Params):
    """Mixin for param scalePosWeight: weight multiplier of the positive class in the gradients
    (XGBoost's scale_pos_weight; binary classification; finite, > 0).
    """

    scalePosWeight: "Param[float]" = param("scalePosWeight", __doc__, TypeConverters.toFloat,
                                           finite_positive())

    def getScalePosWeight(self) -> float:
        """Gets the value of scalePosWeight or its default value."""
        return self.getOrDefault(self.scalePosWeight)


class HasBaseMarginCol(Params):
    """Mixin for param baseMarginCol: column of per-row raw scores to start from instead of the
    base score, at fit and at predict (XGBoost's base_margin): double, or an array/vector of
    numClasses values for multiclass.
    """

    baseMarginCol: "Param[str]" = param("baseMarginCol", __doc__, TypeConverters.toString,
                                        nonempty())

    def getBaseMarginCol(self) -> str:
        """Gets the value of baseMarginCol or its default value."""
        return self.getOrDefault(self.baseMarginCol)


class HasMonotoneConstraints(Params):
    """Mixin for param monotoneConstraints: per-feature monotone constraint, -1 (decreasing), 0
    (none) or 1 (increasing), as XGBoost's monotone_constraints (a shorter list leaves the other
    features unconstrained).
    """

    monotoneConstraints: "Param[list[int]]" = param(
        "monotoneConstraints", __doc__, TypeConverters.toListInt, monotone_signs())

    def getMonotoneConstraints(self) -> list[int]:
        """Gets the value of monotoneConstraints or its default value."""
        return self.getOrDefault(self.monotoneConstraints)


class HasPredContribCol(Params):
    """Mixin for param predContribCol: output column of SHAP feature contributions (TreeSHAP):
    array<double> of numFeatures + 1 values (last: bias), array<array<double>> per class for
    multiclass; unset: not computed.
    """

    predContribCol: "Param[str]" = param("predContribCol", __doc__, TypeConverters.toString,
                                         nonempty())

    def getPredContribCol(self) -> str:
        """Gets the value of predContribCol or its default value."""
        return self.getOrDefault(self.predContribCol)


class HasLeafCol(Params):
    """Mixin for param leafCol: output column of leaf indices: a vector with, per tree, the index
    of the reached leaf among its tree's leaves counted left to right (Spark MLlib's leafCol);
    unset: not computed.
    """

    leafCol: "Param[str]" = param("leafCol", __doc__, TypeConverters.toString, nonempty())

    def getLeafCol(self) -> str:
        """Gets the value of leafCol or its default value."""
        return self.getOrDefault(self.leafCol)


class HasInitModel(Params):
    """Mixin for param initModel: model to continue training from (XGBoost's xgb_model): a fitted
    model or its saved path; training starts from its raw scores and the new trees are appended
    to its trees.
    """

    initModel: "Param[Any]" = param("initModel", __doc__, _model_or_path)

    def getInitModel(self) -> Any:
        """Gets the value of initModel or its default value."""
        return self.getOrDefault(self.initModel)


class HasCategoricalCols(Params):
    """Mixin for param categoricalCols: features split as categories (LightGBM-style splits on
    categories sorted by gradient statistics): names in featuresCols, or names of the vector
    column's ML attributes; a vector column's nominal attributes (e.g. from StringIndexer +
    VectorAssembler) are categorical too. Values must be integers in [0, 2**31 - 1), at most as
    many distinct ones as maxBins has real bins (255 for 256).
    """

    categoricalCols: "Param[list[str]]" = param(
        "categoricalCols", __doc__, TypeConverters.toListString, feature_names())

    def getCategoricalCols(self) -> list[str]:
        """Gets the value of categoricalCols or its default value."""
        return self.getOrDefault(self.categoricalCols)


class HasMaxCatToOnehot(Params):
    """Mixin for param maxCatToOnehot: a categorical feature with at most this many categories
    splits one category against the rest (LightGBM's max_cat_to_onehot; >= 1).
    """

    maxCatToOnehot: "Param[int]" = param("maxCatToOnehot", __doc__, TypeConverters.toInt, ge(1))

    def getMaxCatToOnehot(self) -> int:
        """Gets the value of maxCatToOnehot or its default value."""
        return self.getOrDefault(self.maxCatToOnehot)


class HasCatSmooth(Params):
    """Mixin for param catSmooth: added to a category's hessian sum when categories are sorted by
    gradient / hessian; categories with fewer rows are left out of the search, a category's
    rows estimated as LightGBM does from its hessian share of the node (LightGBM's cat_smooth;
    >= 0).
    """

    catSmooth: "Param[float]" = param("catSmooth", __doc__, TypeConverters.toFloat, ge(0.0))

    def getCatSmooth(self) -> float:
        """Gets the value of catSmooth or its default value."""
        return self.getOrDefault(self.catSmooth)


class HasCatL2(Params):
    """Mixin for param catL2: extra L2 regularisation in the gain of many-vs-many categorical
    splits (LightGBM's cat_l2; >= 0).
    """

    catL2: "Param[float]" = param("catL2", __doc__, TypeConverters.toFloat, ge(0.0))

    def getCatL2(self) -> float:
        """Gets the value of catL2 or its default value."""
        return self.getOrDefault(self.catL2)


class HasMaxCatThreshold(Params):
    """Mixin for param maxCatThreshold: most categories on the left of a many-vs-many categorical
    split (LightGBM's max_cat_threshold; >= 1).
    """

    maxCatThreshold: "Param[int]" = param("maxCatThreshold", __doc__, TypeConverters.toInt, ge(1))

    def getMaxCatThreshold(self) -> int:
        """Gets the value of maxCatThreshold or its default value."""
        return self.getOrDefault(self.maxCatThreshold)
