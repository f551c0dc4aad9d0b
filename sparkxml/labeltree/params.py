"""Params of the label-tree estimators (Parabel, Bonsai): one set, different defaults."""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import finite, ge, gt, one_of
from sparkxml._core.params import (
    HasFeaturesCol,
    HasLabelsCol,
    HasMaxIter,
    HasNumTrees,
    HasNumWorkers,
    HasPredictionCol,
    HasScoresCol,
    HasSeed,
    HasTol,
    HasTopK,
    param,
)


class HasMaxLeafLabels(Params):
    """Mixin for param maxLeafLabels: a node with at most this many labels is a leaf (>= 1).
    """

    maxLeafLabels: "Param[int]" = param("maxLeafLabels", __doc__, TypeConverters.toInt, ge(1))

    def getMaxLeafLabels(self) -> int:
        """Gets the value of maxLeafLabels or its default value."""
        return self.getOrDefault(self.maxLeafLabels)


class HasBranchFactor(Params):
    """Mixin for param branchFactor: children of an internal node: the k of the spherical k-means
    that splits its labels (>= 2).
    """

    branchFactor: "Param[int]" = param("branchFactor", __doc__, TypeConverters.toInt, ge(2))

    def getBranchFactor(self) -> int:
        """Gets the value of branchFactor or its default value."""
        return self.getOrDefault(self.branchFactor)


class HasMaxDepth(Params):
    """Mixin for param maxDepth: depth at which a node is a leaf whatever its labels (root depth
    0; >= 1).
    """

    maxDepth: "Param[int]" = param("maxDepth", __doc__, TypeConverters.toInt, ge(1))

    def getMaxDepth(self) -> int:
        """Gets the value of maxDepth or its default value."""
        return self.getOrDefault(self.maxDepth)


class HasBalancedClusters(Params):
    """Mixin for param balancedClusters: split a node's labels into clusters of equal size
    (Parabel) or to the nearest centroid (Bonsai).
    """

    balancedClusters: "Param[bool]" = param("balancedClusters", __doc__, TypeConverters.toBoolean)

    def getBalancedClusters(self) -> bool:
        """Gets the value of balancedClusters or its default value."""
        return self.getOrDefault(self.balancedClusters)


class HasClusterEps(Params):
    """Mixin for param clusterEps: k-means stops when the mean cosine of labels to their centroid
    improves by less than this (>= 0).
    """

    clusterEps: "Param[float]" = param("clusterEps", __doc__, TypeConverters.toFloat, ge(0.0))

    def getClusterEps(self) -> float:
        """Gets the value of clusterEps or its default value."""
        return self.getOrDefault(self.clusterEps)


class HasLoss(Params):
    """Mixin for param loss: loss of the node classifiers: 'squared_hinge' (L2-loss SVM,
    liblinear -s 1) or 'logistic' (liblinear -s 7).
    """

    loss: "Param[str]" = param("loss", __doc__, TypeConverters.toString,
                               one_of("squared_hinge", "logistic"))

    def getLoss(self) -> str:
        """Gets the value of loss or its default value."""
        return self.getOrDefault(self.loss)


class HasC(Params):
    """Mixin for param C: penalty of the node classifiers' loss: 0.5|w|^2 + C sum_i loss_i (> 0).
    """

    C: "Param[float]" = param("C", __doc__, TypeConverters.toFloat, gt(0.0))

    def getC(self) -> float:
        """Gets the value of C or its default value."""
        return self.getOrDefault(self.C)


class HasWeightThreshold(Params):
    """Mixin for param weightThreshold: trained weights with |w| below this are dropped (>= 0).
    """

    weightThreshold: "Param[float]" = param("weightThreshold", __doc__, TypeConverters.toFloat,
                                            ge(0.0))

    def getWeightThreshold(self) -> float:
        """Gets the value of weightThreshold or its default value."""
        return self.getOrDefault(self.weightThreshold)


class HasBias(Params):
    """Mixin for param bias: value of the bias feature appended to every normalised row (finite; 0
    disables it).
    """

    bias: "Param[float]" = param("bias", __doc__, TypeConverters.toFloat, finite())

    def getBias(self) -> float:
        """Gets the value of bias or its default value."""
        return self.getOrDefault(self.bias)


class HasBeamWidth(Params):
    """Mixin for param beamWidth: nodes kept per tree level by the beam search (>= 1).
    """

    beamWidth: "Param[int]" = param("beamWidth", __doc__, TypeConverters.toInt, ge(1))

    def getBeamWidth(self) -> int:
        """Gets the value of beamWidth or its default value."""
        return self.getOrDefault(self.beamWidth)


class HasTrainingMode(Params):
    """Mixin for param trainingMode: how trees are trained: 'replicated' (each task holds the
    whole training set and trains a share of every tree's nodes) or 'distributed' (the upper
    nodes over the tasks' shares of the rows, then the subtrees below them, each task
    holding the rows of its subtrees only; the same trees, slower, and at the upper nodes weights
    solved over row blocks: for training sets a task cannot hold).
    """

    trainingMode: "Param[str]" = param("trainingMode", __doc__, TypeConverters.toString,
                                       one_of("replicated", "distributed"))

    def getTrainingMode(self) -> str:
        """Gets the value of trainingMode or its default value."""
        return self.getOrDefault(self.trainingMode)


class LabelTreeParams(HasFeaturesCol, HasLabelsCol, HasPredictionCol, HasScoresCol, HasTopK,
                      HasNumTrees, HasNumWorkers, HasSeed, HasTol, HasMaxIter, HasMaxLeafLabels,
                      HasBranchFactor, HasMaxDepth, HasBalancedClusters, HasClusterEps, HasLoss,
                      HasC, HasWeightThreshold, HasBias, HasBeamWidth, HasTrainingMode):
    """The params of ``Parabel`` and ``Bonsai`` (their defaults are set by each class)."""

    _constraints = {"tol": gt(0.0)}

    def kernel_params(self) -> dict:
        """The keyword arguments of ``sparkxml_kernels.labeltree.forest.train_forest``."""
        return dict(branch=self.getBranchFactor(), balanced=self.getBalancedClusters(),
                    max_leaf=self.getMaxLeafLabels(), max_depth=self.getMaxDepth(),
                    cluster_eps=float(self.getClusterEps()), loss=self.getLoss(),
                    C=float(self.getC()), tol=float(self.getTol()),
                    max_iter=self.getMaxIter(), weight_threshold=float(self.getWeightThreshold()),
                    bias=float(self.getBias()), seed=int(self.getSeed()))


# Defaults: Parabel's (Prabhu et al. 2018, and its released code) and Bonsai's shallow trees,
# except C: 0.5, not Parabel's and omikuji's 1 (higher P@k on every data set measured, see
# docs/labeltree.rst)
COMMON_DEFAULTS = dict(featuresCol="features", labelsCol="labels", predictionCol="prediction",
                       scoresCol="scores", topK=5, numTrees=3, maxLeafLabels=100,
                       clusterEps=1e-4, loss="squared_hinge", C=0.5, tol=0.1, maxIter=20,
                       weightThreshold=0.1, bias=1.0, beamWidth=10, seed=0,
                       trainingMode="replicated")
PARABEL_DEFAULTS = dict(COMMON_DEFAULTS, branchFactor=2, maxDepth=64, balancedClusters=True)
BONSAI_DEFAULTS = dict(COMMON_DEFAULTS, branchFactor=16, maxDepth=3, balancedClusters=False)
