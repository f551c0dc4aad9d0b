"""Metric kernels: hand-made cases, naive twins, LightGBM's NDCG/MAP on the same scores."""
import math

import numpy as np
import pytest
from _data import data_path

from sparkxml_kernels import metrics as M


def csr(rows):
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    return indptr, np.array([i for r in rows for i in r], np.int32)


def log2(x):
    return math.log2(x)


# ------------------------------------------------------------------------- multi-label
def test_inverse_propensities_formula():
    counts = np.array([0, 1, 10, 1000])
    N, A, B = 5000, 0.55, 1.5
    C = (math.log(N) - 1) * (B + 1) ** A
    expected = [1 + C * (c + B) ** -A for c in counts]
    np.testing.assert_allclose(M.inverse_propensities(counts, N), expected)
    np.testing.assert_allclose(M.inverse_propensities(counts, N, 0.6, 2.6),
                               [1 + (math.log(N) - 1) * 3.6 ** 0.6 * (c + 2.6) ** -0.6
                                for c in counts])
    w = M.inverse_propensities(counts, N)
    assert (np.diff(w) < 0).all()                        # rarer labels weigh more
    with pytest.raises(ValueError):
        M.inverse_propensities(counts, 0)


def test_hand_made_precision_ndcg_recall():
    Yp, Yi = csr([[1, 2], [3], [], [0, 1, 2, 3]])
    P = np.array([[2, 5, 1], [0, 4, -1], [1, 2, 3], [3, 3, 0]])
    # row 0: hits at 1 and 3; row 1: none; row 2: no labels; row 3: 3, repeat (miss), 0
    assert M.precision_at_k(P, Yp, Yi, 3) == pytest.approx((2 / 3 + 0 + 0 + 2 / 3) / 4)
    assert M.precision_at_k(P, Yp, Yi, 1) == pytest.approx((1 + 0 + 0 + 1) / 4)
    d = [1, 1 / log2(3), 1 / log2(4)]
    ndcg0 = (d[0] + d[2]) / (d[0] + d[1])                # IDCG@min(3, |y|=2)
    ndcg3 = (d[0] + d[2]) / sum(d)                       # IDCG@3 (|y| = 4)
    assert M.ndcg_at_k(P, Yp, Yi, 3) == pytest.approx((ndcg0 + 0 + 0 + ndcg3) / 4)
    assert M.recall_at_k(P, Yp, Yi, 3) == pytest.approx((1 + 0 + 0 + 2 / 4) / 4)
    # k larger than the predictions: padding counts as misses, P@k divides by k
    assert M.precision_at_k(P, Yp, Yi, 5) == pytest.approx((2 / 5 + 0 + 0 + 2 / 5) / 4)
    perfect = np.array([[1, 2, -1], [3, -1, -1], [-1, -1, -1], [0, 1, 2]])
    assert M.ndcg_at_k(perfect, Yp, Yi, 3) == pytest.approx(3 / 4)   # row 2 has no labels


def test_hand_made_psp_is_normalised_over_the_data_set():
    w = np.array([1.0, 2.0, 4.0, 8.0])
    Yp, Yi = csr([[0, 3], [1, 2]])
    P = np.array([[0, 1], [2, 1]])
    # row 0: hit label 0 (w 1), best = 8 + 1; row 1: hits 2 and 1 (4 + 2), best = 4 + 2
    k = 2
    assert M.psp_at_k(P, Yp, Yi, w, k) == pytest.approx((1 + 6) / (9 + 6))
    # per-row normalisation would give (1/9 + 1) / 2: not the XC repository's definition
    assert M.psp_at_k(P, Yp, Yi, w, k) != pytest.approx((1 / 9 + 1) / 2)
    z = 1 + 1 / log2(3)                                   # IDCG@2 for both rows
    num = (1 / z) + (4 + 2 / log2(3)) / z
    den = (8 + 1 / log2(3)) / z + (4 + 2 / log2(3)) / z
    assert M.psndcg_at_k(P, Yp, Yi, w, k) == pytest.approx(num / den)
    perfect = np.array([[3, 0], [2, 1]])
    assert M.psp_at_k(perfect, Yp, Yi, w, k) == pytest.approx(1.0)
    assert M.psndcg_at_k(perfect, Yp, Yi, w, k) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="inverse propensities"):
        M.xc_stats("pspAtK", P, Yp, Yi, k)
    with pytest.raises(ValueError, match="outside"):
        M.psp_at_k(P, Yp, Yi, w[:3], k)


def test_topk_matrix_inputs():
    expected = np.array([[3, 1, -1], [-1, -1, -1], [0, 2, 4]])
    assert np.array_equal(M.topk_matrix(np.array([[3, 1, -1, 7], [-1, -1, -1, -1],
                                                   [0, 2, 4, 5]]), 3), expected)
    assert np.array_equal(M.topk_matrix([[3, 1], [], [0, 2, 4, 5]], 3), expected)
    assert np.array_equal(M.topk_matrix(csr([[3, 1], [], [0, 2, 4, 5]]), 3), expected)
    with pytest.raises(ValueError):
        M.topk_matrix([[1]], 0)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("metric", M.XC_METRICS)
def test_xc_metrics_match_naive(seed, metric):
    rng = np.random.default_rng(seed)
    n, L = 80, 15
    rows = [list(rng.choice(L, size=rng.integers(0, 6), replace=False)) for _ in range(n)]
    Yp, Yi = csr(rows)
    P = rng.integers(-1, L, size=(n, 7))                  # -1 padding and repeats included
    w = M.inverse_propensities(np.bincount(Yi, minlength=L), n)
    for k in (1, 3, 5, 9):
        got = M.xc_stats(metric, P, Yp, Yi, k, w)
        ref = M.xc_stats_naive(metric, P, Yp, Yi, k, w)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
        v = M.xc_metric(metric, P, Yp, Yi, k, w)
        assert 0.0 <= v <= 1.0


def test_xc_stats_add_up_over_row_blocks():
    rng = np.random.default_rng(7)
    rows = [list(rng.choice(20, size=rng.integers(0, 5), replace=False)) for _ in range(50)]
    P = rng.integers(0, 20, size=(50, 5))
    w = rng.uniform(1, 5, 20)
    for metric in M.XC_METRICS:
        whole = np.array(M.xc_stats(metric, P, *csr(rows), 5, w))
        parts = np.array(M.xc_stats(metric, P[:20], *csr(rows[:20]), 5, w)) + \
            np.array(M.xc_stats(metric, P[20:], *csr(rows[20:]), 5, w))
        np.testing.assert_allclose(whole, parts)


# ------------------------------------------------------------------------- ranking
def test_ranking_hand_made():
    scores = np.array([0.9, 0.1, 0.5, 0.3, 2.0, 1.0, 0.0])
    rel = np.array([0, 2, 1, 0, 0, 0, 0])
    qid = np.array([5, 5, 5, 5, 9, 9, 9])        # query 9 has no relevant document
    # query 5 ranked: rel 0, 1, 0, 2
    d = [1 / log2(r + 2) for r in range(4)]
    dcg = (2 ** 1 - 1) * d[1] + (2 ** 2 - 1) * d[3]
    idcg = 3 * d[0] + 1 * d[1]
    assert M.per_query("ndcgAtK", scores, rel, qid, 4) == pytest.approx([dcg / idcg, 1.0])
    assert M.per_query("ndcgAtK", scores, rel, qid, 1) == pytest.approx([0.0, 1.0])
    ap = (1 / 2 + 2 / 4) / 2
    assert M.per_query("mapAtK", scores, rel, qid, 10) == pytest.approx([ap, 1.0])
    assert M.per_query("mapAtK", scores, rel, qid, 2) == pytest.approx([(1 / 2) / 2, 1.0])
    assert M.per_query("precisionAtK", scores, rel, qid, 2) == pytest.approx([0.5, 0.0])
    assert M.ranking_metric("ndcgAtK", scores, rel, qid, 4) == pytest.approx((dcg / idcg + 1) / 2)


def test_ranking_ties_keep_input_order():
    scores = np.array([1.0, 1.0, 1.0])
    assert M.per_query("precisionAtK", scores, [1, 0, 0], [0, 0, 0], 1)[0] == 1.0
    assert M.per_query("precisionAtK", scores, [0, 0, 1], [0, 0, 0], 1)[0] == 0.0


@pytest.mark.parametrize("metric", M.RANKING_METRICS)
def test_ranking_matches_naive(metric):
    rng = np.random.default_rng(11)
    n = 300
    qid = rng.integers(0, 25, n)                  # queries interleaved, not contiguous
    rel = rng.integers(0, 5, n) * (rng.random(n) < 0.4)
    scores = np.round(rng.normal(size=n), 1)      # ties
    for k in (1, 3, 10, 50):
        got = M.per_query(metric, scores, rel, qid, k)
        ref = M.per_query_naive(metric, scores, rel, qid, k)
        np.testing.assert_allclose(got, ref, rtol=1e-12)
        assert ((got >= 0) & (got <= 1)).all()


def test_lightgbm_ndcg_and_map_agree():
    lgb = pytest.importorskip("lightgbm")
    sp = pytest.importorskip("scipy.sparse")
    from sparkxml_kernels.formats import read_svmlight

    y, q, ip, ix, dv, d = read_svmlight(data_path("lightgbm_rank", "rank.train"),
                                        data_path("lightgbm_rank", "rank.train.query"))
    yt, qt, ipt, ixt, dvt, _ = read_svmlight(data_path("lightgbm_rank", "rank.test"),
                                             data_path("lightgbm_rank", "rank.test.query"), d)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(y), d))
    Xt = sp.csr_matrix((dvt, ixt, ipt), shape=(len(yt), d))
    train = lgb.Dataset(X, y, group=np.bincount(q))
    valid = lgb.Dataset(Xt, yt, group=np.bincount(qt), reference=train)
    evals = {}
    booster = lgb.train(dict(objective="lambdarank", metric=["ndcg", "map"],
                             eval_at=[1, 3, 5, 10], num_leaves=7, verbose=-1, num_threads=1,
                             seed=1), train, num_boost_round=5, valid_sets=[valid],
                        valid_names=["v"], callbacks=[lgb.record_evaluation(evals)])
    scores = booster.predict(Xt)
    for k in (1, 3, 5, 10):
        assert M.ranking_metric("ndcgAtK", scores, yt, qt, k) == pytest.approx(
            evals["v"][f"ndcg@{k}"][-1], rel=1e-9)
        assert M.ranking_metric("mapAtK", scores, yt, qt, k) == pytest.approx(
            evals["v"][f"map@{k}"][-1], rel=1e-9)
