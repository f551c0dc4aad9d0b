"""Getting a SparkSession the way the CLI, examples and tests need it."""
from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def get_session(master: str | None = None, app_name: str = "sparkxml", remote: str | None = None,
                conf: dict | None = None) -> "SparkSession":
    """Return the active SparkSession, or start one.

    Under ``spark-submit`` (the JVM started this Python, ``PYSPARK_GATEWAY_PORT`` is set) the
    cluster's configuration is used as it is. Otherwise a local session is started on
    ``master`` (default ``local[*]``), or a Spark Connect session when ``remote`` (or the
    ``SPARK_REMOTE`` environment variable) is given. Python workers are pointed at this
    interpreter so they see the same packages.
    """
    from pyspark.sql import SparkSession

    if master:
        check_master(master)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    remote = remote or os.environ.get("SPARK_REMOTE")
    if remote:
        return builder.remote(remote).getOrCreate()
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = (builder.master(master or "local[*]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "8")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    elif master:
        builder = builder.master(master)
    return builder.getOrCreate()


def check_master(master: str) -> None:
    """Refuse a local master Spark cannot start (``local[0]``, ``local[-1]``, ``local[x]``)
    with a ValueError naming it, before a JVM starts (Spark's own error is a JVM trace)."""
    m = re.fullmatch(r"local\[([^,\]]*)(?:,([^\]]*))?\]", master.strip())
    if m is None:
        return
    threads, failures = m.group(1).strip(), m.group(2)
    if threads != "*" and not (threads.isdigit() and int(threads) >= 1):
        raise ValueError(f"master '{master}': local[N] needs N >= 1 threads (or local[*])")
    if failures is not None and not (failures.strip().isdigit() and int(failures) >= 1):
        raise ValueError(f"master '{master}': local[N,F] needs F >= 1 task attempts")


def default_parallelism(spark: "SparkSession") -> int:
    """The session's default parallelism, from its conf only (Spark Connect safe)."""
    for key in ("spark.default.parallelism",):
        try:
            v = spark.conf.get(key, None)
        except Exception:
            v = None
        if v:
            return max(1, int(v))
    try:
        master = spark.conf.get("spark.master", "") or ""
    except Exception:
        master = ""
    if master.startswith("local"):
        inner = master[master.find("[") + 1: master.find("]")] if "[" in master else "1"
        inner = inner.split(",")[0]
        return (os.cpu_count() or 1) if inner == "*" else max(1, int(inner))
    # A cluster: spark.range without numPartitions uses the default parallelism; count the
    # partitions it makes with DataFrame APIs only (one small job).
    from pyspark.sql import functions as F

    n = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).distinct().count()
    return max(1, int(n))
