"""Summaries of the GBT engine's models: the training summary (``model.summary``) and
``model.evaluate(dataset)``'s MLlib-style summaries, computed with SQL.

Every ``evaluate`` metric is a Spark SQL aggregate over the model's predictions (no Python UDF, no
collect of rows, Spark Connect safe), with the definitions of Spark MLlib's
``MulticlassMetrics``, ``BinaryClassificationMetrics`` (no down-sampling: ``numBins`` 0) and
``RegressionMetrics``, weighted by ``weightCol`` when the model has one, so the numbers equal
``pyspark.ml.evaluation``'s evaluators on the same predictions (the tests check it).
"""
from __future__ import annotations

import math

import numpy as np
from pyspark.ml.functions import vector_to_array
from pyspark.sql import Window
from pyspark.sql import functions as F

from sparkxml._core.summary import TrainingSummary

_EPS = 1e-15  # MLlib's log loss clips probabilities at this


class GBTTrainingSummary(TrainingSummary):
    """What a fit reports: per-round training and validation metric, best iteration,
    timings, workers (the common fields: ``sparkxml._core.summary.TrainingSummary``).

    Rounds: wherever people read them (progress lines, ``sparkxml.plotting``'s learning
    curve, the CLI) rounds are counted from 1, round 1 being the first tree. The attributes
    here are indices, as in XGBoost: ``trainingHistory[i]`` and ``validationHistory[i]`` are
    the metric after round ``i + 1``, and ``bestIteration`` is the 0-based index of the best
    one, so the best round is ``bestIteration + 1`` (the plot's "best round" line).

    Attributes
    ----------
    metricName : str
    trainingHistory : list of float
        The metric on the training rows after each round (rounds of this fit; with
        ``initModel`` the model's earlier rounds are not included).
    validationHistory : list of float
        Validation metric after each round (empty without ``validationIndicatorCol``).
    metricHistory : dict
        Every metric recorded (``metricName`` and the others of ``evalMetrics``): name ->
        ``{"train": [...], "validation": [...]}``, a value per round as the histories above.
    bestIteration : int
        0-based index (into the histories) of the best validation score, i.e. round
        ``bestIteration + 1``; the last round without validation.
    bestScore : float or None
    numRounds : int
        Rounds kept in the model (``bestIteration + 1`` with early stopping).
    roundsRun : int
    trainingSeconds : float
        Wall time of the barrier stage (driver view).
    workerInfo : list of dict
        Per rank: rows, binned/float bytes, peak RSS, load/train seconds, bytes exchanged.
    numWorkers : int
    checksSeconds, sketchSeconds : float
        Wall time of the checks job and of the sketch job (of the summaries in the
        training task, where a small one-worker fit computes its bin edges there).
    sketchInfo : list of dict
        Per input partition of the sketch job: sampled rows, seconds (in the training
        task: per non-empty input partition).
    """

    _float_fields = TrainingSummary._float_fields + ("sketchSeconds",)
    _json_fields = TrainingSummary._json_fields + ("sketchInfo",)
    _marker_keys = ("summary.rounds",)

    def __init__(self, history: dict, training_seconds: float = 0.0, worker_info=None):
        super().__init__(training_seconds, worker_info)
        ev = history.get("eval") or []
        self.metricName = history.get("metric")
        self.validationHistory = [float(x) for x in (ev[-1] if ev else [])]
        self.trainingHistory = [float(x) for x in history.get("train") or []]
        bi = history.get("best_iteration")
        self.bestIteration = int(bi) if bi is not None else None
        bs = history.get("best_score")
        self.bestScore = None if bs is None else float(bs)
        self.numRounds = int(history.get("n_rounds", 0))
        self.roundsRun = int(history.get("rounds_run", 0))
        self.checksSeconds = self.sketchSeconds = None
        self.sketchInfo = []
        # every recorded metric: {name: {"train": [...], "validation": [...]}}
        metrics = history.get("metrics") or ({self.metricName: {
            "train": self.trainingHistory, "eval": [self.validationHistory]}}
            if self.metricName else {})
        self.metricHistory = {
            str(k): {"train": [float(x) for x in v.get("train") or []],
                     "validation": [float(x) for x in ((v.get("eval") or [[]])[-1]
                                                       if v.get("eval") else [])]}
            for k, v in metrics.items()}

    @classmethod
    def _from_fit(cls, result, checks_seconds, sketch_seconds, sketch_info=()):
        """A fit's summary from its barrier stage's result (rank 0 reports the history) and
        the times of the jobs before it."""
        history = result.infos[0].get("history", {})
        for info in result.infos:
            info.pop("history", None)
        summary = cls(history, result.seconds, result.infos)
        summary.checksSeconds = checks_seconds
        summary.sketchSeconds = sketch_seconds
        summary.sketchInfo = list(sketch_info)
        return summary

    def _rows(self) -> list:
        """[(round, {metric: value}), ...] (1-based rounds) for progress lines."""
        m = self.metricName or "metric"
        rows = []
        for i in range(self.roundsRun):
            d = {}
            if i < len(self.trainingHistory):
                d[f"train-{m}"] = self.trainingHistory[i]
            if i < len(self.validationHistory):
                d[f"validation-{m}"] = self.validationHistory[i]
            rows.append((i + 1, d))
        return rows

    def _family_arrays(self) -> dict:
        return {"summary.validationHistory": np.asarray(self.validationHistory, np.float64),
                "summary.trainingHistory": np.asarray(self.trainingHistory, np.float64),
                "summary.rounds": np.asarray([self.bestIteration if self.bestIteration is not None
                                              else -1, self.numRounds, self.roundsRun],
                                             np.int64),
                "summary.metricName": np.asarray(self.metricName or ""),
                **self._metric_arrays()}

    def _metric_arrays(self) -> dict:
        """``metricHistory`` as arrays: the names (one string, newline-separated) and the
        training / validation values, one row per metric (NaN-padded to the rounds run)."""
        names = list(self.metricHistory)
        r = self.roundsRun

        def rows(key):
            out = np.full((len(names), r), np.nan)
            for i, n in enumerate(names):
                v = self.metricHistory[n][key][:r]
                out[i, :len(v)] = v
            return out

        return {"summary.metricNames": np.asarray("\n".join(names)),
                "summary.metricTrain": rows("train"), "summary.metricValidation": rows("validation")}

    @classmethod
    def _from_family_arrays(cls, arrays):
        bi, nr, rr = (int(x) for x in arrays["summary.rounds"])
        hist = [float(x) for x in arrays["summary.validationHistory"]]
        train = [float(x) for x in arrays.get("summary.trainingHistory", [])]
        metrics = None
        if "summary.metricNames" in arrays and str(arrays["summary.metricNames"]):
            tr = np.asarray(arrays["summary.metricTrain"]).reshape(-1, rr)
            va = np.asarray(arrays["summary.metricValidation"]).reshape(-1, rr)
            metrics = {n: {"train": tr[i][~np.isnan(tr[i])].tolist(),
                           "eval": [va[i][~np.isnan(va[i])].tolist()]}
                       for i, n in enumerate(str(arrays["summary.metricNames"]).split("\n"))}
        return cls({"metric": str(arrays["summary.metricName"]) or None, "eval": [hist],
                    "train": train, "best_iteration": None if bi < 0 else bi, "n_rounds": nr,
                    "rounds_run": rr, "best_score": None, "metrics": metrics})

    def __repr__(self):
        return (f"GBTTrainingSummary(metric={self.metricName}, rounds={self.numRounds}, "
                f"bestIteration={self.bestIteration}, bestScore={self.bestScore})")



def _weight(weight_col):
    return F.lit(1.0) if weight_col is None else F.col(weight_col).cast("double")


class _Summary:
    """What every evaluation summary holds."""

    def __init__(self, predictions, label_col, prediction_col, weight_col):
        self.predictions = predictions
        self.labelCol = label_col
        self.predictionCol = prediction_col
        self.weightCol = weight_col
        self._metrics = None
        self._metrics_job = None

    @property
    def metrics(self) -> dict:
        """XGBoost's metrics by name (``sparkxml.gbt.evaluation``): one Spark job, run on
        first access."""
        if self._metrics is None:
            self._metrics = self._metrics_job() if self._metrics_job is not None else {}
        return self._metrics


class GBTClassificationEvaluation(_Summary):
    """Metrics of a classifier on a dataset (Spark ML's ``ClassificationSummary`` API).

    Attributes
    ----------
    predictions : DataFrame
        The dataset transformed by the model (without ``predContribCol`` / ``leafCol``).
    labels : list of float
        The labels present in ``labelCol``, ascending; the ``...ByLabel`` lists follow it.
    accuracy, weightedPrecision, weightedRecall, weightedTruePositiveRate,
    weightedFalsePositiveRate, logLoss : float
    truePositiveRateByLabel, falsePositiveRateByLabel, precisionByLabel, recallByLabel :
        list of float
    areaUnderROC : float, binary only
        Exact (MLlib's with ``numBins`` 0): trapezoids over the distinct scores, from one
        ordered pass over them in a single partition (subsample data with billions of
        distinct scores first).
    roc, pr : DataFrame, binary only
        (FPR, TPR) and (recall, precision), one point per distinct score, as MLlib's.
    metrics : dict
        XGBoost's metrics by name (``evalMetrics``' names: logloss, error, auc, aucpr, ...;
        ``auc`` / ``aucpr`` from 65536 probability buckets, see
        ``sparkxml_kernels.gbt.metrics``).
    """

    def __init__(self, predictions, label_col, prediction_col, probability_col, weight_col,
                 num_classes):
        super().__init__(predictions, label_col, prediction_col, weight_col)
        self.probabilityCol = probability_col
        self.numClasses = int(num_classes)
        w = _weight(weight_col)
        y = F.col(label_col).cast("double")
        p = F.col(prediction_col).cast("double")
        prob = vector_to_array(F.col(probability_col))
        p_label = F.element_at(prob, (y + 1).cast("int"))
        # one job: the weighted confusion counts and log-loss sums per (label, prediction)
        rows = (predictions.groupBy(y.alias("y"), p.alias("p"))
                .agg(F.sum(w).alias("w"),
                     F.sum(-w * F.log(F.greatest(F.lit(_EPS), p_label))).alias("ll"))
                .collect())
        W = sum(float(r["w"]) for r in rows)
        self.logLoss = sum(float(r["ll"]) for r in rows) / W if W else float("nan")
        self._confusion(rows)
        self._binary_frame = None
        if self.numClasses == 2:
            self._binary_frame = self._roc_points(predictions, y, w, F.element_at(prob, 2))
            self.areaUnderROC = self._area_under_roc()

    # ------------------------------------------------------------------ multiclass
    def _confusion(self, rows):
        tp, fp, count = {}, {}, {}
        total = 0.0
        for r in rows:
            lab, pr, wt = float(r["y"]), float(r["p"]), float(r["w"])
            total += wt
            count[lab] = count.get(lab, 0.0) + wt
            if lab == pr:
                tp[lab] = tp.get(lab, 0.0) + wt
            else:
                fp[pr] = fp.get(pr, 0.0) + wt
        self.labels = sorted(count)
        self._total = total
        fpr, prec, rec = [], [], []
        for lab in self.labels:
            t, f, c = tp.get(lab, 0.0), fp.get(lab, 0.0), count[lab]
            rec.append(t / c if c else 0.0)
            fpr.append(f / (total - c) if total - c > 0 else 0.0)
            prec.append(t / (t + f) if t + f > 0 else 0.0)
        self.truePositiveRateByLabel = self.recallByLabel = rec
        self.falsePositiveRateByLabel = fpr
        self.precisionByLabel = prec
        self._share = [count[lab] / total for lab in self.labels] if total else []
        self.accuracy = sum(tp.values()) / total if total else float("nan")
        self.weightedRecall = self.weightedTruePositiveRate = self._weighted(rec)
        self.weightedFalsePositiveRate = self._weighted(fpr)
        self.weightedPrecision = self._weighted(prec)

    def _weighted(self, values):
        return float(sum(v * s for v, s in zip(values, self._share)))

    def fMeasureByLabel(self, beta: float = 1.0) -> list:
        b2 = beta * beta
        return [(1 + b2) * p * r / (b2 * p + r) if b2 * p + r > 0 else 0.0
                for p, r in zip(self.precisionByLabel, self.recallByLabel)]

    def weightedFMeasure(self, beta: float = 1.0) -> float:
        return self._weighted(self.fMeasureByLabel(beta))

    # ------------------------------------------------------------------ binary
    @staticmethod
    def _roc_points(predictions, y, w, score):
        """One row per distinct score, highest first, with cumulative weights of positives
        (tp) and negatives (fp) at scores >= it; and the totals."""
        g = (predictions.select(score.alias("score"), y.alias("y"), w.alias("w"))
             .groupBy("score")
             .agg(F.sum(F.when(F.col("y") == 1.0, F.col("w")).otherwise(0.0)).alias("pos"),
                  F.sum(F.when(F.col("y") == 1.0, 0.0).otherwise(F.col("w"))).alias("neg")))
        # cumulative sums over the distinct scores in one ordered pass (a single partition,
        # on purpose: the ROC curve is global); partitioned by a constant so that Spark does
        # not warn about it on every evaluate
        one = F.lit(0)
        win = Window.partitionBy(one).orderBy(F.col("score").desc()).rowsBetween(
            Window.unboundedPreceding, Window.currentRow)
        everything = Window.partitionBy(one).rowsBetween(Window.unboundedPreceding,
                                                         Window.unboundedFollowing)
        return g.select("score", F.sum("pos").over(win).alias("tp"),
                        F.sum("neg").over(win).alias("fp"),
                        F.sum("pos").over(everything).alias("P"),
                        F.sum("neg").over(everything).alias("N"))

    def _area_under_roc(self) -> float:
        pts = self._binary_frame
        order = Window.partitionBy(F.lit(0)).orderBy(F.col("score").desc())
        prev_tp = F.coalesce(F.lag("tp").over(order), F.lit(0.0))
        prev_fp = F.coalesce(F.lag("fp").over(order), F.lit(0.0))
        r = (pts.select(((F.col("fp") - prev_fp) * (F.col("tp") + prev_tp) / 2.0
                         / (F.col("P") * F.col("N"))).alias("a"))
             .agg(F.sum("a").alias("auc")).collect()[0])
        return float(r["auc"]) if r["auc"] is not None else float("nan")

    @property
    def roc(self):
        """DataFrame (FPR, TPR) from (0, 0) to (1, 1), as MLlib's ``roc``."""
        self._need_binary()
        spark = self.predictions.sparkSession
        pts = self._binary_frame.select("score", (F.col("fp") / F.col("N")).alias("FPR"),
                                        (F.col("tp") / F.col("P")).alias("TPR"))
        ends = spark.createDataFrame([(math.inf, 0.0, 0.0), (-math.inf, 1.0, 1.0)],
                                     "score double, FPR double, TPR double")
        return ends.unionByName(pts).orderBy(F.col("score").desc()).select("FPR", "TPR")

    @property
    def pr(self):
        """DataFrame (recall, precision), as MLlib's ``pr`` (first point at recall 0 with the
        precision of the highest score)."""
        self._need_binary()
        pts = self._binary_frame.select(
            "score", (F.col("tp") / F.col("P")).alias("recall"),
            (F.col("tp") / (F.col("tp") + F.col("fp"))).alias("precision"))
        first = pts.orderBy(F.col("score").desc()).limit(1).select(
            F.lit(math.inf).alias("score"), F.lit(0.0).alias("recall"), "precision")
        return first.unionByName(pts).orderBy(F.col("score").desc()).select("recall",
                                                                             "precision")

    def _need_binary(self):
        if self._binary_frame is None:
            raise AttributeError(f"roc and pr are defined for two classes; this model has "
                                 f"{self.numClasses}")


class GBTRegressionEvaluation(_Summary):
    """Metrics of a regressor on a dataset (Spark ML's ``RegressionSummary`` names).

    Attributes
    ----------
    predictions : DataFrame
    rootMeanSquaredError, meanSquaredError, meanAbsoluteError, r2, explainedVariance : float
        Weighted by ``weightCol`` when set; ``r2`` is 1 - SSE / SST (without weights
        MLlib's value; with weights MLlib rescales SST, see below).
    numInstances : int
    metrics : dict
        XGBoost's metrics by name (``evalMetrics``' names: rmse, mae, poisson-nloglik, ...).
    """

    def __init__(self, predictions, label_col, prediction_col, weight_col):
        super().__init__(predictions, label_col, prediction_col, weight_col)
        w = _weight(weight_col)
        y = F.col(label_col).cast("double")
        p = F.col(prediction_col).cast("double")
        r = predictions.agg(F.count(F.lit(1)).alias("n"), F.sum(w).alias("w"),
                            F.sum(w * (p - y) * (p - y)).alias("sse"),
                            F.sum(w * F.abs(p - y)).alias("sae"), F.sum(w * y).alias("sy"),
                            F.sum(w * y * y).alias("syy"), F.sum(w * p).alias("sp"),
                            F.sum(w * p * p).alias("spp")).collect()[0]
        n, W = int(r["n"]), float(r["w"] or 0.0)
        self.numInstances = n
        nan = float("nan")
        if W <= 0:
            self.meanSquaredError = self.rootMeanSquaredError = nan
            self.meanAbsoluteError = self.r2 = self.explainedVariance = nan
            return
        ybar = r["sy"] / W
        sst = r["syy"] - W * ybar * ybar
        self.meanSquaredError = float(r["sse"] / W)
        self.rootMeanSquaredError = math.sqrt(self.meanSquaredError)
        self.meanAbsoluteError = float(r["sae"] / W)
        # 1 - SSE / SST with weights; MLlib scales a weighted SST by (W - 1) / (W - W2 / W)
        # (its unbiased variance times W - 1), so with weightCol its r2 differs slightly
        self.r2 = float(1.0 - r["sse"] / sst) if sst > 0 else nan
        # MLlib: SSreg / weight sum, SSreg = sum w (p - ybar)^2
        self.explainedVariance = float((r["spp"] - 2 * ybar * r["sp"] + W * ybar * ybar) / W)
