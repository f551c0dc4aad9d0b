"""Params of FastXML and PfastreXML shared as mixins (the rest are declared on
``FastXMLParams`` and ``_PfastreXMLParams``; scoresCol and topK, which the label trees share,
in ``sparkxml._core.params``)."""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import one_of
from sparkxml._core.params import param


class HasRowOrder(Params):
    """Mixin for param rowOrder: order of the training rows, which the trees depend on: 'content'
    (by a hash of features and labels computed in the JVM: the model depends only on the
    multiset of rows and the seed) or 'input' (the DataFrame's order, as the authors' C++ reads
    a file; it changes with the partitioning).
    """

    rowOrder: "Param[str]" = param("rowOrder", __doc__, TypeConverters.toString)
    _constraints = {"rowOrder": one_of("content", "input")}

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

    trainingMode: "Param[str]" = param("trainingMode", __doc__, TypeConverters.toString)
    _constraints = {"trainingMode": one_of("auto", "replicated", "distributed")}

    def getTrainingMode(self) -> str:
        """Gets the value of trainingMode or its default value."""
        return self.getOrDefault(self.trainingMode)
