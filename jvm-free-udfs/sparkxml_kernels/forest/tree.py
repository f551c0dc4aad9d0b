"""Tree arrays in scikit-learn's ``tree_`` layout, and the split settings every grower uses.

A grown tree is a ``TreeArrays`` (node ids: depth-first preorder, left child first, as
scikit-learn's ``DepthFirstTreeBuilder`` numbers them):

=========================  ===================  ==============================================
array                      dtype, shape         meaning
=========================  ===================  ==============================================
children_left / _right     int64 (N,)           child ids, -1 on leaves
feature                    int64 (N,)           split feature, -2 on leaves
threshold                  float64 (N,)         x <= threshold goes left, -2.0 on leaves
impurity                   float64 (N,)         the criterion's node impurity
n_node_samples             int64 (N,)           training rows in the node (weight > 0)
weighted_n_node_samples    float64 (N,)         their total weight
value                      float64 (N, 1, K)    class fractions (K classes) or the mean (K=1)
missing_go_to_left         uint8 (N,)           1: a NaN goes left at this split (0 on leaves)
categories_left            uint64 (N, W)        optional: the categories a categorical split
                                                sends left, bit ``c % 64`` of word ``c // 64``
                                                (zeros elsewhere; threshold NaN there)
=========================  ===================  ==============================================

``categories_left`` exists only for trees grown with categorical features; a split on one
sends category ``c`` left when its bit is set, and NaN, a non-integer or a category beyond
the bitset the way ``missing_go_to_left`` says (categories absent from the node in training
have that same side in the bitset: the child with more training rows).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .criteria import ABSOLUTE_ERROR, NO_VALUES, is_classification, median_abs_error

TREE_LEAF = -1
TREE_UNDEFINED = -2
FIELDS = ("children_left", "children_right", "feature", "threshold", "impurity",
          "n_node_samples", "weighted_n_node_samples", "value", "missing_go_to_left")


@dataclass
class SplitParams:
    """What decides whether and where a node splits (scikit-learn's names in comments)."""

    criterion: int
    n_classes: int = 0                 # K (classification), 0 for regression
    max_depth: int = 2**31 - 1         # max_depth
    min_samples_split: int = 2         # min_samples_split (raised to 2 * min_samples_leaf)
    min_samples_leaf: int = 1          # min_samples_leaf
    min_weight_fraction: float = 0.0   # min_weight_fraction_leaf
    min_impurity_decrease: float = 0.0
    max_features: int = 0              # features drawn per node (0: all)
    max_leaf_nodes: int = 0            # best-first growth when > 0
    random_splits: bool = False        # splitter="random" (ExtraTrees; forests only)
    monotonic_cst: list | None = None  # monotonic_cst: -1, 0, 1 per feature (None: none)

    def __post_init__(self):
        self.min_samples_split = max(int(self.min_samples_split), 2 * int(self.min_samples_leaf))

    def internal_cst(self) -> np.ndarray:
        """int8 (d,) the constraints as the split search applies them: on class 0's fraction
        for classification (scikit-learn constrains the negative class: signs flipped), on
        the mean for regression; (0,) without constraints."""
        if self.monotonic_cst is None:  # (all zeros still clip values, as scikit-learn)
            return np.zeros(0, np.int8)
        c = np.asarray(self.monotonic_cst, np.int8)
        return -c if is_classification(self.criterion) else c


def bitset_words(n_categories: int) -> int:
    """uint64 words of a categorical split's left set over ``n_categories`` categories."""
    return max(1, (int(n_categories) + 63) // 64)


def mask_to_bitset(mask, words: int) -> np.ndarray:
    """uint64 (words,) bitset of the categories ``c`` with ``mask[c]`` set."""
    out = np.zeros(words, np.uint64)
    for c in np.flatnonzero(np.asarray(mask)):
        out[c // 64] |= np.uint64(1) << np.uint64(c % 64)
    return out


def bitset_to_mask(bits, n: int) -> np.ndarray:
    """bool (n,): category c in the bitset ``bits`` (uint64 (W,))."""
    c = np.arange(n)
    return ((np.asarray(bits, np.uint64)[c // 64] >> (c % 64).astype(np.uint64))
            & np.uint64(1)).astype(bool)


def monotonic_children(cst: int, lo: float, hi: float, middle: float):
    """Bounds ((lo, hi) of the left child, (lo, hi) of the right) after a split on a feature
    with constraint ``cst`` (internal sign), scikit-learn's: the middle of the children's
    values becomes the shared bound of an increasing (or decreasing) split."""
    if cst > 0:
        return (lo, middle), (middle, hi)
    if cst < 0:
        return (middle, hi), (lo, middle)
    return (lo, hi), (lo, hi)


def clip_value(value: np.ndarray, lo: float, hi: float, classification: bool) -> np.ndarray:
    """scikit-learn's ``clip_node_value``: the first value (class 0's fraction, or the mean)
    clipped to [lo, hi]; for classification the other class gets the rest."""
    v = np.array(value, np.float64)
    if v[0] < lo:
        v[0] = lo
    elif v[0] > hi:
        v[0] = hi
    if classification:
        v[1] = 1 - v[0]
    return v


class NodeList:
    """Nodes appended one by one (the order becomes the node ids)."""

    def __init__(self, n_values: int, n_categories: int = 0):
        self.k = n_values
        self.cols = {f: [] for f in FIELDS if f != "value"}
        self.value = []
        # categorical splits' left sets (node -> mask over category ids); 0: none possible
        self.n_categories = n_categories
        self.cats = {}

    def add(self, parent, is_left, n, w, imp, value) -> int:
        i = len(self.value)
        c = self.cols
        c["children_left"].append(TREE_LEAF)
        c["children_right"].append(TREE_LEAF)
        c["feature"].append(TREE_UNDEFINED)
        c["threshold"].append(float(TREE_UNDEFINED))
        c["impurity"].append(float(imp))
        c["n_node_samples"].append(int(round(n)))
        c["weighted_n_node_samples"].append(float(w))
        c["missing_go_to_left"].append(0)
        self.value.append(np.asarray(value, np.float64).reshape(self.k))
        if parent >= 0:
            c["children_left" if is_left else "children_right"][parent] = i
        return i

    def set_split(self, i, feature, threshold, missing_go_to_left=False, categories=None):
        if categories is not None:
            self.cats[i] = np.asarray(categories)
        self.cols["feature"][i] = int(feature)
        self.cols["threshold"][i] = float(threshold)
        self.cols["missing_go_to_left"][i] = int(bool(missing_go_to_left))

    def set_leaf(self, i):
        self.cols["feature"][i] = TREE_UNDEFINED
        self.cols["threshold"][i] = float(TREE_UNDEFINED)
        self.cols["children_left"][i] = TREE_LEAF
        self.cols["children_right"][i] = TREE_LEAF
        self.cols["missing_go_to_left"][i] = 0

    def arrays(self) -> "TreeArrays":
        c = self.cols
        return TreeArrays(
            np.asarray(c["children_left"], np.int64), np.asarray(c["children_right"], np.int64),
            np.asarray(c["feature"], np.int64), np.asarray(c["threshold"], np.float64),
            np.asarray(c["impurity"], np.float64), np.asarray(c["n_node_samples"], np.int64),
            np.asarray(c["weighted_n_node_samples"], np.float64),
            np.asarray(self.value, np.float64).reshape(len(self.value), 1, self.k),
            np.asarray(c["missing_go_to_left"], np.uint8), self._categories())

    def _categories(self):
        if not self.n_categories:
            return None
        words = bitset_words(self.n_categories)
        out = np.zeros((len(self.value), words), np.uint64)
        for i, mask in self.cats.items():
            if self.cols["children_left"][i] >= 0:
                out[i] = mask_to_bitset(mask, words)
        return out


@dataclass
class TreeArrays:
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray
    missing_go_to_left: np.ndarray
    categories_left: np.ndarray | None = None

    @property
    def node_count(self) -> int:
        return int(self.feature.size)

    def as_dict(self) -> dict:
        out = {f: getattr(self, f) for f in FIELDS}
        if self.categories_left is not None:
            out["categories_left"] = self.categories_left
        return out

    def feature_importances(self, n_features: int, normalize: bool = True) -> np.ndarray:
        """scikit-learn's ``compute_feature_importances``: Σ over splits of
        w·imp - w_L·imp_L - w_R·imp_R, divided by the root weight, normalised to sum 1."""
        imp = np.zeros(n_features)
        L, R = self.children_left, self.children_right
        w, im = self.weighted_n_node_samples, self.impurity
        for i in np.flatnonzero(L >= 0):
            imp[self.feature[i]] += (w[i] * im[i] - w[L[i]] * im[L[i]] - w[R[i]] * im[R[i]])
        imp /= w[0]
        s = imp.sum()
        if normalize and s > 0:
            imp /= s
        return imp

    def renumber_preorder(self) -> "TreeArrays":
        """The same tree with ids in depth-first preorder, left child first."""
        order = []
        stack = [0]
        L, R = self.children_left, self.children_right
        while stack:
            i = stack.pop()
            order.append(i)
            if L[i] >= 0:
                stack.append(R[i])
                stack.append(L[i])
        order = np.asarray(order, np.int64)
        new = np.empty(order.size, np.int64)
        new[order] = np.arange(order.size)

        def child(a):
            a = a[order]
            return np.where(a >= 0, new[np.maximum(a, 0)], a)

        return TreeArrays(child(L), child(R), self.feature[order], self.threshold[order],
                          self.impurity[order], self.n_node_samples[order],
                          self.weighted_n_node_samples[order], self.value[order],
                          self.missing_go_to_left[order],
                          None if self.categories_left is None else
                          self.categories_left[order])


def node_value(crit: int, total: np.ndarray, w: float, yv=NO_VALUES) -> np.ndarray:
    """A node's value from its sums: class fractions, the weighted median (absolute_error,
    targets ``yv``), or the weighted mean."""
    if is_classification(crit):
        return total[1:] / w
    if crit == ABSOLUTE_ERROR:
        return np.array([median_abs_error(total, w, yv)[0]])
    return np.array([total[2] / w])


def split_threshold(f: int, bl: int, br: int, vals: np.ndarray, edges) -> float:
    """Threshold between the node's non-empty bins ``bl`` < ``br`` of feature ``f``: the
    midpoint of their values when the bins are exact (scikit-learn's a/2 + b/2 of float32
    values), else the upper edge of bin ``bl``; +inf when ``br`` is the missing slot (every
    present value left, as scikit-learn's split of the missing rows alone)."""
    if br == vals.shape[1] - 1:
        return float("inf")
    a, b = vals[f, bl], vals[f, br]
    if np.isnan(a) or np.isnan(b):
        return float(edges[f][bl])
    return float(a / 2.0 + b / 2.0)
