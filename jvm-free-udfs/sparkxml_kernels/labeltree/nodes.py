"""The node classifiers of a label tree.

At an internal node, one binary classifier per child: positives are the node's rows that
carry a label under that child, negatives the node's other rows (a row belongs to a node when
one of its labels lies under it). At a leaf, one classifier per label, positives the leaf's
rows carrying it. Each is an L2-regularised linear model without separate intercept (the bias
is a feature of the rows, see ``data``), trained by dual coordinate descent:

- ``squared_hinge``: liblinear's ``-s 1`` (a random permutation a pass, shrinking), a node's
  slots in groups of ``linear.dcd_multi.GROUP`` solved together (:func:`solve_group`: one
  permutation a pass for the group, each row read once for all of its problems);
- ``logistic``: :func:`sparkxml_kernels.labeltree.logistic.lr_dual_cd` (liblinear's ``-s 7``).

Weights with |w| below ``weight_threshold`` are dropped, as Parabel does: most of a node's
weights are tiny and the model shrinks several fold. A problem trains on a copy of the node's
rows with its columns renumbered to the features those rows use, so its cost does not grow
with D; a squared-hinge node holding at least ``IN_PLACE_SHARE`` of its task's rows reads
them in place instead (a copy would be nearly the task's rows again), with the same result.
The group of slots c0.. of (tree t, node g) draws its coordinate order from
``linear._rng.stream_state(seed, t, g, c0)`` (a logistic or split-node problem, slot c:
``(seed, t, g, c)``): the same classifiers wherever they are trained.

A *split* node (:func:`split_node`: with ``split_nodes``, which the level-wise mode sets,
squared hinge, and its labels carry at least max(``split_rows``, ``split_share`` x the rows)
(row, label) pairs) is solved over fixed row blocks instead (``blocked.solve_blocked``: the
same method, each pass visiting the blocks in a random order of its own), so that its rows
can be divided between tasks; a row's block comes from its content key (:func:`row_blocks`).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._jit import njit
from ..linear._rng import stream_state
from ..linear.dcd import PERMUTATION, dcd_block
from ..linear.dcd_multi import GROUP, dcd_multi
from .blocked import NUM_BLOCKS, block_offsets, solve_blocked
from .logistic import lr_dual_cd

# A node holding at least this share of its task's rows is solved on them in place rather than
# on a copy with its columns renumbered: at a subtree task's root or a leaf of nearly all of
# its rows the copy was a fifth of the task's peak memory (47 MB of 241 at 195k rows).
IN_PLACE_SHARE = 0.5

SQUARED_HINGE = 0
LOGISTIC = 1
LOSSES = {"squared_hinge": SQUARED_HINGE, "logistic": LOGISTIC}


def solve_binary(X: sp.csr_matrix, y: np.ndarray, loss: int, C: float, tol: float,
                 max_iter: int, rng: np.ndarray, qd: np.ndarray | None = None) -> np.ndarray:
    """Dense float64 weights (X.shape[1],) of one binary problem; ``y`` bool (positives);
    ``qd``: the rows' squared norms (computed when not given)."""
    n, d = X.shape
    w = np.zeros(d)
    if n == 0:
        return w
    indptr = np.ascontiguousarray(X.indptr, np.int64)
    indices = np.ascontiguousarray(X.indices, np.int32)
    data = np.ascontiguousarray(X.data, np.float64)
    if loss == LOGISTIC:
        lr_dual_cd(indptr, indices, data, np.where(y, 1.0, -1.0), float(C), float(tol),
                   int(max_iter), rng, w)
        return w
    labels = y.astype(np.int32)
    if qd is None:
        qd = row_norms2(X)
    dcd_block(indptr, indices, data, 0, n, labels, 1, np.full(n, np.inf),
              np.full(n, 0.5 / C), qd, np.zeros(n), w, 1.0, float(tol), int(max_iter),
              PERMUTATION, rng, np.empty(n, np.int64), np.empty(0), np.zeros(3))
    return w


def row_blocks(keys, n: int) -> np.ndarray:
    """Each row's block (int64 in [0, ``blocked.NUM_BLOCKS``)): its content key modulo the
    block count; without keys (``None``), its position modulo it."""
    if keys is None:
        return np.arange(n, dtype=np.int64) % NUM_BLOCKS
    keys = np.asarray(keys, np.int64)
    if len(keys) != n:
        raise ValueError(f"keys has {len(keys)} entries for {n} rows")
    return np.mod(keys, NUM_BLOCKS)


def split_node(label_rows: int, n_rows: int, params: dict) -> bool:
    """Whether a node is solved over fixed row blocks: ``params["split_nodes"]``, squared
    hinge, and its labels' row counts (``label_rows``) sum to at least
    ``params["split_rows"]`` and to at least ``params["split_share"]`` times the training
    rows (``n_rows``). It depends on the parameters and the data only, so the level-wise
    mode decides it alike on every task and for any number of them."""
    if not params["split_nodes"] or params["loss"] != "squared_hinge":
        return False
    need = max(float(params["split_rows"]), float(params["split_share"]) * float(n_rows))
    return float(label_rows) >= need


def row_ranges(X: sp.csr_matrix, rows: np.ndarray | None = None):
    """(starts, ends), int64 each: the entry ranges of X's rows, or of its rows ``rows``, as
    ``linear.dcd_multi`` reads them (views of X's indptr for all of them)."""
    indptr = np.ascontiguousarray(X.indptr, np.int64)
    if rows is None:
        return indptr[:-1], indptr[1:]
    rows = np.asarray(rows, np.int64)
    return indptr[rows], indptr[rows + 1]


def solve_group(X: sp.csr_matrix, P: np.ndarray, C: float, tol: float, max_iter: int,
                rng: np.ndarray, qd: np.ndarray | None = None,
                rows: np.ndarray | None = None) -> np.ndarray:
    """Dense float64 weights (X.shape[1], K) of K squared-hinge problems over the same rows
    (``linear.dcd_multi``): X's rows, or its rows ``rows`` (int64, read in place). ``P`` bool
    (n, K): the positives of each; ``qd``: those rows' squared norms (computed when not
    given)."""
    starts, ends = row_ranges(X, rows)
    W = np.zeros((X.shape[1], P.shape[1]))
    if starts.size == 0:
        return W
    if qd is None:
        qd = row_norms2(X, rows)
    dcd_multi(starts, ends, np.ascontiguousarray(X.indices, np.int32),
              np.ascontiguousarray(X.data, np.float64), np.ascontiguousarray(P, np.bool_),
              np.ascontiguousarray(qd, np.float64), 0.5 / C, float(tol), int(max_iter), rng, W,
              np.zeros(P.shape[1], np.int64))
    return W


def row_norms2(X: sp.csr_matrix, rows: np.ndarray | None = None) -> np.ndarray:
    """Squared L2 norm of each row of X, or of its rows ``rows``, float64: each row's squares
    summed in entry order, the same bits as ``naive.row_norms2_naive``. No temporary as long
    as the entries (the naive twin's two were 64 MB beside a 48 MB subtree task's rows)."""
    starts, ends = row_ranges(X, rows)
    out = np.zeros(starts.size)
    _row_norms2(starts, ends, np.asarray(X.data, np.float64), out)
    return out


@njit(cache=True, nogil=True)
def _row_norms2(starts, ends, data, out):
    for i in range(out.shape[0]):
        s = 0.0
        for p in range(starts[i], ends[i]):
            s += data[p] * data[p]
        out[i] = s


def node_problems(X: sp.csr_matrix, Yt: sp.csr_matrix, rows: np.ndarray, groups: list):
    """The local data of a node: (X_local, columns, P). ``Yt``: the label matrix transposed
    (labels x rows; its structure only is read); ``rows``: the node's rows; ``groups``: per
    child (or leaf label) the label ids under it; ``P`` bool (len(rows), len(groups)): row
    carries a label of group c."""
    Xl, cols = node_rows_local(X, rows)
    return Xl, cols, slot_matrix_t(Yt, rows, groups)


def node_rows_local(X: sp.csr_matrix, rows: np.ndarray):
    """(X_local, columns): X's rows ``rows`` over the columns they use, renumbered in
    ascending order (``columns`` int32, the original ids)."""
    Xl = X[rows]
    # the used columns, ascending, through a dense marker over X's width: O(nnz + D), where
    # sorting the entries (np.unique) was a seventh of a leaf level's time
    used = np.zeros(X.shape[1], bool)
    used[Xl.indices] = True
    cols = np.flatnonzero(used).astype(np.int32)
    local = np.empty(X.shape[1], np.int32)
    local[cols] = np.arange(len(cols), dtype=np.int32)
    # renumbered in place: a second index array of the node's rows is not needed
    _renumber(Xl.indices, local)
    Xl = sp.csr_matrix((Xl.data, Xl.indices, Xl.indptr), shape=(len(rows), len(cols)))
    return Xl, cols


@njit(cache=True, nogil=True)
def _renumber(indices, local):
    for p in range(indices.shape[0]):
        indices[p] = local[indices[p]]


def row_positions(Yt: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """int64 (Yt.shape[1],): each row's position in ``rows``, -1 for the others."""
    pos = np.full(Yt.shape[1], -1, np.int64)
    pos[np.asarray(rows, np.int64)] = np.arange(len(rows))
    return pos


def slot_matrix_t(Yt: sp.csr_matrix, rows: np.ndarray, groups: list,
                  pos: np.ndarray | None = None) -> np.ndarray:
    """bool (len(rows), len(groups)): whether row ``rows[i]`` has a label in slot c's group
    (the positives of the node's problem c), read in place from the label matrix transposed
    (``Yt``: labels x rows): per slot, the rows of its group's labels. No copy of the node's
    rows (at a root, the whole label matrix), and the callers keep ``Yt`` only. ``pos``:
    :func:`row_positions` of ``rows``, when the caller reads several slot ranges."""
    if pos is None:
        pos = row_positions(Yt, rows)
    P = np.zeros((len(rows), len(groups)), bool)
    indptr, indices = np.asarray(Yt.indptr, np.int64), np.asarray(Yt.indices, np.int32)
    for c, labs in enumerate(groups):
        _slot_flags_t(indptr, indices, np.asarray(labs, np.int64), pos, P, c)
    return P


@njit(cache=True, nogil=True)
def _slot_flags_t(indptr, indices, labels, pos, P, c):
    for lab in labels:
        for p in range(indptr[lab], indptr[lab + 1]):
            i = pos[indices[p]]
            if i >= 0:
                P[i, c] = True


@njit(cache=True, nogil=True)
def _mark_rows(indptr, indices, labels, carry):
    for lab in labels:
        for p in range(indptr[lab], indptr[lab + 1]):
            carry[indices[p]] = True


@njit(cache=True, nogil=True)
def _mark_columns(indptr, indices, rows, marks):
    for r in rows:
        for p in range(indptr[r], indptr[r + 1]):
            marks[indices[p]] = 1.0


def mark_columns(X: sp.csr_matrix, rows: np.ndarray, marks: np.ndarray) -> None:
    """Set ``marks[j]`` (float64, at least X.shape[1] long) to 1.0 for every column j that
    one of ``rows`` of ``X`` uses, in place: the node's features without a copy of its
    rows."""
    _mark_columns(np.asarray(X.indptr, np.int64), np.asarray(X.indices, np.int32),
                  np.asarray(rows, np.int64), marks)


def feature_major(weights: list, cols: np.ndarray, threshold: float):
    """One node's classifiers (dense local weights, one per slot) as a feature-major sparse
    matrix: (features int32 ascending, entry indptr int64, slots int32, values float32),
    weights with |w| < threshold dropped."""
    return feature_major_entries([kept_entries(weights, cols, threshold)])


def kept_entries(weights: list, cols: np.ndarray, threshold: float, first_slot: int = 0):
    """The weights of slots ``first_slot``, ``first_slot`` + 1, ... (dense local weights, one
    per slot) with |w| >= ``threshold``, as (slot int32, feature int32, value float64)
    entries: a node's classifiers trained in parts are kept part by part."""
    slots = [np.zeros(0, np.int32)]
    feats = [np.zeros(0, np.int32)]
    vals = [np.zeros(0)]
    for c, w in enumerate(weights):
        keep = np.flatnonzero(np.abs(w) >= threshold)
        slots.append(np.full(len(keep), first_slot + c, np.int32))
        feats.append(cols[keep])
        vals.append(w[keep])
    return tuple(np.concatenate(a) for a in (slots, feats, vals))


def feature_major_entries(parts: list):
    """:func:`feature_major` of a node from the :func:`kept_entries` of its slots (in any
    grouping: the order (feature, slot) is total)."""
    slot, feat, val = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.lexsort((slot, feat))
    feat, slot, val = feat[order], slot[order], val[order]
    uniq, counts = np.unique(feat, return_counts=True)
    ptr = np.zeros(len(uniq) + 1, np.int64)
    ptr[1:] = np.cumsum(counts)
    return uniq.astype(np.int32), ptr, slot.astype(np.int32), val.astype(np.float32)


def labels_under(children: list, leaf_labels: list) -> list:
    """Per node (breadth-first, children after their parent) the labels under it."""
    M = len(children)
    under: list = [None] * M  # filled bottom-up
    for g in range(M - 1, -1, -1):
        under[g] = (np.concatenate([under[c] for c in children[g]]) if children[g]
                    else leaf_labels[g])
    return under


def node_groups(children: list, leaf_labels: list, under: list, g: int) -> list:
    """The label groups of node g's slots: per child the labels under it (internal node), or
    one label each (leaf)."""
    return ([under[c] for c in children[g]] if children[g]
            else [np.array([lab]) for lab in leaf_labels[g]])


def node_rows(Yt: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
    """The rows (ascending, int64) carrying at least one of ``labels``; ``Yt``: the label
    matrix transposed (labels x rows), read in place."""
    carry = np.zeros(Yt.shape[1], bool)
    if len(labels):
        _mark_rows(np.asarray(Yt.indptr, np.int64), np.asarray(Yt.indices, np.int32),
                   np.asarray(labels, np.int64), carry)
    return np.flatnonzero(carry)


def train_node(X: sp.csr_matrix, Yt: sp.csr_matrix, rows: np.ndarray, groups: list,
               params: dict, tree: int, g: int, blocks: np.ndarray | None = None):
    """Node g of tree ``tree``: its slots' classifiers trained on ``rows`` of X and of the
    labels (``Yt``: transposed, labels x rows), as a
    :func:`feature_major` matrix. The result depends only on those rows in that order.
    ``blocks`` (the rows' blocks, :func:`row_blocks`): given for a split node."""
    loss = LOSSES[params["loss"]]
    C, tol, it = float(params["C"]), float(params["tol"]), int(params["max_iter"])
    thr, seed = float(params["weight_threshold"]), int(params["seed"])
    if blocks is None and loss == SQUARED_HINGE:
        return _train_groups(X, Yt, rows, groups, C, tol, it, thr, seed, tree, g)
    Xl, cols = node_rows_local(X, rows)
    qd = row_norms2(Xl)
    pos = row_positions(Yt, rows)

    # a slot's positives are read when it is solved: all of a leaf's at once are rows x
    # labels bools (Bonsai's leaves hold thousands of labels)
    def positives(c):
        return slot_matrix_t(Yt, rows, groups[c:c + 1], pos)[:, 0]

    if blocks is not None:
        order, boff, ids = block_offsets(blocks[rows])
        Xl, qd = Xl[order], qd[order]
        ws = [solve_blocked(Xl, positives(c)[order], boff, ids, C, tol, it,
                            stream_state(seed, tree, g, c), qd) for c in range(len(groups))]
    else:
        ws = [solve_binary(Xl, positives(c), loss, C, tol, it, stream_state(seed, tree, g, c),
                           qd) for c in range(len(groups))]
    return feature_major(ws, cols, thr)


def _train_groups(X: sp.csr_matrix, Yt: sp.csr_matrix, rows: np.ndarray, groups: list,
                  C: float, tol: float, it: int, thr: float, seed: int, tree: int, g: int):
    """:func:`train_node`'s squared-hinge slots of a node that is not split, ``GROUP`` at a
    time. A node holding at least ``IN_PLACE_SHARE`` of X's rows is solved on them in place
    (their entry ranges; weights over all of X's columns, cut to the node's before they are
    kept), any other on :func:`node_rows_local`' copy: the same bits either way."""
    if len(rows) and len(rows) >= IN_PLACE_SHARE * X.shape[0]:
        marks = np.zeros(X.shape[1])
        mark_columns(X, rows, marks)
        cols = np.flatnonzero(marks).astype(np.int32)
        src, sub = X, np.asarray(rows, np.int64)
    else:
        src, cols = node_rows_local(X, rows)
        sub = None
    qd = row_norms2(src, sub)
    # each group's positives are read when it is solved: a leaf's all at once are rows x
    # labels bools (a Bonsai leaf of 14,859 labels over 500k rows: 7.4 GB)
    pos = row_positions(Yt, rows)
    # a group's dense weights are cut to the kept ones before the next group is solved:
    # a leaf's dense weights all at once were 98 x 93k float64 (73 MB) at 500k rows
    parts = [kept_entries([], cols, thr)]  # a node without slots has no entries
    for c0 in range(0, len(groups), GROUP):
        W = solve_group(src, slot_matrix_t(Yt, rows, groups[c0:c0 + GROUP], pos), C, tol, it,
                        stream_state(seed, tree, g, c0), qd, sub)
        if sub is not None:
            W = W[cols]
        parts.append(kept_entries(list(W.T), cols, thr, first_slot=c0))
        del W
    return feature_major_entries(parts)


def train_tree_nodes(X: sp.csr_matrix, Yt: sp.csr_matrix, children: list,
                     leaf_labels: list, params: dict, tree: int, blocks: np.ndarray) -> list:
    """Train one tree's classifiers: per node (breadth-first) its children's classifiers
    (internal node) or its labels' (leaf), as :func:`feature_major` matrices (slot = position
    of the child in ``children[g]`` or of the label in ``leaf_labels[g]``). ``blocks``: the
    rows' blocks (:func:`row_blocks`)."""
    under = labels_under(children, leaf_labels)
    counts = np.diff(Yt.indptr)
    out = []
    for g in range(len(children)):
        split = split_node(counts[under[g]].sum(), X.shape[0], params)
        out.append(train_node(X, Yt, node_rows(Yt, under[g]),
                              node_groups(children, leaf_labels, under, g), params, tree, g,
                              blocks if split else None))
    return out
