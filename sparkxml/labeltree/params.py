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
)


def _param(name: str, doc: str, conv):
    return Param(Params._dummy(), name, doc, typeConverter=conv)


class LabelTreeParams(HasFeaturesCol, HasLabelsCol, HasPredictionCol, HasScoresCol, HasTopK,
                      HasNumTrees, HasNumWorkers, HasSeed, HasTol, HasMaxIter):
    """The params of ``Parabel`` and ``Bonsai`` (their defaults are set by each class)."""

    maxLeafLabels = _param("maxLeafLabels", "a node with at most this many labels is a leaf "
                           "(>= 1)", TypeConverters.toInt)
    branchFactor = _param("branchFactor", "children of an internal node: the k of the "
                          "spherical k-means that splits its labels (>= 2)",
                          TypeConverters.toInt)
    maxDepth = _param("maxDepth", "depth at which a node is a leaf whatever its labels "
                      "(root depth 0; >= 1)", TypeConverters.toInt)
    balancedClusters = _param("balancedClusters", "split a node's labels into clusters of "
                              "equal size (Parabel) or to the nearest centroid (Bonsai)",
                              TypeConverters.toBoolean)
    clusterEps = _param("clusterEps", "k-means stops when the mean cosine of labels to their "
                        "centroid improves by less than this (>= 0)", TypeConverters.toFloat)
    loss = _param("loss", "loss of the node classifiers: 'squared_hinge' (L2-loss SVM, "
                  "liblinear -s 1) or 'logistic' (liblinear -s 7)", TypeConverters.toString)
    C = _param("C", "penalty of the node classifiers' loss: 0.5|w|^2 + C sum_i loss_i (> 0)",
               TypeConverters.toFloat)
    weightThreshold = _param("weightThreshold", "trained weights with |w| below this are "
                             "dropped (>= 0)", TypeConverters.toFloat)
    bias = _param("bias", "value of the bias feature appended to every normalised row "
                  "(finite; 0 disables it)", TypeConverters.toFloat)
    beamWidth = _param("beamWidth", "nodes kept per tree level by the beam search (>= 1)",
                       TypeConverters.toInt)
    trainingMode = _param("trainingMode", "how trees are trained: 'replicated' (each task "
                          "holds the whole training set and trains whole trees) or "
                          "'distributed' (level by level, each task holding the rows of its "
                          "nodes only; the same model)", TypeConverters.toString)
    _constraints = {"maxLeafLabels": ge(1), "branchFactor": ge(2), "maxDepth": ge(1),
                    "clusterEps": ge(0.0), "loss": one_of("squared_hinge", "logistic"),
                    "C": gt(0.0), "tol": gt(0.0), "weightThreshold": ge(0.0),
                    "bias": finite(), "beamWidth": ge(1), "trainingMode": one_of("replicated", "distributed")}

    def getMaxLeafLabels(self) -> int:
        return self.getOrDefault(self.maxLeafLabels)

    def getBranchFactor(self) -> int:
        return self.getOrDefault(self.branchFactor)

    def getMaxDepth(self) -> int:
        return self.getOrDefault(self.maxDepth)

    def getBalancedClusters(self) -> bool:
        return self.getOrDefault(self.balancedClusters)

    def getClusterEps(self) -> float:
        return self.getOrDefault(self.clusterEps)

    def getLoss(self) -> str:
        return self.getOrDefault(self.loss)

    def getC(self) -> float:
        return self.getOrDefault(self.C)

    def getWeightThreshold(self) -> float:
        return self.getOrDefault(self.weightThreshold)

    def getBias(self) -> float:
        return self.getOrDefault(self.bias)

    def getBeamWidth(self) -> int:
        return self.getOrDefault(self.beamWidth)

    def getTrainingMode(self) -> str:
        return self.getOrDefault(self.trainingMode)

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
