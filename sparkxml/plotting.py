"""Plots of trained tree models: feature importance, learning curve, one tree.

Needs matplotlib (``pip install "sparkxml[plot]"``); imports neither pyspark nor Spark, so it
also plots what ``sparkxml_kernels.load_model(path)`` returns. Every function draws into
``ax`` (a new figure when None) and returns that ``matplotlib.axes.Axes``.

Tree arrays
-----------
``plot_tree`` reads one tree from a small array interface that any tree model can offer
(GBT, LambdaMART, forests): a mapping, or an object with ``to_arrays()`` or ``predictor``,
holding

=============  ==============  ==========================================================
key            dtype, shape    meaning
=============  ==============  ==========================================================
feature        int (N,)        split feature of each node, -1 on leaves
threshold      float (N,)      a row goes left when ``x[feature] <= threshold``
left, right    int (N,)        children as tree-local node ids (root = 0); -1 on leaves
value          float (N,)      the node's output (shown on leaves)
default_left   int (N,)        optional: 1 when a missing value goes left
cover          float (N,)      optional: weight (hessian sum / rows) in the node
tree_offsets   int (T + 1,)    optional: nodes of tree t are [offsets[t], offsets[t+1]);
                               without it the arrays hold exactly one tree
=============  ==============  ==========================================================
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

__all__ = ["plot_importance", "plot_learning_curve", "plot_tree", "tree_arrays"]

_TREE_KEYS = ("feature", "threshold", "left", "right", "value")


def _axes(ax, figsize):
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - the test extra installs matplotlib
        raise ImportError("sparkxml.plotting needs matplotlib: pip install 'sparkxml[plot]'") \
            from e
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _feature_names(model, n: int, feature_names: Optional[Sequence[str]]) -> list:
    names = feature_names
    if names is None:
        names = getattr(model, "featureNames", None)
    if names is None and hasattr(model, "isSet") and hasattr(model, "featuresCols"):
        if model.isSet(model.featuresCols):
            names = model.getOrDefault(model.featuresCols)
    if names is None:
        return [f"f{i}" for i in range(n)]
    names = [str(x) for x in names]
    if len(names) != n:
        raise ValueError(f"feature_names has {len(names)} names but the model has {n} features")
    return names


def _importances(model, importance_type: str) -> np.ndarray:
    pred = getattr(model, "predictor", model)
    if hasattr(pred, "feature_importances"):
        return np.asarray(pred.feature_importances(importance_type, normalize=False), float)
    if importance_type != "gain":
        raise ValueError(f"importance_type {importance_type!r} needs a tree model; "
                         "featureImportances gives only one kind")
    if hasattr(model, "featureImportances"):
        return np.asarray(model.featureImportances.toArray(), float)
    return np.asarray(model, float)


def plot_importance(model, importance_type: str = "gain", max_num_features: Optional[int] = 20,
                    feature_names: Optional[Sequence[str]] = None, ax=None,
                    title: Optional[str] = "Feature importance", figsize=(6, 4)):
    """Horizontal bar chart of the most important features, largest on top.

    Parameters
    ----------
    model : fitted GBT/LambdaMART model, a ``TreeEnsemblePredictor``, anything with
        ``featureImportances`` (a Spark ML Vector), or a 1-D array of importances
    importance_type : "gain" (total split gain) or "split" (number of splits)
    max_num_features : int or None
        Show at most this many features (None: all with a non-zero importance).
    feature_names : sequence of str, optional
        Default: the model's ``featureNames``, else its ``featuresCols``, else ``f0, f1...``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    imp = _importances(model, importance_type)
    if imp.ndim != 1 or imp.size == 0:
        raise ValueError(f"importances must be a non-empty 1-D array, got shape {imp.shape}")
    if not np.all(np.isfinite(imp)):
        raise ValueError("importances contain NaN or inf")
    names = _feature_names(model, imp.size, feature_names)
    order = [i for i in np.argsort(-imp, kind="stable") if imp[i] > 0]
    if max_num_features is not None:
        if int(max_num_features) < 1:
            raise ValueError(f"max_num_features must be >= 1, got {max_num_features}")
        order = order[:int(max_num_features)]
    if not order:
        raise ValueError("every feature has zero importance (a model of single-leaf trees?)")
    ax = _axes(ax, figsize)
    y = np.arange(len(order))[::-1]
    ax.barh(y, imp[order], color="#4C72B0")
    ax.set_yticks(y)
    ax.set_yticklabels([names[i] for i in order])
    ax.set_xlabel({"gain": "total gain", "split": "number of splits"}.get(importance_type,
                                                                          importance_type))
    if title:
        ax.set_title(title)
    return ax


def _histories(summary) -> dict:
    out = {}
    for name in sorted(dir(summary)):
        values = getattr(summary, name, None) if name.endswith("History") else None
        if isinstance(values, (list, tuple, np.ndarray)) and len(values) > 0:
            out[name[:-len("History")]] = np.asarray(values, float)
    return out


def plot_learning_curve(model, ax=None, title: Optional[str] = "Learning curve",
                        figsize=(6, 4)):
    """The evaluation metric after each boosting round, one line per history.

    Parameters
    ----------
    model : fitted GBT/LambdaMART model (uses ``model.summary``) or a ``GBTTrainingSummary``
        Every non-empty ``*History`` list of the summary is drawn (``validationHistory``, and
        ``trainingHistory`` where the summary keeps it); ``bestIteration`` is marked.
        Rounds are counted from 1 on the x axis (round 1 = the first tree), so history entry
        ``i`` is drawn at round ``i + 1`` and the 0-based ``bestIteration`` at round
        ``bestIteration + 1`` ("best round ...").

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        The summary has no per-round history (fit with ``validationIndicatorCol``).
    """
    summary = model.summary if hasattr(model, "summary") else model
    curves = _histories(summary)
    if not curves:
        raise ValueError("the training summary has no per-round history: fit with "
                         "validationIndicatorCol to record the validation metric")
    ax = _axes(ax, figsize)
    for label, values in curves.items():
        ax.plot(np.arange(1, values.size + 1), values, label=label)
    best = getattr(summary, "bestIteration", None)
    if best is not None and best >= 0:
        ax.axvline(best + 1, color="grey", linestyle="--", linewidth=1,
                   label=f"best round {best + 1}")
    ax.set_xlabel("boosting round")
    ax.set_ylabel(getattr(summary, "metricName", None) or "metric")
    ax.legend()
    if title:
        ax.set_title(title)
    return ax


def tree_arrays(model, tree_index: int = 0) -> dict:
    """One tree's arrays (see the module docstring), node ids local to the tree.

    Parameters
    ----------
    model : mapping of arrays, or an object with ``to_arrays()`` or ``predictor``
    tree_index : int
        Which tree of an ensemble (``tree_offsets``); 0 for a single tree.

    Returns
    -------
    dict with ``feature`` int64, ``threshold`` float64, ``left``/``right`` int64, ``value``
    float64, ``default_left`` int64 or None, ``cover`` float64 or None, all (n_nodes,).
    """
    src: Any = model
    if hasattr(src, "predictor"):
        src = src.predictor
    if hasattr(src, "to_arrays"):
        src = src.to_arrays()
    if not isinstance(src, Mapping):
        raise TypeError(f"expected tree arrays (a mapping), a model or a predictor, got "
                        f"{type(model).__name__}")
    missing = [k for k in _TREE_KEYS if k not in src]
    if missing:
        raise ValueError(f"tree arrays lack {missing} (need {list(_TREE_KEYS)})")
    n = np.asarray(src["feature"]).shape[0]
    offsets = np.asarray(src.get("tree_offsets", [0, n]), np.int64)
    n_trees = offsets.size - 1
    if not 0 <= int(tree_index) < n_trees:
        raise ValueError(f"tree_index must be in [0, {n_trees}), got {tree_index}")
    a, b = int(offsets[tree_index]), int(offsets[tree_index + 1])

    def part(key, dtype):
        if src.get(key) is None:
            return None
        arr = np.asarray(src[key])
        if arr.shape[0] != n:
            raise ValueError(f"tree array '{key}' has {arr.shape[0]} entries, 'feature' {n}")
        return arr[a:b].astype(dtype)

    out = {k: part(k, np.int64 if k in ("feature", "left", "right") else np.float64)
           for k in _TREE_KEYS}
    out["default_left"] = part("default_left", np.int64)
    out["cover"] = part("cover", np.float64)
    m = b - a
    kids = np.concatenate([out["left"], out["right"]])
    if m == 0 or kids.max(initial=-1) >= m or ((out["left"] < 0) != (out["right"] < 0)).any():
        raise ValueError(f"tree {tree_index} is malformed: children must be tree-local ids "
                         f"< {m}, and -1 together on leaves")
    return out


def _tree_feature_names(model, feat, feature_names):
    src = getattr(model, "predictor", model)
    n = src.get("n_features") if isinstance(src, Mapping) else getattr(src, "n_features", None)
    if n is not None:
        return _feature_names(model, int(n), feature_names)
    used = int(feat.max(initial=-1)) + 1  # bare tree arrays: names must cover the used ids
    if feature_names is None:
        return [f"f{i}" for i in range(used)]
    if len(feature_names) < used:
        raise ValueError(f"feature_names has {len(feature_names)} names but the tree splits "
                         f"on feature {used - 1}")
    return [str(x) for x in feature_names]


def _layout(left, right, max_depth):
    # Leaves (and cut-off nodes) get consecutive x in depth-first order; a parent sits over
    # the middle of its children. Iterative, so deep trees do not hit the recursion limit.
    pos, depth = {}, {0: 0}
    stack, order, nxt = [0], [], 0
    while stack:
        j = stack.pop()
        order.append(j)
        if left[j] >= 0 and depth[j] < max_depth:
            for c in (right[j], left[j]):
                depth[c] = depth[j] + 1
                stack.append(c)
    for j in order:
        if left[j] < 0 or depth[j] >= max_depth:
            pos[j] = float(nxt)
            nxt += 1
    for j in reversed(order):
        if j not in pos:
            pos[j] = (pos[left[j]] + pos[right[j]]) / 2.0
    return order, pos, depth, nxt


def plot_tree(model, tree_index: int = 0, feature_names: Optional[Sequence[str]] = None,
              max_depth: Optional[int] = None, precision: int = 3, ax=None,
              title: Optional[str] = None, figsize=None):
    """Draw one tree: splits as ``feature <= threshold`` boxes, leaves with their value.

    The left edge is "yes" (``x <= threshold``); "missing" marks the side missing values
    take where the arrays say (``default_left``).

    Parameters
    ----------
    model : fitted GBT/LambdaMART model, a predictor, or tree arrays (module docstring)
    tree_index : int
        Tree of the ensemble (for a multi-class GBT, round r class c is ``r*numClasses+c``).
    feature_names : sequence of str, optional
        Default as in ``plot_importance``.
    max_depth : int, optional
        Draw nodes down to this depth; deeper subtrees show as "...".
    precision : int
        Significant digits of thresholds and values.

    Returns
    -------
    matplotlib.axes.Axes
    """
    t = tree_arrays(model, tree_index)
    feat, thr, left, right, val = (t[k] for k in _TREE_KEYS)
    limit = np.inf if max_depth is None else int(max_depth)
    if limit < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    names = _tree_feature_names(model, feat, feature_names)
    order, pos, depth, n_leaves = _layout(left, right, limit)
    max_d = max(depth[j] for j in order)
    ax = _axes(ax, figsize or (max(4.0, 1.6 * n_leaves), max(3.0, 1.3 * (max_d + 1))))
    g = f"{{:.{int(precision)}g}}"
    box = dict(boxstyle="round,pad=0.3", linewidth=0.8)
    for j in order:
        x, y = pos[j], -depth[j]
        if left[j] < 0:
            text = f"leaf {g.format(val[j])}"
            if t["cover"] is not None:
                text += f"\ncover {g.format(t['cover'][j])}"
            ax.text(x, y, text, ha="center", va="center", fontsize=8,
                    bbox=dict(box, facecolor="#DDEEDD", edgecolor="#558855"))
            continue
        if depth[j] >= limit:
            ax.text(x, y, "...", ha="center", va="center", fontsize=9)
            continue
        ax.text(x, y, f"{names[feat[j]]} <= {g.format(thr[j])}", ha="center", va="center",
                fontsize=8, bbox=dict(box, facecolor="#DDE4F0", edgecolor="#4C72B0"))
        miss_left = None if t["default_left"] is None else bool(t["default_left"][j])
        for child, side in ((left[j], True), (right[j], False)):
            cx, cy = pos[child], -depth[child]
            ax.plot([x, cx], [y, cy], color="#777777", linewidth=0.8, zorder=0)
            label = "yes" if side else "no"
            if miss_left is not None and miss_left == side:
                label += ", missing"
            ax.text((x + cx) / 2, (y + cy) / 2, label, ha="center", va="center", fontsize=7,
                    color="#444444", bbox=dict(boxstyle="square,pad=0.1", facecolor="white",
                                               edgecolor="none"))
    ax.set_xlim(-0.7, n_leaves - 0.3)
    ax.set_ylim(-max_d - 0.6, 0.6)
    ax.axis("off")
    ax.set_title(title if title is not None else f"tree {tree_index}")
    return ax
