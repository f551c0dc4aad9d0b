"""sparkxml: pure-Python Spark ML estimators for extreme multi-label classification,
histogram gradient boosting, learning to rank, linear SVMs, decision trees and random forests and
factorization machines. Heavy work runs in ``sparkxml_kernels``."""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "sparkxml.fastxml": (
        "FastXML", "FastXMLModel", "PfastreXML", "PfastreXMLModel",
    ),
    "sparkxml.labeltree": (
        "Parabel", "ParabelModel", "Bonsai", "BonsaiModel",
    ),
    "sparkxml.evaluation": (
        "XMLEvaluator", "label_propensities", "RankingEvaluator",
    ),
    "sparkxml.gbt": (
        "GBTRegressor", "GBTRegressionModel", "GBTClassifier", "GBTClassificationModel",
        "LambdaMART", "LambdaMARTModel",
    ),
    "sparkxml.linear": (
        "LinearSVC", "LinearSVCModel",
    ),
    "sparkxml.fm": (
        "FMRegressor", "FMRegressionModel", "FMClassifier", "FMClassificationModel",
        "GBFMRegressor", "GBFMRegressionModel", "GBFMClassifier", "GBFMClassificationModel",
        "FFMRegressor", "FFMRegressionModel", "FFMClassifier", "FFMClassificationModel",
        "FieldEncoder", "FieldEncoderModel", "FMRanker", "FMRankerModel",
    ),
    "sparkxml.forest": (
        "DecisionTreeClassifier", "DecisionTreeClassificationModel", "DecisionTreeRegressor",
        "DecisionTreeRegressionModel", "RandomForestClassifier",
        "RandomForestClassificationModel", "RandomForestRegressor", "RandomForestRegressionModel",
        "ExtraTreesClassifier", "ExtraTreesClassificationModel", "ExtraTreesRegressor",
        "ExtraTreesRegressionModel",
    ),
}


from sparkxml._core import moved as _moved  # noqa: E402
from sparkxml._core.lazy import lazy_exports as _lazy_exports  # noqa: E402

# Lazy so that `import sparkxml` stays cheap and one family's import error does not break
# the others.
__getattr__, __dir__, __all__ = _lazy_exports(__name__, _LAZY)
_moved.install()

