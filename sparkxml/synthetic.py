"""Synthetic multi-label data for the demo, examples and tests (the project ships no data).

Each label owns a few "topic" features; a point draws 1-4 labels from a power-law prior (a
head and a long tail, as real XML data has), then features mostly from its labels' topics plus
uniform noise. FastXML should reach P@1 well above the most-frequent-label baseline.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

# (indptr int64 (n+1,), indices int32, data float32) and (indptr int64 (n+1,), ids int32)
CSRFeatures = tuple[np.ndarray, np.ndarray, np.ndarray]
CSRLabels = tuple[np.ndarray, np.ndarray]


def make_multilabel(n_rows: int = 4000, n_features: int = 2000, n_labels: int = 200,
                    seed: int = 0, topic_size: int = 12,
                    noise: int = 8) -> tuple[CSRFeatures, CSRLabels]:
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


def csr_rows(X: CSRFeatures, Y: CSRLabels, start: int,
             stop: int) -> tuple[CSRFeatures, CSRLabels]:
    """Rows [start, stop) of the (X, Y) CSR pair returned by ``make_multilabel``."""
    xi, xj, xv = X
    yi, yj = Y
    a, b = xi[start], xi[stop]
    c, d = yi[start], yi[stop]
    return (xi[start:stop + 1] - a, xj[a:b], xv[a:b]), (yi[start:stop + 1] - c, yj[c:d])


def rows_frame(spark: SparkSession, X: CSRFeatures, Y: CSRLabels, start: int, stop: int,
               num_features: int) -> DataFrame:
    """DataFrame (features, labels) of rows [start, stop) of ``make_multilabel``'s output."""
    from sparkxml.datasets import from_csr

    (xi, xj, xv), y = csr_rows(X, Y, start, stop)
    return from_csr(spark, xi, xj, xv, num_features, labels=y)


RATING_FIELDS = ("user", "item", "age", "genre", "hour", "device")


def make_ratings(n_rows: int = 20000, n_users: int = 300, n_items: int = 200,
                 noise: float = 0.3, seed: int = 0,
                 ) -> tuple[dict[str, np.ndarray], np.ndarray, list[tuple[str, str]]]:
    """Rating-like data with planted field interactions (for FM and GBFM tests and demos).

    Six categorical columns: ``user`` (n_users ids), ``item`` (n_items), and four context
    columns drawn independently per rating: ``age`` (6 bands), ``genre`` (10), ``hour`` (8),
    ``device`` (4). The rating is

        3.5 + b_user + b_item + <U_user, I_item> (rank 3) + <A_age, G_genre> (rank 2) + noise

    so exactly two field pairs interact, (user, item) and (age, genre); hour and device carry
    nothing. ``noise`` is the standard deviation of the Gaussian noise: the RMSE a perfect
    model reaches.

    Returns
    -------
    columns : dict name -> int64 (n_rows,) category ids, in ``RATING_FIELDS`` order
    rating : float64 (n_rows,)
    planted : list of (field, field) pairs
    """
    if n_rows < 1 or n_users < 1 or n_items < 1 or noise < 0:
        raise ValueError("make_ratings: need n_rows, n_users, n_items >= 1 and noise >= 0")
    rng = np.random.default_rng(seed)
    sizes = {"user": n_users, "item": n_items, "age": 6, "genre": 10, "hour": 8, "device": 4}
    cols = {name: rng.integers(0, sizes[name], n_rows).astype(np.int64)
            for name in RATING_FIELDS}
    b_u, b_i = rng.normal(0, 0.3, n_users), rng.normal(0, 0.3, n_items)
    U, I = rng.normal(0, 0.5, (n_users, 3)), rng.normal(0, 0.5, (n_items, 3))
    A, G = rng.normal(0, 0.6, (6, 2)), rng.normal(0, 0.6, (10, 2))
    u, i, a, g = cols["user"], cols["item"], cols["age"], cols["genre"]
    rating = (3.5 + b_u[u] + b_i[i] + np.einsum("nf,nf->n", U[u], I[i])
              + np.einsum("nf,nf->n", A[a], G[g]) + rng.normal(0, noise, n_rows))
    return cols, rating, [("user", "item"), ("age", "genre")]


def one_hot_fields(columns: dict, sizes: dict | None = None,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, list[int]]:
    """One-hot CSR of integer category columns side by side, and the field starts.

    Returns (indptr int64, indices int32, data float64, n_features, field_starts list).
    """
    names = list(columns)
    n = len(columns[names[0]])
    sizes = sizes or {c: int(np.max(columns[c])) + 1 for c in names}
    starts = np.cumsum([0] + [sizes[c] for c in names])
    idx = np.stack([np.asarray(columns[c], np.int64) + starts[k] for k, c in enumerate(names)],
                   axis=1)
    indptr = np.arange(0, n * len(names) + 1, len(names), dtype=np.int64)
    return (indptr, idx.reshape(-1).astype(np.int32), np.ones(idx.size), int(starts[-1]),
            [int(s) for s in starts[:-1]])
