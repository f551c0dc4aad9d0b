"""Histogram gradient boosting: ``GBTRegressor``, ``GBTClassifier`` and ``LambdaMART``.

Modules: ``estimators`` (GBT estimators and models), ``lambdamart`` (ranking), ``models``
(the models' shared base), ``summary`` (training summaries and evaluations), ``features``
(categorical and sparse feature handling), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {
    "GBTRegressor": ".estimators", "GBTRegressionModel": ".estimators",
    "GBTClassifier": ".estimators", "GBTClassificationModel": ".estimators",
    "LambdaMART": ".lambdamart", "LambdaMARTModel": ".lambdamart",
    "GBTTrainingSummary": ".summary", "GBTRegressionEvaluation": ".summary",
    "GBTClassificationEvaluation": ".summary",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
