"""FastXML on Spark: an ensemble of nDCG-partitioning trees for extreme multi-label learning.

Trees are independent (Prabhu & Varma, KDD'14, Algorithm 1), so training replicates the
training set to ``numWorkers`` Spark tasks with DataFrame operations only (cross join with a
small group frame, repartition by group, ``mapInArrow``); each task grows its share of the
trees in compiled code (``sparkxml_kernels.fastxml``) and returns them as arrays. No broadcast
variable and no RDD, so it also runs over Spark Connect.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml_kernels import arrow_io
from sparkxml_kernels.fastxml import forest as kforest
from sparkxml_kernels.fastxml.predictor import FastXMLPredictor

from ._spark_utils import (check_int_array_column, check_vector_column, parse_bytes,
                           partition_keys, physical_memory_bytes)
from ._progress import FitProgress
from .base import SparkXMLEstimator, SparkXMLModel
from .params import (HasFeaturesCol, HasLabelsCol, HasNumTrees, HasNumWorkers,
                     HasPredictionCol, HasScoresCol, HasSeed, HasTopK, HasVerbose)
from .session import default_parallelism

# The arrays a FastXML forest is made of (see sparkxml_kernels.fastxml.forest) and their dtypes.
_FOREST_DTYPES = {
    "tree_ids": np.int32, "tree_offsets": np.int64, "children": np.int32,
    "w_indptr": np.int64, "w_index": np.int32, "w_value": np.float32,
    "leaf_indptr": np.int64, "leaf_label": np.int32, "leaf_score": np.float32,
}


class _FastXMLParams(HasFeaturesCol, HasLabelsCol, HasPredictionCol, HasScoresCol, HasTopK,
                     HasNumTrees, HasNumWorkers, HasSeed):
    maxLeaf = Param(Params._dummy(), "maxLeaf", "a node with at most this many training points "
                    "is a leaf (>= 1)", typeConverter=TypeConverters.toInt)
    labelsPerLeaf = Param(Params._dummy(), "labelsPerLeaf", "labels kept in each leaf's "
                          "distribution, highest mean first (>= 1)",
                          typeConverter=TypeConverters.toInt)
    logLossCoeff = Param(Params._dummy(), "logLossCoeff", "C of the per-node L1-regularised "
                         "logistic regression, class-balanced as C/fraction (> 0)",
                         typeConverter=TypeConverters.toFloat)
    bias = Param(Params._dummy(), "bias", "value of the bias feature appended to every point "
                 "(finite; 0 disables it)", typeConverter=TypeConverters.toFloat)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelsCol="labels", predictionCol="prediction",
                         scoresCol="scores", topK=5, numTrees=50, maxLeaf=10, labelsPerLeaf=100,
                         logLossCoeff=1.0, bias=1.0, seed=0)

    def getMaxLeaf(self) -> int:
        return self.getOrDefault(self.maxLeaf)

    def getLabelsPerLeaf(self) -> int:
        return self.getOrDefault(self.labelsPerLeaf)

    def getLogLossCoeff(self) -> float:
        return self.getOrDefault(self.logLossCoeff)

    def getBias(self) -> float:
        return self.getOrDefault(self.bias)


class FastXML(SparkXMLEstimator, _FastXMLParams, HasVerbose):
    """FastXML extreme multi-label classifier (Prabhu & Varma, KDD'14).

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (sparse or dense), all of one size.
    labelsCol : str, default "labels"
        array<int> of label ids >= 0; an empty array is allowed.
    numTrees : int, default 50
    maxLeaf : int, default 10
    labelsPerLeaf : int, default 100
    logLossCoeff : float, default 1.0
    bias : float, default 1.0
    seed : int, default 0
        Tree t draws from an MT19937 seeded with t + seed * 0x9E3779B1 (mod 2**32), so the
        model does not depend on numWorkers. At seed 0 the trees are the authors' C++ trees
        0..numTrees-1 (``fastXML_train -s 0``) node for node, given the rows in the same
        order: the kernel replays their random draws, sort order and float32 arithmetic.
    numWorkers : int, optional
        Spark tasks the trees are spread over (default: the session's default parallelism,
        at most numTrees). Each task holds the whole training set in memory.
    topK, predictionCol, scoresCol
        Copied to the model; see ``FastXMLModel``.
    verbose : int, default 0
        Log "tree i/n" every ``verbose`` trees of each training task through the Python
        logger ``sparkxml`` (live, see ``sparkxml._progress``); 0 = silent.

    Examples
    --------
    >>> model = FastXML(numTrees=50, numWorkers=2).fit(train_df)
    >>> model.setTopK(5).transform(test_df).select("prediction", "scores")
    """

    _model_kind = "fastxml"

    def __init__(self, *, featuresCol=None, labelsCol=None, predictionCol=None, scoresCol=None,
                 topK=None, numTrees=None, maxLeaf=None, labelsPerLeaf=None, logLossCoeff=None,
                 bias=None, seed=None, numWorkers=None, verbose=None):
        super().__init__()
        self._setDefault(verbose=0)
        self._set_params(**self._input_kwargs_of(locals()))

    @staticmethod
    def _input_kwargs_of(local_vars: dict) -> dict:
        return {k: v for k, v in local_vars.items() if k not in ("self", "__class__")}

    def setParams(self, **kwargs):
        return self._set_params(**kwargs)

    def setNumTrees(self, value: int):
        return self._set(numTrees=value)

    def setMaxLeaf(self, value: int):
        return self._set(maxLeaf=value)

    def setLabelsPerLeaf(self, value: int):
        return self._set(labelsPerLeaf=value)

    def setLogLossCoeff(self, value: float):
        return self._set(logLossCoeff=value)

    def setBias(self, value: float):
        return self._set(bias=value)

    def setSeed(self, value: int):
        return self._set(seed=value)

    def setNumWorkers(self, value: int):
        return self._set(numWorkers=value)

    def setVerbose(self, value: int):
        return self._set(verbose=value)

    def setTopK(self, value: int):
        return self._set(topK=value)

    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setLabelsCol(self, value: str):
        return self._set(labelsCol=value)

    def setPredictionCol(self, value: str):
        return self._set(predictionCol=value)

    def setScoresCol(self, value: str):
        return self._set(scoresCol=value)

    # ------------------------------------------------------------------ training
    def _fit_validated(self, dataset):
        fcol, lcol = self.getFeaturesCol(), self.getLabelsCol()
        check_vector_column(dataset, fcol)
        check_int_array_column(dataset, lcol)
        spark = dataset.sparkSession
        num_trees = self.getNumTrees()
        workers = (self.getNumWorkers() if self.isDefined(self.numWorkers)
                   else default_parallelism(spark))
        workers = max(1, min(workers, num_trees))

        data = dataset.select(F.monotonically_increasing_id().alias("_rid"),
                              F.col(fcol).alias("f"), F.col(lcol).alias("y"))
        with FitProgress(spark, self, self.getVerbose()) as progress:
            with progress.phase("checks"):
                stats = _data_stats(data, fcol, lcol)
            _check_memory(spark, stats, workers)
            with progress.phase("train"):
                forest = self._train(spark, data, stats, workers, fcol, lcol,
                                     progress.task_spec(per_task=True))
            if progress.verbose > 0 and not progress.live_lines:
                progress.log_rounds([(i, {}) for i in range(1, num_trees + 1)], num_trees,
                                    unit="tree")
        return FastXMLModel._create(forest, stats["n_features"], stats["n_labels"],
                                    float(self.getBias()))

    def _train(self, spark, data, stats, workers, fcol, lcol, progress):
        num_trees = self.getNumTrees()

        keys = partition_keys(workers)
        groups = spark.createDataFrame([(k,) for k in keys], "_g long")
        params = dict(seed=int(self.getSeed()), max_leaf=self.getMaxLeaf(),
                      labels_per_leaf=self.getLabelsPerLeaf(),
                      log_loss_coeff=float(self.getLogLossCoeff()), bias=float(self.getBias()))
        trees_of = {k: np.arange(p, num_trees, workers, dtype=np.int32)
                    for p, k in enumerate(keys)}
        n_features, n_labels = stats["n_features"], stats["n_labels"]
        train = _make_train_fn(trees_of, n_features, n_labels, params, fcol, lcol, progress)
        schema = ", ".join(f"{name} binary" for name in _FOREST_DTYPES)
        rows = (data.crossJoin(groups).repartition(workers, "_g")
                .mapInArrow(train, schema).collect())
        parts = [{name: np.frombuffer(r[name], dtype=dt) for name, dt in _FOREST_DTYPES.items()}
                 for r in rows]
        for p in parts:
            p["children"] = p["children"].reshape(-1, 2)
        forest = kforest.sort_forest(kforest.concat_forests(parts))
        if len(forest["tree_ids"]) != num_trees:
            raise RuntimeError(f"FastXML: expected {num_trees} trees back from the training "
                               f"tasks, got {len(forest['tree_ids'])}")
        return forest


def _data_stats(data, fcol: str, lcol: str) -> dict:
    """One pass over the data: sizes and label range, checked on the driver with clear errors."""

    def stats(batches):
        for b in batches:
            if b.num_rows == 0:
                continue
            _, nnz_x, dmin, dmax = arrow_io.vector_stats(b.column("f"), fcol)
            li, lab = arrow_io.lists_to_csr(b.column("y"), lcol, dtype=np.int64)
            yield pa.RecordBatch.from_pydict({
                "rows": [b.num_rows], "nnz_x": [nnz_x], "nnz_y": [int(li[-1])],
                "dmin": [dmin], "dmax": [dmax], "ymin": [int(lab.min()) if len(lab) else 0],
                "ymax": [int(lab.max()) if len(lab) else -1]})

    schema = ("rows long, nnz_x long, nnz_y long, dmin long, dmax long, ymin long, "
              "ymax long")
    parts = data.select("f", "y").mapInArrow(stats, schema).collect()
    if not parts or sum(r["rows"] for r in parts) == 0:
        raise ValueError("FastXML: the training DataFrame is empty")
    dims = sorted({r["dmin"] for r in parts} | {r["dmax"] for r in parts})
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


def estimate_task_bytes(rows: int, nnz_x: int, nnz_y: int, n_features: int,
                        n_labels: int) -> int:
    """Bytes one training task needs: the Arrow batches it receives, the CSR copy, the kernel's
    column-major copy and per-node workspaces (measured on Bibtex: ~3.5x the CSR size)."""
    csr = rows * 8 + nnz_x * 8 + nnz_y * 4
    arrow = nnz_x * 12 + nnz_y * 4 + rows * 40
    workspaces = 8 * (n_features + 2 * n_labels + 4 * rows)
    return arrow + 3 * csr + workspaces


def _check_memory(spark, stats: dict, workers: int) -> None:
    need = estimate_task_bytes(stats["rows"], stats["nnz_x"], stats["nnz_y"],
                               stats["n_features"], stats["n_labels"])
    conf = spark.conf.get("spark.executor.pyspark.memory", None)
    master = spark.conf.get("spark.master", "") or ""
    if conf:
        have, where = parse_bytes(conf), "spark.executor.pyspark.memory"
    elif master.startswith("local"):
        # Local mode: every task runs on this machine at once.
        have = physical_memory_bytes() // max(1, workers)
        where = f"this machine's memory / numWorkers={workers}"
    else:
        have, where = physical_memory_bytes(), "the driver machine's memory (assumed per executor)"
    if need > have:
        raise MemoryError(
            f"FastXML: each training task holds the whole training set ({stats['rows']} rows, "
            f"{stats['nnz_x']} feature non-zeros, {stats['nnz_y']} labels) and needs about "
            f"{need / 2**20:.0f} MiB, but only {have / 2**20:.0f} MiB is available ({where}). "
            f"Lower numWorkers, raise spark.executor.pyspark.memory, or subsample the data.")


def _make_train_fn(trees_of: dict, n_features: int, n_labels: int, params: dict, fcol: str,
                   lcol: str, progress: dict | None = None):
    # Plain locals only: the closure is pickled to the tasks.
    names = list(_FOREST_DTYPES)

    def train(batches):
        from sparkxml_kernels.progress import ProgressReporter

        by_group: dict = {}
        for b in batches:
            if b.num_rows == 0:
                continue
            g = b.column("_g").to_numpy()
            for key in np.unique(g):
                sel = b.filter(pa.array(g == key)) if len(np.unique(g)) > 1 else b
                by_group.setdefault(int(key), []).append(sel)
        for key, parts in by_group.items():
            table = pa.Table.from_batches(parts).combine_chunks()
            # Row order must not depend on how the shuffle delivered the rows.
            order = np.argsort(table.column("_rid").to_numpy(), kind="stable")
            table = table.take(pa.array(order))
            xi, xj, xv, _ = arrow_io.vectors_to_csr(table.column("f"), fcol,
                                                    num_features=n_features)
            yi, yj = arrow_io.lists_to_csr(table.column("y"), lcol)
            trees = trees_of[key]
            reporter = ProgressReporter(progress, list(trees_of).index(key))
            if reporter.enabled:  # one tree at a time (tree t depends on (seed, t) only)
                parts = []
                for i, t in enumerate(trees):
                    parts.append(kforest.train_forest(xi, xj, xv, yi, yj, n_features,
                                                      n_labels, trees[i:i + 1], **params))
                    reporter.progress(i + 1, len(trees), unit="tree")
                reporter.close()
                forest = kforest.concat_forests(parts)
            else:
                forest = kforest.train_forest(xi, xj, xv, yi, yj, n_features, n_labels,
                                              trees, **params)
            yield pa.RecordBatch.from_pydict(
                {n: [np.ascontiguousarray(forest[n], dtype=_FOREST_DTYPES[n]).tobytes()]
                 for n in names},
                schema=pa.schema([(n, pa.binary()) for n in names]))

    return train


class FastXMLModel(SparkXMLModel, _FastXMLParams):
    """A trained FastXML forest.

    ``transform`` adds ``predictionCol`` (array<int>: the topK labels, best first; labels with
    a zero score are left out) and ``scoresCol`` (array<float>, aligned: the mean over trees of
    the reached leaves' label distributions).

    Save format
    -----------
    ``path/metadata/part-00000``: Spark ML metadata JSON (class, uid, params) with
    ``formatVersion`` 1 and ``modelKind`` "fastxml". ``path/data/arrays.npz``: ``n_features``,
    ``n_labels``, ``bias`` (0-d) and the forest: ``tree_ids`` int32 (T,), ``tree_offsets``
    int64 (T+1,), ``children`` int32 (M, 2) [positive, negative] child ids local to the tree
    (-1 for leaves), separator weights CSR over nodes ``w_indptr`` int64 (M+1,), ``w_index``
    int32 (feature id; ``n_features`` is the bias), ``w_value`` float32, and leaf
    distributions CSR ``leaf_indptr`` int64 (M+1,), ``leaf_label`` int32, ``leaf_score``
    float32 (descending). ``sparkxml_kernels.load_model(path)`` reads it without Spark.
    """

    _model_kind = "fastxml"
    _required_arrays = tuple(_FOREST_DTYPES) + ("n_features", "n_labels", "bias")

    def __init__(self):
        super().__init__()
        self._arrays: dict = {}
        self._predictor = None

    @classmethod
    def _create(cls, forest: dict, n_features: int, n_labels: int, bias: float):
        model = cls()
        model._arrays = dict(forest, n_features=np.array(n_features, dtype=np.int64),
                             n_labels=np.array(n_labels, dtype=np.int64),
                             bias=np.array(bias, dtype=np.float64))
        return model

    @classmethod
    def _from_arrays(cls, arrays: dict, path: str):
        model = cls()
        model._arrays = arrays
        try:
            model.predictor
        except (ValueError, KeyError, IndexError) as e:
            from sparkxml_kernels.persist import ModelFormatError

            raise ModelFormatError(f"{path}: FastXML arrays are inconsistent: {e}") from None
        return model

    def _save_arrays(self) -> dict:
        return self._arrays

    @property
    def predictor(self) -> FastXMLPredictor:
        """The JVM-free predictor (``predict(indptr, indices, data, k)``)."""
        if self._predictor is None:
            a = self._arrays
            self._predictor = FastXMLPredictor(a, int(a["n_features"]), int(a["n_labels"]),
                                               float(a["bias"]))
        return self._predictor

    @property
    def numFeatures(self) -> int:
        return int(self._arrays["n_features"])

    @property
    def numLabels(self) -> int:
        return int(self._arrays["n_labels"])

    @property
    def trees(self) -> int:
        return len(self._arrays["tree_ids"])

    def setTopK(self, value: int):
        return self._set(topK=value)

    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setPredictionCol(self, value: str):
        return self._set(predictionCol=value)

    def setScoresCol(self, value: str):
        return self._set(scoresCol=value)

    def copy(self, extra=None):
        that = super().copy(extra)
        that._arrays = self._arrays
        that._predictor = self._predictor
        return that

    def _transform_validated(self, dataset):
        fcol = self.getFeaturesCol()
        check_vector_column(dataset, fcol)
        pcol, scol, k = self.getPredictionCol(), self.getScoresCol(), self.getTopK()
        for c in (pcol, scol):
            if c in dataset.columns:
                raise ValueError(f"output column '{c}' already exists in the DataFrame")
        arrays, n_features = self._arrays, self.numFeatures
        n_labels, bias = self.numLabels, float(self._arrays["bias"])
        out_fields = [T.StructField(pcol, T.ArrayType(T.IntegerType())),
                      T.StructField(scol, T.ArrayType(T.FloatType()))]
        schema = T.StructType(list(dataset.schema.fields) + out_fields)

        def predict(batches):
            predictor = FastXMLPredictor(arrays, n_features, n_labels, bias)
            for b in batches:
                xi, xj, xv, _ = arrow_io.vectors_to_csr(b.column(fcol), fcol,
                                                        num_features=n_features)
                labels, scores = predictor.predict(xi, xj, xv, k)
                counts = (scores > 0).sum(axis=1)
                lab, sco = arrow_io.topk_to_arrow(labels, scores, counts)
                yield pa.RecordBatch.from_arrays(list(b.columns) + [lab, sco],
                                                 schema=b.schema.append(pa.field(pcol, lab.type))
                                                 .append(pa.field(scol, sco.type)))

        return dataset.mapInArrow(predict, schema)
