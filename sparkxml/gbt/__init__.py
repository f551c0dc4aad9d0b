"""Histogram gradient boosting: ``GBTRegressor``, ``GBTClassifier`` and ``LambdaMART``.

Modules: ``estimators`` (GBT estimators and models), ``lambdamart`` (ranking), ``models``
(the models' shared base), ``summary`` (training summaries and evaluations), ``features``
(categorical and sparse feature handling), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    ".estimators": (
        "GBTRegressor", "GBTRegressionModel", "GBTClassifier", "GBTClassificationModel",
    ),
    ".lambdamart": ("LambdaMART", "LambdaMARTModel"),
    ".summary": ("GBTTrainingSummary", "GBTRegressionEvaluation", "GBTClassificationEvaluation"),
})
