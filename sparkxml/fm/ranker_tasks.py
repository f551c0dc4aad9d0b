"""The code ``FMRanker`` runs inside Spark tasks: the barrier stage's load and train functions,
the transform's scoring and the recommendation functions. Plain values only in the closures
(no Spark objects), so a worker imports numpy, pyarrow and ``sparkxml_kernels`` alone.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from sparkxml._core.arrow import column_of
from sparkxml.fm.tasks import KEY, _iteration_callback
from sparkxml_kernels import arrow_io
from sparkxml_kernels.fm.order import ROW_BLOCKS
from sparkxml_kernels.model_cache import as_handle

# the user's hash: rows are dealt to row blocks by it, so a task holds every row of its users
USER_KEY = "__sparkxml_user_key"
RANKER_KIND = "fm_ranker"


def _ints(batch, name) -> np.ndarray:
    return np.array(column_of(batch, name).cast(pa.int64()).to_numpy(zero_copy_only=False),
                    np.int64)


def make_ranker_load_fn(user_ids, item_ids, fcol, d: int):
    """Barrier task loader: catalogue indices of the users / items, content keys, user keys
    and (``fcol`` set) the context CSR; the batches hold columns u, i, [f], keys."""
    user_ids, item_ids = np.asarray(user_ids, np.int64), np.asarray(item_ids, np.int64)

    def load(batches, rank, world):
        us, its, ks, bs, ip, ix, dv = [], [], [], [], [], [], []
        offset = 0
        for b in batches:
            if b.num_rows == 0:
                continue
            us.append(np.searchsorted(user_ids, _ints(b, "u")))
            its.append(np.searchsorted(item_ids, _ints(b, "i")))
            ks.append(_ints(b, KEY))
            bs.append(_ints(b, USER_KEY))
            if fcol is not None:
                indptr, indices, data, _ = arrow_io.vectors_to_csr(
                    column_of(b, "f"), fcol, num_features=d, value_dtype=np.float64)
                ip.append(indptr[1:] + offset)
                offset += int(indptr[-1])
                ix.append(indices)
                dv.append(data)
        cat = (lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt))
        state = {"u": cat(us, np.int64), "i": cat(its, np.int64), "keys": cat(ks, np.int64),
                 "blocks": np.mod(cat(bs, np.int64), ROW_BLOCKS), "csr": None}
        if fcol is not None:
            state["csr"] = dict(indptr=np.concatenate([[0], cat(ip, np.int64)]),
                                indices=cat(ix, np.int32), data=cat(dv, np.float64))
        return state

    return load


def make_ranker_train_fn(params: dict, n_users: int, n_items: int, d: int,
                         progress: dict | None = None):
    """Barrier task trainer: rows in (user block, key) order, then ``bpr.run_bpr``; rank 0
    returns the model arrays (without the id catalogues, which the driver holds)."""

    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.fm.bpr import prepare_bpr, run_bpr
        from sparkxml_kernels.progress import ProgressReporter

        data = prepare_bpr(state["u"], state["i"], state["keys"], state["blocks"], n_users,
                           n_items, d, **(state["csr"] or {}))
        state.clear()
        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        p = params
        if reporter.enabled:
            p = dict(params, on_iteration=_iteration_callback(reporter, int(params["maxIter"]),
                                                              "epoch"))
        try:
            arrays, hist = run_bpr(data, p, coll)
        finally:
            reporter.close()
        info = {"n_rows": int(data.n), "nnz": int(data.indices.size)}
        if rank == 0:
            info["history"] = hist
            return arrays, info
        return None, info

    return train_fn


def _build(handle):
    from sparkxml_kernels.fm.ranker import FMRankerPredictor

    return handle.build(RANKER_KIND, FMRankerPredictor.from_arrays)


def make_score_fn(model, ucol: str, icol: str, fcol, d: int, out: str, drop: bool):
    """transform's ``mapInArrow``: the input columns + the score (double; NaN or dropped for
    an unseen user or item)."""
    handle = as_handle(model)

    def score(batches):
        P = _build(handle)
        for b in batches:
            n = b.num_rows
            u = P.user_index(column_of(b, ucol).cast(pa.int64()).fill_null(-2 ** 62)
                             .to_numpy(zero_copy_only=False))
            i = P.item_index(column_of(b, icol).cast(pa.int64()).fill_null(-2 ** 62)
                             .to_numpy(zero_copy_only=False))
            if fcol is None:
                indptr, indices, data = np.zeros(n + 1, np.int64), np.zeros(0, np.int32), \
                    np.zeros(0)
            else:
                indptr, indices, data, _ = arrow_io.vectors_to_csr(
                    column_of(b, fcol), fcol, num_features=d, value_dtype=np.float64)
                if data.size and not np.isfinite(data).all():
                    raise ValueError(f"featuresCol: column '{fcol}' holds the value "
                                     f"{data[~np.isfinite(data)][0]!r}; features must be "
                                     f"finite")
            s = P.score_csr(u, i, indptr, indices, data)
            if drop:
                keep = ~np.isnan(s)
                if not keep.all():
                    b, s = b.filter(pa.array(keep)), s[keep]
            yield pa.RecordBatch.from_arrays(list(b.columns) + [pa.array(s, pa.float64())],
                                             names=list(b.schema.names) + [out])

    return score


def recommendation_type(item_field: str):
    return pa.list_(pa.struct([pa.field(item_field, pa.int64()),
                               pa.field("rating", pa.float32())]))


def make_recommend_fn(model, k: int, user_out: str, item_field: str, by_index: bool):
    """``mapInArrow`` over users: column "u" holds user ids (``by_index``: positions in the
    model's user catalogue, as ``spark.range`` gives them); out: (user_out, recommendations
    array<struct<item_field, rating>>), best first. Users the model has not seen are left out,
    as ALS's recommendForUserSubset."""
    handle = as_handle(model)
    rtype = recommendation_type(item_field)

    def recommend(batches):
        P = _build(handle)
        for b in batches:
            ids = _ints(b, "u")
            idx = ids if by_index else P.user_index(ids)
            idx = idx[idx >= 0]
            items, scores = P.recommend_index(idx, k)
            kk = items.shape[1]
            flat = pa.StructArray.from_arrays(
                [pa.array(P.item_ids[items.reshape(-1)], pa.int64()),
                 pa.array(scores.reshape(-1).astype(np.float32), pa.float32())],
                fields=list(rtype.value_type))
            offsets = pa.array(np.arange(idx.size + 1, dtype=np.int32) * kk, pa.int32())
            recs = pa.ListArray.from_arrays(offsets, flat).cast(rtype)
            yield pa.RecordBatch.from_arrays([pa.array(P.user_ids[idx], pa.int64()), recs],
                                             names=[user_out, "recommendations"])

    return recommend
