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
``RandomForestClassifier(rowIndexCol=...)`` replays scikit-learn's forest instead, node for
node (``sparkxml.forest.replay``).
"""
from __future__ import annotations

from pyspark import keyword_only

from sparkxml._core.base import keywords_of
from sparkxml._core.constraints import Rule
from sparkxml._core.params import add_setters
from sparkxml.forest.base import (
    ClassificationModelMixin,
    ForestModelMixin,
    TreeEstimator,
    TreeModel,
    add_tree_setters,
)
from sparkxml.forest.params import (
    ClassifierParams,
    ForestParams,
    HasQuantiles,
    HasQuantilesCol,
    HasRowIndexCol,
    TreeParams,
    _class_weight_ok,
)
from sparkxml.forest.tree import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["RandomForestClassifier", "RandomForestClassificationModel",
           "RandomForestRegressor", "RandomForestRegressionModel"]


def _forest_class_weight_ok(value) -> bool:
    return value == "balanced_subsample" or _class_weight_ok(value)


class _RFClassifierParams(TreeParams, ClassifierParams, ForestParams, HasRowIndexCol):
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


class _QuantileParams(HasQuantiles, HasQuantilesCol):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(quantiles=[], quantilesCol="quantiles")


# the keywords a forest takes beyond its tree's (defaults: the params' defaults)
_FOREST_KEYWORDS = {"numTrees": 20, "bootstrap": True, "subsamplingRate": 1.0,
                    "oobScore": False, "nthread": None}
_QUANTILE_FOREST_KEYWORDS = dict(_FOREST_KEYWORDS, quantiles=None, quantilesCol="quantiles")
_RF_CLASSIFIER_KEYWORDS = dict(_FOREST_KEYWORDS, rowIndexCol=None)

# quantile forests keep rows x trees leaf samples (16 bytes each in the model; 24-32 bytes
# per entry on every task while they are gathered): refused above this many
MAX_LEAF_SAMPLES = 50_000_000


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
                "seed": int(self.getSeed()), "bootstrap": boot, "rate": rate, "oob": oob,
                "nthread": self._opt(self.nthread)}


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
    nthread : int, optional
        Threads of a fit on one worker (``numWorkers`` 1, or fewer rows than make a second
        worker worth it): that many groups of trees grow side by side in the one task; unset,
        the task's ``spark.task.cpus``. On several workers each grows with one thread. The
        model is the same whatever its value.
    featureSubsetStrategy : str, default "auto" (= "sqrt")
    classWeight : str or dict, optional
        'balanced', a dict {class id: weight}, or 'balanced_subsample': each tree weighs
        class c by N_t / (K_t * n_tc) computed on its own sample (its rows' bootstrap counts
        summed per class; a class absent from the sample weighs 0), as scikit-learn.
    rowIndexCol : str, optional
        Column of each row's position in scikit-learn's training array (distinct integers,
        no nulls). The forest is then scikit-learn's ``RandomForestClassifier(random_state=
        seed mod 2**32)`` fitted on the rows in that order, node for node: its per-tree
        seeds, multinomial bootstrap samples (weighted by ``weightCol`` and class weights,
        as scikit-learn 1.9 draws them), feature draws and summation order
        (``sparkxml.forest.replay``). ``subsamplingRate`` < 1 is ``max_samples``;
        ``maxLeafNodes`` grows trees best-first. Each of the ``numWorkers`` tasks holds all
        rows, dense, and grows its share of the trees; ``maxBins`` is not used.
        ``oobScore`` is scikit-learn's ``oob_score_`` (the out-of-bag sums are added per
        task, so the decision function equals scikit-learn's up to rounding). Not with
        ``monotonicConstraints`` or categorical features.

    Differences from scikit-learn
    -----------------------------
    Without ``rowIndexCol``, the bootstrap samples and feature draws come from hashes (so
    the model does not depend on the partitioning), not from scikit-learn's random stream.
    With ``classWeight='balanced_subsample'`` the weights are scikit-learn's for the same
    sample, but the samples differ (Poisson counts from row hashes); the weights are not
    integers, so a tree equals scikit-learn's grown on the same weighted sample only where
    no two candidate splits are within rounding of each other (there scikit-learn's own
    summation order decides). ``rowIndexCol`` replays scikit-learn's forest exactly.

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

    scikit-learn's forest, node for node, from each row's position in its training array

    >>> from sklearn.ensemble import RandomForestClassifier as SkForest
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> indexed = from_dense(spark, X, columns={"label": y.astype(float),
    ...                                         "id": np.arange(40)})
    >>> replayed = RandomForestClassifier(numTrees=5, maxDepth=64, seed=0,
    ...                                   rowIndexCol="id").fit(indexed)
    >>> sk = SkForest(n_estimators=5, random_state=0).fit(X, y)
    >>> all(np.array_equal(replayed.treeArrays(t)["threshold"], e.tree_.threshold)
    ...     for t, e in enumerate(sk.estimators_))
    True
    """

    _task = "classification"

    @keyword_only
    @keywords_of(DecisionTreeClassifier.__init__, add=_RF_CLASSIFIER_KEYWORDS)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(DecisionTreeClassifier.setParams, add=_RF_CLASSIFIER_KEYWORDS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    def _fit_validated(self, dataset):
        if self._opt(self.rowIndexCol):
            from sparkxml.forest.replay import fit_replayed

            return fit_replayed(self, dataset)
        return super()._fit_validated(dataset)

    @property
    def _model_class(self):
        return RandomForestClassificationModel


class RandomForestRegressor(_ForestEstimator, _RFRegressorParams, _QuantileParams):
    """A random forest of regression trees, trained in one barrier stage.

    Takes the parameters of :class:`RandomForestClassifier` but ``classWeight`` and the
    classifier outputs; ``criterion`` "squared_error" (default), "friedman_mse", "poisson" or
    "absolute_error" (leaf medians, as :class:`DecisionTreeRegressor`'s);
    ``featureSubsetStrategy`` "auto" = "onethird" (Spark MLlib). ``oobScore`` is R².

    Quantile regression forest (Meinshausen 2006): with ``quantiles`` (a list of numbers in
    (0, 1)) the model keeps every leaf's training labels with their bootstrap counts (times
    the sample weights) and adds ``quantilesCol`` (array<double>, one per quantile) beside
    ``predictionCol`` (still the mean). The quantiles are quantile-forest's
    (``RandomForestQuantileRegressor(max_samples_leaf=None).predict``): weighted quantiles,
    linearly interpolated, of the labels pooled over the leaves a row reaches
    (``sparkxml_kernels.forest.quantiles``). Memory: the model holds up to rows x numTrees
    (label, weight) pairs, 16 bytes each (about 0.63 of that with bootstrap); fits above
    50 million are refused. Any quantiles may be set on the fitted model;
    ``sparkxml_kernels.load_model(path).predict_quantiles(X, quantiles)`` serves them.

    Differences from quantile-forest: bootstrap counts are Poisson and the random streams
    differ, so the trees differ from its trees grown with the same shape (their quantile
    losses agree: see the benchmarks); its constructor's default ``max_samples_leaf=1``
    keeps one random label per leaf, here every label is kept; sample weights weigh the
    labels (quantile-forest only drops rows of weight 0).

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

    Quantiles (a quantile regression forest): labels 0..6 equally often at every x

    >>> rows = [(float(i % 50), float(i % 7)) for i in range(700)]
    >>> df2 = spark.createDataFrame(rows, ["x", "label"])
    >>> qrf = RandomForestRegressor(featuresCols=["x"], numTrees=10, maxDepth=2, seed=0,
    ...                             quantiles=[0.05, 0.5, 0.95]).fit(df2)
    >>> qrf.transform(df2).first().quantiles
    [0.0, 3.0, 6.0]
    >>> qrf.predictQuantiles(np.array([[7.0]]), [0.5]).tolist()   # any quantile, locally
    [[3.0]]
    """

    _task = "regression"

    def _engine_config(self) -> dict:
        return dict(super()._engine_config(), leaf_samples=bool(self.getQuantiles()))

    def _check_sizes(self, stats, k, weight, max_bins, n_labels=0):
        super()._check_sizes(stats, k, weight, max_bins, n_labels)
        entries = int(stats["n_train"]) * int(self.getNumTrees())
        if self.getQuantiles() and entries > MAX_LEAF_SAMPLES:
            raise ValueError(f"quantiles: {stats['n_train']} rows x {self.getNumTrees()} "
                             f"trees make {entries} leaf samples to keep, above the limit of "
                             f"{MAX_LEAF_SAMPLES}: lower numTrees or sample the rows")

    @keyword_only
    @keywords_of(DecisionTreeRegressor.__init__, add=_QUANTILE_FOREST_KEYWORDS)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(DecisionTreeRegressor.setParams, add=_QUANTILE_FOREST_KEYWORDS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return RandomForestRegressionModel


class RandomForestClassificationModel(ForestModelMixin, ClassificationModelMixin,
                                      TreeModel, _RFClassifierParams):
    """Fitted :class:`RandomForestClassifier`. ``treeArrays(i)``: tree i in scikit-learn's
    ``tree_`` layout; ``oobScore``; ``featureImportances``. Save format: see
    ``sparkxml.forest.base.TreeModel``."""


class RandomForestRegressionModel(ForestModelMixin, TreeModel, _RFRegressorParams,
                                  _QuantileParams):
    """Fitted :class:`RandomForestRegressor` (prediction = mean of the trees' leaf means;
    with leaf samples, ``quantilesCol`` too). Save format: see
    ``sparkxml.forest.base.TreeModel`` (plus the leaf samples,
    ``sparkxml_kernels.forest.predictor``)."""

    @property
    def hasLeafSamples(self) -> bool:
        """Whether the model keeps its leaves' training labels (fitted with quantiles)."""
        return self._predictor is not None and self._predictor.samples is not None

    def predictQuantiles(self, X, quantiles=None):
        """float64 (n, Q) quantiles (default: the ``quantiles`` param) of the rows of the
        array ``X`` (n, d), computed locally as the transform computes them."""
        qs = self.getQuantiles() if quantiles is None else list(quantiles)
        return self._predictor.predict_quantiles(X, qs)

    def _output_quantiles(self):
        return [float(q) for q in self.getQuantiles()] or None

    def _outputs(self):
        outs = super()._outputs()
        if self.getQuantiles():
            if not self.hasLeafSamples:
                raise ValueError("quantiles: this model keeps no leaf samples; fit the "
                                 "RandomForestRegressor with quantiles=[...] to predict them")
            outs.append((self.getQuantilesCol(), "quant"))
        return outs


add_tree_setters(RandomForestClassifier, RandomForestClassificationModel, True, True)
add_setters(RandomForestClassifier, ("rowIndexCol",))
add_tree_setters(RandomForestRegressor, RandomForestRegressionModel, False, True)
add_setters(RandomForestRegressor, ("quantiles", "quantilesCol"))
add_setters(RandomForestRegressionModel, ("quantiles", "quantilesCol"))
