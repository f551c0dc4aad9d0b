"""Params of GBTRegressor's objectives (``sparkxml_kernels.gbt.objectives``, ``cox``):
objective, MLlib's lossType, huberDelta, quantileAlpha, tweedieVariancePower, maxDeltaStep,
baseScore, and the checks an objective puts on the labels."""
from __future__ import annotations

import math

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.sql import functions as F

from sparkxml._core.constraints import Rule, finite, ge, gt, one_of
from sparkxml._core.params import param
from sparkxml_kernels.gbt.objectives import LOG_LINK, objective_name
from sparkxml_kernels.gbt.regression_metrics import is_regression_metric, resolve

REGRESSION_OBJECTIVES = ("squared_error", "absolute_error", "huber", "quantile", "poisson",
                         "tweedie", "gamma", "cox")
_LOSS_TYPES = {"squared": "squared_error", "absolute": "absolute_error"}
# metrics on the raw score (identity link) and on exp(raw) (log link)
_IDENTITY_METRICS = ("rmse", "mae", "quantile", "huber")
_LOG_METRICS = ("poisson-nloglik", "gamma-nloglik", "gamma-deviance", "tweedie-nloglik")
_POISSON_MAX_DELTA_STEP = 0.7  # XGBoost's count:poisson default


def open_open(lo: float, hi: float) -> Rule:
    """``lo < value < hi``."""
    return Rule(lambda v: lo < v < hi, f"must be in ({lo}, {hi})")


class HasRegressionObjective(Params):
    """Mixin for param objective: regression objective: 'squared_error', 'absolute_error',
    'huber', 'quantile', 'poisson', 'tweedie', 'gamma' or 'cox'.
    """

    objective: "Param[str]" = param("objective", __doc__, TypeConverters.toString,
                                    one_of(*REGRESSION_OBJECTIVES))

    def getObjective(self) -> str:
        """Gets the value of objective or its default value."""
        return self.getOrDefault(self.objective)


class HasLossType(Params):
    """Mixin for param lossType: Spark MLlib's GBTRegressor loss, 'squared' or 'absolute' (an
    alias of objective 'squared_error' / 'absolute_error').
    """

    lossType: "Param[str]" = param("lossType", __doc__, TypeConverters.toString,
                                   one_of(*_LOSS_TYPES))

    def getLossType(self) -> str:
        """Gets the value of lossType or its default value."""
        return self.getOrDefault(self.lossType)


class HasHuberDelta(Params):
    """Mixin for param huberDelta: where the huber loss turns from quadratic to linear (> 0;
    LightGBM's alpha for huber)."""

    huberDelta: "Param[float]" = param("huberDelta", __doc__, TypeConverters.toFloat, gt(0.0))

    def getHuberDelta(self) -> float:
        """Gets the value of huberDelta or its default value."""
        return self.getOrDefault(self.huberDelta)


class HasQuantileAlpha(Params):
    """Mixin for param quantileAlpha: the quantile the 'quantile' objective fits, in (0, 1)."""

    quantileAlpha: "Param[float]" = param("quantileAlpha", __doc__, TypeConverters.toFloat,
                                          open_open(0.0, 1.0))

    def getQuantileAlpha(self) -> float:
        """Gets the value of quantileAlpha or its default value."""
        return self.getOrDefault(self.quantileAlpha)


class HasTweedieVariancePower(Params):
    """Mixin for param tweedieVariancePower: the tweedie objective's variance power rho, in
    (1, 2) (1: poisson, 2: gamma)."""

    tweedieVariancePower: "Param[float]" = param(
        "tweedieVariancePower", __doc__, TypeConverters.toFloat, open_open(1.0, 2.0))

    def getTweedieVariancePower(self) -> float:
        """Gets the value of tweedieVariancePower or its default value."""
        return self.getOrDefault(self.tweedieVariancePower)


class HasMaxDeltaStep(Params):
    """Mixin for param maxDeltaStep: bound on each leaf weight before the learning rate (>= 0;
    0 = none; XGBoost's max_delta_step, which also inflates the poisson hessian: unset, the
    leaves are free and poisson uses 0.7)."""

    maxDeltaStep: "Param[float]" = param("maxDeltaStep", __doc__, TypeConverters.toFloat, ge(0.0))

    def getMaxDeltaStep(self) -> float:
        """Gets the value of maxDeltaStep or its default value."""
        return self.getOrDefault(self.maxDeltaStep)


class HasBaseScore(Params):
    """Mixin for param baseScore: the prediction every row starts from, on the response scale
    (XGBoost's base_score; > 0 for the log-link objectives); unset: the weighted mean of the
    labels, their median / quantileAlpha-quantile for absolute_error / quantile (XGBoost's
    interpolated one without weightCol, the lower weighted one with), 1 for cox."""

    baseScore: "Param[float]" = param("baseScore", __doc__, TypeConverters.toFloat, finite())

    def getBaseScore(self) -> float:
        """Gets the value of baseScore or its default value."""
        return self.getOrDefault(self.baseScore)


def metric_names() -> Rule:
    """A non-empty list of metric names (each checked against the objective or task at
    fit)."""
    from sparkxml.gbt.params import eval_metric

    one = eval_metric().ok
    return Rule(lambda v: isinstance(v, list) and len(v) > 0 and all(one(m) for m in v),
                "must be a non-empty list of metric names (as evalMetric: rmse, mae, quantile, "
                "huber, poisson-nloglik, gamma-nloglik, gamma-deviance, tweedie-nloglik, "
                "cox-nloglik; logloss, error, error@t, auc, aucpr, mlogloss, merror; ndcg@k, "
                "map@k)")


class HasEvalMetrics(Params):
    """Mixin for param evalMetrics: metrics recorded every round on the training and
    validation rows (XGBoost's names, see evalMetric); early stopping follows the first.
    """

    evalMetrics: "Param[list[str]]" = param("evalMetrics", __doc__, TypeConverters.toListString,
                                            metric_names())

    def getEvalMetrics(self) -> list[str]:
        """Gets the value of evalMetrics or its default value."""
        return self.getOrDefault(self.evalMetrics)


class RegressionObjectiveParams(HasRegressionObjective, HasLossType, HasHuberDelta,
                                HasQuantileAlpha, HasTweedieVariancePower, HasMaxDeltaStep,
                                HasBaseScore, HasEvalMetrics):
    """The objective params together, with what a fit derives from them."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(objective="squared_error", huberDelta=1.0, quantileAlpha=0.5,
                         tweedieVariancePower=1.5)

    def effective_objective(self) -> str:
        """``objective``, or MLlib's ``lossType`` when only that is set; both set must
        agree."""
        obj = self.getObjective()
        if self.isSet(self.lossType):
            alias = _LOSS_TYPES[self.getLossType()]
            if self.isSet(self.objective) and obj != alias:
                raise ValueError(f"lossType '{self.getLossType()}' means objective "
                                 f"'{alias}', but objective is '{obj}': set one of them")
            return alias
        return obj

    def objective_spec(self) -> str:
        """The kernel objective name with its parameters, e.g. ``quantile[alpha=0.9]``."""
        obj = self.effective_objective()
        if obj == "huber":
            return objective_name(obj, delta=self.getHuberDelta())
        if obj == "quantile":
            return objective_name(obj, alpha=self.getQuantileAlpha())
        if obj == "tweedie":
            return objective_name(obj, rho=self.getTweedieVariancePower())
        if obj == "poisson":
            mds = self._opt(self.maxDeltaStep)
            return objective_name(obj, maxDeltaStep=_POISSON_MAX_DELTA_STEP if mds is None
                                  else mds)
        return obj

    def resolved_metric(self, metric):
        """The evaluation metric as the booster names it (``quantile@0.9``), checked
        against the objective: metrics of the raw score for the identity-link objectives,
        likelihoods of ``exp(raw)`` for the log-link ones, cox-nloglik for cox."""
        obj = self.effective_objective()
        if metric is None:
            return None
        log_link = obj in LOG_LINK
        base = metric.partition("@")[0]
        allowed = (("cox-nloglik",) if obj == "cox" else _LOG_METRICS if log_link
                   else _IDENTITY_METRICS)
        if base not in allowed or (metric != "rmse" and not is_regression_metric(
                resolve(metric, obj, self._metric_params()))):
            raise ValueError(f"evalMetric '{metric}' does not apply to objective '{obj}'; "
                             f"use one of {list(allowed)}")
        return resolve(metric, obj, self._metric_params())

    def resolved_metrics(self):
        """``(metric early stopping watches, [every metric] or None)`` from ``evalMetric``
        and ``evalMetrics``: the first of evalMetrics unless evalMetric is set."""
        metric = self.resolved_metric(self._opt(self.evalMetric))
        names = self._opt(self.evalMetrics)
        if not names:
            return metric, None
        resolved = [self.resolved_metric(m) for m in names]
        if len(set(resolved)) != len(resolved):
            raise ValueError(f"evalMetrics: {names} names a metric twice")
        return metric or resolved[0], resolved

    def check_validation(self, valid) -> None:
        """cox's metric needs the training rows' risk sets: no validation set with it."""
        if valid and self.effective_objective() == "cox":
            raise ValueError(f"validationIndicatorCol: objective 'cox' has no validation "
                             f"metric (cox-nloglik is recorded for the training rows only); "
                             f"unset validationIndicatorCol '{valid}'")

    def _metric_params(self) -> dict:
        obj = self.effective_objective()
        return {"quantile": {"alpha": self.getQuantileAlpha()},
                "huber": {"delta": self.getHuberDelta()},
                "tweedie": {"rho": self.getTweedieVariancePower()}}.get(obj, {})

    def booster_options(self) -> dict:
        """``maxDeltaStep`` (leaf clip) and ``baseScore`` (raw) for ``booster.train``."""
        obj = self.effective_objective()
        out = {"maxDeltaStep": float(self._opt(self.maxDeltaStep) or 0.0),
               "evalMetrics": self.resolved_metrics()[1]}
        base = self._opt(self.baseScore)
        if base is not None:
            if obj in LOG_LINK and not base > 0:
                raise ValueError(f"baseScore: objective '{obj}' predicts exp(margin), so "
                                 f"baseScore must be > 0, got {base!r}")
            out["baseScore"] = math.log(base) if obj in LOG_LINK else float(base)
        return out

    def label_checks(self, label: str) -> dict:
        """Aggregates riding along the data-check job: the first label the objective
        refuses."""
        obj = self.effective_objective()
        L = F.col(label).cast("double")
        if obj in ("poisson", "tweedie"):
            return {"label_refused": F.first(F.when(L < 0, L), ignorenulls=True)}
        if obj == "gamma":
            return {"label_refused": F.first(F.when(L <= 0, L), ignorenulls=True)}
        return {}

    def check_labels(self, label: str, extra: dict) -> None:
        bad = extra.get("label_refused")
        if bad is None:
            return
        obj = self.effective_objective()
        need = "> 0" if obj == "gamma" else ">= 0"
        raise ValueError(f"labelCol: column '{label}' holds the value {float(bad)!r}; "
                         f"objective '{obj}' needs labels {need}")
