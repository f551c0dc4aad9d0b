"""Factorization machines: ``FMRegressor``, ``FMClassifier``, gradient-boosted FMs
(``GBFMRegressor``, ``GBFMClassifier``), field-aware FMs (``FFMRegressor``,
``FFMClassifier``), the ``FieldEncoder`` that builds their fields, and ``FMRanker`` (implicit
feedback, BPR loss).

Modules: ``fm``, ``gbfm`` and ``ffm`` (estimators and models), ``fields`` (the encoder), ``base``
(what FM and GBFM share: checks, summary, bases), ``tasks`` (what runs in the Spark tasks),
``ranker`` and ``ranker_tasks`` (the BPR ranker and its tasks).
"""
from sparkxml._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    ".fm": ("FMRegressor", "FMRegressionModel", "FMClassifier", "FMClassificationModel"),
    ".gbfm": (
        "GBFMRegressor", "GBFMRegressionModel", "GBFMClassifier", "GBFMClassificationModel",
    ),
    ".ffm": ("FFMRegressor", "FFMRegressionModel", "FFMClassifier", "FFMClassificationModel"),
    ".fields": ("FieldEncoder", "FieldEncoderModel"),
    ".base": ("FMTrainingSummary",),
    ".ranker": ("FMRanker", "FMRankerModel"),
})
