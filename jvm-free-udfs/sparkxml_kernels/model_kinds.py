"""What ``load_model`` checks in a directory's metadata before it reads any array, as
``Model.load`` does on the Spark side: that the class the metadata names is a model of the
kind it claims (a forest's arrays are not served as a LinearSVC because its metadata says
so), and that the params the predictors read hold valid values (the rules are the Spark
classes' own ``_constraints``; a test keeps the two in step).
"""
from __future__ import annotations

import math

from .persist import ModelFormatError

# modelKind -> the model classes (last component of the class path) saved with it
KIND_CLASSES = {
    "forest": ("DecisionTreeClassificationModel", "DecisionTreeRegressionModel",
               "RandomForestClassificationModel", "RandomForestRegressionModel",
               "ExtraTreesClassificationModel", "ExtraTreesRegressionModel"),
    "gbt": ("GBTClassificationModel", "GBTRegressionModel", "LambdaMARTModel"),
    "fm": ("FMClassificationModel", "FMRegressionModel"),
    "gbfm": ("GBFMClassificationModel", "GBFMRegressionModel"),
    "ffm": ("FFMClassificationModel", "FFMRegressionModel"),
    "linear_svm": ("LinearSVCModel",),
    "fastxml": ("FastXMLModel",),
    "pfastrexml": ("PfastreXMLModel",),
    "parabel": ("ParabelModel",),
    "bonsai": ("BonsaiModel",),
    "fields": ("FieldEncoderModel",),
    "fm_ranker": ("FMRankerModel",),
}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# modelKind -> {param: (rule, what it must be)}: the params a predictor reads from metadata
PREDICTOR_PARAMS = {
    "pfastrexml": {
        "gamma": (lambda v: _number(v) and v > 0, "must be finite and > 0"),
        "alpha": (lambda v: _number(v) and 0.0 <= v <= 1.0, "must be in [0.0, 1.0]"),
        "numCandidates": (lambda v: _number(v) and v == int(v) and v >= 1,
                          "must be an integer >= 1"),
        "tailClassifiers": (lambda v: isinstance(v, bool), "must be true or false"),
    },
    "linear_svm": {"threshold": (_number, "must be finite")},
}


def check_kind(meta: dict, path: str) -> None:
    """Raise ``ModelFormatError`` naming ``path`` unless the metadata's class is a model of
    its ``modelKind`` and the params its predictor reads are valid."""
    kind, cls = meta["modelKind"], meta["class"]
    allowed = KIND_CLASSES.get(kind)
    if allowed is not None and (not cls.startswith("sparkxml.")
                                or cls.rsplit(".", 1)[-1] not in allowed):
        raise ModelFormatError(f"{path} holds a {cls}, which is not a {kind!r} model (one of "
                               f"{list(allowed)}): its metadata is corrupt")
    for key in ("paramMap", "defaultParamMap"):
        if not isinstance(meta.get(key, {}), dict):
            raise ModelFormatError(f"{path}/metadata is corrupt: {key} is not an object")
    for name, (ok, what) in PREDICTOR_PARAMS.get(kind, {}).items():
        for key in ("paramMap", "defaultParamMap"):
            if name in meta.get(key, {}):
                value = meta[key][name]
                if not ok(value):
                    raise ModelFormatError(f"{path}: {cls.rsplit('.', 1)[-1]}: param "
                                           f"{name}={value!r} is invalid: {what}")
