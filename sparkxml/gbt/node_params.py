"""Params of the features each tree node may split on: ``colsampleByLevel``,
``colsampleByNode`` and ``interactionConstraints`` (XGBoost's ``colsample_bylevel``,
``colsample_bynode``, ``interaction_constraints``; the kernels are
``sparkxml_kernels.gbt.node_features``). Shared by GBTRegressor, GBTClassifier, LambdaMART
and their models."""
from __future__ import annotations

import json
import numbers

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import Rule, open_closed
from sparkxml._core.params import param


def to_interaction_sets(value):
    """typeConverter of interactionConstraints: a list of lists of feature indices (int) or
    feature names (str), or the same as a JSON string (XGBoost's form, ``"[[0, 1], [2]]"``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise TypeError(f"interactionConstraints: cannot parse {value!r} as JSON ({e})")
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"interactionConstraints must be a list of lists of feature indices "
                        f"or names, got {type(value).__name__}")
    out = []
    for s in value:
        if not isinstance(s, (list, tuple)):
            raise TypeError(f"interactionConstraints: each set must be a list, got {s!r}")
        items = []
        for f in s:
            if isinstance(f, str):
                items.append(f)
            elif isinstance(f, bool):
                raise TypeError(f"interactionConstraints: {f!r} is neither a feature index "
                                f"nor a feature name")
            elif isinstance(f, numbers.Integral):
                items.append(int(f))
            elif isinstance(f, numbers.Real) and float(f).is_integer():
                items.append(int(f))
            else:
                raise TypeError(f"interactionConstraints: {f!r} is neither a feature index "
                                f"nor a feature name")
        out.append(items)
    return out


def _sets_rule() -> Rule:
    return Rule(lambda v: all(len(s) > 0 and all(isinstance(f, str) or f >= 0 for f in s)
                              for s in v),
                "must be non-empty lists of feature indices >= 0 or feature names")


class HasColsampleByLevel(Params):
    """Mixin for param colsampleByLevel: fraction of the tree's features sampled for each depth
    level, in (0, 1] (XGBoost's colsample_bylevel).
    """

    colsampleByLevel: "Param[float]" = param("colsampleByLevel", __doc__, TypeConverters.toFloat,
                                             open_closed(0.0, 1.0))

    def getColsampleByLevel(self) -> float:
        """Gets the value of colsampleByLevel or its default value."""
        return self.getOrDefault(self.colsampleByLevel)


class HasColsampleByNode(Params):
    """Mixin for param colsampleByNode: fraction of the level's features sampled for each node,
    in (0, 1] (XGBoost's colsample_bynode).
    """

    colsampleByNode: "Param[float]" = param("colsampleByNode", __doc__, TypeConverters.toFloat,
                                            open_closed(0.0, 1.0))

    def getColsampleByNode(self) -> float:
        """Gets the value of colsampleByNode or its default value."""
        return self.getOrDefault(self.colsampleByNode)


class HasInteractionConstraints(Params):
    """Mixin for param interactionConstraints: sets of features allowed to interact, as lists of
    feature indices or names (XGBoost's interaction_constraints): no branch of a tree splits on
    features from two sets that no single set holds together.
    """

    interactionConstraints: "Param[list]" = param(
        "interactionConstraints", __doc__, to_interaction_sets, _sets_rule())

    def getInteractionConstraints(self) -> list:
        """Gets the value of interactionConstraints or its default value."""
        return self.getOrDefault(self.interactionConstraints)


class NodeFeatureParams(HasColsampleByLevel, HasColsampleByNode, HasInteractionConstraints):
    """The three params with their defaults, and their booster form for a fit."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(colsampleByLevel=1.0, colsampleByNode=1.0)

    def _node_feature_params(self, names, d: int) -> dict:
        """Booster params (``sparkxml_kernels.gbt.booster.BoosterParams``) of a fit on ``d``
        features named ``names`` (None: unnamed): names in interactionConstraints resolved to
        indices. ValueError naming the param and the unknown feature."""
        out = {"colsampleByLevel": float(self.getColsampleByLevel()),
               "colsampleByNode": float(self.getColsampleByNode())}
        sets = (self.getInteractionConstraints()
                if self.isDefined(self.interactionConstraints) else None)
        if sets:
            index = {n: i for i, n in enumerate(names or ())}
            resolved = []
            for s in sets:
                ids = []
                for f in s:
                    if isinstance(f, str):
                        if f not in index:
                            known = (f"known features: {list(names)}" if names else
                                     "the features have no names (use indices, featuresCols "
                                     "or a VectorAssembler's column)")
                            raise ValueError(f"interactionConstraints: unknown feature {f!r}; "
                                             f"{known}")
                        ids.append(index[f])
                    elif not 0 <= f < d:
                        raise ValueError(f"interactionConstraints: feature index {f} is not in "
                                         f"0..{d - 1} ({d} features)")
                    else:
                        ids.append(int(f))
                resolved.append(ids)
            out["interactionConstraints"] = resolved
        return out
