"""The label tree: recursive spherical k-means on the label representations.

Parabel (Prabhu et al., WWW 2018) splits a node's labels in two with *balanced* spherical
2-means: two distinct labels drawn at random are the first centroids; each round every label's
cosine to the two centroids is computed, labels are sorted by (cos to centroid 0 - cos to
centroid 1), the first ceil(m/2) go to cluster 0 and the rest to cluster 1, and the centroids
become the normalised sums of their members. Rounds stop when the mean cosine of the labels to
their centroid improves by less than ``eps``. Bonsai (Khandagale et al., 2020) uses k > 2
children and a bounded depth; with ``balanced`` a k-way split assigns (label, cluster) pairs
greedily by descending cosine under a capacity of ceil(m/k) labels a cluster, otherwise each
label goes to its nearest centroid (empty clusters are dropped).

Ties: sorts are stable (the smaller label position first; for argmax the smaller cluster), so
a tree depends only on the representations and its random stream. Node ``g`` of tree ``t``
draws its initial centroids from ``node_rng(seed, t, g)``: nodes are numbered breadth-first,
so the numbering, and the tree, do not depend on where or in which order it is trained.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def node_rng(seed: int, tree: int, node: int) -> np.random.Generator:
    """The random stream of node ``node`` of tree ``tree``."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence([int(seed) % (1 << 63), int(tree), int(node)])))


def initial_centroids(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct positions in [0, m), as drawn (the naive twin takes the same draw)."""
    return rng.choice(m, size=k, replace=False)


def balanced_assign(S: np.ndarray) -> np.ndarray:
    """Cluster of each row of the (m, k) similarity matrix under the balance constraint
    (see the module docstring)."""
    m, k = S.shape
    out = np.empty(m, np.int32)
    if k == 2:
        order = np.argsort(-(S[:, 0] - S[:, 1]), kind="stable")
        half = (m + 1) // 2
        out[order[:half]] = 0
        out[order[half:]] = 1
        return out
    cap = -(-m // k)
    order = np.argsort(-S.ravel(), kind="stable")
    out[:] = -1
    count = np.zeros(k, np.int64)
    left = m
    for flat in order:
        i, c = divmod(int(flat), k)
        if out[i] < 0 and count[c] < cap:
            out[i] = c
            count[c] += 1
            left -= 1
            if left == 0:
                break
    return out


def spherical_kmeans(R: sp.csr_matrix, k: int, balanced: bool, eps: float,
                     rng: np.random.Generator, max_rounds: int = 100) -> np.ndarray:
    """Cluster ids (int32, (m,)) of the m rows of R (unit or zero rows)."""
    m = R.shape[0]
    init = initial_centroids(m, k, rng)
    C = R[init].toarray()
    old = -np.inf
    assign = np.zeros(m, np.int32)
    for _ in range(max_rounds):
        S = np.asarray(R @ C.T)
        assign = balanced_assign(S) if balanced else np.argmax(S, axis=1).astype(np.int32)
        obj = float(S[np.arange(m), assign].mean())
        if obj - old < eps:
            break
        old = obj
        # sums in member order, so the twin can reproduce them
        M = sp.csr_matrix((np.ones(m), assign, np.arange(m + 1)), shape=(m, k))
        sums = np.asarray((M.T.tocsr() @ R).todense())
        norms = np.sqrt((sums * sums).sum(axis=1))
        keep = norms > 0  # an empty (or all-zero) cluster keeps its centroid
        C[keep] = sums[keep] / norms[keep, None]
    return assign


def build_tree(R: sp.csr_matrix, labels: np.ndarray, branch: int, balanced: bool,
               max_leaf: int, max_depth: int, eps: float, seed: int, tree: int):
    """Grow one tree over ``labels`` (ids into R's rows), breadth first.

    Returns (children, leaf_labels): per node (BFS order, node 0 the root) the list of its
    children's ids (empty for a leaf) and the int32 array of its labels (empty for an internal
    node). A node is a leaf when it holds at most ``max_leaf`` labels, sits at depth
    ``max_depth`` (root depth 0), or its labels do not split (all in one cluster).
    """
    node_labels = [np.asarray(labels, np.int32)]
    depth = [0]
    children: list = []
    leaf_labels: list = []
    g = 0
    while g < len(node_labels):
        lab = node_labels[g]
        kids: list = []
        if len(lab) > max_leaf and depth[g] < max_depth:
            k = min(branch, len(lab))
            assign = spherical_kmeans(R[lab], k, balanced, eps, node_rng(seed, tree, g))
            parts = [lab[assign == c] for c in range(k)]
            parts = [p for p in parts if len(p)]
            if len(parts) > 1:
                for p in parts:
                    kids.append(len(node_labels))
                    node_labels.append(p)
                    depth.append(depth[g] + 1)
        children.append(kids)
        leaf_labels.append(np.zeros(0, np.int32) if kids else lab)
        g += 1
    return children, leaf_labels
