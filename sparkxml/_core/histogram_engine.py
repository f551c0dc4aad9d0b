"""The driver side of the histogram engine (GBT, LambdaMART, trees and forests): the feature
projection, the one-aggregate data checks, the sampled sketch pass that yields bin edges, the
schema checks and the transform over a model's Python tasks.

``sketch_pass`` takes the sample size and the summary size: trees keep every distinct value of
up to 200,000 sampled rows so that their bins can be exact.
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import RESULT_SCHEMA, decode_arrays
from sparkxml._core.compat import to_arrow
from sparkxml._core.histogram_tasks import ROW_ID, make_sketch_task, spec_columns
from sparkxml._core.validation import aggregate_once, check_output_columns
from sparkxml_kernels import binning

# Bin edges come from a uniform sample of about this many training rows (all rows when there
# are fewer), as LightGBM does (it bins from 200,000 rows): the sketch job then ships a tenth
# of a 1M-row input through Arrow and sorts a tenth of it. The quantile error of the sample,
# about 0.5 / sqrt(100000) = 0.16% of the rows, is under half a bin of 256.
_SKETCH_SAMPLE_ROWS = 100_000


# a canonical sketch (trees, forests) hashes its sample into this many partitions: a fixed
# number, since the merged summary depends on it (Spark keeps a repartition's explicit count)
_CANONICAL_SKETCH_PARTS = 8
_SKETCH_KEY = "__sparkxml_sketch_key"
_SKETCH_PART = "__sparkxml_sketch_part"

# values a sketch task holds before it summarises them (64 MiB of float64)
_SKETCH_CHUNK_VALUES = 8 << 20


def feature_exprs(spec):
    """Projection of the feature columns for the Python tasks: a vector column becomes a dense
    array<double> in the JVM (``vector_to_array``; ~6x cheaper to ship through Arrow than the
    VectorUDT struct, and the binned matrix is dense anyway); numeric columns become double."""
    if spec["kind"] == "vector":
        if spec.get("sparse"):  # wide vectors ship their stored entries (_gbt_features)
            return [F.col(spec["col"])]
        return [vector_to_array(F.col(spec["col"])).alias(spec["col"])]
    return [F.col(c).cast("double").alias(c) for c in spec["cols"]]


def finite_col(c):
    return (~F.isnan(c)) & (F.abs(c) != float("inf"))


def sql_name(col: str) -> str:
    """``col`` quoted for Spark SQL text (backticks, doubled inside)."""
    return "`" + col.replace("`", "``") + "`"


def _finite(x: str) -> str:
    # finite_col in SQL text
    return f"(NOT isnan({x}) AND abs({x}) != CAST('Infinity' AS DOUBLE))"


# rows sized at the start of each partition by the data checks of a vector column without
# size metadata, and the bits of ``monotonically_increasing_id`` that number a partition's rows
WIDTH_PROBE_ROWS = 8
_ROW_BITS = (1 << 33) - 1
_PROBE_ROW = "__sparkxml_probe_row"


def stored_vector_size(c):
    """The size of the ML vector in column ``c`` as a long, read from its stored form (the
    VectorUDT struct as JSON: a sparse vector's ``size``, a dense one's number of values):
    no dense array is made. For a few rows: it writes each vector out as text."""
    j = F.to_json(F.struct(c.alias("v")))
    return F.coalesce(F.get_json_object(j, "$.v.size").cast("long"),
                      F.json_array_length(F.get_json_object(j, "$.v.values")).cast("long"))


def data_checks(dataset, spec, label, weight, valid, task, extra=None) -> dict:
    """One aggregate job (JVM only, no Python) over every row: counts, label range, and the
    first offending value of each check, so that bad input fails before training with an
    error naming the column and the value. ``extra`` (name -> aggregate Column; LambdaMART's
    ranking checks) rides along in the same job; its values come back in ``["extra"]``.

    A vector column's size: ``spec["width"]`` when known (metadata), else the smallest and
    largest size of the first ``WIDTH_PROBE_ROWS`` rows of each partition (the callers'
    tasks check every vector against it)."""
    # SQL text, one expression each: built Column by Column these took ~13 py4j calls apiece,
    # a visible part of a small fit's driver time
    L = f"CAST({sql_name(label)} AS DOUBLE)"
    aggs = ["count(1) AS n",
            f"sum(CAST(isnull({sql_name(label)}) AS BIGINT)) AS label_null",
            f"first(CASE WHEN NOT {_finite(L)} THEN {L} END, true) AS label_bad",
            f"max(CASE WHEN {_finite(L)} THEN {L} END) AS label_max"]
    if task != "regression":
        aggs.append(f"first(CASE WHEN {_finite(L)} AND ({L} != floor({L}) OR {L} < 0) "
                    f"THEN {L} END, true) AS label_nonclass")
    if task == "classification":  # (HyperLogLog: a few % error, no shuffle)
        aggs.append(f"approx_count_distinct(CASE WHEN {_finite(L)} THEN {L} END) "
                    f"AS label_distinct")
    train = "true" if valid is None else f"NOT {sql_name(valid)}"
    wexpr = "1.0D" if weight is None else f"CAST({sql_name(weight)} AS DOUBLE)"
    if weight is not None:
        aggs += [f"sum(CAST(isnull({sql_name(weight)}) AS BIGINT)) AS weight_null",
                 f"first(CASE WHEN NOT {_finite(wexpr)} OR {wexpr} < 0 THEN {wexpr} END, true) "
                 f"AS weight_bad"]
    if valid is not None:
        aggs += [f"sum(CAST(isnull({sql_name(valid)}) AS BIGINT)) AS valid_null",
                 f"sum(CAST({sql_name(valid)} AS BIGINT)) AS n_valid"]
    aggs.append(f"sum(CASE WHEN {train} THEN {wexpr} ELSE 0.0D END) AS weight_train")
    aggs = [F.expr(a) for a in aggs]
    if spec.get("width"):
        # no dense arrays in the JVM: the width is known (the column's metadata) and the
        # Python tasks check every vector against it ("has a vector of size ..., expected"):
        # sizing each vector here (vector_to_array) made an array per row, most of this job
        aggs.append(F.sum(F.col(spec["col"]).isNull().cast("long")).alias("features_null"))
    elif spec["kind"] == "vector":
        c = F.col(spec["col"])
        # the first rows of each partition only (the low 33 bits of the id count a
        # partition's rows): every caller's tasks check every vector against this width
        # (``_core.arrow.batch_features``). Sized from the vector's stored form, never a
        # dense array: a sparse vector may be 2**31 - 1 wide. (The id is a column of its
        # own: Spark 3.5 refuses a non-deterministic expression in an aggregate's arguments.)
        dataset = dataset.withColumn(_PROBE_ROW, F.monotonically_increasing_id())
        head = F.col(_PROBE_ROW).bitwiseAND(F.lit(_ROW_BITS)) < F.lit(WIDTH_PROBE_ROWS)
        size = F.when(c.isNotNull() & head, stored_vector_size(c))
        aggs += [F.sum(c.isNull().cast("long")).alias("features_null"),
                 F.min(size).alias("d_min"), F.max(size).alias("d_max")]
    aggs += [c.alias(name) for name, c in (extra or {}).items()]
    r = aggregate_once(dataset, aggs)
    n = int(r["n"] or 0)
    if n == 0:
        raise ValueError("the training DataFrame is empty")
    if r["label_null"]:
        raise ValueError(f"labelCol: column '{label}' has {r['label_null']} null value(s)")
    if r["label_bad"] is not None:
        raise ValueError(f"labelCol: column '{label}' holds the non-finite value "
                         f"{float(r['label_bad'])!r}")
    if r.get("label_nonclass") is not None:
        raise ValueError(f"labelCol: column '{label}' holds the value "
                         f"{float(r['label_nonclass'])!r}; class labels must be integers 0, 1, "
                         f"..., numClasses-1")
    if r.get("weight_null"):
        raise ValueError(f"weightCol: column '{weight}' has {r['weight_null']} null value(s)")
    if r.get("weight_bad") is not None:
        raise ValueError(f"weightCol: column '{weight}' holds the value "
                         f"{float(r['weight_bad'])!r}; weights must be finite and >= 0")
    if r.get("valid_null"):
        raise ValueError(f"validationIndicatorCol: column '{valid}' has {r['valid_null']} null "
                         f"value(s)")
    if spec["kind"] == "vector":
        if r["features_null"]:
            raise ValueError(f"featuresCol: column '{spec['col']}' has {r['features_null']} "
                             f"null vector(s)")
        if spec.get("width"):
            r["d_min"] = r["d_max"] = spec["width"]
        # (otherwise d_min is set: the first row of every non-empty partition is sized, and
        # a null vector failed above)
        if r["d_min"] != r["d_max"]:
            raise ValueError(f"featuresCol: column '{spec['col']}' holds vectors of different "
                             f"sizes: {r['d_min']} and {r['d_max']}")
        d = int(r["d_max"])
    else:
        d = len(spec["cols"])
    n_valid = int(r.get("n_valid") or 0)
    return {"n": n, "n_valid": n_valid, "n_train": n - n_valid, "d": d,
            "label_max": r["label_max"], "label_distinct": r.get("label_distinct"),
            "weight_train": float(r["weight_train"] or 0.0),
            "extra": {name: r[name] for name in (extra or {})}}


def sketch_pass(dataset, spec, weight, valid, stats, max_bins, seed,
                 sample_rows=_SKETCH_SAMPLE_ROWS, size=None, missing=float("nan"),
                 canonical=False):
    """Bin edges from a uniform sample of at most ``sample_rows`` training rows:
    ``DataFrame.sample`` (deterministic for a given input and seed, whatever numWorkers), then
    one ``mapInArrow`` job summarising each partition (summaries of at most ``size`` entries a
    feature; default from ``max_bins``); the driver merges in partition order. ``missing``
    (GBT's param) is a value read as missing besides NaN.

    ``canonical``: the edges depend on the rows only, not on how the input is partitioned
    (what trees and forests promise): the sample keeps a row by a hash of its content and the
    seed, and the sampled rows are hashed into :data:`_CANONICAL_SKETCH_PARTS` partitions, each
    sorted by that hash, so every summary and the merge see the same rows in the same order
    (one shuffle of the sample). The returned infos are then per hashed partition."""
    src = dataset if valid is None else dataset.filter(~F.col(valid))
    cols = feature_exprs(spec)
    if weight is not None:
        cols.append(F.col(weight).cast("double").alias(weight))
    src = src.select(*cols)
    fraction = sample_rows / max(stats["n_train"], 1)
    if canonical:
        src = src.withColumn(_SKETCH_KEY, canonical_sketch_key(src.columns, seed))
        if fraction < 1.0:
            src = src.filter(F.pmod(F.col(_SKETCH_KEY), F.lit(1 << 30))
                             < F.lit(int(fraction * (1 << 30))))
        src = (src.repartition(_CANONICAL_SKETCH_PARTS, F.col(_SKETCH_KEY))
               .sortWithinPartitions(_SKETCH_KEY).drop(_SKETCH_KEY))
    elif fraction < 1.0:
        src = src.sample(withReplacement=False, fraction=fraction, seed=int(seed) & 0x7FFFFFFF)
    fn = make_sketch_task(spec, weight, stats["d"], max_bins, _SKETCH_CHUNK_VALUES, size,
                           missing)
    table = to_arrow(src.mapInArrow(fn, RESULT_SCHEMA))
    ranks = table.column("rank").to_numpy()
    sketches, infos = [], []
    for r in sorted(set(ranks.tolist())):
        arrays, info = decode_arrays(table.filter(pa.array(ranks == r)))
        if info[0].get("error"):
            raise ValueError(info[0]["error"])
        infos.append(info[0])
        if arrays:
            sketches.append(binning.Sketch.from_arrays(arrays))
    if not sketches:
        raise ValueError("no training rows to compute bin edges from")
    merged = binning.merge_sketches(sketches) if len(sketches) > 1 else sketches[0]
    return merged, infos


def canonical_sketch_key(columns, seed):
    """The int64 content key of a canonical sketch (:func:`sketch_pass` with ``canonical``):
    ``xxhash64`` of ``columns`` (the features and the weight, as the sketch projects them)
    and the seed. It samples the rows and orders them within a hashed partition."""
    return F.xxhash64(*[F.col(c) for c in columns], F.lit(int(seed)))


def canonical_sketch_columns(columns, seed) -> list:
    """``(name, Column)`` pairs that carry a canonical sketch's grouping into a training
    frame: the content key (:func:`canonical_sketch_key`) and the partition that
    ``repartition(_CANONICAL_SKETCH_PARTS, key)`` sends the row to (Spark's hash
    partitioning: ``pmod(murmur3 hash, n)``, which ``F.hash`` computes with the same seed).
    A one-task fit groups and sorts its rows by them (``make_sketch_load_fn``) to summarise
    what the sketch job would."""
    key = canonical_sketch_key(columns, seed)
    return [(_SKETCH_KEY, key),
            (_SKETCH_PART, F.pmod(F.hash(key), F.lit(_CANONICAL_SKETCH_PARTS)))]


def sketch_in_task(stats, n_workers, sample_rows=_SKETCH_SAMPLE_ROWS) -> bool:
    """Whether a fit's one training task can compute the bin edges itself
    (``histogram_tasks.make_sketch_load_fn``) instead of a sketch job: one worker, and an
    input the sketch job would neither sample (at most ``sample_rows`` training rows, the
    fit's :func:`sketch_pass` argument) nor summarise in several chunks (fewer values than
    ``_SKETCH_CHUNK_VALUES``), so the edges are the sketch job's and the fit runs no job
    between the checks and the training."""
    return (int(n_workers) == 1 and stats["n_train"] <= sample_rows
            and stats["n_train"] * stats["d"] < _SKETCH_CHUNK_VALUES)


def sketch_options(max_bins, size, missing, by_partition, canonical=False) -> dict:
    """``make_sketch_load_fn``'s ``sketch`` argument: the summaries the sketch job makes
    (``canonical``: :func:`sketch_pass`'s, over the frame's :func:`canonical_sketch_columns`)."""
    return {"max_bins": max_bins, "chunk_values": _SKETCH_CHUNK_VALUES, "size": size,
            "missing": missing, "by_partition": by_partition,
            "canonical": (_SKETCH_PART, _SKETCH_KEY) if canonical else None}


def task_sketch(result):
    """(sketch infos, seconds) that a training task which computed its bin edges reports
    (``make_sketch_load_fn``, its train function copying them into rank 0's info); bad input
    its summaries met as a ValueError."""
    info = result.infos[0]
    if info.get("error"):
        raise ValueError(info["error"])
    return info.pop("sketch_info"), float(info.pop("sketch_seconds"))


def training_columns(spec, label, weight, valid, extra=()) -> list:
    """The projection a fit trains on: the features (``feature_exprs``), the label and the
    weight as doubles, the validation indicator where set, then ``extra`` columns."""
    cols = feature_exprs(spec) + [F.col(label).cast("double").alias(label)]
    if weight is not None:
        cols.append(F.col(weight).cast("double").alias(weight))
    if valid is not None:
        cols.append(F.col(valid))
    return cols + list(extra)


def check_feature_columns(fields: dict, spec) -> None:
    """The feature columns of ``spec`` are in ``fields`` (name -> type), a vector column is a
    Spark ML vector; the message names the column."""
    for c in spec_columns(spec):
        if c not in fields:
            raise ValueError(f"column '{c}' is not in the DataFrame (columns: "
                             f"{list(fields)})")
    if spec["kind"] == "vector" and not isinstance(fields[spec["col"]], VectorUDT):
        raise TypeError(f"featuresCol: column '{spec['col']}' must be a Spark ML vector")


# the dense-array copy of a vector column that a transform hands to its Python tasks
X_COL = "__sparkxml_features"


def transform_with(dataset, spec, outs, make_predict):
    """A model's transform: check the feature columns and that no output column exists, then
    one ``mapInArrow`` adding the outputs.

    ``outs``: [(column name, kind)], kind "raw" / "prob" / "leaf" (vector columns), "quant"
    (array<double>) or "pred" (double).
    ``make_predict(spec, kinds, names, drop)`` returns the task function; a vector column
    reaches it as a dense array made in the JVM (see ``feature_exprs``), in column ``drop``.
    """
    fields = {f.name: f.dataType for f in dataset.schema.fields}
    check_feature_columns(fields, spec)
    check_output_columns(fields, outs)
    kinds = [k for _, k in outs]
    names = [n for n, _ in outs]
    schema = T.StructType(list(dataset.schema.fields)
                          + [T.StructField(n, VectorUDT() if k in ("raw", "prob", "leaf")
                                           else T.ArrayType(T.DoubleType()) if k == "quant"
                                           else T.DoubleType()) for n, k in outs])
    drop = None
    if spec["kind"] == "vector":
        dataset = dataset.withColumn(X_COL, vector_to_array(F.col(spec["col"])))
        spec, drop = dict(spec, col=X_COL, name=spec["col"]), X_COL
    return dataset.mapInArrow(make_predict(spec, kinds, names, drop), schema)


def check_column(fields: dict, name: str, param: str, kinds: tuple, what: str) -> None:
    """Column ``name`` (the value of ``param``) is in ``fields`` (name -> Spark type) with one
    of the types ``kinds``; the message names the param, the column and ``what`` it must be."""
    if name not in fields:
        raise ValueError(f"{param}: column '{name}' is not in the DataFrame (columns: "
                         f"{list(fields)})")
    if not isinstance(fields[name], kinds):
        raise TypeError(f"{param}: column '{name}' must be {what}, got "
                        f"{fields[name].simpleString()}")


def check_schema(dataset, spec, label, weight, valid):
    """Check the input columns' presence and types; the row-id column name is reserved."""
    fields = {f.name: f.dataType for f in dataset.schema.fields}
    numeric = (T.NumericType,)

    def need(name, param, kinds, what):
        check_column(fields, name, param, kinds, what)

    if spec["kind"] == "vector":
        need(spec["col"], "featuresCol", (VectorUDT,), "a Spark ML vector (VectorUDT)")
    else:
        for c in spec["cols"]:
            need(c, "featuresCols", numeric + (T.BooleanType,), "numeric")
    need(label, "labelCol", numeric, "numeric")
    if weight:
        need(weight, "weightCol", numeric, "numeric")
    if valid:
        need(valid, "validationIndicatorCol", (T.BooleanType,), "boolean")
    if ROW_ID in fields:
        raise ValueError(f"column name '{ROW_ID}' is reserved")

