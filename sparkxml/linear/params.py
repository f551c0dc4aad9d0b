"""Params of LinearSVC.

Their constraints are LinearSVC's own (``_LinearSVCParams._constraints`` in
``sparkxml.linear.svc``): names such as loss, threshold and C mean other things, with other
ranges, in other estimators (a probability threshold lies in [0, 1]).
"""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.params import param


class HasC(Params):
    """Mixin for param C: penalty of the loss: primal 0.5|w|^2 + C sum_i weight_i loss_i (> 0;
    Spark MLlib's regParam equals 1 / (C n)).
    """

    C: "Param[float]" = param("C", __doc__, TypeConverters.toFloat)

    def getC(self) -> float:
        """Gets the value of C or its default value."""
        return self.getOrDefault(self.C)


class HasLoss(Params):
    """Mixin for param loss: 'hinge' (L1-loss SVM, liblinear -s 3) or 'squared_hinge' (L2-loss,
    liblinear -s 1).
    """

    loss: "Param[str]" = param("loss", __doc__, TypeConverters.toString)

    def getLoss(self) -> str:
        """Gets the value of loss or its default value."""
        return self.getOrDefault(self.loss)


class HasMultiClass(Params):
    """Mixin for param multiClass: more than two classes: 'ovr' (one-vs-rest, K binary SVMs) or
    'crammer_singer' (one K-class SVM).
    """

    multiClass: "Param[str]" = param("multiClass", __doc__, TypeConverters.toString)

    def getMultiClass(self) -> str:
        """Gets the value of multiClass or its default value."""
        return self.getOrDefault(self.multiClass)


class HasSchedule(Params):
    """Mixin for param schedule: order of the dual coordinates: 'shark' (Shark QpBoxLinear's
    gain-based preferences) or 'permutation' (liblinear's random order with shrinking).
    """

    schedule: "Param[str]" = param("schedule", __doc__, TypeConverters.toString)

    def getSchedule(self) -> str:
        """Gets the value of schedule or its default value."""
        return self.getOrDefault(self.schedule)


class HasNumBlocks(Params):
    """Mixin for param numBlocks: number of CoCoA+ blocks the rows are hashed into (>= 0; 0 = 1
    below 16384 rows, else max(2, ceil(rows / 1e6))); the model depends on it, never on
    numWorkers.
    """

    numBlocks: "Param[int]" = param("numBlocks", __doc__, TypeConverters.toInt)

    def getNumBlocks(self) -> int:
        """Gets the value of numBlocks or its default value."""
        return self.getOrDefault(self.numBlocks)


class HasMarginThreshold(Params):
    """Mixin for param threshold: binary prediction is 1 when the margin w.x + b > threshold
    (finite).
    """

    threshold: "Param[float]" = param("threshold", __doc__, TypeConverters.toFloat)

    def getThreshold(self) -> float:
        """Gets the value of threshold or its default value."""
        return self.getOrDefault(self.threshold)


class HasSolver(Params):
    """Mixin for param solver: binary and one-vs-rest training: 'auto' (primal Newton when a
    problem has at most 512 weights, else dual coordinate descent), 'newton' or 'dcd'
    (Crammer-Singer always uses dual coordinate descent).
    """

    solver: "Param[str]" = param("solver", __doc__, TypeConverters.toString)

    def getSolver(self) -> str:
        """Gets the value of solver or its default value."""
        return self.getOrDefault(self.solver)
