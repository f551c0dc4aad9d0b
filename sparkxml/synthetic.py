"""Synthetic multi-label data for the demo, examples and tests (the project ships no data).

Each label owns a few "topic" features; a point draws 1-4 labels from a power-law prior (a
head and a long tail, as real XML data has), then features mostly from its labels' topics plus
uniform noise. FastXML should reach P@1 well above the most-frequent-label baseline.
"""
from __future__ import annotations

import numpy as np


def make_multilabel(n_rows: int = 4000, n_features: int = 2000, n_labels: int = 200,
                    seed: int = 0, topic_size: int = 12, noise: int = 8):
    """Generate a multi-label dataset.

    Returns
    -------
    X : tuple (indptr int64 (n+1,), indices int32, data float32) CSR, values 1.0
    Y : tuple (indptr int64 (n+1,), label ids int32) CSR pattern
    """
    if n_rows < 1 or n_features < topic_size or n_labels < 2:
        raise ValueError("make_multilabel: need n_rows >= 1, n_features >= topic_size, "
                         "n_labels >= 2")
    rng = np.random.default_rng(seed)
    topics = np.stack([rng.choice(n_features, topic_size, replace=False)
                       for _ in range(n_labels)])
    prior = 1.0 / np.arange(1, n_labels + 1) ** 0.8
    prior /= prior.sum()
    x_ptr, x_idx, y_ptr, y_idx = [0], [], [0], []
    for _ in range(n_rows):
        labels = np.unique(rng.choice(n_labels, rng.integers(1, 5), p=prior))
        feats = [rng.choice(topics[lab], max(2, topic_size // 2), replace=False)
                 for lab in labels]
        feats.append(rng.integers(0, n_features, noise))
        f = np.unique(np.concatenate(feats))
        x_idx.append(f)
        x_ptr.append(x_ptr[-1] + len(f))
        y_idx.append(labels)
        y_ptr.append(y_ptr[-1] + len(labels))
    xi = np.concatenate(x_idx).astype(np.int32)
    X = (np.asarray(x_ptr, np.int64), xi, np.ones(len(xi), np.float32))
    Y = (np.asarray(y_ptr, np.int64), np.concatenate(y_idx).astype(np.int32))
    return X, Y


def csr_rows(X, Y, start: int, stop: int):
    """Rows [start, stop) of the (X, Y) CSR pair returned by ``make_multilabel``."""
    xi, xj, xv = X
    yi, yj = Y
    a, b = xi[start], xi[stop]
    c, d = yi[start], yi[stop]
    return (xi[start:stop + 1] - a, xj[a:b], xv[a:b]), (yi[start:stop + 1] - c, yj[c:d])


def rows_frame(spark, X, Y, start: int, stop: int, num_features: int):
    """DataFrame (features, labels) of rows [start, stop) of ``make_multilabel``'s output."""
    from .datasets import from_csr

    (xi, xj, xv), y = csr_rows(X, Y, start, stop)
    return from_csr(spark, xi, xj, xv, num_features, labels=y)
