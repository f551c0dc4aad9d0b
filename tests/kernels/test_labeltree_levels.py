"""Level-wise label-tree training pieces (``sparkxml_kernels.labeltree.levels``), run here
the way the Spark tasks run them: representations from label groups, nodes from the rows a
task is sent, must give ``train_forest``'s forest bit for bit."""
import numpy as np
import pytest
import scipy.sparse as sp
from test_labeltree_kernels import topics

from sparkxml_kernels.labeltree import levels as lv
from sparkxml_kernels.labeltree.data import label_matrix, label_representations, normalised_rows
from sparkxml_kernels.labeltree.forest import FOREST_KEYS, check_params, train_forest


def _levelwise(xs, ys, d, L, trees, workers, groups, params):
    p = check_params(params)
    X = sp.csr_matrix((xs[2], xs[1], xs[0]), shape=(len(xs[0]) - 1, d))
    Y = sp.csr_matrix((np.ones(len(ys[1])), ys[1], ys[0]), shape=(len(ys[0]) - 1, L))
    coo = Y.tocoo()
    order = np.lexsort((coo.row, coo.col))  # by label, then row order
    lab, rows = coo.col[order], coo.row[order]
    parts = []
    for grp in np.array_split(np.unique(lab), groups):
        m = np.isin(lab, grp)
        Xe = X[rows[m]]
        parts.append(lv.representations_part(Xe.indptr, Xe.indices, Xe.data, lab[m], d))
    R, labels, counts = lv.gather_representations(parts, L, d)
    built = lv.build_trees(R, labels, trees, p)
    depth = max(int(lv.node_depths(c).max()) for c, _ in built)
    weights, held = {}, []
    for level in range(depth + 1):
        specs, owner = lv.level_plan(built, trees, level, counts, workers, L)
        r, t = lv.row_tasks(ys[0], ys[1], owner)
        for w in range(workers):
            Xw, Yw = X[r[t == w]], Y[r[t == w]]
            held.append(Xw.shape[0])
            out = lv.train_level(Xw.indptr, Xw.indices, Xw.data, Yw.indptr, Yw.indices, d, L,
                                 specs[w], p)
            weights.update(lv.unpack_nodes(lv.pack_nodes(out)))
    return lv.assemble_forest(built, trees, weights), R, counts, held


@pytest.mark.parametrize("params", [
    dict(max_leaf=3),
    dict(max_leaf=2, branch=3, balanced=False, max_depth=2, loss="logistic"),
])
@pytest.mark.parametrize("workers,groups", [(1, 1), (3, 4)])
def test_levelwise_forest_is_the_replicated_forest(params, workers, groups):
    xs, ys, d, L = topics(n=300, d=80, L=24)
    ref = train_forest(*xs, *ys, d, L, [0, 2], **params)
    forest, R, counts, held = _levelwise(xs, ys, d, L, [0, 2], workers, groups, params)
    for k in FOREST_KEYS:
        assert forest[k].dtype == ref[k].dtype, k
        np.testing.assert_array_equal(forest[k], ref[k], err_msg=k)
    X = normalised_rows(*xs, d, 1.0)
    Y = label_matrix(*ys, X.shape[0], L)
    R_ref = label_representations(X, Y, d)
    assert (R != R_ref).nnz == 0
    np.testing.assert_array_equal(counts, np.diff(Y.T.tocsr().indptr))
    if workers > 1:  # below the roots no task holds every row
        assert max(held[-workers:]) < 300


def test_row_tasks_sends_a_row_once_to_each_owner():
    label_task = np.array([[0, 0, 1, -1], [1, -1, 1, 0]], np.int32)
    yptr = np.array([0, 2, 3, 3, 4])
    yidx = np.array([0, 1, 3, 2])  # rows: {0, 1}, {3}, {}, {2}
    rows, tasks = lv.row_tasks(yptr, yidx, label_task)
    assert list(zip(rows.tolist(), tasks.tolist())) == [(0, 0), (0, 1), (1, 0), (3, 1)]
