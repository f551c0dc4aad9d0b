"""A GBT ensemble (``TreeEnsemblePredictor``) as a LightGBM text model (what
``lightgbm.Booster.save_model`` writes, ``version=v4``), which
``lightgbm.Booster(model_file=path)`` loads and predicts with.

How the model maps:

* Trees: LightGBM numbers a tree's splits 0..L-2 and its leaves 0..L-1 (a child ``c < 0`` is
  leaf ``~c``); both are numbered here in depth-first order, left child first.
* Numerical splits: ``x <= threshold`` goes left in both; thresholds and leaf values are
  written with 17 significant digits (exact doubles). ``decision_type`` holds the default
  direction and the missing type: NaN, or Zero when the model's ``missing`` is 0.0 (then 0.0
  and NaN are both missing, as in sparkxml). A +inf threshold ("present vs missing") is
  written as the largest double.
* Category-set splits: LightGBM's ``cat_boundaries`` / ``cat_threshold`` bitsets are
  sparkxml's own layout (the set goes left; NaN, negative and unknown categories go right).
  LightGBM truncates fractional values to a category, sparkxml sends them right.
* Base score: LightGBM has none (its ``boost_from_average`` is in the first trees), so each
  output's base score is added to the leaves of its first tree. LightGBM adds trees in the
  same order in float64: its raw scores are sparkxml's.
* Objectives: ``regression``, ``regression_l1``, ``quantile``, ``huber``, ``binary
  sigmoid:1``, ``multiclass``, ``lambdarank`` (for lambdarank and pairwise models),
  ``poisson``, ``gamma``, ``tweedie`` (the objective decides what ``predict`` returns:
  probabilities, ``exp`` of the margin, or the margin).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ._ensemble import (
    LIGHTGBM_OBJECTIVES,
    check_missing,
    check_round_layout,
    is_categorical,
    objective_for,
    tree_slice,
)

FORMAT = "lightgbm-text"
_DEFAULT_LEFT = 2  # decision_type bits: 1 categorical, 2 default left, (2..3) missing type
_MISSING_ZERO = 1 << 2
_MISSING_NAN = 2 << 2
_DBL_MAX = np.finfo(np.float64).max


def _num(x: float) -> str:
    """A double as LightGBM writes it: 17 significant digits (parses back exactly)."""
    return f"{float(x):.17g}"


def _join(values, fmt=str) -> str:
    return " ".join(fmt(v) for v in values)


def _tree_text(pred, t: int, add: float, missing_type: int) -> str:
    a, b = tree_slice(pred, t)
    left, right = pred.left[a:b], pred.right[a:b]
    if left[0] < 0:  # a single leaf
        return (f"num_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\n"
                f"decision_type=\nleft_child=\nright_child=\n"
                f"leaf_value={_num(pred.value[a] + add)}\nleaf_weight={_num(pred.cover[a])}\n"
                f"leaf_count=0\ninternal_value=\ninternal_weight=\ninternal_count=\n"
                f"is_linear=0\nshrinkage=1\n")
    splits: list[int] = []  # sparkxml local ids in LightGBM's numbering
    leaves: list[int] = []
    code: dict[int, int] = {}  # sparkxml local id -> LightGBM child code (split index, or ~leaf)
    stack = [0]
    while stack:  # depth first, left child first
        node = stack.pop()
        if left[node] < 0:
            code[node] = ~len(leaves)
            leaves.append(node)
        else:
            code[node] = len(splits)
            splits.append(node)
            stack += [int(right[node]), int(left[node])]
    if len(splits) + len(leaves) != b - a:
        raise ValueError(f"tree {t} has nodes unreachable from its root")
    feat, gain, thr, dtype, lc, rc = [], [], [], [], [], []
    cat_bounds, cat_words = [0], []
    for node in splits:
        j = a + node
        feat.append(int(pred.feature[j]))
        gain.append(float(pred.gain[j]))
        lc.append(code[int(left[node])])
        rc.append(code[int(right[node])])
        if is_categorical(pred, j):
            thr.append(str(len(cat_bounds) - 1))  # the set's index among the tree's sets
            words = pred.cat_words[int(pred.cat_ptr[j]):int(pred.cat_ptr[j + 1])]
            cat_words += [int(w) for w in words]
            cat_bounds.append(len(cat_words))
            dtype.append(1 | _MISSING_NAN)
        else:
            th = float(pred.threshold[j])
            thr.append(_num(_DBL_MAX if math.isinf(th) and th > 0 else th))
            dtype.append((_DEFAULT_LEFT if pred.default_left[j] else 0) | missing_type)
    lines = [f"num_leaves={len(leaves)}", f"num_cat={len(cat_bounds) - 1}",
             f"split_feature={_join(feat)}", f"split_gain={_join(gain, _num)}",
             f"threshold={' '.join(thr)}", f"decision_type={_join(dtype)}",
             f"left_child={_join(lc)}", f"right_child={_join(rc)}",
             f"leaf_value={_join((pred.value[a + n] + add for n in leaves), _num)}",
             f"leaf_weight={_join((pred.cover[a + n] for n in leaves), _num)}",
             f"leaf_count={_join([0] * len(leaves))}",
             f"internal_value={_join((pred.value[a + n] for n in splits), _num)}",
             f"internal_weight={_join((pred.cover[a + n] for n in splits), _num)}",
             f"internal_count={_join([0] * len(splits))}"]
    if len(cat_bounds) > 1:
        lines += [f"cat_boundaries={_join(cat_bounds)}", f"cat_threshold={_join(cat_words)}"]
    lines += ["is_linear=0", "shrinkage=1"]
    return "\n".join(lines) + "\n"


def _feature_names(names, d: int) -> list:
    """LightGBM's names: space-separated in the file, so no whitespace; ``Column_i`` when
    unknown (as LightGBM names unnamed columns)."""
    if names is None:
        return [f"Column_{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"feature_names has {len(names)} names for {d} features")
    return [re.sub(r"\s+", "_", str(n)) or f"Column_{i}" for i, n in enumerate(names)]


def to_lightgbm_text(pred, feature_names=None, missing=None) -> str:
    """The LightGBM text model of ``pred`` (see the module docstring).

    Parameters
    ----------
    pred : TreeEnsemblePredictor
    feature_names : list of str, optional
        Default: ``pred.feature_names``, else ``Column_0``, ``Column_1``, ...
    missing : float, optional
        The value meaning missing besides NaN (default ``pred.missing``): NaN or 0.0 only.

    Returns
    -------
    str
        The file's text.
    """
    obj = objective_for(pred, LIGHTGBM_OBJECTIVES, FORMAT)
    check_round_layout(pred, FORMAT)
    miss = pred.missing if missing is None else float(missing)
    check_missing(pred, miss, FORMAT, (0.0,))
    missing_type = _MISSING_NAN if math.isnan(miss) else _MISSING_ZERO
    k, d = pred.n_outputs, pred.n_features
    names = _feature_names(feature_names if feature_names is not None
                           else pred.feature_names, d)
    trees = []
    n_trees = pred.n_trees
    for t in range(n_trees):
        add = float(pred.base_score[t]) if t < k else 0.0
        trees.append(_tree_text(pred, t, add, missing_type))
    if n_trees == 0:  # no rounds: one round of constant trees holds the base scores
        trees = [f"num_leaves=1\nnum_cat=0\nleaf_value={_num(b)}\nis_linear=0\nshrinkage=1\n"
                 for b in pred.base_score]
    blocks = [f"Tree={i}\n{s}\n" for i, s in enumerate(trees)]
    head = ["tree", "version=v4", f"num_class={k}", f"num_tree_per_iteration={k}",
            "label_index=0", f"max_feature_idx={d - 1}",
            "objective=" + obj.format(k=k), f"feature_names={' '.join(names)}",
            "feature_infos=" + " ".join(["none"] * d),
            "tree_sizes=" + " ".join(str(len(s.encode())) for s in blocks)]
    return ("\n".join(head) + "\n\n" + "".join(blocks) + "end of trees\n\n"
            "feature_importances:\n\nparameters:\n[boosting: gbdt]\n"
            f"[objective: {obj.split()[0]}]\n[num_class: {k}]\nend of parameters\n\n"
            "pandas_categorical:null\n")


def dumps(pred, **kw) -> bytes:
    """:func:`to_lightgbm_text` as the bytes of the file."""
    return to_lightgbm_text(pred, **kw).encode()
