"""Custom objective and metric of GBTRegressor and GBTClassifier (``setCustomObjective``,
``setCustomMetric``; kernels in ``sparkxml_kernels.gbt.custom``). The callables travel to the
training tasks inside the task function (cloudpickle, so over Spark Connect too); the model
records the objective as ``custom:<name>`` and the metric under ``custom:<name>`` in
``summary.metricHistory``. They are not Params: estimator persistence does not keep them."""
from __future__ import annotations

from sparkxml_kernels.gbt.custom import custom_name


class HasCustomFunctions:
    """``setCustomObjective`` / ``setCustomMetric`` and what a fit does with them."""

    _custom_objective = None  # (fn, name)
    _custom_metric = None  # (fn, name, higher_is_better)

    def setCustomObjective(self, fn, name: str = "objective"):
        """Train on ``fn(label, margin, weight) -> (grad, hess)`` (numpy float64 arrays; the
        margin (n,) for regression and two classes, (n, numClasses) for more; weight None
        when unweighted, applied by ``fn`` as XGBoost's custom objectives). The base score is
        0 unless ``baseScore`` is set; the model predicts the margin (a classifier still
        reads it as log-odds). ``fn`` None removes it."""
        if fn is None:
            self._custom_objective = None
            return self
        if not callable(fn):
            raise TypeError(f"setCustomObjective: fn must be callable, got "
                            f"{type(fn).__name__}")
        custom_name(name)
        self._custom_objective = (fn, str(name))
        return self

    def setCustomMetric(self, fn, name: str = "metric", higherIsBetter: bool = False):
        """Record ``fn(label, margin, weight) -> (weighted sum, weight)`` every round on the
        training and validation rows as metric ``custom:<name>`` (their ratio over all
        workers); early stopping follows it unless ``evalMetric`` / ``evalMetrics`` is set.
        ``fn`` None removes it."""
        if fn is None:
            self._custom_metric = None
            return self
        if not callable(fn):
            raise TypeError(f"setCustomMetric: fn must be callable, got {type(fn).__name__}")
        custom_name(name)
        self._custom_metric = (fn, str(name), bool(higherIsBetter))
        return self

    def _with_custom(self, params: dict):
        """(booster params with the custom objective / metric named, what the tasks register
        or None)."""
        obj, met = self._custom_objective, self._custom_metric
        if obj is None and met is None:
            return params, None
        p = dict(params)
        custom = {"objective": obj, "metric": met}
        if obj is not None:
            p["objective"] = custom_name(obj[1])
        if met is not None:
            name = custom_name(met[1])
            others = list(p.get("evalMetrics") or ([p["evalMetric"]] if p.get("evalMetric")
                                                   else []))
            p["evalMetrics"] = others + [name]
            p["evalMetric"] = p.get("evalMetric") or (others[0] if others else name)
        return p, custom


def register_in_task(custom) -> None:
    """Register the custom objective / metric in this (task) process."""
    if not custom:
        return
    from sparkxml_kernels.gbt.custom import register_custom_metric, register_objective

    if custom.get("objective") is not None:
        register_objective(*custom["objective"])
    if custom.get("metric") is not None:
        register_custom_metric(*custom["metric"])
