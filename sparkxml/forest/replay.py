"""scikit-learn's ``RandomForestClassifier`` replayed on Spark: ``rowIndexCol``.

scikit-learn's forest depends on the order of its rows: the bootstrap samples draw row
positions, and its sums add rows in the order its sorts leave. With ``rowIndexCol`` naming
each row's position in scikit-learn's training array, the rows are copied to ``numWorkers``
tasks (``sparkxml._core.replicated.replicated_job``: one copy of each row per group key,
``repartition``, ``mapInArrow``: DataFrame operations only, so it runs over Spark Connect
too); each task orders them by that column and grows trees rank, rank + numWorkers, ... with
``sparkxml_kernels.forest.replay`` (scikit-learn's per-tree seeds, bootstrap draws and class
weights from numpy's ``RandomState``, each tree grown by the ordered grower). The model is
the same for any numWorkers and partitioning, and equals scikit-learn's forest fitted on
the rows in that order with ``random_state = seed mod 2**32``, node for node.

Every task holds the whole training set (dense, 8 bytes a feature value), and the trees grow
in one process each: this mode is for reproducing scikit-learn, not for data larger than a
task's memory.
"""
from __future__ import annotations

import time

import numpy as np
from pyspark.sql import functions as F
from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

from sparkxml._core.barrier import TaskMemory, encode_array_batches
from sparkxml._core.categorical import categorical_features
from sparkxml._core.histogram_engine import (
    check_column,
    check_schema,
    data_checks,
    training_columns,
)
from sparkxml._core.progress import FitProgress
from sparkxml._core.replicated import group_tables, replicated_job
from sparkxml._core.validation import inferred_classes
from sparkxml._core.workers import requested_workers, workers_for
from sparkxml.fastxml.fit import require_task_memory
from sparkxml.forest.base import MAX_CLASSES, TreeTrainingSummary
from sparkxml_kernels.forest.predictor import ForestPredictor
from sparkxml_kernels.forest.pruning import prune_tree
from sparkxml_kernels.forest.tree import FIELDS, TreeArrays

# replicated results of more rows x trees than this go through the chunked collect
_SPREAD_ROWS_TREES = 200_000
_INDEX_TYPES = (ByteType, ShortType, IntegerType, LongType)


def check_replay_options(est, crit: str) -> None:
    """Refuse, before any job, the options this mode has no counterpart for."""
    refused = [(est._opt(est.monotonicConstraints) is not None, "monotonicConstraints"),
               (bool(est._opt(est.categoricalCols)), "categoricalCols")]
    for bad, name in refused:
        if bad:
            raise ValueError(f"rowIndexCol: {name} is not supported when replaying "
                             f"scikit-learn's forest; unset one of them")
    if est.getOobScore() and not est.getBootstrap():
        raise ValueError("oobScore=True needs bootstrap=True when replaying scikit-learn's "
                         "forest (as scikit-learn: every row is in every tree)")
    if crit not in ("gini", "entropy", "log_loss"):
        raise ValueError(f"rowIndexCol: criterion '{crit}' is not supported when replaying "
                         f"scikit-learn's forest (gini, entropy or log_loss)")


def check_replay_memory(spark, n: int, d: int, workers: int) -> None:
    """Raise MemoryError, with the figures, when a task cannot hold every row dense: the
    Arrow rows, the float64 matrix and its float32 rounding, about 3 x 8 bytes a value."""
    require_task_memory(
        spark, workers, 24 * int(n) * (int(d) + 2),
        f"rowIndexCol: each training task holds every row dense ({n} rows x {d} features)",
        "Lower numWorkers, raise spark.executor.pyspark.memory, or fit without rowIndexCol "
        "(the forest then trains distributed).")


def _check_index_values(dataset, col: str) -> None:
    """No nulls, no repeats (one aggregate job: the data checks' observed metrics cannot
    count distinct values)."""
    r = dataset.agg(F.count(F.lit(1)).alias("n"), F.count(F.col(col)).alias("c"),
                    F.countDistinct(F.col(col)).alias("d")).first()
    nulls = int(r["n"]) - int(r["c"])
    if nulls:
        raise ValueError(f"rowIndexCol: column '{col}' holds {nulls} null values; every row "
                         f"needs its position")
    repeats = int(r["c"]) - int(r["d"])
    if repeats:
        raise ValueError(f"rowIndexCol: column '{col}' repeats positions ({repeats} rows share "
                         f"a value with another); each row needs its own")


def fit_replayed(est, dataset):
    """Fit ``est`` (a RandomForestClassifier with ``rowIndexCol`` set); the model."""
    spark = dataset.sparkSession
    spec = est._features_spec()
    label = est.getLabelCol()
    weight = est._opt(est.weightCol) or None
    index = est.getRowIndexCol()
    check_schema(dataset, spec, label, weight, None)
    crit = est._check_criterion()
    check_replay_options(est, crit)
    check_column({f.name: f.dataType for f in dataset.schema.fields}, index, "rowIndexCol",
                 _INDEX_TYPES, "of an integer type")
    if categorical_features(dataset, spec, None, 1 << 62):
        raise ValueError("rowIndexCol: the features include nominal (categorical) attributes; "
                         "scikit-learn's forest splits numbers only")
    n_workers = requested_workers(spark, est)
    n_trees = int(est.getNumTrees())
    with FitProgress(spark, est, est.getVerbose()) as progress:
        t0 = time.perf_counter()
        with progress.phase("checks"):
            stats = data_checks(dataset, spec, label, weight, None, "classification",
                                extra=est._extra_checks(spec, label, crit))
            est._raise_on_extra(spec, label, crit, stats["extra"])
            _check_index_values(dataset, index)
            d = stats["d"]
            k = inferred_classes(label, stats["label_max"], stats["label_distinct"],
                                 MAX_CLASSES, explicit=False)
            workers = min(workers_for(spark, stats, None, n_workers), n_trees)
            check_replay_memory(spark, int(stats["n"]), d, workers)
            # 'balanced' counts the classes by their sample weights in the tasks, as
            # scikit-learn 1.9's forests; a dict is checked and expanded here
            class_weight = est._opt(est.classWeight)
            if class_weight not in (None, "balanced", "balanced_subsample"):
                class_weight = est._class_weights(dataset, label, k)
        checks_seconds = time.perf_counter() - t0
        split = est._split_params(crit, k, d)
        split["max_leaf_nodes"] = int(est.getMaxLeafNodes())
        cfg = {"split": split, "n_features": d, "class_weight": class_weight,
               "seed": int(est.getSeed()) & 0xFFFFFFFF, "n_trees": n_trees,
               "bootstrap": bool(est.getBootstrap()),
               "rate": float(est.getSubsamplingRate()), "label": label,
               "oob": bool(est.getOobScore()), "n_classes": k,
               "weight": weight, "spec": dict(spec, float32=True)}
        data = dataset.select(F.col(index).cast("long").alias("_k1"),
                              F.lit(0).cast("long").alias("_k2"),
                              *training_columns(spec, label, weight, None))
        t0 = time.perf_counter()
        with progress.phase("train"):
            per_task, infos = replicated_job(
                data, workers,
                lambda keys: make_replay_train_fn(keys, cfg, progress.task_spec()),
                spread=stats["n_train"] * n_trees >= _SPREAD_ROWS_TREES)
        seconds = time.perf_counter() - t0
    oob = _oob_score(per_task) if cfg["oob"] else None
    trees = collect_trees(per_task, n_trees, float(est.getCcpAlpha()))
    predictor = ForestPredictor.from_trees(trees, d, k, crit)
    summary = TreeTrainingSummary(seconds, [infos[r] for r in sorted(infos)], checks_seconds,
                                  workers, 0.0, n_trees)
    return est._model_class(predictor, summary, oob)


def _oob_score(per_task: dict) -> float:
    """scikit-learn's ``oob_score_`` from the tasks' out-of-bag sums (taken out of
    ``per_task``), added in rank order: each task adds its trees in tree order, so the
    decision function equals scikit-learn's up to the rounding of that regrouping."""
    from sparkxml_kernels.forest.replay import oob_score

    sums = n_pred = cls = None
    for r in sorted(per_task):
        arrays = per_task[r]
        s, c = arrays.pop("oob_sum"), arrays.pop("oob_n")
        sums = s if sums is None else sums + s
        n_pred = c if n_pred is None else n_pred + c
        if "oob_y" in arrays:
            cls = arrays.pop("oob_y")
    return oob_score(sums, n_pred, cls)[0]


def collect_trees(per_task: dict, n_trees: int, ccp_alpha: float) -> list:
    """The trees (``TreeArrays``, in tree order, each pruned as scikit-learn prunes with
    ``ccp_alpha``) from the tasks' arrays, named ``"<tree>.<field>"``."""
    fields: dict = {}
    for arrays in per_task.values():
        for name, a in arrays.items():
            t, f = name.split(".", 1)
            fields.setdefault(int(t), {})[f] = a
    if sorted(fields) != list(range(n_trees)):
        raise RuntimeError(f"rowIndexCol: expected trees 0..{n_trees - 1} from the training "
                           f"tasks, got {sorted(fields)}")
    trees = []
    for t in range(n_trees):
        tree = TreeArrays(**{f: fields[t][f] for f in FIELDS})
        if ccp_alpha > 0.0:
            tree = TreeArrays(**prune_tree(tree.as_dict(), ccp_alpha))
        trees.append(tree)
    return trees


def make_replay_train_fn(keys: list, cfg: dict, progress=None):
    """The replicated task's function: rows ordered by the row index, this rank's trees
    grown, their arrays sent back. Plain locals only: the closure is pickled to the tasks."""
    rank_of = {k: p for p, k in enumerate(keys)}
    world = len(keys)

    def train(batches):
        from sparkxml._core.arrow import batch_features
        from sparkxml_kernels.forest.replay import replay_trees
        from sparkxml_kernels.forest.tree import SplitParams
        from sparkxml_kernels.progress import ProgressReporter

        memory = TaskMemory()
        for key, table in group_tables(batches):
            rank = rank_of[key]
            X = batch_features(table, cfg["spec"], cfg["n_features"])
            cls = table.column(cfg["label"]).to_numpy().astype(np.int32)
            sw = None
            if cfg["weight"] is not None:
                sw = table.column(cfg["weight"]).to_numpy().astype(np.float64)
            mine = list(range(rank, cfg["n_trees"], world))
            reporter = ProgressReporter(progress, rank)
            out: dict = {}
            oob = None
            if cfg["oob"]:
                oob = (np.zeros((cls.size, cfg["n_classes"])), np.zeros(cls.size, np.int64))
                out.update(oob_sum=oob[0], oob_n=oob[1])
                if rank == 0:
                    out["oob_y"] = cls
            grown = replay_trees(
                X, cls, sw, cfg["class_weight"], SplitParams(**cfg["split"]), cfg["seed"],
                cfg["n_trees"], mine, cfg["bootstrap"], cfg["rate"], oob=oob,
                report=(lambda done, total: reporter.progress(done, total, unit="tree"))
                if reporter.enabled else None)
            for t, tree in grown:
                out.update({f"{t}.{f}": v for f, v in tree.as_dict().items()})
            reporter.close()
            yield from encode_array_batches(rank, out, memory.info(rows=int(cls.size),
                                                                   trees=len(mine)))

    return train
