"""Public training API: ``train_forest`` and the flattened-forest helpers.

A forest is a dict of flat arrays (no Python objects per node), so it travels through Arrow and
npz files as is:

============  ===========  ===========================================================
key           dtype/shape  meaning
============  ===========  ===========================================================
tree_ids      int32 (T,)   global index of each tree
tree_offsets  int64 (T+1,) nodes of tree t are rows tree_offsets[t]:tree_offsets[t+1]
children      int32 (M,2)  [pos_child, neg_child], tree-local node ids; -1, -1 at a leaf
w_indptr      int64 (M+1,) separator of node i: w_index/w_value[w_indptr[i]:w_indptr[i+1]]
w_index       int32        feature ids, ascending per node; id n_features is the bias
w_value       float32      weights (point goes to the positive child when w.x >= 0)
leaf_indptr   int64 (M+1,) distribution of leaf i: leaf_label/leaf_score[...]
leaf_label    int32        label ids, best first (ties: smaller id first)
leaf_score    float32      mean of the leaf's training label vectors (> 0; labels weighted
                           by ``label_weight``: inverse propensities for PfastreXML)
============  ===========  ===========================================================

Nodes of a tree are stored breadth-first, root first; children always come after their parent.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import INDEX, INDPTR, LABEL, SCORE, VALUE
from ._common import tree_seed
from .ndcg import discount_tables, label_weights
from .tree import train_trees_kernel

FOREST_KEYS = ("tree_ids", "tree_offsets", "children", "w_indptr", "w_index", "w_value",
               "leaf_indptr", "leaf_label", "leaf_score")
_DTYPES = {"tree_ids": np.int32, "tree_offsets": np.int64, "children": np.int32,
           "w_indptr": np.int64, "w_index": np.int32, "w_value": np.float32,
           "leaf_indptr": np.int64, "leaf_label": LABEL, "leaf_score": SCORE}


def check_csr(name: str, indptr, indices, n_rows: int | None, n_cols: int):
    """Validate a CSR pattern; return (indptr int64, indices int32). Raises ValueError."""
    indptr = np.ascontiguousarray(indptr, dtype=INDPTR)
    indices = np.asarray(indices)
    if indices.size and not np.issubdtype(indices.dtype, np.integer):
        raise ValueError(f"{name} indices must be integers, got {indices.dtype}")
    indices = np.ascontiguousarray(indices, dtype=INDEX) if indices.size else np.zeros(0, INDEX)
    if indptr.ndim != 1 or indptr.size < 1:
        raise ValueError(f"{name} indptr must be a 1-d array of length n_rows + 1")
    if n_rows is not None and indptr.size != n_rows + 1:
        raise ValueError(f"{name} indptr has length {indptr.size}, expected {n_rows + 1}")
    if indptr[0] != 0 or indptr[-1] != indices.size or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name} indptr must start at 0, be non-decreasing and end at "
                         f"len(indices) = {indices.size}")
    if indices.size:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= n_cols:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} holds the column index {bad}, outside [0, {n_cols})")
    return indptr, indices


def train_forest(X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features, n_labels,
                 tree_ids, seed=0, max_leaf=10, labels_per_leaf=100, log_loss_coeff=1.0,
                 bias=1.0, label_weight=None, normalise_dcg=True, states=None, n_threads=1,
                 on_tree=None) -> dict:
    """Train the FastXML (or PfastreXML) trees ``tree_ids`` on one process's copy of the data.

    Parameters
    ----------
    X_indptr : int64 (N+1,)
    X_indices : int32 (nnzX,)
        Feature ids, < n_features.
    X_data : float32 (nnzX,)
        Feature values.
    Y_indptr : int64 (N+1,)
    Y_indices : int32 (nnzY,)
        Label ids of each point (each y_il = 1), < n_labels; rows may be empty.
    n_features, n_labels : int
        D and L.
    tree_ids : int array (T,)
        Global indices of the trees to train. Tree t depends only on (seed, t) and the data,
        so splitting the trees over tasks in any way gives the same forest.
    seed : int
        Forest seed.
    max_leaf : int
        A node with <= max_leaf points is a leaf.
    labels_per_leaf : int
        Labels kept per leaf distribution.
    log_loss_coeff : float
        c in C± = c / frac± of the node's logistic loss.
    bias : float
        Value of the bias feature (id n_features), L1-penalised like the others.
    label_weight : float array (L,), optional
        Weight y_il of each label (finite, > 0; default 1). PfastreXML passes the inverse
        propensities: they weigh the nDCG step and the leaf distributions, as the authors'
        ``PfastreXML_train`` does by multiplying its label matrix with them.
    normalise_dcg : bool
        True (FastXML): each point's gains are divided by its ideal DCG (nDCG). False
        (PfastreXML): plain DCG.
    states : int array (T,), optional
        MT19937 seeds of the trees, instead of ``tree_seed(seed, t)`` (the data-parallel
        trainer grows subtrees from their own seeds, ``dist.subtree_seed``).
    n_threads : int
        Threads growing the trees, one tree at a time each (a free thread takes the next
        tree); each thread keeps its own working memory. The forest does not depend on it.
    on_tree : callable, optional
        ``on_tree(done)`` after each tree, ``done`` trees finished so far (one call at a
        time, from the thread that finished it).

    Returns
    -------
    dict of str -> ndarray
        The forest, trees in ``tree_ids`` order; keys and layout in ``FOREST_KEYS`` and this
        module's docstring.

    Notes
    -----
    The kernel releases the GIL (``nogil``), so ``n_threads`` threads grow trees side by
    side. Working memory on top of the inputs, per thread: about 2 x (nnzX + N) x 8 bytes
    of node data plus O(D + L + N) vectors.
    """
    n_features = int(n_features)
    n_labels = int(n_labels)
    if n_features < 0 or n_labels < 0:
        raise ValueError("n_features and n_labels must be >= 0")
    if int(max_leaf) < 1 or int(labels_per_leaf) < 1:
        raise ValueError("max_leaf and labels_per_leaf must be >= 1")
    if not np.isfinite(log_loss_coeff) or log_loss_coeff <= 0:
        raise ValueError(f"log_loss_coeff must be a positive number, got {log_loss_coeff}")
    if not np.isfinite(bias):
        raise ValueError(f"bias must be finite, got {bias}")
    X_indptr, X_indices = check_csr("X", X_indptr, X_indices, None, n_features)
    n = X_indptr.size - 1
    X_data = np.ascontiguousarray(X_data, dtype=VALUE)
    if X_data.shape != X_indices.shape:
        raise ValueError(f"X data has {X_data.size} values for {X_indices.size} indices")
    if not np.all(np.isfinite(X_data)):
        raise ValueError("X data holds NaN or infinite values")
    Y_indptr, Y_indices = check_csr("Y", Y_indptr, Y_indices, n, n_labels)
    tree_ids = np.asarray(tree_ids).reshape(-1)
    if tree_ids.size and (not np.issubdtype(tree_ids.dtype, np.integer) or tree_ids.min() < 0):
        raise ValueError("tree_ids must be non-negative integers")
    tree_ids = tree_ids.astype(np.int32)
    if states is None:
        states = np.array([tree_seed(seed, int(t)) for t in tree_ids], dtype=np.int64)
    else:
        states = np.asarray(states, dtype=np.int64).reshape(-1)
        if states.shape != tree_ids.shape or np.any((states < 0) | (states > 0xFFFFFFFF)):
            raise ValueError("states must hold one seed in [0, 2**32) per tree id")
    n_threads = int(n_threads)
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    max_row = int(np.diff(Y_indptr).max()) if n else 0
    disc, csum = discount_tables(n_labels, max_row, bool(normalise_dcg))
    weights = label_weights(label_weight, n_labels)
    # unsigned views: the kernels index with them (see _common.NOMAP); validated >= 0 above
    data = (X_indptr.view(np.uint64), X_indices.view(np.uint32), X_data,
            Y_indptr.view(np.uint64), Y_indices.view(np.uint32), n_features, n_labels)
    rest = (int(max_leaf), int(labels_per_leaf), float(log_loss_coeff), float(bias), disc, csum,
            weights)

    def grow(ids, st):
        return _as_forest(ids, train_trees_kernel(*data, st, *rest))

    if n_threads == 1 and on_tree is None:
        return grow(tree_ids, states)
    return _grow_each(grow, tree_ids, states, n_threads, on_tree)


def _grow_each(grow, tree_ids, states, n_threads: int, on_tree) -> dict:
    """``grow`` one tree at a time on ``n_threads`` threads, each taking the next tree when
    free (trees differ in cost, so no thread waits on a fixed share); the trees in order."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    T = tree_ids.size
    parts: list = [None] * T
    lock = threading.Lock()
    state = {"next": 0, "done": 0}

    def work():
        while True:
            with lock:
                i = state["next"]
                state["next"] += 1
            if i >= T:
                return
            parts[i] = grow(tree_ids[i:i + 1], states[i:i + 1])
            if on_tree is not None:
                with lock:
                    state["done"] += 1
                    on_tree(state["done"])

    k = max(1, min(n_threads, T))
    if k == 1:
        work()
    else:
        with ThreadPoolExecutor(k) as pool:
            for f in [pool.submit(work) for _ in range(k)]:
                f.result()
    return concat_forests(parts) if T else grow(tree_ids, states)


def _as_forest(tree_ids, out) -> dict:
    (tree_offsets, pos_child, neg_child, w_indptr, w_index, w_value, leaf_indptr, leaf_label,
     leaf_score) = out
    return {
        "tree_ids": tree_ids,
        "tree_offsets": tree_offsets,
        "children": np.ascontiguousarray(np.stack([pos_child, neg_child], axis=1)),
        "w_indptr": w_indptr,
        "w_index": w_index,
        "w_value": w_value,
        "leaf_indptr": leaf_indptr,
        "leaf_label": leaf_label,
        "leaf_score": leaf_score,
    }


def empty_forest() -> dict:
    """A forest with no trees."""
    return {"tree_ids": np.zeros(0, np.int32), "tree_offsets": np.zeros(1, np.int64),
            "children": np.zeros((0, 2), np.int32), "w_indptr": np.zeros(1, np.int64),
            "w_index": np.zeros(0, np.int32), "w_value": np.zeros(0, np.float32),
            "leaf_indptr": np.zeros(1, np.int64), "leaf_label": np.zeros(0, np.int32),
            "leaf_score": np.zeros(0, np.float32)}


def concat_forests(forests) -> dict:
    """Concatenate forests (trees in list order), re-offsetting the pointer arrays.

    Parameters
    ----------
    forests : iterable of dict
        Forests as returned by :func:`train_forest`.

    Returns
    -------
    dict
        One forest holding all their trees.
    """
    forests = [f for f in forests]
    if not forests:
        return empty_forest()
    out = {"tree_ids": np.concatenate([np.asarray(f["tree_ids"], np.int32) for f in forests]),
           "children": np.concatenate([np.asarray(f["children"], np.int32).reshape(-1, 2)
                                       for f in forests]),
           "w_index": np.concatenate([np.asarray(f["w_index"], np.int32) for f in forests]),
           "w_value": np.concatenate([np.asarray(f["w_value"], np.float32) for f in forests]),
           "leaf_label": np.concatenate([np.asarray(f["leaf_label"], LABEL) for f in forests]),
           "leaf_score": np.concatenate([np.asarray(f["leaf_score"], SCORE) for f in forests])}
    for key in ("tree_offsets", "w_indptr", "leaf_indptr"):
        parts = [np.zeros(1, np.int64)]
        base = 0
        for f in forests:
            a = np.asarray(f[key], np.int64)
            parts.append(a[1:] - a[0] + base)
            base += int(a[-1] - a[0])
        out[key] = np.concatenate(parts)
    return {k: out[k] for k in FOREST_KEYS}


def take_trees(forest: dict, order) -> dict:
    """The forest made of trees ``order`` (positions, not tree ids) of ``forest``, in order."""
    off = np.asarray(forest["tree_offsets"], np.int64)
    parts = []
    for t in np.asarray(order, np.int64):
        a, b = int(off[t]), int(off[t + 1])
        wi = forest["w_indptr"][a:b + 1]
        li = forest["leaf_indptr"][a:b + 1]
        parts.append({
            "tree_ids": forest["tree_ids"][t:t + 1],
            "tree_offsets": np.array([0, b - a], np.int64),
            "children": forest["children"][a:b],
            "w_indptr": wi - wi[0],
            "w_index": forest["w_index"][wi[0]:wi[-1]],
            "w_value": forest["w_value"][wi[0]:wi[-1]],
            "leaf_indptr": li - li[0],
            "leaf_label": forest["leaf_label"][li[0]:li[-1]],
            "leaf_score": forest["leaf_score"][li[0]:li[-1]],
        })
    return concat_forests(parts)


def sort_forest(forest: dict) -> dict:
    """The same forest with its trees ordered by ``tree_ids`` (stable for duplicates)."""
    return take_trees(forest, np.argsort(np.asarray(forest["tree_ids"]), kind="stable"))
