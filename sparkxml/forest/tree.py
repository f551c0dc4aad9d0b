"""Decision trees with scikit-learn's criteria on Spark: ``DecisionTreeClassifier`` and
``DecisionTreeRegressor``.

The tree is scikit-learn's, node for node, where the bins are exact (every feature with at
most ``maxBins`` distinct float32 values, the data sketched in full): rank 0 of the barrier
stage replays scikit-learn's depth-first (or, with ``maxLeafNodes``, best-first) builder and
its splitter's random feature order from ``seed`` (= ``random_state``), one histogram reduce
per split node (``sparkxml_kernels.forest.builder``). With integer weights (and, for
regression, integer targets) all sums are exact, so the tree is the same for any numWorkers
and partitioning; otherwise near-ties can break differently by rounding: sums over histogram
bins round differently from scikit-learn's running sums (pendigits with
``classWeight='balanced'``, maxDepth 8: the first different node is node 5 of 271).
"""
from __future__ import annotations

from pyspark import keyword_only

from sparkxml.forest.base import (
    ClassificationModelMixin,
    TreeEstimator,
    TreeModel,
    add_tree_setters,
)
from sparkxml.forest.params import ClassifierParams, TreeParams

__all__ = ["DecisionTreeClassifier", "DecisionTreeClassificationModel",
           "DecisionTreeRegressor", "DecisionTreeRegressionModel"]


class _DTClassifierParams(TreeParams, ClassifierParams):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(criterion="gini")


class _DTRegressorParams(TreeParams):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(criterion="squared_error")


class DecisionTreeClassifier(TreeEstimator, _DTClassifierParams):
    """A classification tree (scikit-learn's ``DecisionTreeClassifier``), trained in one
    barrier stage. Labels are 0, 1, ..., K-1. scikit-learn's name of a parameter is given in
    brackets.

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (dense or sparse; absent entries are 0.0). Features must be
        finite; they are rounded to float32 as scikit-learn does.
    featuresCols : list of str, optional
        Numeric columns used instead of ``featuresCol``.
    labelCol : str, default "label"
    weightCol : str, optional
        Non-negative row weights [sample_weight].
    predictionCol, rawPredictionCol, probabilityCol : str
        Outputs: the class, the leaf's weighted class counts, the leaf's class fractions.
    criterion : {"gini", "entropy", "log_loss"}, default "gini"
    maxDepth : int, default 5
        [max_depth]; >= 0, any depth (64 grows pendigits' trees in full).
    maxBins : int, default 256
        Bins per feature, 2..65536 (up to 256: at most 255 bins, stored as uint8; above: that
        many, uint16); a feature with at most that many distinct values gets a bin per value
        (exact splits), others quantile bins.
    minInstancesPerNode : int, default 1  [min_samples_leaf]
    minSamplesSplit : int, default 2  [min_samples_split]
    minWeightFractionPerNode : float, default 0.0  [min_weight_fraction_leaf]
    maxLeafNodes : int, default 0
        [max_leaf_nodes]: > 0 grows best-first up to this many leaves.
    minInfoGain : float, default 0.0  [min_impurity_decrease]
    ccpAlpha : float, default 0.0
        [ccp_alpha]: >= 0, minimal cost-complexity pruning after growth (0: none);
        ``model.costComplexityPruningPath()`` gives the alphas of a tree's pruning path.
    featureSubsetStrategy : str, default "auto" (= "all")
        [max_features]: "all", "sqrt", "log2", "onethird", a fraction "0.5" or a count "7".
    classWeight : "balanced" or dict, optional  [class_weight]
        A dict {class id: weight} weighs the classes it names (others: 1); it must name
        classes that occur in the labels.
    seed : int, default 0
        [random_state]: scikit-learn's splitter draws are replayed from it.
    monotonicConstraints : list of int, optional
        [monotonic_cst]: -1, 0 or 1 per feature (one per feature); splits that would break
        a constraint or leave a node's bounds are rejected and node values clipped to their
        bounds, as scikit-learn. Classification: binary only, on class 1's probability.
        Refused on a categorical feature (as scikit-learn refuses it).
    categoricalCols : list of str, optional
        Features split as categories (see "Categorical features" below); a vector column's
        nominal attributes (``VectorIndexer``, ``StringIndexer`` + ``VectorAssembler``) are
        categorical without being named.
    numWorkers : int, optional
        Barrier tasks (default: the session's parallelism, one per 50,000 rows at most).
    timeoutSeconds : float, default 600
        Bound on every wait for a peer task.
    verbose : int, default 0
        Log the phase times and "tree 1/1" when the tree is grown through the Python logger
        ``sparkxml`` (``sparkxml._core.progress``); forests log one line every ``verbose``
        trees done; 0 = silent.

    Notes
    -----
    Categorical features: a feature's values are category ids 0..K-1 (K: the nominal
    attribute's number of values, else the largest id + 1; ids are checked, naming the
    column and the value, before the training job: negative, non-integer, at or above K, or
    missing values are refused). A split sends a set of the categories present in the node
    left: for binary classification and regression the categories are sorted by class 1's
    weighted fraction or the weighted mean label, ties by category id, and the best of the
    K - 1 prefixes is exactly the best of all subsets (Breiman). At prediction a NaN, a
    category unseen in training, and a category absent from the node in training go to the
    child that had more training rows (``missing_go_to_left``). ``treeArrays`` then holds
    ``categories_left`` (uint64 bitsets, threshold NaN at those splits).

    Differences from Spark MLlib and scikit-learn: multiclass categorical splits sort the
    categories by their own impurity (MLlib's centroid for ordered categorical features) and
    scan prefixes, an approximation (MLlib searches all subsets of few categories);
    ExtraTrees draw the number of sorted categories going left uniformly; scikit-learn's
    trees have no categorical splits; ONNX export of such a model is refused (the
    TreeEnsemble operators have no category sets).

    Examples
    --------
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> df = from_dense(spark, X, columns={"label": (X[:, 0] + X[:, 1] > 0).astype(float)})
    >>> model = DecisionTreeClassifier(maxDepth=3, seed=0).fit(df)
    >>> model.transform(df).columns
    ['features', 'label', 'rawPrediction', 'probability', 'prediction']
    >>> model.transform(df).filter("prediction = label").count() >= 36   # of 40
    True
    >>> int(model.treeArrays(0)["feature"][0]) in (0, 1)    # scikit-learn's tree_.feature
    True
    """

    _task = "classification"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", criterion="gini", maxDepth=5, maxBins=256,
                 minInstancesPerNode=1, minSamplesSplit=2, minWeightFractionPerNode=0.0,
                 maxLeafNodes=0, minInfoGain=0.0, featureSubsetStrategy="auto",
                 classWeight=None, seed=0, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 ccpAlpha=0.0, leafCol=None, monotonicConstraints=None,
                 categoricalCols=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", rawPredictionCol="rawPrediction",
                  probabilityCol="probability", criterion="gini", maxDepth=5, maxBins=256,
                  minInstancesPerNode=1, minSamplesSplit=2, minWeightFractionPerNode=0.0,
                  maxLeafNodes=0, minInfoGain=0.0, featureSubsetStrategy="auto",
                  classWeight=None, seed=0, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                  ccpAlpha=0.0, leafCol=None, monotonicConstraints=None,
                  categoricalCols=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return DecisionTreeClassificationModel


class DecisionTreeRegressor(TreeEstimator, _DTRegressorParams):
    """A regression tree (scikit-learn's ``DecisionTreeRegressor``), trained in one barrier
    stage.

    Takes the parameters of :class:`DecisionTreeClassifier` but ``classWeight`` and the
    classifier outputs; ``criterion`` is "squared_error" (default), "friedman_mse" (Friedman's
    improvement; the same splits as squared_error, which scikit-learn >= 1.9 uses for it) or
    "poisson" (labels >= 0 with a positive sum) or "absolute_error" (leaf medians; no
    missing features, no monotonicConstraints, at most 65,536 distinct labels). Adds
    ``predictionCol`` (the leaf mean, or median).

    Examples
    --------
    >>> df = spark.createDataFrame([(float(i), 1.0 if i < 10 else 5.0) for i in range(20)],
    ...                            ["x", "label"])
    >>> model = DecisionTreeRegressor(featuresCols=["x"], maxDepth=1).fit(df)
    >>> float(model.treeArrays(0)["threshold"][0])   # scikit-learn's midpoint between 9 and 10
    9.5
    >>> sorted(r.prediction for r in model.transform(df).select("prediction").distinct().collect())
    [1.0, 5.0]
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 weightCol=None, predictionCol="prediction", criterion="squared_error",
                 maxDepth=5, maxBins=256, minInstancesPerNode=1, minSamplesSplit=2,
                 minWeightFractionPerNode=0.0, maxLeafNodes=0, minInfoGain=0.0,
                 featureSubsetStrategy="auto", seed=0, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 ccpAlpha=0.0, leafCol=None, monotonicConstraints=None,
                 categoricalCols=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  weightCol=None, predictionCol="prediction", criterion="squared_error",
                  maxDepth=5, maxBins=256, minInstancesPerNode=1, minSamplesSplit=2,
                  minWeightFractionPerNode=0.0, maxLeafNodes=0, minInfoGain=0.0,
                  featureSubsetStrategy="auto", seed=0, numWorkers=None,
                  timeoutSeconds=600.0, verbose=0, ccpAlpha=0.0, leafCol=None,
                  monotonicConstraints=None, categoricalCols=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return DecisionTreeRegressionModel


class DecisionTreeClassificationModel(ClassificationModelMixin, TreeModel,
                                      _DTClassifierParams):
    """Fitted :class:`DecisionTreeClassifier`: adds ``rawPredictionCol`` (the leaf's weighted
    class counts), ``probabilityCol`` and ``predictionCol``. ``treeArrays(0)`` is
    scikit-learn's ``tree_``; ``featureImportances`` its ``feature_importances_``. Save format:
    see ``sparkxml.forest.base.TreeModel``."""


class DecisionTreeRegressionModel(TreeModel, _DTRegressorParams):
    """Fitted :class:`DecisionTreeRegressor`: adds ``predictionCol`` (the leaf mean). Save
    format: see ``sparkxml.forest.base.TreeModel``."""


add_tree_setters(DecisionTreeClassifier, DecisionTreeClassificationModel, True, False)
add_tree_setters(DecisionTreeRegressor, DecisionTreeRegressionModel, False, False)
