"""Label trees on Spark: ``Parabel`` and ``Bonsai``, two sets of defaults over one engine.

Training on Spark lives in ``sparkxml.labeltree.fit``, the trees themselves in
``sparkxml_kernels.labeltree``.
"""
from __future__ import annotations

import numpy as np
from pyspark import keyword_only

from sparkxml._core.base import SparkXMLEstimator, keywords_of
from sparkxml._core.params import HasVerbose, add_setters
from sparkxml._core.validation import check_int_array_column, check_vector_column
from sparkxml.fastxml.fastxml import FastXMLTrainingSummary, LabelForestModel
from sparkxml.labeltree.fit import fit_label_trees
from sparkxml.labeltree.params import BONSAI_DEFAULTS, PARABEL_DEFAULTS, LabelTreeParams
from sparkxml_kernels.labeltree.forest import FOREST_KEYS
from sparkxml_kernels.labeltree.nodes import LOSSES
from sparkxml_kernels.labeltree.predictor import MODEL_SCALARS, LabelTreePredictor

_PARAMS_DOC = """
    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (sparse or dense), all of one size, finite values, no nulls.
        Rows are L2-normalised before training and prediction (a zero row stays zero).
    labelsCol : str, default "labels"
        array<int> of label ids >= 0; an empty array is allowed (the row then trains no
        classifier), a null one is not. A label repeated within a row counts once.
    numTrees : int, default 3
        Trees; tree t depends only on the data, the params and (seed, t).
    maxLeafLabels : int, default 100
    branchFactor : int, default {branchFactor}
    maxDepth : int, default {maxDepth}
    balancedClusters : bool, default {balancedClusters}
    clusterEps : float, default 1e-4
    loss : str, default "squared_hinge"
        Node classifiers: "squared_hinge" (L2-loss SVM by dual coordinate descent, liblinear
        ``-s 1``) or "logistic" (liblinear ``-s 7``). Margins m become probabilities as
        exp(-max(0, 1 - m)^2) and 1 / (1 + exp(-m)) respectively.
    C : float, default 0.5
        Cost of the node classifiers' loss (liblinear's ``C``, > 0). Parabel's and omikuji's
        code default to 1; 0.5 scored higher P@1/3/5 on every data set measured here (Bibtex's
        two splits, Enron, generated Delicious-shaped data; docs/labeltree.rst).
    tol : float, default 0.1
        Stop a classifier's dual coordinate descent when its projected-gradient spread
        (squared hinge) or largest sub-problem gradient (logistic) is below tol.
    maxIter : int, default 20
        Passes over a classifier's rows at most.
    weightThreshold : float, default 0.1
    bias : float, default 1.0
    beamWidth : int, default 10
        Copied to the model (prediction).
    seed : int, default 0
    numWorkers : int, optional
        Spark tasks training runs on (default: the session's default parallelism). The
        model does not depend on it.
    trainingMode : str, default "replicated"
        "replicated": each task holds the training set, clusters every tree and trains a
        share of all the trees' nodes, dealt by estimated cost (slots x the entries of the
        node's rows), so the tasks finish together whatever numTrees.
        "distributed": the label representations are reduced across tasks,
        the trees clustered on the driver, the upper nodes (whose labels carry at least
        16,384 (row, label) pairs and half as many as there are rows) solved over row
        blocks by tasks holding a share of the rows each, and the subtrees below them
        trained by tasks that own them, each holding its subtrees' rows only
        (``sparkxml.labeltree.levelwise``). The same trees as "replicated"; the upper
        nodes' weights differ (coordinate descent block by block, not in one permutation
        of all rows).
    topK, predictionCol, scoresCol
        Copied to the model.
    verbose : int, default 0
        Log "tree i/n" every ``verbose`` trees of each training task, as it finishes its
        share of a tree (distributed: a line when the split nodes are trained, "subtree
        i/n" every ``verbose`` subtrees of each subtree task, and a line when every subtree
        is trained) through the Python logger ``sparkxml``; 0 = silent.
"""


class LabelTreeTrainingSummary(FastXMLTrainingSummary):
    """What a Parabel or Bonsai fit reports: FastXML's fields (``trainingMode``,
    ``numTrees``, the memory figures, per-task rows and peak RSS)."""


class _LabelTree(SparkXMLEstimator, LabelTreeParams, HasVerbose):
    """The engine behind ``Parabel`` and ``Bonsai`` (see either)."""

    _defaults: dict = {}
    _model_class: type = None  # type: ignore[assignment]

    def _init(self, kwargs: dict) -> None:
        self._setDefault(verbose=0, **self._defaults)
        self._set_params(**kwargs)

    def _fit_validated(self, dataset):
        check_vector_column(dataset, self.getFeaturesCol())
        check_int_array_column(dataset, self.getLabelsCol())
        forest, n_features, n_labels, info = fit_label_trees(self, dataset, type(self).__name__)
        model = self._model_class._create(forest, n_features, n_labels, float(self.getBias()),
                                          loss=LOSSES[self.getLoss()], beam_width=0)
        model._training_info = info
        model._summary = LabelTreeTrainingSummary._from_info(info, self.getNumTrees())
        return model


class LabelTreeModel(LabelForestModel, LabelTreeParams):
    """A trained label-tree forest (``ParabelModel``, ``BonsaiModel``).

    ``transform`` adds ``predictionCol`` (array<int>: the topK labels, best first; labels
    with a zero score are left out) and ``scoresCol`` (array<float>, aligned: per label the
    mean over the trees of (path probability x the label's probability), 0 in a tree whose
    beam missed the label). ``beamWidth`` and ``topK`` may be changed on the model. It fails
    on a null vector or a NaN / infinite feature value, naming ``featuresCol``.

    Save format
    -----------
    ``path/metadata/part-*``: Spark ML metadata JSON (class, uid, params) with
    ``formatVersion`` 2, ``modelKind`` "parabel" or "bonsai", ``saveId`` and the arrays'
    manifest; ``path/data/*.parquet``: the arrays in chunk rows
    (``sparkxml_kernels.persist``): 0-d ``n_features``, ``n_labels``, ``bias``, ``loss``
    (0 squared hinge, 1 logistic), ``beam_width`` and the forest
    (``sparkxml_kernels.labeltree.forest``: ``tree_ids``, ``tree_offsets``,
    ``child_indptr``, ``child_index``, ``leaf_indptr``, ``leaf_label`` and the feature-major
    classifiers ``wf_indptr``, ``wf_feature``, ``we_indptr``, ``we_slot``, ``we_value``).
    ``sparkxml_kernels.load_model(path)`` returns a ``LabelTreePredictor``
    (``predict_topk(X, k)``) without Spark.
    """

    _model_kind = "parabel"
    _required_arrays = FOREST_KEYS + MODEL_SCALARS
    _summary_class = LabelTreeTrainingSummary

    def _check_arrays(self) -> None:
        LabelTreePredictor.from_arrays(self._arrays)

    def _predictor_arrays(self) -> dict:
        # the beam width saved is the model's current one: load_model serves what transform does
        return dict(self._arrays, beam_width=np.array(self.getBeamWidth(), dtype=np.int64))

    def _predictor_spec(self):
        a = self._arrays
        loss = {v: k for k, v in LOSSES.items()}[int(a["loss"])]
        return LabelTreePredictor, (a, int(a["n_features"]), int(a["n_labels"]),
                                    float(a["bias"]), loss, int(self.getBeamWidth()))


add_setters(_LabelTree, tuple(PARABEL_DEFAULTS) + ("numWorkers", "verbose"))
add_setters(LabelTreeModel, ("beamWidth",))


class ParabelModel(LabelTreeModel):
    __doc__ = LabelTreeModel.__doc__
    _model_kind = "parabel"


class BonsaiModel(LabelTreeModel):
    __doc__ = LabelTreeModel.__doc__
    _model_kind = "bonsai"


class Parabel(_LabelTree):
    __doc__ = """Parabel extreme multi-label classifier (Prabhu et al., WWW 2018): label trees
    of balanced spherical 2-means with linear node classifiers, searched by beam.
""" + _PARAMS_DOC.format(**PARABEL_DEFAULTS) + """
    Notes
    -----
    Differences from Parabel's code: ``C`` defaults to 0.5 (Parabel's is 1). Labels without
    training rows are left out of the trees (never predicted). The k-means and the
    classifiers' coordinate order use this library's seeded streams, so trees match Parabel's
    in construction, not draw for draw. A node's squared-hinge problems are solved 16 at a
    time, in one row order a pass (Parabel: one problem at a time, an order each); each
    keeps liblinear's steps, shrinking and stop.

    Examples
    --------
    The beam width is a prediction param: a model searches with the one it is given.

    >>> from sparkxml import XMLEvaluator
    >>> from sparkxml.synthetic import make_multilabel, rows_frame
    >>> X, Y = make_multilabel(n_rows=300, n_features=200, n_labels=20, seed=0)
    >>> train = rows_frame(spark, X, Y, 0, 300, num_features=200)
    >>> model = Parabel(maxLeafLabels=4, seed=0).fit(train)
    >>> (model.trees, model.numLabels, model.getBeamWidth())
    (3, 20, 10)
    >>> greedy = model.copy().setBeamWidth(1)
    >>> [0.6 < XMLEvaluator(k=1).evaluate(m.transform(train)) <= 1.0 for m in (model, greedy)]
    [True, True]
    """

    _model_kind = "parabel"
    _model_class = ParabelModel
    _defaults = PARABEL_DEFAULTS

    @keyword_only
    def __init__(self, *, featuresCol="features", labelsCol="labels",
                 predictionCol="prediction", scoresCol="scores", topK=5, numTrees=3,
                 maxLeafLabels=100, branchFactor=2, maxDepth=64, balancedClusters=True,
                 clusterEps=1e-4, loss="squared_hinge", C=0.5, tol=0.1, maxIter=20,
                 weightThreshold=0.1, bias=1.0, beamWidth=10, seed=0, numWorkers=None,
                 trainingMode="replicated", verbose=0):
        super().__init__()
        self._init(self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelsCol="labels",
                  predictionCol="prediction", scoresCol="scores", topK=5, numTrees=3,
                  maxLeafLabels=100, branchFactor=2, maxDepth=64, balancedClusters=True,
                  clusterEps=1e-4, loss="squared_hinge", C=0.5, tol=0.1, maxIter=20,
                  weightThreshold=0.1, bias=1.0, beamWidth=10, seed=0, numWorkers=None,
                  trainingMode="replicated", verbose=0):
        return self._set_params(**self._input_kwargs)


class Bonsai(_LabelTree):
    __doc__ = """Bonsai extreme multi-label classifier (Khandagale et al., 2020): shallow,
    wide label trees (k-means with ``branchFactor`` children, ``maxDepth`` levels,
    unbalanced clusters), the same node classifiers and beam search as ``Parabel``.
""" + _PARAMS_DOC.format(**BONSAI_DEFAULTS) + """
    Notes
    -----
    Differences from Bonsai's code: the node classifiers are Parabel's (squared hinge by
    default, per child of a node, ``C`` 0.5 by default) and labels without training rows are
    left out of the trees. Its authors ran 100 children a node (``branchFactor=100``; 16
    here), and its k-means moves a label that ends alone in a cluster to the nearest other
    cluster; here a one-label cluster stays a child.

    The clusters are as uneven as the label representations make them, and a leaf at
    ``maxDepth`` keeps every label it holds, trained one-vs-rest over all its rows: on the
    500,000 Delicious-shaped rows of the benchmarks (50,000 labels) the largest leaf of tree
    0 holds 14,859 labels. Parabel's balanced trees bound every leaf by ``maxLeafLabels``;
    the costs are in the label-tree guide.

    Examples
    --------
    >>> from sparkxml.synthetic import make_multilabel, rows_frame
    >>> X, Y = make_multilabel(n_rows=300, n_features=200, n_labels=20, seed=0)
    >>> df = rows_frame(spark, X, Y, 0, 300, num_features=200)
    >>> model = Bonsai(branchFactor=4, maxLeafLabels=4, maxDepth=2, seed=0).fit(df)
    >>> model.trees
    3
    """

    _model_kind = "bonsai"
    _model_class = BonsaiModel
    _defaults = BONSAI_DEFAULTS

    # Parabel's keywords, with Bonsai's defaults
    @keyword_only
    @keywords_of(Parabel.__init__, **BONSAI_DEFAULTS)
    def __init__(self, **kwargs):
        super().__init__()
        self._init(self._input_kwargs)

    @keyword_only
    @keywords_of(Parabel.setParams, **BONSAI_DEFAULTS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)
