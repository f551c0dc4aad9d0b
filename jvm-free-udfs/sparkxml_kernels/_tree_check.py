"""Structural check of trees stored as flat node arrays (GBT and FastXML models).

Prediction walks from a tree's root to a leaf by following child ids, so a model file whose
ids form a cycle would never return, and one whose ids leave their tree would read another
tree's nodes. Loading runs this check first (``sparkxml_kernels.load_model`` and every
``Model.load``).
"""
from __future__ import annotations

import numpy as np


def check_tree_structure(left, right, tree_offsets) -> None:
    """Raise ValueError unless ``left``/``right`` (int (N,), tree-local child ids, -1 on
    leaves; tree t's nodes are ``tree_offsets[t]:tree_offsets[t + 1]``) make every tree a
    binary tree rooted at its first node: children point forward inside their tree and
    every node but the root is the child of exactly one node (so each node is reached
    exactly once, and every walk from the root ends at a leaf)."""
    N = left.size
    tree_offsets = np.asarray(tree_offsets, np.int64)
    sizes = np.diff(tree_offsets)
    base = np.repeat(tree_offsets[:-1], sizes)
    local = np.arange(N, dtype=np.int64) - base
    size = np.repeat(sizes, sizes)
    internal = left >= 0
    if np.any(internal != (right >= 0)) or np.any((left < -1) | (right < -1)):
        raise ValueError("corrupt tree: a node has one child, or a child id below -1")
    for name, child in (("left", left), ("right", right)):
        c = child[internal].astype(np.int64)
        bad = (c <= local[internal]) | (c >= size[internal])
        if bad.any():
            j = int(np.flatnonzero(internal)[np.argmax(bad)])
            raise ValueError(f"corrupt tree: node {j} has {name} child {int(child[j])}; "
                             f"children must point forward inside their tree "
                             f"(local node {int(local[j])} of {int(size[j])})")
    parents = np.bincount(np.concatenate([left[internal] + base[internal],
                                          right[internal] + base[internal]]).astype(np.int64),
                          minlength=N)
    want = np.ones(N, np.int64)
    want[tree_offsets[:-1][sizes > 0]] = 0  # roots (an empty tree has none)
    if np.any(parents != want):
        j = int(np.argmax(parents != want))
        raise ValueError(f"corrupt tree: node {j} is the child of {int(parents[j])} nodes "
                         f"(expected {int(want[j])}): every node must be reached exactly once")
