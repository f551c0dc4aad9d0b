"""Where a model directory is written and read: through pyarrow here, or through Spark.

The directory format is ``sparkxml_kernels.persist``'s (metadata text + parquet chunk rows);
this module picks the transport so that a model lands where Spark itself writes:

=============================================  =================================================
session and path                               transport
=============================================  =================================================
no Spark session                               pyarrow (``persist``): local paths, FUSE paths,
                                               ``dbfs:/`` via ``/dbfs``, pyarrow URIs
Spark Connect, any path                        Spark: the server's DataFrame writers/readers
classic, a URI (``file://``, ``s3a://``,       Spark (Hadoop's filesystems, with the cluster's
``wasbs://``, ``dbfs:/``, ``hdfs://``, ...)    configuration and credentials)
classic, a plain path, Spark's default         pyarrow (the same place, about 100x faster for
filesystem is local                            small models; rename makes saves atomic)
classic, a plain path, the default             Spark (the path means what it means to Spark:
filesystem is HDFS / DBFS                      ``hdfs:///that/path``)
Databricks, ``/dbfs/x``                        Spark, as ``dbfs:/x`` (``/Volumes/...`` as is)
=============================================  =================================================

Through Spark (only DataFrame APIs, so it works over Spark Connect and on PySpark 3.5):
saving first writes an empty text output at the path with mode ``error`` (raising
``FileExistsError``) or ``overwrite`` (Spark deletes what is there, a directory or a file, as
Spark ML's own writers do), then appends the data rows in groups of at most 64 MiB (one
``createDataFrame`` + parquet write each: a Connect server holds each group in its heap), and
writes the metadata line last. Loading reads the metadata with ``spark.read.text`` (which also
gives the directory's fully qualified URI, ``input_file_name``), counts the data rows from the
parquet footers, then collects the rows in ranges of ``seq`` of at most 256 MiB.
"""
from __future__ import annotations

import os
import re
from typing import NamedTuple

import pyarrow as pa

from sparkxml._core.compat import create_dataframe, is_connect, to_arrow
from sparkxml_kernels import persist
from sparkxml_kernels.persist import ModelFormatError

FUSE_PREFIXES = ("/dbfs/", "/Volumes/")
READ_GROUP_BYTES = 256 << 20
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")  # two letters at least: not "C:"
_local_default_fs: dict = {}


class StoredModel(NamedTuple):
    """Where a model's arrays were last saved to or loaded from.

    ``path`` as the user gave it; ``transport`` "pyarrow" or "spark"; ``root`` the directory
    fully qualified (an absolute local path for pyarrow, Spark's URI for Spark); ``save_id``
    the metadata's saveId (None for formatVersion 1); ``for_tasks``: a copy made for
    transform tasks in ``spark.sparkxml.modelCacheDir``, which executors are trusted to read.
    """
    path: str
    transport: str
    root: str
    save_id: str | None
    for_tasks: bool = False


def active_session():
    """The active SparkSession (classic or Connect), or None."""
    try:
        from pyspark.sql import SparkSession

        return SparkSession.active()
    except Exception:  # no session, or pyspark without one
        return None


def has_scheme(path: str) -> bool:
    return bool(_SCHEME.match(path))


def is_fuse(path: str) -> bool:
    return path.startswith(FUSE_PREFIXES)


def on_databricks(spark) -> bool:
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return True
    try:
        return spark.conf.get("spark.databricks.clusterUsageTags.clusterId", None) is not None
    except Exception:
        return False


def spark_path(path: str, spark) -> str:
    """``path`` as handed to Spark: Databricks' FUSE path ``/dbfs/x`` means ``dbfs:/x``."""
    if path.startswith("/dbfs/") and on_databricks(spark):
        return "dbfs:/" + path[len("/dbfs/"):]
    return path


def default_fs_is_local(spark) -> bool:
    """Whether a plain path means a local path to this classic session (cached per session):
    Spark resolves a fresh local temp directory. Two copies of the path skip Spark's
    streaming-metadata probe, which logs a stack trace for a missing path."""
    key = id(spark)
    if key not in _local_default_fs:
        import shutil
        import tempfile

        d = tempfile.mkdtemp(prefix="sparkxml-fs-probe-")
        try:
            spark.read.format("text").load([d, d]).schema
            _local_default_fs[key] = True
        except Exception:
            _local_default_fs[key] = False
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return _local_default_fs[key]


def route(path: str, spark) -> tuple[str, str]:
    """``(transport, target)``: "pyarrow" with the path, or "spark" with Spark's path."""
    if not isinstance(path, str) or not path:
        raise TypeError(f"path must be a non-empty string, got {path!r}")
    if spark is None:
        return "pyarrow", path
    if is_connect(spark) or has_scheme(path) or is_fuse(path):
        return "spark", spark_path(path, spark)
    if default_fs_is_local(spark):
        return "pyarrow", path
    return "spark", path


# ---------------------------------------------------------------------------- saving
def save(spark, path: str, metadata: str, arrays: dict | None, overwrite: bool,
         for_tasks: bool = False) -> StoredModel:
    """Save through the transport ``route`` picks; return where the model now is."""
    transport, target = route(path, spark)
    if transport == "pyarrow":
        save_id = persist.save_directory(target, metadata, arrays, overwrite)
        fs, p = persist.resolve(target)
        root = p if isinstance(fs, persist.pafs.LocalFileSystem) else target
        return StoredModel(path, "pyarrow", root, save_id, for_tasks)
    save_id = _save_via_spark(spark, target, metadata, arrays, overwrite)
    return StoredModel(path, "spark", target, save_id, for_tasks)


def _save_via_spark(spark, path: str, metadata: str, arrays: dict | None,
                    overwrite: bool) -> str:
    save_id = persist.new_save_id()
    metadata = persist.finish_metadata(metadata, arrays, save_id, persist.CHUNK_BYTES)
    empty = spark.createDataFrame([], "value string")
    try:
        empty.write.mode("overwrite" if overwrite else "error").text(path)
    except Exception as e:
        if not overwrite and "already exists" in str(e).lower():
            raise FileExistsError(f"path {path} already exists; use "
                                  f"write().overwrite().save(path)") from None
        raise
    if arrays is not None:
        for batch in persist.data_batches(arrays, save_id, persist.CHUNK_BYTES,
                                          persist.GROUP_BYTES):
            (create_dataframe(spark, pa.Table.from_batches([batch])).coalesce(1)
             .write.mode("append")
             .option("compression", persist.COMPRESSION).parquet(f"{path}/data"))
    (spark.createDataFrame([(metadata,)], "value string").coalesce(1).write
     .mode("error").text(f"{path}/metadata"))
    return save_id


# ---------------------------------------------------------------------------- loading
def load(spark, path: str, expected_class, required: tuple = (),
         model_kind: str | None = None) -> tuple[dict, dict | None, StoredModel]:
    """``(metadata, arrays or None, StoredModel)`` of the directory at ``path``, checked
    (class, format, ``model_kind``; arrays only for a ``model_kind``); every failure is a
    ``ModelFormatError`` naming ``path``."""
    transport, target = route(path, spark)
    try:
        if transport == "pyarrow":
            meta = persist.load_metadata(target, expected_class)
            fs, p = persist.resolve(target)
            root = p if isinstance(fs, persist.pafs.LocalFileSystem) else target
        else:
            meta, root = read_metadata_via_spark(spark, target, path, expected_class)
        persist.check_sparkxml(meta, path)
        arrays = None
        if model_kind is not None:
            if meta["modelKind"] != model_kind:
                raise ModelFormatError(f"{path}/metadata is corrupt: modelKind "
                                       f"{meta['modelKind']!r} for a {expected_class} "
                                       f"(expected {model_kind!r})")
            arrays = (persist.load_arrays(target, required, meta) if transport == "pyarrow"
                      else persist.check_required(
                          _read_arrays_via_spark(spark, target, path, meta), required, path))
    except persist.LOAD_ERRORS as e:
        raise persist.as_format_error(path, e) from (e if isinstance(e, OSError) else None)
    return meta, arrays, StoredModel(path, transport, root, meta.get("saveId"))


def _spark_error(path: str, what: str, e: Exception) -> ModelFormatError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if "PATH_NOT_FOUND" in first or "does not exist" in first.lower():
        return ModelFormatError(f"model directory {path} does not exist, or holds no {what} "
                                f"(an unfinished save)")
    return ModelFormatError(f"{path}: cannot read {what}: {first}")


def read_metadata_via_spark(spark, target: str, path: str,
                            expected_class = None) -> tuple[dict, str]:
    """(metadata, the directory's qualified URI) read with ``spark.read.text``."""
    from pyspark.sql import functions as F

    try:
        rows = (spark.read.text(f"{target}/metadata")
                .select("value", F.input_file_name().alias("file")).collect())
    except Exception as e:
        raise _spark_error(path, "metadata/", e) from None
    rows = [r for r in rows if os.path.basename(r["file"]).startswith("part-")]
    if not rows:
        raise ModelFormatError(f"{path}/metadata holds no part-* file with a line")
    first = min(r["file"] for r in rows)
    text = "\n".join(r["value"] for r in rows if r["file"] == first)
    meta = persist.parse_metadata(text, path, expected_class)
    return meta, first[:first.rindex("/metadata/")]


def _read_arrays_via_spark(spark, target: str, path: str, meta: dict) -> dict:
    if meta["formatVersion"] == 1:
        try:
            rows = (spark.read.format("binaryFile").load(f"{target}/data/arrays.npz")
                    .select("content").collect())
        except Exception as e:
            raise _spark_error(path, "data/arrays.npz", e) from None
        if not rows:
            raise ModelFormatError(f"{path} is incomplete: data/arrays.npz is missing")
        return persist.arrays_from_npz(bytes(rows[0]["content"]), path)
    if "arrays" not in meta:
        raise ModelFormatError(f"{path} holds no model arrays (it was saved without data)")
    from pyspark.sql import functions as F

    from sparkxml._core.compat import PYSPARK_VERSION  # noqa: F401  (the schema below works on 3.5 and 4)

    try:
        df = (spark.read.schema(_spark_data_schema()).option("pathGlobFilter", "*.parquet")
              .parquet(f"{target}/data"))
        n = df.count()
    except Exception as e:
        raise _spark_error(path, "data/", e) from None
    asm = persist.assembler(meta, path, rows=n)
    per_read = max(1, READ_GROUP_BYTES // asm.chunk_bytes)
    for lo in range(0, asm.num_chunks, per_read):
        try:
            table = to_arrow(df.where((F.col("seq") >= lo) & (F.col("seq") < lo + per_read)))
        except Exception as e:
            raise _spark_error(path, "data/", e) from None
        persist.check_save_ids(table, meta["saveId"], path)
        asm.add_batch(table)
    return asm.result()


def _spark_data_schema():
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("save_id", T.StringType()),
        T.StructField("seq", T.LongType()),
        T.StructField("name", T.StringType()),
        T.StructField("dtype", T.StringType()),
        T.StructField("shape", T.ArrayType(T.LongType())),
        T.StructField("part", T.IntegerType()),
        T.StructField("data", T.BinaryType()),
    ])
