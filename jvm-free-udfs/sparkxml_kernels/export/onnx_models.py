"""Trees, forests (``ForestPredictor``) and linear SVMs (``LinearSVCPredictor``) as ONNX
graphs of the ``ai.onnx.ml`` operators (built with the ``onnx`` package), run by ONNX Runtime.

Graph input ``features`` (float32, [N, n_features]) and

* regression trees and forests: ``variable`` (float32 [N, 1]), TreeEnsembleRegressor with
  ``aggregate_function`` AVERAGE over the trees' leaf means;
* classification trees and forests: ``label`` (int64 [N]) and ``probabilities`` (float32
  [N, K]), TreeEnsembleClassifier summing every tree's leaf class fractions divided by the
  number of trees (scikit-learn's ``predict_proba``);
* LinearSVC: ``label`` (int64 [N]) and ``scores`` (float32 [N, K]), LinearClassifier; a binary
  model is written as two rows ``[-w, w]`` so that ``scores`` is Spark's ``rawPrediction``
  ``[-m, m]`` and the label is class 1 exactly when ``m > 0``. With a ``threshold`` t other
  than 0 the intercepts are shifted by t (the label is then ``m > t`` and the scores are
  ``m - t``).

The trees compare float32 features, as the predictor does (``float32(x) <= t``), against the
largest float32 not above ``t``: the same branch for every input. The operators hold leaf
values and coefficients in float32: outputs agree with sparkxml to float32 rounding.
"""
from __future__ import annotations

import numpy as np

from .onnx_trees import ML_DOMAIN, floor32


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("format 'onnx' needs the onnx package: pip install "
                          "'sparkxml[onnx]'") from None
    return onnx


def _model(onnx, nodes, d: int, outputs, name: str, opset: int, ml_opset: int):
    h = onnx.helper
    x = h.make_tensor_value_info("features", onnx.TensorProto.FLOAT, [None, d])
    graph = h.make_graph(nodes, name, [x], outputs)
    model = h.make_model(graph, producer_name="sparkxml", opset_imports=[
        h.make_opsetid("", opset), h.make_opsetid(ML_DOMAIN, ml_opset)])
    model.ir_version = 8
    return model


def forest_to_onnx(pred, opset: int = 17, ml_opset: int = 3):
    """The ``onnx.ModelProto`` of a ``ForestPredictor`` (see the module docstring); trees
    with categorical splits are refused (the operators have no category sets)."""
    if getattr(pred, "categorical", False):
        raise ValueError("format 'onnx' cannot hold categorical splits (the TreeEnsemble "
                         "operators compare a feature with one threshold, they have no "
                         "category sets); this tree model was fitted with categorical "
                         "features (categoricalCols or nominal metadata)")
    onnx = _onnx()
    h, T = onnx.helper, onnx.TensorProto
    classify = int(pred.n_classes) > 0
    K = int(pred.n_classes) if classify else 1
    n_trees = pred.n_trees
    nodes: dict = {k: [] for k in ("treeids", "nodeids", "featureids", "values", "modes",
                                   "truenodeids", "falsenodeids")}
    leaves: dict = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    for t in range(n_trees):
        a, b = int(pred.tree_offsets[t]), int(pred.tree_offsets[t + 1])
        for node in range(b - a):
            j = a + node
            leaf = pred.children_left[j] < 0
            nodes["treeids"].append(t)
            nodes["nodeids"].append(node)
            nodes["featureids"].append(0 if leaf else int(pred.feature[j]))
            nodes["values"].append(0.0 if leaf else floor32(float(pred.threshold[j])))
            nodes["modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            nodes["truenodeids"].append(0 if leaf else int(pred.children_left[j]))
            nodes["falsenodeids"].append(0 if leaf else int(pred.children_right[j]))
            if not leaf:
                continue
            for k in range(K):
                leaves["treeids"].append(t)
                leaves["nodeids"].append(node)
                leaves["ids"].append(k)
                v = float(pred.value[j, k])
                leaves["weights"].append(v / n_trees if classify else v)
    attrs = {f"nodes_{k}": v for k, v in nodes.items()}
    if classify:
        attrs.update({f"class_{k}": v for k, v in leaves.items()})
        # the label is the argmax of the probabilities, the first on ties (as the predictor);
        # ONNX Runtime's own label of a two-class ensemble without post_transform thresholds
        # class 1's score at 0 instead
        op = [h.make_node("TreeEnsembleClassifier", ["features"], ["ensemble_label",
                                                                   "probabilities"],
                          domain=ML_DOMAIN, classlabels_int64s=list(range(K)),
                          post_transform="NONE", **attrs),
              h.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0)]
        outputs = [h.make_tensor_value_info("label", T.INT64, [None]),
                   h.make_tensor_value_info("probabilities", T.FLOAT, [None, K])]
    else:
        attrs.update({f"target_{k}": v for k, v in leaves.items()})
        op = [h.make_node("TreeEnsembleRegressor", ["features"], ["variable"],
                          domain=ML_DOMAIN, n_targets=1, aggregate_function="AVERAGE",
                          post_transform="NONE", **attrs)]
        outputs = [h.make_tensor_value_info("variable", T.FLOAT, [None, 1])]
    return _model(onnx, op, int(pred.n_features), outputs, "sparkxml_forest", opset,
                  ml_opset)


def linear_svc_to_onnx(pred, opset: int = 17, ml_opset: int = 1):
    """The ``onnx.ModelProto`` of a ``LinearSVCPredictor`` (see the module docstring)."""
    onnx = _onnx()
    h, T = onnx.helper, onnx.TensorProto
    W, b = pred.W, pred.b
    if pred.num_classes == 2:
        W = np.vstack([-W[0], W[0]])
        m0 = float(b[0]) - pred.threshold
        b = np.array([-m0, m0])
    K = W.shape[0]
    op = h.make_node("LinearClassifier", ["features"], ["label", "scores"], domain=ML_DOMAIN,
                     coefficients=[float(v) for v in W.ravel()],
                     intercepts=[float(v) for v in b], classlabels_ints=list(range(K)),
                     post_transform="NONE", multi_class=0)
    outputs = [h.make_tensor_value_info("label", T.INT64, [None]),
               h.make_tensor_value_info("scores", T.FLOAT, [None, K])]
    return _model(onnx, [op], int(pred.n_features), outputs, "sparkxml_linear_svc", opset,
                  ml_opset)
