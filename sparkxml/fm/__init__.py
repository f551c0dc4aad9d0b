"""Factorization machines: ``FMRegressor``, ``FMClassifier``, gradient-boosted FMs
(``GBFMRegressor``, ``GBFMClassifier``), field-aware FMs (``FFMRegressor``,
``FFMClassifier``), the ``FieldEncoder`` that builds their fields, and ``FMRanker`` (implicit
feedback, BPR loss).

Modules: ``fm``, ``gbfm`` and ``ffm`` (estimators and models), ``fields`` (the encoder), ``base``
(what FM and GBFM share: checks, summary, bases), ``tasks`` (what runs in the Spark tasks),
``ranker`` and ``ranker_tasks`` (the BPR ranker and its tasks).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {
    "FMRegressor": ".fm", "FMRegressionModel": ".fm",
    "FMClassifier": ".fm", "FMClassificationModel": ".fm",
    "GBFMRegressor": ".gbfm", "GBFMRegressionModel": ".gbfm",
    "GBFMClassifier": ".gbfm", "GBFMClassificationModel": ".gbfm",
    "FFMRegressor": ".ffm", "FFMRegressionModel": ".ffm",
    "FFMClassifier": ".ffm", "FFMClassificationModel": ".ffm",
    "FieldEncoder": ".fields", "FieldEncoderModel": ".fields",
    "FMTrainingSummary": ".base",
    "FMRanker": ".ranker", "FMRankerModel": ".ranker",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
