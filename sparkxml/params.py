"""Shared Params: one ``HasX`` mixin per param, and the declarative validation table.

Every param has a ``typeConverter``; its allowed range is stated in its doc and enforced by
``RULES`` below, in one place, by ``validate_params`` at the start of ``_fit``, at
``transform`` and after ``load``. Error messages name the param and the value.
"""
from __future__ import annotations

import math

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (  # noqa: F401  (re-exported: the pyspark.ml spellings)
    HasFeaturesCol,
    HasLabelCol,
    HasMaxIter,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasSeed,
    HasStepSize,
    HasValidationIndicatorCol,
    HasWeightCol,
)


def _param(name: str, doc: str, conv) -> Param:
    return Param(Params._dummy(), name, doc, typeConverter=conv)


class HasLabelsCol(Params):
    labelsCol = _param("labelsCol", "multi-label target column, array<int> of label ids >= 0",
                       TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(labelsCol="labels")

    def getLabelsCol(self) -> str:
        return self.getOrDefault(self.labelsCol)


class HasScoresCol(Params):
    scoresCol = _param("scoresCol", "output column of scores, array<float> aligned with the "
                       "prediction column", TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(scoresCol="scores")

    def getScoresCol(self) -> str:
        return self.getOrDefault(self.scoresCol)


class HasTopK(Params):
    topK = _param("topK", "number of labels to predict per row (>= 1)", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(topK=5)

    def getTopK(self) -> int:
        return self.getOrDefault(self.topK)


class HasNumWorkers(Params):
    numWorkers = _param("numWorkers", "number of Spark tasks training runs on (>= 1); unset: "
                        "the session's default parallelism", TypeConverters.toInt)

    def getNumWorkers(self) -> int:
        return self.getOrDefault(self.numWorkers)


class HasNumTrees(Params):
    numTrees = _param("numTrees", "number of trees (>= 1)", TypeConverters.toInt)

    def getNumTrees(self) -> int:
        return self.getOrDefault(self.numTrees)


class HasK(Params):
    k = _param("k", "cut-off rank k of the metric (>= 1)", TypeConverters.toInt)

    def getK(self) -> int:
        return self.getOrDefault(self.k)


# ---------------------------------------------------------------- declarative validation
def _ge(lo):
    return (lambda v: v >= lo), f"must be >= {lo}"


def _gt(lo):
    return (lambda v: v > lo), f"must be > {lo}"


def _between(lo, hi):
    return (lambda v: lo <= v <= hi), f"must be in [{lo}, {hi}]"


def _open_closed(lo, hi):
    return (lambda v: lo < v <= hi), f"must be in ({lo}, {hi}]"


def _one_of(*options):
    return (lambda v: v in options), f"must be one of {list(options)}"


def _finite():
    return (lambda v: math.isfinite(v)), "must be finite"


def _nonempty():
    return (lambda v: isinstance(v, str) and len(v) > 0), "must be a non-empty column name"


# param name -> (predicate, what it must be). Params shared by several estimators share a rule.
RULES: dict[str, tuple] = {
    "featuresCol": _nonempty(),
    "labelsCol": _nonempty(),
    "labelCol": _nonempty(),
    "predictionCol": _nonempty(),
    "scoresCol": _nonempty(),
    "numTrees": _ge(1),
    "numWorkers": _ge(1),
    "topK": _ge(1),
    "k": _ge(1),
    "maxLeaf": _ge(1),
    "labelsPerLeaf": _ge(1),
    "logLossCoeff": _gt(0.0),
    "bias": _finite(),
    "seed": _finite(),
    "maxIter": _ge(1),
    "stepSize": _open_closed(0.0, 1.0),
    "propensityA": _finite(),
    "propensityB": _finite(),
}


def validate_params(instance: Params) -> None:
    """Check every defined param of ``instance`` against ``RULES``.

    Raises
    ------
    ValueError
        naming the class, the param and the offending value.
    """
    for p in instance.params:
        rule = RULES.get(p.name)
        if rule is None or not instance.isDefined(p):
            continue
        value = instance.getOrDefault(p)
        if value is None:
            continue
        ok, what = rule
        try:
            good = ok(value)
        except TypeError:
            good = False
        if not good:
            raise ValueError(f"{type(instance).__name__}: param {p.name}={value!r} is invalid: "
                             f"{what}")
