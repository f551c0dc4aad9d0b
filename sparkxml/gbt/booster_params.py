"""Booster-type params of GBTRegressor and GBTClassifier: DART, with XGBoost's names, defaults
and meaning (kernels in ``sparkxml_kernels.gbt.dart``).

boosterType : {"gbtree", "dart"}, default "gbtree"
    "dart": every round drops trees at random before the gradients and rescales them after.
rateDrop, skipDrop : float in [0, 1], default 0.0
    Probability of dropping each tree; of dropping none in a round.
oneDrop : bool, default False
    Drop one tree when the draw dropped none.
normalizeType : {"tree", "forest"}, default "tree"
    With k trees dropped and lr the learning rate: "tree" weighs the new tree 1 / (k + lr)
    and scales the dropped ones by k / (k + lr); "forest" uses 1 / (1 + lr) for both.
sampleType : {"uniform", "weighted"}, default "uniform"
    Trees are dropped with equal chances, or in proportion to their weights.

Predictions use every tree with its weight (the model keeps them as ``tree_weights``, already
applied to the leaf values, so SHAP contributions stay exact and sum to the margin). The
drops are drawn from ``seed`` and the round, the same on every worker: the model does not
depend on ``numWorkers``. XGBoost draws from its own generator, so the same params drop other
trees there. DART does not continue from ``initModel``; xgboost-json export writes XGBoost's
dart booster (``weight_drop``), lightgbm-text and onnx the weighted trees.

processType : {"default", "update"}, default "default"
    "update": no new trees; ``updater`` is applied to ``initModel``'s trees (XGBoost's
    ``process_type="update"``, ``sparkxml_kernels.gbt.updaters``).
updater : {"refresh", "prune"}, default "refresh"
    "refresh": every node's value, gain and cover recomputed on the fit's rows, round by
    round (XGBoost's ``refresh`` with ``refresh_leaf``); "prune": splits whose subtree's gains
    are all below ``minSplitLoss``, or deeper than ``maxDepth``, collapse (no data read).
    refresh takes ``baseMarginCol`` and ``validationIndicatorCol`` (metrics per round, early
    stopping keeps the rounds up to the best one) and returns a training summary:
    ``sparkxml.gbt.update_fit``.
"""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import between, one_of
from sparkxml._core.params import param

DART_PARAMS = ("boosterType", "rateDrop", "skipDrop", "oneDrop", "normalizeType",
               "sampleType", "processType", "updater")


class HasBoosterType(Params):
    """Mixin for param boosterType: 'gbtree' (plain boosting) or 'dart' (trees dropped at
    random every round, XGBoost's dart booster)."""

    boosterType: "Param[str]" = param("boosterType", __doc__, TypeConverters.toString,
                                      one_of("gbtree", "dart"))

    def getBoosterType(self) -> str:
        """Gets the value of boosterType or its default value."""
        return self.getOrDefault(self.boosterType)


class HasRateDrop(Params):
    """Mixin for param rateDrop: DART: probability of dropping each tree in a round, in
    [0, 1]."""

    rateDrop: "Param[float]" = param("rateDrop", __doc__, TypeConverters.toFloat,
                                     between(0.0, 1.0))

    def getRateDrop(self) -> float:
        """Gets the value of rateDrop or its default value."""
        return self.getOrDefault(self.rateDrop)


class HasSkipDrop(Params):
    """Mixin for param skipDrop: DART: probability of dropping no tree in a round, in
    [0, 1]."""

    skipDrop: "Param[float]" = param("skipDrop", __doc__, TypeConverters.toFloat,
                                     between(0.0, 1.0))

    def getSkipDrop(self) -> float:
        """Gets the value of skipDrop or its default value."""
        return self.getOrDefault(self.skipDrop)


class HasOneDrop(Params):
    """Mixin for param oneDrop: DART: drop one tree when the draw dropped none."""

    oneDrop: "Param[bool]" = param("oneDrop", __doc__, TypeConverters.toBoolean)

    def getOneDrop(self) -> bool:
        """Gets the value of oneDrop or its default value."""
        return self.getOrDefault(self.oneDrop)


class HasNormalizeType(Params):
    """Mixin for param normalizeType: DART: 'tree' (new trees weigh 1 / (k + lr), the k
    dropped ones are scaled by k / (k + lr)) or 'forest' (both 1 / (1 + lr))."""

    normalizeType: "Param[str]" = param("normalizeType", __doc__, TypeConverters.toString,
                                        one_of("tree", "forest"))

    def getNormalizeType(self) -> str:
        """Gets the value of normalizeType or its default value."""
        return self.getOrDefault(self.normalizeType)


class HasSampleType(Params):
    """Mixin for param sampleType: DART: 'uniform' (every tree equally likely to be dropped)
    or 'weighted' (in proportion to its weight)."""

    sampleType: "Param[str]" = param("sampleType", __doc__, TypeConverters.toString,
                                     one_of("uniform", "weighted"))

    def getSampleType(self) -> str:
        """Gets the value of sampleType or its default value."""
        return self.getOrDefault(self.sampleType)


class HasProcessType(Params):
    """Mixin for param processType: 'default' (boost new trees) or 'update' (apply updater
    to initModel's trees, XGBoost's process_type)."""

    processType: "Param[str]" = param("processType", __doc__, TypeConverters.toString,
                                      one_of("default", "update"))

    def getProcessType(self) -> str:
        """Gets the value of processType or its default value."""
        return self.getOrDefault(self.processType)


class HasUpdater(Params):
    """Mixin for param updater: with processType 'update': 'refresh' (recompute node values
    and statistics on the data) or 'prune' (collapse splits below minSplitLoss)."""

    updater: "Param[str]" = param("updater", __doc__, TypeConverters.toString,
                                  one_of("refresh", "prune"))

    def getUpdater(self) -> str:
        """Gets the value of updater or its default value."""
        return self.getOrDefault(self.updater)


class BoosterTypeParams(HasBoosterType, HasRateDrop, HasSkipDrop, HasOneDrop,
                        HasNormalizeType, HasSampleType, HasProcessType, HasUpdater):
    """The DART and update params with XGBoost's defaults, and what a fit passes to the
    booster."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(boosterType="gbtree", rateDrop=0.0, skipDrop=0.0, oneDrop=False,
                         normalizeType="tree", sampleType="uniform", processType="default",
                         updater="refresh")

    def _booster_type_options(self) -> dict:
        """``booster.train`` params of the booster type."""
        return {"boosterType": self.getBoosterType(), "rateDrop": self.getRateDrop(),
                "skipDrop": self.getSkipDrop(), "oneDrop": bool(self.getOneDrop()),
                "normalizeType": self.getNormalizeType(), "sampleType": self.getSampleType()}

    def _check_booster_type(self) -> None:
        """Before any job: DART does not continue from an ``initModel``; an update needs
        one."""
        init = self._opt(self.initModel) if self.hasParam("initModel") else None
        if self.getProcessType() == "update":
            if init is None:
                raise ValueError("processType='update' applies updater to initModel's trees: "
                                 "set initModel")
            return
        if self.getBoosterType() == "dart" and init is not None:
            raise ValueError(
                "initModel: boosterType='dart' cannot continue from an existing model (its "
                "trees would have to join the dropout with weights it does not have, e.g. a "
                "model trained as gbtree); train the DART model from scratch, or continue "
                "with boosterType='gbtree' (a DART initModel's weighted trees are kept as "
                "they are)")
