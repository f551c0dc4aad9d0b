"""A GBT ensemble (``TreeEnsemblePredictor``) as an XGBoost JSON model (what
``xgboost.Booster.save_model("m.json")`` writes, schema of XGBoost 3.x), which
``xgboost.Booster(model_file=path)`` loads and predicts with.

How the model maps:

* Trees: node arrays per tree (``left_children``, ``right_children``, ``split_indices``,
  ``split_conditions``, ``default_left``, ``split_type``, ...), renumbered breadth first with
  every split's two children on consecutive ids (XGBoost's predictor takes the right child as
  the left one plus one). Leaves hold their value in ``split_conditions``.
* Numerical splits: XGBoost sends ``x < c`` left on float32 values, sparkxml sends ``x <= t``
  left; ``c`` is the smallest float32 above ``t``, so every float32 value goes the same way.
  ``default_left`` is kept.
* Category-set splits: XGBoost sends the listed categories right (one-hot style), sparkxml
  sends its set left: the set is listed and the children are swapped; missing values go to
  XGBoost's left (sparkxml's right) as in sparkxml. Negative and unknown categories go the
  same way in both; fractional values are truncated by XGBoost (sparkxml sends them right).
* Objective and base score: ``binary:logistic`` (base score stored as a probability),
  ``multi:softprob`` (one base score per class, margins), ``reg:squarederror``,
  ``reg:absoluteerror``, ``rank:ndcg`` / ``rank:pairwise`` / ``rank:map``, and the log-link
  ``count:poisson``, ``reg:gamma``, ``reg:tweedie``, ``survival:cox`` (base score stored as
  ``exp(margin)``).
* Leaf values, thresholds and base scores are float32 in XGBoost, which also sums in
  float32: its predictions agree with sparkxml's to float32 rounding.
* DART models (``tree_weights``): a ``dart`` booster whose trees hold the unweighted leaf
  values (value / weight) and whose ``weight_drop`` lists the weights, as XGBoost saves its
  own DART models; read back, the weights are applied to the leaves again.
* ``missing``: XGBoost reads it from the data (``DMatrix(X, missing=v)``), not the model; a
  sparse matrix's absent entries are missing to XGBoost and 0.0 to sparkxml.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ._ensemble import (
    XGBOOST_OBJECTIVES,
    category_list,
    check_round_layout,
    is_categorical,
    objective_for,
    tree_slice,
)

FORMAT = "xgboost-json"
_ROOT_PARENT = 2147483647  # XGBoost's "no parent"
VERSION = [3, 1, 0]


def _f32(x) -> float:
    """``x`` rounded to float32, as a Python float (its JSON text parses back exactly)."""
    return float(np.float32(x))


def split_condition(threshold: float) -> float:
    """The float32 ``c`` with ``x < c`` exactly when ``x <= threshold`` for float32 ``x``:
    the smallest float32 above ``threshold`` (+inf stays +inf)."""
    if math.isinf(threshold):
        return threshold
    t = np.float32(threshold)
    if float(t) > threshold:  # rounded up: the largest float32 <= threshold is below it
        t = np.nextafter(t, np.float32(-np.inf))
    return float(np.nextafter(t, np.float32(np.inf)))


def _tree_json(pred, t: int, n_features: int) -> dict:
    a, b = tree_slice(pred, t)
    left, right = pred.left[a:b], pred.right[a:b]
    n = b - a
    new = np.full(n, -1, np.int64)  # sparkxml local id -> XGBoost id
    order = [0]  # sparkxml local ids in XGBoost id order
    new[0] = 0
    lc = [-1] * n
    rc = [-1] * n
    parents = [_ROOT_PARENT] * n
    for node in order:  # breadth first; `order` grows while it is walked
        if left[node] < 0:
            continue
        kids = (int(left[node]), int(right[node]))
        if is_categorical(pred, a + node):  # XGBoost's right child is the listed set
            kids = kids[::-1]
        me = int(new[node])
        for k, kid in enumerate(kids):
            new[kid] = len(order)
            order.append(kid)
            parents[new[kid]] = me
        lc[me], rc[me] = int(new[kids[0]]), int(new[kids[1]])
    if len(order) != n:
        raise ValueError(f"tree {t} has nodes unreachable from its root")
    split_idx, cond, dleft, stype, weights, gains, hess = [], [], [], [], [], [], []
    cat_nodes: list[int] = []
    cat_segments: list[int] = []
    cat_sizes: list[int] = []
    cats: list[int] = []
    for me, node in enumerate(order):
        j = a + node
        weights.append(_f32(pred.value[j]))
        gains.append(_f32(pred.gain[j]))
        hess.append(_f32(pred.cover[j]))
        if left[node] < 0:
            split_idx.append(0)
            cond.append(_f32(pred.value[j]))
            dleft.append(0)
            stype.append(0)
            continue
        split_idx.append(int(pred.feature[j]))
        if is_categorical(pred, j):
            members = category_list(pred, j)
            cat_nodes.append(me)
            cat_segments.append(len(cats))
            cat_sizes.append(len(members))
            cats.extend(members)
            cond.append(0.0)
            dleft.append(1)  # missing goes to sparkxml's right child: XGBoost's left here
            stype.append(1)
        else:
            cond.append(split_condition(float(pred.threshold[j])))
            dleft.append(int(pred.default_left[j]))
            stype.append(0)
    return {"base_weights": weights, "categories": cats, "categories_nodes": cat_nodes,
            "categories_segments": cat_segments, "categories_sizes": cat_sizes,
            "default_left": dleft, "id": t, "left_children": lc, "loss_changes": gains,
            "parents": parents, "right_children": rc, "split_conditions": cond,
            "split_indices": split_idx, "split_type": stype, "sum_hessian": hess,
            "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                           "num_nodes": str(n), "size_leaf_vector": "1"}}


def _objective_json(name: str, n_outputs: int) -> dict:
    if name == "multi:softprob":
        return {"name": name, "softmax_multiclass_param": {"num_class": str(n_outputs)}}
    if name.startswith("rank:"):
        return {"name": name, "lambdarank_param": {
            "lambdarank_bias_norm": "1", "lambdarank_normalization": "1",
            "lambdarank_num_pair_per_sample": "4294967295", "lambdarank_pair_method": "topk",
            "lambdarank_score_normalization": "1", "lambdarank_unbiased": "0",
            "ndcg_exp_gain": "1"}}
    if name == "count:poisson":
        return {"name": name, "poisson_regression_param": {"max_delta_step": "0.7"}}
    if name == "reg:tweedie":
        return {"name": name, "tweedie_regression_param": {"tweedie_variance_power": "1.5"}}
    if name in ("reg:squarederror", "binary:logistic", "reg:gamma"):
        return {"name": name, "reg_loss_param": {"scale_pos_weight": "1"}}
    return {"name": name}


def _base_score(margins, link: str) -> list:
    """XGBoost's base scores: in the output space for the binary and log-link objectives
    (it applies the inverse link when loading), margins otherwise."""
    out = []
    for m in margins:
        m = float(m)
        if link == "logit":
            v = 1.0 / (1.0 + math.exp(-m)) if m >= 0 else math.exp(m) / (1.0 + math.exp(m))
        elif link == "log":
            v = math.exp(m)
        else:
            v = m
        out.append(_f32(v))
    return out


def to_xgboost_json(pred, feature_names=None, categorical_features=()) -> dict:
    """The XGBoost JSON document of ``pred`` (see the module docstring).

    Parameters
    ----------
    pred : TreeEnsemblePredictor
    feature_names : list of str, optional
        Written as the model's ``feature_names`` (XGBoost then checks them against named
        input such as a pandas DataFrame, and refuses unnamed numpy input unless
        ``validate_features=False``); default: none.
    categorical_features : sequence of int
        Features written with type "c" (those with category-set splits always are).

    Returns
    -------
    dict
        The document; ``json.dumps`` it to a ``.json`` file.
    """
    name, link = objective_for(pred, XGBOOST_OBJECTIVES, FORMAT)
    check_round_layout(pred, FORMAT)
    d, k = pred.n_features, pred.n_outputs
    if name == "binary:logistic" and k != 1:
        raise ValueError(f"a logistic model has one output, this one has {k}")
    cat = set(int(f) for f in categorical_features)
    if pred.has_categorical:
        cat_nodes = np.flatnonzero(np.diff(pred.cat_ptr) > 0)
        cat.update(int(f) for f in pred.feature[cat_nodes])
    trees = [_tree_json(pred, t, d) for t in range(pred.n_trees)]
    base = _base_score(pred.base_score, link)
    types = ["c" if f in cat else "float" for f in range(d)] if cat else []
    learner = {
        "attributes": {},
        "feature_names": [] if feature_names is None else [str(f) for f in feature_names],
        "feature_types": types,
        "gradient_booster": _booster_json(pred, trees, k),
        "learner_model_param": {
            "base_score": "[" + ",".join(repr(v) for v in base) + "]",
            "boost_from_average": "1", "num_class": str(k if k > 1 else 0),
            "num_feature": str(d), "num_target": "1"},
        "objective": _objective_json(name, k),
    }
    if learner["feature_names"] and len(learner["feature_names"]) != d:
        raise ValueError(f"feature_names has {len(learner['feature_names'])} names for "
                         f"{d} features")
    return {"learner": learner, "version": VERSION}


def _booster_json(pred, trees, k) -> dict:
    booster = {"name": "gbtree", "model": {
        "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(pred.n_trees)},
        "iteration_indptr": list(range(0, pred.n_trees + 1, k)),
        "tree_info": [int(o) for o in pred.tree_outputs],
        "trees": trees}}
    if pred.tree_weights is None:
        return booster
    for tj, w in zip(trees, pred.tree_weights.tolist()):  # DART: XGBoost weights at predict
        leaf = np.asarray(tj["left_children"]) < 0
        tj["base_weights"] = [_f32(v / w) for v in tj["base_weights"]]
        tj["split_conditions"] = [_f32(c / w) if is_leaf else c
                                  for c, is_leaf in zip(tj["split_conditions"], leaf)]
    return {"name": "dart", "gbtree": booster,
            "weight_drop": [_f32(w) for w in pred.tree_weights]}


def dumps(pred, **kw) -> bytes:
    """:func:`to_xgboost_json` as the bytes of a ``.json`` file."""
    return json.dumps(to_xgboost_json(pred, **kw), separators=(",", ":")).encode()


# ---------------------------------------------------------------------------- reading
_FROM_XGBOOST = {"reg:squarederror": "squared_error", "reg:absoluteerror": "absolute_error",
                 "binary:logistic": "logistic", "multi:softprob": "softmax",
                 "multi:softmax": "softmax", "rank:ndcg": "lambdarank",
                 "rank:pairwise": "pairwise", "rank:map": "map",
                 "count:poisson": "poisson", "reg:gamma": "gamma", "reg:tweedie": "tweedie",
                 "survival:cox": "cox"}


def leq_threshold(cond: float) -> float:
    """The float64 ``t`` with ``x <= t`` exactly when XGBoost's ``float32(x) < cond``, for
    every float64 ``x`` (XGBoost rounds its input to float32 to nearest, ties to even)."""
    c = np.float32(cond)
    if not np.isfinite(c):
        return float(c) if c > 0 else -np.inf
    below = np.nextafter(c, np.float32(-np.inf))  # the largest float32 that goes left
    mid = (float(below) + float(c)) / 2.0  # exact in float64
    # a float64 exactly at the midpoint rounds to the even one of the two
    return mid if np.float32(mid) == below else float(np.nextafter(mid, -np.inf))


def _margin(v: float, link: str) -> float:
    if link == "logit":
        if not 0.0 < v < 1.0:
            raise ValueError(f"binary:logistic base_score {v} is not a probability in (0, 1)")
        return math.log(v / (1.0 - v))
    if link == "log":
        if not v > 0.0:
            raise ValueError(f"base_score {v} of a log-link objective is not > 0")
        return math.log(v)
    return v


def _parse_base_score(text) -> list:
    s = str(text).strip()
    vals = json.loads(s) if s.startswith("[") else [float(s)]
    return [float(v) for v in vals]


def _tree_from_json(tree: dict, t: int, n_features: int) -> dict:
    """One XGBoost tree as sparkxml node arrays (renumbered breadth first from the root,
    which also drops the nodes XGBoost marks deleted)."""
    if int(tree.get("tree_param", {}).get("size_leaf_vector", "1")) > 1:
        raise ValueError(f"tree {t} has vector leaves (multi_strategy multi_output_tree); "
                         f"only one-output trees convert")
    lc, rc = tree["left_children"], tree["right_children"]
    feat, cond = tree["split_indices"], tree["split_conditions"]
    dleft = tree["default_left"]
    stype = tree.get("split_type") or [0] * len(lc)
    weights, gains = tree.get("base_weights"), tree.get("loss_changes")
    hess = tree.get("sum_hessian")
    cats = {}
    for node, beg, size in zip(tree.get("categories_nodes", []),
                               tree.get("categories_segments", []),
                               tree.get("categories_sizes", [])):
        cats[int(node)] = [int(c) for c in tree["categories"][int(beg):int(beg) + int(size)]]
    order, new = [0], {0: 0}
    out: dict = {k: [] for k in ("feature", "threshold", "default_left", "left", "right",
                                 "value", "gain", "cover")}
    sets: list[list[int] | None] = []
    for old in order:  # `order` grows while it is walked
        if old >= len(lc):
            raise ValueError(f"tree {t}: child {old} is outside its {len(lc)} nodes")
        is_leaf = lc[old] == -1
        out["gain"].append(float(gains[old]) if gains else 0.0)
        out["cover"].append(float(hess[old]) if hess else 0.0)
        if is_leaf:
            for k, v in (("feature", -1), ("threshold", 0.0), ("default_left", 0),
                         ("left", -1), ("right", -1), ("value", float(cond[old]))):
                out[k].append(v)
            sets.append(None)
            continue
        f = int(feat[old])
        if not 0 <= f < n_features:
            raise ValueError(f"tree {t}: split on feature {f}, outside 0..{n_features - 1}")
        kids = (int(lc[old]), int(rc[old]))
        if int(stype[old]) == 1:  # XGBoost lists the categories going right
            if not int(dleft[old]):
                raise ValueError(f"tree {t}: a categorical split sends missing values to its "
                                 f"listed categories, which sparkxml's category sets cannot "
                                 f"express (they send missing values to the other side)")
            kids = kids[::-1]
            sets.append(cats.get(old, []))
            out["threshold"].append(float("nan"))
            out["default_left"].append(0)
        else:
            sets.append(None)
            out["threshold"].append(leq_threshold(float(cond[old])))
            out["default_left"].append(int(dleft[old]))
        out["feature"].append(f)
        out["value"].append(float(weights[old]) if weights else 0.0)
        ids = []
        for kid in kids:
            if kid in new:
                raise ValueError(f"tree {t}: node {kid} has two parents")
            new[kid] = len(order)
            order.append(kid)
            ids.append(new[kid])
        out["left"].append(ids[0])
        out["right"].append(ids[1])
    out["sets"] = sets
    return out


def from_xgboost_json(doc):
    """A ``TreeEnsemblePredictor`` from an XGBoost JSON model (the document, its text or
    bytes): gbtree boosters of one-output trees, with the objectives of the module
    docstring (also ``multi:softmax``), numerical and categorical splits.

    Thresholds become float64 values that split every float64 input as XGBoost's float32
    comparison does; leaf values and base scores are XGBoost's float32 values (the base
    score turned into a margin). The predictor sums in float64 where XGBoost sums in
    float32, so predictions agree to float32 rounding.
    """
    from ..gbt.categorical import value_bitset
    from ..gbt.predictor import TreeEnsemblePredictor

    if isinstance(doc, (bytes, bytearray, str)):
        try:
            doc = json.loads(doc)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"not an XGBoost JSON model ({e}); save the model with a .json "
                             f"name (UBJSON and the legacy binary format do not convert)"
                             ) from None
    try:
        learner = doc["learner"]
        booster = learner["gradient_booster"]
        objective = learner["objective"]["name"]
        mparam = learner["learner_model_param"]
    except (KeyError, TypeError):
        raise ValueError("not an XGBoost JSON model (no learner / gradient_booster / "
                         "objective / learner_model_param)") from None
    weights = None
    if booster.get("name") == "dart" and "gbtree" in booster:
        weights = np.asarray(booster.get("weight_drop", []), np.float64)
        booster = booster["gbtree"]
    if booster.get("name") != "gbtree":
        raise ValueError(f"only gbtree and dart boosters convert, this one is "
                         f"{booster.get('name')!r}")
    if objective not in _FROM_XGBOOST:
        raise ValueError(f"XGBoost objective {objective!r} has no sparkxml counterpart; "
                         f"convertible: {sorted(_FROM_XGBOOST)}")
    ours = _FROM_XGBOOST[objective]
    link = XGBOOST_OBJECTIVES[ours][1]
    model = booster["model"]
    d = int(mparam["num_feature"])
    k = max(1, int(mparam.get("num_class", "0")))
    if int(mparam.get("num_target", "1")) != 1:
        raise ValueError("only single-target XGBoost models convert")
    base = _parse_base_score(mparam["base_score"])
    if len(base) == 1 and k > 1:
        base = base * k
    if len(base) != k:
        raise ValueError(f"base_score has {len(base)} values for {k} outputs")
    base = [_margin(float(np.float32(b)), link) for b in base]
    trees = [_tree_from_json(t, i, d) for i, t in enumerate(model["trees"])]
    if weights is not None:
        if weights.size != len(trees):
            raise ValueError(f"weight_drop has {weights.size} weights for {len(trees)} trees")
        for t, w in zip(trees, weights):
            t["value"] = np.asarray(t["value"], np.float64) * w
    info = [int(c) for c in model.get("tree_info", [0] * len(trees))]
    if len(info) != len(trees):
        raise ValueError(f"tree_info has {len(info)} entries for {len(trees)} trees")
    arrays = {key: np.concatenate([np.asarray(t[key]) for t in trees]) if trees else
              np.zeros(0) for key in ("feature", "threshold", "default_left", "left", "right",
                                      "value", "gain", "cover")}
    sizes = [len(t["feature"]) for t in trees]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cat = {}
    if any(s is not None for t in trees for s in t["sets"]):
        counts, words = [], []
        for t in trees:
            for s in t["sets"]:
                # (an empty set is one zero word: the split stays categorical)
                w = np.zeros(0, np.uint32) if s is None else value_bitset(np.asarray(s, float))
                counts.append(w.size)
                words.append(w)
        ptr = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        cat = {"cat_ptr": ptr, "cat_words": np.concatenate(words).astype(np.uint32)}
    names = learner.get("feature_names") or None
    return TreeEnsemblePredictor(
        feature=arrays["feature"], threshold=arrays["threshold"],
        default_left=arrays["default_left"], left=arrays["left"], right=arrays["right"],
        value=arrays["value"], gain=arrays["gain"], cover=arrays["cover"],
        tree_offsets=offsets, n_outputs=k, base_score=np.asarray(base), objective=ours,
        n_features=d, tree_outputs=np.asarray(info, np.int32),
        feature_names=names if names and len(names) == d else None, tree_weights=weights,
        **cat)
