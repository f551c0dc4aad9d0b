"""The Spark side of training FastXML-family forests (FastXML, PfastreXML), shared by both.

Trees are independent (Prabhu & Varma, KDD'14, Algorithm 1), so training replicates the
training set to ``numWorkers`` Spark tasks with DataFrame operations only (one copy of each
row per group key, repartition by group, ``mapInArrow``); each task orders its rows, grows its
share of the trees in compiled code (``sparkxml_kernels.fastxml``) and returns them as arrays.
No broadcast variable and no RDD, so it also runs over Spark Connect.

Row order decides the trees, so it must not depend on how Spark delivered the rows:

- ``rowOrder="content"`` (default): rows are ordered by a key computed in the JVM from their
  content, ``(xxhash64, hash)`` of the feature vector and the label set (labels deduplicated
  and sorted). The model then depends only on the multiset of rows and the seed, whatever the
  partitioning and numWorkers. Exact duplicate rows share a key and sit next to each other
  (their order among themselves cannot matter). Two different rows sharing both keys (a 96-bit
  collision) would keep their arrival order. The key reads the vector as stored: the same
  values once dense and once sparse are different rows to it.
- ``rowOrder="input"``: rows keep the DataFrame's order (``monotonically_increasing_id``), the
  order of a file read in order, which is what the authors' C++ trains on. It changes when the
  DataFrame is repartitioned.

Which training runs (``trainingMode``): the data pass measures the rows, and
:func:`estimate_task_bytes` says what a task holding all of them needs. "auto" replicates when
that fits a task's memory (:func:`task_memory`) and otherwise trains data-parallel
(``sparkxml.fastxml.distributed``); "replicated" fails early with the figures when it does not fit.
Trees come back as chunked binary rows (``_barrier.encode_array_batches``: no cell over 8 MB,
no Arrow batch over 64 MB), shuffled by (rank, name, part) before the collect
(``_barrier.collect_chunk_rows``), so a forest of any size reaches the driver in pieces (in
several collect jobs when one would pass ``spark.driver.maxResultSize``).
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F

from sparkxml._core.barrier import (
    TaskMemory,
    encode_array_batches,
)
from sparkxml._core.memory import parse_bytes, physical_memory_bytes
from sparkxml._core.progress import FitProgress
from sparkxml._core.replicated import group_tables, replicated_job
from sparkxml._core.validation import MAX_DENSE_VALUES, check_dense_width
from sparkxml._core.workers import task_cpus, worker_threads
from sparkxml.fastxml.distributed import fit_distributed
from sparkxml.session import default_parallelism
from sparkxml_kernels import arrow_io
from sparkxml_kernels.fastxml import forest as kforest
from sparkxml_kernels.fastxml.pfastre import TAIL_KEYS, propensity_weights, tail_centroids

# Address space a Python worker takes before any training data: the interpreter, numpy,
# pyarrow, numba and the loaded kernels (measured: VmPeak of a worker after a FastXML fit,
# WORKER_OVERHEAD_NOTE). Spark enforces spark.executor.pyspark.memory as the worker's
# address-space limit (RLIMIT_AS), so only the rest is there for the data.
WORKER_OVERHEAD_BYTES = 1792 << 20

# The arrays a forest is made of (see sparkxml_kernels.fastxml.forest) and their dtypes.
FOREST_DTYPES = {
    "tree_ids": np.int32, "tree_offsets": np.int64, "children": np.int32,
    "w_indptr": np.int64, "w_index": np.int32, "w_value": np.float32,
    "leaf_indptr": np.int64, "leaf_label": np.int32, "leaf_score": np.float32,
}
# What PfastreXML adds, computed once (by the first task): label weights and tail centroids.
EXTRA_DTYPES = {"inv_prop": np.float32, "tail_indptr": np.int64, "tail_index": np.int32,
                "tail_value": np.float32}


def ordered_rows(dataset, fcol: str, lcol: str, row_order: str):
    """Columns ``_k1, _k2`` (the order), ``f`` (features), ``y`` (labels, each once)."""
    if row_order == "content":
        labels = F.array_sort(F.array_distinct(F.col(lcol)))
        return dataset.select(F.xxhash64(F.col(fcol), labels).alias("_k1"),
                              F.hash(F.col(fcol), labels).cast("long").alias("_k2"),
                              F.col(fcol).alias("f"), labels.alias("y"))
    # array_distinct keeps the first occurrence of each label, in order
    return dataset.select(F.monotonically_increasing_id().alias("_k1"), F.lit(0).cast("long")
                          .alias("_k2"), F.col(fcol).alias("f"),
                          F.array_distinct(F.col(lcol)).alias("y"))


def data_stats(data, fcol: str, lcol: str, who: str) -> dict:
    """One pass over the data: sizes, label range, nulls and non-finite values, checked on
    the driver with messages that name the column."""

    def stats(batches):
        for b in batches:
            if b.num_rows == 0:
                continue
            f, y = b.column("f"), b.column("y")
            null_f, null_y = f.null_count, y.null_count
            if null_f:
                f = f.filter(f.is_valid())
            _, nnz_x, dmin, dmax = arrow_io.vector_stats(f, fcol)
            vals = f.field("values").flatten().to_numpy(zero_copy_only=False)
            bad_x = int(np.count_nonzero(~np.isfinite(vals)))
            null_lab = y.flatten().null_count
            li, lab = (arrow_io.lists_to_csr(y, lcol, dtype=np.int64) if not null_lab
                       else (np.zeros(1, np.int64), np.zeros(0, np.int64)))
            yield pa.RecordBatch.from_pydict({
                "rows": [b.num_rows], "nnz_x": [nnz_x], "nnz_y": [int(li[-1])],
                "dmin": [dmin], "dmax": [dmax], "ymin": [int(lab.min()) if len(lab) else 0],
                "ymax": [int(lab.max()) if len(lab) else -1], "null_f": [null_f],
                "null_y": [null_y], "null_lab": [null_lab], "bad_x": [bad_x]})

    schema = ("rows long, nnz_x long, nnz_y long, dmin long, dmax long, ymin long, "
              "ymax long, null_f long, null_y long, null_lab long, bad_x long")
    parts = data.select("f", "y").mapInArrow(stats, schema).collect()
    if not parts or sum(r["rows"] for r in parts) == 0:
        raise ValueError(f"{who}: the training DataFrame is empty")
    problems = {
        "null_f": lambda n: f"featuresCol: column '{fcol}' holds {n} null feature vector(s); "
                            f"drop or fill those rows",
        "null_y": lambda n: f"labelsCol: column '{lcol}' holds {n} null labels array(s); use "
                            f"an empty array for a row without labels",
        "null_lab": lambda n: f"labelsCol: column '{lcol}' holds {n} null label id(s) inside "
                              f"its arrays",
        "bad_x": lambda n: f"featuresCol: column '{fcol}' holds {n} NaN or infinite value(s)"}
    for key, message in problems.items():
        count = sum(r[key] for r in parts)
        if count:
            raise ValueError(message(count))
    dims = sorted({r["dmin"] for r in parts if r["dmin"] >= 0}
                  | {r["dmax"] for r in parts if r["dmax"] >= 0})
    if len(dims) > 1:
        raise ValueError(f"featuresCol: column '{fcol}' holds vectors of different sizes "
                         f"{dims[:5]}")
    ymin = min(r["ymin"] for r in parts)
    if ymin < 0:
        raise ValueError(f"labelsCol: column '{lcol}' has a negative label id {ymin}")
    ymax = max(r["ymax"] for r in parts)
    if ymax >= 2**31 - 1:
        raise ValueError(f"labelsCol: column '{lcol}' has label id {ymax}, beyond int32")
    return {"rows": sum(r["rows"] for r in parts), "nnz_x": sum(r["nnz_x"] for r in parts),
            "nnz_y": sum(r["nnz_y"] for r in parts), "n_features": dims[0],
            "n_labels": max(ymax + 1, 1)}


def check_sizes(stats: dict, fcol: str, lcol: str, who: str, propensities: bool) -> None:
    """Refuse, on the driver before any training, what the data checks found the kernels
    cannot train on: no feature, per-feature or per-label arrays beyond the dense bound
    (``sparkxml._core.validation.MAX_DENSE_VALUES``: a SparseVector of size 2**31 - 1, a
    label id of 10**9), and for the propensities fewer than 3 rows (their
    ``C = (ln N - 1)(B + 1)^A`` is not positive below N = 3)."""
    d, n_labels = stats["n_features"], stats["n_labels"]
    if d < 1:
        raise ValueError(f"featuresCol: column '{fcol}' holds vectors of size 0: {who} needs "
                         f"at least one feature")
    # the tree kernels keep a few dense workspaces the size of the feature space
    check_dense_width(fcol, d, 1, "one workspace slot")
    if n_labels > MAX_DENSE_VALUES:
        raise ValueError(f"labelsCol: column '{lcol}' holds the label id {n_labels - 1}: the "
                         f"label space is taken as the largest id + 1 = {n_labels} labels, "
                         f"above the limit of {MAX_DENSE_VALUES} (per-label arrays are "
                         f"dense); remap the label ids to 0..L-1, L the labels that occur "
                         f"(e.g. StringIndexer on the exploded labels)")
    if propensities and stats["rows"] < 3:
        raise ValueError(f"{who} needs at least 3 training rows (its label propensities use "
                         f"ln(rows) - 1 > 0); the DataFrame has {stats['rows']}")


def estimate_task_bytes(rows: int, nnz_x: int, nnz_y: int, n_features: int,
                        n_labels: int, threads: int = 1) -> int:
    """Bytes one training task needs: the Arrow batches it receives, the CSR copy, and per
    thread the kernel's column-major copy and per-node workspaces (measured on Bibtex with
    one thread: ~3.5x the CSR size)."""
    csr = rows * 8 + nnz_x * 8 + nnz_y * 4
    arrow = nnz_x * 12 + nnz_y * 4 + rows * 40
    workspaces = 8 * (n_features + 2 * n_labels + 4 * rows)
    return arrow + csr + max(1, int(threads)) * (2 * csr + workspaces)


def tail_bytes(stats: dict) -> int:
    """Bytes of PfastreXML's tail centroids (index int32 + value float32 an entry): each row
    adds its features and bias to each of its labels, at most L (D + 1) entries in all."""
    rows = max(stats["rows"], 1)
    entries = min(stats["n_labels"] * (stats["n_features"] + 1),
                  (stats["nnz_x"] + rows) * stats["nnz_y"] // rows)
    return 8 * entries + 16 * stats["nnz_y"]


def task_memory(spark, workers: int) -> tuple[int, int, str]:
    """(bytes a training task may use for its data, the limit it comes from, where from).

    ``spark.executor.pyspark.memory`` when set (less ``WORKER_OVERHEAD_BYTES``, the worker's
    own address space: Spark enforces the setting as RLIMIT_AS); in local mode without it,
    this machine's memory / numWorkers (every task runs here at once); on a cluster without
    it, the driver machine's memory, assumed per executor.
    """
    conf = spark.conf.get("spark.executor.pyspark.memory", None)
    master = spark.conf.get("spark.master", "") or ""
    if conf:
        limit = parse_bytes(conf)
        return (max(0, limit - WORKER_OVERHEAD_BYTES), limit,
                f"spark.executor.pyspark.memory, less about "
                f"{WORKER_OVERHEAD_BYTES >> 20} MiB for the Python worker itself")
    if master.startswith("local"):
        have = physical_memory_bytes() // max(1, workers)
        return have, have, f"this machine's memory / numWorkers={workers}"
    have = physical_memory_bytes()
    return have, have, "the driver machine's memory (assumed per executor)"


def replicated_bytes(stats: dict, extra_bytes: int = 0, threads: int = 1) -> int:
    """What one replicated training task needs (:func:`estimate_task_bytes` + extras)."""
    return estimate_task_bytes(stats["rows"], stats["nnz_x"], stats["nnz_y"],
                               stats["n_features"], stats["n_labels"], threads) + extra_bytes


def task_threads_planned(spark, nthread) -> int:
    """The threads a training task will run (``nthread``, else ``spark.task.cpus``), for the
    driver's memory estimate."""
    return int(nthread) if nthread is not None else task_cpus(spark)


def check_memory(spark, stats: dict, workers: int, who: str = "FastXML",
                 extra_bytes: int = 0, threads: int = 1) -> None:
    """Raise MemoryError, with the figures, when a replicated task cannot hold the data."""
    need = replicated_bytes(stats, extra_bytes, threads)
    per_thread = f", on {threads} threads" if threads > 1 else ""
    require_task_memory(
        spark, workers, need,
        f"{who}: each replicated training task holds the whole training set "
        f"({stats['rows']} rows, {stats['nnz_x']} feature non-zeros, {stats['nnz_y']} "
        f"labels{per_thread})",
        "Use trainingMode='distributed' (or 'auto'), lower numWorkers or nthread, raise "
        "spark.executor.pyspark.memory, or subsample the data." + label_space_hint(stats, need))


def require_task_memory(spark, workers: int, need: int, holds: str, advice: str) -> None:
    """Raise MemoryError when a training task's ``need`` bytes exceed :func:`task_memory`:
    "<holds> and needs about N MiB, but only M MiB is available (where). <advice>"."""
    have, limit, where = task_memory(spark, workers)
    if need > have:
        raise MemoryError(f"{holds} and needs about {need / 2**20:.0f} MiB, but only "
                          f"{limit / 2**20:.0f} MiB is available ({where}). {advice}")


def label_space_hint(stats: dict, need: int) -> str:
    """A sentence for a memory error whose need is mostly per-label arrays: the label space
    is the largest id + 1, so sparse ids (a label 10**8) cost memory for every id below."""
    if 16 * stats["n_labels"] * 2 < need:
        return ""
    return (f" Most of it is per-label arrays: the label space is taken as the largest label "
            f"id + 1 = {stats['n_labels']} labels; remap the ids to 0..L-1, L the labels "
            f"that occur.")


def fit_forest(est, dataset, who: str, propensity=None, tail: bool = False):
    """Train ``est``'s forest on ``dataset``; return (forest, extra arrays, n_features,
    n_labels, info).

    ``propensity``: None (FastXML: nDCG, unit label weights) or (A, B) (PfastreXML: DCG with
    the inverse propensities as label weights); ``tail``: also compute the tail centroids.
    ``est`` supplies the FastXML params (columns, numTrees, seed, trainingMode, ...).
    ``info``: the mode that ran, its memory figures and timings (diagnostics; the model's
    summary is made from it, :class:`sparkxml.fastxml.fastxml.FastXMLTrainingSummary`).
    """
    fcol, lcol = est.getFeaturesCol(), est.getLabelsCol()
    spark = dataset.sparkSession
    num_trees = est.getNumTrees()
    requested = requested_workers(est, spark)
    workers = min(requested, num_trees)

    data = ordered_rows(dataset, fcol, lcol, est.getRowOrder())
    with FitProgress(spark, est, est.getVerbose()) as progress:
        t0 = time.perf_counter()
        with progress.phase("checks"):
            stats = data_stats(data, fcol, lcol, who)
        check_sizes(stats, fcol, lcol, who, propensity is not None)
        checks_seconds = time.perf_counter() - t0
        extra_bytes = tail_bytes(stats) if tail else 0
        nthread = est._opt(est.nthread)
        threads = task_threads_planned(spark, nthread)
        need = replicated_bytes(stats, extra_bytes, threads)
        have, limit, _ = task_memory(spark, workers)
        mode = est.getTrainingMode()
        if mode == "auto":
            mode = "replicated" if need <= have else "distributed"
        info = {"mode": mode, "replicated_task_bytes": need, "task_memory_bytes": have,
                "memory_limit_bytes": limit}
        params = dict(seed=int(est.getSeed()), max_leaf=est.getMaxLeaf(),
                      labels_per_leaf=est.getLabelsPerLeaf(),
                      log_loss_coeff=float(est.getLogLossCoeff()), bias=float(est.getBias()))
        n_features, n_labels = stats["n_features"], stats["n_labels"]
        if mode == "distributed":
            have_d, _, _ = task_memory(spark, requested)
            avg = (lambda rows: estimate_task_bytes(
                rows, stats["nnz_x"] * rows / max(stats["rows"], 1),
                stats["nnz_y"] * rows / max(stats["rows"], 1), n_features, n_labels))
            t0 = time.perf_counter()
            with progress.phase("train"):
                forest, extra, more = fit_distributed(
                    data, stats, params, num_trees, requested, have_d, avg, fcol, lcol,
                    propensity, tail, who, progress.task_spec())
            info.update(more, task_memory_bytes=have_d, workers=requested,
                        train_seconds=time.perf_counter() - t0)
            unit = "tree top"
        else:
            check_memory(spark, stats, workers, who, extra_bytes, threads)
            t0 = time.perf_counter()
            with progress.phase("train"):
                forest, extra, tasks = _fit_replicated(
                    data, params, num_trees, workers, n_features, n_labels, fcol, lcol,
                    propensity, tail, who, progress.task_spec(per_task=True),
                    forest_spread(stats, num_trees), nthread)
            info.update(workers=workers, tasks=tasks, train_seconds=time.perf_counter() - t0)
            unit = "tree"
        info["checks_seconds"] = checks_seconds
        if progress.verbose > 0 and not progress.live_lines:
            progress.log_rounds([(i, {}) for i in range(1, num_trees + 1)], num_trees,
                                unit=unit)
    return forest, extra, n_features, n_labels, info


def _fit_replicated(data, params, num_trees, workers, n_features, n_labels, fcol, lcol,
                    propensity, tail, who, progress=None, spread=True, nthread=None):
    def make_train(keys):
        extra_key = keys[0] if propensity is not None else None
        return _make_train_fn(trees_by_task(keys, num_trees), keys, n_features, n_labels,
                              params, fcol, lcol, propensity, tail, extra_key, progress,
                              nthread)

    per_task, infos = replicated_job(data, workers, make_train, spread)
    parts = [{name: a[name] for name in FOREST_DTYPES} for a in per_task.values()]
    forest = kforest.sort_forest(kforest.concat_forests(parts))
    if len(forest["tree_ids"]) != num_trees:
        raise RuntimeError(f"{who}: expected {num_trees} trees back from the training tasks, "
                           f"got {len(forest['tree_ids'])}")
    extra = {}
    if propensity is not None:
        first = [a for a in per_task.values() if "inv_prop" in a]
        if len(first) != 1:
            raise RuntimeError(f"{who}: expected the label weights from one training task, "
                               f"got {len(first)}")
        extra = {name: first[0][name] for name in EXTRA_DTYPES if name in first[0]}
        if not tail:
            extra.update({k: np.zeros(0, EXTRA_DTYPES[k]) for k in TAIL_KEYS})
    return forest, extra, [infos[r] for r in sorted(infos)]


def requested_workers(est, spark) -> int:
    """``numWorkers``, or the session's default parallelism when it is unset; at least 1."""
    return max(1, est.getNumWorkers() if est.isDefined(est.numWorkers)
               else default_parallelism(spark))


def trees_by_task(keys: list, num_trees: int) -> dict:
    """{group key: the trees its task trains}: task p trains trees p, p + workers, ..."""
    return {k: np.arange(p, num_trees, len(keys), dtype=np.int32) for p, k in enumerate(keys)}


# rows x trees, or labels x trees, from which a replicated fit's model may be large enough
# (hundreds of MB) to need collect_chunk_rows' shuffle; below both, the model comes back
# directly, as the shuffle costs a small fit about 0.18 s (benchmarks/collect_cost.py)
SPREAD_ROWS_TREES = 200_000
SPREAD_LABELS_TREES = 3_000


def spread_results(stats: dict, num_trees: int) -> bool:
    """Whether a replicated label-tree fit's results go through :func:`collect_chunk_rows`."""
    return (stats["rows"] * num_trees >= SPREAD_ROWS_TREES
            or stats["n_labels"] * num_trees >= SPREAD_LABELS_TREES)


# a FastXML forest's estimated bytes from which its replicated fit collects through the
# shuffle (a direct collect of a few hundred MB ran the driver's 1 GB heap out)
SPREAD_FOREST_BYTES = 256 << 20


def forest_bytes_estimate(stats: dict, num_trees: int) -> int:
    """A FastXML forest's bytes, overestimated: per tree a node weight (index and value, 8
    bytes) per feature entry of the rows, a (label, score) pair per label entry, 40 bytes
    a row for the nodes. Bibtex's 50 trees make 15 MB, estimated 150 MB. FastXML keeps no
    per-label weights, so unlike a label tree's its size does not grow with the labels."""
    per_tree = 8 * int(stats["nnz_x"]) + 8 * int(stats["nnz_y"]) + 40 * int(stats["rows"])
    return num_trees * per_tree


def forest_spread(stats: dict, num_trees: int) -> bool:
    """Whether a replicated FastXML fit's results go through :func:`collect_chunk_rows`."""
    return forest_bytes_estimate(stats, num_trees) >= SPREAD_FOREST_BYTES


def task_csr(table, fcol: str, lcol: str, n_features: int):
    """(xptr, xidx, xval, yptr, yidx): a task's rows (columns ``f``, ``y``) as CSR."""
    xi, xj, xv, _ = arrow_io.vectors_to_csr(table.column("f"), fcol, num_features=n_features)
    yi, yj = arrow_io.lists_to_csr(table.column("y"), lcol)
    return xi, xj, xv, yi, yj


def _make_train_fn(trees_of: dict, keys: list, n_features: int, n_labels: int, params: dict,
                   fcol: str, lcol: str, propensity, tail: bool, extra_key, progress=None,
                   nthread=None):
    # Plain locals only: the closure is pickled to the tasks.
    rank_of = {k: p for p, k in enumerate(keys)}

    def train(batches):
        from sparkxml_kernels.precompile import warm_async
        from sparkxml_kernels.progress import ProgressReporter

        warm_async("fastxml")  # load/compile the kernels while the rows arrive
        memory = TaskMemory()
        threads = worker_threads(nthread)
        for key, table in group_tables(batches):
            xi, xj, xv, yi, yj = task_csr(table, fcol, lcol, n_features)
            out = {}
            kw = dict(params)
            if propensity is not None:
                weights = propensity_weights(yi, yj, n_labels, *propensity)
                kw.update(label_weight=weights, normalise_dcg=False)
                if key == extra_key:
                    out["inv_prop"] = weights
                    if tail:
                        out.update(tail_centroids(xi, xj, xv, yi, yj, n_features, n_labels,
                                                  params["bias"]))
            trees = trees_of[key]
            reporter = ProgressReporter(progress, rank_of[key])
            on_tree = (lambda done, n=len(trees): reporter.progress(done, n, unit="tree")) \
                if reporter.enabled else None
            try:  # (tree t depends on (seed, t) only: any threads, any order)
                out.update(kforest.train_forest(xi, xj, xv, yi, yj, n_features, n_labels,
                                                trees, n_threads=threads, on_tree=on_tree,
                                                **kw))
            finally:
                reporter.close()
            yield from encode_array_batches(rank_of[key], out, memory.info(rows=len(xi) - 1))

    return train


__all__ = ["FOREST_DTYPES", "EXTRA_DTYPES", "TAIL_KEYS", "check_memory", "data_stats",
           "estimate_task_bytes", "fit_forest", "ordered_rows", "replicated_bytes",
           "require_task_memory", "requested_workers", "tail_bytes",
           "task_csr", "task_memory", "trees_by_task"]
