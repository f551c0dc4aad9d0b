"""Extremely randomized trees with scikit-learn's criteria on Spark: ``ExtraTreesClassifier``
and ``ExtraTreesRegressor``.

They grow as the random forests do (``sparkxml.forest.forest``: one barrier stage, one
reduce per level for all trees), but each node tries ONE threshold per drawn feature, drawn
uniformly between the node's smallest and largest value of that feature, and keeps the best
of these (scikit-learn's ``splitter="random"``); with missing values in the node, their side
is drawn too. The draws come from hash(seed, tree, node path), so the model is the same for
any numWorkers and input partitioning. ``bootstrap`` is False by default (every row in
every tree), as in scikit-learn.

Differences from scikit-learn's ExtraTrees: the random streams differ (hashes instead of one
xorshift state per tree), so trees equal scikit-learn's in distribution, not node for node;
a feature whose values are binned (more distinct values than ``maxBins``) draws its
threshold between the middles of its bins; a node whose drawn features are all constant
becomes a leaf (as the random forests here).
"""
from __future__ import annotations

from pyspark import keyword_only

from sparkxml._core.base import keywords_of
from sparkxml.forest.base import (
    ClassificationModelMixin,
    ForestModelMixin,
    TreeModel,
    add_tree_setters,
)
from sparkxml.forest.forest import (
    RandomForestClassifier,
    RandomForestRegressor,
    _ForestEstimator,
    _RFClassifierParams,
    _RFRegressorParams,
)

__all__ = ["ExtraTreesClassifier", "ExtraTreesClassificationModel", "ExtraTreesRegressor",
           "ExtraTreesRegressionModel"]


# extra trees keep no leaf samples: no quantile forest
_QUANTILE_KEYWORDS = ("quantiles", "quantilesCol")


class _ETClassifierParams(_RFClassifierParams):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(bootstrap=False)


class _ETRegressorParams(_RFRegressorParams):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(bootstrap=False)


class ExtraTreesClassifier(_ForestEstimator, _ETClassifierParams):
    """Extremely randomized classification trees, trained in one barrier stage.

    Takes the parameters of :class:`sparkxml.forest.forest.RandomForestClassifier`, with
    ``bootstrap`` False by default. Outputs as the random forest's.

    Examples
    --------
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> df = from_dense(spark, X, columns={"label": (X[:, 0] + X[:, 1] > 0).astype(float)})
    >>> model = ExtraTreesClassifier(numTrees=20, maxDepth=4, seed=0).fit(df)
    >>> model.getNumTrees, model.getBootstrap()
    (20, False)
    >>> model.transform(df).filter("prediction = label").count() >= 54   # of 60
    True
    """

    _task = "classification"
    _random_splits = True

    @keyword_only
    @keywords_of(RandomForestClassifier.__init__, bootstrap=False)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(RandomForestClassifier.setParams, bootstrap=False)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return ExtraTreesClassificationModel


class ExtraTreesRegressor(_ForestEstimator, _ETRegressorParams):
    """Extremely randomized regression trees, trained in one barrier stage.

    Takes the parameters of :class:`sparkxml.forest.forest.RandomForestRegressor` but
    ``quantiles`` and ``quantilesCol``, with ``bootstrap`` False by default.

    Examples
    --------
    >>> df = spark.createDataFrame([(float(i), 1.0 if i < 30 else 5.0) for i in range(60)],
    ...                            ["x", "label"])
    >>> model = ExtraTreesRegressor(featuresCols=["x"], numTrees=20, maxDepth=4,
    ...                             seed=0).fit(df)
    >>> out = model.transform(df).collect()
    >>> round(out[0].prediction, 1), round(out[-1].prediction, 1)     # the two plateaus
    (1.0, 5.0)
    """

    _task = "regression"
    _random_splits = True

    @keyword_only
    @keywords_of(RandomForestRegressor.__init__, bootstrap=False, drop=_QUANTILE_KEYWORDS)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(RandomForestRegressor.setParams, bootstrap=False, drop=_QUANTILE_KEYWORDS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return ExtraTreesRegressionModel


class ExtraTreesClassificationModel(ForestModelMixin, ClassificationModelMixin,
                                    TreeModel, _ETClassifierParams):
    """Fitted :class:`ExtraTreesClassifier`. ``treeArrays(i)``: tree i in scikit-learn's
    ``tree_`` layout; ``featureImportances``. Save format: see
    ``sparkxml.forest.base.TreeModel``."""


class ExtraTreesRegressionModel(ForestModelMixin, TreeModel, _ETRegressorParams):
    """Fitted :class:`ExtraTreesRegressor` (prediction = mean of the trees' leaf means).
    Save format: see ``sparkxml.forest.base.TreeModel``."""


add_tree_setters(ExtraTreesClassifier, ExtraTreesClassificationModel, True, True)
add_tree_setters(ExtraTreesRegressor, ExtraTreesRegressionModel, False, True)
