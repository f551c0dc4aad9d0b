"""One FastXML tree put back together: the top levels grown data-parallel over row shards
(``dist.grow_top``) with each frontier node replaced by the subtree one task grew below it.

The spliced tree numbers its nodes breadth-first, positive child first, as the one-process
kernel does, so the top keeps its node ids.
"""
from __future__ import annotations

import numpy as np


def _csr_rows(pieces, total):
    """Concatenate CSR row blocks given as (node ids, indptr, values a, values b) into one CSR
    over ``total`` nodes indexed by id (nodes absent from every block get empty rows)."""
    starts = np.zeros(total, np.int64)
    lens = np.zeros(total, np.int64)
    a_all, b_all, pos = [], [], 0
    for ids, ptr, a, b in pieces:
        ptr = np.asarray(ptr, np.int64)
        starts[ids] = pos + ptr[:-1] - ptr[0]
        lens[ids] = np.diff(ptr)
        a_all.append(np.asarray(a)[ptr[0]:ptr[-1]])
        b_all.append(np.asarray(b)[ptr[0]:ptr[-1]])
        pos += int(ptr[-1] - ptr[0])
    return starts, lens, np.concatenate(a_all), np.concatenate(b_all)


def splice_tree(top: dict, subtrees: list, tree_id: int) -> dict:
    """One tree as a forest (``forest.FOREST_KEYS``): ``top`` (from :func:`grow_top`; every
    shard's copy is the same) with frontier node k replaced by ``subtrees[k]`` (a one-tree
    forest), nodes renumbered breadth-first, positive child first, which is how the
    one-process kernel numbers them (so the top keeps its node ids)."""
    top_ch = np.asarray(top["children"], np.int64).reshape(-1, 2)
    M = len(top_ch)
    frontier = np.asarray(top["frontier"], np.int64)
    if len(subtrees) != int((frontier >= 0).sum()):
        raise ValueError(f"tree {tree_id}: {len(subtrees)} subtrees for "
                         f"{int((frontier >= 0).sum())} frontier nodes")
    root_of = np.empty(len(subtrees), np.int64)
    root_of[frontier[frontier >= 0]] = np.flatnonzero(frontier >= 0)
    top_ids = np.arange(M)
    children = [top_ch.copy()]
    w_pieces = [(top_ids, top["w_indptr"], top["w_index"], top["w_value"])]
    l_pieces = [(top_ids, top["leaf_indptr"], top["leaf_label"], top["leaf_score"])]
    base = M
    for k, sub in enumerate(subtrees):
        ch = np.asarray(sub["children"], np.int64).reshape(-1, 2)
        # subtree node s becomes the frontier node for s = 0, node base + s - 1 otherwise
        ids = np.concatenate([[root_of[k]], base + np.arange(len(ch) - 1)])
        mapped = np.where(ch >= 0, ids[np.maximum(ch, 0)], -1)
        children[0][root_of[k]] = mapped[0]
        children.append(mapped[1:])
        w_pieces.append((ids, sub["w_indptr"], sub["w_index"], sub["w_value"]))
        l_pieces.append((ids, sub["leaf_indptr"], sub["leaf_label"], sub["leaf_score"]))
        base += len(ch) - 1
    ch_all = np.concatenate(children)
    total = len(ch_all)
    order = bfs_order(ch_all)
    if len(order) != total:
        raise ValueError(f"tree {tree_id}: the spliced tree has {total} nodes, "
                         f"{len(order)} reachable from its root")
    new_id = np.empty(total, np.int64)
    new_id[order] = np.arange(total)
    ch = ch_all[order]
    ch = np.where(ch >= 0, new_id[np.maximum(ch, 0)], -1).astype(np.int32)

    def reorder(pieces):
        starts, lens, a, b = _csr_rows(pieces, total)
        ptr = np.zeros(total + 1, np.int64)
        np.cumsum(lens[order], out=ptr[1:])
        gather = np.repeat(starts[order] - ptr[:-1], lens[order]) + np.arange(ptr[-1])
        return ptr, a[gather], b[gather]

    w_ptr, w_index, w_value = reorder(w_pieces)
    l_ptr, l_label, l_score = reorder(l_pieces)
    return {"tree_ids": np.array([tree_id], np.int32),
            "tree_offsets": np.array([0, total], np.int64), "children": ch,
            "w_indptr": w_ptr, "w_index": w_index.astype(np.int32),
            "w_value": w_value.astype(np.float32), "leaf_indptr": l_ptr,
            "leaf_label": l_label.astype(np.int32), "leaf_score": l_score.astype(np.float32)}


def bfs_order(children) -> np.ndarray:
    """Node ids of a tree (root 0) in breadth-first order, positive child first."""
    children = np.asarray(children, np.int64).reshape(-1, 2)
    out = [np.zeros(1, np.int64)]
    level = out[0]
    while level.size:
        ch = children[level]
        level = ch[ch[:, 0] >= 0].reshape(-1)
        out.append(level)
    return np.concatenate(out)
