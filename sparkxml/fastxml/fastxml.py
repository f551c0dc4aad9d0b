"""FastXML on Spark: an ensemble of nDCG-partitioning trees for extreme multi-label learning.

The public classes are thin: training on Spark lives in ``_fastxml_fit`` (shared with
PfastreXML), the trees themselves in ``sparkxml_kernels.fastxml``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark import keyword_only
from pyspark.sql import types as T

from sparkxml._core.base import SparkXMLEstimator, SparkXMLPredictorModel
from sparkxml._core.params import (
    HasFeaturesCol,
    HasPredictionCol,
    HasScoresCol,
    HasTopK,
    HasVerbose,
    add_setters,
)
from sparkxml._core.summary import TrainingSummary
from sparkxml._core.validation import (
    check_int_array_column,
    check_output_columns,
    check_vector_column,
)
from sparkxml.fastxml.fit import FOREST_DTYPES, fit_forest
from sparkxml.fastxml.fit import check_memory as _check_memory  # noqa: F401  (tests import it here)
from sparkxml.fastxml.params import FastXMLParams
from sparkxml_kernels import arrow_io
from sparkxml_kernels.fastxml.predictor import FastXMLPredictor


class FastXML(SparkXMLEstimator, FastXMLParams, HasVerbose):
    """FastXML extreme multi-label classifier (Prabhu & Varma, KDD'14).

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (sparse or dense), all of one size, finite values, no nulls.
    labelsCol : str, default "labels"
        array<int> of label ids >= 0; an empty array is allowed, a null one is not. A label
        repeated within a row counts once.
    numTrees : int, default 50
    maxLeaf : int, default 10
    labelsPerLeaf : int, default 100
    logLossCoeff : float, default 1.0
    bias : float, default 1.0
    seed : int, default 0
        Tree t draws from an MT19937 seeded with t + seed * 0x9E3779B1 (mod 2**32), so the
        model does not depend on numWorkers. At seed 0 the trees are the authors' C++ trees
        0..numTrees-1 (``fastXML_train -s 0``) node for node, given the rows in the same
        order (``rowOrder="input"`` on a file read in order): the kernel replays their random
        draws, sort order and float32 arithmetic.
    rowOrder : str, default "content"
        "content": rows are ordered by a hash of their features and labels computed in the
        JVM, so the model depends only on the multiset of rows and the seed, whatever the
        partitioning and numWorkers (exact duplicates share a key and sit together).
        "input": the DataFrame's own order (what the authors' C++ sees in a file); it
        changes with the partitioning. See ``sparkxml.fastxml.fit``.
    numWorkers : int, optional
        Spark tasks training runs on (default: the session's default parallelism). Replicated
        training spreads the trees over at most numTrees tasks, each holding the whole
        training set; distributed training gives each task a shard of the rows.
    trainingMode : str, default "auto"
        "replicated", "distributed" or "auto" (replicated when the estimated memory of a task
        holding the whole training set fits the task, else distributed). Distributed training
        grows the top levels of every tree with all tasks together, in one barrier stage,
        until every node of a level holds at most min(rows / numWorkers, what one task's
        memory holds) rows; those levels are the replicated trees' nodes exactly. Each node
        of that level is then grown by one task from its own random stream, so the subtrees
        below differ from the replicated ones (the model then depends on numWorkers through
        that row limit). See ``sparkxml.fastxml.distributed``.
    nthread : int, optional
        Threads of each replicated training task: each grows one tree at a time, taking the
        next when free, with its own working memory (the memory estimate counts them);
        unset, the task's ``spark.task.cpus``. One task with several threads holds one copy
        of the rows where several tasks hold one each. The model is the same whatever its
        value.
    topK, predictionCol, scoresCol
        Copied to the model; see ``FastXMLModel``.
    verbose : int, default 0
        Log "tree i/n" every ``verbose`` trees of each training task through the Python
        logger ``sparkxml`` (live, see ``sparkxml._core.progress``); 0 = silent.

    Examples
    --------
    >>> from sparkxml import XMLEvaluator
    >>> from sparkxml.synthetic import make_multilabel, rows_frame
    >>> X, Y = make_multilabel(n_rows=60, n_features=50, n_labels=5, seed=0)
    >>> df = rows_frame(spark, X, Y, 0, 60, num_features=50)
    >>> model = FastXML(numTrees=4, seed=0).fit(df)
    >>> model.trees, model.numFeatures, model.numLabels
    (4, 50, 5)
    >>> out = model.setTopK(3).transform(df)
    >>> out.columns
    ['features', 'labels', 'prediction', 'scores']
    >>> 0.6 < XMLEvaluator(k=1).evaluate(out) <= 1.0       # P@1
    True
    """

    _model_kind = "fastxml"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelsCol="labels",
                 predictionCol="prediction", scoresCol="scores", topK=5, numTrees=50,
                 maxLeaf=10, labelsPerLeaf=100, logLossCoeff=1.0, bias=1.0, seed=0,
                 numWorkers=None, rowOrder="content", trainingMode="auto", verbose=0,
                 nthread=None):
        kwargs = self._input_kwargs
        super().__init__()
        self._setDefault(verbose=0)
        self._set_params(**kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelsCol="labels",
                  predictionCol="prediction", scoresCol="scores", topK=5, numTrees=50,
                  maxLeaf=10, labelsPerLeaf=100, logLossCoeff=1.0, bias=1.0, seed=0,
                  numWorkers=None, rowOrder="content", trainingMode="auto", verbose=0,
                  nthread=None):
        return self._set_params(**self._input_kwargs)

    # ------------------------------------------------------------------ training
    def _fit_validated(self, dataset):
        check_vector_column(dataset, self.getFeaturesCol())
        check_int_array_column(dataset, self.getLabelsCol())
        forest, _, n_features, n_labels, info = fit_forest(self, dataset, type(self).__name__)
        model = FastXMLModel._create(forest, n_features, n_labels, float(self.getBias()))
        model._training_info = info
        model._summary = FastXMLTrainingSummary._from_info(info, self.getNumTrees())
        return model


add_setters(FastXML, ("numTrees", "maxLeaf", "labelsPerLeaf", "logLossCoeff", "bias", "seed",
                      "numWorkers", "rowOrder", "verbose", "trainingMode", "topK", "featuresCol",
                      "labelsCol", "predictionCol", "scoresCol", "nthread"))


class FastXMLTrainingSummary(TrainingSummary):
    """What a FastXML or PfastreXML fit reports (the common fields:
    ``sparkxml._core.summary.TrainingSummary``).

    Attributes
    ----------
    trainingSeconds : float
        Wall time of the training job(s) (driver view).
    checksSeconds : float
        Wall time of the data pass before it.
    numWorkers : int
        Training tasks (replicated: at most numTrees; distributed: the row shards).
    workerInfo : list of dict
        Per task: rows, peak RSS (replicated), or the barrier stage's ranks (distributed).
    trainingMode : str
        "replicated" or "distributed": what ran.
    numTrees : int
    replicatedTaskBytes, taskMemoryBytes, memoryLimitBytes : int
        What a replicated task would need, what a task may use, and the limit that comes
        from (see ``sparkxml.fastxml.fit.task_memory``).
    """

    _int_fields = TrainingSummary._int_fields + ("numTrees", "replicatedTaskBytes",
                                                 "taskMemoryBytes", "memoryLimitBytes")
    _json_fields = TrainingSummary._json_fields + ("trainingMode",)

    def __init__(self, training_seconds=0.0, worker_info=None, checks_seconds=None,
                 num_workers=None, training_mode=None, num_trees=0,
                 replicated_task_bytes=None, task_memory_bytes=None, memory_limit_bytes=None):
        super().__init__(training_seconds, worker_info, checks_seconds, num_workers)
        self.trainingMode = training_mode
        self.numTrees = int(num_trees)
        self.replicatedTaskBytes = replicated_task_bytes
        self.taskMemoryBytes = task_memory_bytes
        self.memoryLimitBytes = memory_limit_bytes

    @classmethod
    def _from_info(cls, info: dict, num_trees: int):
        """The summary of ``fit_forest``'s info."""
        workers = info.get("tasks") or info.get("stage1") or []
        return cls(info.get("train_seconds", 0.0), workers, info.get("checks_seconds"),
                   info.get("workers"), info.get("mode"), num_trees,
                   info.get("replicated_task_bytes"), info.get("task_memory_bytes"),
                   info.get("memory_limit_bytes"))

    def _rows(self) -> list:
        return [(i, {}) for i in range(1, self.numTrees + 1)]


class LabelForestModel(SparkXMLPredictorModel, HasFeaturesCol, HasPredictionCol, HasScoresCol,
                       HasTopK):
    """A model made of a forest's arrays that predicts a row's topK labels: FastXML's,
    PfastreXML's and the label trees' (Parabel, Bonsai).

    ``transform`` adds ``predictionCol`` (array<int>: the topK labels, best first; labels with
    a zero score are left out) and ``scoresCol`` (array<float>, aligned). A subclass gives
    ``_predictor_spec`` (the predictor class and its constructor arguments) and
    ``_check_arrays`` (fails on inconsistent arrays).
    """

    _summary_class = FastXMLTrainingSummary
    _state_attrs = ("_arrays", "_predictor_key", "_training_info")
    _format_errors = (ValueError, KeyError, IndexError)

    def __init__(self, arrays: dict | None = None, summary=None):
        # the forest's arrays; the predictor is built from them and the params (its key)
        super().__init__(None, summary)
        self._arrays: dict = dict(arrays or {})
        self._predictor_key = None
        # diagnostics of the fit that made this model (mode, memory figures, task peaks);
        # the summary keeps what is saved
        self._training_info: dict = {}

    @classmethod
    def _create(cls, forest: dict, n_features: int, n_labels: int, bias: float, **scalars: int):
        """The model of a trained forest: its arrays, 0-d ``n_features``, ``n_labels``,
        ``bias`` and the int64 ``scalars``."""
        return cls(dict(forest, n_features=np.array(n_features, dtype=np.int64),
                        n_labels=np.array(n_labels, dtype=np.int64),
                        bias=np.array(bias, dtype=np.float64),
                        **{k: np.array(v, dtype=np.int64) for k, v in scalars.items()}))

    @classmethod
    def _predictor_from_arrays(cls, arrays: dict):
        return None  # built on first use, from the arrays and the params

    def _restore(self, arrays: dict) -> None:
        self._arrays = {k: v for k, v in arrays.items() if not k.startswith("summary.")}
        self._check_arrays()

    @classmethod
    def _format_message(cls, path: str, error: BaseException) -> str:
        return f"{path}: {cls.__name__[:-len('Model')]} arrays are inconsistent: {error}"

    def _check_arrays(self) -> None:
        self.predictor

    def _predictor_arrays(self) -> dict:
        return self._arrays

    def _predictor_spec(self) -> tuple:
        """(predictor class, constructor arguments): plain values, so transform tasks can
        build the predictor from them."""
        raise NotImplementedError

    @property
    def predictor(self):
        """The JVM-free predictor (``predict(indptr, indices, data, k)``)."""
        cls, args = self._predictor_spec()
        key = (cls, args[1:])
        if self._predictor is None or self._predictor_key != key:
            self._predictor, self._predictor_key = cls(*args), key
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

    def _transform_validated(self, dataset):
        fcol = self.getFeaturesCol()
        check_vector_column(dataset, fcol)
        pcol, scol, k = self.getPredictionCol(), self.getScoresCol(), self.getTopK()
        check_output_columns(dataset.columns, (pcol, scol))
        n_features = self.numFeatures
        self.predictor  # fails here, on the driver, when the params do not fit the arrays
        cls, args = self._predictor_spec()
        extra = args[1:]
        key = (cls.__module__, cls.__qualname__, extra)
        handle = self._task_model(dataset)  # not the forest itself: see sparkxml._core.serving
        out_fields = [T.StructField(pcol, T.ArrayType(T.IntegerType())),
                      T.StructField(scol, T.ArrayType(T.FloatType()))]
        schema = T.StructType(list(dataset.schema.fields) + out_fields)

        def predict(batches):
            predictor = handle.build(key, lambda arrays: cls(arrays, *extra))
            for b in batches:
                xi, xj, xv, _ = arrow_io.vectors_to_csr(b.column(fcol), fcol,
                                                        num_features=n_features)
                if not np.all(np.isfinite(xv)):
                    # fit rejects them too; the separators cannot route a NaN
                    raise ValueError(f"featuresCol: column '{fcol}' holds NaN or infinite "
                                     f"values; the trees cannot route them")
                labels, scores = predictor.predict(xi, xj, xv, k)
                counts = (scores > 0).sum(axis=1)
                lab, sco = arrow_io.topk_to_arrow(labels, scores, counts)
                yield pa.RecordBatch.from_arrays(list(b.columns) + [lab, sco],
                                                 schema=b.schema.append(pa.field(pcol, lab.type))
                                                 .append(pa.field(scol, sco.type)))

        return dataset.mapInArrow(predict, schema)


add_setters(LabelForestModel, ("topK", "featuresCol", "predictionCol", "scoresCol"))


class FastXMLModel(LabelForestModel, FastXMLParams):
    """A trained FastXML forest.

    ``transform`` adds ``predictionCol`` (array<int>: the topK labels, best first; labels with
    a zero score are left out) and ``scoresCol`` (array<float>, aligned: the mean over trees of
    the reached leaves' label distributions). It fails on a null vector or a NaN / infinite
    feature value, naming ``featuresCol``: the separators cannot route them.

    Save format
    -----------
    ``path/metadata/part-*``: Spark ML metadata JSON (class, uid, params) with
    ``formatVersion`` 2, ``modelKind`` "fastxml", ``saveId`` and the arrays' manifest;
    ``path/data/*.parquet``: the arrays in chunk rows (``sparkxml_kernels.persist``; version 1
    directories, ``data/arrays.npz``, still load). The arrays: ``n_features``,
    ``n_labels``, ``bias`` (0-d) and the forest: ``tree_ids`` int32 (T,), ``tree_offsets``
    int64 (T+1,), ``children`` int32 (M, 2) [positive, negative] child ids local to the tree
    (-1 for leaves), separator weights CSR over nodes ``w_indptr`` int64 (M+1,), ``w_index``
    int32 (feature id; ``n_features`` is the bias), ``w_value`` float32, and leaf
    distributions CSR ``leaf_indptr`` int64 (M+1,), ``leaf_label`` int32, ``leaf_score``
    float32 (descending). ``sparkxml_kernels.load_model(path)`` reads it without Spark.
    """

    _model_kind = "fastxml"
    _required_arrays = tuple(FOREST_DTYPES) + ("n_features", "n_labels", "bias")

    def _predictor_spec(self):
        a = self._arrays
        return FastXMLPredictor, (a, int(a["n_features"]), int(a["n_labels"]), float(a["bias"]))
