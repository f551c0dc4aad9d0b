"""FM / GBFM solvers: exactness of the block updates, worker-count invariance, the anchors
(myFM) and the planted-interaction data set."""
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from test_fm_kernels import _one_hot

from sparkxml.synthetic import make_ratings, one_hot_fields
from sparkxml_kernels.collective import InProcessGroup, LocalCollective
from sparkxml_kernels.fm import train as T
from sparkxml_kernels.fm.als import init_params
from sparkxml_kernels.fm.fields import FieldVocabulary
from sparkxml_kernels.fm.gbfm import run_gbfm
from sparkxml_kernels.fm.order import ROW_BLOCKS, row_block_of
from sparkxml_kernels.fm.predictor import FMPredictor, GBFMPredictor

BASE = dict(factorSize=3, maxIter=3, regParam=0.01, initStd=0.1, seed=7, burnIn=1, thinning=1,
            stepSize=0.01, miniBatchFraction=0.25, tol=0.0, fitIntercept=True, fitLinear=True,
            fieldStarts=None)


def _fit(X, y, params, workers=1, w=None, valid=None, kind="fm", shuffle=None):
    """Train with ``workers`` thread ranks, each holding its range of row blocks as the Spark
    layer deals them (``shuffle``: a seed to permute each rank's rows first); rank 0's
    arrays."""
    keys = (np.arange(X.shape[0]) * 2654435761) % 1000003
    owner = row_block_of(keys) * workers // ROW_BLOCKS
    parts = [np.flatnonzero(owner == r) for r in range(workers)]
    if shuffle is not None:
        parts = [np.random.default_rng(shuffle + r).permutation(p) for r, p in enumerate(parts)]
    group = InProcessGroup(workers) if workers > 1 else None
    out = [None] * workers

    def run(rank):
        coll = LocalCollective() if group is None else group.collective(rank)
        idx = parts[rank]
        Xr = X[idx]
        prep = T.prepare(Xr.indptr, Xr.indices, Xr.data, y[idx], None if w is None else w[idx],
                         keys[idx], X.shape[1], coll, rank, workers,
                         extra=None if valid is None else valid[idx])
        prep, v = prep if valid is not None else (prep, None)
        tr = prep if v is None else prep.subset(~v)
        va = None if v is None else prep.subset(v)
        if kind == "fm":
            out[rank] = T.train_fm(tr, params, coll, valid=va)
        elif kind == "ffm":
            out[rank] = T.train_ffm(tr, params, coll)
        else:
            out[rank] = run_gbfm(tr, va, params, coll)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out[0]


# --------------------------------------------------------------------------- exactness
def _naive_als(X, y, params, loss, sweeps):
    """Plain sequential coordinate descent, one parameter at a time in index order (libFM's
    ALS; for logistic loss on the quadratic expansion at each sweep's start)."""
    X = X.toarray()
    n, d = X.shape
    k, reg = params["factorSize"], params["regParam"]
    w0, w, Vt = init_params(params["seed"], k, d, params["initStd"])
    V = Vt.T.copy()

    def pred():
        q = X @ V
        return w0 + X @ w + 0.5 * ((q ** 2).sum(1) - ((X ** 2) @ (V ** 2)).sum(1))

    W = float(n)
    for _ in range(sweeps):
        p0 = pred()
        if loss == "squared":
            c1, c2 = p0 - y, np.ones(n)
        else:
            s = 1 / (1 + np.exp(-p0))
            c1, c2 = s - y, np.maximum(s * (1 - s), 1e-16)
        r = np.zeros(n)

        def step(theta, h, regj):
            nonlocal r
            A, G = float(c2 @ (h * h)), float((c1 + c2 * r) @ h)
            new = theta - (G / W + regj * theta) / (A / W + regj) if A / W + regj > 0 else theta
            r = r + (new - theta) * h
            return new

        w0 = step(w0, np.ones(n), 0.0)
        for j in range(d):
            w[j] = step(w[j], X[:, j], reg)
        for f in range(k):
            for j in range(d):
                q = X @ V[:, f]
                V[j, f] = step(V[j, f], X[:, j] * (q - V[j, f] * X[:, j]), reg)
    return w0, w, V


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_block_updates_equal_sequential_coordinate_descent(task):
    X, _ = _one_hot(120, [3, 4, 2], seed=11, extra_dense=1)
    r = np.random.default_rng(0)
    y = r.normal(size=120) if task == "regression" else (r.random(120) > 0.5).astype(float)
    params = dict(BASE, solver="als", task=task, maxIter=3)
    arrays, hist = _fit(X, y, params)
    assert hist["n_blocks"] == 4  # three one-hot fields and the dense column
    w0, w, V = _naive_als(X, y, params, "squared" if task == "regression" else "logistic", 3)
    np.testing.assert_allclose(arrays["w0"][0], w0, rtol=1e-6)
    np.testing.assert_allclose(arrays["w"][0], w, rtol=1e-5, atol=1e-6)  # stored as float32
    np.testing.assert_allclose(arrays["V"][0], V, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- workers
@pytest.mark.parametrize("solver,task", [("mcmc", "regression"), ("mcmc", "classification"),
                                         ("als", "classification"), ("adamw", "regression")])
def test_two_workers_train_the_same_model_as_one(solver, task):
    X, _ = _one_hot(400, [5, 6, 3], seed=12, extra_dense=1)
    r = np.random.default_rng(1)
    y = X @ r.normal(size=X.shape[1]) + 0.1 * r.normal(size=400)
    if task == "classification":
        y = (y > np.median(y)).astype(float)
    params = dict(BASE, solver=solver, task=task, maxIter=12)
    one, h1 = _fit(X, y, params, workers=1)
    two, h2 = _fit(X, y, params, workers=2, shuffle=5)
    three, h3 = _fit(X, y, params, workers=3, shuffle=9)
    # the same model, bit for bit (sums in a fixed order): one worker runs each update in one
    # kernel call (cd.update_blocks_local), more workers block by block between reduces
    for key in ("w0", "w", "V"):
        np.testing.assert_array_equal(two[key], one[key])
        np.testing.assert_array_equal(three[key], one[key])
    curve = {"mcmc": "alpha", "als": "objective", "adamw": "loss"}[solver]
    assert h1[curve] == h2[curve] == h3[curve]
    assert h1["n_blocks"] == h2["n_blocks"]


def test_gbfm_two_workers_and_early_stopping():
    cols, rating, _ = make_ratings(3000, n_users=40, n_items=30, seed=3)
    ip, ix, dv, d, fs = one_hot_fields(cols)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(rating), d))
    valid = np.arange(len(rating)) % 5 == 0
    params = dict(task="regression", fieldStarts=fs, numStages=12, stepSize=0.3, factorSize=3,
                  maxIter=2, regParam=1e-4, initStd=0.01, seed=1, earlyStoppingRounds=2)
    one, h1 = _fit(X, rating, params, 1, valid=valid, kind="gbfm")
    two, h2 = _fit(X, rating, params, 2, valid=valid, kind="gbfm")
    for key in one:  # the same model, bit for bit
        np.testing.assert_array_equal(one[key], two[key])
    assert len(h1["valid_metric"]) == h1["stages_run"]
    best = int(np.argmin(h1["valid_metric"]))
    assert one["stage_fields"].shape[0] == best + 1  # truncated to the best stage
    # the joint fit of the selected pairs: the same chain on one worker and three
    joint = dict(params, numStages=4, jointFit="mcmc", jointIter=8, burnIn=2)
    one, _ = _fit(X, rating, joint, 1, kind="gbfm")
    three, _ = _fit(X, rating, joint, 3, kind="gbfm")
    for key in one:
        np.testing.assert_array_equal(one[key], three[key])


# --------------------------------------------------------------------------- planted data
def test_gbfm_selects_the_planted_pairs_and_fm_recovers_the_ratings():
    cols, rating, planted = make_ratings(20000, seed=0)
    ip, ix, dv, d, fs = one_hot_fields(cols)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(rating), d))
    names = list(cols)
    tr, te = slice(0, 16000), slice(16000, None)
    gb, hist = _fit(X[tr], rating[tr], dict(task="regression", fieldStarts=fs, numStages=8,
                                            stepSize=0.3, factorSize=4, maxIter=3,
                                            regParam=1e-4, initStd=0.01, seed=0), kind="gbfm")
    pairs = {frozenset((names[p], names[q])) for p, q in gb["stage_fields"]}
    assert pairs == {frozenset(p) for p in planted}, gb["stage_fields"]
    fm, _ = _fit(X[tr], rating[tr], dict(BASE, solver="mcmc", task="regression", factorSize=6,
                                         maxIter=60, burnIn=10, fieldStarts=fs))
    rmse = np.sqrt(np.mean((FMPredictor.from_arrays(fm).predict(X[te]) - rating[te]) ** 2))
    assert rmse < 0.35, rmse  # the noise is 0.3: what a perfect model reaches
    gb_rmse = np.sqrt(np.mean((GBFMPredictor.from_arrays(gb).predict(X[te]) - rating[te]) ** 2))
    assert gb_rmse < np.std(rating[te]) * 0.7


def test_gbfm_joint_fit_beats_the_boosted_stages_and_matches_fm():
    cols, rating, planted = make_ratings(3000, n_users=40, n_items=30, seed=4)
    ip, ix, dv, d, fs = one_hot_fields(cols)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(rating), d))
    names = list(cols)
    tr, te = slice(0, 2400), slice(2400, None)
    params = dict(task="regression", fieldStarts=fs, numStages=10, stepSize=0.3, factorSize=3,
                  maxIter=2, regParam=1e-4, initStd=0.01, seed=0, jointIter=30, burnIn=5)

    def rmse(P):
        return np.sqrt(np.mean((P.predict(X[te]) - rating[te]) ** 2))

    boosted, _ = _fit(X[tr], rating[tr], dict(params, jointFit="none"), kind="gbfm")
    seen = []  # the progress hook (verbose) sees every joint-fit sweep
    joint, hist = _fit(X[tr], rating[tr], dict(params, jointFit="mcmc", on_joint_iteration=(
        lambda h: seen.append((len(h["seconds"]), h["train_rmse"][-1])))), kind="gbfm")
    pairs = [frozenset((names[p], names[q])) for p, q in joint["stage_fields"]]
    assert len(set(pairs)) == len(pairs)  # one stage per distinct pair
    assert {frozenset(p) for p in planted} <= set(pairs)
    assert hist["joint_samples"] == 25 and len(hist["boost_fields"]) == 10
    assert [n for n, _ in seen] == list(range(1, 31)) and seen[-1][1] < 0.6
    np.testing.assert_allclose(joint["stage_gain"].sum(), np.sum(hist["boost_gain"]))
    fm, _ = _fit(X[tr], rating[tr], dict(BASE, solver="mcmc", task="regression", factorSize=3,
                                         maxIter=30, burnIn=5, fieldStarts=fs))
    r_boost, r_joint = rmse(GBFMPredictor.from_arrays(boosted)), rmse(
        GBFMPredictor.from_arrays(joint))
    r_fm = rmse(FMPredictor.from_arrays(fm))
    assert r_joint < r_boost - 0.01, (r_joint, r_boost)
    assert r_joint < r_fm + 0.01, (r_joint, r_fm)


def test_mcmc_on_a_constant_label_spreads_as_myfm():
    # the Gamma(1/2, 1/2) prior on the noise precision keeps the sampler's noise finite, so
    # a constant label is predicted up to that noise, as myFM predicts it (documented)
    myfm = pytest.importorskip("myfm")
    X = sp.csr_matrix(np.random.default_rng(0).normal(size=(200, 5)))
    y = np.full(200, 3.0)
    ours, _ = _fit(X, y, dict(BASE, solver="mcmc", task="regression", factorSize=4,
                              maxIter=100, burnIn=5))
    p = FMPredictor.from_arrays(ours).predict(X)
    ref = myfm.MyFMRegressor(rank=4, random_seed=0).fit(X, y, n_iter=100).predict(X)
    assert np.abs(p - 3.0).max() < 0.03, np.abs(p - 3.0).max()
    assert np.abs(p - 3.0).max() < 2 * np.abs(ref - 3.0).max() + 0.005


def test_mcmc_matches_myfm_on_ratings_and_probit():
    myfm = pytest.importorskip("myfm")
    cols, rating, _ = make_ratings(6000, n_users=100, n_items=60, seed=5)
    ip, ix, dv, d, fs = one_hot_fields(cols)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(rating), d))
    tr, te = slice(0, 5000), slice(5000, None)
    ours, _ = _fit(X[tr], rating[tr], dict(BASE, solver="mcmc", task="regression",
                                           factorSize=4, maxIter=60, burnIn=5))
    rm_ours = np.sqrt(np.mean((FMPredictor.from_arrays(ours).predict(X[te]) - rating[te]) ** 2))
    ref = myfm.MyFMRegressor(rank=4, random_seed=0).fit(X[tr], rating[tr], n_iter=60,
                                                        n_kept_samples=55)
    rm_ref = np.sqrt(np.mean((ref.predict(X[te]) - rating[te]) ** 2))
    assert abs(rm_ours - rm_ref) < 0.02, (rm_ours, rm_ref)
    from sklearn.metrics import roc_auc_score

    yb = (rating > np.median(rating)).astype(float)
    ours, _ = _fit(X[tr], yb[tr], dict(BASE, solver="mcmc", task="classification",
                                       factorSize=4, maxIter=60, burnIn=5))
    auc = roc_auc_score(yb[te], FMPredictor.from_arrays(ours).predict(X[te])[:, 1])
    ref = myfm.MyFMClassifier(rank=4, random_seed=0).fit(X[tr], yb[tr].astype(int), n_iter=60,
                                                         n_kept_samples=55)
    auc_ref = roc_auc_score(yb[te], ref.predict_proba(X[te]))
    assert abs(auc - auc_ref) < 0.01, (auc, auc_ref)


# --------------------------------------------------------------------------- fields
def test_field_vocabulary_encodes_keep_skip_error():
    import pyarrow as pa

    voc = FieldVocabulary([np.array(["b", "a"]), np.array([10, 20, 30]),
                           np.array(["x", "y"])], ["s", "i", "l"])
    assert voc.field_starts.tolist() == [0, 2, 5, 7]
    cols = [pa.array(["a", None, "zz"]), pa.array([30, 10, 10], pa.int32()),
            pa.array([["y", "x", "y"], [], None])]
    ip, ix, dv, keep = voc.encode(cols, "keep")
    assert ip.tolist() == [0, 4, 5, 6] and ix.tolist() == [1, 4, 5, 6, 2, 2]
    assert keep.all() and np.all(dv == 1.0)
    ip, ix, _, keep = voc.encode(cols, "skip")
    assert keep.tolist() == [True, False, False] and ip.tolist() == [0, 4]
    with pytest.raises(ValueError, match="column 's' holds a null"):
        voc.encode(cols, "error")
    with pytest.raises(ValueError, match="'zz', unseen"):
        voc.encode([pa.array(["a", "a", "zz"])] + cols[1:], "error")
    again = FieldVocabulary.from_arrays(voc.to_arrays())
    np.testing.assert_array_equal(again.encode(cols)[1], voc.encode(cols)[1])


@pytest.mark.parametrize("solver,task", [("als", "classification"), ("mcmc", "regression")])
def test_integer_row_weights_equal_repeated_rows(solver, task):
    X, _ = _one_hot(150, [4, 3], seed=13)
    r = np.random.default_rng(2)
    y = X @ r.normal(size=X.shape[1]) + 0.1 * r.normal(size=150)
    if task == "classification":
        y = (y > np.median(y)).astype(float)
    w = r.integers(1, 3, 150).astype(float)
    rep = np.repeat(np.arange(150), w.astype(int))
    params = dict(BASE, solver=solver, task=task, maxIter=4, burnIn=0)
    weighted, _ = _fit(X, y, params, w=w)
    repeated, _ = _fit(X[rep], y[rep], params)
    # the same objective (ALS) or the same full conditionals and draws (MCMC)
    for key in ("w0", "w", "V"):
        np.testing.assert_allclose(weighted[key], repeated[key], rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- conveniences
@pytest.mark.parametrize("solver", ["mcmc", "als", "adamw"])
def test_early_stopping_keeps_the_best_sweep(solver):
    X, _ = _one_hot(300, [5, 6, 3], seed=12, extra_dense=1)
    r = np.random.default_rng(1)
    y = X @ r.normal(size=X.shape[1]) + 0.3 * r.normal(size=300)
    valid = np.arange(300) % 4 == 0
    params = dict(BASE, solver=solver, task="regression", maxIter=40, earlyStoppingRounds=3,
                  stepSize=0.05)
    arrays, hist = _fit(X, y, params, valid=valid)
    curve, best = hist["valid_metric"], hist["best_iteration"]
    assert len(curve) == len(hist["seconds"]) < 40  # it stopped
    assert len(curve) - 1 - best == 3 and min(curve[best + 1:]) >= curve[best] - 1e-12
    # the model is the one scored at the best sweep: its validation RMSE is curve[best]
    P = FMPredictor.from_arrays(arrays)
    Xv, yv = X[valid], y[valid]
    rmse = float(np.sqrt(np.mean((P.predict(Xv) - yv) ** 2)))
    np.testing.assert_allclose(rmse, curve[best], rtol=1e-5)  # float32 storage
    if solver == "mcmc":  # the samples kept up to the best sweep (burnIn = 1)
        assert arrays["w0"].size == best
    # without earlyStoppingRounds the curve is recorded and training runs to the end
    _, full = _fit(X, y, dict(params, earlyStoppingRounds=0, tol=-1.0), valid=valid)
    assert len(full["valid_metric"]) == 40
    np.testing.assert_array_equal(full["valid_metric"][:len(curve)], curve)


def test_warm_start_continues_als():
    X, _ = _one_hot(300, [5, 6, 3], seed=3, extra_dense=1)
    r = np.random.default_rng(2)
    y = X @ r.normal(size=X.shape[1]) + 0.3 * r.normal(size=300)
    params = dict(BASE, solver="als", task="regression", maxIter=10)
    whole, hw = _fit(X, y, params)
    first, h1 = _fit(X, y, dict(params, maxIter=6))
    init = {"w0": first["w0"][0], "w": first["w"][0], "V": first["V"][0]}
    more, h2 = _fit(X, y, dict(params, maxIter=4, init=init))
    # the warm start begins where the first fit ended (up to float32 storage of w, V)
    assert h2["objective"][0] < h1["objective"][0]
    np.testing.assert_allclose(h2["objective"][0], hw["objective"][6], rtol=1e-5)
    np.testing.assert_allclose(more["V"], whole["V"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(more["w0"], whole["w0"], rtol=1e-4)


def test_excess_gain_is_about_zero_on_noise_where_the_greedy_gain_grows_with_the_field():
    from sparkxml_kernels.fm.gbfm import excess_gains, field_gains

    rng = np.random.default_rng(0)
    n, sizes = 20000, [2, 500]
    fs = np.array([0, 2, 502])
    cols = np.stack([rng.integers(0, s, n) + f for s, f in zip(sizes, fs[:-1])], 1)
    c1 = rng.normal(size=n)  # a gradient with no signal
    A, G, B = np.zeros(502), np.zeros(502), np.zeros(502)
    for j in range(2):
        np.add.at(A, cols[:, j], 1.0)
        np.add.at(G, cols[:, j], c1)
        np.add.at(B, cols[:, j], c1 * c1)
    raw = field_gains(A, G, fs, n, 1e-4)
    excess = excess_gains(A, G, B, fs, n, 1e-4)
    assert raw[1] > 0.8 * 0.5 * 500 / n  # about ½ σ² |C| / W: the big field looks best
    assert raw[1] > 50 * raw[0]
    assert abs(excess[1]) < 0.25 * raw[1] and abs(excess[0]) < 0.002


def test_joint_selection_takes_the_planted_pairs_first_and_each_pair_once():
    cols, rating, planted = make_ratings(3000, n_users=40, n_items=30, seed=4)
    ip, ix, dv, d, fs = one_hot_fields(cols)
    X = sp.csr_matrix((dv, ix, ip), shape=(len(rating), d))
    names = list(cols)
    params = dict(task="regression", fieldStarts=fs, numStages=20, stepSize=0.3, factorSize=3,
                  maxIter=2, regParam=1e-4, initStd=0.01, seed=0, jointFit="mcmc",
                  jointIter=3, burnIn=1)
    _, hist = _fit(X[:2400], rating[:2400], params, kind="gbfm")
    chosen = [frozenset((names[p], names[q])) for p, q in hist["boost_fields"]]
    assert len(set(chosen)) == len(chosen) <= 15  # never a pair twice: at most m(m-1)/2
    assert set(chosen[:2]) == {frozenset(p) for p in planted}, chosen
    assert all(g > 0 for g in hist["selection_gain"][1:])  # later pairs need an excess gain
