"""The params of GBTRegressor and GBTClassifier and their models, and the lists of param names
each class takes (``COMMON_PARAMS`` is shared with LambdaMART)."""
from __future__ import annotations

from sparkxml._core.params import (
    HasEarlyStoppingRounds,
    HasFeaturesCol,
    HasFeaturesCols,
    HasLabelCol,
    HasMaxIter,
    HasNthread,
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
    HasWeightCol,
)
from sparkxml.gbt.booster_params import DART_PARAMS, BoosterTypeParams
from sparkxml.gbt.node_params import NodeFeatureParams
from sparkxml.gbt.objective_params import HasEvalMetrics, RegressionObjectiveParams
from sparkxml.gbt.params import (
    HasBaseMarginCol,
    HasCategoricalCols,
    HasCatL2,
    HasCatSmooth,
    HasColsampleByTree,
    HasEvalMetric,
    HasGrowPolicy,
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
    HasNumClasses,
    HasPredContribCol,
    HasRegAlpha,
    HasRegLambda,
    HasScalePosWeight,
)
from sparkxml.gbt.tree_method_params import (
    QUANTIZED_GRAD_PARAMS,
    HasTreeMethod,
    QuantizedGradParams,
)


class GBTParams(HasFeaturesCol, HasFeaturesCols, HasLabelCol, HasWeightCol, HasPredictionCol,
                 HasMaxIter, HasStepSize, HasMaxDepth, HasMaxLeaves, HasGrowPolicy, HasMaxBins,
                 HasRegLambda, HasRegAlpha, HasMinSplitLoss, HasMinChildWeight,
                 HasSubsamplingRate, HasColsampleByTree, HasSeed, HasNumWorkers,
                 HasValidationIndicatorCol, HasEarlyStoppingRounds, HasEvalMetric,
                 HasTimeoutSeconds, HasMissing, HasBaseMarginCol, HasMonotoneConstraints,
                 HasPredContribCol, HasLeafCol, HasCategoricalCols, HasMaxCatToOnehot,
                 HasCatSmooth, HasCatL2, HasMaxCatThreshold, HasNthread, BoosterTypeParams,
                 NodeFeatureParams,
                 # split finding
                 HasTreeMethod, QuantizedGradParams):
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
                           HasThresholds, HasScalePosWeight, HasEvalMetrics):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(rawPredictionCol="rawPrediction", probabilityCol="probability",
                         scalePosWeight=1.0)


class _GBTRegressorParams(GBTParams, RegressionObjectiveParams, HasRawPredictionCol):
    pass


COMMON_PARAMS = ("featuresCol", "featuresCols", "labelCol", "weightCol", "predictionCol",
                  "maxIter", "stepSize", "maxDepth", "maxLeaves", "growPolicy", "maxBins",
                  "regLambda", "regAlpha", "minSplitLoss", "minChildWeight", "subsamplingRate",
                  "colsampleByTree", "seed", "numWorkers", "validationIndicatorCol",
                  "earlyStoppingRounds", "evalMetric", "timeoutSeconds", "missing",
                  "baseMarginCol", "monotoneConstraints", "predContribCol", "leafCol",
                  "verbose", "initModel", "categoricalCols", "maxCatToOnehot", "catSmooth",
                  "catL2", "maxCatThreshold", "nthread", "colsampleByLevel", "colsampleByNode",
                  "interactionConstraints") + DART_PARAMS + (
                  # split finding
                  "treeMethod",) + QUANTIZED_GRAD_PARAMS
_REGRESSOR_PARAMS = ("objective", "lossType", "huberDelta", "quantileAlpha",
                     "tweedieVariancePower", "maxDeltaStep", "baseScore", "rawPredictionCol",
                     "evalMetrics")
_CLASSIFIER_PARAMS = ("rawPredictionCol", "probabilityCol", "numClasses", "thresholds",
                      "scalePosWeight", "evalMetrics")
# what a fitted model lets you change before transform
_MODEL_PARAMS = ("featuresCol", "featuresCols", "predictionCol", "predContribCol", "leafCol",
                 "missing", "baseMarginCol", "nthread")
