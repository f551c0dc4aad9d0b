"""Training entry points: what one process, or each task of a Spark barrier stage, runs.

:func:`prepare` puts a worker's rows in a canonical order and finds the exclusive blocks;
:func:`train_fm` and :func:`train_gbfm` then run the chosen solver through a collective
(``LocalCollective`` in one process, the socket collective in a Spark task, or the in-process
thread group in tests). Every rank returns the same model.

Row order and identity: rows are sorted by (row block, content key) (the key: int64,
``xxhash64`` of the row's columns computed in the JVM; the row block: key mod
``order.ROW_BLOCKS``; ties keep their arrival order and are exact duplicates), and each row's
random streams are keyed by (key, occurrence among equal keys). With the data partitioned by
row block (a task holds a contiguous range of whole row blocks, ``order``), one worker and
several see the same rows with the same random numbers and add them in the same order: the
model is the same bit for bit.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT, INDEX, INDPTR
from .layout import (
    BlockedData,
    check_sorted_indices,
    exclusive_segments,
    next_cooccurring,
    sort_rows,
)
from .order import RowBlocks, row_block_of
from .rng import occurrences, row_ids
from .solver import allreduce_min

__all__ = ["prepare", "train_fm", "train_ffm", "groups_from_field_starts", "SOLVERS",
           "FFM_SOLVERS"]

SOLVERS = ("mcmc", "als", "adamw")
FFM_SOLVERS = ("adagrad", "als", "mcmc")


class Prepared:
    """A worker's rows after :func:`prepare`: CSR in (row block, key) order, labels, weights,
    row ids, global feature blocks, and the row blocks (``rb``, ``order.RowBlocks``)."""

    def __init__(self, indptr, indices, data, y, w, keys, rids, d, segments):
        self.indptr, self.indices, self.data = indptr, indices, data
        self.y, self.w, self.keys, self.rids = y, w, keys, rids
        self.d = int(d)
        self.segments = segments
        self.rb = RowBlocks.of(row_block_of(keys))

    @property
    def n(self) -> int:
        return self.indptr.size - 1

    def blocked(self, block_starts=None):
        """The rows as ``layout.BlockedData`` over ``block_starts`` (default: the segments)."""
        return BlockedData(self.indptr, self.indices, self.data, self.d,
                           self.segments if block_starts is None else block_starts, self.rb)

    def subset(self, mask: np.ndarray) -> "Prepared":
        """The rows where ``mask`` is true (order kept)."""
        idx = np.flatnonzero(mask)
        ip, ix, dv = sort_rows(self.indptr, self.indices, self.data, idx)
        return Prepared(ip, ix, dv, self.y[idx], None if self.w is None else self.w[idx],
                        self.keys[idx], self.rids[idx], self.d, self.segments)


def prepare(indptr, indices, data, y, w, keys, d: int, coll, rank: int = 0, world: int = 1,
            column: str = "features", extra=None):
    """Sort a worker's rows by (row block, key), check them, and compute the global exclusive
    segments.

    Parameters
    ----------
    indptr, indices, data : CSR of this worker's rows (any order)
    y, w : float64 (n,) labels and weights (w may be None)
    keys : int64 (n,) content keys
    d : int, the vector size (global)
    extra : optional array (n,) carried along in the same order (e.g. a validation flag)

    Returns
    -------
    Prepared (and the reordered ``extra`` when given)
    """
    keys = np.asarray(keys, np.int64)
    order = np.lexsort((keys, row_block_of(keys)))  # stable: duplicates keep arrival order
    indptr, indices, data = sort_rows(np.asarray(indptr, INDPTR), np.asarray(indices, INDEX),
                                      np.asarray(data, FLOAT), order)
    check_sorted_indices(indptr, indices, data, column)
    keys = keys[order]
    y = np.ascontiguousarray(np.asarray(y, FLOAT)[order])
    w = None if w is None else np.ascontiguousarray(np.asarray(w, FLOAT)[order])
    rids = row_ids(keys, occurrences(keys))
    nxt = allreduce_min(coll, next_cooccurring(indptr, indices, int(d)), rank, world)
    segments = exclusive_segments(nxt, int(d))
    prep = Prepared(indptr, indices, data, y, w, keys, rids, d, segments)
    if extra is not None:
        return prep, np.asarray(extra)[order]
    return prep


def groups_from_field_starts(field_starts, d: int):
    """(group of each feature int64 (d,), number of groups): fields, or one group."""
    if field_starts is None or len(field_starts) == 0:
        return np.zeros(d, np.int64), 1
    fs = np.asarray(list(field_starts) + [d], np.int64)
    return np.repeat(np.arange(fs.size - 1), np.diff(fs)), fs.size - 1


def train_fm(prep: Prepared, params: dict, coll, valid: Prepared | None = None,
             relations=None):
    """Train a factorization machine on this worker's prepared rows.

    Parameters
    ----------
    params : dict
        solver ("mcmc" | "als" | "adamw"), task ("regression" | "classification"),
        factorSize, maxIter, regParam, initStd, seed, burnIn, thinning, stepSize,
        miniBatchFraction, tol, fitIntercept, fitLinear, fieldStarts (list or None);
        optional earlyStoppingRounds (with ``valid``) and init (a warm start: {"w0", "w" (d,),
        "V" (d, k)}, see ``watch.init_from``).
    valid : Prepared, optional
        This worker's validation rows: scored after every sweep (``watch.ValidationWatch``,
        history "valid_metric"), and early stopping when earlyStoppingRounds > 0.
    relations : (list of relation.RelationBlock, int64 (R, n)), optional
        Relation blocks and each row's block row (rows in ``prep``'s order); ``prep`` then
        holds the flat features only and the model has d_flat + sum of the blocks' widths
        features (``relation``). MCMC only; not with ``valid``.

    Returns
    -------
    (arrays, history): ``predictor.FMPredictor`` arrays (the same on every rank) and a dict.
    """
    from . import adamw, als, mcmc
    from .watch import ValidationWatch

    data = prep.blocked()
    solver = params["solver"]
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; use one of {list(SOLVERS)}")
    if relations is not None:
        from .relation import RelationalData

        if solver != "mcmc":
            raise ValueError(f"relation blocks need solver 'mcmc', got {solver!r}")
        if valid is not None:
            raise ValueError("relation blocks do not take validation rows")
        data = RelationalData(data, *relations)
    link = ("identity" if params["task"] != "classification"
            else "probit" if solver == "mcmc" else "logistic")
    if params.get("loss") == "ordinal":
        if solver != "mcmc" or params["task"] != "regression" or valid is not None:
            raise ValueError("loss 'ordinal' needs solver 'mcmc', regression and no "
                             "validation rows")
        link = "ordinal"
    watch = None
    if valid is not None:
        watch = ValidationWatch(valid, link, int(params.get("earlyStoppingRounds") or 0), coll,
                                average=solver == "mcmc")
    if solver == "mcmc":
        group_of, n_groups = groups_from_field_starts(params.get("fieldStarts"), data.d)
        samples, hist = mcmc.run_mcmc(data, prep.y, prep.w, prep.rids, params, coll, group_of,
                                      n_groups, watch)
    elif solver == "als":
        samples, hist = als.run_als(data, prep.y, prep.w, params, coll, watch)
    else:
        samples, hist = adamw.run_adamw(data, prep.y, prep.w, prep.rids, params, coll, watch)
    arrays = dict(samples, link=np.asarray(link), n_features=np.asarray(data.d, np.int64))
    hist["n_blocks"] = int(data.n_blocks)
    return arrays, hist


def train_ffm(prep: Prepared, params: dict, coll):
    """Train a field-aware FM on this worker's prepared rows: solver "adagrad" (``ffm``: one
    pass over all rows in a fixed order whatever the number of workers), "als" or "mcmc"
    (``ffm_cd``: exact coordinate updates over exclusive feature blocks, as ``train_fm``).

    Returns
    -------
    (arrays, history): ``ffm.FFMPredictor`` arrays (the same on every rank) and a dict.
    """
    from .ffm import run_ffm

    solver = params.get("solver", "adagrad")
    if solver not in FFM_SOLVERS:
        raise ValueError(f"unknown FFM solver {solver!r}; use one of {list(FFM_SOLVERS)}")
    if solver == "adagrad":
        return run_ffm(prep, prep.y, prep.w, prep.rids, params, coll)
    from .ffm_cd import ffm_blocked, run_ffm_als, run_ffm_mcmc

    data = ffm_blocked(prep, params["fieldStarts"], bool(params["normalize"]))
    if solver == "als":
        return run_ffm_als(data, prep.y, prep.w, params, coll)
    return run_ffm_mcmc(data, prep.y, prep.w, prep.rids, params, coll)
