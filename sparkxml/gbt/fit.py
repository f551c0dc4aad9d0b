"""The fit every estimator on the GBT engine shares (GBTRegressor, GBTClassifier, LambdaMART):
the one-aggregate data checks, the bin-edge sketch, the barrier training stage and the model's
summary, with progress and job labels through ``sparkxml._core.progress``.

A one-worker fit trains in a plain task that reads every input partition (no shuffle); below
the sketch's sample size (``histogram_engine.sketch_in_task``) that task also computes the bin
edges, so the fit is two Spark jobs: the checks and the training."""
from __future__ import annotations

import functools
import time

from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.base import SparkXMLEstimator
from sparkxml._core.categorical import categorical_features

# shared with LambdaMART, trees and forests; still importable from here
from sparkxml._core.histogram_engine import (
    check_schema,
    data_checks,
    finite_col,
    sketch_in_task,
    sketch_options,
    sketch_pass,
    task_sketch,
    training_columns,
)
from sparkxml._core.histogram_tasks import ROW_ID, make_load_fn, make_sketch_load_fn
from sparkxml._core.params import (
    HasVerbose,
)
from sparkxml._core.progress import FitProgress
from sparkxml._core.validation import check_dense_width
from sparkxml._core.workers import needs_repartition, requested_workers, workers_for
from sparkxml.gbt import features as _gbt_features
from sparkxml.gbt.models import feature_names
from sparkxml.gbt.params import (
    HasInitModel,
)
from sparkxml.gbt.summary import (
    GBTTrainingSummary,
)
from sparkxml.gbt.tasks import address_hook, make_train_fn
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.gbt.splitting import check_monotone

_REGRESSION_METRICS = ("rmse",)


class GBTEstimator(SparkXMLEstimator, HasVerbose, HasInitModel):
    _task = "regression"
    _fault_injection = None  # test hook: dict(rank, after_round, kind, marker, seconds)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(verbose=0)

    def _booster_params(self, max_bins: int) -> dict:
        """The tree/boosting params every GBT-engine estimator passes to ``booster.train``."""
        return {
            "maxIter": self.getMaxIter(), "stepSize": self.getStepSize(),
            "maxDepth": self.getMaxDepth(), "maxLeaves": self.getMaxLeaves(),
            "growPolicy": self.getGrowPolicy(), "regLambda": self.getRegLambda(),
            "regAlpha": self.getRegAlpha(), "minSplitLoss": self.getMinSplitLoss(),
            "minChildWeight": self.getMinChildWeight(),
            "subsamplingRate": self.getSubsamplingRate(),
            "colsampleByTree": self.getColsampleByTree(), "seed": int(self.getSeed()),
            "maxBins": max_bins, "earlyStoppingRounds": self.getEarlyStoppingRounds(),
            "monotoneConstraints": self._opt(self.monotoneConstraints) or None,
            "scalePosWeight": (float(self.getScalePosWeight())
                               if self.hasParam("scalePosWeight") else 1.0),
            "maxCatToOnehot": self.getMaxCatToOnehot(), "catSmooth": self.getCatSmooth(),
            "catL2": self.getCatL2(), "maxCatThreshold": self.getMaxCatThreshold(),
            # None: the task's spark.task.cpus (sparkxml._core.workers.task_threads)
            "nthread": self._opt(self.nthread),
            # DART (sparkxml.gbt.booster_params), where the estimator has it
            **(self._booster_type_options() if self.hasParam("boosterType") else {}),
            # split finding (sparkxml_kernels.gbt.tree_methods)
            "treeMethod": self._tree_method(),
            # quantised gradients (tree_method_params)
            **self._quantized_grad_options(),
        }

    def _tree_method(self) -> str:
        return self.getTreeMethod() if self.hasParam("treeMethod") else "hist"

    def _fit_validated(self, dataset):
        if self.hasParam("processType") and self.getProcessType() == "update":
            self._check_policy()
            from sparkxml.gbt.update_fit import fit_update
            return fit_update(self, dataset)  # an updater on initModel, no new trees
        spark = dataset.sparkSession
        spec = self._features_spec()
        label = self.getLabelCol()
        weight = self._opt(self.weightCol) or None
        valid = self._opt(self.validationIndicatorCol) or None
        self._check_schema(dataset, spec, label, weight, valid)
        spec = _gbt_features.with_known_width(dataset, spec)
        if self.getEarlyStoppingRounds() > 0 and valid is None:
            raise ValueError("earlyStoppingRounds > 0 needs validationIndicatorCol")
        self._check_policy()
        n_workers = requested_workers(spark, self)
        max_bins = self.getMaxBins()
        with FitProgress(spark, self, self.getVerbose()) as progress:
            t0 = time.perf_counter()
            with progress.phase("checks"):
                stats = data_checks(dataset, spec, label, weight, valid, self._task,
                                     dict(self._margin_checks(dataset),
                                          **self._label_checks(label)))
            self._check_labels(label, stats["extra"])
            d = stats["d"]
            spec = _gbt_features.with_sparse(spec, d)
            objective, n_classes, metric = self._objective(label, stats["label_max"],
                                                           stats["label_distinct"])
            n_workers = workers_for(spark, stats, valid, n_workers)
            engine = self._engine_options(dataset, spec, stats, objective, n_classes)
            checks_seconds = time.perf_counter() - t0
            in_task = sketch_in_task(stats, n_workers)
            edges, infos, sketch_seconds = (None, [], 0.0) if in_task else \
                self._sketch_phase(progress, dataset, spec, weight, valid, stats, engine)
            params = dict(self._booster_params(max_bins), objective=objective,
                          numClasses=n_classes, evalMetric=metric,
                          categoricalFeatures=engine["cat_ids"] or None,
                          **engine["node_features"], **self._objective_options())
            params, custom = self._with_custom(params)
            cols = training_columns(spec, label, weight, valid, engine["cols"])
            df = dataset.select(*cols).withColumn(ROW_ID, F.monotonically_increasing_id())
            fault = dict(self._fault_injection) if self._fault_injection else None
            load_options = dict(engine["load"], nthread=params["nthread"])
            load = (self._sketch_load_fn(spec, label, weight, valid, d, engine, load_options)
                    if in_task else
                    make_load_fn(spec, label, weight, valid, edges, d, options=load_options))
            with progress.phase("train"):
                result = run_barrier_training(
                    df, n_workers, load,
                    make_train_fn(edges, params, fault, progress=progress.task_spec(),
                                  custom=custom),
                    timeout_s=self.getTimeoutSeconds(),
                    # the sketch ran on the training rows only: with a validation column its
                    # partitions need not be the input's (a filter on a literal prunes a
                    # union branch)
                    repartition=(in_task or valid is not None
                                 or needs_repartition(infos, n_workers)),
                    on_addresses=address_hook(fault), coalesce_single=True)
            if in_task:
                infos, sketch_seconds = task_sketch(result)
            summary = GBTTrainingSummary._from_fit(result, checks_seconds, sketch_seconds,
                                                   infos)
            return self._model_from(result, engine, summary, progress)

    # ------------------------------------------------------------------ shared by the engine
    def _sketch_phase(self, progress, frame, spec, weight, valid, stats, engine):
        """The sketch job as the fit's "sketch" phase: (bin edges, per-partition infos,
        seconds)."""
        t0 = time.perf_counter()
        method = self._tree_method()
        sketch_bins, size, n_bins = _gbt_features.method_sketch_args(method, self.getMaxBins())
        # exact needs every distinct value: the sketch reads every training row
        sample = {"sample_rows": stats["n_train"] + 1} if method == "exact" else {}
        with progress.phase("sketch"):
            sketch, infos = sketch_pass(frame, spec, weight, valid, stats, sketch_bins,
                                         self.getSeed(), size=size,
                                         missing=engine["load"]["missing"], **sample)
        edges, cats = _gbt_features.method_edges(sketch, n_bins, engine["cat_ids"],
                                                 engine["names"], method)
        engine["load"]["categories"] = cats
        return edges, infos, time.perf_counter() - t0

    def _sketch_load_fn(self, spec, label, weight, valid, d, engine, load_options,
                        by_partition=True, **ids):
        """The loader of a fit whose one task computes its bin edges (``sketch_in_task``):
        the summaries ``_sketch_phase``'s job would make, then the same edges."""
        method = self._tree_method()
        sketch_bins, size, n_bins = _gbt_features.method_sketch_args(method, self.getMaxBins())
        make_edges = functools.partial(_gbt_features.method_edges, max_bins=n_bins,
                                       cat_ids=engine["cat_ids"],
                                       feature_names=engine["names"], method=method)
        return make_sketch_load_fn(
            spec, label, weight, valid, d,
            sketch_options(sketch_bins, size, engine["load"]["missing"], by_partition),
            make_edges, options=load_options, **ids)

    def _margin_checks(self, dataset) -> dict:
        """Aggregates riding along the data-check job for ``baseMarginCol``: nulls and
        non-finite values of a double column, nulls and sizes of an array/vector one."""
        name = self._opt(self.baseMarginCol)
        if not name:
            return {}
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        if name not in fields:
            raise ValueError(f"baseMarginCol: column '{name}' is not in the DataFrame "
                             f"(columns: {list(fields)})")
        t = fields[name]
        c = F.col(name)
        if isinstance(t, T.NumericType):
            m = c.cast("double")
            return {"margin_null": F.sum(c.isNull().cast("long")),
                    "margin_bad": F.first(F.when(~finite_col(m), m), ignorenulls=True)}
        if isinstance(t, (VectorUDT, T.ArrayType)):
            arr = vector_to_array(c) if isinstance(t, VectorUDT) else c
            return {"margin_null": F.sum(c.isNull().cast("long")),
                    "margin_size_min": F.min(F.size(arr)), "margin_size_max": F.max(F.size(arr))}
        raise TypeError(f"baseMarginCol: column '{name}' must be numeric, an array or a "
                        f"vector, got {t.simpleString()}")

    def _margin_columns(self, dataset, stats, k) -> list:
        """The ``baseMarginCol`` column for the training frame (double, or array<double> of
        ``k`` values), checked with ``_margin_checks``' results; [] without one."""
        name = self._opt(self.baseMarginCol)
        if not name:
            return []
        r = stats["extra"]
        if r.get("margin_null"):
            raise ValueError(f"baseMarginCol: column '{name}' has {r['margin_null']} null "
                             f"value(s)")
        if r.get("margin_bad") is not None:
            raise ValueError(f"baseMarginCol: column '{name}' holds the non-finite value "
                             f"{float(r['margin_bad'])!r}")
        sizes = {r.get("margin_size_min"), r.get("margin_size_max")} - {None}
        if (sizes and sizes != {k}) or (not sizes and k != 1):
            raise ValueError(f"baseMarginCol: column '{name}' must hold {k} value(s) per "
                             f"row (one per output), found sizes {sorted(sizes) or [1]}")
        t = dataset.schema[name].dataType
        m = F.col(name)
        return [(vector_to_array(m) if isinstance(t, VectorUDT)
                 else m.cast("double") if k == 1 else m.cast("array<double>")).alias(name)]

    def _engine_options(self, dataset, spec, stats, objective, n_classes) -> dict:
        """Checks and task options of ``missing``, ``baseMarginCol``, ``initModel`` and
        ``monotoneConstraints``, after the data-check job: ``{"load": loader options,
        "cols": extra columns for the training frame, "init": predictor or None,
        "names": feature names or None}``."""
        d = stats["d"]
        if spec["kind"] == "vector":  # a node's histograms hold every feature's slots
            slots = self.getMaxBins() + 1
            check_dense_width(spec["col"], d, slots, f"maxBins + 1 = {slots} histogram slots")
        k = 1 if objective not in ("softmax",) else int(n_classes)
        name = self._opt(self.baseMarginCol)
        cols = self._margin_columns(dataset, stats, k)
        try:
            check_monotone(self._opt(self.monotoneConstraints), d)
        except ValueError as e:
            raise ValueError(f"monotoneConstraints: {e}") from None
        init = self._init_predictor(d, objective, k)
        load = {"missing": float(self.getMissing()), "margin_col": name or None,
                "n_outputs": k, "init": None if init is None else init.to_arrays()}
        cat_ids = categorical_features(dataset, spec,
                                                     self._opt(self.categoricalCols), d)
        if cat_ids and self._opt(self.monotoneConstraints):
            mono = list(self.getMonotoneConstraints())
            bad = [f for f in cat_ids if f < len(mono) and mono[f]]
            if bad:
                raise ValueError(f"monotoneConstraints: categorical feature {bad[0]} cannot "
                                 f"have a monotone constraint")
        names = feature_names(dataset, spec, d)
        if self.hasParam("treeMethod"):  # the vector's nominal attributes count too
            self._check_tree_method(cat_ids)
        return {"load": load, "cols": cols, "init": init, "cat_ids": cat_ids, "names": names,
                "node_features": self._node_feature_params(names, d)}

    def _init_predictor(self, d, objective, k):
        """The model ``initModel`` names (a fitted model or a saved path), checked against
        this fit: same features, objective and outputs."""
        pred = self._init_model_predictor(TreeEnsemblePredictor,
                                          "{path} is not a model of the GBT engine",
                                          "a {kind} is not a model of the GBT engine")
        if pred is None:
            return None
        # the model records the objective's plain name ("quantile", not "quantile[alpha=..]")
        objective = objective.partition("[")[0]
        if (pred.n_features, pred.objective, pred.n_outputs) != (d, objective, k):
            raise ValueError(f"initModel: the model has {pred.n_features} features, objective "
                             f"{pred.objective!r} and {pred.n_outputs} output(s); this fit has "
                             f"{d}, {objective!r} and {k}")
        return pred

    def _model_from(self, result, engine, summary, progress):
        """The fitted model: rank 0's trees (appended to ``initModel``'s), with ``missing``
        and the feature names; logs the round history when no line came back live."""
        predictor = TreeEnsemblePredictor.from_arrays(result.arrays)
        if engine["init"] is not None:
            predictor = engine["init"].concat(predictor)
        predictor = predictor.with_options(missing=self.getMissing(),
                                           feature_names=engine["names"])
        if progress.verbose > 0 and not progress.live_lines:
            progress.log_rounds(summary._rows(), self.getMaxIter())
        return self._model_class(predictor, summary)

    # ------------------------------------------------------------------ checks
    def _check_schema(self, dataset, spec, label, weight, valid):
        check_schema(dataset, spec, label, weight, valid)

    def _check_policy(self):
        if self.hasParam("boosterType"):
            self._check_booster_type()
        if self.hasParam("treeMethod"):
            self._check_tree_method(self._opt(self.categoricalCols)
                                    if self.hasParam("categoricalCols") else None)
        if self.hasParam("useQuantizedGrad"):
            self._check_quantized_grad(self._opt(self.monotoneConstraints))
        if self.getGrowPolicy() == "depthwise" and self.getMaxDepth() < 1:
            raise ValueError("maxDepth must be >= 1 with growPolicy 'depthwise'")
        if self.getGrowPolicy() == "lossguide":
            if self.getMaxLeaves() == 1:
                raise ValueError("maxLeaves must be 0 (no limit) or >= 2")
            if self.getMaxDepth() == 0 and self.getMaxLeaves() == 0:
                raise ValueError("growPolicy 'lossguide' needs maxDepth > 0 or maxLeaves > 0")

    def _label_checks(self, label) -> dict:
        """Aggregates on the label the objective adds to the data-check job."""
        return {}

    def _check_labels(self, label, extra) -> None:
        """Errors from ``_label_checks``' results, before any training."""

    def _with_custom(self, params: dict):
        """(params, custom functions for the tasks): none here (``custom_params``)."""
        return params, None

    def _objective_options(self) -> dict:
        """Booster params the objective adds (maxDeltaStep, baseScore)."""
        return {}

    def _objective(self, label, label_max, distinct=None):
        metric = self._opt(self.evalMetric)
        if metric is not None and metric not in _REGRESSION_METRICS:
            raise ValueError(f"evalMetric '{metric}' does not apply to regression; use one of "
                             f"{list(_REGRESSION_METRICS)}")
        return "squared_error", 2, metric
