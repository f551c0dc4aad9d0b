"""What decision trees and random forests share on the Spark side: params, the fit flow and
the model base (outputs, persistence, scikit-learn's ``tree_`` arrays).

A fit runs three Spark jobs, whatever the number of trees (two with one worker and at most
200,000 rows, whose training task summarises its rows as the sketch job would):

1. one SQL aggregate over every row (JVM only): row count, label range, weights, vector sizes,
   and infinite features (trees refuse inf; NaN and nulls are missing values, routed as
   scikit-learn routes them), so bad input fails first, naming the column
   and the value (plus a class count job for ``classWeight='balanced'``, and a distinct
   label job for criterion ``absolute_error``, whose node sums are per-label weights);
2. a sketch job over up to 200,000 sampled rows (all rows below that), keeping every distinct
   float32 value of a feature as long as there are at most ``maxBins``: such a feature gets a
   bin per value, and thresholds at the midpoints of values, i.e. exact (scikit-learn's) splits;
   the sample and its summaries depend on the rows only (``sketch_pass(canonical=True)``);
3. ONE barrier stage over ``numWorkers`` partitions (``sparkxml._core.barrier``): each task bins
   its rows (uint8, or uint16 above 255 bins), and the tasks grow the tree(s) in lockstep
   through direct authenticated sockets (``sparkxml_kernels.forest``); rank 0 returns the
   model arrays. Node sums do not depend on which task holds a row nor on the row order
   (``sparkxml_kernels.forest.exactsum``), so the model is the same, bit for bit, for any
   partitioning of the input and any ``numWorkers``.

Row identity is a content key computed in the JVM (``xxhash64`` of the features, label and
weight): forests draw bootstrap counts from it, so rows with equal content share their counts.
"""
from __future__ import annotations

import functools
import time

import numpy as np
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import DenseVector
from pyspark.sql import functions as F

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.base import SparkXMLEstimator, SparkXMLPredictorModel
from sparkxml._core.categorical import categorical_features
from sparkxml._core.histogram_engine import (
    canonical_sketch_columns,
    check_schema,
    data_checks,
    sketch_in_task,
    sketch_options,
    sketch_pass,
    task_sketch,
    training_columns,
    transform_with,
)
from sparkxml._core.histogram_tasks import (
    ROW_ID,
    make_load_fn,
    make_sketch_load_fn,
    spec_columns,
)
from sparkxml._core.native_export import NativeExportMixin
from sparkxml._core.params import HasVerbose, add_setters
from sparkxml._core.progress import FitProgress
from sparkxml._core.summary import TrainingSummary
from sparkxml._core.validation import MAX_DENSE_VALUES, inferred_classes
from sparkxml._core.workers import requested_workers, workers_for
from sparkxml.datasets import num_features
from sparkxml.forest.categorical import (
    category_bins,
    category_checks,
    category_counts,
    check_categorical_options,
)
from sparkxml.forest.median import (
    label_values,
    missing_feature_counts,
    raise_on_missing_features,
)
from sparkxml.forest.params import (
    CLASSIFIER_PARAMS,
    FOREST_PARAMS,
    TREE_PARAMS,
    class_weight_map,
    n_subset_features,
)
from sparkxml.forest.tasks import make_tree_predict_fn, make_tree_train_fn
from sparkxml_kernels import binning
from sparkxml_kernels.forest.bins import bin_values
from sparkxml_kernels.forest.criteria import (
    CLASSIFICATION_CRITERIA,
    REGRESSION_CRITERIA,
    criterion_id,
)
from sparkxml_kernels.forest.predictor import ARRAY_KEYS, ForestPredictor
from sparkxml_kernels.forest.pruning import cost_complexity_pruning_path
from sparkxml_kernels.forest.splitter import sklearn_seed

# classes a classifier may infer from its labels (as GBT's softmax), and the largest node
# histogram a fit may allocate (features x bins x sums, float64)
MAX_CLASSES = 10_000
MAX_NODE_HISTOGRAM_BYTES = 1 << 30

# rows the sketch job summarises (LightGBM bins from 200,000 rows): below this, bins are exact
# for every feature with at most maxBins distinct values
_TREE_SKETCH_ROWS = 200_000


def refuse_wide_rows(col, d) -> None:
    """Refuse, before any Spark job, a vector size ``d`` (from the column's metadata; None:
    unknown) above ``MAX_DENSE_VALUES``: trees bin every feature of a row, and the checks
    job reads each vector densely to find infinite values, so a 2**31 - 1 wide column would
    ask the JVM for 16 GB a row."""
    if d is not None and d > MAX_DENSE_VALUES:
        raise ValueError(f"featuresCol: column '{col}' holds vectors of size {d}: trees bin "
                         f"every feature of a row, and rows of more than {MAX_DENSE_VALUES} "
                         f"values are refused; re-index the features to those that occur "
                         f"(or hash them into fewer)")


def _tree_edges(sketch, max_bins, wide):
    """``make_sketch_load_fn``'s ``make_edges`` for trees: their edges, no GBT categories."""
    return binning.edges_from_sketch(sketch, max_bins, wide=wide), None


def _tree_bin_values(sketch, edges, n_categories):
    """The per-bin values the tree builders split at, as a task's state entry."""
    return {"vals": category_bins(edges, bin_values, sketch, n_categories)}


# ============================================================================ summary
class TreeTrainingSummary(TrainingSummary):
    """What a tree or forest fit reports (the common fields:
    ``sparkxml._core.summary.TrainingSummary``).

    Attributes
    ----------
    trainingSeconds : float
        Wall time of the barrier stage (driver view).
    checksSeconds, sketchSeconds : float
        Wall time of the checks job(s) and of the sketch job.
    numWorkers : int
    numTrees : int
    workerInfo : list of dict
        Per rank: rows, binned bytes, load timings, world size (forests: level timings).
    """

    _float_fields = TrainingSummary._float_fields + ("sketchSeconds",)
    _int_fields = TrainingSummary._int_fields + ("numTrees",)

    def __init__(self, training_seconds=0.0, worker_info=None, checks_seconds=None,
                 num_workers=None, sketch_seconds=None, num_trees=0):
        super().__init__(training_seconds, worker_info, checks_seconds, num_workers)
        self.sketchSeconds = None if sketch_seconds is None else float(sketch_seconds)
        self.numTrees = int(num_trees)

    def _rows(self) -> list:
        return [(i, {}) for i in range(1, self.numTrees + 1)]


# ============================================================================ estimator
class TreeEstimator(SparkXMLEstimator, HasVerbose):
    """The fit flow of every tree estimator (see the module docstring)."""

    _task = "regression"
    _forest = False
    _random_splits = False  # ExtraTrees: one random threshold per drawn feature

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(verbose=0)

    def _check_criterion(self):
        crit = self.getOrDefault(self.criterion)
        allowed = CLASSIFICATION_CRITERIA if self._task == "classification" \
            else REGRESSION_CRITERIA
        if crit not in allowed:
            raise ValueError(f"criterion '{crit}' does not apply to {self._task}; use one of "
                             f"{list(allowed)}")
        return crit

    def _extra_checks(self, spec, label, crit=None, cat_ids=()):
        """Aggregates riding along with the data checks: infinite features, label range (NaN
        and null features are missing values; absolute_error counts them, as it refuses
        them), and the categorical features' ids (``sparkxml.forest.categorical``)."""
        L = F.col(label).cast("double")
        extra = {"label_min": F.min(L), "label_sum": F.sum(L)}
        extra.update(category_checks(spec, cat_ids))
        if spec["kind"] == "vector":
            arr = vector_to_array(F.col(spec["col"]))
            bad = F.filter(arr, lambda x: F.abs(x) == float("inf"))
            extra["features_bad"] = F.first(F.when(F.size(bad) > 0, bad[0]), ignorenulls=True)
        else:
            for i, c in enumerate(spec["cols"]):
                x = F.col(c).cast("double")
                extra[f"features_bad_{i}"] = F.first(
                    F.when(F.abs(x) == float("inf"), x), ignorenulls=True)
        if crit == "absolute_error":
            extra.update(missing_feature_counts(spec))
        return extra

    def _raise_on_extra(self, spec, label, crit, extra):
        if spec["kind"] == "vector":
            if extra["features_bad"] is not None:
                raise ValueError(f"featuresCol: column '{spec['col']}' holds the value "
                                 f"{float(extra['features_bad'])!r}; trees need finite or "
                                 f"missing (NaN) features, not inf")
        else:
            for i, c in enumerate(spec["cols"]):
                v = extra[f"features_bad_{i}"]
                if v is not None:
                    raise ValueError(f"featuresCols: column '{c}' holds the value "
                                     f"{float(v)!r}; trees need finite or missing (null, NaN) "
                                     f"features, not inf")
        if crit == "absolute_error":
            raise_on_missing_features(spec, extra)
        if crit == "poisson":
            if extra["label_min"] < 0:
                raise ValueError(f"labelCol: column '{label}' holds the negative value "
                                 f"{extra['label_min']!r}; criterion 'poisson' needs y >= 0")
            if not extra["label_sum"] > 0:
                raise ValueError(f"labelCol: column '{label}' sums to "
                                 f"{extra['label_sum']!r}; criterion 'poisson' needs a "
                                 f"positive sum")

    def _balanced_subsample(self) -> bool:
        """classWeight 'balanced_subsample' (forests): each tree weighs classes from its own
        sample, in the barrier stage (``bootstrap.subsample_class_weights``)."""
        return self._task == "classification" and \
            self._opt(self.classWeight) == "balanced_subsample"

    def _class_weights(self, dataset, label, k):
        if self._task != "classification" or self._opt(self.classWeight) is None \
                or self._balanced_subsample():
            return None
        rows = dataset.groupBy(F.col(label).cast("long").alias("c")).count().collect()
        counts = np.zeros(k)
        for r in rows:
            counts[int(r["c"])] = r["count"]
        present = counts > 0
        given = class_weight_map(self.getClassWeight())
        if given is not None:  # a dict: the classes it names must occur
            absent = sorted(c for c in given if c >= k or not present[c])
            if absent:
                raise ValueError(f"classWeight: classes {absent} do not occur in labelCol "
                                 f"'{label}' (classes present: "
                                 f"{np.flatnonzero(present).tolist()})")
            w = np.ones(k)
            for c, v in given.items():
                w[c] = v
            return w.tolist()
        w = np.zeros(k)
        w[present] = counts.sum() / (present.sum() * counts[present])
        return w.tolist()

    def _check_sizes(self, stats, k, weight, max_bins, n_labels=0):
        """Refuse, before the sketch and the training, what would allocate without bound: a
        node's histogram is features x bins x sums (classes + 1, absolute_error's distinct
        labels + 1, or 5 for regression; up to three levels each when the sums are not
        integers, ``exactsum``)."""
        if stats["weight_train"] <= 0:
            raise ValueError(f"weightCol: column '{weight}' is 0 on every row: nothing to "
                             f"train on")
        d = stats["d"]
        if d < 1:
            raise ValueError(f"featuresCol: column '{self.getFeaturesCol()}' holds vectors of "
                             f"size 0: trees need at least one feature")
        feats = d if not self._forest else n_subset_features(
            self.getFeatureSubsetStrategy(), d, self._task == "classification", True)
        S = k + 1 if k else (n_labels + 1 if n_labels else 5)
        plain = (bool(n_labels) and weight is None) or (
            bool(k) and weight is None and self._opt(self.classWeight) is None)
        width = S if plain else 1 + 3 * (S - 1)
        slots = min(max_bins, stats["n_train"]) + 1
        nbytes = feats * slots * width * 8
        if nbytes > MAX_NODE_HISTOGRAM_BYTES:
            what = f"{k} classes" if k else (f"{n_labels} distinct labels" if n_labels
                                              else "the regression sums")
            raise ValueError(f"{what} x up to {slots} bins x {feats} features make "
                             f"{nbytes / 2**30:.1f} GiB per node histogram, above the limit of "
                             f"{MAX_NODE_HISTOGRAM_BYTES / 2**30:.0f} GiB: lower maxBins"
                             f"{', featureSubsetStrategy' if self._forest else ''} or the "
                             f"number of features, or re-index the labels")

    def _monotonic_cst(self, k, d):
        """monotonicConstraints checked against the data, as scikit-learn checks
        monotonic_cst: one per feature, and not for multiclass classification."""
        cst = self._opt(self.monotonicConstraints)
        if cst is None:
            return None
        if len(cst) != d:
            raise ValueError(f"monotonicConstraints: {len(cst)} constraints for {d} features "
                             f"(one per feature, scikit-learn's monotonic_cst)")
        if self._task == "classification" and k > 2:
            raise ValueError(f"monotonicConstraints: not supported with multiclass "
                             f"classification ({k} classes), as in scikit-learn")
        return [int(c) for c in cst]

    def _split_params(self, crit, k, d, n_labels=0):
        mtry = n_subset_features(self.getFeatureSubsetStrategy(), d,
                                 self._task == "classification", self._forest)
        return {"criterion": criterion_id(crit), "n_classes": k or n_labels,
                "max_depth": int(self.getMaxDepth()),
                "min_samples_split": int(self.getMinSamplesSplit()),
                "min_samples_leaf": int(self.getMinInstancesPerNode()),
                "min_weight_fraction": float(self.getMinWeightFractionPerNode()),
                "min_impurity_decrease": float(self.getMinInfoGain()),
                "max_features": mtry, "max_leaf_nodes": int(self.getMaxLeafNodes()),
                "random_splits": self._random_splits,
                "monotonic_cst": self._monotonic_cst(k, d)}

    def _engine_config(self) -> dict:  # forests add theirs
        return {"kind": "tree", "rand_state": sklearn_seed(int(self.getSeed()) & 0xFFFFFFFF)}

    def _fit_validated(self, dataset):
        spark = dataset.sparkSession
        spec = self._features_spec()
        label = self.getLabelCol()
        weight = self._opt(self.weightCol) or None
        check_schema(dataset, spec, label, weight, None)
        crit = self._check_criterion()
        if crit == "absolute_error" and self._opt(self.monotonicConstraints) is not None:
            raise ValueError("monotonicConstraints: not supported with criterion "
                             "'absolute_error' here (its bounds would come from medians)")
        if self._forest and self.getMaxLeafNodes() > 0:
            raise ValueError("maxLeafNodes: forests grow level-wise; best-first growth "
                             "(maxLeafNodes > 0) is for DecisionTreeClassifier/Regressor")
        engine = self._engine_config()
        n_workers = requested_workers(spark, self)
        max_bins = int(self.getMaxBins())
        cat_ids = categorical_features(dataset, spec, self._opt(self.categoricalCols), 1 << 62)
        check_categorical_options(spec, cat_ids, crit, self._opt(self.monotonicConstraints))
        if spec["kind"] == "vector":
            refuse_wide_rows(spec["col"], num_features(dataset, spec["col"]))
        with FitProgress(spark, self, self.getVerbose()) as progress:
            t0 = time.perf_counter()
            with progress.phase("checks"):
                stats = data_checks(dataset, spec, label, weight, None, self._task,
                                     extra=self._extra_checks(spec, label, crit, cat_ids))
                self._raise_on_extra(spec, label, crit, stats["extra"])
                d = stats["d"]
                n_categories = category_counts(dataset, spec, cat_ids, d, stats["extra"],
                                               max_bins)
                k = 0
                if self._task == "classification":
                    k = inferred_classes(label, stats["label_max"], stats["label_distinct"],
                                         MAX_CLASSES, explicit=False)
                yv = label_values(dataset, label) if crit == "absolute_error" else None
                n_labels = 0 if yv is None else int(yv.size)
                self._check_sizes(stats, k, weight, max_bins, n_labels)
                n_workers = workers_for(spark, stats, None, n_workers)
                class_weights = self._class_weights(dataset, label, k)
            checks_seconds = time.perf_counter() - t0
            spec32 = dict(spec, float32=True)
            # up to 256 as GBT counts it (255 bins, uint8); above, one bin per maxBins (uint16)
            wide = max_bins > 256
            n_real = binning.n_real_bins(max_bins, wide=wide)
            sketch_bins, size = min(max_bins, 256), max(binning.SKETCH_FACTOR * n_real, 256)
            in_task = sketch_in_task(stats, n_workers, _TREE_SKETCH_ROWS)
            edges, vals, sketch_seconds = None, None, 0.0
            if not in_task:
                t0 = time.perf_counter()
                with progress.phase("sketch"):
                    sketch, _ = sketch_pass(dataset, spec32, weight, None, stats, sketch_bins,
                                            self.getSeed(), sample_rows=_TREE_SKETCH_ROWS,
                                            size=size, canonical=True)
                edges = binning.edges_from_sketch(sketch, max_bins, wide=wide)
                vals = category_bins(edges, bin_values, sketch, n_categories)
                sketch_seconds = time.perf_counter() - t0
            cfg = dict(engine, split=self._split_params(crit, k, d, n_labels), n_classes=k,
                       label_values=None if yv is None else yv.tolist(),
                       n_categories=None if n_categories is None else n_categories.tolist(),
                       ccp_alpha=float(self.getCcpAlpha()), criterion=crit,
                       vals=None if vals is None else vals.tolist(),
                       edges=None if edges is None else [e.tolist() for e in edges],
                       n_features=d, class_weights=class_weights,
                       balanced_subsample=self._balanced_subsample())
            df = dataset.select(*training_columns(spec, label, weight, None))
            added = {ROW_ID: F.xxhash64(*[F.col(c) for c in df.columns])}
            if in_task:  # the one task summarises the rows as the sketch job would
                hashed = spec_columns(spec) + ([weight] if weight is not None else [])
                added.update(canonical_sketch_columns(hashed, self.getSeed()))
            # one projection (each withColumn is an analysis on the JVM, ~7 ms)
            df = df.withColumns(added)
            if in_task:
                load = make_sketch_load_fn(
                    spec32, label, weight, None, d,
                    sketch_options(sketch_bins, size, float("nan"), False, canonical=True),
                    functools.partial(_tree_edges, max_bins=max_bins, wide=wide),
                    extra_state=functools.partial(_tree_bin_values, n_categories=n_categories))
            else:
                load = make_load_fn(spec32, label, weight, None, edges, d)
            with progress.phase("train"):
                result = run_barrier_training(
                    df, n_workers, load, make_tree_train_fn(cfg, progress=progress.task_spec()),
                    # the trees' sums are exact and their draws keyed by row content, so
                    # one worker may read the input partitions in turn (no shuffle)
                    timeout_s=self.getTimeoutSeconds(), repartition=True,
                    coalesce_single=True)
            if in_task:
                _, sketch_seconds = task_sketch(result)
            arrays = dict(result.arrays)
            oob = arrays.pop("oob_score", None)
            predictor = ForestPredictor.from_arrays(arrays)
            summary = TreeTrainingSummary(result.seconds, result.infos, checks_seconds,
                                          n_workers, sketch_seconds, predictor.n_trees)
            if progress.verbose > 0 and not progress.live_lines:
                progress.log_rounds(summary._rows(), summary.numTrees, unit="tree")
        return self._model_class(predictor, summary, None if oob is None else float(oob))


# ============================================================================ model
class TreeModel(NativeExportMixin, SparkXMLPredictorModel):
    """Fitted trees: ``transform`` adds Spark ML's outputs; scikit-learn's arrays per tree.

    Save format (``modelKind`` "forest"): ``data/`` (parquet chunk rows,
    ``sparkxml_kernels.persist``) holds the
    ``sparkxml_kernels.forest.predictor`` arrays (every tree in scikit-learn's ``tree_``
    layout, concatenated, with ``tree_offsets``), plus ``oob_score`` (0-d, forests fitted with
    ``oobScore``) and the training summary (``summary.*``, :class:`TreeTrainingSummary`).
    ``sparkxml_kernels.load_model(path)`` serves it (its ``.predictor`` is a ``ForestPredictor``).
    """

    _model_kind = "forest"
    _required_arrays = ARRAY_KEYS
    _predictor_class = ForestPredictor
    _summary_class = TreeTrainingSummary
    _state_attrs = ("_oob",)

    def __init__(self, predictor: ForestPredictor | None = None, summary=None, oob_score=None):
        super().__init__(predictor, summary)
        self._oob = oob_score

    @property
    def totalNumNodes(self) -> int:
        return int(self._predictor.feature.size)

    @property
    def featureImportances(self) -> DenseVector:
        """scikit-learn's ``feature_importances_``: normalised weighted impurity decrease
        (averaged over trees for a forest), as a Vector."""
        return DenseVector(self._predictor.feature_importances())

    def costComplexityPruningPath(self, i: int = 0) -> dict:
        """scikit-learn's ``cost_complexity_pruning_path`` of tree ``i``: ``ccp_alphas`` and
        ``impurities`` (float64 arrays), the effective alphas of its successive pruned
        subtrees and their total leaf impurities (fit with ``ccpAlpha=0`` for the path of the
        whole grown tree; any alpha of it given as ``ccpAlpha`` gives that subtree)."""
        return cost_complexity_pruning_path(self.treeArrays(i))

    def permutationImportance(self, dataset, metric: str | None = None, nRepeats: int = 5,
                              seed: int = 0, weightCol: str | None = None,
                              maxRows: int = 1_000_000, mode: str = "exact",
                              blockRows: int = 4096) -> dict:
        """scikit-learn's ``permutation_importance`` of this model on ``dataset`` (its
        features columns and ``labelCol``): per feature, the drop of ``metric`` when the
        feature's column is shuffled, ``nRepeats`` times.

        Parameters
        ----------
        dataset : DataFrame with the model's features and ``labelCol``
        metric : str, optional
            "accuracy" (classifiers' default), "r2" (regressors' default),
            "neg_mean_squared_error" or "neg_mean_absolute_error" (scikit-learn's scorers).
        nRepeats : int, default 5
        seed : int, default 0
            scikit-learn's ``random_state``.
        weightCol : str, optional
            Row weights of the score (``sample_weight``).
        maxRows : int, default 1,000,000
            More rows than this are refused (they are scored on the driver; "exact" mode).
        mode : str, default "exact"
            "exact": scikit-learn's shuffles of whole columns, on the driver. "distributed":
            one Spark job, no row limit: rows go to blocks of about ``blockRows`` by a hash
            of (their content, seed), and each feature is permuted within each block
            (``numpy.random.default_rng([seed, block, feature, repeat])``, each repeat a
            fresh permutation of the original column); the scores are summed over the
            blocks, so the result is the same for any partitioning. It estimates the same
            importances (a permutation within blocks of random rows breaks a feature's link
            to the label as a whole-column one does) but not with scikit-learn's draws.
        blockRows : int, default 4096
            Rows per block in "distributed" mode (>= 2).

        Returns
        -------
        dict: ``importances`` float64 (d, nRepeats), ``importances_mean``,
        ``importances_std`` (d,), ``baseline_score``.

        Differences from scikit-learn: the rows are collected to the driver in the
        DataFrame's order and scored there with this model's predictions; on the same rows
        in the same order the numbers are scikit-learn's for the same predictions
        (``sparkxml_kernels.forest.importance``).
        """
        from sparkxml.forest.outputs import permutation_importance

        return permutation_importance(self, dataset, metric, nRepeats, seed, weightCol,
                                      maxRows, mode, blockRows)

    def treeArrays(self, i: int = 0) -> dict:
        """Tree ``i`` in scikit-learn's ``tree_`` layout: ``children_left``,
        ``children_right``, ``feature``, ``threshold``, ``impurity``, ``n_node_samples``,
        ``weighted_n_node_samples``, ``value`` (N, 1, K), ``missing_go_to_left`` (uint8: where
        a NaN goes at each split), node ids in depth-first preorder."""
        return self._predictor.tree_arrays(int(i)).as_dict()

    @property
    def trainingInfo(self) -> dict:
        """Timings and per-worker figures of the fit, from its summary (empty for a model
        without one)."""
        s = self._summary
        if s is None:
            return {}
        return {"checksSeconds": s.checksSeconds, "sketchSeconds": s.sketchSeconds,
                "trainingSeconds": s.trainingSeconds, "workerInfo": s.workerInfo,
                "numWorkers": s.numWorkers}

    def _predictor_arrays(self) -> dict:
        arrays = dict(self._predictor.to_arrays())
        if self._oob is not None:
            arrays["oob_score"] = np.asarray(self._oob, np.float64)
        return arrays

    def _restore(self, arrays: dict) -> None:
        oob = arrays.get("oob_score")
        self._oob = None if oob is None else float(oob)

    def _outputs(self):
        outs = [(self.getPredictionCol(), "pred")]
        if self._predictor.n_classes:
            outs = [(self.getRawPredictionCol(), "raw"), (self.getProbabilityCol(), "prob")] \
                + outs
        if self.isDefined(self.leafCol) and self.getOrDefault(self.leafCol):
            outs.append((self.getLeafCol(), "leaf"))
        return outs

    def _transform_validated(self, dataset):
        if self._predictor is None:
            raise RuntimeError("this model has no trees (was it constructed directly?)")
        handle = self._task_model(dataset)  # not the trees themselves: see sparkxml._core.serving
        d = self.numFeatures
        return transform_with(
            dataset, self._features_spec(), self._outputs(),
            lambda spec, kinds, names, drop: make_tree_predict_fn(
                handle, spec, d, kinds, names, drop, self._output_quantiles()))

    def _output_quantiles(self):
        """The quantiles of a "quant" output (quantile forests), else None."""
        return None


class ClassificationModelMixin:
    @property
    def numClasses(self) -> int:
        return int(self._predictor.n_classes)


class ForestModelMixin:
    def oobDecisionFunction(self, dataset, outputCol: str = "oobDecisionFunction"):
        """scikit-learn's ``oob_decision_function_`` (classifiers: each training row's mean
        class fractions over the trees it is out of bag for) or ``oob_prediction_``
        (regressors: the mean of those trees' leaf means), as a vector column
        ``outputCol`` added to ``dataset``'s training columns (features, label, weight).

        ``dataset`` must hold the training rows as the fit read them (the same values):
        a row's bootstrap counts are drawn again from its content, as the fit drew them, so
        this is a transform-like job. A row in every tree's sample gets NaN (scikit-learn's
        0/0 too). Differences: a tree whose sample was empty (tiny data) took every row at
        fit time; here it is counted as the draws give it.
        """
        from sparkxml.forest.outputs import oob_decision_function

        return oob_decision_function(self, dataset, outputCol)

    @property
    def getNumTrees(self) -> int:
        """Number of trees (a property, as pyspark's forest models)."""
        return int(self._predictor.n_trees)

    @property
    def outOfBagScore(self) -> float:
        """scikit-learn's ``oob_score_``: accuracy (classifier) or R² (regressor) of each
        training row predicted by the trees it is out of bag for."""
        if self._oob is None:
            raise RuntimeError("no out-of-bag score: fit with oobScore=True (and bootstrap "
                               "or subsamplingRate < 1)")
        return self._oob


def add_tree_setters(estimator, model, classifier: bool, forest: bool):
    names = TREE_PARAMS + (CLASSIFIER_PARAMS if classifier else ()) + \
        (FOREST_PARAMS if forest else ())
    add_setters(estimator, names)
    outs = ("featuresCol", "featuresCols", "predictionCol", "leafCol") + \
        (("rawPredictionCol", "probabilityCol") if classifier else ())
    add_setters(model, outs)
