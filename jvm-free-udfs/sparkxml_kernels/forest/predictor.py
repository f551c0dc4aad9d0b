"""Forests of scikit-learn ``tree_`` arrays: prediction without Spark, and model files.

Model arrays (``ForestPredictor.to_arrays()``; the same keys in a saved model's
``data/``, see ``sparkxml_kernels.persist``), all trees concatenated, node ids tree-local:

=========================  ==================  ================================================
key                        dtype, shape        meaning
=========================  ==================  ================================================
children_left, _right      int64 (N,)          child ids within the tree, -1 on leaves
feature                    int64 (N,)          split feature, -2 on leaves
threshold                  float64 (N,)        float32(x) <= threshold goes left
impurity                   float64 (N,)        node impurity
n_node_samples             int64 (N,)          training rows in the node
weighted_n_node_samples    float64 (N,)        their weight (bootstrap counts included)
value                      float64 (N, K)      class fractions, or the mean (K = 1)
missing_go_to_left         uint8 (N,)          1: a NaN goes left at this split
categories_left            uint64 (N, W)       optional: categorical splits' left sets
n_categories               int64 (d,)          optional: categories of each feature (0:
                                               numeric); both present or both absent
tree_offsets               int64 (T + 1,)      tree t is nodes [tree_offsets[t], [t+1])
n_features                 int64 ()            width of the training vectors
n_classes                  int64 ()            classes (0 for regression)
criterion                  str ()              the training criterion
sample_offsets             int64 (N + 1,)      quantile forests only: leaf samples of node j
                                               are entries [sample_offsets[j], [j+1])
sample_y, sample_w         float64 (E,)        their labels and weights (``quantiles``)
=========================  ==================  ================================================

Prediction rounds features to float32 first, as scikit-learn does; a NaN feature goes to the
side ``missing_go_to_left`` names (the side the missing training rows took, else the child
with more training rows). Model files without ``missing_go_to_left`` get that second rule. A classifier's probability
is the mean of the trees' leaf class fractions (scikit-learn's ``predict_proba``); a
regressor's prediction the mean of the leaf means. ``tree_arrays(i)`` gives tree i in
scikit-learn's ``tree_`` layout (``value`` shaped (N_i, 1, K)).

A split on a categorical feature (``n_categories[f] > 0``) sends the row left when its value
is a category id whose bit is set in the node's ``categories_left`` row (``tree.TreeArrays``);
NaN, a non-integer and an id at or above ``n_categories[f]`` (a category unseen in training)
go the way ``missing_go_to_left`` says (the child with more training rows).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ..inputs import csr_parts, dense, is_csr
from . import quantiles as quantiles_mod
from .tree import FIELDS, TreeArrays, bitset_to_mask

ARRAY_KEYS = ("children_left", "children_right", "feature", "threshold", "impurity",
              "n_node_samples", "weighted_n_node_samples", "value", "tree_offsets",
              "n_features", "n_classes", "criterion")
# written with every model; derived when absent (see ``default_missing_go_to_left``)
OPTIONAL_KEYS = ("missing_go_to_left",)
# quantile regression forests: every leaf's training labels (``quantiles``)
SAMPLE_KEYS = quantiles_mod.SAMPLE_KEYS
# written only by models with categorical features
CATEGORICAL_KEYS = ("categories_left", "n_categories")


@njit(cache=True, nogil=True)
def _leaves(X, left, right, feature, threshold, mleft, offsets, out, ncat, catl):
    # ncat (d,) categories per feature, (0,) for a model without categorical features
    has_cat = ncat.shape[0] > 0
    for i in range(X.shape[0]):
        for t in range(offsets.shape[0] - 1):
            base = offsets[t]
            node = 0
            while left[base + node] >= 0:
                j = base + node
                x = X[i, feature[j]]
                if has_cat and ncat[feature[j]] > 0:
                    go = mleft[j] != 0
                    if x >= 0.0 and x < ncat[feature[j]] and x == np.floor(x):
                        c = np.int64(x)
                        go = ((catl[j, c >> 6] >> np.uint64(c & 63)) & np.uint64(1)) != 0
                elif (mleft[j] != 0) if np.isnan(x) else (np.float32(x) <= threshold[j]):
                    go = True
                else:
                    go = False
                node = left[j] if go else right[j]
            out[i, t] = base + node


def default_missing_go_to_left(left, right, n_node_samples, offsets) -> np.ndarray:
    """scikit-learn's side for NaN at a split that saw no missing training rows: left when the
    left child holds more training rows (uint8 (N,), node ids tree-local)."""
    base = np.repeat(offsets[:-1], np.diff(offsets)) if offsets.size > 1 else np.zeros(0, int)
    inner = left >= 0
    out = np.zeros(left.size, np.uint8)
    li = base[inner] + left[inner]
    ri = base[inner] + right[inner]
    out[inner] = n_node_samples[li] > n_node_samples[ri]
    return out


class ForestPredictor:
    """One or many trees (see the module docstring)."""

    def __init__(self, children_left, children_right, feature, threshold, impurity,
                 n_node_samples, weighted_n_node_samples, value, tree_offsets, n_features,
                 n_classes, criterion, missing_go_to_left=None, sample_offsets=None,
                 sample_y=None, sample_w=None, categories_left=None, n_categories=None):
        self.children_left = np.ascontiguousarray(children_left, np.int64)
        self.children_right = np.ascontiguousarray(children_right, np.int64)
        self.feature = np.ascontiguousarray(feature, np.int64)
        self.threshold = np.ascontiguousarray(threshold, np.float64)
        self.impurity = np.ascontiguousarray(impurity, np.float64)
        self.n_node_samples = np.ascontiguousarray(n_node_samples, np.int64)
        self.weighted_n_node_samples = np.ascontiguousarray(weighted_n_node_samples,
                                                            np.float64)
        value = np.asarray(value, np.float64)
        self.value = np.ascontiguousarray(value.reshape(value.shape[0], -1))
        self.tree_offsets = np.ascontiguousarray(tree_offsets, np.int64)
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)
        self.criterion = str(criterion)
        self.missing_go_to_left = np.zeros(self.feature.size, np.uint8) \
            if missing_go_to_left is None else np.ascontiguousarray(missing_go_to_left, np.uint8)
        self.samples = None if sample_offsets is None else {
            "sample_offsets": np.ascontiguousarray(sample_offsets, np.int64),
            "sample_y": np.ascontiguousarray(sample_y, np.float64),
            "sample_w": np.ascontiguousarray(sample_w, np.float64)}
        self.categories_left = None if categories_left is None else \
            np.ascontiguousarray(np.asarray(categories_left, np.uint64).reshape(
                self.feature.size, -1))
        self.n_categories = None if n_categories is None else \
            np.ascontiguousarray(n_categories, np.int64)
        self._check()
        if missing_go_to_left is None:  # a model file from before missing values were routed
            self.missing_go_to_left = default_missing_go_to_left(
                self.children_left, self.children_right, self.n_node_samples, self.tree_offsets)

    def _check(self):
        N = self.feature.size
        for name in ("children_left", "children_right", "threshold", "impurity",
                     "n_node_samples", "weighted_n_node_samples", "missing_go_to_left"):
            if getattr(self, name).size != N:
                raise ValueError(f"model array {name} has {getattr(self, name).size} entries, "
                                 f"feature has {N}")
        if self.value.shape[0] != N or self.value.shape[1] != max(self.n_classes, 1):
            raise ValueError(f"model array value has shape {self.value.shape}, expected "
                             f"({N}, {max(self.n_classes, 1)})")
        if (self.categories_left is None) != (self.n_categories is None) or (
                self.n_categories is not None and (
                    self.n_categories.size != self.n_features
                    or np.any(self.n_categories > 64 * self.categories_left.shape[1]))):
            raise ValueError("model arrays categories_left / n_categories are inconsistent")
        off = self.tree_offsets
        if off.size < 2 or off[0] != 0 or off[-1] != N or np.any(np.diff(off) < 1):
            raise ValueError("tree_offsets are inconsistent with the node arrays")
        sizes = np.repeat(np.diff(off), np.diff(off))
        inner = self.children_left >= 0
        bad = (np.any(self.children_left[inner] >= sizes[inner])
               or np.any(self.children_right[inner] >= sizes[inner])
               or np.any(self.children_right[inner] < 0)
               or np.any((self.feature[inner] < 0) | (self.feature[inner] >= self.n_features)))
        if bad:
            raise ValueError("model node arrays are corrupt (child or feature out of range)")
        if self.samples is not None:
            quantiles_mod.check_samples(self.samples, N, self.children_left < 0)

    @classmethod
    def from_trees(cls, trees, n_features, n_classes, criterion, n_categories=None):
        """Concatenate ``TreeArrays`` (``n_categories``: int64 (d,) for trees with
        categorical splits)."""
        off = np.zeros(len(trees) + 1, np.int64)
        off[1:] = np.cumsum([t.node_count for t in trees])
        cat = {f: np.concatenate([getattr(t, f) for t in trees]) for f in FIELDS}
        cat["value"] = cat["value"].reshape(cat["value"].shape[0], -1)
        if n_categories is not None:
            cat["categories_left"] = np.concatenate([t.categories_left for t in trees])
        return cls(tree_offsets=off, n_features=n_features, n_classes=n_classes,
                   criterion=criterion, n_categories=n_categories, **cat)

    @property
    def categorical(self) -> bool:
        """Whether the trees were grown with categorical features."""
        return self.n_categories is not None and bool(np.any(self.n_categories > 0))

    @property
    def n_trees(self) -> int:
        return self.tree_offsets.size - 1

    def tree_arrays(self, i: int) -> TreeArrays:
        if not 0 <= i < self.n_trees:
            raise IndexError(f"tree {i} out of range [0, {self.n_trees})")
        a, b = self.tree_offsets[i], self.tree_offsets[i + 1]
        v = self.value[a:b]
        return TreeArrays(self.children_left[a:b].copy(), self.children_right[a:b].copy(),
                          self.feature[a:b].copy(), self.threshold[a:b].copy(),
                          self.impurity[a:b].copy(), self.n_node_samples[a:b].copy(),
                          self.weighted_n_node_samples[a:b].copy(),
                          v.reshape(v.shape[0], 1, v.shape[1]).copy(),
                          self.missing_go_to_left[a:b].copy(),
                          None if self.categories_left is None else
                          self.categories_left[a:b].copy())

    # ------------------------------------------------------------------ persistence
    def to_arrays(self) -> dict:
        out = {k: getattr(self, k) for k in ARRAY_KEYS[:9] + OPTIONAL_KEYS}
        if self.samples is not None:
            out.update(self.samples)
        if self.n_categories is not None:
            out.update(categories_left=self.categories_left, n_categories=self.n_categories)
        out.update(n_features=np.asarray(self.n_features, np.int64),
                   n_classes=np.asarray(self.n_classes, np.int64),
                   criterion=np.asarray(self.criterion))
        return out

    @classmethod
    def from_arrays(cls, arrays: dict) -> "ForestPredictor":
        missing = [k for k in ARRAY_KEYS if k not in arrays]
        if missing:
            raise ValueError(f"model arrays lack {missing}")
        kw = {k: arrays[k] for k in ARRAY_KEYS[:9] + OPTIONAL_KEYS + SAMPLE_KEYS
              + CATEGORICAL_KEYS
              if k in arrays}
        return cls(n_features=int(arrays["n_features"]), n_classes=int(arrays["n_classes"]),
                   criterion=str(arrays["criterion"]), **kw)

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None) -> "ForestPredictor":
        """Load the arrays of a saved model directory (``sparkxml_kernels.load_model``)."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=ARRAY_KEYS)
        try:
            return cls.from_arrays(arrays)
        except ValueError as e:
            raise ModelFormatError(f"{path}: {e}") from None

    # ------------------------------------------------------------------ prediction
    def _dense(self, X):
        if is_csr(X):
            indptr, indices, data, n, d = csr_parts(X)
            out = np.zeros((n, d))
            out[np.repeat(np.arange(n), np.diff(indptr)), indices] = data
            X = out
        X = dense(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features; the model was trained on "
                             f"{self.n_features}")
        return X

    def apply(self, X) -> np.ndarray:
        """Leaf node (global index) of each row in each tree: int64 (n, T)."""
        X = self._dense(X)
        out = np.empty((X.shape[0], self.n_trees), np.int64)
        if self.n_categories is None:
            ncat, catl = np.zeros(0, np.int64), np.zeros((1, 1), np.uint64)
        else:
            ncat, catl = self.n_categories, self.categories_left
        _leaves(X, self.children_left, self.children_right, self.feature, self.threshold,
                self.missing_go_to_left, self.tree_offsets, out, ncat, catl)
        return out

    def leaf_ordinals(self) -> np.ndarray:
        """int64 (N,): each leaf's index among its tree's leaves counted left to right (the
        nodes are in preorder, left child first: leaves by id are left to right); -1 on
        internal nodes."""
        leaf = self.children_left < 0
        out = np.full(leaf.size, -1, np.int64)
        before = np.concatenate([[0], np.cumsum(leaf)])  # leaves before each node id
        base = np.repeat(before[self.tree_offsets[:-1]], np.diff(self.tree_offsets))
        out[leaf] = (before[:-1] - base)[leaf]
        return out

    def predict_values(self, X) -> np.ndarray:
        """Mean over trees of the leaf values: (n, K) class probabilities, or (n,) means."""
        leaves = self.apply(X)
        v = self.value[leaves].mean(axis=1) if leaves.size else np.zeros(
            (leaves.shape[0], self.value.shape[1]))
        return v if self.n_classes else v[:, 0]

    def predict(self, X) -> np.ndarray:
        """Class ids (the most probable, lowest on ties) or regression values."""
        v = self.predict_values(X)
        return np.argmax(v, axis=1).astype(np.float64) if self.n_classes else v

    def predict_quantiles(self, X, quantiles) -> np.ndarray:
        """float64 (n, Q): the requested quantiles (each in (0, 1)) of each row's conditional
        label distribution (``quantiles`` module: quantile-forest's estimator); NaN for a row
        whose leaves hold no sample. Needs a model fitted with ``quantiles``."""
        if self.samples is None:
            raise ValueError("this forest keeps no leaf samples: fit it with quantiles=[...] "
                             "(RandomForestRegressor) to predict quantiles")
        q = quantiles_mod.check_quantiles(quantiles)
        leaves = self.apply(X)
        return quantiles_mod.predict_quantiles(leaves, self.samples, q)

    def predict_values_naive(self, X) -> np.ndarray:
        """Slow twin of :meth:`predict_values`."""
        X = self._dense(X)
        acc = np.zeros((X.shape[0], self.value.shape[1]))
        for i in range(X.shape[0]):
            for t in range(self.n_trees):
                tr = self.tree_arrays(t)
                node = 0
                while tr.children_left[node] >= 0:
                    f = tr.feature[node]
                    x = X[i, f]
                    go = bool(tr.missing_go_to_left[node]) if np.isnan(x) else \
                        np.float32(x) <= tr.threshold[node]
                    if self.n_categories is not None and self.n_categories[f] > 0:
                        k = int(self.n_categories[f])
                        known = x in range(k)  # an integer id in [0, k) (False for NaN)
                        go = bool(bitset_to_mask(tr.categories_left[node], k)[int(x)]) \
                            if known else bool(tr.missing_go_to_left[node])
                    node = tr.children_left[node] if go else tr.children_right[node]
                acc[i] += tr.value[node, 0]
        acc /= self.n_trees
        return acc if self.n_classes else acc[:, 0]

    def feature_importances(self) -> np.ndarray:
        """scikit-learn's: the mean over trees (with a split) of each tree's normalised
        weighted impurity decrease, normalised to sum 1."""
        imps = [self.tree_arrays(t).feature_importances(self.n_features)
                for t in range(self.n_trees)
                if self.tree_offsets[t + 1] - self.tree_offsets[t] > 1]
        if not imps:
            return np.zeros(self.n_features)
        m = np.mean(imps, axis=0)
        s = m.sum()
        return m / s if s > 0 else m
