"""The slow twin of :meth:`predictor.TreeEnsemblePredictor.predict_raw`: one row, one tree,
one node at a time in Python, for the tests to compare the compiled traversal with."""
from __future__ import annotations

import numpy as np

from ..inputs import dense


def predict_raw_naive(pred, X) -> np.ndarray:
    """Raw scores of ``pred`` (a TreeEnsemblePredictor) on dense ``X``, float64 (n,) or
    (n, n_outputs)."""
    X = pred._missing_to_nan(dense(X))
    out = np.tile(pred.base_score, (X.shape[0], 1))
    for i in range(X.shape[0]):
        for t in range(pred.n_trees):
            base, node = pred.tree_offsets[t], 0
            while pred.left[base + node] >= 0:
                j = base + node
                v = X[i, pred.feature[j]]
                if pred.has_categorical and pred.cat_ptr[j + 1] > pred.cat_ptr[j]:
                    words = pred.cat_words[pred.cat_ptr[j]:pred.cat_ptr[j + 1]]
                    go = bool(v >= 0 and v == np.floor(v) and v < 32 * words.size and
                              (int(words[int(v) // 32]) >> (int(v) % 32)) & 1)
                else:
                    go = bool(pred.default_left[j]) if np.isnan(v) else \
                        v <= pred.threshold[j]
                node = pred.left[j] if go else pred.right[j]
            out[i, pred.tree_outputs[t]] += pred.value[base + node]
    return out[:, 0] if pred.n_outputs == 1 else out

