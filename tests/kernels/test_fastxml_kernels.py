"""FastXML kernels against their plain-Python twins, plus invariants of trees and predictions.

Everything here runs on small generated data (plus Bibtex where the research data is found:
tests/_data.py) and needs no Spark.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import scipy.sparse as sp
from _data import data_path

from sparkxml_kernels.fastxml import FastXMLPredictor, concat_forests, sort_forest, train_forest
from sparkxml_kernels.fastxml._common import MT19937, MT_STATE, mt_next, mt_seed, tree_seed
from sparkxml_kernels.fastxml._stlsort import stl_sort_desc, stl_sort_desc_naive
from sparkxml_kernels.fastxml.forest import FOREST_KEYS, take_trees
from sparkxml_kernels.fastxml.logreg import l1r_lr
from sparkxml_kernels.fastxml.naive import (
    l1r_lr_naive,
    l1r_lr_objective,
    l1r_lr_reference,
    train_forest_naive,
)
from sparkxml_kernels.fastxml.ndcg import discount_tables, optimize_ndcg, optimize_ndcg_naive
from sparkxml_kernels.fastxml.predictor import predict_naive


def bibtex_train():
    """The Bibtex training file of the XC split (skips where the research data is missing)."""
    return data_path("bibtex", "xc_split", "bibtex_train.txt")


def make_data(seed, n=80, d=30, n_labels=12, density=0.2, empty_rows=0.1):
    """Random sparse features with labels loosely tied to them (so splits are not pure noise)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density, format="csr", random_state=seed, dtype=np.float32)
    X.data = (np.round(X.data * 4) / 2).astype(np.float32)
    proto = rng.integers(0, n_labels, size=d)
    labels, indptr = [], [0]
    for r in range(n):
        if rng.random() < empty_rows:
            indptr.append(len(labels))
            continue
        feats = X.indices[X.indptr[r]:X.indptr[r + 1]]
        cand = set(proto[feats[:2]].tolist()) | set(rng.integers(0, n_labels, 2).tolist())
        labs = sorted(cand)[: rng.integers(1, 4)]
        labels += labs
        indptr.append(len(labels))
    return (X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data,
            np.array(indptr, np.int64), np.array(labels, np.int32), d, n_labels)


def assert_forest_equal(a, b):
    assert set(a) == set(b)
    for key in FOREST_KEYS:
        assert a[key].dtype == b[key].dtype, key
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


# --------------------------------------------------------------------------- PRNG


def test_mt19937_is_std_mt19937_and_twins_agree():
    # C++ [rand.predef]: the 10000th output of a default-constructed std::mt19937 (seed 5489)
    py = MT19937(5489)
    out = [py.next() for _ in range(10000)]
    assert out[-1] == 4123659995
    mt = np.empty(MT_STATE, np.uint32)
    mt_seed(mt, 5489)
    assert [int(mt_next(mt)) for _ in range(10000)] == out
    # twin agreement past several regenerations, and the derived draws
    mt_seed(mt, tree_seed(7, 3))
    py = MT19937(tree_seed(7, 3))
    for m in (1, 2, 3, 10, 1000, 2**31 - 1):
        for _ in range(400):
            r = int(mt_next(mt))
            assert r == py.next() and 0 <= r < 2**32
    assert py.below(7) == int(mt_next(mt)) % 7
    # seed 0 numbers the trees as the authors do; other seeds give other trees
    assert [tree_seed(0, t) for t in range(3)] == [0, 1, 2]
    assert len({tree_seed(s, t) for s in range(3) for t in range(50)}) == 150


# --------------------------------------------------------------------------- rankings


def _tie_heavy(rng, n, kind):
    if kind == 0:
        return rng.integers(0, 3, n).astype(np.float32)
    if kind == 1:
        return (rng.integers(0, 40, n) / 7).astype(np.float32)
    if kind == 2:
        return np.where(rng.random(n) < 0.7, 0, rng.random(n)).astype(np.float32)
    return np.sort(rng.integers(0, 5, n))[::(1 if n % 2 else -1)].astype(np.float32)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 16, 17, 33, 159, 1000])
def test_stl_sort_matches_its_twin_and_sorts(n):
    rng = np.random.default_rng(n)
    stack = np.empty(192, np.int64)
    for kind in range(4):
        keys = _tie_heavy(rng, n, kind)
        ids = np.arange(n, dtype=np.int32)
        k2 = keys.copy()
        stl_sort_desc(ids, k2, n, stack)
        want = stl_sort_desc_naive([(i, float(v)) for i, v in enumerate(keys)])
        assert ids.tolist() == [i for i, _ in want]
        assert np.all(np.diff(k2) <= 0) and np.array_equal(k2, keys[ids])
        assert sorted(ids.tolist()) == list(range(n))


def test_stl_sort_is_not_stable_like_libstdcxx():
    # with all keys equal, libstdc++'s median-of-three partition swaps entries around, so tied
    # ids do not stay in input order once there are more than 16 of them
    n = 40
    ids = np.arange(n, dtype=np.int32)
    stl_sort_desc(ids, np.zeros(n, np.float32), n, np.empty(192, np.int64))
    assert ids.tolist() != list(range(n)) and sorted(ids.tolist()) == list(range(n))


# --------------------------------------------------------------------------- nDCG


@pytest.mark.parametrize("seed", range(6))
def test_ndcg_kernel_matches_naive(seed):
    rng = np.random.default_rng(seed)
    Xi, _, _, Yi, Yl, _, L = make_data(seed, n=60, n_labels=9)
    rows = np.sort(rng.choice(60, 40, replace=False))
    side = rng.choice([-1, 1], size=rows.size)
    ok, got = optimize_ndcg(Yi, Yl, rows, side, L)
    sets = [Yl[Yi[r]:Yi[r + 1]].tolist() for r in rows]
    disc, csum = discount_tables(L, max(len(s) for s in sets))
    ok_n, want = optimize_ndcg_naive(sets, side.tolist(), disc, csum)
    assert ok == ok_n
    np.testing.assert_array_equal(got, np.array(want, np.int8))


def test_ndcg_ties_and_degenerate_splits():
    # two points with identical label sets cannot be told apart: every step is a tie
    Yi = np.array([0, 2, 4], np.int64)
    Yl = np.array([0, 1, 0, 1], np.int32)
    ok, side = optimize_ndcg(Yi, Yl, [0, 1], [1, -1], 2)
    ok_n, side_n = optimize_ndcg_naive([[0, 1], [0, 1]], [1, -1], *discount_tables(2, 2))
    assert ok == ok_n and side.tolist() == side_n
    # points without labels never move and give a zero gain
    Yi = np.array([0, 0, 0, 1], np.int64)
    Yl = np.array([0], np.int32)
    ok, side = optimize_ndcg(Yi, Yl, [0, 1, 2], [1, -1, -1], 1)
    assert side.tolist()[:2] == [1, -1]
    # everything on one side is a failure
    ok, side = optimize_ndcg(np.array([0, 1, 2], np.int64), np.array([0, 0], np.int32), [0, 1],
                             [1, 1], 1)
    assert not ok


def test_discount_tables():
    disc, csum = discount_tables(4, 3)
    assert disc[0] == 1.0 and disc[2] == 1.0 / math.log2(4)
    assert csum[0] == 1.0 and csum[2] == disc[0] + disc[1]


# --------------------------------------------------------------------------- L1 logistic regression


def _lr_problem(trial):
    rng = np.random.default_rng(100 + trial)
    n, m = int(rng.integers(6, 50)), int(rng.integers(2, 25))
    X = sp.random(n, m, 0.3, format="csc", random_state=trial, dtype=np.float32)
    X.data = (np.round(X.data * 4) / 2).astype(np.float32)
    X = sp.hstack([X, np.ones((n, 1), np.float32)]).tocsc()
    X.sort_indices()
    y = rng.choice([-1, 1], n)
    y[0], y[1] = 1, -1
    C = np.where(y > 0, 1.0 / np.mean(y > 0), 1.0 / np.mean(y < 0))
    return X, y, C


@pytest.mark.parametrize("trial", range(12))
def test_l1r_lr_matches_naive_twin(trial):
    X, y, C = _lr_problem(trial)
    w = l1r_lr(X, y, C, seed=trial)
    cols = [[(int(X.indices[p]), float(X.data[p])) for p in range(X.indptr[j], X.indptr[j + 1])]
            for j in range(X.shape[1])]
    C32 = [float(c) for c in np.float32(C)]
    w_naive = l1r_lr_naive(cols, y.tolist(), C32, MT19937(trial))
    np.testing.assert_array_equal(w, np.array(w_naive))


@pytest.mark.parametrize("trial", range(12))
def test_l1r_lr_solution_near_optimum(trial):
    X, y, C = _lr_problem(trial)
    w = l1r_lr(X, y, C, seed=trial)
    w_ref = l1r_lr_reference(X, y, C, iters=5000)
    f, f_ref = l1r_lr_objective(X, y, C, w), l1r_lr_objective(X, y, C, w_ref)
    f0 = l1r_lr_objective(X, y, C, np.zeros_like(w))
    assert f <= f0
    # newGLMNET stops at 1% of the initial gradient violation: close, not exact
    assert f - f_ref <= 5e-3 * abs(f_ref) + 1e-9
    # KKT, loosely: no zero weight with a loss gradient far outside [-1, 1]
    z = X.toarray().astype(np.float64) @ w
    grad = X.T @ (-C * y / (1.0 + np.exp(y * z)))
    assert np.all(np.abs(grad[w == 0]) <= 1.5)


# --------------------------------------------------------------------------- trees


@pytest.mark.parametrize("seed,max_leaf", [(0, 3), (1, 10), (2, 1), (3, 5)])
def test_tree_matches_naive_builder(seed, max_leaf):
    data = make_data(seed)
    kw = dict(seed=seed, max_leaf=max_leaf, labels_per_leaf=4, log_loss_coeff=1.5, bias=0.5)
    got = train_forest(*data, tree_ids=[0, 4], **kw)
    want = train_forest_naive(*data, tree_ids=[0, 4], **kw)
    assert_forest_equal(got, want)
    assert got["tree_offsets"][-1] > 4


def test_tree_matches_naive_builder_on_bibtex_slice():
    from sparkxml_kernels.formats import read_xc

    Xi, Xf, Xv, Yi, Yl, d, n_labels = read_xc(bibtex_train())[:7]
    n = 120  # the first 120 points
    data = (Xi[:n + 1], Xf[:Xi[n]], Xv[:Xi[n]], Yi[:n + 1], Yl[:Yi[n]], d, n_labels)
    assert_forest_equal(train_forest(*data, tree_ids=[5]), train_forest_naive(*data, tree_ids=[5]))


def _leaf_members(forest, data, n_features, bias):
    pred = FastXMLPredictor(forest, n_features, data[6], bias)
    return pred, pred.apply(data[0], data[1], data[2])


def test_tree_invariants():
    data = make_data(11, n=150, d=40, n_labels=15)
    Xi, Xf, Xv, Yi, Yl, d, L = data
    forest = train_forest(*data, tree_ids=[0, 1, 2], max_leaf=6, labels_per_leaf=3)
    pred, leaves = _leaf_members(forest, data, d, 1.0)
    off, ch = forest["tree_offsets"], forest["children"]
    for t in range(3):
        a, b = off[t], off[t + 1]
        is_leaf = ch[a:b, 0] < 0
        # children point forward; every node except the root has exactly one parent
        inner = np.flatnonzero(~is_leaf)
        kids = ch[a:b][inner].ravel()
        assert np.all(kids > np.repeat(inner, 2)) and sorted(kids.tolist()) == list(range(1, b - a))
        assert np.all(np.diff(forest["w_indptr"][a:b + 1])[is_leaf] == 0)
        # every training point reaches exactly one leaf, and every leaf gets a point
        reached = leaves[:, t]
        assert np.all(is_leaf[reached])
        assert set(np.unique(reached).tolist()) == set(np.flatnonzero(is_leaf).tolist())
        for node in np.flatnonzero(is_leaf):
            members = np.flatnonzero(reached == node)
            counts = {}
            for r in members:
                for lab in Yl[Yi[r]:Yi[r + 1]]:
                    counts[int(lab)] = counts.get(int(lab), 0) + 1
            best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
            g = a + node
            s, e = forest["leaf_indptr"][g], forest["leaf_indptr"][g + 1]
            assert forest["leaf_label"][s:e].tolist() == [lab for lab, _ in best]
            np.testing.assert_array_equal(forest["leaf_score"][s:e],
                                          np.array([c / len(members) for _, c in best],
                                                   np.float32))
            # a leaf holds more than max_leaf points only when the split failed
            if len(members) > 6:
                assert len(members) < 150
        # weights: sorted feature ids within a node, bias id = d, no zeros
        for g in range(a, b):
            s, e = forest["w_indptr"][g], forest["w_indptr"][g + 1]
            idx = forest["w_index"][s:e]
            assert np.all(np.diff(idx) > 0) and (idx.size == 0 or idx.max() <= d)
            assert np.all(forest["w_value"][s:e] != 0)


def test_determinism_and_tree_independence():
    data = make_data(5, n=120)
    a = train_forest(*data, tree_ids=[0, 1, 2, 3], seed=9)
    b = train_forest(*data, tree_ids=[0, 1, 2, 3], seed=9)
    assert_forest_equal(a, b)
    # a tree is the same whichever other trees are trained with it, and in whatever order
    alone = train_forest(*data, tree_ids=[2], seed=9)
    assert_forest_equal(take_trees(a, [2]), alone)
    mixed = train_forest(*data, tree_ids=[3, 0], seed=9)
    assert_forest_equal(take_trees(a, [3, 0]), mixed)
    parts = concat_forests([train_forest(*data, tree_ids=[2, 0], seed=9),
                            train_forest(*data, tree_ids=[3, 1], seed=9)])
    assert_forest_equal(sort_forest(parts), a)
    # another seed gives another forest
    c = train_forest(*data, tree_ids=[0, 1, 2, 3], seed=10)
    assert not np.array_equal(a["w_value"], c["w_value"]) or \
        not np.array_equal(a["children"], c["children"])


@pytest.mark.parametrize("threads", [2, 3, 9])  # 9: more threads than trees
def test_threads_grow_the_same_forest_in_tree_order(threads):
    import threading

    data = make_data(6, n=150)
    ids = [5, 0, 3, 1, 7, 2]
    ref = train_forest(*data, tree_ids=ids, seed=4)
    seen, dones = set(), []

    def on_tree(done):
        seen.add(threading.get_ident())
        dones.append(done)

    got = train_forest(*data, tree_ids=ids, seed=4, n_threads=threads, on_tree=on_tree)
    assert_forest_equal(ref, got)
    assert dones == list(range(1, len(ids) + 1))
    assert len(seen) >= 1
    # PfastreXML's weighted DCG too
    w = np.linspace(0.5, 2.0, data[6]).astype(np.float32)
    kw = dict(seed=4, label_weight=w, normalise_dcg=False)
    assert_forest_equal(train_forest(*data, tree_ids=ids, **kw),
                        train_forest(*data, tree_ids=ids, n_threads=threads, **kw))
    with pytest.raises(ValueError, match="n_threads"):
        train_forest(*data, tree_ids=ids, n_threads=0)


def test_forest_helpers_edge_cases():
    empty = concat_forests([])
    assert empty["tree_ids"].size == 0 and empty["tree_offsets"].tolist() == [0]
    data = make_data(1, n=30)
    f = train_forest(*data, tree_ids=[])
    assert_forest_equal(f, empty)
    assert_forest_equal(sort_forest(concat_forests([f, f])), empty)


def test_small_and_label_free_training_sets():
    data = make_data(2, n=8)
    # N <= max_leaf: the root is the only node, a leaf with the mean label vector
    f = train_forest(*data, tree_ids=[0], max_leaf=10)
    assert f["children"].tolist() == [[-1, -1]]
    Yl = data[4]
    assert f["leaf_score"].size == len(set(Yl.tolist()))
    # no labels at all: splits still happen (random), every leaf is empty
    Xi, Xf, Xv, _, _, d, L = make_data(4, n=60)
    none = (Xi, Xf, Xv, np.zeros(61, np.int64), np.zeros(0, np.int32), d, L)
    f = train_forest(*none, tree_ids=[0, 1], max_leaf=5)
    assert f["leaf_label"].size == 0
    assert_forest_equal(f, train_forest_naive(*none, tree_ids=[0, 1], max_leaf=5))
    labels, scores = FastXMLPredictor(f, d, L, 1.0).predict(Xi, Xf, Xv, 3)
    assert np.all(labels == -1) and np.all(scores == 0)
    # no points
    f = train_forest(np.zeros(1, np.int64), [], [], np.zeros(1, np.int64), [], d, L, [0])
    assert f["children"].tolist() == [[-1, -1]] and f["leaf_label"].size == 0


def test_train_forest_validates_input():
    Xi, Xf, Xv, Yi, Yl, d, L = make_data(3, n=20)
    with pytest.raises(ValueError, match="column index"):
        train_forest(Xi, Xf, Xv, Yi, Yl, d - 1, L, [0])
    with pytest.raises(ValueError, match="column index"):
        train_forest(Xi, Xf, Xv, Yi, Yl, d, int(Yl.max()), [0])
    with pytest.raises(ValueError, match="indptr"):
        train_forest(Xi, Xf, Xv, Yi[:-1], Yl, d, L, [0])
    with pytest.raises(ValueError, match="tree_ids"):
        train_forest(Xi, Xf, Xv, Yi, Yl, d, L, [-1])
    bad = Xv.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        train_forest(Xi, Xf, bad, Yi, Yl, d, L, [0])


# --------------------------------------------------------------------------- prediction


def _rows_of(Xi, Xf, Xv):
    return [[(int(f), float(v)) for f, v in zip(Xf[Xi[r]:Xi[r + 1]], Xv[Xi[r]:Xi[r + 1]])]
            for r in range(len(Xi) - 1)]


@pytest.mark.parametrize("k", [1, 3, 7, 40])
def test_predictor_matches_naive(k):
    data = make_data(21, n=150, d=40, n_labels=30)
    forest = train_forest(*data, tree_ids=[0, 1, 2, 3, 4], max_leaf=8, labels_per_leaf=6)
    test = make_data(22, n=70, d=40, n_labels=30)
    pred = FastXMLPredictor(forest, 40, 30, 1.0)
    labels, scores = pred.predict(test[0], test[1], test[2], k)
    want_l, want_s = predict_naive(forest, 40, 30, 1.0, _rows_of(*test[:3]), k)
    assert labels.dtype == np.int32 and scores.dtype == np.float32
    assert labels.shape == (70, k)
    np.testing.assert_array_equal(labels, want_l)
    np.testing.assert_array_equal(scores, want_s)
    # best first, padding only at the end
    assert np.all(np.diff(scores, axis=1) <= 0)
    assert np.all((labels >= 0) == (scores > 0))
    if k == 40:
        assert np.any(labels[:, -1] == -1)  # at most 5 trees x 6 labels reachable


def test_predictor_tie_break_and_padding():
    # one tree, a root leaf with tied scores: the smaller label id comes first
    forest = {"tree_ids": np.array([0], np.int32), "tree_offsets": np.array([0, 1], np.int64),
              "children": np.array([[-1, -1]], np.int32), "w_indptr": np.zeros(2, np.int64),
              "w_index": np.zeros(0, np.int32), "w_value": np.zeros(0, np.float32),
              "leaf_indptr": np.array([0, 3], np.int64),
              "leaf_label": np.array([5, 2, 9], np.int32),
              "leaf_score": np.array([0.5, 0.5, 0.25], np.float32)}
    pred = FastXMLPredictor(forest, 3, 10, 1.0)
    labels, scores = pred.predict_csr(sp.csr_matrix((2, 3), dtype=np.float32), k=5)
    assert labels.tolist() == [[2, 5, 9, -1, -1]] * 2
    assert scores.tolist() == [[0.5, 0.5, 0.25, 0.0, 0.0]] * 2
    labels, scores = pred.predict(np.zeros(1, np.int64), [], [], 0)
    assert labels.shape == (0, 0)


def test_predictor_validation_and_persistence(tmp_path):
    from sparkxml_kernels.persist import metadata_json, save_directory

    data = make_data(31, n=100, d=20, n_labels=10)
    forest = train_forest(*data, tree_ids=[0, 1], max_leaf=5)
    pred = FastXMLPredictor(forest, 20, 10, 1.0)
    with pytest.raises(ValueError, match="column index 20"):
        pred.predict(np.array([0, 1], np.int64), np.array([20], np.int32),
                     np.array([1.0], np.float32), 3)
    with pytest.raises(ValueError, match="columns"):
        pred.predict_csr(sp.csr_matrix((1, 21), dtype=np.float32))
    broken = dict(forest, children=np.zeros_like(forest["children"]))
    with pytest.raises(ValueError, match="children"):
        FastXMLPredictor(broken, 20, 10, 1.0)
    with pytest.raises(ValueError, match="lack"):
        FastXMLPredictor({k: v for k, v in forest.items() if k != "w_value"}, 20, 10, 1.0)
    path = str(tmp_path / "model")
    arrays = dict(forest, n_features=np.array(20), n_labels=np.array(10), bias=np.array(1.0))
    save_directory(path, metadata_json("x.FastXMLModel", "uid", {}, {}, "fastxml"), arrays,
                   overwrite=False)
    loaded = FastXMLPredictor.from_directory(path, {})
    X = sp.csr_matrix((data[2], data[1], data[0]), shape=(100, 20))
    for a, b in zip(loaded.predict_csr(X, k=4), pred.predict_csr(X, k=4)):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- the authors' trees

CPP_TREES = os.path.join(os.path.dirname(__file__), "data", "fastxml_cpp_bibtex_trees.json")


def test_seed_zero_grows_the_authors_trees_on_bibtex():
    """Trees 0 and 1 at seed 0 equal the authors' C++ trees (``fastXML_train -s 0``), node for
    node. The fixture is their trees' fingerprint, written by
    ``benchmarks/fastxml_vs_cpp_trees.py --write-fixture`` (which compares all 50 trees)."""
    import json

    from sparkxml_kernels.formats import read_xc

    with open(CPP_TREES) as fh:
        fixture = json.load(fh)["trees"]
    Xi, Xf, Xv, Yi, Yl, d, n_labels = read_xc(bibtex_train())[:7]
    ids = sorted(int(t) for t in fixture)
    forest = train_forest(Xi, Xf, Xv, Yi, Yl, d, n_labels, ids, seed=0)
    for pos, t in enumerate(ids):
        want = fixture[str(t)]
        a, b = forest["tree_offsets"][pos], forest["tree_offsets"][pos + 1]
        assert forest["children"][a:b].tolist() == want["children"], t
        wp, lp = forest["w_indptr"], forest["leaf_indptr"]
        count = [int(wp[g + 1] - wp[g]) for g in range(a, b)]
        assert count == want["w_count"], t
        assert [int(forest["w_index"][wp[g]:wp[g + 1]].sum()) for g in range(a, b)] == \
            want["w_index_sum"], t
        # theirs are sums of weights printed with 6 significant digits
        np.testing.assert_allclose([float(forest["w_value"][wp[g]:wp[g + 1]].astype(float).sum())
                                    for g in range(a, b)], want["w_value_sum"],
                                   rtol=1e-4, atol=1e-4)
        leaves = [lab for g in range(a, b)
                  for lab in sorted(forest["leaf_label"][lp[g]:lp[g + 1]].tolist())]
        assert leaves == want["leaf_label"], t
