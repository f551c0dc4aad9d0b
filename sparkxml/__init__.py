"""sparkxml: pure-Python Spark ML estimators for extreme multi-label classification,
histogram gradient boosting, learning to rank, linear SVMs, decision trees and random forests and
factorization machines. Heavy work runs in ``sparkxml_kernels``."""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "FastXML": "sparkxml.fastxml",
    "FastXMLModel": "sparkxml.fastxml",
    "PfastreXML": "sparkxml.pfastrexml",
    "PfastreXMLModel": "sparkxml.pfastrexml",
    "XMLEvaluator": "sparkxml.evaluation",
    "label_propensities": "sparkxml.evaluation",
    "GBTRegressor": "sparkxml.gbt",
    "GBTRegressionModel": "sparkxml.gbt",
    "GBTClassifier": "sparkxml.gbt",
    "GBTClassificationModel": "sparkxml.gbt",
    "LambdaMART": "sparkxml.ranking",
    "LambdaMARTModel": "sparkxml.ranking",
    "RankingEvaluator": "sparkxml.evaluation",
    "LinearSVC": "sparkxml.linear_svm",
    "LinearSVCModel": "sparkxml.linear_svm",
    "FMRegressor": "sparkxml.fm",
    "FMRegressionModel": "sparkxml.fm",
    "FMClassifier": "sparkxml.fm",
    "FMClassificationModel": "sparkxml.fm",
    "GBFMRegressor": "sparkxml.gbfm",
    "GBFMRegressionModel": "sparkxml.gbfm",
    "GBFMClassifier": "sparkxml.gbfm",
    "GBFMClassificationModel": "sparkxml.gbfm",
    "FieldEncoder": "sparkxml.fields",
    "FieldEncoderModel": "sparkxml.fields",
    "DecisionTreeClassifier": "sparkxml.tree",
    "DecisionTreeClassificationModel": "sparkxml.tree",
    "DecisionTreeRegressor": "sparkxml.tree",
    "DecisionTreeRegressionModel": "sparkxml.tree",
    "RandomForestClassifier": "sparkxml.forest",
    "RandomForestClassificationModel": "sparkxml.forest",
    "RandomForestRegressor": "sparkxml.forest",
    "RandomForestRegressionModel": "sparkxml.forest",
}


def __getattr__(name):
    # Lazy so that `import sparkxml` stays cheap and one estimator's import error does not
    # break the others.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sparkxml' has no attribute {name!r}")


__all__ = list(_LAZY)
