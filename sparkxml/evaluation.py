"""Evaluators for extreme multi-label predictions and for rankings.

``recommendation_metrics`` scores ALS-style per-user recommendations against held-out
interactions (NDCG@k, recall@k per user, averaged). ``XMLEvaluator`` scores top-k label predictions (P@k, nDCG@k, PSP@k, PSnDCG@k, recall@k, the
Extreme Classification Repository definitions); ``RankingEvaluator`` scores per-query
rankings (NDCG@k as LightGBM computes it, MAP@k, precision@k). Both compute per-partition
sufficient statistics ``(sum, count)`` with ``mapInArrow`` and the kernels of
``sparkxml_kernels.metrics``, reduce them on the driver, and return a value in [0, 1]
(larger is better). They are ``pyspark.ml.evaluation.Evaluator`` s, so they plug into
``CrossValidator``/``TrainValidationSplit``, and persist with ``write().save(path)`` /
``load(path)`` without the JVM (Spark Connect included).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyspark import keyword_only
from pyspark.ml.evaluation import Evaluator
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.base import SparkXMLParams
from sparkxml._core.constraints import one_of
from sparkxml._core.params import (
    HasGroupCol,
    HasInversePropensities,
    HasK,
    HasLabelCol,
    HasLabelsCol,
    HasPredictionCol,
)
from sparkxml_kernels import metrics as M
from sparkxml_kernels.arrow_io import lists_to_csr

__all__ = ["XMLEvaluator", "RankingEvaluator", "label_propensities", "recommendation_metrics"]

_INTEGER_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NUMERIC_TYPES = _INTEGER_TYPES + (T.FloatType, T.DoubleType, T.DecimalType)

_P = TypeVar("_P", bound=Params)


def _field(who: str, dataset: DataFrame, name: str, role: str) -> T.StructField:
    """The schema field of column ``name``; a clear error when it is missing."""
    if name not in dataset.columns:
        raise ValueError(f"{who}: {role} column '{name}' not found; the DataFrame has columns "
                         f"{dataset.columns}")
    return dataset.schema[name]


def _check_int_array(who: str, dataset: DataFrame, name: str, role: str, what: str) -> None:
    dt = _field(who, dataset, name, role).dataType
    if not (isinstance(dt, T.ArrayType) and isinstance(dt.elementType, _INTEGER_TYPES)):
        raise TypeError(f"{who}: {role} column '{name}' must be array<int> ({what}), got "
                        f"{dt.simpleString()}")


def _numpy(col: Any, dtype: npt.DTypeLike) -> np.ndarray:
    """A null-free primitive Arrow column as numpy, without pandas (``to_numpy`` imports it)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return np.frombuffer(col.buffers()[1], dtype=dtype, count=len(col),
                         offset=col.offset * np.dtype(dtype).itemsize)


class _MetricName(Params):
    metricName = Param(Params._dummy(), "metricName", "metric to compute",
                       typeConverter=TypeConverters.toString)

    def getMetricName(self) -> str:
        return self.getOrDefault(self.metricName)

    def setMetricName(self: _P, value: str) -> _P:
        return self._set(metricName=value)

    def setK(self: _P, value: int) -> _P:
        return self._set(k=value)

    def isLargerBetter(self) -> bool:
        return True

    def _check_metric(self, allowed: Sequence[str]) -> str:
        # the _constraints rule checks a set metricName; this also rejects a null one
        name = self.getMetricName()
        if name not in allowed:
            raise ValueError(f"{type(self).__name__}: param metricName={name!r} is invalid: "
                             f"must be one of {list(allowed)}")
        return name


class XMLEvaluator(Evaluator, SparkXMLParams, _MetricName, HasLabelsCol, HasPredictionCol, HasK,
                   HasInversePropensities):
    """Evaluator of top-k multi-label predictions.

    Parameters
    ----------
    metricName : str, default "precisionAtK"
        ``precisionAtK``, ``ndcgAtK``, ``pspAtK``, ``psndcgAtK`` or ``recallAtK``; the
        definitions are in ``sparkxml_kernels.metrics`` (PSP@k and PSnDCG@k are normalised by
        the best achievable value summed over the data set, as the XC repository does).
    k : int, default 5
    labelsCol : str, default "labels"
        True label ids, ``array<int>`` (null = no labels).
    predictionCol : str, default "prediction"
        Predicted label ids, ``array<int>``, best first; only the first k count.
    inversePropensities : list of float, optional
        One a label id (see ``label_propensities``); required by pspAtK and psndcgAtK.

    Rows without true labels count (P@k, nDCG@k, recall@k score 0 on them). An empty
    DataFrame evaluates to 0.0.

    Examples
    --------
    >>> df = spark.createDataFrame([([1, 2], [1, 3]), ([4], [5, 4]), ([], [0])],
    ...                            "labels array<int>, prediction array<int>")
    >>> round(XMLEvaluator(k=1).evaluate(df), 3)        # P@1: hits in rows 1, 0, 0
    0.333
    >>> XMLEvaluator(metricName="recallAtK", k=2).evaluate(df)    # (1/2 + 1 + 0) / 3
    0.5
    """

    METRICS = M.XC_METRICS
    _constraints = {"metricName": one_of(*METRICS)}

    @keyword_only
    def __init__(self, *, metricName: str = "precisionAtK", k: int = 5,
                 labelsCol: str = "labels", predictionCol: str = "prediction",
                 inversePropensities: Sequence[float] | None = None) -> None:
        super().__init__()
        self._setDefault(metricName="precisionAtK", k=5, labelsCol="labels",
                         predictionCol="prediction")
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, metricName: str | None = None, k: int | None = None,
                  labelsCol: str | None = None, predictionCol: str | None = None,
                  inversePropensities: Sequence[float] | None = None) -> XMLEvaluator:
        return self._set_params(**self._input_kwargs)

    def setLabelsCol(self, value: str) -> XMLEvaluator:
        return self._set(labelsCol=value)

    def setPredictionCol(self, value: str) -> XMLEvaluator:
        return self._set(predictionCol=value)

    def setInversePropensities(self, value: Sequence[float]) -> XMLEvaluator:
        return self._set(inversePropensities=value)

    def _validate_params(self) -> None:
        super()._validate_params()
        metric = self._check_metric(self.METRICS)
        if metric in ("pspAtK", "psndcgAtK") and not (
                self.isDefined(self.inversePropensities)
                and self.getOrDefault(self.inversePropensities)):
            raise ValueError(f"XMLEvaluator: metricName={metric!r} needs inversePropensities "
                             "(one a label id): compute them from the training labels with "
                             "sparkxml.evaluation.label_propensities(train_df)")

    def _evaluate(self, dataset: DataFrame) -> float:
        self._validate_params()
        labels_col, pred_col = self.getLabelsCol(), self.getPredictionCol()
        _check_int_array("XMLEvaluator", dataset, labels_col, "labels", "true label ids")
        _check_int_array("XMLEvaluator", dataset, pred_col, "prediction",
                         "predicted label ids, best first")
        metric, k = self.getMetricName(), self.getK()
        w = None
        if metric in ("pspAtK", "psndcgAtK"):
            w = np.asarray(self.getOrDefault(self.inversePropensities), np.float64)

        def stats(batches: Iterable[Any]) -> Iterator[Any]:
            num = den = 0.0
            for batch in batches:
                Y = lists_to_csr(batch.column(0), labels_col)
                P = lists_to_csr(batch.column(1), pred_col)
                a, b = M.xc_stats(metric, P, Y[0], Y[1], k, w)
                num += a
                den += b
            yield pa.RecordBatch.from_arrays([pa.array([num]), pa.array([den])],
                                             names=["num", "den"])

        rows = (dataset.select(F.col(labels_col), F.col(pred_col))
                .mapInArrow(stats, "num double, den double").collect())
        num = sum(r["num"] for r in rows)
        den = sum(r["den"] for r in rows)
        return float(num / den) if den > 0 else 0.0


class RankingEvaluator(Evaluator, SparkXMLParams, _MetricName, HasLabelCol, HasPredictionCol,
                       HasGroupCol, HasK):
    """Evaluator of rankings: per-query metric averaged over queries.

    Parameters
    ----------
    metricName : str, default "ndcgAtK"
        ``ndcgAtK`` (gain 2^rel - 1, LightGBM's NDCG; a query without relevant documents
        counts 1), ``mapAtK`` (LightGBM's map@k) or ``precisionAtK`` (relevant = rel > 0,
        divided by k).
    k : int, default 10
    labelCol : str, default "label"
        Graded relevance: integers >= 0 (a negative, fractional, NaN or null grade, a NaN or
        null score, a null query id are errors).
    predictionCol : str, default "prediction"
        Score; documents are ranked by decreasing score.
    groupCol : str, default "qid"
        Query id (integer or string).

    Rows are repartitioned by ``groupCol`` so that each query is scored in one task. An empty
    DataFrame evaluates to 0.0.

    Examples
    --------
    >>> df = spark.createDataFrame([(1, 2, 0.9), (1, 0, 0.5), (1, 1, 0.1), (2, 1, 0.2),
    ...                             (2, 0, 0.8)], "qid int, label int, prediction double")
    >>> RankingEvaluator(metricName="precisionAtK", k=1).evaluate(df)   # query 1 hits, 2 not
    0.5
    >>> round(RankingEvaluator(k=3).evaluate(df), 3)
    0.797
    """

    METRICS = M.RANKING_METRICS
    _constraints = {"metricName": one_of(*METRICS)}

    @keyword_only
    def __init__(self, *, metricName: str = "ndcgAtK", k: int = 10, labelCol: str = "label",
                 predictionCol: str = "prediction", groupCol: str = "qid") -> None:
        super().__init__()
        self._setDefault(metricName="ndcgAtK", k=10, labelCol="label",
                         predictionCol="prediction", groupCol="qid")
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, metricName: str | None = None, k: int | None = None,
                  labelCol: str | None = None, predictionCol: str | None = None,
                  groupCol: str | None = None) -> RankingEvaluator:
        return self._set_params(**self._input_kwargs)

    def setLabelCol(self, value: str) -> RankingEvaluator:
        return self._set(labelCol=value)

    def setPredictionCol(self, value: str) -> RankingEvaluator:
        return self._set(predictionCol=value)

    def setGroupCol(self, value: str) -> RankingEvaluator:
        return self._set(groupCol=value)

    def _validate_params(self) -> None:
        super()._validate_params()
        self._check_metric(self.METRICS)

    def _evaluate(self, dataset: DataFrame) -> float:
        self._validate_params()
        label_col, pred_col, group_col = (self.getLabelCol(), self.getPredictionCol(),
                                          self.getGroupCol())
        for name, role in ((label_col, "label"), (pred_col, "prediction")):
            dt = _field("RankingEvaluator", dataset, name, role).dataType
            if not isinstance(dt, _NUMERIC_TYPES):
                raise TypeError(f"RankingEvaluator: {role} column '{name}' must be numeric "
                                f"(a {'relevance grade' if role == 'label' else 'score'}), "
                                f"got {dt.simpleString()}")
        dt = _field("RankingEvaluator", dataset, group_col, "group").dataType
        if not isinstance(dt, _INTEGER_TYPES + (T.StringType,)):
            raise TypeError(f"RankingEvaluator: group column '{group_col}' must be an integer "
                            f"or string query id, got {dt.simpleString()}")
        metric, k = self.getMetricName(), self.getK()
        names = (label_col, pred_col, group_col)

        def stats(batches: Iterable[Any]) -> Iterator[Any]:
            import pyarrow.compute as pc

            parts = [b for b in batches if b.num_rows]
            if not parts:
                yield pa.RecordBatch.from_arrays([pa.array([0.0]), pa.array([0.0])],
                                                 names=["total", "queries"])
                return
            table = pa.Table.from_batches(parts)
            cols = []
            for i, name in enumerate(names):
                col = table.column(i)
                if col.null_count:
                    raise ValueError(f"RankingEvaluator: column '{name}' has null values")
                cols.append(col)
            rel = _numpy(cols[0], np.float64)
            score = _numpy(cols[1], np.float64)
            bad = ~np.isfinite(rel) | (rel < 0) | (rel != np.floor(rel))
            if bad.any():
                raise ValueError(f"RankingEvaluator: label column '{label_col}' holds the value "
                                 f"{float(rel[bad][0])!r}; relevance grades must be integers "
                                 f">= 0")
            if np.isnan(score).any():
                raise ValueError(f"RankingEvaluator: prediction column '{pred_col}' holds NaN")
            codes = pc.dictionary_encode(cols[2].combine_chunks()).indices
            qid = _numpy(codes.cast(pa.int64()), np.int64)
            total, count = M.ranking_stats(metric, score, rel, qid, k)
            yield pa.RecordBatch.from_arrays([pa.array([total]), pa.array([count])],
                                             names=["total", "queries"])

        rows = (dataset.select(F.col(label_col).cast("double"), F.col(pred_col).cast("double"),
                               F.col(group_col))
                .repartition(F.col(group_col))
                .mapInArrow(stats, "total double, queries double").collect())
        total = sum(r["total"] for r in rows)
        queries = sum(r["queries"] for r in rows)
        return float(total / queries) if queries > 0 else 0.0


def label_propensities(df: "DataFrame", labelsCol: str = "labels", A: float = 0.55, B: float = 1.5,
                       numLabels: int | None = None) -> list[float]:
    """Inverse label propensities from a training DataFrame's label counts.

    ``1/p_l = 1 + C (N_l + B)^-A``, ``C = (ln N - 1)(B + 1)^A`` (Jain, Prabhu & Varma,
    KDD'16), N = number of rows, N_l = rows with label l (a label repeated in a row counts
    once).

    Parameters
    ----------
    df : DataFrame with an ``array<int>`` column ``labelsCol``
    A, B : float
        0.55 and 1.5 by default (the XC repository's values for most data sets).
    numLabels : int, optional
        Number of labels L; default: the largest label id + 1. Labels never seen get
        ``1 + C B^-A``.

    Returns
    -------
    list of float (L,)
    """
    _check_int_array("label_propensities", df, labelsCol, "labels", "label ids")

    def counts(batches: Iterable[Any]) -> Iterator[Any]:
        n, acc = 0, np.zeros(0, np.int64)
        for batch in batches:
            indptr, ids = lists_to_csr(batch.column(0), labelsCol, dtype=np.int64)
            if len(ids) and ids.min() < 0:
                raise ValueError(f"label_propensities: negative label id {int(ids.min())}")
            m = int(ids.max(initial=0)) + 1
            rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
            c = np.bincount(np.unique(rows * m + ids) % m)    # a repeat in a row counts once
            if len(c) > len(acc):
                acc = np.concatenate([acc, np.zeros(len(c) - len(acc), np.int64)])
            acc[:len(c)] += c
            n += batch.num_rows
        yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64()),
                                          pa.array([acc.tolist()], pa.list_(pa.int64()))],
                                         names=["n", "counts"])

    rows = df.select(labelsCol).mapInArrow(counts, "n long, counts array<long>").collect()
    n = sum(r["n"] for r in rows)
    if n == 0:
        raise ValueError("label_propensities: the DataFrame has no rows")
    size = max([len(r["counts"]) for r in rows] + [0])
    if numLabels is not None:
        if size > numLabels:
            raise ValueError(f"label_propensities: label id {size - 1} >= numLabels={numLabels}")
        size = numLabels
    total = np.zeros(size, np.int64)
    for r in rows:
        total[:len(r["counts"])] += np.asarray(r["counts"], np.int64)
    return M.inverse_propensities(total, n, A, B).tolist()


def recommendation_metrics(recommendations: DataFrame, test: DataFrame, k: int = 10,
                           userCol: str = "user", itemCol: str = "item",
                           metrics: Sequence[str] = ("ndcgAtK", "recallAtK")) -> dict:
    """Per-user ranking metrics of recommendations, averaged over the users of ``test``.

    Parameters
    ----------
    recommendations : DataFrame
        (userCol, recommendations: array<struct<itemCol, rating>>), best first: what
        ``FMRankerModel.recommendForAllUsers`` and MLlib's ``ALSModel.recommendForAllUsers``
        return.
    test : DataFrame
        Held-out positive interactions (userCol, itemCol), integer ids in int range; each
        user's relevant items are its distinct test items.
    k : int
    metrics : names of ``XMLEvaluator`` metrics
        ``ndcgAtK`` (binary relevance: DCG@k over the ideal DCG of min(k, relevant) hits) and
        ``recallAtK`` (hits in the top k over the user's relevant items) by default.

    Returns
    -------
    dict metric -> float: the mean over the users of ``test``; a test user without
    recommendations scores 0. (pyspark's ``RankingEvaluator`` computes the same ndcgAtK and
    recallAtK on the per-user frame; this helper builds that frame without the JVM ML
    classes, so it also runs over Spark Connect.)

    Examples
    --------
    >>> recs = spark.createDataFrame([(1, [(10, 0.9), (11, 0.5)]), (2, [(12, 0.4)])],
    ...     "user long, recommendations array<struct<item: long, rating: float>>")
    >>> test = spark.createDataFrame([(1, 11), (2, 13), (2, 12)], "user int, item int")
    >>> m = recommendation_metrics(recs, test, k=2)
    >>> round(m["recallAtK"], 3)                       # user 1: 1/1, user 2: 1/2
    0.75
    """
    limit = 2 ** 31 - 1

    def as_int(col: Any) -> Any:
        return F.when(F.abs(col) > F.lit(limit),
                      F.raise_error(F.lit("recommendation_metrics: an item id is outside "
                                          "the int range"))).otherwise(col).cast("int")

    truth = (test.select(F.col(userCol).cast("long").alias("__user"),
                         as_int(F.col(itemCol)).alias("__item"))
             .groupBy("__user").agg(F.array_sort(F.collect_set("__item")).alias("labels")))
    rec_items = F.transform(F.col("recommendations"), lambda r: as_int(r[itemCol]))
    pred = recommendations.select(F.col(userCol).cast("long").alias("__user"),
                                  rec_items.alias("prediction"))
    frame = (truth.join(pred, "__user", "left")
             .select("labels", F.coalesce("prediction", F.array().cast("array<int>"))
                     .alias("prediction")))
    return {m: XMLEvaluator(metricName=m, k=k).evaluate(frame) for m in metrics}
