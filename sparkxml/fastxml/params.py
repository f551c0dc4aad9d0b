"""Params of FastXML and PfastreXML: ``FastXMLParams`` and ``PfastreXMLParams`` (which adds
the propensities and the tail classifiers to FastXML's). scoresCol and topK, which the label
trees share, are in ``sparkxml._core.params``."""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import between, finite, finite_positive, ge, gt, one_of
from sparkxml._core.params import (
    HasFeaturesCol,
    HasLabelsCol,
    HasNthread,
    HasNumTrees,
    HasNumWorkers,
    HasPredictionCol,
    HasScoresCol,
    HasSeed,
    HasTopK,
    add_setters,
    param,
)


class HasRowOrder(Params):
    """Mixin for param rowOrder: order of the training rows, which the trees depend on: 'content'
    (by a hash of features and labels computed in the JVM: the model depends only on the
    multiset of rows and the seed) or 'input' (the DataFrame's order, as the authors' C++ reads
    a file; it changes with the partitioning).
    """

    rowOrder: "Param[str]" = param("rowOrder", __doc__, TypeConverters.toString,
                                   one_of("content", "input"))

    def getRowOrder(self) -> str:
        """Gets the value of rowOrder or its default value."""
        return self.getOrDefault(self.rowOrder)


class HasTrainingMode(Params):
    """Mixin for param trainingMode: how the trees are trained: 'replicated' (every task holds the
    whole training set and grows whole trees), 'distributed' (every task holds a shard of the
    rows; the top levels of every tree are grown by all tasks together until a node fits one
    task, then each such subtree is grown by one task) or 'auto' (replicated when the estimated
    per-task memory fits, else distributed).
    """

    trainingMode: "Param[str]" = param("trainingMode", __doc__, TypeConverters.toString,
                                       one_of("auto", "replicated", "distributed"))

    def getTrainingMode(self) -> str:
        """Gets the value of trainingMode or its default value."""
        return self.getOrDefault(self.trainingMode)


class HasMaxLeaf(Params):
    """Mixin for param maxLeaf: a node with at most this many training points is a leaf (>= 1).
    """

    maxLeaf: "Param[int]" = param("maxLeaf", __doc__, TypeConverters.toInt, ge(1))

    def getMaxLeaf(self) -> int:
        """Gets the value of maxLeaf or its default value."""
        return self.getOrDefault(self.maxLeaf)


class HasLabelsPerLeaf(Params):
    """Mixin for param labelsPerLeaf: labels kept in each leaf's distribution, highest mean first
    (>= 1).
    """

    labelsPerLeaf: "Param[int]" = param("labelsPerLeaf", __doc__, TypeConverters.toInt, ge(1))

    def getLabelsPerLeaf(self) -> int:
        """Gets the value of labelsPerLeaf or its default value."""
        return self.getOrDefault(self.labelsPerLeaf)


class HasLogLossCoeff(Params):
    """Mixin for param logLossCoeff: C of the per-node L1-regularised logistic regression,
    class-balanced as C/fraction (> 0).
    """

    logLossCoeff: "Param[float]" = param("logLossCoeff", __doc__, TypeConverters.toFloat, gt(0.0))

    def getLogLossCoeff(self) -> float:
        """Gets the value of logLossCoeff or its default value."""
        return self.getOrDefault(self.logLossCoeff)


class HasBias(Params):
    """Mixin for param bias: value of the bias feature appended to every point (finite; 0 disables
    it).
    """

    bias: "Param[float]" = param("bias", __doc__, TypeConverters.toFloat, finite())

    def getBias(self) -> float:
        """Gets the value of bias or its default value."""
        return self.getOrDefault(self.bias)


class FastXMLParams(HasFeaturesCol, HasLabelsCol, HasPredictionCol, HasScoresCol, HasTopK,
                     HasNumTrees, HasNumWorkers, HasSeed, HasRowOrder, HasTrainingMode, HasMaxLeaf,
                     HasLabelsPerLeaf, HasLogLossCoeff, HasBias, HasNthread):

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelsCol="labels", predictionCol="prediction",
                         scoresCol="scores", topK=5, numTrees=50, maxLeaf=10, labelsPerLeaf=100,
                         logLossCoeff=1.0, bias=1.0, seed=0, rowOrder="content",
                         trainingMode="auto")


class HasPropensityA(Params):
    """Mixin for param propensityA: A of the inverse label propensities 1 + C (N_l + B)^-A,
    C = (ln N - 1)(B + 1)^A (finite; 0.55 as the XC repository for most data sets, 0.5 Wikipedia,
    0.6 Amazon).
    """

    propensityA: "Param[float]" = param("propensityA", __doc__, TypeConverters.toFloat, finite())

    def getPropensityA(self) -> float:
        """Gets the value of propensityA or its default value."""
        return self.getOrDefault(self.propensityA)


class HasPropensityB(Params):
    """Mixin for param propensityB: B of the inverse label propensities (finite, > -1; 1.5 for
    most data sets, 0.4 Wikipedia, 2.6 Amazon).
    """

    propensityB: "Param[float]" = param("propensityB", __doc__, TypeConverters.toFloat, finite())

    def getPropensityB(self) -> float:
        """Gets the value of propensityB or its default value."""
        return self.getOrDefault(self.propensityB)


class HasTailClassifiers(Params):
    """Mixin for param tailClassifiers: rerank the trees' labels with the tail classifiers
    (PfastreXML); false keeps the trees' propensity-weighted scores alone (PfastXML, the
    authors' -S 1).
    """

    tailClassifiers: "Param[bool]" = param("tailClassifiers", __doc__, TypeConverters.toBoolean)

    def getTailClassifiers(self) -> bool:
        """Gets the value of tailClassifiers or its default value."""
        return self.getOrDefault(self.tailClassifiers)


class HasGamma(Params):
    """Mixin for param gamma: steepness of the tail classifiers' score
    1 / (1 + exp(gamma |x - w_l|^2)) (finite, > 0).
    """

    gamma: "Param[float]" = param("gamma", __doc__, TypeConverters.toFloat, finite_positive())

    def getGamma(self) -> float:
        """Gets the value of gamma or its default value."""
        return self.getOrDefault(self.gamma)


class HasAlpha(Params):
    """Mixin for param alpha: weight of the trees in the final score tree^alpha * tail^(1 - alpha)
    (in [0, 1]).
    """

    alpha: "Param[float]" = param("alpha", __doc__, TypeConverters.toFloat, between(0.0, 1.0))

    def getAlpha(self) -> float:
        """Gets the value of alpha or its default value."""
        return self.getOrDefault(self.alpha)


class HasNumCandidates(Params):
    """Mixin for param numCandidates: labels of highest tree score per row that the tail
    classifiers rerank (>= 1).
    """

    numCandidates: "Param[int]" = param("numCandidates", __doc__, TypeConverters.toInt, ge(1))

    def getNumCandidates(self) -> int:
        """Gets the value of numCandidates or its default value."""
        return self.getOrDefault(self.numCandidates)


# the defaults of the params PfastreXML adds to FastXML's
PFASTRE_DEFAULTS = dict(propensityA=0.55, propensityB=1.5, tailClassifiers=True, gamma=30.0,
                        alpha=0.8, numCandidates=1000)


class PfastreXMLParams(FastXMLParams, HasPropensityA, HasPropensityB, HasTailClassifiers,
                       HasGamma, HasAlpha, HasNumCandidates):

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(**PFASTRE_DEFAULTS)


add_setters(PfastreXMLParams, ("gamma", "alpha", "numCandidates", "tailClassifiers"))
