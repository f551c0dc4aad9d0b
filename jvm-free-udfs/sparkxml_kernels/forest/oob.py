"""Out-of-bag statistics of a forest, and the routing arrays broadcast to compute them."""
from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(cache=True, nogil=True, inline="always")
def route_binned(binned, r, base, left, right, feature, bins, mleft, miss, catl):
    """The tree-local leaf binned row ``r`` reaches in the tree whose nodes start at
    ``base``: left when its bin is <= the split's left bin, missing (bin ``miss``) to the
    side ``mleft`` names; a categorical split (``bins`` -2) by its category's bit in
    ``catl`` (uint64 (N, W) left sets; (1, 1) without categorical splits)."""
    node = 0
    while left[base + node] >= 0:
        j = base + node
        b = binned[r, feature[j]]
        if bins[j] == -2:  # categorical: bin b is category b (never missing)
            go = ((catl[j, b >> 6] >> np.uint64(b & 63)) & np.uint64(1)) != 0
        else:
            go = (mleft[j] != 0) if b == miss else (b <= bins[j])
        if go:
            node = left[j]
        else:
            node = right[j]
    return node


@njit(cache=True, nogil=True)
def _oob_sums(binned, counts, left, right, feature, bins, mleft, miss, value, offsets, out,
              n_out, catl):
    for r in range(binned.shape[0]):
        for t in range(offsets.shape[0] - 1):
            if counts[t, r] != 0:
                continue
            base = offsets[t]
            node = route_binned(binned, r, base, left, right, feature, bins, mleft, miss,
                                catl)
            for k in range(value.shape[1]):
                out[r, k] += value[base + node, k]
            n_out[r] += 1


def oob_sums(binned, counts, arrays, miss):
    """Per row: the sum of leaf values over the trees it is out of bag for (float64 (n, K))
    and the number of such trees (int64 (n,)), routing binned rows by the left-bin
    thresholds (``assemble``'s ``bin``), and rows in the missing slot ``miss`` by
    ``missing_go_to_left``; categorical splits (``bin`` -2) by ``categories_left``."""
    n = binned.shape[0]
    value = np.ascontiguousarray(arrays["value"]).reshape(arrays["value"].shape[0], -1)
    out = np.zeros((n, value.shape[1]))
    n_out = np.zeros(n, np.int64)
    _oob_sums(binned, counts, arrays["children_left"], arrays["children_right"],
              arrays["feature"], arrays["bin"],
              np.ascontiguousarray(arrays["missing_go_to_left"], np.int64), int(miss), value,
              arrays["tree_offsets"], out, n_out,
              arrays.get("categories_left", np.zeros((1, 1), np.uint64)))
    return out, n_out


def oob_terms(sums, n_oob, y, n_classes) -> np.ndarray:
    """Per row, the terms of the OOB statistics (n, 2) [correct, 1] (classification: the
    argmax of the averaged leaf fractions, class 0 for a row in every bootstrap sample, as
    scikit-learn) or (n, 4) [squared error, y, y², 1] (regression; prediction 0 for such a
    row). Summed with ``exactsum.exact_sums`` they do not depend on the partitioning."""
    pred = sums / np.maximum(n_oob, 1)[:, None]
    y = np.asarray(y, np.float64)
    ones = np.ones(y.size)
    if n_classes:
        return np.column_stack([(np.argmax(pred, axis=1) == y).astype(np.float64)
                                if y.size else np.zeros(0), ones])
    err = y - pred[:, 0]
    return np.column_stack([err * err, y, y * y, ones])


def oob_statistics(sums, n_oob, y, n_classes):
    """One rank's OOB statistics: the column sums of :func:`oob_terms`."""
    return oob_terms(sums, n_oob, y, n_classes).sum(axis=0)


def oob_score(stats, n_classes) -> float:
    """scikit-learn's ``oob_score_`` (accuracy, or R²) from the summed statistics."""
    if n_classes:
        return float(stats[0] / stats[1]) if stats[1] else float("nan")
    sse, sy, syy, n = stats
    sst = syy - sy * sy / n if n else 0.0
    return float(1.0 - sse / sst) if sst > 0 else float("nan")


def pack_for_routing(arrays) -> np.ndarray:
    """Rank 0's routing arrays as one float64 vector (to broadcast through a collective)."""
    v = np.asarray(arrays["value"], np.float64).reshape(arrays["value"].shape[0], -1)
    cl = arrays.get("categories_left")
    # categorical left sets as uint32 halves: exact in float64
    halves = np.zeros(0) if cl is None else \
        np.ascontiguousarray(cl, np.uint64).view(np.uint32).reshape(-1)
    head = np.array([arrays["tree_offsets"].size, arrays["feature"].size, v.shape[1],
                     0 if cl is None else cl.shape[1]], float)
    return np.concatenate([head, arrays["tree_offsets"], arrays["children_left"],
                           arrays["children_right"], arrays["feature"], arrays["bin"],
                           arrays["missing_go_to_left"], v.reshape(-1),
                           halves]).astype(np.float64)


def unpack_for_routing(vec) -> dict:
    t1, N, K, W = (int(x) for x in vec[:4])
    pos = 4
    out = {}
    for name, size in (("tree_offsets", t1), ("children_left", N), ("children_right", N),
                       ("feature", N), ("bin", N), ("missing_go_to_left", N)):
        out[name] = vec[pos:pos + size].astype(np.int64)
        pos += size
    out["value"] = vec[pos:pos + N * K].reshape(N, K)
    pos += N * K
    if W:
        out["categories_left"] = np.ascontiguousarray(
            vec[pos:pos + 2 * N * W].astype(np.uint32)).view(np.uint64).reshape(N, W)
    return out
