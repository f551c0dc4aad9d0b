"""Random forests with scikit-learn's criteria on Spark: ``RandomForestClassifier`` and
``RandomForestRegressor``.

All trees grow in ONE barrier stage, level by level, with one histogram reduce per level for
all trees' frontier nodes (``sparkxml_kernels.forest.forest``). A node whose rows are few
enough that shipping them costs less than its histogram is finished in one process from its
rows, with the same split search. Bootstrap counts come from hash(row content key, seed,
tree) -- Poisson(subsamplingRate) as Spark MLlib -- and each node's features from hash(seed,
tree, node path), so the model is the same for any numWorkers and input partitioning (with
integer weights; otherwise up to rounding on near-ties). Probabilities average the trees'
leaf class fractions and ``featureImportances`` averages their normalised impurity
decreases, as scikit-learn.

Differences from scikit-learn's forests: bootstrap counts are Poisson (MLlib), not a
multinomial draw of n rows; a node whose drawn features are all constant becomes a leaf (as
MLlib) where scikit-learn draws further features; the random streams differ (hashes).
"""
from __future__ import annotations

from pyspark import keyword_only

from sparkxml._core.constraints import Rule
from sparkxml.forest.base import (
    ClassificationModelMixin,
    ClassifierParams,
    ForestModelMixin,
    ForestParams,
    TreeEstimator,
    TreeModel,
    TreeParams,
    add_tree_setters,
)
from sparkxml.forest.params import _class_weight_ok

__all__ = ["RandomForestClassifier", "RandomForestClassificationModel",
           "RandomForestRegressor", "RandomForestRegressionModel"]


def _forest_class_weight_ok(value) -> bool:
    return value == "balanced_subsample" or _class_weight_ok(value)


class _RFClassifierParams(TreeParams, ClassifierParams, ForestParams):
    # forests also weigh classes per tree sample (scikit-learn's "balanced_subsample")
    _constraints = {"classWeight": Rule(_forest_class_weight_ok,
                                        "must be 'balanced', 'balanced_subsample' or a dict "
                                        "{class id >= 0: weight >= 0}")}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(criterion="gini")


class _RFRegressorParams(TreeParams, ForestParams):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(criterion="squared_error")


class _ForestEstimator(TreeEstimator):
    _forest = True

    def _engine_config(self) -> dict:
        boot = bool(self.getBootstrap())
        rate = float(self.getSubsamplingRate())
        oob = bool(self.getOobScore())
        if oob and not boot and rate >= 1.0:
            raise ValueError("oobScore=True needs bootstrap=True or subsamplingRate < 1 (with "
                             "every row in every tree there is no out-of-bag row)")
        return {"kind": "forest", "n_trees": int(self.getNumTrees()),
                "seed": int(self.getSeed()), "bootstrap": boot, "rate": rate, "oob": oob}


class RandomForestClassifier(_ForestEstimator, _RFClassifierParams):
    """A random forest of classification trees, trained in one barrier stage.

    Takes every parameter of :class:`sparkxml.forest.tree.DecisionTreeClassifier` but
    ``maxLeafNodes`` (forests grow level-wise), plus the ones below. Outputs:
    ``rawPredictionCol`` (sum of the trees' class fractions, as Spark ML), ``probabilityCol``
    (their mean, scikit-learn's predict_proba), ``predictionCol``.

    Parameters
    ----------
    numTrees : int, default 20
    bootstrap : bool, default True
        Poisson(subsamplingRate) counts per row and tree; False: each row once (kept with
        probability subsamplingRate).
    subsamplingRate : float, default 1.0
    oobScore : bool, default False
        Compute ``model.outOfBagScore`` (scikit-learn's ``oob_score_``, accuracy) in the same stage.
    featureSubsetStrategy : str, default "auto" (= "sqrt")
    classWeight : str or dict, optional
        'balanced', a dict {class id: weight}, or 'balanced_subsample': each tree weighs
        class c by N_t / (K_t * n_tc) computed on its own sample (its rows' bootstrap counts
        summed per class; a class absent from the sample weighs 0), as scikit-learn.

    Differences from scikit-learn
    -----------------------------
    With ``classWeight='balanced_subsample'`` the weights are scikit-learn's for the same
    sample, but the samples differ (Poisson counts from row hashes); the weights are not
    integers, so a tree equals scikit-learn's grown on the same weighted sample only where
    no two candidate splits are within rounding of each other (there scikit-learn's own
    summation order decides).

    Examples
    --------
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> df = from_dense(spark, X, columns={"label": (X[:, 0] + X[:, 1] > 0).astype(float)})
    >>> model = RandomForestClassifier(numTrees=10, maxDepth=3, oobScore=True, seed=0).fit(df)
    >>> model.getNumTrees, model.numClasses
    (10, 2)
    >>> 0.6 < model.outOfBagScore <= 1.0      # out-of-bag accuracy
    True
    >>> model.transform(df).filter("prediction = label").count() >= 36   # of 40
    True
    """

    _task = "classification"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", criterion="gini", numTrees=20, maxDepth=5,
                 maxBins=256, minInstancesPerNode=1, minSamplesSplit=2,
                 minWeightFractionPerNode=0.0, maxLeafNodes=0, minInfoGain=0.0,
                 featureSubsetStrategy="auto", classWeight=None, bootstrap=True,
                 subsamplingRate=1.0, oobScore=False, seed=0, numWorkers=None,
                 timeoutSeconds=600.0, verbose=0, ccpAlpha=0.0,
                 leafCol=None, monotonicConstraints=None,
                 categoricalCols=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                  probabilityCol="probability", criterion="gini", numTrees=20, maxDepth=5,
                  maxBins=256, minInstancesPerNode=1, minSamplesSplit=2,
                  minWeightFractionPerNode=0.0, maxLeafNodes=0, minInfoGain=0.0,
                  featureSubsetStrategy="auto", classWeight=None, bootstrap=True,
                  subsamplingRate=1.0, oobScore=False, seed=0, numWorkers=None,
                  timeoutSeconds=600.0, verbose=0, ccpAlpha=0.0,
                  leafCol=None, monotonicConstraints=None,
                  categoricalCols=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return RandomForestClassificationModel


class RandomForestRegressor(_ForestEstimator, _RFRegressorParams):
    """A random forest of regression trees, trained in one barrier stage.

    Takes the parameters of :class:`RandomForestClassifier` but ``classWeight`` and the
    classifier outputs; ``criterion`` "squared_error" (default), "friedman_mse" or "poisson";
    ``featureSubsetStrategy`` "auto" = "onethird" (Spark MLlib). ``oobScore`` is R².

    Examples
    --------
    >>> df = spark.createDataFrame([(float(i), 1.0 if i < 30 else 5.0) for i in range(60)],
    ...                            ["x", "label"])
    >>> model = RandomForestRegressor(featuresCols=["x"], numTrees=20, maxDepth=3,
    ...                               oobScore=True, seed=0).fit(df)
    >>> 0.9 < model.outOfBagScore <= 1.0      # out-of-bag R²
    True
    >>> out = model.transform(df).collect()
    >>> round(out[0].prediction, 1), round(out[-1].prediction, 1)     # the two plateaus
    (1.0, 5.0)
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", criterion="squared_error",
                 numTrees=20, maxDepth=5, maxBins=256, minInstancesPerNode=1,
                 minSamplesSplit=2, minWeightFractionPerNode=0.0, maxLeafNodes=0,
                 minInfoGain=0.0, featureSubsetStrategy="auto", bootstrap=True,
                 subsamplingRate=1.0, oobScore=False, seed=0, numWorkers=None,
                 timeoutSeconds=600.0, verbose=0, ccpAlpha=0.0,
                 leafCol=None, monotonicConstraints=None,
                 categoricalCols=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", criterion="squared_error",
                  numTrees=20, maxDepth=5, maxBins=256, minInstancesPerNode=1,
                  minSamplesSplit=2, minWeightFractionPerNode=0.0, maxLeafNodes=0,
                  minInfoGain=0.0, featureSubsetStrategy="auto", bootstrap=True,
                  subsamplingRate=1.0, oobScore=False, seed=0, numWorkers=None,
                  timeoutSeconds=600.0, verbose=0, ccpAlpha=0.0,
                  leafCol=None, monotonicConstraints=None,
                  categoricalCols=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return RandomForestRegressionModel


class RandomForestClassificationModel(ForestModelMixin, ClassificationModelMixin,
                                      TreeModel, _RFClassifierParams):
    """Fitted :class:`RandomForestClassifier`. ``treeArrays(i)``: tree i in scikit-learn's
    ``tree_`` layout; ``oobScore``; ``featureImportances``. Save format: see
    ``sparkxml.forest.base.TreeModel``."""


class RandomForestRegressionModel(ForestModelMixin, TreeModel, _RFRegressorParams):
    """Fitted :class:`RandomForestRegressor` (prediction = mean of the trees' leaf means).
    Save format: see ``sparkxml.forest.base.TreeModel``."""


add_tree_setters(RandomForestClassifier, RandomForestClassificationModel, True, True)
add_tree_setters(RandomForestRegressor, RandomForestRegressionModel, False, True)
