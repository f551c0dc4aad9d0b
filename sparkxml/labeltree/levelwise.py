"""Level-wise distributed training of label-tree forests (``trainingMode="distributed"``).

The forest is the same for the same seed and rows, whatever numWorkers and the
partitioning. It is the replicated mode's bit for bit except at the split nodes (below),
whose solver visits the rows block by block instead of in one permutation of them all.
With DataFrame operations only
(``explode``, ``repartition``, ``sortWithinPartitions``, ``mapInArrow``; Spark Connect
works), in four jobs:

1. **Label representations.** The rows are exploded to one copy per label, brought together
   per label in the global row order (``repartition`` by label, sort by (label, content
   key)), and each task computes its labels' rows of ``R`` and their row counts
   (``sparkxml_kernels.labeltree.levels.representations_part``). The driver gathers the
   L x D sparse ``R``.
2. **Trees.** The driver clusters ``R`` into every tree (``cluster.build_tree``): the
   clustering needs the representations only.
3. **The split nodes, in one barrier job.** A node whose labels carry many (row, label)
   pairs (``sparkxml_kernels.labeltree.nodes.split_node``: at least 16,384 and half the
   rows; the roots and the levels below them) is solved over fixed blocks of rows (a row's
   block is its content key modulo 8), each pass visiting the blocks in a random order of
   its own (``blocked.pass_order``). Each barrier task holds a contiguous range of
   blocks, every labelled row once in all, and a node problem goes, with its weights, to the
   task holding its next block (``sparkxml_kernels.labeltree.pipeline``), so no task holds
   the rows of a root. The nodes go in waves of at most 16 problems; every task ends a wave
   with all its weights, and task ``w mod tasks`` sends wave ``w``'s classifiers on as the
   wave ends, so no task holds every split node's classifiers either.
4. **One job for the subtrees below the split nodes.** The nodes that are not split form
   subtrees (a node's label rows are at least its children's), and each subtree is given
   to one task (``levels.subtree_plan``): to one of ``numWorkers`` tasks, longest first on
   its root's label row counts, or, when that few would hold more than ``rows /
   (2 numWorkers)`` estimated rows each, to one of consecutive groups of subtrees of at
   most that many, a task each (Spark runs them ``numWorkers`` at a time, the costliest
   first). A ``mapInArrow`` sends each row to every task owning a subtree it belongs to
   (once a task), ``repartition`` brings each task its rows, which it orders by the
   content key as the replicated task does and trains its subtrees' nodes on
   (``levels.train_parts``), sending the classifiers on in parts of ``PART_BYTES``. A task
   holds the rows of its subtrees' roots only, each root fewer than max(16,384, half the
   training rows) of them (its label rows are below the split threshold), and the rows
   travel once for all the levels below the split nodes.

The trained nodes come back as chunked binary rows (``_core.barrier.encode_array_batches``)
and the driver lays the forest out (``levels.assemble_forest``).
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import (
    RESULT_SCHEMA,
    TaskMemory,
    collect_ranks,
    encode_array_batches,
    make_barrier_task,
)
from sparkxml._core.partitioning import partition_keys
from sparkxml._core.replicated import converted_groups
from sparkxml.fastxml.fit import task_csr
from sparkxml_kernels import arrow_io
from sparkxml_kernels.collective import new_authkey
from sparkxml_kernels.labeltree import levels as klevels
from sparkxml_kernels.labeltree import pipeline as kpipeline
from sparkxml_kernels.labeltree.blocked import NUM_BLOCKS
from sparkxml_kernels.labeltree.data import label_matrix, normalised_rows
from sparkxml_kernels.labeltree.nodes import row_blocks
from sparkxml_kernels.memory import release_freed
from sparkxml_kernels.progress import LOGGER, format_record

# bound on a split-node task's wait for its peers: one round is one visit of a task's rows
# per problem it holds, seconds even at millions of rows
SPLIT_TIMEOUT_S = 1800.0
# a subtree task sends its classifiers in parts of about this size (result keys: rank *
# PARTS_PER_TASK + part, in an int32)
PART_BYTES = 16 << 20
PARTS_PER_TASK = 4096


def fit_levelwise(data, params: dict, num_trees: int, workers: int, n_features: int,
                  n_labels: int, n_rows: int, fcol: str, lcol: str, who: str,
                  verbose: int = 0, task_progress: dict | None = None):
    """Train the forest: the split nodes, then the subtrees below them (see the module
    docstring).

    ``data``: ``sparkxml.fastxml.fit.ordered_rows`` output (``_k1``, ``_k2``, ``f``, ``y``)
    of ``n_rows`` rows;
    ``params``: ``sparkxml_kernels.labeltree.forest.check_params`` output;
    ``task_progress``: ``FitProgress.task_spec`` for the subtree tasks' "subtree i/n" lines.
    Returns (forest, info): ``info`` has per stage (``split_stage``, ``subtree_stage``) the
    nodes trained, its seconds and per task its rows and peak RSS.
    """
    params = dict(params, split_nodes=True)
    t0 = time.perf_counter()
    R, labels, counts, rep_tasks = representations(data, n_features, n_labels, fcol,
                                                   max(2 * workers, 2))
    info = {"representation_seconds": time.perf_counter() - t0, "representation_tasks":
            rep_tasks}
    t0 = time.perf_counter()
    tree_ids = list(range(num_trees))
    trees = klevels.build_trees(R, labels, tree_ids, params)
    del R
    info["cluster_seconds"] = time.perf_counter() - t0
    weights: dict = {}
    split = klevels.split_nodes(trees, tree_ids, counts, params, n_rows)
    if split:
        t0 = time.perf_counter()
        trained, split_tasks = fit_split_nodes(data, split, params, workers, n_features,
                                               n_labels, fcol, lcol)
        weights.update(trained)
        info["split_stage"] = {"nodes": len(split), "seconds": time.perf_counter() - t0,
                               "tasks": split_tasks}
        if verbose > 0:
            LOGGER.info(format_record({
                "source": who, "kind": "progress", "unit": "split nodes", "done": len(split),
                "total": len(split), "elapsed": info["split_stage"]["seconds"]}))
    t0 = time.perf_counter()
    specs, label_task = klevels.subtree_plan(trees, tree_ids, counts, workers, n_labels,
                                             params, n_rows,
                                             cap=max(1, n_rows // (2 * workers)))
    if any(specs):  # else every node is a split node
        keys = partition_keys(len(specs))
        route = _make_route_fn(label_task, keys)
        train = _make_subtree_fn({keys[w]: s for w, s in enumerate(specs) if s}, keys,
                                 n_features, n_labels, params, fcol, lcol, task_progress)
        routed = T.StructType(list(data.schema.fields)
                              + [T.StructField("_g", T.LongType(), True)])
        per_key, task_info = collect_ranks(data.mapInArrow(route, routed)
                                           .repartition(len(specs), "_g")
                                           .mapInArrow(train, RESULT_SCHEMA))
        for key in sorted(k for k in per_key if k >= 0):
            weights.update(klevels.unpack_nodes(per_key[key]))
        nodes = sum(len(unit) for spec in specs for unit in spec)
        info["subtree_stage"] = {
            "subtrees": sum(len(spec) for spec in specs), "nodes": nodes,
            "seconds": time.perf_counter() - t0,
            "tasks": [task_info[k] for k in sorted(task_info, reverse=True)]}
        if verbose > 0:
            LOGGER.info(format_record({
                "source": who, "kind": "progress", "unit": "subtree nodes", "done": nodes,
                "total": nodes, "elapsed": info["subtree_stage"]["seconds"],
                "metrics": {"subtrees": info["subtree_stage"]["subtrees"]}}))
    forest = klevels.assemble_forest(trees, tree_ids, weights)
    # per task rank, its largest stage (rows and peak RSS): what the task had to hold
    tasks: dict = {}
    for name in ("split_stage", "subtree_stage"):
        for t in info.get(name, {"tasks": []})["tasks"]:
            r = t["rank"]
            best = tasks.get(r)
            if best is None or t.get("peak_rss_bytes", 0) > best.get("peak_rss_bytes", 0):
                tasks[r] = dict(t, stage=name)
    info["tasks"] = [tasks[r] for r in sorted(tasks)]
    return forest, info


def fit_split_nodes(data, nodes: list, params: dict, workers: int, n_features: int,
                    n_labels: int, fcol: str, lcol: str):
    """Train the split nodes (``levels.split_nodes``) in one barrier stage of
    min(numWorkers, ``blocked.NUM_BLOCKS``) tasks, task r holding the rows of blocks
    ``pipeline.block_rank(block) == r``; returns ({(tree, node): classifiers}, per-task info
    with ``rows`` and ``peak_rss_bytes``). Every task ends a wave of nodes with all their
    weights; wave w's classifiers are sent on by task w mod the tasks as soon as the wave
    ends, so a task holds one wave's classifiers at a time, not the stage's."""
    world = min(workers, NUM_BLOCKS)
    keys = partition_keys(world)
    rank = F.expr(f"cast(pmod(_k1, {NUM_BLOCKS}) * {world} div {NUM_BLOCKS} as int)")
    rows = (data.where(F.size("y") > 0)
            .withColumn("_g", F.element_at(F.array(*[F.lit(int(k)) for k in keys]), rank + 1))
            .repartition(world, "_g"))
    bias = float(params["bias"])

    def load(batches, r, world_size):
        memory = TaskMemory(kernels=("labeltree",))
        groups = list(_node_row_groups(batches, fcol, lcol, n_features, n_labels, bias))
        if not groups:
            z = np.zeros(1, np.int64)
            return (normalised_rows(z, np.zeros(0, np.int32), np.zeros(0), n_features, bias),
                    label_matrix(z, np.zeros(0, np.int32), 0, n_labels, bool).T.tocsr(),
                    np.zeros(0, np.int64),
                    memory)
        _, k1, X, Yt = groups.pop()
        blocks = row_blocks(k1, X.shape[0])
        if np.any(kpipeline.block_rank(blocks, world_size) != r):
            raise RuntimeError(f"split-node task {r} was sent rows of another task's blocks")
        return X, Yt, blocks, memory

    def train(state, coll, r, world_size):
        X, Yt, blocks, memory = state
        stats: dict = {}
        # a result key per wave (each is sent by one task), and one per task for its info
        for w, trained in kpipeline.split_node_waves(X, Yt, blocks, nodes, params, coll,
                                                     stats=stats,
                                                     keeper=lambda w: w % world_size == r):
            yield from encode_array_batches(w, klevels.pack_nodes(trained), None,
                                            with_info=False)
            del trained
            release_freed()  # the wave's work arrays and its encoded batches
        yield from encode_array_batches(-1 - r, None, memory.info(
            **stats, rank=r, rows=int(X.shape[0]), nodes=len(nodes)))

    task = make_barrier_task(load, train, new_authkey(), SPLIT_TIMEOUT_S, stream=True)
    per_key, infos = collect_ranks(rows.mapInArrow(task, RESULT_SCHEMA, barrier=True))
    weights: dict = {}
    for key in sorted(k for k in per_key if k >= 0):
        weights.update(klevels.unpack_nodes(per_key[key]))
    return weights, [infos[k] for k in sorted(infos, reverse=True)]


def _node_row_groups(batches, fcol: str, lcol: str, n_features: int, n_labels: int,
                     bias: float):
    """Per ``_g`` group of the input, (group, content keys ``_k1``, X, Yt): the rows, in the
    (``_k1``, ``_k2``) order, as the nodes read them. ``X``: the normalised rows
    (``data.normalised_rows``); ``Yt``: the labels' structure, transposed (labels x rows,
    bool: 1 byte an entry). Each Arrow batch is converted as it arrives, so the raw rows
    are never whole, and the labels are never held both ways at once but while one group
    is transposed."""
    def convert(b):
        xi, xj, xv, yi, yj = task_csr(b, fcol, lcol, n_features)
        X = normalised_rows(xi, xj, xv, n_features, bias)
        return X, label_matrix(yi, yj.copy(), X.shape[0], n_labels, bool)

    for key, k1, (X, Y) in converted_groups(batches, convert):
        # the nodes read the labels by label: the transposed matrix alone is kept
        Yt = Y.T.tocsr()
        del Y
        # the Arrow pool keeps the freed input batches resident, where numpy cannot reuse it
        release_freed()
        yield key, k1, X, Yt


def representations(data, n_features: int, n_labels: int, fcol: str, partitions: int):
    """(R, labels with rows, per-label row counts, per-task info) from one job over the rows
    exploded by label (see the module docstring)."""

    def task(batches):
        from pyspark import TaskContext

        memory = TaskMemory(kernels=("labeltree",))
        pieces = [b for b in batches if b.num_rows]
        if not pieces:
            return
        table = pa.Table.from_batches(pieces).combine_chunks()
        del pieces
        xi, xj, xv, _ = arrow_io.vectors_to_csr(table.column("f"), fcol,
                                                num_features=n_features)
        lab = table.column("_l").to_numpy()
        labels, counts, R = klevels.representations_part(xi, xj, xv, lab, n_features)
        pid = TaskContext.get().partitionId()
        yield from encode_array_batches(pid, {
            "labels": labels, "counts": counts, "indptr": R.indptr.astype(np.int64),
            "indices": R.indices.astype(np.int32), "data": R.data.astype(np.float64)},
            memory.info(rows=int(len(lab)), labels=int(len(labels))))

    per_task, infos = collect_ranks(data.select(F.explode("y").alias("_l"), "_k1", "_k2", "f")
                                    .repartition(partitions, "_l")
                                    .sortWithinPartitions("_l", "_k1", "_k2")
                                    .mapInArrow(task, RESULT_SCHEMA))
    parts = [(a["labels"], a["counts"],
              sp.csr_matrix((a["data"], a["indices"], a["indptr"]),
                            shape=(len(a["labels"]), n_features)))
             for _, a in sorted(per_task.items())]
    R, labels, counts = klevels.gather_representations(parts, n_labels, n_features)
    return R, labels, counts, [infos[r] for r in sorted(infos)]


def _make_route_fn(label_task: np.ndarray, keys: list):
    # Plain locals only: the closure is pickled to the tasks.
    key_of = np.asarray(keys, np.int64)

    def route(batches):
        for b in batches:
            if b.num_rows == 0:
                continue
            yi, yj = arrow_io.lists_to_csr(b.column("y"), "labels")
            rows, tasks = klevels.row_tasks(yi, yj, label_task)
            if len(rows) == 0:
                continue
            out = b.take(pa.array(rows))
            yield out.append_column(pa.field("_g", pa.int64()), pa.array(key_of[tasks]))

    return route


def _make_subtree_fn(spec_of: dict, keys: list, n_features: int, n_labels: int,
                     params: dict, fcol: str, lcol: str, progress: dict | None = None):
    # Plain locals only: the closure is pickled to the tasks.
    rank_of = {k: p for p, k in enumerate(keys)}

    def train(batches):
        from sparkxml_kernels.progress import ProgressReporter

        memory = TaskMemory(kernels=("labeltree",))
        for key, k1, X, Yt in _node_row_groups(batches, fcol, lcol, n_features, n_labels,
                                               float(params["bias"])):
            rank = rank_of[key]
            spec = spec_of.get(key, [])
            rows = X.shape[0]
            part = 0
            reporter = ProgressReporter(progress, rank)
            for done, unit in enumerate(spec, 1):
                # a subtree's classifiers go out in parts as they are trained: a task never
                # holds all of them (a subtree near the top is a few percent of the forest)
                for trained in klevels.train_parts(X, Yt, unit, params, k1, PART_BYTES):
                    if part >= PARTS_PER_TASK:
                        raise RuntimeError(f"subtree task {rank}: more than "
                                           f"{PARTS_PER_TASK} result parts")
                    yield from encode_array_batches(rank * PARTS_PER_TASK + part,
                                                    klevels.pack_nodes(trained), None,
                                                    with_info=False)
                    part += 1
                    del trained
                reporter.progress(done, len(spec), {"nodes": len(unit)}, unit="subtree")
            reporter.close()
            del X, Yt
            # the next task in this Python worker starts from what is resident now
            release_freed()
            yield from encode_array_batches(-1 - rank, None, memory.info(
                rank=rank, rows=rows, nodes=sum(len(u) for u in spec), subtrees=len(spec)))

    return train
