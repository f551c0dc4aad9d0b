"""Label-tree kernels (Parabel / Bonsai): representations, clustering against its naive twin,
node classifiers against liblinear, beam search against its twin and an exhaustive search,
forest arrays and determinism."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparkxml_kernels.labeltree.cluster import build_tree, node_rng, spherical_kmeans
from sparkxml_kernels.labeltree.data import (
    label_matrix,
    label_representations,
    normalised_rows,
)
from sparkxml_kernels.labeltree.forest import (
    FOREST_KEYS,
    concat_forests,
    sort_forest,
    split_trees,
    train_forest,
)
from sparkxml_kernels.labeltree.naive import (
    beam_search_naive,
    exhaustive_naive,
    node_columns_naive,
    node_problems_naive,
    node_rows_naive,
    row_norms2_naive,
    slot_matrix_naive,
    spherical_kmeans_naive,
)
from sparkxml_kernels.labeltree.nodes import (
    LOGISTIC,
    SQUARED_HINGE,
    mark_columns,
    node_problems,
    node_rows,
    row_norms2,
    slot_matrix_t,
    solve_binary,
)
from sparkxml_kernels.labeltree.predictor import LabelTreePredictor, predict_kernel
from sparkxml_kernels.linear._rng import stream_state


def topics(n=300, d=80, L=24, seed=0):
    """Rows drawn from label topics: each label owns a few features, a row's labels' features
    appear with noise. Returns CSR (xptr, xidx, xval) and (yptr, yidx)."""
    rng = np.random.default_rng(seed)
    own = [rng.choice(d, 6, replace=False) for _ in range(L)]
    xptr, xidx, xval, yptr, yidx = [0], [], [], [0], []
    for _ in range(n):
        labs = np.unique(rng.choice(L, rng.integers(1, 4), replace=False))
        feats = np.unique(np.concatenate([rng.choice(own[lab], 4) for lab in labs]
                                         + [rng.choice(d, 3)]))
        xidx.extend(feats.tolist())
        xval.extend(rng.uniform(0.5, 2.0, len(feats)).tolist())
        xptr.append(len(xidx))
        yidx.extend(labs.tolist())
        yptr.append(len(yidx))
    return ((np.array(xptr, np.int64), np.array(xidx, np.int32), np.array(xval, np.float32)),
            (np.array(yptr, np.int64), np.array(yidx, np.int32)), d, L)


def test_label_representations_are_normalised_sums_of_normalised_rows():
    (xp, xi, xv), (yp, yi), d, L = topics(n=60, d=20, L=6)
    X = normalised_rows(xp, xi, xv, d, 1.0)
    dense = sp.csr_matrix((xv, xi, xp), shape=(60, d)).toarray().astype(np.float64)
    unit = dense / np.linalg.norm(dense, axis=1, keepdims=True)
    np.testing.assert_allclose(X.toarray()[:, :d], unit, rtol=1e-12)
    np.testing.assert_array_equal(X.toarray()[:, d], 1.0)
    Y = label_matrix(yp, yi, 60, L + 2)  # two labels without rows
    R = label_representations(X, Y, d).toarray()
    for lab in range(L + 2):
        s = unit[Y.toarray()[:, lab] > 0].sum(axis=0)
        want = s / np.linalg.norm(s) if np.linalg.norm(s) > 0 else s
        np.testing.assert_allclose(R[lab], want, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("k,balanced", [(2, True), (3, True), (4, False), (5, True)])
def test_spherical_kmeans_matches_naive_twin(k, balanced):
    rng = np.random.default_rng(k)
    R = sp.random(37, 15, density=0.3, random_state=rng, format="csr")
    R = sp.csr_matrix(R.multiply(1.0 / np.sqrt(R.multiply(R).sum(axis=1))))
    R.sort_indices()
    got = spherical_kmeans(R, k, balanced, 1e-4, node_rng(3, 1, k))
    want = spherical_kmeans_naive(R, k, balanced, 1e-4, node_rng(3, 1, k))
    np.testing.assert_array_equal(got, want)
    sizes = np.bincount(got, minlength=k)
    if balanced:
        cap = -(-37 // k)
        assert sizes.max() <= cap and sizes.min() >= 37 - (k - 1) * cap
    # the clustering is not the trivial one: members are closer to their own centroid
    assert len(np.unique(got)) > 1


def test_balanced_two_means_splits_in_halves():
    (xp, xi, xv), (yp, yi), d, L = topics()
    X = normalised_rows(xp, xi, xv, d, 1.0)
    R = label_representations(X, label_matrix(yp, yi, len(yp) - 1, L), d)
    a = spherical_kmeans(R, 2, True, 1e-4, node_rng(0, 0, 0))
    assert sorted(np.bincount(a).tolist()) == [L // 2, L // 2]


@pytest.mark.parametrize("branch,balanced,max_leaf,max_depth", [
    (2, True, 3, 64), (3, True, 4, 64), (4, False, 2, 2)])
def test_build_tree_partitions_labels(branch, balanced, max_leaf, max_depth):
    (xp, xi, xv), (yp, yi), d, L = topics()
    X = normalised_rows(xp, xi, xv, d, 1.0)
    R = label_representations(X, label_matrix(yp, yi, len(yp) - 1, L), d)
    labels = np.arange(L, dtype=np.int32)
    children, leaves = build_tree(R, labels, branch, balanced, max_leaf, max_depth, 1e-4, 5, 0)
    seen = np.concatenate([lab for lab, c in zip(leaves, children) if not c])
    np.testing.assert_array_equal(np.sort(seen), labels)  # each label in exactly one leaf
    depth = {0: 0}
    for g, cs in enumerate(children):
        assert len(cs) <= branch and all(c > g for c in cs)
        for c in cs:
            depth[c] = depth[g] + 1
        if cs:
            assert len(leaves[g]) == 0
        else:
            assert len(leaves[g]) <= max_leaf or depth[g] == max_depth
    assert max(depth.values()) <= max_depth
    again = build_tree(R, labels, branch, balanced, max_leaf, max_depth, 1e-4, 5, 0)
    assert again[0] == children and all(np.array_equal(a, b) for a, b in zip(again[1], leaves))
    other = build_tree(R, labels, branch, balanced, max_leaf, max_depth, 1e-4, 5, 1)
    assert other[0] != children or any(not np.array_equal(a, b)
                                       for a, b in zip(other[1], leaves))


def _node_data(seed=0):
    (xp, xi, xv), (yp, yi), d, L = topics(n=200, seed=seed)
    X = normalised_rows(xp, xi, xv, d, 1.0)
    Y = label_matrix(yp, yi, 200, L).toarray()
    y = Y[:, :L // 2].any(axis=1)
    return X, y


@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
def test_node_classifier_matches_liblinear(loss):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    X, y = _node_data()
    C = 2.0
    code = SQUARED_HINGE if loss == "squared_hinge" else LOGISTIC
    w = solve_binary(X, y, code, C, 1e-6, 2000, stream_state(0, 0, 0, 0))
    if loss == "squared_hinge":
        ref = LinearSVC(C=C, loss="squared_hinge", dual=True, fit_intercept=False, tol=1e-7,
                        max_iter=100000).fit(X, y)
    else:
        ref = LogisticRegression(C=C, solver="liblinear", dual=True, fit_intercept=False,
                                 tol=1e-10, max_iter=100000).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_.ravel(), atol=2e-4)
    assert np.mean((X @ w > 0) == y) > 0.8


def test_node_classifier_is_seeded():
    X, y = _node_data(1)
    a = solve_binary(X, y, SQUARED_HINGE, 1.0, 0.1, 3, stream_state(0, 0, 0, 0))
    b = solve_binary(X, y, SQUARED_HINGE, 1.0, 0.1, 3, stream_state(0, 0, 0, 0))
    c = solve_binary(X, y, SQUARED_HINGE, 1.0, 0.1, 3, stream_state(0, 0, 0, 1))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)  # unconverged after 3 passes: the order shows


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_node_rows_slots_and_columns_match_naive_twins(index_dtype):
    """A node's rows, its problems' positives, its features, its problems and their row
    norms, read in place, equal the naive twins' scipy row selections (labels with no rows
    and empty groups included)."""
    (xptr, xidx, xval), (yptr, yidx), d, L = topics(n=400, d=120, L=30, seed=3)
    X = normalised_rows(xptr, xidx, xval, d, 1.0)
    Y = label_matrix(yptr, yidx, len(yptr) - 1, L)
    Y.indptr = Y.indptr.astype(index_dtype)
    Yt = Y.T.tocsr()
    rng = np.random.default_rng(0)
    for size in (0, 1, 5, 30):
        labels = np.sort(rng.choice(30, size, replace=False))
        rows = node_rows(Yt, labels)
        assert rows.dtype == np.int64
        np.testing.assert_array_equal(rows, node_rows_naive(Yt, labels))
        groups = [labels[: size // 2], labels[size // 2:], np.zeros(0, np.int64)]
        np.testing.assert_array_equal(slot_matrix_t(Yt, rows, groups),
                                      slot_matrix_naive(Y, rows, groups))
        # the node's problems: its rows with their columns renumbered in place
        Xl, cols, P = node_problems(X, Yt, rows, groups)
        Xn, cols_n, P_n = node_problems_naive(X, Y, rows, groups)
        np.testing.assert_array_equal(cols, cols_n)
        np.testing.assert_array_equal(P, P_n)
        assert Xl.shape == Xn.shape
        for a, b in ((Xl.indptr, Xn.indptr), (Xl.indices, Xn.indices), (Xl.data, Xn.data)):
            np.testing.assert_array_equal(a, b)
        # the problems' squared row norms, the same bits, an empty row and int32 indptr too
        np.testing.assert_array_equal(row_norms2(Xl), row_norms2_naive(Xn))
        Xe = sp.vstack([Xl, sp.csr_matrix((1, Xl.shape[1])), Xl]).tocsr()
        Xe.indptr = Xe.indptr.astype(index_dtype)
        assert (row_norms2(Xe)[len(rows)], len(row_norms2(Xe))) == (0.0, 2 * len(rows) + 1)
        np.testing.assert_array_equal(row_norms2(Xe), row_norms2_naive(Xe))
        # from the transposed matrix, rows in another order (as a split node's blocks give)
        shuffled = rng.permutation(rows)
        np.testing.assert_array_equal(slot_matrix_t(Yt, shuffled, groups),
                                      slot_matrix_naive(Y, shuffled, groups))
        marks = np.zeros(X.shape[1] + 1)
        mark_columns(X, rows, marks)
        assert marks[-1] == 0.0
        np.testing.assert_array_equal(np.flatnonzero(marks[:-1]), node_columns_naive(X, rows))


@pytest.fixture(scope="module")
def small_forest():
    (xp, xi, xv), (yp, yi), d, L = topics()
    f = train_forest(xp[:201], xi[:xp[200]], xv[:xp[200]], yp[:201], yi[:yp[200]], d, L,
                     [0, 1], max_leaf=3, seed=4)
    test = (xp[200:] - xp[200], xi[xp[200]:], xv[xp[200]:])
    return f, test, d, L


@pytest.fixture(scope="module")
def bonsai_forest():
    (xp, xi, xv), (yp, yi), d, L = topics(seed=2)
    f = train_forest(xp, xi, xv, yp, yi, d, L, [0, 1, 2], branch=3, balanced=False,
                     max_leaf=2, max_depth=2, loss="logistic", seed=1)
    return f, (xp[:60], xi[:xp[59]], xv[:xp[59]]), d, L


@pytest.mark.parametrize("which", ["small_forest", "bonsai_forest"])
@pytest.mark.parametrize("beam", [1, 2, 3])
def test_beam_search_matches_naive_twin(request, which, beam):
    f, (xp, xi, xv), d, L = request.getfixturevalue(which)
    loss = "logistic" if which == "bonsai_forest" else "squared_hinge"
    p = LabelTreePredictor(f, d, L, 1.0, loss, beam)
    got = p.predict(xp, xi, xv, 5)
    want = beam_search_naive(f, xp, xi, xv, d, 1.0, loss, beam, 5)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


@pytest.mark.parametrize("which", ["small_forest", "bonsai_forest"])
def test_wide_beam_is_exhaustive_search(request, which):
    f, (xp, xi, xv), d, L = request.getfixturevalue(which)
    loss = "logistic" if which == "bonsai_forest" else "squared_hinge"
    p = LabelTreePredictor(f, d, L, 1.0, loss, 1000)
    got = p.predict(xp, xi, xv, 8)
    want = exhaustive_naive(f, xp, xi, xv, d, 1.0, loss, 8)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    narrow = LabelTreePredictor(f, d, L, 1.0, loss, 1).predict(xp, xi, xv, 8)
    assert not np.array_equal(narrow[0], got[0])  # the tree is deep enough for beams to matter


def test_predict_topk_is_predict_without_padding(small_forest):
    f, (xp, xi, xv), d, L = small_forest
    p = LabelTreePredictor(f, d, L, 1.0, "squared_hinge", 2)
    X = sp.csr_matrix((xv, xi, xp), shape=(len(xp) - 1, d))
    labels, scores = p.predict(xp, xi, xv, 30)
    tl, ts = p.predict_topk(X, 30)
    assert any(len(r) < 30 for r in tl)  # some rows have padding to drop
    for r in range(len(tl)):
        keep = labels[r] >= 0
        assert tl[r] == labels[r][keep].tolist() and ts[r] == scores[r][keep].tolist()
    # duplicate, unsorted ids in a row are summed, as training does
    dup = p.predict(np.array([0, 3]), np.array([5, 2, 5]), np.array([1.0, 2.0, 1.0], np.float32), 3)
    one = p.predict(np.array([0, 2]), np.array([2, 5]), np.array([2.0, 2.0], np.float32), 3)
    np.testing.assert_array_equal(dup[0], one[0])


def test_forest_quality_and_thresholds(small_forest):
    (xp, xi, xv), (yp, yi), d, L = topics()
    f = small_forest[0]
    assert np.all(np.abs(f["we_value"]) >= 0.1)
    p = LabelTreePredictor(f, d, L, 1.0, "squared_hinge", 10)
    lab, _ = p.predict(xp[200:] - xp[200], xi[xp[200]:], xv[xp[200]:], 1)
    truth = [set(yi[yp[r]:yp[r + 1]].tolist()) for r in range(200, 300)]
    p1 = np.mean([lab[r, 0] in truth[r] for r in range(100)])
    assert p1 > 0.6, p1  # the most frequent label alone scores about 0.15
    loose = train_forest(xp, xi, xv, yp, yi, d, L, [0], max_leaf=3, seed=4,
                         weight_threshold=0.0)
    assert len(loose["we_value"]) > len(split_trees(f)[0]["we_value"])


def test_trees_depend_only_on_seed_and_tree_id():
    (xp, xi, xv), (yp, yi), d, L = topics(seed=3)
    both = train_forest(xp, xi, xv, yp, yi, d, L, [0, 1], max_leaf=4, seed=9)
    one = train_forest(xp, xi, xv, yp, yi, d, L, [1], max_leaf=4, seed=9)
    t1 = split_trees(both)[1]
    for key in FOREST_KEYS:
        np.testing.assert_array_equal(t1[key], one[key], err_msg=key)
    merged = sort_forest(concat_forests([one, split_trees(both)[0]]))
    for key in FOREST_KEYS:
        np.testing.assert_array_equal(merged[key], both[key], err_msg=key)
    other = train_forest(xp, xi, xv, yp, yi, d, L, [1], max_leaf=4, seed=10)
    assert not all(np.array_equal(other[k], one[k]) for k in FOREST_KEYS)


def test_corrupt_forests_are_rejected(small_forest):
    f, _, d, L = small_forest
    for key, change in [("child_index", lambda a: np.where(a == a.max(), 0, a)),
                        ("leaf_label", lambda a: a + L),
                        ("wf_feature", lambda a: a[::-1].copy()),
                        ("we_slot", lambda a: a + 100),
                        ("we_value", lambda a: np.where(a == a[0], np.nan, a))]:
        bad = dict(f, **{key: change(f[key])})
        with pytest.raises(ValueError):
            LabelTreePredictor(bad, d, L, 1.0, "squared_hinge", 10)
    with pytest.raises(ValueError, match="loss"):
        LabelTreePredictor(f, d, L, 1.0, "hinge", 10)
    with pytest.raises(ValueError, match="beam_width"):
        LabelTreePredictor(f, d, L, 1.0, "logistic", 0)


@pytest.mark.parametrize("check_entries", [1, 7, 1 << 24])
def test_weight_checks_in_ranges_catch_what_one_pass_catches(small_forest, monkeypatch,
                                                             check_entries):
    """The classifier checks run over ranges of whole features (a forest of several hundred
    million entries is not checked with entry-sized temporaries); a fault on either side of
    a range's edge is found whatever the range size."""
    import sparkxml_kernels.labeltree.predictor as pr

    monkeypatch.setattr(pr, "CHECK_ENTRIES", check_entries)
    f, _, d, L = small_forest
    LabelTreePredictor(f, d, L, 1.0, "squared_hinge", 10)
    node = np.repeat(np.arange(len(f["wf_indptr"]) - 1), np.diff(f["wf_indptr"]))
    same = np.flatnonzero(np.diff(node) == 0)
    for j in (same[0], same[len(same) // 2], same[-1]):
        wf = f["wf_feature"].copy()
        wf[j + 1] = wf[j]
        with pytest.raises(ValueError, match="rise strictly"):
            LabelTreePredictor(dict(f, wf_feature=wf), d, L, 1.0, "squared_hinge", 10)
    slots = np.maximum(np.diff(f["child_indptr"]), np.diff(f["leaf_indptr"]))
    entry_node = np.repeat(node, np.diff(f["we_indptr"]))
    for e in (0, len(entry_node) // 2, len(entry_node) - 1):
        slot = f["we_slot"].copy()
        slot[e] = slots[entry_node[e]]
        with pytest.raises(ValueError, match="we_slot"):
            LabelTreePredictor(dict(f, we_slot=slot), d, L, 1.0, "squared_hinge", 10)
        value = f["we_value"].copy()
        value[e] = np.inf
        with pytest.raises(ValueError, match="non-finite"):
            LabelTreePredictor(dict(f, we_value=value), d, L, 1.0, "squared_hinge", 10)


def test_bad_params_and_inputs(small_forest):
    (xp, xi, xv), (yp, yi), d, L = topics(n=20)
    for kw, word in [({"loss": "hinge"}, "loss"), ({"branch": 1}, "branch"),
                     ({"max_leaf": 0}, "max_leaf"), ({"C": 0}, "C"),
                     ({"weight_threshold": -1}, "weight_threshold")]:
        with pytest.raises(ValueError, match=word):
            train_forest(xp, xi, xv, yp, yi, d, L, [0], **kw)
    f, _, d, L = small_forest
    p = LabelTreePredictor(f, d, L, 1.0, "squared_hinge", 10)
    with pytest.raises(ValueError, match="column index"):
        p.predict(np.array([0, 1]), np.array([d]), np.array([1.0], np.float32), 3)
    with pytest.raises(ValueError, match="NaN"):
        p.predict(np.array([0, 1]), np.array([0]), np.array([np.nan], np.float32), 3)


def test_rows_without_labels_and_labels_without_rows():
    (xp, xi, xv), (yp, yi), d, L = topics(n=50)
    yp2 = yp.copy()
    yp2[1:3] = yp[0]  # rows 0 and 1 lose their labels
    yi2 = yi[yp[2] - yp[0]:] if False else np.concatenate([yi[yp[2]:]])
    yp2 = np.concatenate([[0, 0, 0], yp[3:] - yp[2]])
    f = train_forest(xp, xi, xv, yp2, yi2, d, L + 5, [0], max_leaf=4)
    assert set(f["leaf_label"].tolist()) <= set(yi2.tolist())
    assert len(f["leaf_label"]) == len(np.unique(yi2))
    empty = train_forest(xp, xi, xv, np.zeros(51, np.int64), np.zeros(0, np.int32), d, 3, [0])
    out = LabelTreePredictor(empty, d, 3, 1.0, "squared_hinge", 10).predict(xp, xi, xv, 2)
    assert (out[0] == -1).all()


def test_kernel_takes_contiguous_arrays(small_forest):
    f, (xp, xi, xv), d, L = small_forest
    lab, sc = predict_kernel(xp, xi, xv, d, L, 1.0, 0, 10, 3, *(f[k] for k in FOREST_KEYS[1:]))
    assert lab.shape == (len(xp) - 1, 3) and (sc[:, 0] > 0).all()


@pytest.mark.parametrize("bias", [1.0, 0.0])
def test_normalised_rows_match_the_scipy_twin_bit_for_bit(bias):
    from sparkxml_kernels.labeltree.data import normalised_rows, normalised_rows_naive
    rng = np.random.default_rng(3)
    n, d = 3000, 500
    lens = rng.integers(0, 30, n)
    lens[::37] = 0  # empty rows: the bias alone
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=ptr[1:])
    idx = np.concatenate([np.sort(rng.choice(d, k, replace=False)) for k in lens])
    val = rng.normal(size=idx.size) * rng.choice([1e-3, 1.0, 1e3], idx.size)
    val[::41] = 0.0  # explicit zeros are dropped, as scipy's product drops them
    val[ptr[5]:ptr[6]] = 0.0  # a zero row
    got = normalised_rows(ptr, idx.astype(np.int32), val, d, bias)
    want = normalised_rows_naive(ptr, idx.astype(np.int32), val, d, bias)
    assert got.shape == want.shape == (n, d + 1)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data.view(np.int64), want.data.view(np.int64))
    # unsorted or repeated indices take the naive path, with the same result
    idx2 = idx.astype(np.int32).copy()
    r = int(np.flatnonzero(lens >= 2)[0])
    idx2[ptr[r]:ptr[r] + 2] = idx2[ptr[r]]
    got = normalised_rows(ptr.copy(), idx2.copy(), val.copy(), d, bias)
    assert (got != normalised_rows_naive(ptr.copy(), idx2.copy(), val.copy(), d, bias)).nnz == 0
