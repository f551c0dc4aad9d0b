"""Decision trees and random forests equal to scikit-learn's node for node:
``DecisionTreeClassifier``, ``DecisionTreeRegressor``, ``RandomForestClassifier``,
``RandomForestRegressor``; ``ExtraTreesClassifier``, ``ExtraTreesRegressor``.

Modules: ``tree``, ``forest`` and ``extra`` (estimators and models), ``base`` (their shared estimator,
model and params), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {
    "DecisionTreeClassifier": ".tree", "DecisionTreeClassificationModel": ".tree",
    "DecisionTreeRegressor": ".tree", "DecisionTreeRegressionModel": ".tree",
    "RandomForestClassifier": ".forest", "RandomForestClassificationModel": ".forest",
    "RandomForestRegressor": ".forest", "RandomForestRegressionModel": ".forest",
    "ExtraTreesClassifier": ".extra", "ExtraTreesClassificationModel": ".extra",
    "ExtraTreesRegressor": ".extra", "ExtraTreesRegressionModel": ".extra",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
