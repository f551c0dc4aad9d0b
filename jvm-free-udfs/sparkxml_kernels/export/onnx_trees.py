"""A GBT ensemble (``TreeEnsemblePredictor``) as an ONNX graph of the ``ai.onnx.ml``
``TreeEnsembleRegressor`` / ``TreeEnsembleClassifier`` operators, which ONNX Runtime runs.
The graph is built with the ``onnx`` package (the optional ``sparkxml[onnx]`` extra).

Graph: one input ``features`` (float32, [N, n_features]; NaN = missing) and

* regression and ranking: output ``variable`` (float32 [N, 1]): the margin, or ``exp`` of it
  for the log-link objectives (poisson, gamma, tweedie, cox), as ``transform``'s prediction;
* classification: outputs ``label`` (int64 [N], the most probable class) and
  ``probabilities`` (float32 [N, K]; two columns for a binary model).

How the model maps: a split ``x <= t`` is ``BRANCH_LEQ`` on the largest float32 not above
``t`` (the same partition of float32 values), the default direction is
``nodes_missing_value_tracks_true``, leaf values are targets / class weights, base scores
are ``base_values``; binary models use ``post_transform`` LOGISTIC, multiclass SOFTMAX.
The operators hold thresholds and leaf values in float32 and compute in float32: ONNX
Runtime agrees with sparkxml to float32 rounding. They cannot hold category sets: models
with categorical splits are refused.
"""
from __future__ import annotations

import math

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


def _tree_attributes(pred):
    """The node and leaf attribute lists shared by both operators."""
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
            nodes["values"].append(floor32(float(pred.threshold[j])))
            nodes["modes"].append("BRANCH_LEQ")
            nodes["truenodeids"].append(int(pred.left[j]))
            nodes["falsenodeids"].append(int(pred.right[j]))
            nodes["missing_value_tracks_true"].append(int(pred.default_left[j]))
    return nodes, leaves


def to_onnx(pred, opset: int = 17, ml_opset: int = 3):
    """The ``onnx.ModelProto`` of ``pred`` (see the module docstring).

    Parameters
    ----------
    pred : TreeEnsemblePredictor
    opset, ml_opset : int
        The default-domain and ``ai.onnx.ml`` opset versions the model declares.
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
    d, k = pred.n_features, pred.n_outputs
    nodes, leaves = _tree_attributes(pred)
    attrs = {f"nodes_{key}": v for key, v in nodes.items()}
    x = helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, d])
    base = [float(b) for b in pred.base_score]
    if obj in _REGRESSION:
        attrs.update({f"target_{key}": v for key, v in leaves.items()})
        raw_name = "margin" if obj in _LOG_LINK else "variable"
        op = [helper.make_node("TreeEnsembleRegressor", ["features"], [raw_name],
                               domain=ML_DOMAIN, n_targets=1, base_values=base,
                               aggregate_function="SUM", post_transform="NONE", **attrs)]
        if obj in _LOG_LINK:
            op.append(helper.make_node("Exp", ["margin"], ["variable"]))
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
    else:
        attrs.update({f"class_{key}": v for key, v in leaves.items()})
        n_classes = 2 if k == 1 else k
        op = [helper.make_node("TreeEnsembleClassifier", ["features"],
                               ["label", "probabilities"], domain=ML_DOMAIN,
                               classlabels_int64s=list(range(n_classes)), base_values=base,
                               post_transform="LOGISTIC" if k == 1 else "SOFTMAX", **attrs)]
        outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                                 [None, n_classes])]
    graph = helper.make_graph(op, "sparkxml_gbt", [x], outputs)
    model = helper.make_model(graph, producer_name="sparkxml", opset_imports=[
        helper.make_opsetid("", opset), helper.make_opsetid(ML_DOMAIN, ml_opset)])
    model.ir_version = 8  # readable by ONNX Runtime releases of the last years
    return model


def dumps(pred, **kw) -> bytes:
    """:func:`to_onnx` serialized (the bytes of a ``.onnx`` file)."""
    return to_onnx(pred, **kw).SerializeToString()
