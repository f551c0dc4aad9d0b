"""Param constraints: rule builders and ``validate_params``.

A param mixin declares the allowed values of the param it defines with it, as the rule of
its declaration (``maxDepth = param("maxDepth", __doc__, TypeConverters.toInt, ge(0))``); an
estimator or model class that gives a param its own meaning declares its own rule in a class
attribute ``_constraints``, a dict from param name to a :class:`Rule`, which wins over the
mixins' (``validate_params`` merges both over the class MRO, most derived last).
``SparkXMLParams`` declares the rules of the ``pyspark.ml.param.shared`` params that sparkxml
reuses (``SHARED_PARAM_CONSTRAINTS``), since pyspark's mixins cannot carry them.

``validate_params`` runs at the start of ``_fit``, at ``transform``, before a save and
after a load; its errors name the class, the param and the value.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

from pyspark.ml.param import Param, Params


class Rule(NamedTuple):
    """A constraint on one param's value.

    ``ok(value)`` is true for an allowed value (a ``TypeError`` counts as false); ``what``
    completes the error message "... is invalid: <what>", e.g. "must be >= 1".
    """

    ok: Callable[[Any], bool]
    what: str


def ge(lo: float) -> Rule:
    """``value >= lo``."""
    return Rule(lambda v: v >= lo, f"must be >= {lo}")


def gt(lo: float) -> Rule:
    """``value > lo``."""
    return Rule(lambda v: v > lo, f"must be > {lo}")


def between(lo: float, hi: float) -> Rule:
    """``lo <= value <= hi`` (closed interval)."""
    return Rule(lambda v: lo <= v <= hi, f"must be in [{lo}, {hi}]")


def open_closed(lo: float, hi: float) -> Rule:
    """``lo < value <= hi`` (interval open at ``lo``, closed at ``hi``)."""
    return Rule(lambda v: lo < v <= hi, f"must be in ({lo}, {hi}]")


def zero_or_ge(lo: int) -> Rule:
    """``value == 0`` (no limit) or ``value >= lo``."""
    return Rule(lambda v: v == 0 or v >= lo, f"must be 0 (no limit) or >= {lo}")


def one_of(*options: Any) -> Rule:
    """``value`` is one of ``options``."""
    return Rule(lambda v: v in options, f"must be one of {list(options)}")


def finite() -> Rule:
    """A finite number (not NaN, not infinite)."""
    return Rule(lambda v: math.isfinite(v), "must be finite")


def finite_positive() -> Rule:
    """A finite number > 0."""
    return Rule(lambda v: math.isfinite(v) and v > 0, "must be finite and > 0")


def not_infinite() -> Rule:
    """A finite number or NaN (not +-inf)."""
    return Rule(lambda v: not math.isinf(v), "must be a finite value or NaN")


def nonempty() -> Rule:
    """A non-empty string (a column name)."""
    return Rule(lambda v: isinstance(v, str) and len(v) > 0,
                "must be a non-empty column name")


def column_list() -> Rule:
    """A non-empty list of non-empty strings (column names)."""
    return Rule(lambda v: (isinstance(v, list) and len(v) > 0
                           and all(isinstance(c, str) and c for c in v)),
                "must be a non-empty list of column names")


def feature_names() -> Rule:
    """A list (possibly empty) of non-empty strings (feature names)."""
    return Rule(lambda v: isinstance(v, list) and all(isinstance(c, str) and c for c in v),
                "must be a list of feature names")


def positive_floats() -> Rule:
    """A list of finite floats > 0."""
    return Rule(lambda v: all(math.isfinite(x) and x > 0 for x in v),
                "must be a list of finite floats > 0")


def finite_floats() -> Rule:
    """A non-empty list of finite floats."""
    return Rule(lambda v: (isinstance(v, list) and len(v) > 0
                           and all(math.isfinite(x) for x in v)),
                "must be a non-empty list of finite floats")


def class_thresholds() -> Rule:
    """Per-class thresholds: >= 2 finite values >= 0, at most one of them 0."""
    return Rule(lambda v: (isinstance(v, list) and len(v) >= 2
                           and all(math.isfinite(x) and x >= 0 for x in v)
                           and sum(x == 0 for x in v) <= 1),
                "must be a list of >= 2 finite values >= 0 with at most one 0")


# The pyspark.ml.param.shared params sparkxml reuses (declared on SparkXMLParams). tol is
# LinearSVC's relative duality gap and FM's relative change: 0 runs maxIter rounds.
SHARED_PARAM_CONSTRAINTS: dict[str, Rule] = {
    "featuresCol": nonempty(),
    "labelCol": nonempty(),
    "predictionCol": nonempty(),
    "rawPredictionCol": nonempty(),
    "probabilityCol": nonempty(),
    "weightCol": nonempty(),
    "validationIndicatorCol": nonempty(),
    "seed": finite(),
    "regParam": ge(0.0),
    "tol": ge(0.0),
    "thresholds": class_thresholds(),
}


# The rules mixins declared their class-level Params with, by the Param object's id: the
# class attributes live as long as their classes, and the Params copied onto instances (and
# pickled with them) stay plain pyspark Params.
_DECLARED: dict[int, Rule] = {}


def declare_rule(declared: Param, rule: Rule) -> None:
    """Record ``rule`` as the constraint of the class-level Param ``declared``."""
    _DECLARED[id(declared)] = rule


def constraints_of(cls: type) -> dict[str, Rule]:
    """The rules that apply to instances of ``cls``: along its MRO, the rules its Params
    were declared with (``sparkxml._core.params.param``) and each class's ``_constraints``,
    a more derived class's rule replacing a base's for the same param."""
    merged: dict[str, Rule] = {}
    for klass in reversed(cls.__mro__):
        for value in klass.__dict__.values():
            rule = _DECLARED.get(id(value)) if isinstance(value, Param) else None
            if rule is not None:
                merged[value.name] = rule
        merged.update(klass.__dict__.get("_constraints", {}))
    return merged


def validate_params(instance: Params) -> None:
    """Check every defined, non-null param of ``instance`` against its class's constraints.

    Raises
    ------
    ValueError
        naming the class, the param and the offending value.
    """
    rules = constraints_of(type(instance))
    for p in instance.params:
        rule = rules.get(p.name)
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
