"""PfastreXML kernels (propensity-weighted DCG trees, tail classifiers, reranking) against their
plain-Python twins and the authors' trees. No Spark."""
from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest
from test_fastxml_kernels import _rows_of, assert_forest_equal, bibtex_train, make_data

from sparkxml_kernels import load_model, metrics
from sparkxml_kernels.fastxml import FastXMLPredictor, train_forest
from sparkxml_kernels.fastxml.naive import train_forest_naive
from sparkxml_kernels.fastxml.ndcg import discount_tables, optimize_ndcg, optimize_ndcg_naive
from sparkxml_kernels.fastxml.pfastre import (
    PfastreXMLPredictor,
    propensity_weights,
    rerank_naive,
    tail_centroids,
    tail_centroids_naive,
)
from sparkxml_kernels.fastxml.predictor import predict_naive

PF_TREES = os.path.join(os.path.dirname(__file__), "data", "pfastrexml_cpp_bibtex_trees.json.gz")


def _weights(data):
    return propensity_weights(data[3], data[4], data[6])


def test_propensity_weights():
    Yi = np.array([0, 3, 4, 4, 6], np.int64)
    Yl = np.array([0, 2, 2, 2, 0, 1], np.int32)  # label 2 repeated in row 0 counts once
    w = propensity_weights(Yi, Yl, 4, A=0.55, B=1.5)
    want = metrics.inverse_propensities([2, 1, 2, 0], 4, 0.55, 1.5).astype(np.float32)
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w, want)
    assert w[3] > w[1] > w[0] == w[2]  # rarer labels weigh more
    with pytest.raises(ValueError, match="propensityA=0.55, propensityB=0.0"):
        propensity_weights(Yi, Yl, 4, A=0.55, B=0.0)  # label 3 has no point: (0 + 0)^-A


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_dcg_step_matches_naive(seed):
    Yi, Yl, L = (make_data(seed, n=40)[i] for i in (3, 4, 6))
    rng = np.random.default_rng(seed)
    wt = rng.uniform(1.0, 4.0, L).astype(np.float32)
    rows = np.arange(40)
    side = rng.choice([-1, 1], 40)
    sets = [Yl[Yi[r]:Yi[r + 1]].tolist() for r in rows]
    for normalise in (True, False):
        ok, got = optimize_ndcg(Yi, Yl, rows, side, L, label_weight=wt, normalise=normalise)
        disc, csum = discount_tables(L, max(len(s) for s in sets), normalise)
        ok_n, want = optimize_ndcg_naive(sets, side.tolist(), disc, csum,
                                         {lab: np.float32(wt[lab]) for lab in range(L)})
        assert ok == ok_n and got.tolist() == want
    assert np.all(discount_tables(L, 3, False)[1] == 1.0)


@pytest.mark.parametrize("seed,max_leaf,labels_per_leaf", [(0, 3, 2), (1, 6, 4)])
def test_pfastre_tree_matches_naive_builder(seed, max_leaf, labels_per_leaf):
    data = make_data(seed)
    kw = dict(seed=seed, max_leaf=max_leaf, labels_per_leaf=labels_per_leaf, bias=0.5,
              label_weight=_weights(data), normalise_dcg=False)
    got = train_forest(*data, tree_ids=[0, 3], **kw)
    assert_forest_equal(got, train_forest_naive(*data, tree_ids=[0, 3], **kw))
    # weights change the trees: unit weights with nDCG give FastXML's forest instead
    plain = train_forest(*data, tree_ids=[0, 3], seed=seed, max_leaf=max_leaf,
                         labels_per_leaf=labels_per_leaf, bias=0.5)
    assert not (np.array_equal(plain["children"], got["children"])
                and np.array_equal(plain["leaf_score"], got["leaf_score"]))
    # unit label weights are FastXML exactly
    ones = train_forest(*data, tree_ids=[0, 3], seed=seed, max_leaf=max_leaf,
                        labels_per_leaf=labels_per_leaf, bias=0.5,
                        label_weight=np.ones(data[6], np.float32))
    assert_forest_equal(ones, plain)


def test_leaf_scores_are_weighted_means():
    data = make_data(7, n=12)
    w = _weights(data)
    f = train_forest(*data, tree_ids=[0], max_leaf=20, label_weight=w, normalise_dcg=False)
    Yl = data[4]
    assert f["children"].tolist() == [[-1, -1]]
    got = dict(zip(f["leaf_label"].tolist(), f["leaf_score"].tolist()))
    want = {lab: float(np.float32(w[lab] * np.sum(Yl == lab) / 12)) for lab in set(Yl.tolist())}
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-6)
    assert np.all(np.diff(f["leaf_score"]) <= 0)


def test_train_forest_rejects_bad_label_weights():
    data = make_data(3, n=20)
    with pytest.raises(ValueError, match="label_weight has 3 entries"):
        train_forest(*data, tree_ids=[0], label_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite values > 0"):
        train_forest(*data, tree_ids=[0], label_weight=np.zeros(data[6]))


def test_tail_centroids_match_naive_and_are_label_means():
    data = make_data(5, n=60, d=25, n_labels=9)
    Xi, Xf, Xv, Yi, Yl, d, L = data
    got = tail_centroids(Xi, Xf, Xv, Yi, Yl, d, L, 1.0)
    want = tail_centroids_naive(_rows_of(Xi, Xf, Xv), [Yl[Yi[r]:Yi[r + 1]].tolist()
                                                       for r in range(60)], d, L, 1.0)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    # what they are: means of the unit-normalised (bias-extended) rows carrying the label
    X = np.zeros((60, d + 1))
    for r in range(60):
        X[r, Xf[Xi[r]:Xi[r + 1]]] = Xv[Xi[r]:Xi[r + 1]]
    X[:, d] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    for lab in range(L):
        rows = [r for r in range(60) if lab in Yl[Yi[r]:Yi[r + 1]]]
        dense = np.zeros(d + 1)
        a, b = got["tail_indptr"][lab], got["tail_indptr"][lab + 1]
        dense[got["tail_index"][a:b]] = got["tail_value"][a:b]
        np.testing.assert_allclose(dense, X[rows].mean(axis=0) if rows else 0.0, atol=1e-6)


def _pf_model(seed=21, n=150, d=40, L=30, trees=5):
    data = make_data(seed, n=n, d=d, n_labels=L)
    w = _weights(data)
    forest = train_forest(*data, tree_ids=range(trees), max_leaf=8, labels_per_leaf=6,
                          label_weight=w, normalise_dcg=False)
    arrays = dict(forest, **tail_centroids(*data[:5], d, L, 1.0))
    return data, arrays


@pytest.mark.parametrize("k,cands,alpha", [(3, 1000, 0.8), (7, 4, 0.5), (2, 30, 1.0)])
def test_pfastre_predictor_matches_naive_rerank(k, cands, alpha):
    data, arrays = _pf_model()
    d, L = data[5], data[6]
    test = make_data(22, n=70, d=d, n_labels=L)
    pred = PfastreXMLPredictor(arrays, d, L, 1.0, gamma=30.0, alpha=alpha, num_candidates=cands)
    labels, scores = pred.predict(test[0], test[1], test[2], k)
    # the trees' scores of every label (k = L), then the naive reranking
    pl, ps = predict_naive(arrays, d, L, 1.0, _rows_of(*test[:3]), L)
    ptr, idx, val = arrays["tail_indptr"], arrays["tail_index"], arrays["tail_value"]
    cent = {lab: dict(zip(idx[ptr[lab]:ptr[lab + 1]].tolist(),
                          val[ptr[lab]:ptr[lab + 1]].astype(float).tolist())) for lab in range(L)}
    rows = _rows_of(*test[:3])
    for r in range(70):
        pf = {int(a): float(b) for a, b in zip(pl[r], ps[r]) if a >= 0}
        want = rerank_naive(pf, rows[r], cent, d, 1.0, k, cands, 30.0, alpha)
        assert labels[r, :len(want)].tolist() == [lab for lab, _ in want], r
        np.testing.assert_allclose(scores[r, :len(want)], [s for _, s in want], rtol=2e-5)
        assert np.all(labels[r, len(want):] == -1)
    assert np.all(np.diff(scores, axis=1) <= 0)
    # without the tail classifiers it is FastXML's predictor on the same trees (PfastXML)
    off = PfastreXMLPredictor(arrays, d, L, 1.0, tail_classifiers=False)
    for a, b in zip(off.predict(*test[:3], k), FastXMLPredictor(arrays, d, L, 1.0)
                    .predict(*test[:3], k)):
        np.testing.assert_array_equal(a, b)


def test_pfastre_predictor_validation_and_loading(tmp_path):
    from sparkxml_kernels.persist import ModelFormatError, metadata_json, save_directory

    data, arrays = _pf_model(trees=2)
    d, L = data[5], data[6]
    with pytest.raises(ValueError, match="gamma"):
        PfastreXMLPredictor(arrays, d, L, 1.0, gamma=0.0)
    with pytest.raises(ValueError, match="alpha"):
        PfastreXMLPredictor(arrays, d, L, 1.0, alpha=1.5)
    no_tail = dict(arrays, tail_indptr=np.zeros(0, np.int64), tail_index=np.zeros(0, np.int32),
                   tail_value=np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="without tail classifiers"):
        PfastreXMLPredictor(no_tail, d, L, 1.0)
    with pytest.raises(ValueError, match="tail"):
        PfastreXMLPredictor(dict(arrays, tail_index=arrays["tail_index"] + d + 1), d, L, 1.0)
    nan = data[2].copy()
    nan[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PfastreXMLPredictor(arrays, d, L, 1.0).predict(data[0], data[1], nan, 5)
    # load_model reads the params from the metadata
    path = str(tmp_path / "m")
    saved = dict(arrays, n_features=np.array(d), n_labels=np.array(L), bias=np.array(1.0),
                 inv_prop=_weights(data))
    meta = metadata_json("sparkxml.fastxml.pfastrexml.PfastreXMLModel", "uid", {"alpha": 0.5},
                         {"gamma": 30.0, "alpha": 0.8, "numCandidates": 1000,
                          "tailClassifiers": True}, "pfastrexml")
    save_directory(path, meta, saved, overwrite=False)
    loaded = load_model(path)
    assert isinstance(loaded.predictor, PfastreXMLPredictor) and loaded.alpha == 0.5
    want = PfastreXMLPredictor(arrays, d, L, 1.0, alpha=0.5).predict(*data[:3], 5)
    for a, b in zip(loaded.predictor.predict(*data[:3], 5), want):
        np.testing.assert_array_equal(a, b)
    bad = str(tmp_path / "bad")
    save_directory(bad, meta, dict(saved, tail_indptr=saved["tail_indptr"][:-1]),
                   overwrite=False)
    with pytest.raises(ModelFormatError, match="inconsistent"):
        load_model(bad)


def test_seed_zero_grows_the_authors_pfastrexml_trees_on_bibtex():
    """Trees 0 and 1 at seed 0 equal the authors' ``PfastreXML_train -s 0`` trees (given the
    same float32 inverse propensities, A=0.55, B=1.5), node for node, leaf scores included.
    The fixture is their trees' fingerprint, written by
    ``benchmarks/fastxml_vs_cpp_trees.py --algo pfastrexml --write-fixture`` (which compares
    all 50 trees)."""
    from sparkxml_kernels.formats import read_xc

    with gzip.open(PF_TREES, "rt") as fh:
        fixture = json.load(fh)["trees"]
    Xi, Xf, Xv, Yi, Yl, d, n_labels = read_xc(bibtex_train())[:7]
    ids = sorted(int(t) for t in fixture)
    forest = train_forest(Xi, Xf, Xv, Yi, Yl, d, n_labels, ids, seed=0,
                          label_weight=propensity_weights(Yi, Yl, n_labels),
                          normalise_dcg=False)
    wp, lp = forest["w_indptr"], forest["leaf_indptr"]
    for pos, t in enumerate(ids):
        want = fixture[str(t)]
        a, b = forest["tree_offsets"][pos], forest["tree_offsets"][pos + 1]
        assert forest["children"][a:b].tolist() == want["children"], t
        assert [int(wp[g + 1] - wp[g]) for g in range(a, b)] == want["w_count"], t
        assert [int(forest["w_index"][wp[g]:wp[g + 1]].sum()) for g in range(a, b)] == \
            want["w_index_sum"], t
        # theirs: sums of numbers printed with 6 significant digits
        np.testing.assert_allclose([float(forest["w_value"][wp[g]:wp[g + 1]].astype(float).sum())
                                    for g in range(a, b)], want["w_value_sum"],
                                   rtol=1e-4, atol=1e-4)
        assert [lab for g in range(a, b)
                for lab in sorted(forest["leaf_label"][lp[g]:lp[g + 1]].tolist())] == \
            want["leaf_label"], t
        np.testing.assert_allclose([float(forest["leaf_score"][lp[g]:lp[g + 1]].astype(float)
                                          .sum()) for g in range(a, b)],
                                   want["leaf_score_sum"], rtol=1e-5, atol=1e-6)
