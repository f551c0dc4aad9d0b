"""Params of the decision trees and random forests: scikit-learn's tree parameters under
Spark ML names (scikit-learn's name in each doc). maxDepth and maxBins are the trees' own
(HasTreeMaxDepth, HasTreeMaxBins: other docs than GBT's, maxDepth 0 = a single leaf)."""
from __future__ import annotations

import json
import math

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import (
    Rule,
    between,
    feature_names,
    ge,
    nonempty,
    one_of,
    zero_or_ge,
)
from sparkxml._core.params import (
    HasFeaturesCol,
    HasFeaturesCols,
    HasLabelCol,
    HasNthread,
    HasNumTrees,
    HasNumWorkers,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasSeed,
    HasSubsamplingRate,
    HasTimeoutSeconds,
    HasWeightCol,
    param,
)
from sparkxml.gbt.params import HasLeafCol

SUBSET_STRATEGIES = ("auto", "all", "sqrt", "log2", "onethird")


def subset_strategy() -> Rule:
    """A featureSubsetStrategy: a name, a fraction in (0, 1] or a count >= 1 (as a string)."""

    def ok(v):
        if v in SUBSET_STRATEGIES:
            return True
        try:
            x = float(v)
        except ValueError:
            return False
        if "." in v or "e" in v.lower():
            return 0.0 < x <= 1.0
        return x >= 1 and float(int(x)) == x

    return Rule(ok, f"must be one of {list(SUBSET_STRATEGIES)}, a fraction in (0, 1] or a "
                    f"count >= 1")


class HasCriterion(Params):
    """Mixin for param criterion: split criterion: 'gini', 'entropy' (= 'log_loss') for
    classification; 'squared_error', 'friedman_mse', 'poisson', 'absolute_error' for
    regression.
    """

    criterion: "Param[str]" = param(
        "criterion", __doc__, TypeConverters.toString, one_of("gini", "entropy", "log_loss", "squared_error", "friedman_mse",
                           "poisson", "absolute_error"))

    def getCriterion(self) -> str:
        """Gets the value of criterion or its default value."""
        return self.getOrDefault(self.criterion)


class HasTreeMaxDepth(Params):
    """Mixin for param maxDepth: maximum depth of a tree (>= 0; 0 = a single leaf; scikit-learn's
    max_depth).
    """

    maxDepth: "Param[int]" = param("maxDepth", __doc__, TypeConverters.toInt, ge(0))

    def getMaxDepth(self) -> int:
        """Gets the value of maxDepth or its default value."""
        return self.getOrDefault(self.maxDepth)


class HasTreeMaxBins(Params):
    """Mixin for param maxBins: maximum number of bins per feature (2..65536); a feature with at
    most this many distinct values gets a bin per value (exact splits).
    """

    maxBins: "Param[int]" = param("maxBins", __doc__, TypeConverters.toInt, between(2, 65536))

    def getMaxBins(self) -> int:
        """Gets the value of maxBins or its default value."""
        return self.getOrDefault(self.maxBins)


class HasMinInstancesPerNode(Params):
    """Mixin for param minInstancesPerNode: minimum rows in each child of a split (>= 1;
    scikit-learn's min_samples_leaf).
    """

    minInstancesPerNode: "Param[int]" = param("minInstancesPerNode", __doc__, TypeConverters.toInt,
                                              ge(1))

    def getMinInstancesPerNode(self) -> int:
        """Gets the value of minInstancesPerNode or its default value."""
        return self.getOrDefault(self.minInstancesPerNode)


class HasMinSamplesSplit(Params):
    """Mixin for param minSamplesSplit: minimum rows for a node to be split (>= 2; scikit-learn's
    min_samples_split).
    """

    minSamplesSplit: "Param[int]" = param("minSamplesSplit", __doc__, TypeConverters.toInt, ge(2))

    def getMinSamplesSplit(self) -> int:
        """Gets the value of minSamplesSplit or its default value."""
        return self.getOrDefault(self.minSamplesSplit)


class HasMinWeightFractionPerNode(Params):
    """Mixin for param minWeightFractionPerNode: minimum fraction of the total weight in each child
    of a split, in [0, 0.5] (scikit-learn's min_weight_fraction_leaf).
    """

    minWeightFractionPerNode: "Param[float]" = param(
        "minWeightFractionPerNode", __doc__, TypeConverters.toFloat, between(0.0, 0.5))

    def getMinWeightFractionPerNode(self) -> float:
        """Gets the value of minWeightFractionPerNode or its default value."""
        return self.getOrDefault(self.minWeightFractionPerNode)


class HasMaxLeafNodes(Params):
    """Mixin for param maxLeafNodes: grow best-first up to this many leaves (0 = no limit, else >=
    2; scikit-learn's max_leaf_nodes).
    """

    maxLeafNodes: "Param[int]" = param("maxLeafNodes", __doc__, TypeConverters.toInt,
                                       zero_or_ge(2))

    def getMaxLeafNodes(self) -> int:
        """Gets the value of maxLeafNodes or its default value."""
        return self.getOrDefault(self.maxLeafNodes)


class HasMinInfoGain(Params):
    """Mixin for param minInfoGain: minimum weighted impurity decrease of a split (>= 0;
    scikit-learn's min_impurity_decrease).
    """

    minInfoGain: "Param[float]" = param("minInfoGain", __doc__, TypeConverters.toFloat, ge(0.0))

    def getMinInfoGain(self) -> float:
        """Gets the value of minInfoGain or its default value."""
        return self.getOrDefault(self.minInfoGain)


class HasFeatureSubsetStrategy(Params):
    """Mixin for param featureSubsetStrategy: features drawn per node: 'auto', 'all', 'sqrt',
    'log2', 'onethird', a fraction in (0, 1] or a count >= 1 (as a string).
    """

    featureSubsetStrategy: "Param[str]" = param(
        "featureSubsetStrategy", __doc__, TypeConverters.toString, subset_strategy())

    def getFeatureSubsetStrategy(self) -> str:
        """Gets the value of featureSubsetStrategy or its default value."""
        return self.getOrDefault(self.featureSubsetStrategy)


def class_weight_map(value) -> dict | None:
    """A classWeight given as a dict (or its JSON string) as {class id: weight}; None for
    'balanced'. Raises ValueError/TypeError for anything else."""
    if value == "balanced":
        return None
    d = json.loads(value) if isinstance(value, str) else dict(value)
    if not isinstance(d, dict) or not d:
        raise ValueError("not a non-empty mapping")
    out = {}
    for k, w in d.items():
        c = float(k)
        if c != int(c) or c < 0:
            raise ValueError(f"class {k!r} is not a class id")
        if isinstance(w, bool) or not math.isfinite(float(w)) or float(w) < 0:
            raise ValueError(f"weight {w!r} is not a finite number >= 0")
        out[int(c)] = float(w)
    return out


def _to_class_weight(value):
    """classWeight's converter: 'balanced' as is, a dict as a JSON string (a valid one in
    canonical form; the constraint reports an invalid one)."""
    if isinstance(value, dict):
        try:
            return json.dumps({str(k): v for k, v in sorted(class_weight_map(value).items())})
        except (TypeError, ValueError):
            return json.dumps({str(k): v for k, v in value.items()}, default=str)
    return TypeConverters.toString(value)


def _class_weight_ok(value) -> bool:
    try:
        class_weight_map(value)
        return True
    except (TypeError, ValueError):
        return False


class HasClassWeight(Params):
    """Mixin for param classWeight: 'balanced' (weight classes by n / (K * count), as
    scikit-learn's class_weight='balanced') or a dict {class id: weight >= 0} (classes not in
    it weigh 1; stored as a JSON string); unset: no class weights.
    """

    classWeight: "Param[str]" = param(
        "classWeight", __doc__, _to_class_weight, Rule(_class_weight_ok, "must be 'balanced' or a dict "
                                                          "{class id >= 0: weight >= 0}"))

    def getClassWeight(self) -> str:
        """Gets the value of classWeight or its default value."""
        return self.getOrDefault(self.classWeight)


class HasBootstrap(Params):
    """Mixin for param bootstrap: resample rows per tree (Poisson counts) instead of using each row
    once.
    """

    bootstrap: "Param[bool]" = param("bootstrap", __doc__, TypeConverters.toBoolean)

    def getBootstrap(self) -> bool:
        """Gets the value of bootstrap or its default value."""
        return self.getOrDefault(self.bootstrap)


class HasOobScore(Params):
    """Mixin for param oobScore: compute the out-of-bag score (accuracy or R^2) after fitting."""

    oobScore: "Param[bool]" = param("oobScore", __doc__, TypeConverters.toBoolean)

    def getOobScore(self) -> bool:
        """Gets the value of oobScore or its default value."""
        return self.getOrDefault(self.oobScore)


class HasCcpAlpha(Params):
    """Mixin for param ccpAlpha: complexity parameter of minimal cost-complexity pruning: the
    subtree with the largest cost complexity below it is kept (>= 0; 0 prunes nothing;
    scikit-learn's ccp_alpha).
    """

    ccpAlpha: "Param[float]" = param("ccpAlpha", __doc__, TypeConverters.toFloat, ge(0.0))

    def getCcpAlpha(self) -> float:
        """Gets the value of ccpAlpha or its default value."""
        return self.getOrDefault(self.ccpAlpha)


class HasMonotonicConstraints(Params):
    """Mixin for param monotonicConstraints: per-feature monotonic constraint on the
    prediction, -1 (decreasing), 0 (none) or 1 (increasing), one per feature (scikit-learn's
    monotonic_cst; classification: binary only, on class 1's probability).
    """

    monotonicConstraints: "Param[list[int]]" = Param(
        Params._dummy(), "monotonicConstraints",
        "per-feature monotonic constraint on the prediction, -1 (decreasing), 0 (none) or 1 "
        "(increasing), one per feature (scikit-learn's monotonic_cst; classification: binary "
        "only, on class 1's probability)",
        typeConverter=TypeConverters.toListInt)
    _constraints = {"monotonicConstraints": Rule(
        lambda v: isinstance(v, list) and all(c in (-1, 0, 1) for c in v),
        "must be a list of -1, 0 or 1")}

    def getMonotonicConstraints(self) -> list:
        """Gets the value of monotonicConstraints or its default value."""
        return self.getOrDefault(self.monotonicConstraints)


# ---------------------------------------------------------------- quantile regression forests
def _quantiles_ok(v) -> bool:
    return isinstance(v, list) and all(isinstance(q, float) and 0.0 < q < 1.0 for q in v)


class HasQuantiles(Params):
    """Mixin for param quantiles: quantiles to predict, each in the open interval (0, 1)
    (empty: none). Non-empty at fit time, the forest keeps every leaf's training labels
    (memory: up to 16 bytes x rows x numTrees) and outputs these quantiles in
    quantilesCol; on a model fitted with quantiles, any list may be set (quantile-forest's
    quantiles).
    """

    quantiles: "Param[list[float]]" = param(
        "quantiles", __doc__, TypeConverters.toListFloat, Rule(_quantiles_ok, "must be a list of numbers in (0, 1)"))

    def getQuantiles(self) -> list:
        """Gets the value of quantiles or its default value."""
        return self.getOrDefault(self.quantiles)


class HasQuantilesCol(Params):
    """Mixin for param quantilesCol: output column of the predicted quantiles (array<double>,
    one per entry of quantiles, in their order), added when quantiles is not empty.
    """

    quantilesCol: "Param[str]" = param("quantilesCol", __doc__, TypeConverters.toString,
                                       nonempty())

    def getQuantilesCol(self) -> str:
        """Gets the value of quantilesCol or its default value."""
        return self.getOrDefault(self.quantilesCol)


# ---------------------------------------------------------------- categorical features
class HasRowIndexCol(Params):
    """Mixin for param rowIndexCol: column of each row's position in scikit-learn's training
    array (distinct integers >= 0, no nulls). When set, the forest replays scikit-learn's
    RandomForestClassifier(random_state=seed) on the rows in that order: its bootstrap
    samples, feature draws and summation order, so every tree equals scikit-learn's node for
    node.
    """

    rowIndexCol: "Param[str]" = param("rowIndexCol", __doc__, TypeConverters.toString,
                                      nonempty())

    def getRowIndexCol(self) -> str:
        """Gets the value of rowIndexCol or its default value."""
        return self.getOrDefault(self.rowIndexCol)


class HasTreeCategoricalCols(Params):
    """Mixin for param categoricalCols: features split as categories: names in featuresCols,
    or names of the vector column's ML attributes; the vector column's nominal attributes
    (VectorIndexer, StringIndexer + VectorAssembler) are categorical too. Values are
    category ids, integers in [0, K) with K the attribute's number of values (else the
    largest id + 1), K at most maxBins - 1; no missing values in training. A split sends a
    set of categories left (Breiman's sorted-prefix search).
    """

    categoricalCols: "Param[list[str]]" = param(
        "categoricalCols", __doc__, TypeConverters.toListString, feature_names())

    def getCategoricalCols(self) -> list[str]:
        """Gets the value of categoricalCols or its default value."""
        return self.getOrDefault(self.categoricalCols)


# ============================================================================ groups
TREE_PARAMS = ("featuresCol", "featuresCols", "labelCol", "weightCol", "predictionCol",
               "criterion", "maxDepth", "maxBins", "minInstancesPerNode", "minSamplesSplit",
               "minWeightFractionPerNode", "maxLeafNodes", "minInfoGain",
               "featureSubsetStrategy", "seed", "numWorkers", "timeoutSeconds", "verbose",
               "ccpAlpha", "leafCol", "monotonicConstraints", "categoricalCols")
CLASSIFIER_PARAMS = ("rawPredictionCol", "probabilityCol", "classWeight")
FOREST_PARAMS = ("numTrees", "bootstrap", "subsamplingRate", "oobScore", "nthread")


class TreeParams(HasFeaturesCol, HasFeaturesCols, HasLabelCol, HasWeightCol, HasPredictionCol,
                  HasCriterion, HasTreeMaxDepth, HasTreeMaxBins, HasMinInstancesPerNode,
                  HasMinSamplesSplit, HasMinWeightFractionPerNode, HasMaxLeafNodes,
                  HasMinInfoGain, HasFeatureSubsetStrategy, HasSeed, HasNumWorkers,
                  HasTimeoutSeconds, HasCcpAlpha, HasLeafCol, HasMonotonicConstraints,
                  HasTreeCategoricalCols):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", predictionCol="prediction",
                         maxDepth=5, maxBins=256, minInstancesPerNode=1, minSamplesSplit=2,
                         minWeightFractionPerNode=0.0, maxLeafNodes=0, minInfoGain=0.0,
                         featureSubsetStrategy="auto", seed=0, timeoutSeconds=600.0,
                         ccpAlpha=0.0)

    def _features_spec(self) -> dict:
        if self.isSet(self.featuresCols) and self.getFeaturesCols():
            return {"kind": "columns", "cols": list(self.getFeaturesCols())}
        return {"kind": "vector", "col": self.getFeaturesCol()}


class ClassifierParams(HasRawPredictionCol, HasProbabilityCol, HasClassWeight):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(rawPredictionCol="rawPrediction", probabilityCol="probability")


class ForestParams(HasNumTrees, HasBootstrap, HasSubsamplingRate, HasOobScore, HasNthread):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(numTrees=20, bootstrap=True, subsamplingRate=1.0, oobScore=False)


def n_subset_features(strategy: str, d: int, classification: bool, forest: bool) -> int:
    """Features drawn per node (scikit-learn's rounding: int(sqrt(d)), int(log2(d)),
    int(fraction * d), at least 1). 'auto': all for a single tree; sqrt (classification) or
    onethird (regression) for a forest, as Spark MLlib."""
    if strategy == "auto":
        strategy = "all" if not forest else ("sqrt" if classification else "onethird")
    if strategy == "all":
        k = d
    elif strategy == "sqrt":
        k = int(math.sqrt(d))
    elif strategy == "log2":
        k = int(math.log2(d)) if d > 0 else 1
    elif strategy == "onethird":
        k = int(d / 3)
    elif "." in strategy or "e" in strategy.lower():
        k = int(float(strategy) * d)
    else:
        k = min(int(strategy), d)
    return max(1, min(k, d))
