"""Serving a linear SVM without Spark: margins, predictions, the saved arrays.

Saved arrays (``path/data/``, see ``sparkxml_kernels.persist``; ``modelKind`` "linear_svm")::

    coefficient_matrix  float64 (K, d)  K = 1 for two classes (the weights of class 1),
                                        else one row per class (OVR or Crammer-Singer)
    intercepts          float64 (K,)    bias weight x 1.0 (0 without fitIntercept)
    num_classes         int64 ()        2 for binary
    threshold           float64 ()      binary: predict 1 when margin > threshold
"""
from __future__ import annotations

import numpy as np

from .dcd import csr_margins

ARRAY_KEYS = ("coefficient_matrix", "intercepts", "num_classes", "threshold")


def _csr_parts(X):
    """(indptr int64, indices int32, data float64, n_rows, width) of a scipy CSR matrix or an
    (indptr, indices, data, n_features) tuple."""
    if isinstance(X, tuple):
        indptr, indices, data, width = X
        indptr = np.asarray(indptr, np.int64)
        return (indptr, np.asarray(indices, np.int32), np.asarray(data, np.float64),
                indptr.size - 1, int(width))
    if hasattr(X, "indptr") and hasattr(X, "format") and X.format == "csr":
        return (np.asarray(X.indptr, np.int64), np.asarray(X.indices, np.int32),
                np.asarray(X.data, np.float64), X.shape[0], X.shape[1])
    raise TypeError("X must be a scipy.sparse CSR matrix, an (indptr, indices, data, "
                    "n_features) tuple or a 2-D numpy array")


class LinearSVCPredictor:
    """Margins and labels of a trained linear SVM.

    Parameters
    ----------
    coefficient_matrix : float64 (K, d)
    intercepts : float64 (K,)
    num_classes : int
    threshold : float
    """

    def __init__(self, coefficient_matrix, intercepts, num_classes: int, threshold: float = 0.0):
        W = np.ascontiguousarray(coefficient_matrix, np.float64)
        b = np.ascontiguousarray(intercepts, np.float64).reshape(-1)
        k = int(num_classes)
        if W.ndim != 2 or b.shape != (W.shape[0],):
            raise ValueError(f"coefficient_matrix {W.shape} and intercepts {b.shape} do not "
                             f"match")
        if k < 2 or W.shape[0] != (1 if k == 2 else k):
            raise ValueError(f"{W.shape[0]} coefficient rows for num_classes={k}")
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise ValueError("coefficients must be finite")
        self.W, self.b, self.num_classes = W, b, k
        self.threshold = float(threshold)

    @property
    def n_features(self) -> int:
        return int(self.W.shape[1])

    def to_arrays(self) -> dict:
        return {"coefficient_matrix": self.W, "intercepts": self.b,
                "num_classes": np.array(self.num_classes, np.int64),
                "threshold": np.array(self.threshold, np.float64)}

    @classmethod
    def from_arrays(cls, arrays: dict, threshold: float | None = None):
        missing = [k for k in ARRAY_KEYS if k not in arrays]
        if missing:
            raise ValueError(f"linear SVM arrays lack {missing}")
        t = float(arrays["threshold"]) if threshold is None else float(threshold)
        return cls(arrays["coefficient_matrix"], arrays["intercepts"],
                   int(arrays["num_classes"]), t)

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None):
        """Load a saved ``LinearSVCModel`` (``sparkxml_kernels.load_model``); the threshold is
        the model's ``threshold`` param when the metadata sets one."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=ARRAY_KEYS)
        t = None
        for where in ("paramMap", "defaultParamMap"):
            if meta and "threshold" in meta.get(where, {}):
                t = meta[where]["threshold"]
                break
        try:
            return cls.from_arrays(arrays, t)
        except ValueError as e:
            raise ModelFormatError(f"{path}: {e}") from None

    def margins(self, X) -> np.ndarray:
        """float64 (n, K) raw margins x.w_k + b_k (K = 1 for binary)."""
        if isinstance(X, np.ndarray) and X.ndim == 2:
            if X.shape[1] != self.n_features:
                raise ValueError(f"X has {X.shape[1]} features, the model expects "
                                 f"{self.n_features}")
            Xf = np.asarray(X, np.float64)
            if not np.isfinite(Xf).all():
                raise ValueError("X holds NaN or infinite values")
            return Xf @ self.W.T + self.b
        indptr, indices, data, n, width = _csr_parts(X)
        if width != self.n_features:
            raise ValueError(f"X has {width} features, the model expects {self.n_features}")
        if data.size and not np.isfinite(data).all():
            raise ValueError("X holds NaN or infinite values")
        if indices.size and (indices.min() < 0 or indices.max() >= width):
            raise ValueError(f"X has a feature index outside [0, {width})")
        out = np.empty((n, self.W.shape[0]))
        csr_margins(indptr, indices, data, self.W, self.b, out)
        return out

    def predict_raw(self, X) -> np.ndarray:
        """Spark ML's rawPrediction: (n, 2) [-m, m] for binary, (n, K) margins otherwise."""
        m = self.margins(X)
        return np.column_stack([-m[:, 0], m[:, 0]]) if self.num_classes == 2 else m

    def predict(self, X) -> np.ndarray:
        """float64 (n,) class ids: binary 1.0 when margin > threshold; else the argmax."""
        return self.predict_from_margins(self.margins(X))

    def predict_from_margins(self, m: np.ndarray) -> np.ndarray:
        if self.num_classes == 2:
            return (m[:, 0] > self.threshold).astype(np.float64)
        return np.argmax(m, axis=1).astype(np.float64) if m.size else np.zeros(m.shape[0])
