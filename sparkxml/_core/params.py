"""Shared Params: one ``HasX`` mixin per param used by more than one family.

Column params, seed, numWorkers, the tree-engine params GBT and forests share and the
evaluators' params live here (pyspark's ``pyspark.ml.param.shared`` mixins are re-exported
under their own names); a family's own params live in its ``params`` module
(``sparkxml.gbt.params``, ``sparkxml.linear.params``, ...).

Every param has a ``typeConverter``; its allowed range is stated in its doc and declared
with it, as the ``rule`` of :func:`param` (see ``sparkxml._core.constraints``), which
``validate_params`` checks at the start of ``_fit``, at ``transform``, before a save and
after a load.
"""
from __future__ import annotations

from typing import Any, Callable

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (  # noqa: F401  (re-exported: the pyspark.ml spellings)
    HasFeaturesCol,
    HasFitIntercept,
    HasLabelCol,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasRegParam,
    HasSeed,
    HasStandardization,
    HasThresholds,
    HasTol,
    HasValidationIndicatorCol,
    HasWeightCol,
)

from sparkxml._core.constraints import (
    Rule,
    column_list,
    declare_rule,
    ge,
    gt,
    nonempty,
    open_closed,
    positive_floats,
)


def param(name: str, doc: str | None, converter: Callable[[Any], Any],
          rule: Rule | None = None) -> Param:
    """The Param ``name`` that a ``HasX`` mixin declares, documented by the mixin's docstring.

    ``doc`` is the mixin's ``__doc__``: "Mixin for param <name>: <text>.", as pyspark's shared
    mixins are documented. The Param's doc (what ``explainParam`` prints) is <text> with its
    white space folded and the final period dropped, so each param's doc is written once.
    Under ``python -OO`` (no docstrings) the doc is empty. ``rule`` is the param's constraint
    (``sparkxml._core.constraints``), which ``validate_params`` checks on every class that
    has the param, unless a class declares its own in ``_constraints``.
    """
    text = " ".join((doc or "").split())
    head = f"Mixin for param {name}: "
    if doc is not None:
        if not text.startswith(head):
            raise ValueError(f"the docstring of param {name}'s mixin must start with {head!r}")
        text = text[len(head):].removesuffix(".")
    declared = Param(Params._dummy(), name, text, typeConverter=converter)
    if rule is not None:
        declare_rule(declared, rule)
    return declared


def add_setters(cls: type, names) -> type:
    """Give ``cls`` a ``setX(value)`` for each param name ``x`` in ``names`` that it lacks."""
    for name in names:
        setter = "set" + name[0].upper() + name[1:]
        if not hasattr(cls, setter):
            def _set(self, value, _name=name):
                return self._set(**{_name: value})
            _set.__name__ = setter
            _set.__doc__ = f"Set ``{name}``."
            setattr(cls, setter, _set)
    return cls


class HasLabelsCol(Params):
    """Mixin for param labelsCol: multi-label target column, array<int> of label ids >= 0."""

    labelsCol: "Param[str]" = param("labelsCol", __doc__, TypeConverters.toString, nonempty())

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._setDefault(labelsCol="labels")

    def getLabelsCol(self) -> str:
        """Gets the value of labelsCol or its default value."""
        return self.getOrDefault(self.labelsCol)


class HasScoresCol(Params):
    """Mixin for param scoresCol: output column of scores, array<float> aligned with the prediction
    column.
    """

    scoresCol: "Param[str]" = param("scoresCol", __doc__, TypeConverters.toString, nonempty())

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._setDefault(scoresCol="scores")

    def getScoresCol(self) -> str:
        """Gets the value of scoresCol or its default value."""
        return self.getOrDefault(self.scoresCol)


class HasTopK(Params):
    """Mixin for param topK: number of labels to predict per row (>= 1)."""

    topK: "Param[int]" = param("topK", __doc__, TypeConverters.toInt, ge(1))

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._setDefault(topK=5)

    def getTopK(self) -> int:
        """Gets the value of topK or its default value."""
        return self.getOrDefault(self.topK)


class HasNumWorkers(Params):
    """Mixin for param numWorkers: number of Spark tasks training runs on (>= 1); unset: the
    session's default parallelism.
    """

    numWorkers: "Param[int]" = param("numWorkers", __doc__, TypeConverters.toInt, ge(1))

    def getNumWorkers(self) -> int:
        """Gets the value of numWorkers or its default value."""
        return self.getOrDefault(self.numWorkers)


class HasNthread(Params):
    """Mixin for param nthread: threads each Spark task uses for its kernels (>= 1; capped at
    the cores numba sees); unset: the task's spark.task.cpus, read in the task as
    xgboost.spark does. Models are the same whatever its value.
    """

    nthread: "Param[int]" = param("nthread", __doc__, TypeConverters.toInt, ge(1))

    def getNthread(self) -> int:
        """Gets the value of nthread or its default value."""
        return self.getOrDefault(self.nthread)


class HasNumTrees(Params):
    """Mixin for param numTrees: number of trees (>= 1)."""

    numTrees: "Param[int]" = param("numTrees", __doc__, TypeConverters.toInt, ge(1))

    def getNumTrees(self) -> int:
        """Gets the value of numTrees or its default value."""
        return self.getOrDefault(self.numTrees)


class HasK(Params):
    """Mixin for param k: cut-off rank k of the metric (>= 1)."""

    k: "Param[int]" = param("k", __doc__, TypeConverters.toInt, ge(1))

    def getK(self) -> int:
        """Gets the value of k or its default value."""
        return self.getOrDefault(self.k)


class HasFeaturesCols(Params):
    """Mixin for param featuresCols: numeric input columns used as features instead of featuresCol
    (non-empty list of column names; null means missing).
    """

    featuresCols: "Param[list[str]]" = param("featuresCols", __doc__, TypeConverters.toListString,
                                             column_list())

    def getFeaturesCols(self) -> list[str]:
        """Gets the value of featuresCols or its default value."""
        return self.getOrDefault(self.featuresCols)


class HasSubsamplingRate(Params):
    """Mixin for param subsamplingRate: fraction of rows sampled per tree, in (0, 1]."""

    subsamplingRate: "Param[float]" = param("subsamplingRate", __doc__, TypeConverters.toFloat,
                                            open_closed(0.0, 1.0))

    def getSubsamplingRate(self) -> float:
        """Gets the value of subsamplingRate or its default value."""
        return self.getOrDefault(self.subsamplingRate)


class HasEarlyStoppingRounds(Params):
    """Mixin for param earlyStoppingRounds: stop when the validation metric has not improved for
    this many rounds (>= 0; 0 = off; needs validationIndicatorCol).
    """

    earlyStoppingRounds: "Param[int]" = param("earlyStoppingRounds", __doc__, TypeConverters.toInt,
                                              ge(0))

    def getEarlyStoppingRounds(self) -> int:
        """Gets the value of earlyStoppingRounds or its default value."""
        return self.getOrDefault(self.earlyStoppingRounds)


class HasTimeoutSeconds(Params):
    """Mixin for param timeoutSeconds: seconds a training task waits for a silent peer before
    failing (> 0).
    """

    timeoutSeconds: "Param[float]" = param("timeoutSeconds", __doc__, TypeConverters.toFloat,
                                           gt(0.0))

    def getTimeoutSeconds(self) -> float:
        """Gets the value of timeoutSeconds or its default value."""
        return self.getOrDefault(self.timeoutSeconds)


class HasGroupCol(Params):
    """Mixin for param groupCol: query (group) id column: rows with the same id are ranked together
    (integer or string).
    """

    groupCol: "Param[str]" = param("groupCol", __doc__, TypeConverters.toString, nonempty())

    def getGroupCol(self) -> str:
        """Gets the value of groupCol or its default value."""
        return self.getOrDefault(self.groupCol)


class HasInversePropensities(Params):
    """Mixin for param inversePropensities: inverse label propensities 1/p_l, one a label id
    (finite, > 0); see sparkxml.evaluation.label_propensities.
    """

    inversePropensities: "Param[list[float]]" = param(
        "inversePropensities", __doc__, TypeConverters.toListFloat, positive_floats())

    def getInversePropensities(self) -> list[float]:
        """Gets the value of inversePropensities or its default value."""
        return self.getOrDefault(self.inversePropensities)


# pyspark's HasMaxIter / HasStepSize say ">= 0"; sparkxml wants >= 1 and (0, 1]: the same
# param names, with docs that state the ranges checked.
class HasMaxIter(Params):
    """Mixin for param maxIter: maximum number of iterations: boosting rounds, solver rounds or
    sweeps (>= 1).
    """

    maxIter: "Param[int]" = param("maxIter", __doc__, TypeConverters.toInt, ge(1))

    def getMaxIter(self) -> int:
        """Gets the value of maxIter or its default value."""
        return self.getOrDefault(self.maxIter)


class HasStepSize(Params):
    """Mixin for param stepSize: step size (learning rate) applied to each iteration, in (0, 1]."""

    stepSize: "Param[float]" = param("stepSize", __doc__, TypeConverters.toFloat,
                                     open_closed(0.0, 1.0))

    def getStepSize(self) -> float:
        """Gets the value of stepSize or its default value."""
        return self.getOrDefault(self.stepSize)


class HasVerbose(Params):
    """Mixin for param verbose: log progress through the Python logger 'sparkxml' at INFO every
    this many rounds (or trees), with the training and validation metrics (>= 0; 0 = silent).
    """

    verbose: "Param[int]" = param("verbose", __doc__, TypeConverters.toInt, ge(0))

    def getVerbose(self) -> int:
        """Gets the value of verbose or its default value."""
        return self.getOrDefault(self.verbose)
