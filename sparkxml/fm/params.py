"""Params of the factorization machines: FMRegressor / FMClassifier, GBFMRegressor /
GBFMClassifier, FFMRegressor / FFMClassifier (their params classes, with the defaults, are
here too) and FieldEncoder. Names follow pyspark.ml's FM estimators where they exist.
"""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasFitIntercept, HasProbabilityCol, HasRawPredictionCol, HasTol

from sparkxml._core.constraints import Rule, column_list, ge, gt, nonempty, one_of, open_closed
from sparkxml._core.params import (
    HasFeaturesCol,
    HasLabelCol,
    HasMaxIter,
    HasNumWorkers,
    HasPredictionCol,
    HasRegParam,
    HasSeed,
    HasStepSize,
    HasTimeoutSeconds,
    HasWeightCol,
    param,
)


def field_starts() -> Rule:
    """Field start indices: a non-empty strictly ascending list of ints starting at 0."""
    return Rule(lambda v: (isinstance(v, list) and len(v) >= 1 and v[0] == 0
                           and all(b > a for a, b in zip(v, v[1:]))),
                "must be a non-empty strictly ascending list of ints starting at 0")


# the classifiers' output columns beyond predictionCol, with their defaults
CLASSIFIER_OUTPUTS = {"rawPredictionCol": "rawPrediction", "probabilityCol": "probability"}


class HasFactorSize(Params):
    """Mixin for param factorSize: dimensionality of the factors (>= 1)."""

    factorSize: "Param[int]" = param("factorSize", __doc__, TypeConverters.toInt, ge(1))

    def getFactorSize(self) -> int:
        """Gets the value of factorSize or its default value."""
        return self.getOrDefault(self.factorSize)


class HasFMSolver(Params):
    """Mixin for param solver: FM training algorithm: 'mcmc' (Gibbs sampling with hyper-priors,
    libFM/myFM; no regularisation to tune), 'als' (coordinate descent) or 'adamw' (mini-batch).
    """

    solver: "Param[str]" = param("solver", __doc__, TypeConverters.toString,
                                 one_of("mcmc", "als", "adamw"))

    def getSolver(self) -> str:
        """Gets the value of solver or its default value."""
        return self.getOrDefault(self.solver)


class HasFMLoss(Params):
    """Mixin for param loss: FMRegressor's likelihood: 'squared' (Gaussian noise) or 'ordinal'
    (ordered probit with learned cutpoints, myFM's MyFMOrderedProbit; solver 'mcmc' only;
    labels: consecutive integers).
    """

    loss: "Param[str]" = param("loss", __doc__, TypeConverters.toString,
                               one_of("squared", "ordinal"))

    def getLoss(self) -> str:
        """Gets the value of loss or its default value."""
        return self.getOrDefault(self.loss)


class HasInitStd(Params):
    """Mixin for param initStd: standard deviation of the initial factors (> 0)."""

    initStd: "Param[float]" = param("initStd", __doc__, TypeConverters.toFloat, gt(0.0))

    def getInitStd(self) -> float:
        """Gets the value of initStd or its default value."""
        return self.getOrDefault(self.initStd)


class HasFitLinear(Params):
    """Mixin for param fitLinear: whether to fit the linear (first-order) terms."""

    fitLinear: "Param[bool]" = param("fitLinear", __doc__, TypeConverters.toBoolean)

    def getFitLinear(self) -> bool:
        """Gets the value of fitLinear or its default value."""
        return self.getOrDefault(self.fitLinear)


class HasBurnIn(Params):
    """Mixin for param burnIn: MCMC sweeps discarded before samples are kept (>= 0, < maxIter)."""

    burnIn: "Param[int]" = param("burnIn", __doc__, TypeConverters.toInt, ge(0))

    def getBurnIn(self) -> int:
        """Gets the value of burnIn or its default value."""
        return self.getOrDefault(self.burnIn)


class HasThinning(Params):
    """Mixin for param thinning: MCMC: keep every thinning-th sample after burn-in (>= 1)."""

    thinning: "Param[int]" = param("thinning", __doc__, TypeConverters.toInt, ge(1))

    def getThinning(self) -> int:
        """Gets the value of thinning or its default value."""
        return self.getOrDefault(self.thinning)


class HasMiniBatchFraction(Params):
    """Mixin for param miniBatchFraction: adamw: fraction of the rows in one mini-batch, in (0, 1].
    """

    miniBatchFraction: "Param[float]" = param("miniBatchFraction", __doc__, TypeConverters.toFloat,
                                              open_closed(0.0, 1.0))

    def getMiniBatchFraction(self) -> float:
        """Gets the value of miniBatchFraction or its default value."""
        return self.getOrDefault(self.miniBatchFraction)


class HasFieldStarts(Params):
    """Mixin for param fieldStarts: start index of each field of the feature vector: strictly
    ascending, first 0, all below the vector size (a field runs to the next start or the end).
    """

    fieldStarts: "Param[list[int]]" = param("fieldStarts", __doc__, TypeConverters.toListInt,
                                            field_starts())

    def getFieldStarts(self) -> list[int]:
        """Gets the value of fieldStarts or its default value."""
        return self.getOrDefault(self.fieldStarts)


class HasNumStages(Params):
    """Mixin for param numStages: number of boosting stages, one field pair each (>= 1)."""

    numStages: "Param[int]" = param("numStages", __doc__, TypeConverters.toInt, ge(1))

    def getNumStages(self) -> int:
        """Gets the value of numStages or its default value."""
        return self.getOrDefault(self.numStages)


class HasInputCols(Params):
    """Mixin for param inputCols: categorical input columns (string, integer or boolean; array<...>
    for multi-valued ones), one field each.
    """

    inputCols: "Param[list[str]]" = param("inputCols", __doc__, TypeConverters.toListString,
                                          column_list())

    def getInputCols(self) -> list[str]:
        """Gets the value of inputCols or its default value."""
        return self.getOrDefault(self.inputCols)


class HasOutputCol(Params):
    """Mixin for param outputCol: output column name."""

    outputCol: "Param[str]" = param("outputCol", __doc__, TypeConverters.toString, nonempty())

    def getOutputCol(self) -> str:
        """Gets the value of outputCol or its default value."""
        return self.getOrDefault(self.outputCol)


class HasHandleInvalid(Params):
    """Mixin for param handleInvalid: category unseen at fit, or null: 'keep' (no feature for that
    field), 'skip' (drop the row) or 'error'.
    """

    handleInvalid: "Param[str]" = param("handleInvalid", __doc__, TypeConverters.toString,
                                        one_of("keep", "skip", "error"))

    def getHandleInvalid(self) -> str:
        """Gets the value of handleInvalid or its default value."""
        return self.getOrDefault(self.handleInvalid)


class HasJointFit(Params):
    """Mixin for param jointFit: GBFM: after boosting selects the field pairs, refit them together:
    'mcmc' (an FM restricted to the selected pairs, by FMRegressor's Gibbs sampler) or 'none'
    (keep the boosted stages).
    """

    jointFit: "Param[str]" = param("jointFit", __doc__, TypeConverters.toString,
                                   one_of("mcmc", "none"))

    def getJointFit(self) -> str:
        """Gets the value of jointFit or its default value."""
        return self.getOrDefault(self.jointFit)


class HasJointIter(Params):
    """Mixin for param jointIter: GBFM: MCMC sweeps of the joint fit (>= 1, > burnIn)."""

    jointIter: "Param[int]" = param("jointIter", __doc__, TypeConverters.toInt, ge(1))

    def getJointIter(self) -> int:
        """Gets the value of jointIter or its default value."""
        return self.getOrDefault(self.jointIter)


def _fm_model_or_path(value):
    """initModel: a saved FM model's path, or a fitted FMRegressionModel/FMClassificationModel."""
    if isinstance(value, str) or (hasattr(value, "_predictor") and hasattr(value, "factors")):
        return value
    raise TypeError(f"initModel must be a saved FM model's path (str) or a fitted FM model, "
                    f"got {type(value).__name__}")


class HasFMInitModel(Params):
    """Mixin for param initModel: FM model to start training from (a warm start): a fitted
    FMRegressionModel / FMClassificationModel or its saved path, with the same vector size and
    factorSize; training starts from its parameters (MCMC models: their posterior mean).
    """

    initModel: "Param[object]" = param("initModel", __doc__, _fm_model_or_path)

    def getInitModel(self):
        """Gets the value of initModel or its default value."""
        return self.getOrDefault(self.initModel)


def _relation_blocks(value):
    """relationBlocks: a list whose items are DataFrames or local matrices (numpy 2-D arrays,
    scipy.sparse matrices)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"relationBlocks must be a list of DataFrames or matrices, got "
                        f"{type(value).__name__}")
    for i, b in enumerate(value):
        # a DataFrame first: a Connect DataFrame answers any other attribute with a Column
        is_frame = hasattr(b, "columns") and hasattr(b, "select")
        if not is_frame and not (hasattr(b, "shape") and len(getattr(b, "shape", ())) == 2):
            raise TypeError(f"relationBlocks[{i}] must be a DataFrame (columns 'index' and "
                            f"'features') or a 2-D numpy / scipy.sparse matrix, got "
                            f"{type(b).__name__}")
    return list(value)


class HasRelationCols(Params):
    """Mixin for param relationCols: integer columns, one per relation block: the block row
    (0-based, < the block's rows) whose features the row takes (myFM's relation blocks)."""

    relationCols: "Param[list[str]]" = param("relationCols", __doc__, TypeConverters.toListString,
                                             column_list())

    def getRelationCols(self) -> list:
        """Gets the value of relationCols or its default value."""
        return self.getOrDefault(self.relationCols)


class HasRelationBlocks(Params):
    """Mixin for param relationBlocks: the relation blocks, one per relationCols entry, each
    stored once: a DataFrame with an integer 'index' column and a vector 'features' column
    (collected to the driver once), or a numpy 2-D array / scipy.sparse matrix (row b = block
    row b)."""

    relationBlocks: "Param[list]" = param("relationBlocks", __doc__, _relation_blocks)

    def getRelationBlocks(self) -> list:
        """Gets the value of relationBlocks or its default value."""
        return self.getOrDefault(self.relationBlocks)


# ---------------------------------------------------------------- field-aware FM (FFM)
class FactorParams(HasFeaturesCol, HasPredictionCol, HasFactorSize, HasMaxIter, HasRegParam,
                   HasStepSize, HasInitStd, HasSeed, HasNumWorkers, HasTimeoutSeconds):
    """The params of every factorization model here (FM, GBFM, FMRanker): columns, factor
    size, optimisation, seed and workers, with the defaults they share (each family sets the
    others)."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(predictionCol="prediction", seed=0, timeoutSeconds=600.0)


class FMCoreParams(FactorParams, HasLabelCol, HasWeightCol, HasFieldStarts, HasBurnIn):
    """FactorParams and the params FMRegressor / FMClassifier and GBFMRegressor /
    GBFMClassifier add (labels, weights, fields, the MCMC burn-in)."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", factorSize=8, burnIn=5)


# the names of the params above and verbose (every estimator's), for add_setters
FACTOR_PARAMS = ("featuresCol", "predictionCol", "factorSize", "maxIter", "regParam",
                 "stepSize", "initStd", "seed", "numWorkers", "timeoutSeconds", "verbose")
FM_CORE_PARAMS = FACTOR_PARAMS + ("labelCol", "weightCol", "fieldStarts", "burnIn")


class HasFFMSolver(Params):
    """Mixin for param solver: FFM training algorithm: 'adagrad' (libffm's adagrad SGD, one
    row at a time), 'als' (exact coordinate descent, as FMRegressor's) or 'mcmc' (Gibbs
    sampling with hyper-priors, as FMRegressor's); every worker count gives the same model.
    """

    solver: "Param[str]" = param("solver", __doc__, TypeConverters.toString,
                                 one_of("adagrad", "als", "mcmc"))

    def getSolver(self) -> str:
        """Gets the value of solver or its default value."""
        return self.getOrDefault(self.solver)


class HasNormalize(Params):
    """Mixin for param normalize: FFM: scale each row to unit L2 norm before it enters the
    model (libffm's instance-wise normalisation, on by default there and here).
    """

    normalize: "Param[bool]" = param("normalize", __doc__, TypeConverters.toBoolean)

    def getNormalize(self) -> bool:
        """Gets the value of normalize or its default value."""
        return self.getOrDefault(self.normalize)
# ---------------------------------------------------------------- FMRanker (implicit feedback)
class HasUserCol(Params):
    """Mixin for param userCol: column of user ids (integer, not null)."""

    userCol: "Param[str]" = param("userCol", __doc__, TypeConverters.toString, nonempty())

    def getUserCol(self) -> str:
        """Gets the value of userCol or its default value."""
        return self.getOrDefault(self.userCol)


class HasItemCol(Params):
    """Mixin for param itemCol: column of item ids (integer, not null)."""

    itemCol: "Param[str]" = param("itemCol", __doc__, TypeConverters.toString, nonempty())

    def getItemCol(self) -> str:
        """Gets the value of itemCol or its default value."""
        return self.getOrDefault(self.itemCol)


class HasNumNegatives(Params):
    """Mixin for param numNegatives: negative items sampled per training row and epoch (>= 1).
    """

    numNegatives: "Param[int]" = param("numNegatives", __doc__, TypeConverters.toInt, ge(1))

    def getNumNegatives(self) -> int:
        """Gets the value of numNegatives or its default value."""
        return self.getOrDefault(self.numNegatives)


class HasColdStartStrategy(Params):
    """Mixin for param coldStartStrategy: transform rows whose user or item was not seen in
    training: 'nan' (score NaN) or 'drop' (drop the row), as MLlib's ALS.
    """

    coldStartStrategy: "Param[str]" = param("coldStartStrategy", __doc__, TypeConverters.toString,
                                            one_of("nan", "drop"))

    def getColdStartStrategy(self) -> str:
        """Gets the value of coldStartStrategy or its default value."""
        return self.getOrDefault(self.coldStartStrategy)


class FFMParams(FMCoreParams, HasFFMSolver, HasNormalize, HasFitIntercept, HasFitLinear,
                HasThinning, HasTol):
    """The params of FFMRegressor and its model, with their defaults."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(factorSize=4, solver="adagrad", maxIter=15, stepSize=0.2,
                         regParam=2e-5, normalize=True, fitIntercept=True, fitLinear=True,
                         initStd=0.1, thinning=1, tol=1e-6)


class FFMClassifierParams(FFMParams, HasRawPredictionCol, HasProbabilityCol):
    """FFMParams with the classifier's output columns."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(**CLASSIFIER_OUTPUTS)
