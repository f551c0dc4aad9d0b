"""Learning to rank on the boosting engine: ``LambdaMART`` -> ``LambdaMARTModel``.

Same kernels and the same one-barrier-stage training as ``GBTRegressor`` (``sparkxml.gbt``);
what is new is the objective (``sparkxml_kernels.gbt.ranking``: NDCG lambdas as LightGBM's
``lambdarank``, or RankNet ``pairwise``), the grouping and the metric.

A fit runs three Spark jobs:

1. GBT's aggregate job of data checks (``sparkxml.gbt.data_checks``) with the ranking checks
   riding along: relevance grades integers >= 0 (within ``labelGain`` when given, else at
   most 31), no null query id -- bad input fails here with an error naming the column and
   the value;
2. GBT's sketch job (bin edges), over the training frame below;
3. the barrier stage over the training frame: each task bins its rows, derives the query
   boundaries (``group_ptr``) from its sorted query ids and boosts in lockstep with the
   others (``sparkxml_kernels.gbt.booster.train(..., group_ptr=...)``).

With one worker the training task is a plain one, and on small data it computes the bin
edges itself (``sketch_in_task``): two jobs, no shuffle.

Training frame: ``repartition(numWorkers, groupCol)`` (hash partitioning: a query never spans
two tasks; with one worker ``coalesce(1)``, the same rows without a shuffle) then
``sortWithinPartitions(groupCol, key)`` where ``key`` is ``xxhash64`` of the
row's training columns. Which task holds a query and the order of the rows inside a task
therefore depend on the data only, never on how the input was partitioned or ordered: the
same data gives the same model bit for bit, whatever its input partitioning (for a given
``numWorkers``). Rows of a query are ordered by ``key``, which only matters where scores tie
(in the first round all scores are 0: LightGBM breaks those ties by file order, we by ``key``).
``key`` also serves as the row id of row subsampling (identical rows share it).

Validation (``validationIndicatorCol``): flagged rows form the validation set, grouped by the
same query ids (a query with rows on both sides becomes one training and one validation
query); early stopping watches ``evalMetric`` (default ``ndcg@10``) on it.

Models score with the compiled tree traversal of the GBT models: ``predictionCol`` (double)
holds the ranking score (higher = better). They persist as plain arrays (``modelKind``
"gbt", objective "lambdarank", "pairwise", "xendcg" or "map"): ``sparkxml_kernels.load_model(path)`` serves
them without Spark.
"""
from __future__ import annotations

import time

from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.histogram_engine import (
    data_checks,
    finite_col,
    sketch_in_task,
    task_sketch,
    training_columns,
)
from sparkxml._core.histogram_tasks import make_load_fn, spec_columns
from sparkxml._core.params import HasGroupCol, add_setters
from sparkxml._core.progress import FitProgress
from sparkxml._core.workers import requested_workers, workers_for
from sparkxml.gbt.estimators import COMMON_PARAMS, GBTParams
from sparkxml.gbt.evaluation import GBTRankingEvaluation
from sparkxml.gbt.fit import GBTEstimator
from sparkxml.gbt.metric_params import (
    RANKING_DEFAULTS,
    evaluation_metrics,
    ranking_metric_name,
    ranking_metrics,
)
from sparkxml.gbt.models import GBTModelBase
from sparkxml.gbt.objective_params import HasEvalMetrics
from sparkxml.gbt.params import (
    HasLabelGain,
    HasLambdarankNorm,
    HasNdcgTruncation,
    HasObjective,
    HasSigma,
)
from sparkxml.gbt.summary import GBTTrainingSummary
from sparkxml.gbt.tasks import address_hook, make_train_fn
from sparkxml_kernels.gbt.ranking import MAX_DEFAULT_GRADE

__all__ = ["LambdaMART", "LambdaMARTModel"]

_KEY = "__sparkxml_row_key"
_INTEGER_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_RANKING_PARAMS = ("groupCol", "objective", "ndcgTruncation", "labelGain", "sigma",
                   "lambdarankNorm", "evalMetrics")


class _LambdaMARTParams(GBTParams, HasGroupCol, HasObjective, HasNdcgTruncation, HasLabelGain,
                        HasSigma, HasLambdarankNorm, HasEvalMetrics):
    # the GBT doc lists GBT's metrics; LambdaMART's checks accept ranking metrics only
    evalMetric = Param(Params._dummy(), "evalMetric", "validation metric: 'ndcg@k' or 'map@k' "
                       "(k >= 1; bare 'ndcg' / 'map' mean @10), default 'ndcg@10'",
                       typeConverter=TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(groupCol="qid", objective="lambdarank", ndcgTruncation=30, sigma=1.0,
                         lambdarankNorm=True, evalMetric="ndcg@10")

    def _label_gain(self):
        g = self._opt(self.labelGain)
        return None if g is None else [float(v) for v in g]


# ============================================================================ estimator
class LambdaMART(GBTEstimator, _LambdaMARTParams):
    """LambdaMART learning to rank: histogram boosted trees on NDCG lambdas, trained in one
    barrier stage.

    Takes every parameter of :class:`sparkxml.gbt.GBTRegressor` (``maxIter``, ``stepSize``,
    ``maxDepth``, ``maxLeaves``, ``growPolicy``, ``maxBins``, ``regLambda``, ``regAlpha``,
    ``minSplitLoss``, ``minChildWeight``, ``subsamplingRate``, ``colsampleByTree``,
    ``colsampleByLevel``, ``colsampleByNode``, ``interactionConstraints``, ``seed``,
    ``numWorkers``, ``weightCol``, ``validationIndicatorCol``, ``earlyStoppingRounds``,
    ``timeoutSeconds``, ``featuresCol`` / ``featuresCols``, ``missing``, ``baseMarginCol``,
    ``monotoneConstraints``, ``predContribCol``, ``leafCol``, ``verbose``, ``initModel``,
    ``nthread``, ``boosterType``, ``rateDrop``, ``skipDrop``, ``oneDrop``,
    ``normalizeType``, ``sampleType``, ``treeMethod``),
    plus:

    groupCol : str, default "qid"
        Query id: integer (int, long) or string column, no nulls. Rows need not be grouped
        or ordered in the input.
    labelCol : str, default "label"
        Graded relevance: integers >= 0 (negative, fractional, NaN or null values are
        errors).
    predictionCol : str, default "prediction"
        The model's output column: the ranking score (double, higher ranks first).
    objective : {"lambdarank", "pairwise", "xendcg", "map"}, default "lambdarank"
        NDCG lambdas (LightGBM's lambdarank), RankNet over all pairs, or the XE-NDCG cross
        entropy (LightGBM's ``rank_xendcg``: gains 2^rel less a uniform draw per document and
        round; ``seed`` seeds the draws, each query from a hash of its rows, so the model does
        not depend on partitioning; ``ndcgTruncation``, ``labelGain``, ``sigma`` and
        ``lambdarankNorm`` do not apply), or MAP lambdas (XGBoost's ``rank:map``, binary
        labels 0/1; pairs as XGBoost's "topk" with ``ndcgTruncation`` pairs per document
        (XGBoost: 32), ``lambdarankNorm`` as XGBoost's score and lambda normalisations;
        ``sparkxml_kernels.gbt.ranking_map``).
    ndcgTruncation : int, default 30
        lambdarank truncation level (LightGBM's ``lambdarank_truncation_level``).
    labelGain : list of float, optional
        Gain of relevance grades 0, 1, 2, ... (default 2^rel - 1, for grades 0..31; higher
        grades need labelGain); also used by the NDCG evaluation metric.
    sigma : float, default 1.0
        Steepness of the pair sigmoid.
    lambdarankNorm : bool, default True
        LightGBM's ``lambdarank_norm``: scale pair weights by ``1 / (0.01 + |score gap|)`` and
        the query's lambdas by log2(1 + S) / S.
    evalMetric : str, default "ndcg@10"
        Validation metric: ``ndcg@k`` or ``map@k`` (XGBoost's definitions; a query without
        relevant documents counts 1).
    evalMetrics : list of str, optional
        Several ``ndcg@k`` / ``map@k``, each recorded every round on the training and
        validation queries (``summary.metricHistory``); early stopping follows
        ``evalMetric`` when set, else the first of them.

    Differences from LightGBM's lambdarank (the lambdas are otherwise LightGBM's, see
    ``sparkxml_kernels.gbt.ranking``):

    * trees grow as XGBoost's: depth-wise by default, ``regLambda`` 1, ``minChildWeight`` 1
      (LightGBM: 31 leaves leaf-wise, lambda 0, min_sum_hessian 1e-3, min_data_in_leaf 20);
      ``growPolicy="lossguide", maxLeaves=31`` is the closest to LightGBM's shape;
    * documents with tied scores (all of them in the first round) are ranked by a hash of the
      row (``xxhash64`` of its columns), LightGBM by file order. This makes the model
      independent of the input's partitioning and row order; on the LightGBM rank sample the
      test NDCG@10 varies from 0.724 to 0.765 (mean 0.745) over 20 random row orders within
      queries, so a single number compares to LightGBM's only within that spread;
    * the sigmoid is exact (LightGBM: a lookup table), the default gains 2^rel - 1 go up to
      relevance 31 (LightGBM's default table to 30, XGBoost's exponential gain to 31), no
      position-bias correction.

    Differences from XGBoost: ``rank:ndcg`` / ``rank:pairwise`` build pairs by
    ``lambdarank_pair_method`` (default "topk") with their own normalisation; ``pairwise`` here
    is classic RankNet over all pairs of a query (cost quadratic in the query size).

    DART (``boosterType="dart"``, :mod:`sparkxml.gbt.booster_params`) drops trees as for the
    GBT models; since the lambdas depend on the order of the scores, the scores of the kept
    trees are summed afresh every round (XGBoost's training prediction) rather than derived
    from the full scores, so that documents tie exactly where XGBoost's would. With
    ``objective="xendcg"`` the per-round draws advance once more in a round that drops trees.

    Validation rows (``validationIndicatorCol``) are grouped by the same query ids; a query
    with rows on both sides becomes a training and a validation query. The validation
    NDCG ranks tied scores by the same row hash.

    Examples
    --------
    >>> from sparkxml import RankingEvaluator
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> rel = np.clip(np.round(X[:, 0] + 1), 0, 3).astype(np.int64)   # grades 0..3 from x0
    >>> df = from_dense(spark, X, columns={"qid": np.arange(60) // 10, "label": rel})
    >>> model = LambdaMART(groupCol="qid", maxIter=10, maxDepth=2, seed=0).fit(df)
    >>> 0.9 < RankingEvaluator(k=5).evaluate(model.transform(df)) <= 1.0    # NDCG@5
    True
    """

    _task = "ranking"

    @keyword_only
    def __init__(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                 groupCol="qid", weightCol=None, predictionCol="prediction",
                 objective="lambdarank", ndcgTruncation=30, labelGain=None, sigma=1.0,
                 lambdarankNorm=True, maxIter=100, stepSize=0.1, maxDepth=6, maxLeaves=0,
                 growPolicy="depthwise", maxBins=256, regLambda=1.0, regAlpha=0.0,
                 minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                 colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                 colsampleByLevel=1.0, colsampleByNode=1.0, interactionConstraints=None,
                 earlyStoppingRounds=0, evalMetric="ndcg@10", timeoutSeconds=600.0, missing=None,
                 baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                 leafCol=None, verbose=0, initModel=None, nthread=None, evalMetrics=None,
                 boosterType="gbtree", rateDrop=0.0, skipDrop=0.0, oneDrop=False,
                 normalizeType="tree", sampleType="uniform", treeMethod="hist",
                 useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                 stochasticRounding=True):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", featuresCols=None, labelCol="label",
                  groupCol="qid", weightCol=None, predictionCol="prediction",
                  objective="lambdarank", ndcgTruncation=30, labelGain=None, sigma=1.0,
                  lambdarankNorm=True, maxIter=100, stepSize=0.1, maxDepth=6, maxLeaves=0,
                  growPolicy="depthwise", maxBins=256, regLambda=1.0, regAlpha=0.0,
                  minSplitLoss=0.0, minChildWeight=1.0, subsamplingRate=1.0,
                  colsampleByTree=1.0, seed=0, numWorkers=None, validationIndicatorCol=None,
                  colsampleByLevel=1.0, colsampleByNode=1.0, interactionConstraints=None,
                  earlyStoppingRounds=0, evalMetric="ndcg@10", timeoutSeconds=600.0, missing=None,
                  baseMarginCol=None, monotoneConstraints=None, predContribCol=None,
                  leafCol=None, verbose=0, initModel=None, nthread=None, evalMetrics=None,
                  boosterType="gbtree", rateDrop=0.0, skipDrop=0.0, oneDrop=False,
                  normalizeType="tree", sampleType="uniform", treeMethod="hist",
                  useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                  stochasticRounding=True):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return LambdaMARTModel

    def _validate_params(self) -> None:
        super()._validate_params()
        ranking_metrics(self)
        if self.getProcessType() != "default":
            raise ValueError("processType: LambdaMART boosts new trees only ('default'); "
                             "the updaters (refresh, prune) serve GBTRegressor and "
                             "GBTClassifier")

    # ------------------------------------------------------------------ fit
    def _fit_validated(self, dataset):
        spark = dataset.sparkSession
        spec = self._features_spec()
        label, group = self.getLabelCol(), self.getGroupCol()
        weight = self._opt(self.weightCol) or None
        valid = self._opt(self.validationIndicatorCol) or None
        self._check_schema(dataset, spec, label, weight, valid)
        self._check_group_schema(dataset, group, spec, label, weight, valid)
        n_workers = requested_workers(spark, self)
        if self.getEarlyStoppingRounds() > 0 and valid is None:
            raise ValueError("earlyStoppingRounds > 0 needs validationIndicatorCol")
        self._check_policy()
        label_gain = self._label_gain()
        if self.getObjective() == "map" and label_gain is not None:
            raise ValueError("labelGain does not apply to objective 'map' (binary labels)")
        progress = FitProgress(spark, self, self.getVerbose())
        with progress:
            return self._fit_with(progress, dataset, spec, label, group, weight, valid,
                                  n_workers, label_gain)

    def _fit_with(self, progress, dataset, spec, label, group, weight, valid, n_workers,
                  label_gain):
        spark = dataset.sparkSession
        t0 = time.perf_counter()
        with progress.phase("checks"):
            stats = self._check_data(dataset, spec, label, weight, valid, group, label_gain,
                                     self._margin_checks(dataset))
        d = stats["d"]
        if self.getObjective() == "map" and (stats["label_max"] or 0) > 1:
            raise ValueError(f"labelCol: objective 'map' needs binary relevance labels (0 or "
                             f"1), as XGBoost's rank:map; column '{label}' holds the grade "
                             f"{stats['label_max']!r}")
        n_workers = workers_for(spark, stats, valid, n_workers)
        engine = self._engine_options(dataset, spec, stats, self.getObjective(), 1)
        checks_seconds = time.perf_counter() - t0

        # Queries never span tasks; the order inside a task depends on the data only.
        cols = spec_columns(spec) + [label] + [c for c in (weight, valid) if c]
        margin = engine["load"]["margin_col"]
        frame = (dataset.select(*cols, group, *([margin] if margin else []))
                 .withColumn(_KEY, F.xxhash64(*cols)))
        # one worker: the rows of every input partition in one task, no shuffle
        frame = (frame.coalesce(1) if n_workers == 1
                 else frame.repartition(int(n_workers), F.col(group)))
        frame = frame.sortWithinPartitions(group, _KEY)
        in_task = sketch_in_task(stats, n_workers)
        edges, _, sketch_seconds = (None, [], 0.0) if in_task else \
            self._sketch_phase(progress, frame, spec, weight, valid, stats, engine)
        metric, names = ranking_metrics(self)
        params = dict(self._booster_params(self.getMaxBins()), evalMetric=metric,
                      evalMetrics=names,
                      categoricalFeatures=engine["cat_ids"] or None,
                      **engine["node_features"])
        ranking = {"objective": self.getObjective(), "truncation": self.getNdcgTruncation(),
                   "label_gain": label_gain, "sigma": self.getSigma(),
                   "norm": self.getLambdarankNorm(), "seed": int(self.getSeed())}
        fault = dict(self._fault_injection) if self._fault_injection else None
        proj = training_columns(spec, label, weight, valid, engine["cols"])
        load_options = dict(engine["load"], nthread=params["nthread"])
        load = (self._sketch_load_fn(spec, label, weight, valid, d, engine, load_options,
                                     by_partition=False, id_col=_KEY, group=group)
                if in_task else
                make_load_fn(spec, label, weight, valid, edges, d, id_col=_KEY, group=group,
                             options=load_options))
        with progress.phase("train"):
            result = run_barrier_training(
                frame.select(*proj, group, _KEY), n_workers, load,
                make_train_fn(edges, params, fault, ranking, progress.task_spec()),
                timeout_s=self.getTimeoutSeconds(), repartition=False,
                on_addresses=address_hook(fault), coalesce_single=True)
        if in_task:
            _, sketch_seconds = task_sketch(result)
        summary = GBTTrainingSummary._from_fit(result, checks_seconds, sketch_seconds)
        return self._model_from(result, engine, summary, progress)

    # ------------------------------------------------------------------ checks
    def _check_group_schema(self, dataset, group, spec, label, weight, valid):
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        if group not in fields:
            raise ValueError(f"groupCol: column '{group}' is not in the DataFrame (columns: "
                             f"{list(fields)})")
        if not isinstance(fields[group], _INTEGER_TYPES + (T.StringType,)):
            raise TypeError(f"groupCol: column '{group}' must be an integer or string query "
                            f"id, got {fields[group].simpleString()}")
        used = spec_columns(spec) + [label] + [c for c in (weight, valid) if c]
        if group in used:
            raise ValueError(f"groupCol: column '{group}' is also the features, label, weight "
                             f"or validation column")
        if _KEY in fields:
            raise ValueError(f"column name '{_KEY}' is reserved")

    @staticmethod
    def _check_data(dataset, spec, label, weight, valid, group, label_gain, extra=None):
        """GBT's aggregate job of data checks (nulls, non-finite values, weights, vector
        sizes), with the ranking checks riding along: relevance grades integers >= 0 (and
        within ``labelGain``), no null query id. Returns GBT's statistics."""
        y = F.col(label).cast("double")
        bad = finite_col(y) & ((y < 0) | (y != F.floor(y)))
        top = len(label_gain) - 1 if label_gain is not None else MAX_DEFAULT_GRADE
        bad = bad | (finite_col(y) & (y > top))
        extra = {"rank_label_bad": F.first(F.when(bad, y), ignorenulls=True),
                 "rank_n_bad": F.sum(F.when(bad, 1).otherwise(0)),
                 "rank_group_null": F.sum(F.col(group).isNull().cast("long")),
                 **(extra or {})}
        stats = data_checks(dataset, spec, label, weight, valid, "regression", extra)
        r = stats["extra"]
        if r["rank_label_bad"] is not None:
            value = float(r["rank_label_bad"])
            if label_gain is not None and value >= 0 and value == int(value):
                raise ValueError(f"labelCol: column '{label}' holds the grade {value!r} but "
                                 f"labelGain has only {len(label_gain)} entries (grades "
                                 f"0..{len(label_gain) - 1})")
            if value > MAX_DEFAULT_GRADE and value == int(value):
                raise ValueError(f"labelCol: column '{label}' holds the grade {value!r}; the "
                                 f"default gain 2^rel - 1 takes grades 0..{MAX_DEFAULT_GRADE} "
                                 f"(beyond, it loses precision and overflows): set labelGain "
                                 f"to rank with higher grades")
            raise ValueError(f"labelCol: column '{label}' holds the value {value!r} "
                             f"({r['rank_n_bad']} such rows); relevance grades must be "
                             f"integers >= 0")
        if r["rank_group_null"]:
            raise ValueError(f"groupCol: column '{group}' has {r['rank_group_null']} null "
                             f"query id(s); every row needs a query id")
        return stats


add_setters(LambdaMART, COMMON_PARAMS + _RANKING_PARAMS)


# ============================================================================ model
class LambdaMARTModel(GBTModelBase, _LambdaMARTParams):
    """Fitted :class:`LambdaMART`: adds ``predictionCol`` (double), the ranking score.

    ``transform`` scores rows independently (no grouping needed); rank the documents of a
    query by decreasing score. ``summary`` holds the training and validation history
    (``evalMetric`` after each round), ``bestIteration`` and per-worker timings.
    :meth:`rankingEvaluationFrame` feeds ``pyspark.ml.evaluation.RankingEvaluator``. Trees,
    dumps, SHAP contributions and feature names as the GBT models; save format: see
    ``sparkxml.gbt.GBTRegressionModel``.
    """

    _objectives = ("lambdarank", "pairwise", "map")

    def _outputs(self):
        return [(self.getPredictionCol(), "score")]

    def evaluate(self, dataset, metrics=None) -> GBTRankingEvaluation:
        """Ranking metrics of this model on ``dataset`` (``groupCol``, ``labelCol``,
        ``weightCol`` if set): ``metrics`` names ``ndcg@k`` / ``map@k`` (default ndcg@10,
        map@10 and those recorded in training), computed as in training (``labelGain``;
        tied scores ordered by a hash of the row's feature, label and weight columns)."""
        names = ([ranking_metric_name(m) for m in metrics] if metrics is not None
                 else evaluation_metrics(self._trained_metrics(), RANKING_DEFAULTS))
        values, queries = self._metric_values(dataset, names, self.getGroupCol(),
                                              self._label_gain())
        return GBTRankingEvaluation(values, queries)

    def rankingEvaluationFrame(self, dataset, minRelevance: float = 1.0,
                               predictionCol: str = "prediction", labelCol: str = "label"):
        """One row per query in the form ``pyspark.ml.evaluation.RankingEvaluator`` reads:
        ``predictionCol`` array<double> of the query's documents in the model's order, and
        ``labelCol`` array<double> of its relevant documents (label >= ``minRelevance``).

        A document is named by its position in the model's ranking (0, 1, ...), so the
        prediction array is 0..n-1 and the label array lists the positions of the relevant
        documents. Tied scores are ordered by a hash of the row's columns (as training
        does). Also returns ``groupCol``.
        """
        group, label = self.getGroupCol(), self.getLabelCol()
        if label not in dataset.columns:
            raise ValueError(f"labelCol: column '{label}' is not in the DataFrame")
        score = self.getPredictionCol()
        scored = self.transform(dataset)
        key = F.xxhash64(*[F.col(c) for c in dataset.columns])
        order = Window.partitionBy(group).orderBy(F.col(score).desc(), key)
        pos = (F.row_number().over(order) - 1).cast("double")
        ranked = scored.select(group, F.col(label).cast("double").alias(_KEY + "_y"),
                               pos.alias(_KEY + "_pos"))
        p, y = F.col(_KEY + "_pos"), F.col(_KEY + "_y")
        return ranked.groupBy(group).agg(
            F.sort_array(F.collect_list(p)).alias(predictionCol),
            F.sort_array(F.collect_list(F.when(y >= float(minRelevance), p))).alias(labelCol))


add_setters(LambdaMARTModel, ("featuresCol", "featuresCols", "predictionCol", "groupCol",
                               "labelCol", "weightCol", "predContribCol", "leafCol", "missing",
                               "baseMarginCol"))
