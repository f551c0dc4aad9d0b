"""How many barrier tasks a training runs: the default worker count from the data, whether
the input must be repartitioned, and the check that a local master has the slots."""
from __future__ import annotations

import os

import numpy as np

from sparkxml.session import default_parallelism

# With numWorkers unset, one worker per this many training rows, up to the parallelism.
_ROWS_PER_DEFAULT_WORKER = 50_000


def workers_for(spark, stats: dict, valid, n_workers):
    """Check the data-check job's row counts; return the worker count (``n_workers``, or the
    default: the session's parallelism, but no more workers than the data pays for: every
    tree level exchanges d x maxBins histograms per node whatever the rows, so on small data
    extra workers only add communication and the address exchange)."""
    if stats["n_train"] == 0 or stats["weight_train"] <= 0:
        raise ValueError("no training rows with a positive weight"
                         + (f" (validationIndicatorCol '{valid}' marks every row)"
                            if valid else ""))
    if valid is not None and stats["n_valid"] == 0:
        raise ValueError(f"validationIndicatorCol: column '{valid}' marks no row as "
                         f"validation")
    if n_workers is None:
        n_workers = max(1, min(default_parallelism(spark),
                               -(-stats["n_train"] // _ROWS_PER_DEFAULT_WORKER)))
        check_slots(spark, n_workers)
    return n_workers


def needs_repartition(sketch_infos, n_workers) -> bool:
    """The sketch job ran one task per input partition (empty ones too) over a uniform sample:
    when the input already has ``n_workers`` partitions of about equal size (sampled counts
    within 25% of the mean), train on them as they are and skip the shuffle."""
    counts = np.array([i["n"] for i in sketch_infos], np.float64)
    if counts.size != n_workers or counts.min() <= 0:
        return True
    return bool(counts.max() > 1.25 * counts.mean())


def requested_workers(spark, est):
    """``est``'s numWorkers, or None where it is unset (the fit then picks, ``workers_for``);
    a count above a local master's slots is refused here, before any Spark job."""
    n_workers = est._opt(est.numWorkers)
    if n_workers is not None:
        check_slots(spark, n_workers)
    return n_workers


def task_cpus(spark) -> int:
    """The session's ``spark.task.cpus`` (1 when unset or unreadable), read on the driver."""
    try:
        return max(1, int(spark.conf.get("spark.task.cpus", "1") or 1))
    except Exception:  # noqa: BLE001 - a conf that is not a number, or no conf API
        return 1


def task_threads(nthread) -> int:
    """Threads for this task's kernels: ``nthread`` when set, else the task's
    ``spark.task.cpus`` (``TaskContext.cpus()``, as xgboost.spark sizes its ``nthread``);
    1 outside a Spark task."""
    if nthread is not None:
        return int(nthread)
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return max(1, int(ctx.cpus())) if ctx is not None else 1


def worker_threads(nthread) -> int:
    """:func:`task_threads` capped at the cores numba sees: how many Python threads a task's
    tree groups run on."""
    from sparkxml_kernels.threads import max_threads

    return min(task_threads(nthread), max_threads())


def check_slots(spark, n_workers):
    """Barrier stages need all tasks at once: refuse more workers than a local master has."""
    try:
        master = spark.conf.get("spark.master", "") or ""
    except Exception:
        master = ""
    if not master.startswith("local"):
        return
    inner = master[master.find("[") + 1: master.find("]")] if "[" in master else "1"
    inner = inner.split(",")[0].strip()
    slots = (os.cpu_count() or 1) if inner == "*" else int(inner)
    slots = max(1, slots // task_cpus(spark))
    if n_workers > slots:
        raise ValueError(f"numWorkers={n_workers} exceeds the {slots} task slots of this "
                         f"session ({master}); training runs all workers at once (barrier "
                         f"mode): lower numWorkers")

