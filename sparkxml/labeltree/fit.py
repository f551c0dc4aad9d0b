"""The Spark side of training label-tree forests (Parabel, Bonsai) with replicated data.

The training set is replicated to ``numWorkers`` Spark tasks with DataFrame operations only
(``sparkxml._core.replicated.replicated_job``: one copy of each row per group, repartition by
group, ``mapInArrow``; no broadcast, no RDD, so it runs over Spark Connect too). Each task
orders its rows by a key computed in the JVM from their content (``sparkxml.fastxml.fit``'s
``ordered_rows``: the model then depends only on the multiset of rows and the seed), clusters
every tree and trains its share of all the trees' nodes, dealt by estimated cost
(``sparkxml_kernels.labeltree.spread``); the nodes come back as chunked binary rows, task 0's
with the trees' structure. A node's classifiers depend only on the data, the params and
(seed, tree, node), so the model is the same whatever numWorkers and the partitioning.

``trainingMode="distributed"`` trains the upper nodes over shares of the rows and the
subtrees below them one a task instead, without any task holding the training set
(``sparkxml.labeltree.levelwise``); the forest is the same except at the nodes it solves
over row blocks (those whose labels carry at least 16,384 (row, label)
pairs and half as many as there are rows).

The data pass, its checks and error messages, and the memory check are FastXML's.
"""
from __future__ import annotations

import time

from sparkxml._core.barrier import TaskMemory, encode_array_batches
from sparkxml._core.progress import FitProgress
from sparkxml._core.replicated import group_tables, replicated_job
from sparkxml.fastxml.fit import (
    check_memory,
    data_stats,
    ordered_rows,
    replicated_bytes,
    requested_workers,
    spread_results,
    task_csr,
    task_memory,
)
from sparkxml.labeltree.levelwise import fit_levelwise
from sparkxml_kernels.labeltree import forest as kforest
from sparkxml_kernels.labeltree import levels as klevels
from sparkxml_kernels.labeltree import spread as kspread


def fit_label_trees(est, dataset, who: str):
    """Train ``est``'s forest on ``dataset``; return (forest, n_features, n_labels, info)."""
    fcol, lcol = est.getFeaturesCol(), est.getLabelsCol()
    spark = dataset.sparkSession
    num_trees = est.getNumTrees()
    requested = requested_workers(est, spark)
    mode = est.getTrainingMode()
    workers = max(1, requested)
    params = kforest.check_params(est.kernel_params())
    data = ordered_rows(dataset, fcol, lcol, "content")
    with FitProgress(spark, est, est.getVerbose()) as progress:
        t0 = time.perf_counter()
        with progress.phase("checks"):
            stats = data_stats(data, fcol, lcol, who)
        checks_seconds = time.perf_counter() - t0
        have, limit, _ = task_memory(spark, workers)
        n_features, n_labels = stats["n_features"], stats["n_labels"]
        info = {"mode": mode, "workers": workers, "checks_seconds": checks_seconds,
                "replicated_task_bytes": replicated_bytes(stats), "task_memory_bytes": have,
                "memory_limit_bytes": limit}
        t0 = time.perf_counter()
        if mode == "distributed":
            with progress.phase("train"):
                forest, more = fit_levelwise(data, params, num_trees, workers, n_features,
                                             n_labels, stats["rows"], fcol, lcol, who,
                                             progress.verbose,
                                             progress.task_spec(per_task=True))
            info.update(more, train_seconds=time.perf_counter() - t0)
            return forest, n_features, n_labels, info
        check_memory(spark, stats, workers, who)
        with progress.phase("train"):
            forest, tasks = _fit_replicated(data, params, num_trees, workers,
                                            n_features, n_labels, fcol, lcol, who,
                                            progress.task_spec(per_task=True),
                                            spread_results(stats, num_trees))
        info.update(tasks=tasks, train_seconds=time.perf_counter() - t0)
        if progress.verbose > 0 and not progress.live_lines:
            progress.log_rounds([(i, {}) for i in range(1, num_trees + 1)], num_trees,
                                unit="tree")
    return forest, n_features, n_labels, info


def _fit_replicated(data, params, num_trees, workers, n_features, n_labels, fcol, lcol, who,
                    progress=None, spread=True):
    tree_ids = list(range(num_trees))

    def make_train(keys):
        return _make_train_fn(keys, tree_ids, n_features, n_labels, params, fcol, lcol,
                              progress)

    per_task, infos = replicated_job(data, workers, make_train, spread)
    if 0 not in per_task:
        raise RuntimeError(f"{who}: the first training task sent no trees back")
    trees, ids = kspread.unpack_trees(per_task[0])
    weights: dict = {}
    for arrays in per_task.values():
        weights.update(klevels.unpack_nodes(arrays))
    forest = klevels.assemble_forest(trees, ids, weights)
    if len(forest["tree_ids"]) != num_trees:
        raise RuntimeError(f"{who}: expected {num_trees} trees back from the training tasks, "
                           f"got {len(forest['tree_ids'])}")
    return forest, [infos[r] for r in sorted(infos)]


def _make_train_fn(keys: list, tree_ids: list, n_features: int, n_labels: int, params: dict,
                   fcol: str, lcol: str, progress=None):
    # Plain locals only: the closure is pickled to the tasks.
    rank_of = {k: p for p, k in enumerate(keys)}

    def train(batches):
        from sparkxml_kernels.progress import ProgressReporter

        memory = TaskMemory(kernels=("labeltree",))
        for key, table in group_tables(batches):
            xi, xj, xv, yi, yj = task_csr(table, fcol, lcol, n_features)
            reporter = ProgressReporter(progress, rank_of[key])
            out = kspread.train_spread(
                xi, xj, xv, yi, yj, n_features, n_labels, tree_ids, rank_of[key], len(keys),
                report=(lambda done, total: reporter.progress(done, total, unit="tree"))
                if reporter.enabled else None, keys=table.column("_k1").to_numpy(), **params)
            reporter.close()
            yield from encode_array_batches(rank_of[key], out, memory.info(rows=len(xi) - 1))

    return train
