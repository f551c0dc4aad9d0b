"""What criterion absolute_error needs on the Spark side before training: its distinct labels
(the node sums are per-label weights, ``sparkxml_kernels.forest.criteria``) and the absence
of missing features (scikit-learn's MAE criterion does not route them)."""
from __future__ import annotations

import numpy as np
from pyspark.ml.functions import vector_to_array
from pyspark.sql import functions as F

# distinct labels absolute_error may sum per node and bin (its medians need each of them)
MAX_LABEL_VALUES = 65_536


def label_values(dataset, label: str) -> np.ndarray:
    """float64 (K,) the distinct values of ``label``, ascending. One job that reads at most
    MAX_LABEL_VALUES + 1 values back; more is refused, naming the column."""
    rows = dataset.select(F.col(label).cast("double").alias("y")).distinct() \
        .limit(MAX_LABEL_VALUES + 1).collect()
    if len(rows) > MAX_LABEL_VALUES:
        raise ValueError(f"labelCol: column '{label}' has more than {MAX_LABEL_VALUES} "
                         f"distinct values; criterion 'absolute_error' sums node weights per "
                         f"label value: round the labels or use another criterion")
    return np.sort(np.array([r["y"] for r in rows], np.float64))


def missing_feature_counts(spec: dict) -> dict:
    """Aggregates (riding along with the data checks): rows with a missing (null or NaN)
    feature, per features column."""
    if spec["kind"] == "vector":
        arr = vector_to_array(F.col(spec["col"]))
        return {"features_nan": F.sum(F.exists(arr, lambda x: F.isnan(x)).cast("long"))}
    out = {}
    for i, c in enumerate(spec["cols"]):
        x = F.col(c).cast("double")
        out[f"features_nan_{i}"] = F.sum((x.isNull() | F.isnan(x)).cast("long"))
    return out


def raise_on_missing_features(spec: dict, extra: dict) -> None:
    """Refuse missing features (the counts of :func:`missing_feature_counts`), naming the
    column."""
    vector = spec["kind"] == "vector"
    cols = [spec["col"]] if vector else spec["cols"]
    keys = ["features_nan"] if vector else [f"features_nan_{i}" for i in range(len(cols))]
    for c, key in zip(cols, keys):
        if extra[key]:
            raise ValueError(f"featuresCol{'' if vector else 's'}: column '{c}' has "
                             f"{int(extra[key])} rows with missing (null, NaN) features; "
                             f"criterion 'absolute_error' does not route missing values (as "
                             f"scikit-learn's MAE criterion): impute them or use another "
                             f"criterion")
