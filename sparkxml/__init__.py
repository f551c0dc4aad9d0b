"""sparkxml: pure-Python Spark ML estimators for extreme multi-label classification,
histogram gradient boosting, learning to rank, linear SVMs, decision trees and random forests and
factorization machines. Heavy work runs in ``sparkxml_kernels``."""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "FastXML": "sparkxml.fastxml",
    "FastXMLModel": "sparkxml.fastxml",
    "PfastreXML": "sparkxml.fastxml",
    "PfastreXMLModel": "sparkxml.fastxml",
    "Parabel": "sparkxml.labeltree",
    "ParabelModel": "sparkxml.labeltree",
    "Bonsai": "sparkxml.labeltree",
    "BonsaiModel": "sparkxml.labeltree",
    "XMLEvaluator": "sparkxml.evaluation",
    "label_propensities": "sparkxml.evaluation",
    "GBTRegressor": "sparkxml.gbt",
    "GBTRegressionModel": "sparkxml.gbt",
    "GBTClassifier": "sparkxml.gbt",
    "GBTClassificationModel": "sparkxml.gbt",
    "LambdaMART": "sparkxml.gbt",
    "LambdaMARTModel": "sparkxml.gbt",
    "RankingEvaluator": "sparkxml.evaluation",
    "LinearSVC": "sparkxml.linear",
    "LinearSVCModel": "sparkxml.linear",
    "FMRegressor": "sparkxml.fm",
    "FMRegressionModel": "sparkxml.fm",
    "FMClassifier": "sparkxml.fm",
    "FMClassificationModel": "sparkxml.fm",
    "GBFMRegressor": "sparkxml.fm",
    "GBFMRegressionModel": "sparkxml.fm",
    "GBFMClassifier": "sparkxml.fm",
    "GBFMClassificationModel": "sparkxml.fm",
    "FFMRegressor": "sparkxml.fm",
    "FFMRegressionModel": "sparkxml.fm",
    "FFMClassifier": "sparkxml.fm",
    "FFMClassificationModel": "sparkxml.fm",
    "FieldEncoder": "sparkxml.fm",
    "FieldEncoderModel": "sparkxml.fm",
    "FMRanker": "sparkxml.fm",
    "FMRankerModel": "sparkxml.fm",
    "DecisionTreeClassifier": "sparkxml.forest",
    "DecisionTreeClassificationModel": "sparkxml.forest",
    "DecisionTreeRegressor": "sparkxml.forest",
    "DecisionTreeRegressionModel": "sparkxml.forest",
    "RandomForestClassifier": "sparkxml.forest",
    "RandomForestClassificationModel": "sparkxml.forest",
    "RandomForestRegressor": "sparkxml.forest",
    "RandomForestRegressionModel": "sparkxml.forest",
    "ExtraTreesClassifier": "sparkxml.forest",
    "ExtraTreesClassificationModel": "sparkxml.forest",
    "ExtraTreesRegressor": "sparkxml.forest",
    "ExtraTreesRegressionModel": "sparkxml.forest",
}


from sparkxml._core import moved as _moved  # noqa: E402
from sparkxml._core.lazy import lazy_exports as _lazy_exports  # noqa: E402

# Lazy so that `import sparkxml` stays cheap and one family's import error does not break
# the others.
__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)
_moved.install()

__all__ = list(_LAZY)
