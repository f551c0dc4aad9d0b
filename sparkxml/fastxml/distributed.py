"""Data-parallel FastXML-family training, for training sets that one task cannot hold.

``trainingMode="distributed"`` (or "auto" when replication does not fit) trains in one Spark
job of two stages, with DataFrame operations only (Spark Connect works):

1. **Top levels, data-parallel.** The rows, with their content (or input) order keys, are
   range-partitioned over ``numWorkers`` tasks (``repartitionByRange`` on the keys, then
   sorted within partitions), so every task holds a *shard*: consecutive rows of the global
   order. ONE barrier ``mapInArrow`` stage then grows the top levels of every tree with all
   tasks together over the socket collective (``sparkxml_kernels.fastxml.dist``): the sums
   of the nDCG step and of the separators' L1 logistic regression are ordered folds across
   the shards, so these nodes are the replicated trees' nodes bit for bit. A tree is grown
   this way level by level while one node of its current level holds more than
   ``threshold`` rows; its first level whose nodes all fit is its *frontier*. Several trees
   advance in lockstep (one fold per round carries all of them); how many is set by the
   memory left next to the shard.
2. **Subtrees, one task each.** Every shard writes its rows of every frontier node, keyed by
   (tree, node), to the stage's output; ``repartition`` by that key and a sort bring each
   node's rows together, in the global order, to one task, which grows the subtree with the
   ordinary kernel from the seed ``dist.subtree_seed(tree seed, node id)`` and returns it.

The driver splices the subtrees into the tops (breadth-first node order, as the kernel's).
Everything comes back as chunked binary rows (``_barrier.encode_array_batches``): no cell
over 8 MB, no batch over 64 MB. The barrier stage is a ShuffleMapStage (its output is
repartitioned), so Spark retries it as a whole; the stages are deterministic.

``threshold`` = min(ceil(rows / numWorkers), the most rows one task's memory holds for a
subtree): a subtree never needs more memory than a shard. The model depends on the rows, the
seed and ``threshold``, not on how the rows were partitioned or where shards begin. What is
identical to replicated training: every node above the frontier (weights, leaf
distributions, node ids), and the whole tree when its root fits (frontier = root: the subtree
seed is then the tree's own). What differs: the subtrees below the frontier, grown from their
own random streams (``dist`` explains why the tree's stream cannot be continued there).

PfastreXML: the label counts are counted by Spark (exact integers) and the inverse
propensities computed from them on the driver, as replicated training computes them in its
first task; the tail centroids come from a separate job that brings each label's rows
together in the global order (``tail_centroids``), which gives each centroid bit for bit.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import (
    RESULT_SCHEMA,
    TaskMemory,
    decode_ranks,
    encode_array_batches,
    make_barrier_task,
    peak_rss_bytes,
    rss_bytes,
)
from sparkxml._core.compat import to_arrow
from sparkxml_kernels import arrow_io
from sparkxml_kernels.fastxml import dist as kdist
from sparkxml_kernels.fastxml import forest as kforest
from sparkxml_kernels.fastxml._common import tree_seed
from sparkxml_kernels.fastxml.ndcg import discount_tables, label_weights
from sparkxml_kernels.fastxml.pfastre import (
    centroid_add,
    centroid_emit,
    propensity_weights_from_counts,
    unit_norms,
)
from sparkxml_kernels.fastxml.splice import splice_tree

# Bound on every wait for a peer inside the barrier stage (a dead peer fails at once; this is
# for one that hangs). A fold waits for the lower shards' work on one node step, seconds.
TIMEOUT_S = 600.0
_GROUP = "group"
STAGE_SCHEMA = T.StructType(list(RESULT_SCHEMA.fields)
                            + [T.StructField(_GROUP, T.LongType(), False)])
_TOP = -1      # group of the top arrays and of the barrier tasks' diagnostics
_STAGE2 = -2   # group of the subtree tasks' diagnostics
_TOP_KEYS = ("children", "frontier", "w_indptr", "w_index", "w_value", "leaf_indptr",
             "leaf_label", "leaf_score", "frontier_ids", "frontier_n")


# --------------------------------------------------------------------------- memory plan

def csr_bytes(rows: float, nnz_x: float, nnz_y: float) -> int:
    """A CSR copy of rows: int64 pointers for X and Y, int32 + float32 X entries, int32
    labels."""
    return int(16 * rows + 8 * nnz_x + 4 * nnz_y)


def plan(stats: dict, workers: int, num_trees: int, have: int, estimate) -> dict:
    """Sizes of distributed training with ``workers`` shards and ``have`` bytes a task.

    Stage 1 holds the shard (twice while it loads: the Arrow pieces and the concatenation;
    once more while a frontier node's rows are written out) and one workspace per lane
    (``dist.lane_bytes`` plus the node's column-major copy and the frontier rows). Stage 2
    holds one subtree: ``estimate(rows)``, the replicated estimate for that many rows.
    Returns ``threshold``, ``lanes``, ``stage1_bytes``, ``stage2_bytes`` (at the threshold);
    ``lanes`` is 0 when even one lane does not fit.
    """
    n = max(stats["rows"], 1)
    r = math.ceil(n / workers)
    fx, fy = stats["nnz_x"] * r / n, stats["nnz_y"] * r / n
    shard = csr_bytes(r, fx, fy)
    lane = (kdist.lane_bytes(r, stats["n_features"], stats["n_labels"])
            + 8 * int(fx + r) + 4 * r)
    lanes = int(max(0, min(num_trees, (have - 3 * shard) // max(lane, 1))))
    b = estimate(0)
    a = (estimate(n) - b) / n
    fit = int((have - b) // a) if have > b else 0
    threshold = max(0, min(r, fit))
    return {"threshold": threshold, "lanes": lanes, "shard_rows": r,
            "stage1_bytes": 3 * shard + max(lanes, 1) * lane,
            "stage2_bytes": int(estimate(threshold)), "lane_bytes": lane}


def min_workers(stats: dict, num_trees: int, have: int, estimate, max_leaf: int) -> int | None:
    """The fewest shards with which one lane and a subtree above ``max_leaf`` rows fit."""
    for w in range(1, 4097):
        p = plan(stats, w, num_trees, have, estimate)
        if p["lanes"] >= 1 and p["threshold"] > max_leaf:
            return w
    return None


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# --------------------------------------------------------------------------- driver

def label_counts(data, n_labels: int) -> np.ndarray:
    """N_l: rows carrying label l (labels are deduplicated per row already), int64 (L,)."""
    rows = (data.select(F.explode("y").alias("_l")).groupBy("_l").count().collect())
    counts = np.zeros(max(n_labels, 1), np.int64)
    for r in rows:
        counts[int(r[0])] = int(r[1])
    return counts[:n_labels]


def fit_distributed(data, stats: dict, params: dict, num_trees: int, workers: int, have: int,
                    estimate, fcol: str, lcol: str, propensity=None, tail: bool = False,
                    who: str = "FastXML", progress: dict | None = None):
    """Train the forest data-parallel (see the module docstring).

    ``data``: ``_fastxml_fit.ordered_rows`` output (``_k1``, ``_k2``, ``f``, ``y``);
    ``params``: seed, max_leaf, labels_per_leaf, log_loss_coeff, bias; ``have``: bytes a
    task may use; ``estimate(rows)``: replicated-task bytes for that many average rows;
    ``progress``: ``FitProgress.task_spec()`` (rank 0 of the barrier stage reports the trees
    whose top levels are done). Returns (forest, extra arrays, info).
    """
    p = plan(stats, workers, num_trees, have, estimate)
    if p["lanes"] < 1 or p["threshold"] <= params["max_leaf"]:
        need = min_workers(stats, num_trees, have, estimate, params["max_leaf"])
        hint = (f"Use numWorkers >= {need} (or raise spark.executor.pyspark.memory)." if need
                else "No number of tasks makes it fit: raise spark.executor.pyspark.memory.")
        raise MemoryError(
            f"{who}: distributed training with numWorkers={workers} gives each task "
            f"{p['shard_rows']} rows, which need about {_mib(p['stage1_bytes'])} with one "
            f"tree's workspace ({_mib(p['lane_bytes'])}), but a task has {_mib(have)}. {hint}")
    n_features, n_labels, n_rows = stats["n_features"], stats["n_labels"], stats["rows"]
    info = {"threshold_rows": p["threshold"], "lanes": p["lanes"],
            "planned_stage1_bytes": p["stage1_bytes"], "planned_stage2_bytes": p["stage2_bytes"]}
    extra = {}
    weights, normalise, counts = None, True, None
    if propensity is not None:
        counts = label_counts(data, n_labels)
        weights = propensity_weights_from_counts(counts, n_rows, *propensity)
        normalise = False
        extra["inv_prop"] = weights
        if tail:
            t0 = time.perf_counter()
            extra.update(tail_centroids(data, counts, n_features, n_labels,
                                        float(params["bias"]), fcol, max(2 * workers, 2)))
            info["tail_seconds"] = time.perf_counter() - t0
        else:
            extra.update({"tail_indptr": np.zeros(0, np.int64),
                          "tail_index": np.zeros(0, np.int32),
                          "tail_value": np.zeros(0, np.float32)})
    stage1 = _make_stage1(params, num_trees, p["threshold"], p["lanes"], n_features, n_labels,
                          fcol, lcol, weights, normalise, progress)
    stage2 = _make_stage2(params, n_features, n_labels, weights, normalise)
    t0 = time.perf_counter()
    sharded = (data.repartitionByRange(workers, "_k1", "_k2")
               .sortWithinPartitions("_k1", "_k2"))
    out = to_arrow(sharded.mapInArrow(stage1, STAGE_SCHEMA, barrier=True)
                   .repartition(max(2 * workers, 2), _GROUP)
                   .sortWithinPartitions(_GROUP, "rank", "name", "part")
                   .mapInArrow(stage2, STAGE_SCHEMA))
    info["seconds"] = time.perf_counter() - t0
    forest, stage_info = assemble(out, num_trees, params["seed"])
    info.update(stage_info)
    if len(forest["tree_ids"]) != num_trees:
        raise RuntimeError(f"{who}: expected {num_trees} trees back from distributed "
                           f"training, got {len(forest['tree_ids'])}")
    return forest, extra, info


def _split_groups(table: pa.Table):
    """{group: the table's rows of that group}."""
    g = table.column(_GROUP).to_numpy()
    order = np.argsort(g, kind="stable")
    table, g = table.take(pa.array(order)), g[order]
    cuts = np.flatnonzero(np.diff(g)) + 1
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    ends = np.concatenate([cuts, [len(g)]]).astype(np.int64)
    return {int(g[a]): table.slice(a, b - a) for a, b in zip(starts, ends) if b > a}


def assemble(table: pa.Table, num_trees: int, seed: int):
    """The forest from the job's output: tops (group -1, rank 0) spliced with the subtrees
    (group = (tree << 32) | node); plus diagnostics from both stages."""
    groups = _split_groups(table)
    top_arrays, top_infos = decode_ranks(groups.pop(_TOP))
    _, sub_infos = decode_ranks(groups.pop(_STAGE2)) if _STAGE2 in groups else ({}, {})
    tops = top_arrays.get(0, {})
    trees = []
    for t in range(num_trees):
        top = {k: tops[f"t{t}/{k}"] for k in _TOP_KEYS}
        subs = []
        for node in top["frontier_ids"]:
            key = (t << 32) | int(node)
            arrays, _ = decode_ranks(groups.pop(key))
            subs.append(arrays[0])
        trees.append(splice_tree(top, subs, t))
    if groups:
        raise RuntimeError(f"distributed training returned {len(groups)} unclaimed subtrees")
    info = {"stage1": [top_infos[r] for r in sorted(top_infos)],
            "stage2": [sub_infos[r] for r in sorted(sub_infos)]}
    info["frontier_nodes"] = int(sum(len(tops[f"t{t}/frontier_ids"]) for t in range(num_trees)))
    # nodes above the frontier of each tree: ids 0 .. k-1 (whole levels, breadth first)
    info["top_nodes_per_tree"] = [int((tops[f"t{t}/frontier"] < 0).sum())
                                  for t in range(num_trees)]
    return kforest.concat_forests(trees), info


def _with_group(batch: pa.RecordBatch, group: int) -> pa.RecordBatch:
    return batch.append_column(pa.field(_GROUP, pa.int64(), False),
                               pa.array(np.full(batch.num_rows, group, np.int64)))


def _as_output(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A passed-through input batch with exactly the output schema (nullability included)."""
    schema = _with_group(encode_array_batches(0, None, {}).__next__(), 0).schema
    return pa.RecordBatch.from_arrays(batch.columns, schema=schema)


# --------------------------------------------------------------------------- stage 1

def _make_stage1(params, num_trees, threshold, lanes, n_features, n_labels, fcol, lcol,
                 weights, normalise, progress=None):
    # Plain values only: the closures are pickled to the tasks.
    seed = int(params["seed"])
    max_leaf, labels_per_leaf = int(params["max_leaf"]), int(params["labels_per_leaf"])
    coeff, bias = float(params["log_loss_coeff"]), float(params["bias"])

    def load(batches, rank, world):
        rss0 = rss_bytes()
        xs, ys = [], []
        for b in batches:
            if b.num_rows == 0:
                continue
            xi, xj, xv, _ = arrow_io.vectors_to_csr(b.column("f"), fcol,
                                                    num_features=n_features)
            ys.append(arrow_io.lists_to_csr(b.column("y"), lcol))
            xs.append((xi, xj, xv))
        (xi, xj, xv) = kdist.concat_csr(xs, 2)
        (yi, yj) = kdist.concat_csr(ys, 1)
        return kdist.Shard(xi, xj, xv, yi, yj, n_features, n_labels), rss0

    def train(state, coll, rank, world):
        from sparkxml_kernels.progress import ProgressReporter

        shard, rss0 = state
        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        t0 = time.perf_counter()
        max_row = int(np.diff(shard.Y_indptr).max()) if shard.n_rows else 0
        disc, csum = discount_tables(n_labels, max_row, normalise)
        cfg = kdist.GrowConfig(threshold, max_leaf, labels_per_leaf, coeff, bias, disc, csum,
                               label_weights(weights, n_labels))
        rounds = [0]

        class Counting:  # counts folds for the diagnostics
            def ordered_fold(self, init, add):
                rounds[0] += 1
                return coll.ordered_fold(init, add)

        counting = Counting()
        sent_rows = 0
        for start in range(0, num_trees, lanes):
            batch = list(range(start, min(num_trees, start + lanes)))
            tops = kdist.run_lanes(counting, [kdist.grow_top(shard, cfg, tree_seed(seed, t))
                                              for t in batch])
            for t, top in zip(batch, tops):
                if rank == 0:
                    arrays = {f"t{t}/{k}": top[k] for k in _TOP_KEYS}
                    for b in encode_array_batches(0, arrays, None, with_info=False):
                        yield _with_group(b, _TOP)
                for k, node in enumerate(top["frontier_ids"]):
                    rows = top["frontier_rows"][k]
                    if len(rows) == 0:
                        continue
                    sent_rows += len(rows)
                    for b in encode_array_batches(rank, shard.take(rows), None,
                                                  with_info=False):
                        yield _with_group(b, (t << 32) | int(node))
            del tops
            for t in batch:
                reporter.progress(t + 1, num_trees, unit="tree top")
        reporter.close()
        info = {"rank": rank, "world_size": world, "shard_rows": shard.n_rows,
                "rounds": rounds[0], "rows_sent": sent_rows,
                "train_seconds": time.perf_counter() - t0,
                "peak_rss_bytes": peak_rss_bytes(), "rss_start_bytes": rss0,
                "bytes_sent": getattr(coll, "bytes_sent", 0)}
        for b in encode_array_batches(rank, None, info):
            yield _with_group(b, _TOP)

    return make_barrier_task(load, train, _new_key(), TIMEOUT_S, stream=True)


def _new_key() -> bytes:
    from sparkxml_kernels.collective import new_authkey

    return new_authkey()


# --------------------------------------------------------------------------- stage 2

def _make_stage2(params, n_features, n_labels, weights, normalise):
    seed = int(params["seed"])
    kw = dict(max_leaf=int(params["max_leaf"]), labels_per_leaf=int(params["labels_per_leaf"]),
              log_loss_coeff=float(params["log_loss_coeff"]), bias=float(params["bias"]),
              label_weight=weights, normalise_dcg=normalise)

    def grow(group, pieces):
        per_rank, _ = decode_ranks(pa.Table.from_batches(pieces))
        parts = [per_rank[r] for r in sorted(per_rank)]
        xi, xj, xv = kdist.concat_csr(
            [(p["X_indptr"], p["X_indices"], p["X_data"]) for p in parts], 2)
        yi, yj = kdist.concat_csr([(p["Y_indptr"], p["Y_indices"]) for p in parts], 1)
        del parts, per_rank
        t, node = group >> 32, group & 0xFFFFFFFF
        state = kdist.subtree_seed(tree_seed(seed, t), node)
        sub = kforest.train_forest(xi, xj, xv, yi, yj, n_features, n_labels, [t],
                                   states=[state], **kw)
        return len(xi) - 1, sub

    def task(batches):
        from pyspark import TaskContext

        memory = TaskMemory()
        t0 = time.perf_counter()
        pid = TaskContext.get().partitionId()
        current, pieces, grown, rows = None, [], 0, 0
        for b in batches:
            if b.num_rows == 0:
                continue
            g = b.column(_GROUP).to_numpy()
            cuts = np.flatnonzero(np.diff(g)) + 1
            for a, e in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(g)]])):
                group, part = int(g[a]), b.slice(int(a), int(e - a))
                if group < 0:
                    yield _as_output(part)  # tops and barrier diagnostics pass through
                    continue
                if group != current:
                    if pieces:
                        n, sub = grow(current, pieces)
                        grown, rows = grown + 1, rows + n
                        for out in encode_array_batches(0, sub, None, with_info=False):
                            yield _with_group(out, current)
                    current, pieces = group, []
                pieces.append(part)
        if pieces:
            n, sub = grow(current, pieces)
            grown, rows = grown + 1, rows + n
            for out in encode_array_batches(0, sub, None, with_info=False):
                yield _with_group(out, current)
        info = memory.info(partition=pid, subtrees=grown, rows=rows,
                           seconds=time.perf_counter() - t0)
        for out in encode_array_batches(pid, None, info):
            yield _with_group(out, _STAGE2)

    return task


# --------------------------------------------------------------------------- tail centroids

def tail_centroids(data, counts, n_features: int, n_labels: int, bias: float, fcol: str,
                   partitions: int) -> dict:
    """PfastreXML's tail centroids without holding the training set in one task: the rows
    are exploded by label, brought together per label in the global order
    (``repartition`` + sort), and each label's centroid is summed over its stream of rows with
    the kernel's float32 steps (``pfastre.centroid_add``), from N_l counted beforehand. The
    same arrays as ``pfastre.tail_centroids`` on the whole set."""
    counts = np.asarray(counts, np.int64)

    def task(batches):
        from pyspark import TaskContext

        pid = TaskContext.get().partitionId()
        D1 = n_features + 1
        acc = np.zeros(D1, np.float32)
        seen = np.zeros(D1, np.bool_)
        touched = np.empty(D1, np.int64)
        bias32 = np.float32(bias)
        labels, lens, index, value = [], [], [], []
        cur, nt = -1, 0
        buf_i, buf_v = np.empty(D1, np.int32), np.empty(D1, np.float32)

        def emit():
            k = centroid_emit(acc, seen, touched, nt, buf_i, buf_v, 0)
            labels.append(cur)
            lens.append(k)
            index.append(buf_i[:k].copy())
            value.append(buf_v[:k].copy())

        for b in batches:
            if b.num_rows == 0:
                continue
            lab = b.column("_l").to_numpy()
            xi, xj, xv, _ = arrow_io.vectors_to_csr(b.column("f"), fcol,
                                                    num_features=n_features)
            Xp, Xi = xi.view(np.uint64), xj.view(np.uint32)
            norms = unit_norms(Xp, xv, bias32)
            cuts = np.flatnonzero(np.diff(lab)) + 1
            for a, e in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(lab)]])):
                label = int(lab[a])
                if label != cur:
                    if cur >= 0:
                        emit()
                    cur, nt = label, 0
                a32 = np.float32(1.0 / np.float64(counts[label]))
                nt = centroid_add(Xp, Xi, xv, norms, np.arange(a, e, dtype=np.int64), a32,
                                  n_features, bias32, acc, seen, touched, nt)
        if cur >= 0:
            emit()
        cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
        arrays = {"labels": np.asarray(labels, np.int64), "lens": np.asarray(lens, np.int64),
                  "index": cat(index, np.int32), "value": cat(value, np.float32)}
        for out in encode_array_batches(pid, arrays, None):
            yield out

    table = to_arrow(data.select(F.explode("y").alias("_l"), "_k1", "_k2", "f")
                     .repartition(partitions, "_l").sortWithinPartitions("_l", "_k1", "_k2")
                     .mapInArrow(task, RESULT_SCHEMA))
    per_rank, _ = decode_ranks(table)
    lens = np.zeros(max(n_labels, 1), np.int64)[:n_labels]
    rows_of = {}
    for arrays in per_rank.values():
        offs = np.concatenate([[0], np.cumsum(arrays["lens"])])
        for q, label in enumerate(arrays["labels"]):
            lens[label] = arrays["lens"][q]
            rows_of[int(label)] = (arrays["index"][offs[q]:offs[q + 1]],
                                   arrays["value"][offs[q]:offs[q + 1]])
    indptr = np.zeros(n_labels + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    order = sorted(rows_of)
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    return {"tail_indptr": indptr,
            "tail_index": cat([rows_of[lab][0] for lab in order], np.int32),
            "tail_value": cat([rows_of[lab][1] for lab in order], np.float32)}
