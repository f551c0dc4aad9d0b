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
value              float64 (N,)        leaf output (learning rate and, in DART models, the
                                       tree's weight applied); set on all nodes
gain               float64 (N,)        split gain (0 on leaves)
cover              float64 (N,)        hessian sum of the training rows in the node
tree_offsets       int64 (T + 1,)      nodes of tree t are [tree_offsets[t], tree_offsets[t+1])
tree_outputs       int32 (T,)          output (class) each tree adds to; t % n_outputs
n_outputs          int64 ()            1, or the number of classes for softmax
base_score         float64 (n_outputs,)  initial raw score per output
objective          str ()              "squared_error" | "logistic" | "softmax" | ...
n_features         int64 ()            width of the training feature vectors
missing            float64 ()          optional: the value that means "missing" besides NaN
                                       (XGBoost's ``missing``; NaN or absent = NaN only)
feature_names      str (n_features,)   optional: names used by dumps and importances
cat_ptr            int64 (N + 1,)      optional (models with categorical splits): node j is
                                       a categorical split when cat_ptr[j+1] > cat_ptr[j]
cat_words          uint32 (C,)         optional: node j's categories going left, a bitset
                                       over category values in words [cat_ptr[j],
                                       cat_ptr[j+1]) (bit v % 32 of word v // 32 =
                                       category v, LightGBM's ``cat_threshold`` layout)
tree_weights       float64 (T,)        optional, DART models only (dart.py): each tree's
                                       weight (XGBoost's ``weight_drop``), ALREADY applied
                                       to ``value``; kept for export and to tell DART models
=================  ==================  =====================================================

A categorical split sends a row left when its value is a category in the node's set; NaN,
negative, fractional and unknown values go right (its ``threshold`` is NaN and
``default_left`` 0). Models without categorical splits have no ``cat_*`` arrays and take the
numerical kernels only.

Input: dense float64 (n, d) (NaN = missing) or CSR ``(indptr, indices, data, n_features)`` /
scipy CSR (absent entries are 0.0, explicit NaN = missing). With ``missing`` set to a value
``v``, entries equal to ``v`` are missing too (``v = 0.0``: absent CSR entries as well). Rows
are traversed by a compiled kernel, all trees for one row before the next row (the row stays
in cache). ``base_margin`` (XGBoost's): per-row raw scores that replace ``base_score``.

Besides raw scores the predictor gives the leaf each row reaches in each tree
(:meth:`~TreeEnsemblePredictor.predict_leaf`), each tree's output per row
(:meth:`~TreeEnsemblePredictor.tree_values`, for staged evaluation), SHAP contributions
(``shap.py``), one tree's arrays (:meth:`~TreeEnsemblePredictor.tree`) and text/JSON dumps
(``dump.py``).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .._dtypes import FLOAT, INDPTR, NODE
from .._jit import njit
from .._tree_check import check_tree_structure
from ..inputs import csr_parts, dense, is_csr
from ..threads import use_threads
from .loss import make_loss

# the largest number of outputs (classes) a model may have (GBTClassifier's numClasses bound)
MAX_OUTPUTS = 10_000

ARRAY_KEYS = ("feature", "threshold", "default_left", "left", "right", "value", "gain",
              "cover", "tree_offsets", "tree_outputs", "n_outputs", "base_score", "objective",
              "n_features")
OPTIONAL_KEYS = ("tree_outputs", "missing", "feature_names", "cat_ptr", "cat_words",
                 "tree_weights")
NODE_KEYS = ("feature", "threshold", "default_left", "left", "right", "value", "gain", "cover")


@njit(cache=True, nogil=True, inline="always")
def _numeric_child(v, j, threshold, default_left, left_child, right):
    # a missing value (NaN) follows the node's default side; otherwise v <= threshold is left
    if np.isnan(v):
        return left_child if default_left[j] != 0 else right[j]
    return left_child if v <= threshold[j] else right[j]


@njit(cache=True, nogil=True)
def _leaf(x, base, feature, threshold, default_left, left, right):
    # the leaf (a node without children, left < 0) that row x reaches in the tree at base
    j = base
    while left[j] >= 0:
        j = base + _numeric_child(x[feature[j]], j, threshold, default_left, left[j], right)
    return j


@njit(cache=True, nogil=True, inline="always")
def _add_trees(x, i, feature, threshold, default_left, left, right, value, tree_offsets,
               tree_outputs, out):
    # row i's (features x) leaf values of every tree, added in tree order
    for t in range(tree_offsets.shape[0] - 1):
        j = _leaf(x, tree_offsets[t], feature, threshold, default_left, left, right)
        out[i, tree_outputs[t]] += value[j]


@njit(cache=True, nogil=True, inline="always")
def _add_csr_row(indptr, indices, data, absent, buf, i, feature, threshold, default_left,
                 left, right, value, tree_offsets, tree_outputs, out):
    # scatter CSR row i into the dense buffer of `absent`, add its trees, reset what was set
    for k in range(indptr[i], indptr[i + 1]):
        buf[indices[k]] = data[k]
    _add_trees(buf, i, feature, threshold, default_left, left, right, value, tree_offsets,
               tree_outputs, out)
    for k in range(indptr[i], indptr[i + 1]):
        buf[indices[k]] = absent


@njit(cache=True, nogil=True)
def _predict_dense(X, feature, threshold, default_left, left, right, value, tree_offsets,
                   tree_outputs, out):
    for i in range(X.shape[0]):
        _add_trees(X[i], i, feature, threshold, default_left, left, right, value,
                   tree_offsets, tree_outputs, out)


# rows per piece of the parallel predictors (each piece owns its rows' outputs)
PREDICT_CHUNK = 1024


@njit(cache=True, nogil=True, parallel=True)
def _predict_dense_parallel(X, feature, threshold, default_left, left, right, value,
                            tree_offsets, tree_outputs, out):
    # each row's trees are added in tree order, as _predict_dense: identical scores
    n = X.shape[0]
    for c in prange((n + PREDICT_CHUNK - 1) // PREDICT_CHUNK):
        for i in range(c * PREDICT_CHUNK, min(n, (c + 1) * PREDICT_CHUNK)):
            _add_trees(X[i], i, feature, threshold, default_left, left, right, value,
                       tree_offsets, tree_outputs, out)


@njit(cache=True, nogil=True, parallel=True)
def _predict_csr_parallel(indptr, indices, data, n_features, absent, feature, threshold,
                          default_left, left, right, value, tree_offsets, tree_outputs, out):
    n = indptr.shape[0] - 1
    for c in prange((n + PREDICT_CHUNK - 1) // PREDICT_CHUNK):
        buf = np.full(n_features, absent)  # one row buffer per piece
        for i in range(c * PREDICT_CHUNK, min(n, (c + 1) * PREDICT_CHUNK)):
            _add_csr_row(indptr, indices, data, absent, buf, i, feature, threshold,
                         default_left, left, right, value, tree_offsets, tree_outputs, out)


@njit(cache=True, nogil=True)
def _predict_csr(indptr, indices, data, n_features, absent, feature, threshold, default_left,
                 left, right, value, tree_offsets, tree_outputs, out):
    # one dense row buffer of `absent` (0.0, or NaN when 0 means missing): scatter a row,
    # traverse, reset what was set
    buf = np.full(n_features, absent)
    for i in range(indptr.shape[0] - 1):
        _add_csr_row(indptr, indices, data, absent, buf, i, feature, threshold, default_left,
                     left, right, value, tree_offsets, tree_outputs, out)


@njit(cache=True, nogil=True)
def _predict_leaves(X, feature, threshold, default_left, left, right, tree_offsets, out):
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(tree_offsets.shape[0] - 1):
            out[i, t] = _leaf(x, tree_offsets[t], feature, threshold, default_left, left,
                              right) - tree_offsets[t]


@njit(cache=True, nogil=True)
def _leaf_cat(x, base, feature, threshold, default_left, left, right, cat_ptr, cat_words):
    # _leaf where a node with a category set (cat_ptr[j + 1] > cat_ptr[j]) sends v left iff
    # v is one of its categories
    j = base
    while left[j] >= 0:
        v = x[feature[j]]
        a = cat_ptr[j]
        b = cat_ptr[j + 1]
        if b > a:
            go = False
            if v >= 0.0 and v < 32.0 * (b - a) and v == np.floor(v):
                c = np.int64(v)
                go = (cat_words[a + (c >> 5)] >> np.uint32(c & 31)) & np.uint32(1) != 0
            j = base + (left[j] if go else right[j])
        else:
            j = base + _numeric_child(v, j, threshold, default_left, left[j], right)
    return j


@njit(cache=True, nogil=True)
def _predict_dense_cat(X, feature, threshold, default_left, left, right, value, tree_offsets,
                       tree_outputs, cat_ptr, cat_words, out):
    n_trees = tree_offsets.shape[0] - 1
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(n_trees):
            j = _leaf_cat(x, tree_offsets[t], feature, threshold, default_left, left, right,
                          cat_ptr, cat_words)
            out[i, tree_outputs[t]] += value[j]


@njit(cache=True, nogil=True)
def _predict_leaves_cat(X, feature, threshold, default_left, left, right, tree_offsets,
                        cat_ptr, cat_words, out):
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(tree_offsets.shape[0] - 1):
            out[i, t] = _leaf_cat(x, tree_offsets[t], feature, threshold, default_left, left,
                                  right, cat_ptr, cat_words) - tree_offsets[t]


class TreeEnsemblePredictor:
    """Boosted trees as flat arrays (see the module docstring for the keys)."""

    def __init__(self, feature, threshold, default_left, left, right, value, gain, cover,
                 tree_offsets, n_outputs, base_score, objective, n_features, tree_outputs=None,
                 missing=float("nan"), feature_names=None, cat_ptr=None, cat_words=None,
                 tree_weights=None):
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
        self.missing = float(missing)
        self.feature_names = None if feature_names is None else [str(f) for f in feature_names]
        self.cat_ptr = None if cat_ptr is None else np.ascontiguousarray(cat_ptr, INDPTR)
        self.cat_words = None if cat_ptr is None else np.ascontiguousarray(cat_words, np.uint32)
        self.tree_weights = None if tree_weights is None else \
            np.ascontiguousarray(tree_weights, FLOAT)
        self._check()

    @property
    def has_categorical(self) -> bool:
        """True when some split is on a category set (``cat_ptr`` present)."""
        return self.cat_ptr is not None

    def _cat_kw(self) -> dict:
        return {"cat_ptr": self.cat_ptr, "cat_words": self.cat_words}

    def refuse_categorical(self, what: str):
        """Raise for operations that do not know categorical splits."""
        if self.has_categorical:
            raise ValueError(f"{what} is not supported for models with categorical splits "
                             f"(categoricalCols); predictions, leaves and importances are")

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
        if self.cat_ptr is not None:
            p = self.cat_ptr
            if p.shape != (N + 1,) or p[0] != 0 or np.any(np.diff(p) < 0) or \
                    p[-1] != self.cat_words.size or np.any((np.diff(p) > 0) & ~internal):
                raise ValueError("cat_ptr/cat_words are inconsistent with the node arrays")
        if self.tree_weights is not None and (self.tree_weights.shape != (off.size - 1,) or
                                              not np.all(self.tree_weights > 0)):
            raise ValueError("tree_weights must hold one positive weight per tree")
        if self.feature_names is not None and len(self.feature_names) != self.n_features:
            raise ValueError(f"{len(self.feature_names)} feature names for {self.n_features} "
                             f"features")

    # ----------------------------------------------------------------------------------------
    @classmethod
    def from_trees(cls, trees, n_outputs, base_score, objective, n_features, categories=None,
                   tree_weights=None):
        """Concatenate grower ``Tree`` objects (round-major: tree t adds to t % n_outputs).
        ``categories`` (list of d: None or the sorted category values of a categorical
        feature) turns categorical splits' bin sets into category sets."""
        if not trees:
            raise ValueError("no trees")
        off = np.zeros(len(trees) + 1, INDPTR)
        off[1:] = np.cumsum([t.n_nodes for t in trees])
        cat = {k: np.concatenate([getattr(t, k) for t in trees])
               for k in ("feature", "threshold", "default_left", "left", "right", "value",
                         "gain", "cover")}
        from .categorical import raw_category_sets

        cat_ptr, cat_words = raw_category_sets(trees, categories)
        return cls(tree_offsets=off, n_outputs=n_outputs, base_score=base_score,
                   objective=objective, n_features=n_features, cat_ptr=cat_ptr,
                   cat_words=cat_words, tree_weights=tree_weights, **cat)

    @property
    def n_trees(self) -> int:
        return self.tree_offsets.size - 1

    def to_arrays(self) -> dict:
        """Plain numpy arrays keyed as in the module docstring (npz/Arrow friendly, no
        objects: ``objective`` is a 0-d unicode array)."""
        out = {"feature": self.feature, "threshold": self.threshold,
               "default_left": self.default_left, "left": self.left, "right": self.right,
               "value": self.value, "gain": self.gain, "cover": self.cover,
               "tree_offsets": self.tree_offsets, "tree_outputs": self.tree_outputs,
               "n_outputs": np.asarray(self.n_outputs, np.int64),
               "base_score": self.base_score, "objective": np.asarray(self.objective),
               "n_features": np.asarray(self.n_features, np.int64),
               "missing": np.asarray(self.missing, FLOAT)}
        if self.feature_names is not None:
            out["feature_names"] = np.asarray(self.feature_names, dtype=str)
        if self.cat_ptr is not None:
            out["cat_ptr"], out["cat_words"] = self.cat_ptr, self.cat_words
        if self.tree_weights is not None:
            out["tree_weights"] = self.tree_weights
        return out

    @classmethod
    def from_arrays(cls, arrays: dict) -> "TreeEnsemblePredictor":
        missing = [k for k in ARRAY_KEYS if k not in arrays and k not in OPTIONAL_KEYS]
        if missing:
            raise ValueError(f"model arrays lack {missing}")
        names = ("feature", "threshold", "default_left", "left", "right", "value", "gain",
                 "cover", "tree_offsets", "base_score")
        kw = {k: arrays[k] for k in names}
        fn = arrays.get("feature_names")
        return cls(n_outputs=int(arrays["n_outputs"]), objective=str(arrays["objective"]),
                   n_features=int(arrays["n_features"]), tree_outputs=arrays.get("tree_outputs"),
                   missing=float(arrays.get("missing", np.nan)),
                   feature_names=None if fn is None else [str(f) for f in np.ravel(fn)],
                   cat_ptr=arrays.get("cat_ptr"), cat_words=arrays.get("cat_words"),
                   tree_weights=arrays.get("tree_weights"), **kw)

    def with_options(self, missing=None, feature_names=None) -> "TreeEnsemblePredictor":
        """A copy sharing the node arrays, with ``missing`` and/or ``feature_names`` set."""
        a = self.to_arrays()
        if missing is not None:
            a["missing"] = np.asarray(float(missing))
        if feature_names is not None:
            a["feature_names"] = np.asarray(list(feature_names), dtype=str)
        return TreeEnsemblePredictor.from_arrays(a)

    def concat(self, other: "TreeEnsemblePredictor") -> "TreeEnsemblePredictor":
        """This model's trees followed by ``other``'s, with this model's base score
        (continued training appends the new rounds to the model it started from)."""
        if (other.n_outputs, other.n_features, other.objective) != \
                (self.n_outputs, self.n_features, self.objective):
            raise ValueError(f"cannot append a model with (outputs, features, objective) "
                             f"{(other.n_outputs, other.n_features, other.objective)} to one "
                             f"with {(self.n_outputs, self.n_features, self.objective)}")
        cat = {k: np.concatenate([getattr(self, k), getattr(other, k)])
               for k in ("feature", "threshold", "default_left", "left", "right", "value",
                         "gain", "cover", "tree_outputs")}
        off = np.concatenate([self.tree_offsets, other.tree_offsets[1:] + self.tree_offsets[-1]])
        kw = {}
        if self.has_categorical or other.has_categorical:
            ptrs = [m.cat_ptr if m.has_categorical else np.zeros(m.feature.size + 1, INDPTR)
                    for m in (self, other)]
            kw["cat_ptr"] = np.concatenate([ptrs[0], ptrs[1][1:] + ptrs[0][-1]])
            kw["cat_words"] = np.concatenate([m.cat_words if m.has_categorical else
                                              np.zeros(0, np.uint32) for m in (self, other)])
        if self.tree_weights is not None or other.tree_weights is not None:
            kw["tree_weights"] = np.concatenate([np.ones(m.n_trees) if m.tree_weights is None
                                                 else m.tree_weights for m in (self, other)])
        return TreeEnsemblePredictor(tree_offsets=off, n_outputs=self.n_outputs,
                                     base_score=self.base_score, objective=self.objective,
                                     n_features=self.n_features, missing=self.missing,
                                     feature_names=self.feature_names, **cat, **kw)

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None) -> "TreeEnsemblePredictor":
        """Load the arrays of a saved model directory (``sparkxml_kernels.load_model``)."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=tuple(k for k in ARRAY_KEYS
                                                  if k not in OPTIONAL_KEYS))
        try:
            return cls.from_arrays(arrays)
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
            raise ModelFormatError(f"{path}: {e}") from None

    # ----------------------------------------------------------------------------------------
    def _kernel_args(self):
        return (self.feature, self.threshold, self.default_left, self.left, self.right,
                self.value, self.tree_offsets, self.tree_outputs)

    def _start(self, n, base_margin) -> np.ndarray:
        """(n, n_outputs) starting raw scores: the base score or the given margins."""
        out = np.empty((n, self.n_outputs), FLOAT)
        if base_margin is None:
            out[:] = self.base_score
        else:
            m = np.asarray(base_margin, FLOAT)
            if m.size != n * self.n_outputs:
                raise ValueError(f"base_margin has {m.size} values for {n} rows x "
                                 f"{self.n_outputs} outputs")
            out[:] = m.reshape(n, self.n_outputs)
        return out

    def _missing_to_nan(self, X: np.ndarray) -> np.ndarray:
        """Dense X with the model's ``missing`` value replaced by NaN (a copy, only when a
        non-NaN ``missing`` is set and occurs)."""
        if np.isnan(self.missing):
            return X
        hit = X == self.missing
        if hit.any():
            X = X.copy()
            X[hit] = np.nan
        return X

    def dense_input(self, X) -> np.ndarray:
        """Any accepted input as dense float64 (n, n_features) with missing values as NaN
        (for the per-row explanations; ``predict_raw`` reads CSR directly)."""
        if is_csr(X):
            indptr, indices, data, n, d = csr_parts(X)
            self._check_width(d)
            absent = np.nan if self.missing == 0.0 else 0.0
            out = np.full((n, max(d, self.n_features)), absent)
            rows = np.repeat(np.arange(n), np.diff(indptr))
            out[rows, indices] = data
            X = out
        else:
            X = dense(X)
            self._check_width(X.shape[1])
        return self._missing_to_nan(X)

    def predict_raw(self, X, base_margin=None, n_threads=1) -> np.ndarray:
        """Raw scores: float64 (n,) for one output, (n, n_outputs) otherwise.

        ``base_margin`` (n,) or (n, n_outputs), optional: start from these raw scores instead
        of ``base_score`` (XGBoost's ``base_margin``). ``n_threads`` > 1: rows are split over
        that many threads (``threads.use_threads``); the scores do not depend on it."""
        par = use_threads(n_threads) > 1
        if is_csr(X):
            indptr, indices, data, n, d = csr_parts(X)
            self._check_width(d)
            out = self._start(n, base_margin)
            absent = 0.0
            if not np.isnan(self.missing):
                data = np.where(data == self.missing, np.nan, data)
                absent = np.nan if self.missing == 0.0 else 0.0
            if self.has_categorical:  # (rare: categorical features arrive dense)
                self._predict_dense(self.dense_input(X), out, par)
            else:
                (_predict_csr_parallel if par else _predict_csr)(
                    indptr, indices, data, max(d, self.n_features), absent,
                    *self._kernel_args(), out)
        else:
            X = self._missing_to_nan(dense(X))
            self._check_width(X.shape[1])
            out = self._start(X.shape[0], base_margin)
            self._predict_dense(X, out, par)
        return out[:, 0] if self.n_outputs == 1 else out

    def _predict_dense(self, X, out, parallel=False):
        if self.has_categorical:
            _predict_dense_cat(X, *self._kernel_args(), self.cat_ptr, self.cat_words, out)
        else:
            (_predict_dense_parallel if parallel else _predict_dense)(X, *self._kernel_args(),
                                                                      out)

    def predict_leaf(self, X) -> np.ndarray:
        """int32 (n, n_trees): the tree-local node id of the leaf each row reaches in each
        tree (XGBoost's ``pred_leaf``)."""
        X = self.dense_input(X)
        out = np.empty((X.shape[0], self.n_trees), np.int32)
        if self.has_categorical:
            _predict_leaves_cat(X, self.feature, self.threshold, self.default_left, self.left,
                                self.right, self.tree_offsets, self.cat_ptr, self.cat_words,
                                out)
        else:
            _predict_leaves(X, self.feature, self.threshold, self.default_left, self.left,
                            self.right, self.tree_offsets, out)
        return out

    def tree_values(self, X) -> np.ndarray:
        """float64 (n, n_trees): each tree's output for each row (its reached leaf's
        value); ``base_score`` plus the sums over each round's trees gives the staged raw
        scores."""
        leaves = self.predict_leaf(X)
        return self.value[leaves + self.tree_offsets[:-1].astype(np.int64)]

    def leaf_ordinals(self) -> np.ndarray:
        """int32 (N,): for every leaf its index among its tree's leaves counted left to
        right (depth first, left child first: Spark MLlib's leaf numbering of ``leafCol``);
        -1 on internal nodes."""
        out = np.full(self.feature.size, -1, np.int32)
        for t in range(self.n_trees):
            base = int(self.tree_offsets[t])
            stack, k = [0], 0
            while stack:
                node = stack.pop()
                j = base + node
                if self.left[j] < 0:
                    out[j] = k
                    k += 1
                else:
                    stack.append(int(self.right[j]))
                    stack.append(int(self.left[j]))
        return out

    def tree(self, t: int) -> dict:
        """Tree ``t``'s node arrays (tree-local node ids; node 0 is the root), for plots and
        dumps: ``feature``, ``threshold``, ``default_left``, ``left``, ``right``, ``value``,
        ``gain``, ``cover`` (see the module docstring), ``output`` (the class it adds to) and
        ``depth`` (int32 per node)."""
        if not 0 <= int(t) < self.n_trees:
            raise IndexError(f"tree {t} out of range [0, {self.n_trees})")
        a, b = int(self.tree_offsets[t]), int(self.tree_offsets[t + 1])
        out = {k: getattr(self, k)[a:b].copy() for k in ("feature", "threshold",
                                                         "default_left", "left", "right",
                                                         "value", "gain", "cover")}
        depth = np.zeros(b - a, np.int32)
        for node in range(b - a):  # children always have larger ids than their parent
            if out["left"][node] >= 0:
                depth[out["left"][node]] = depth[out["right"][node]] = depth[node] + 1
        out["depth"] = depth
        out["output"] = int(self.tree_outputs[t])
        return out

    def _check_width(self, d):
        if d < self.n_features:
            raise ValueError(f"X has {d} features; the model was trained on {self.n_features}")

    def predict(self, X, base_margin=None, n_threads=1) -> np.ndarray:
        """Transformed predictions: the value (regression), class probabilities (n, 2) for
        logistic, (n, K) for softmax (``n_threads`` as in :meth:`predict_raw`)."""
        return make_loss(self.objective, self.n_outputs).transform(
            self.predict_raw(X, base_margin, n_threads))

    def predict_contributions(self, X, base_margin=None) -> np.ndarray:
        """SHAP values (TreeSHAP, ``shap.py``): float64 (n, n_features + 1) for one output,
        (n, n_outputs, n_features + 1) otherwise; the last column is the bias (base score or
        margin plus each tree's expected value). Rows sum to ``predict_raw``."""
        from .shap import tree_shap

        self.refuse_categorical("SHAP (predict_contributions)")
        return tree_shap(self, self.dense_input(X), base_margin)

    def predict_raw_naive(self, X) -> np.ndarray:
        """Slow twin of :meth:`predict_raw` (dense input only; predictor_naive.py)."""
        from .predictor_naive import predict_raw_naive

        return predict_raw_naive(self, X)

    def feature_importances(self, kind: str = "gain", normalize: bool = True) -> np.ndarray:
        """Per-feature importance, float64 (n_features,).

        Parameters
        ----------
        kind : {"gain", "split", "cover"}
            "gain": total split gain (XGBoost's total_gain); "split": number of splits
            (XGBoost's weight); "cover": total hessian cover of the splits (total_cover).
        normalize : bool
            Divide by the sum (Spark ML's convention) when it is positive.
        """
        from .importance import importance_scores

        if kind not in ("gain", "split", "cover"):
            raise ValueError(f"kind must be 'gain', 'split' or 'cover', got {kind!r}")
        imp, _ = importance_scores(self.feature, self.left, self.gain, self.cover,
                                   self.n_features, {"gain": "total_gain", "split": "weight",
                                                     "cover": "total_cover"}[kind])
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
            self.n_features, self.tree_outputs[:t], self.missing, self.feature_names,
            None if self.cat_ptr is None else self.cat_ptr[:e + 1],
            None if self.cat_ptr is None else self.cat_words[:self.cat_ptr[e]],
            None if self.tree_weights is None else self.tree_weights[:t])
