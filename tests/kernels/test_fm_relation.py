"""Relation blocks (``sparkxml_kernels.fm.relation``): the MCMC sweep over block-row aggregates
against its naive twin (the flat encoding through the ordinary sampler), worker-count
invariance, the expansion, and bad block indices."""
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from sparkxml_kernels.collective import InProcessGroup, LocalCollective
from sparkxml_kernels.fm import train as T
from sparkxml_kernels.fm.order import ROW_BLOCKS, row_block_of
from sparkxml_kernels.fm.predictor import FMPredictor
from sparkxml_kernels.fm.relation import RelationBlock, expand_relations

PARAMS = dict(solver="mcmc", task="regression", factorSize=3, maxIter=12, regParam=0.0,
              initStd=0.1, seed=3, burnIn=2, thinning=1, stepSize=0.01,
              miniBatchFraction=0.25, tol=0.0, fitIntercept=True, fitLinear=True,
              fieldStarts=None)


def _data(n=600, n_users=40, n_items=30, seed=0):
    """Ratings with a flat context feature and two blocks: users (one-hot id + two dense
    attributes, so the block has co-occurring features) and items (one-hot id + a multi-hot
    genre set)."""
    rng = np.random.default_rng(seed)
    users = sp.hstack([sp.eye(n_users), sp.csr_matrix(rng.normal(size=(n_users, 2)))]).tocsr()
    genres = (rng.random((n_items, 4)) < 0.4).astype(float)
    items = sp.hstack([sp.eye(n_items), sp.csr_matrix(genres)]).tocsr()
    u, i = rng.integers(0, n_users, n), rng.integers(0, n_items, n)
    flat = sp.csr_matrix(rng.normal(size=(n, 1)) * (rng.random((n, 1)) < 0.5))
    y = (0.3 * u / n_users - 0.2 * i / n_items + 0.5 * flat.toarray()[:, 0]
         + rng.normal(0, 0.3, n))
    blocks = [RelationBlock.from_matrix(users, "userIdx"),
              RelationBlock.from_matrix(items, "itemIdx")]
    return flat, blocks, np.vstack([u, i]), y


def _fit(flat, blocks, idx, y, params, workers=1, w=None, relational=True):
    """Train with ``workers`` thread ranks as the Spark layer deals the rows; rank 0's
    arrays. ``relational`` False: the naive twin (expanded rows, the ordinary sampler)."""
    X = flat.tocsr()
    if not relational:
        ip, ix, dv, d = expand_relations(X.indptr, X.indices, X.data, X.shape[1], blocks, idx)
        X = sp.csr_matrix((dv, ix, ip), shape=(X.shape[0], d))
    keys = (np.arange(X.shape[0]) * 2654435761) % 1000003
    owner = row_block_of(keys) * workers // ROW_BLOCKS
    parts = [np.flatnonzero(owner == r) for r in range(workers)]
    group = InProcessGroup(workers) if workers > 1 else None
    out = [None] * workers

    def run(rank):
        coll = LocalCollective() if group is None else group.collective(rank)
        rows = parts[rank]
        Xr = X[rows]
        wr = None if w is None else w[rows]
        if relational:
            prep, rel = T.prepare(Xr.indptr, Xr.indices, Xr.data, y[rows], wr, keys[rows],
                                  X.shape[1], coll, rank, workers, extra=idx[:, rows].T)
            out[rank] = T.train_fm(prep, params, coll, relations=(blocks, rel.T))
        else:
            prep = T.prepare(Xr.indptr, Xr.indices, Xr.data, y[rows], wr, keys[rows],
                             X.shape[1], coll, rank, workers)
            out[rank] = T.train_fm(prep, params, coll)

    if workers == 1:  # in this thread: errors reach the caller
        run(0)
        return out[0]
    threads = [threading.Thread(target=run, args=(r,)) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out[0]


def _predict(arrays, flat, blocks, idx):
    ip, ix, dv, d = expand_relations(flat.indptr, flat.indices, flat.data, flat.shape[1],
                                     blocks, idx)
    return FMPredictor.from_arrays(arrays).predict_csr(ip, ix, dv)[1]


def test_expand_matches_dense_concatenation():
    flat, blocks, idx, _ = _data(n=50)
    ip, ix, dv, d = expand_relations(flat.indptr, flat.indices, flat.data, 1, blocks, idx)
    got = sp.csr_matrix((dv, ix, ip), shape=(50, d)).toarray()
    users = sp.csr_matrix((blocks[0].data, blocks[0].indices, blocks[0].indptr)).toarray()
    items = sp.csr_matrix((blocks[1].data, blocks[1].indices, blocks[1].indptr)).toarray()
    want = np.hstack([flat.toarray(), users[idx[0]], items[idx[1]]])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("task", ["regression", "classification", "ordinal"])
def test_relational_sampler_matches_flat_twin(task):
    flat, blocks, idx, y = _data()
    if task == "classification":
        y = (y > np.median(y)).astype(float)
    params = dict(PARAMS, task=task)
    if task == "ordinal":  # ordered probit: the latents and cutpoints join the chain
        y = np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75])).astype(float)
        params = dict(PARAMS, task="regression", loss="ordinal", classes=[0.0, 1.0, 2.0, 3.0])
    rel, hist = _fit(flat, blocks, idx, y, params)
    ref, _ = _fit(flat, blocks, idx, y, params, relational=False)
    assert rel["w"].shape == ref["w"].shape == (10, 1 + 42 + 34)
    # the same chain up to the regrouped sums' rounding: the float32 samples agree
    np.testing.assert_allclose(rel["V"], ref["V"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rel["w"], ref["w"], rtol=1e-4, atol=1e-5)
    p_rel = _predict(rel, flat, blocks, idx)
    p_ref = _predict(ref, flat, blocks, idx)
    np.testing.assert_allclose(p_rel, p_ref, rtol=1e-5, atol=1e-5)
    assert hist["n_blocks"] > 2  # flat + the blocks' segments
    if task == "ordinal":
        np.testing.assert_allclose(rel["cutpoints"], ref["cutpoints"], rtol=1e-5, atol=1e-6)


def test_relational_weights_match_flat_twin():
    flat, blocks, idx, y = _data(n=300)
    w = np.random.default_rng(5).uniform(0.5, 2.0, 300)
    rel, _ = _fit(flat, blocks, idx, y, PARAMS, w=w)
    ref, _ = _fit(flat, blocks, idx, y, PARAMS, w=w, relational=False)
    np.testing.assert_allclose(_predict(rel, flat, blocks, idx),
                               _predict(ref, flat, blocks, idx), rtol=1e-5, atol=1e-5)


def test_relational_without_flat_features_and_worker_invariance():
    flat, blocks, idx, y = _data(n=400)
    empty = sp.csr_matrix((400, 0))
    one, _ = _fit(empty, blocks, idx, y, PARAMS)
    two, _ = _fit(empty, blocks, idx, y, PARAMS, workers=2)
    for key in ("w0", "w", "V"):
        np.testing.assert_array_equal(one[key], two[key])  # bit for bit
    ref, _ = _fit(empty, blocks, idx, y, PARAMS, relational=False)
    np.testing.assert_allclose(_predict(one, empty, blocks, idx),
                               _predict(ref, empty, blocks, idx), rtol=1e-5, atol=1e-5)


def test_bad_relation_index_names_column_and_value():
    flat, blocks, idx, y = _data(n=100)
    idx = idx.copy()
    idx[1, 7] = 30  # the item block has 30 rows
    with pytest.raises(ValueError, match=r"'itemIdx' holds the value 30 \(row 7\).*30 rows"):
        expand_relations(flat.indptr, flat.indices, flat.data, 1, blocks, idx)
    with pytest.raises(ValueError, match="'itemIdx' holds the value 30"):
        _fit(flat, blocks, idx, y, PARAMS)


def test_relation_blocks_need_mcmc():
    flat, blocks, idx, y = _data(n=100)
    with pytest.raises(ValueError, match="relation blocks need solver 'mcmc'"):
        _fit(flat, blocks, idx, y, dict(PARAMS, solver="als"))
