"""Text and JSON dumps of a tree ensemble (``TreeEnsemblePredictor``).

Text (:func:`dump_text`) follows Spark MLlib's ``toDebugString`` layout, one block per tree::

    GBTClassificationModel: uid=..., numTrees=2, numClasses=2, numFeatures=3
      Tree 0 (weight 1.0):
        If (feature 0 (age) <= 41.5 or missing)
         Predict: -0.0271
        Else (feature 0 (age) > 41.5)
         Predict: 0.0313

A split sends ``x <= threshold`` left; "or missing" marks the side missing values go to; a
threshold of +inf is the split "present vs missing". Multiclass trees name their class.

JSON (:func:`dump_json`): ``{"objective", "n_outputs", "base_score", "n_features",
"feature_names", "missing", "trees": [{"tree", "output", "root"}]}`` where every node is
``{"nodeid", "depth", "cover"}`` plus, for a split, ``"split"`` (feature name), ``"feature"``
(index), ``"threshold"`` (the string "inf" for "present vs missing"),
``"decision_type": "<="``, ``"yes"``/``"no"`` (child ids: yes is ``x <= threshold``),
``"missing"`` (the child missing values go to), ``"gain"`` and ``"children"``; for a
leaf ``"leaf"`` (its value, learning rate applied). Node ids are tree-local, as
``TreeEnsemblePredictor.tree(t)``.
"""
from __future__ import annotations

import json
import math

import numpy as np


def feature_label(f: int, names) -> str:
    """``feature f`` or ``feature f (name)``."""
    return f"feature {f}" if names is None else f"feature {f} ({names[f]})"


def _num(x: float) -> str:
    return repr(float(x))


def _tree_lines(tree: dict, names, indent: int) -> list:
    lines = []

    def walk(node, depth):
        pad = " " * (indent + depth)
        if tree["left"][node] < 0:
            lines.append(f"{pad}Predict: {_num(tree['value'][node])}")
            return
        f = int(tree["feature"][node])
        label = feature_label(f, names)
        thr = float(tree["threshold"][node])
        miss_left = bool(tree["default_left"][node])
        if math.isinf(thr) and thr > 0:
            yes, no = f"{label} not missing", f"{label} missing"
        else:
            yes = f"{label} <= {_num(thr)}" + (" or missing" if miss_left else "")
            no = f"{label} > {_num(thr)}" + ("" if miss_left else " or missing")
        lines.append(f"{pad}If ({yes})")
        walk(int(tree["left"][node]), depth + 1)
        lines.append(f"{pad}Else ({no})")
        walk(int(tree["right"][node]), depth + 1)

    walk(0, 0)
    return lines


def dump_text(pred, header: str | None = None, feature_names=None) -> str:
    """MLlib-style text of every tree (see the module docstring).

    ``header``: first line (default: numbers of trees, outputs and features);
    ``feature_names``: overrides ``pred.feature_names``.
    """
    pred.refuse_categorical("text dumps")
    names = feature_names if feature_names is not None else pred.feature_names
    if header is None:
        header = (f"TreeEnsemble: numTrees={pred.n_trees}, numOutputs={pred.n_outputs}, "
                  f"numFeatures={pred.n_features}")
    lines = [header]
    for t in range(pred.n_trees):
        tree = pred.tree(t)
        cls = f"class {tree['output']}, " if pred.n_outputs > 1 else ""
        lines.append(f"  Tree {t} ({cls}weight 1.0):")
        lines += _tree_lines(tree, names, 4)
    return "\n".join(lines) + "\n"


def _tree_json(tree: dict, names) -> dict:
    def node(i, depth):
        out = {"nodeid": i, "depth": depth, "cover": float(tree["cover"][i])}
        if tree["left"][i] < 0:
            out["leaf"] = float(tree["value"][i])
            return out
        f = int(tree["feature"][i])
        lc, rc = int(tree["left"][i]), int(tree["right"][i])
        thr = float(tree["threshold"][i])
        out.update(split=f"f{f}" if names is None else names[f], feature=f,
                   threshold="inf" if math.isinf(thr) else thr, decision_type="<=", yes=lc,
                   no=rc,
                   missing=lc if tree["default_left"][i] else rc,
                   gain=float(tree["gain"][i]),
                   children=[node(lc, depth + 1), node(rc, depth + 1)])
        return out

    return node(0, 0)


def dump_json(pred, feature_names=None, indent=None) -> str:
    """The ensemble as one JSON document (see the module docstring)."""
    pred.refuse_categorical("JSON dumps")
    names = feature_names if feature_names is not None else pred.feature_names
    doc = {"objective": pred.objective, "n_outputs": pred.n_outputs,
           "base_score": [float(b) for b in pred.base_score], "n_features": pred.n_features,
           "feature_names": None if names is None else list(names),
           "missing": None if np.isnan(pred.missing) else float(pred.missing),
           "trees": []}
    for t in range(pred.n_trees):
        tree = pred.tree(t)
        doc["trees"].append({"tree": t, "output": tree["output"],
                             "root": _tree_json(tree, names)})
    return json.dumps(doc, indent=indent)
