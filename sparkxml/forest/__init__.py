"""Decision trees and random forests equal to scikit-learn's node for node:
``DecisionTreeClassifier``, ``DecisionTreeRegressor``, ``RandomForestClassifier``,
``RandomForestRegressor``.

Modules: ``tree`` and ``forest`` (estimators and models), ``base`` (their shared estimator,
model and params), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {
    "DecisionTreeClassifier": ".tree", "DecisionTreeClassificationModel": ".tree",
    "DecisionTreeRegressor": ".tree", "DecisionTreeRegressionModel": ".tree",
    "RandomForestClassifier": ".forest", "RandomForestClassificationModel": ".forest",
    "RandomForestRegressor": ".forest", "RandomForestRegressionModel": ".forest",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
