"""How a model's arrays reach its transform tasks without riding in the task closure.

``task_handle(model, dataset)`` returns a ``sparkxml_kernels.model_cache.ModelHandle``, the
only model state a transform closure carries:

1. a model of at most ``spark.sparkxml.inlineModelBytes`` (default 8 MiB) travels inline:
   for small models the closure is the cheapest way (no file to read, no job);
2. otherwise the executors read the directory the model was last saved to or loaded from,
   when they can: a local path or ``file:`` URI with a ``local[...]`` master (the executors
   run on the machine Spark wrote it on), or a Databricks ``/dbfs``, ``dbfs:/`` or
   ``/Volumes`` path (mounted on every node). The directory's metadata is read first (it
   must still hold the model's save id; a directory overwritten since is not used);
3. otherwise the model is saved once (per model object) for its tasks: into
   ``spark.sparkxml.modelCacheDir`` when set (a location every executor's Python can open
   with pyarrow: a FUSE mount, NFS, ``hdfs://``, ``s3://``, ...; it is written where and how
   any save to that path is, e.g. through Spark for a URI), else, with a ``local[...]``
   master, into a temporary directory (this process's temp dir in a classic session, deleted
   at exit; ``<spark.local.dir or /tmp>/sparkxml-model-cache`` on a Spark Connect server);
4. otherwise (a cluster, no readable directory, no cache dir) the model travels inline, with
   a warning that names its size and the setting.

Executors then load the arrays once per Python worker and memory-map them from one decoded
copy per node (``sparkxml_kernels.model_cache``). ``spark.sparkxml.modelLoadLog``, when set
to a file path, makes every such load append a JSON line to that file on its node.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
import warnings

import numpy as np

from sparkxml._core import storage as _storage
from sparkxml._core.compat import is_connect
from sparkxml_kernels import persist
from sparkxml_kernels.model_cache import ModelHandle

INLINE_CONF = "spark.sparkxml.inlineModelBytes"
CACHE_DIR_CONF = "spark.sparkxml.modelCacheDir"
LOAD_LOG_CONF = "spark.sparkxml.modelLoadLog"
DEFAULT_INLINE_BYTES = 8 << 20

_temp_dirs: list = []


def _conf(spark, key: str, default=None):
    try:
        value = spark.conf.get(key, None)
    except Exception:  # a server that refuses to read a conf
        return default
    return default if value in (None, "") else value


def _is_local_master(spark) -> bool:
    return str(_conf(spark, "spark.master", "")).startswith("local")


def model_nbytes(arrays: dict) -> int:
    return int(sum(np.asarray(a).nbytes for a in arrays.values()))


def task_handle(model, dataset) -> ModelHandle:
    """The handle ``model``'s transform tasks get its arrays through (see the module doc)."""
    spark = dataset.sparkSession
    arrays = model._save_arrays()
    nbytes = model_nbytes(arrays)
    limit = _conf(spark, INLINE_CONF, DEFAULT_INLINE_BYTES)
    try:
        limit = int(limit)
    except (TypeError, ValueError):
        raise ValueError(f"{INLINE_CONF}={limit!r} is not a number of bytes") from None
    log = _conf(spark, LOAD_LOG_CONF)
    token = getattr(model, "_inline_token", None) or uuid.uuid4().hex
    model._inline_token = token
    if nbytes <= limit:
        return ModelHandle(inline=arrays, token=token, log=log, nbytes=nbytes)
    for stored in (model._stored, getattr(model, "_task_copy", None)):
        source = _executor_source(stored, spark)
        if source is not None:
            return ModelHandle(source=source, save_id=stored.save_id, log=log, nbytes=nbytes)
    stored = _save_for_tasks(model, spark)
    source = _executor_source(stored, spark)
    if source is not None:
        return ModelHandle(source=source, save_id=stored.save_id, log=log, nbytes=nbytes)
    warnings.warn(f"{type(model).__name__}: the model's {nbytes / 2**20:.0f} MiB travel in "
                  f"every transform task's closure; save the model to a path the executors "
                  f"can read (a /dbfs or /Volumes path) or set {CACHE_DIR_CONF} to shared "
                  f"storage", stacklevel=3)
    return ModelHandle(inline=arrays, token=token, log=log, nbytes=nbytes)


def _executor_source(stored, spark) -> str | None:
    """The path executors open ``stored`` at, if they can and it still holds the model."""
    if stored is None or stored.save_id is None:
        return None
    try:
        if stored.transport == "pyarrow":
            meta = persist.load_metadata(stored.root)
            root = stored.root
        else:
            meta, root = _storage.read_metadata_via_spark(spark, stored.root, stored.path)
    except (persist.ModelFormatError, *persist.LOAD_ERRORS):
        return None  # gone or unreadable: not a source
    if meta.get("saveId") != stored.save_id:
        return None  # overwritten since
    local = persist.pyarrow_path(root)
    if stored.for_tasks or _storage.is_fuse(local):
        return local
    if "://" in local:  # hdfs://, s3://, ...: not known to be open to the executors' Python
        return None
    if stored.transport == "pyarrow" and is_connect(spark):
        return None  # a client-side path; the executors run elsewhere
    return local if _is_local_master(spark) else None


def _save_for_tasks(model, spark):
    """Save ``model`` once for its transform tasks; None where no location is known."""
    cache_dir = _conf(spark, CACHE_DIR_CONF)
    name = f"{model.uid}-{uuid.uuid4().hex[:12]}"
    if cache_dir:
        target, for_tasks = f"{str(cache_dir).rstrip('/')}/{name}", True
    elif not _is_local_master(spark):
        return None
    elif is_connect(spark):
        local_dir = str(_conf(spark, "spark.local.dir", "/tmp")).split(",")[0]
        target, for_tasks = f"file://{local_dir.rstrip('/')}/sparkxml-model-cache/{name}", False
    else:
        d = tempfile.mkdtemp(prefix="sparkxml-model-")
        _temp_dirs.append(d)
        target, for_tasks = os.path.join(d, "model"), False
    stored = model._stored
    model.write().session(spark).save(target)  # sets model._stored to the copy
    model._task_copy = model._stored._replace(for_tasks=for_tasks)
    model._stored = stored
    return model._task_copy


@atexit.register
def _remove_temp_dirs() -> None:
    for d in _temp_dirs:
        shutil.rmtree(d, ignore_errors=True)
