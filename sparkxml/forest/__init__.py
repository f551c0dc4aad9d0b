"""Decision trees and random forests equal to scikit-learn's node for node:
``DecisionTreeClassifier``, ``DecisionTreeRegressor``, ``RandomForestClassifier``,
``RandomForestRegressor``; ``ExtraTreesClassifier``, ``ExtraTreesRegressor``.

Modules: ``tree``, ``forest`` and ``extra`` (estimators and models), ``base`` (their shared estimator,
model and params), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    ".tree": (
        "DecisionTreeClassifier", "DecisionTreeClassificationModel", "DecisionTreeRegressor",
        "DecisionTreeRegressionModel",
    ),
    ".forest": (
        "RandomForestClassifier", "RandomForestClassificationModel", "RandomForestRegressor",
        "RandomForestRegressionModel",
    ),
    ".extra": (
        "ExtraTreesClassifier", "ExtraTreesClassificationModel", "ExtraTreesRegressor",
        "ExtraTreesRegressionModel",
    ),
})
