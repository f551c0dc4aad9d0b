"""A GBT ensemble (``TreeEnsemblePredictor``) as an ONNX graph of the ``ai.onnx.ml``
``TreeEnsembleRegressor`` / ``TreeEnsembleClassifier`` operators, which ONNX Runtime runs.
The graph is built with the ``onnx`` package (the optional ``sparkxml[onnx]`` extra).

Graph: one input ``features`` (float32, or float64 with ``dtype="float64"``; [N, n_features];
NaN = missing) and

* regression and ranking: output ``variable`` (float32 [N, 1]): the margin, or ``exp`` of it
  for the log-link objectives (poisson, gamma, tweedie, cox), as ``transform``'s prediction;
* classification: outputs ``label`` (int64 [N], the most probable class) and
  ``probabilities`` (float32 [N, K]; two columns for a binary model).

How the model maps: a split ``x <= t`` is ``BRANCH_LEQ`` on the largest float32 not above
``t`` (the same partition of float32 values), the default direction is
``nodes_missing_value_tracks_true``, leaf values are targets / class weights, base scores
are ``base_values``; binary models use ``post_transform`` LOGISTIC, multiclass SOFTMAX.
With float32 input the operators hold thresholds and leaf values in float32 and sum in
float32: ONNX Runtime agrees with sparkxml to float32 rounding (on the LightGBM rank sample,
100 trees, scores near zero: 1.3e-4 relative, 1.5e-6 absolute). With ``dtype="float64"`` the
graph reads float64 input and holds the exact float64 thresholds, leaf values and base
scores (the ``*_as_tensor`` attributes of ``ai.onnx.ml`` opset 3): ONNX Runtime then compares
and sums in float64 and only rounds the result to the operators' float32 output, so
regression and ranking scores agree with sparkxml to one float32 rounding (relative 6e-8);
the classifiers' LOGISTIC / SOFTMAX post-transforms run in float32 on that output (up to
4e-7 relative seen on probabilities). The operators cannot hold category sets: models with
categorical splits are refused.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._ensemble import base_objective, check_missing, check_round_layout, tree_slice

FORMAT = "onnx"
ML_DOMAIN = "ai.onnx.ml"
_LOG_LINK = ("poisson", "gamma", "tweedie", "cox")
_REGRESSION = ("squared_error", "absolute_error", "quantile", "huber", "lambdarank",
               "pairwise", "map") + _LOG_LINK


def floor32(threshold: float) -> float:
    """The largest float32 not above ``threshold`` (+inf stays +inf): for float32 ``x``,
    ``x <= floor32(t)`` exactly when ``x <= t``."""
    if math.isinf(threshold):
        return threshold
    t = np.float32(threshold)
    if float(t) > threshold:
        t = np.nextafter(t, np.float32(-np.inf))
    return float(t)


def _tree_attributes(pred, exact=False):
    """The node and leaf attribute lists shared by both operators (``exact``: thresholds as
    they are, for float64 input; else :func:`floor32` of them)."""
    nodes = {k: [] for k in ("treeids", "nodeids", "featureids", "values", "modes",
                             "truenodeids", "falsenodeids", "missing_value_tracks_true")}
    leaves = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    for t in range(pred.n_trees):
        a, b = tree_slice(pred, t)
        out = int(pred.tree_outputs[t])
        for node in range(b - a):
            j = a + node
            nodes["treeids"].append(t)
            nodes["nodeids"].append(node)
            if pred.left[j] < 0:
                for k, v in (("featureids", 0), ("values", 0.0), ("modes", "LEAF"),
                             ("truenodeids", 0), ("falsenodeids", 0),
                             ("missing_value_tracks_true", 0)):
                    nodes[k].append(v)
                for k, v in (("treeids", t), ("nodeids", node), ("ids", out),
                             ("weights", float(pred.value[j]))):
                    leaves[k].append(v)
                continue
            nodes["featureids"].append(int(pred.feature[j]))
            thr = float(pred.threshold[j])
            nodes["values"].append(thr if exact else floor32(thr))
            nodes["modes"].append("BRANCH_LEQ")
            nodes["truenodeids"].append(int(pred.left[j]))
            nodes["falsenodeids"].append(int(pred.right[j]))
            nodes["missing_value_tracks_true"].append(int(pred.default_left[j]))
    return nodes, leaves


def to_onnx(pred, opset: int = 17, ml_opset: int = 3, dtype: str = "float32"):
    """The ``onnx.ModelProto`` of ``pred`` (see the module docstring).

    Parameters
    ----------
    pred : TreeEnsemblePredictor
    opset, ml_opset : int
        The default-domain and ``ai.onnx.ml`` opset versions the model declares (``ml_opset``
        >= 3 with ``dtype="float64"``).
    dtype : {"float32", "float64"}
        The input's type: float64 keeps the model's float64 thresholds, leaf values and
        base scores, so ONNX Runtime compares and sums in float64.

    Examples
    --------
    >>> import numpy as np
    >>> from sparkxml_kernels.gbt.grower import Tree
    >>> from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
    >>> stump = Tree(np.array([0, -1, -1], np.int32), np.array([0, -1, -1], np.int32),
    ...              np.array([0.1, np.nan, np.nan]), np.zeros(3, np.uint8),
    ...              np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32),
    ...              np.array([0.0, 1e-3 / 3, 2.0]), np.zeros(3), np.ones(3))
    >>> pred = TreeEnsemblePredictor.from_trees([stump], 1, np.array([0.5]), "squared_error", 1)
    >>> model = to_onnx(pred, dtype="float64")
    >>> model.graph.input[0].type.tensor_type.elem_type == 11   # TensorProto.DOUBLE
    True
    """
    try:
        from onnx import TensorProto, helper
    except ImportError:
        raise ImportError("format 'onnx' needs the onnx package: pip install "
                          "'sparkxml[onnx]'") from None
    obj = base_objective(pred)
    if obj not in _REGRESSION + ("logistic", "softmax"):
        raise ValueError(f"format 'onnx' cannot hold objective {pred.objective!r}")
    if pred.has_categorical:
        raise ValueError("format 'onnx' cannot hold categorical splits (the TreeEnsemble "
                         "operators have no category sets); export this model as "
                         "'xgboost-json' or 'lightgbm-text'")
    check_round_layout(pred, FORMAT)
    check_missing(pred, pred.missing, FORMAT, ())
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    exact = dtype == "float64"
    if exact and ml_opset < 3:
        raise ValueError(f"dtype='float64' needs ai.onnx.ml opset >= 3, got ml_opset={ml_opset}")
    d, k = pred.n_features, pred.n_outputs
    nodes, leaves = _tree_attributes(pred, exact)
    attrs: dict[str, Any] = {f"nodes_{key}": v for key, v in nodes.items()}
    x = helper.make_tensor_value_info("features", TensorProto.DOUBLE if exact
                                      else TensorProto.FLOAT, [None, d])
    base = [float(b) for b in pred.base_score]
    leaf_key = "target" if obj in _REGRESSION else "class"
    attrs.update({f"{leaf_key}_{key}": v for key, v in leaves.items()})
    values: dict[str, Any] = {"base_values": base}
    if exact:  # float64 tensors instead of the float32 list attributes
        values = {"base_values_as_tensor": _doubles(base, "base_values")}
        for key in ("nodes_values", f"{leaf_key}_weights"):
            attrs[f"{key}_as_tensor"] = _doubles(attrs.pop(key), key)
    if obj in _REGRESSION:
        raw_name = "margin" if obj in _LOG_LINK else "variable"
        op = [helper.make_node("TreeEnsembleRegressor", ["features"], [raw_name],
                               domain=ML_DOMAIN, n_targets=1, aggregate_function="SUM",
                               post_transform="NONE", **values, **attrs)]
        if obj in _LOG_LINK:
            op.append(helper.make_node("Exp", ["margin"], ["variable"]))
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
    else:
        n_classes = 2 if k == 1 else k
        op = [helper.make_node("TreeEnsembleClassifier", ["features"],
                               ["label", "probabilities"], domain=ML_DOMAIN,
                               classlabels_int64s=list(range(n_classes)),
                               post_transform="LOGISTIC" if k == 1 else "SOFTMAX", **values,
                               **attrs)]
        outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                                 [None, n_classes])]
    graph = helper.make_graph(op, "sparkxml_gbt", [x], outputs)
    model = helper.make_model(graph, producer_name="sparkxml", opset_imports=[
        helper.make_opsetid("", opset), helper.make_opsetid(ML_DOMAIN, ml_opset)])
    model.ir_version = 8  # readable by ONNX Runtime releases of the last years
    return model


def _doubles(values, name):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(values, np.float64), name)


def dumps(pred, **kw) -> bytes:
    """:func:`to_onnx` serialized (the bytes of a ``.onnx`` file)."""
    return to_onnx(pred, **kw).SerializeToString()
