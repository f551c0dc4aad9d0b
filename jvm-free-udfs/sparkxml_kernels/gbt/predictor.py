"""Tree-ensemble prediction on raw features (no binning at predict time).

Model arrays (``TreeEnsemblePredictor.to_arrays()``; the same keys in a saved model's
``data/``, see ``sparkxml_kernels.persist``):

=================  ==================  =====================================================
key                dtype, shape        meaning
=================  ==================  =====================================================
feature            int32 (N,)          split feature, -1 on leaves
threshold          float64 (N,)        x <= threshold goes left (+inf: present vs missing)
default_left       uint8 (N,)          1 when NaN (missing) goes left
left, right        int32 (N,)          children, tree-local node ids; -1 on leaves
value              float64 (N,)        leaf output (learning rate applied); set on all nodes
gain               float64 (N,)        split gain (0 on leaves)
cover              float64 (N,)        hessian sum of the training rows in the node
tree_offsets       int64 (T + 1,)      nodes of tree t are [tree_offsets[t], tree_offsets[t+1])
tree_outputs       int32 (T,)          output (class) each tree adds to; t % n_outputs
n_outputs          int64 ()            1, or the number of classes for softmax
base_score         float64 (n_outputs,)  initial raw score per output
objective          str ()              "squared_error" | "logistic" | "softmax" | ...
n_features         int64 ()            width of the training feature vectors
=================  ==================  =====================================================

Input: dense float64 (n, d) (NaN = missing) or CSR ``(indptr, indices, data, n_features)`` /
scipy CSR (absent entries are 0.0, explicit NaN = missing). Rows are traversed by a compiled
kernel, all trees for one row before the next row (the row stays in cache).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._dtypes import FLOAT, INDPTR, NODE
from .._tree_check import check_tree_structure
from ._input import csr_parts, dense, is_csr
from .loss import make_loss

# the largest number of outputs (classes) a model may have (GBTClassifier's numClasses bound)
MAX_OUTPUTS = 10_000

ARRAY_KEYS = ("feature", "threshold", "default_left", "left", "right", "value", "gain",
              "cover", "tree_offsets", "tree_outputs", "n_outputs", "base_score", "objective",
              "n_features")


@njit(cache=True, nogil=True)
def _leaf(x, base, feature, threshold, default_left, left, right):
    node = 0
    while True:
        j = base + node
        nxt = left[j]
        if nxt < 0:
            return j
        v = x[feature[j]]
        if np.isnan(v):
            if default_left[j] == 0:
                nxt = right[j]
        elif not v <= threshold[j]:
            nxt = right[j]
        node = nxt


@njit(cache=True, nogil=True)
def _predict_dense(X, feature, threshold, default_left, left, right, value, tree_offsets,
                   tree_outputs, out):
    n_trees = tree_offsets.shape[0] - 1
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(n_trees):
            j = _leaf(x, tree_offsets[t], feature, threshold, default_left, left, right)
            out[i, tree_outputs[t]] += value[j]


@njit(cache=True, nogil=True)
def _predict_csr(indptr, indices, data, n_features, feature, threshold, default_left, left,
                 right, value, tree_offsets, tree_outputs, out):
    # one dense row buffer of zeros (absent = 0.0): scatter a row, traverse, clear what was set
    buf = np.zeros(n_features, np.float64)
    n_trees = tree_offsets.shape[0] - 1
    for i in range(indptr.shape[0] - 1):
        for k in range(indptr[i], indptr[i + 1]):
            buf[indices[k]] = data[k]
        for t in range(n_trees):
            j = _leaf(buf, tree_offsets[t], feature, threshold, default_left, left, right)
            out[i, tree_outputs[t]] += value[j]
        for k in range(indptr[i], indptr[i + 1]):
            buf[indices[k]] = 0.0


class TreeEnsemblePredictor:
    """Boosted trees as flat arrays (see the module docstring for the keys)."""

    def __init__(self, feature, threshold, default_left, left, right, value, gain, cover,
                 tree_offsets, n_outputs, base_score, objective, n_features, tree_outputs=None):
        self.feature = np.ascontiguousarray(feature, NODE)
        self.threshold = np.ascontiguousarray(threshold, FLOAT)
        self.default_left = np.ascontiguousarray(default_left, np.uint8)
        self.left = np.ascontiguousarray(left, NODE)
        self.right = np.ascontiguousarray(right, NODE)
        self.value = np.ascontiguousarray(value, FLOAT)
        self.gain = np.ascontiguousarray(gain, FLOAT)
        self.cover = np.ascontiguousarray(cover, FLOAT)
        self.tree_offsets = np.ascontiguousarray(tree_offsets, INDPTR)
        self.n_outputs = int(n_outputs)
        self.base_score = np.ascontiguousarray(base_score, FLOAT).reshape(self.n_outputs)
        self.objective = str(objective)
        self.n_features = int(n_features)
        n_trees = self.tree_offsets.size - 1
        self.tree_outputs = np.ascontiguousarray(
            np.arange(n_trees) % self.n_outputs if tree_outputs is None else tree_outputs,
            np.int32)
        self._check()

    def _check(self):
        """Refuse arrays that do not describe trees: prediction walks ``left``/``right`` until
        a leaf, so a cycle would never return and a child outside its tree would read
        another tree's (or no) memory."""
        N = self.feature.size
        for name in ("threshold", "default_left", "left", "right", "value", "gain", "cover"):
            if getattr(self, name).shape != (N,):
                raise ValueError(f"model array {name} has shape {getattr(self, name).shape}, "
                                 f"feature has {N} entries")
        off = self.tree_offsets
        if off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != N or \
                np.any(np.diff(off) < 1):
            raise ValueError("tree_offsets are inconsistent with the node arrays")
        if not 1 <= self.n_outputs <= MAX_OUTPUTS:
            raise ValueError(f"n_outputs={self.n_outputs} is outside 1..{MAX_OUTPUTS}")
        if not 0 <= self.n_features <= np.iinfo(NODE).max:
            raise ValueError(f"n_features={self.n_features} is outside 0..{np.iinfo(NODE).max}")
        if self.tree_outputs.shape != (off.size - 1,) or (self.tree_outputs.size and (
                self.tree_outputs.min() < 0 or self.tree_outputs.max() >= self.n_outputs)):
            raise ValueError("tree_outputs are inconsistent")
        check_tree_structure(self.left, self.right, off)
        internal = self.left >= 0
        if np.any((self.feature[internal] < 0) | (self.feature[internal] >= self.n_features)):
            bad = int(self.feature[internal][(self.feature[internal] < 0) |
                                             (self.feature[internal] >= self.n_features)][0])
            raise ValueError(f"a split uses feature {bad}, outside 0..{self.n_features - 1}")
        if not (np.isfinite(self.value[~internal]).all() and np.isfinite(self.base_score).all()):
            raise ValueError("leaf values or base_score are not finite")

    # ----------------------------------------------------------------------------------------
    @classmethod
    def from_trees(cls, trees, n_outputs, base_score, objective, n_features):
        """Concatenate grower ``Tree`` objects (round-major: tree t adds to t % n_outputs)."""
        if not trees:
            raise ValueError("no trees")
        off = np.zeros(len(trees) + 1, INDPTR)
        off[1:] = np.cumsum([t.n_nodes for t in trees])
        cat = {k: np.concatenate([getattr(t, k) for t in trees])
               for k in ("feature", "threshold", "default_left", "left", "right", "value",
                         "gain", "cover")}
        return cls(tree_offsets=off, n_outputs=n_outputs, base_score=base_score,
                   objective=objective, n_features=n_features, **cat)

    @property
    def n_trees(self) -> int:
        return self.tree_offsets.size - 1

    def to_arrays(self) -> dict:
        """Plain numpy arrays keyed as in the module docstring (npz/Arrow friendly, no
        objects: ``objective`` is a 0-d unicode array)."""
        return {"feature": self.feature, "threshold": self.threshold,
                "default_left": self.default_left, "left": self.left, "right": self.right,
                "value": self.value, "gain": self.gain, "cover": self.cover,
                "tree_offsets": self.tree_offsets, "tree_outputs": self.tree_outputs,
                "n_outputs": np.asarray(self.n_outputs, np.int64),
                "base_score": self.base_score, "objective": np.asarray(self.objective),
                "n_features": np.asarray(self.n_features, np.int64)}

    @classmethod
    def from_arrays(cls, arrays: dict) -> "TreeEnsemblePredictor":
        missing = [k for k in ARRAY_KEYS if k not in arrays and k != "tree_outputs"]
        if missing:
            raise ValueError(f"model arrays lack {missing}")
        names = ("feature", "threshold", "default_left", "left", "right", "value", "gain",
                 "cover", "tree_offsets", "base_score")
        kw = {k: arrays[k] for k in names}
        return cls(n_outputs=int(arrays["n_outputs"]), objective=str(arrays["objective"]),
                   n_features=int(arrays["n_features"]), tree_outputs=arrays.get("tree_outputs"),
                   **kw)

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None) -> "TreeEnsemblePredictor":
        """Load the arrays of a saved model directory (``sparkxml_kernels.load_model``)."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=tuple(k for k in ARRAY_KEYS if k != "tree_outputs"))
        try:
            return cls.from_arrays(arrays)
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
            raise ModelFormatError(f"{path}: {e}") from None

    # ----------------------------------------------------------------------------------------
    def _kernel_args(self):
        return (self.feature, self.threshold, self.default_left, self.left, self.right,
                self.value, self.tree_offsets, self.tree_outputs)

    def predict_raw(self, X) -> np.ndarray:
        """Raw scores: float64 (n,) for one output, (n, n_outputs) otherwise."""
        if is_csr(X):
            indptr, indices, data, n, d = csr_parts(X)
            self._check_width(d)
            out = np.empty((n, self.n_outputs), FLOAT)
            out[:] = self.base_score
            _predict_csr(indptr, indices, data, max(d, self.n_features), *self._kernel_args(),
                         out)
        else:
            X = dense(X)
            self._check_width(X.shape[1])
            out = np.empty((X.shape[0], self.n_outputs), FLOAT)
            out[:] = self.base_score
            _predict_dense(X, *self._kernel_args(), out)
        return out[:, 0] if self.n_outputs == 1 else out

    def _check_width(self, d):
        if d < self.n_features:
            raise ValueError(f"X has {d} features; the model was trained on {self.n_features}")

    def predict(self, X) -> np.ndarray:
        """Transformed predictions: the value (regression), class probabilities (n, 2) for
        logistic, (n, K) for softmax."""
        return make_loss(self.objective, self.n_outputs).transform(self.predict_raw(X))

    def predict_raw_naive(self, X) -> np.ndarray:
        """Slow twin of :meth:`predict_raw` (dense input only)."""
        X = dense(X)
        out = np.tile(self.base_score, (X.shape[0], 1))
        for i in range(X.shape[0]):
            for t in range(self.n_trees):
                base, node = self.tree_offsets[t], 0
                while self.left[base + node] >= 0:
                    j = base + node
                    v = X[i, self.feature[j]]
                    go = bool(self.default_left[j]) if np.isnan(v) else v <= self.threshold[j]
                    node = self.left[j] if go else self.right[j]
                out[i, self.tree_outputs[t]] += self.value[base + node]
        return out[:, 0] if self.n_outputs == 1 else out

    def feature_importances(self, kind: str = "gain", normalize: bool = True) -> np.ndarray:
        """Per-feature importance, float64 (n_features,).

        kind : "gain" (total split gain, XGBoost's total_gain) or "split" (number of splits)
        normalize : divide by the sum (Spark ML's convention) when it is positive
        """
        internal = self.left >= 0
        f = self.feature[internal]
        if kind == "gain":
            w = self.gain[internal]
        elif kind == "split":
            w = np.ones(f.size)
        else:
            raise ValueError(f"kind must be 'gain' or 'split', got {kind!r}")
        imp = np.bincount(f, weights=w, minlength=self.n_features).astype(FLOAT)
        s = imp.sum()
        return imp / s if normalize and s > 0 else imp

    def truncate(self, n_rounds: int) -> "TreeEnsemblePredictor":
        """The first ``n_rounds`` boosting rounds (``n_rounds * n_outputs`` trees)."""
        t = int(n_rounds) * self.n_outputs
        if not 0 < t <= self.n_trees:
            raise ValueError(f"cannot keep {n_rounds} rounds of {self.n_trees // self.n_outputs}")
        e = int(self.tree_offsets[t])
        return TreeEnsemblePredictor(
            self.feature[:e], self.threshold[:e], self.default_left[:e], self.left[:e],
            self.right[:e], self.value[:e], self.gain[:e], self.cover[:e],
            self.tree_offsets[:t + 1], self.n_outputs, self.base_score, self.objective,
            self.n_features, self.tree_outputs[:t])
