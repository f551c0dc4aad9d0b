"""Linear SVMs on Spark by dual coordinate descent or primal Newton: ``LinearSVC`` ->
``LinearSVCModel``.

The objective is liblinear's (no separate intercept)::

    min_w  0.5 |w|^2 + C sum_i weight_i loss(y_i w.x_i),   y_i = +1 for label 1, -1 for 0

with loss "hinge" (liblinear ``-s 3``) or "squared_hinge" (``-s 1``). ``fitIntercept`` appends
a constant feature 1.0 whose weight is the intercept and is regularised like the others
(liblinear's ``-B 1``; Spark MLlib leaves its intercept unregularised). MLlib's ``regParam``
corresponds to ``C = 1 / (regParam * sum of weights)`` (with its ``standardization=False``).
More than two classes: one-vs-rest (K binary problems in the same rounds) or Crammer-Singer.
``standardization`` (default True, as MLlib) solves it on features divided by their standard
deviation and returns coefficients in the original scale. ``solver`` "auto" trains problems of
at most 512 weights by primal Newton (``sparkxml_kernels.linear.newton``), wider ones by dual
coordinate descent (CoCoA+).

A fit runs at most two Spark jobs:

1. with the default ``numBlocks`` only: ``count()``, the rows that set the blocks;
2. ONE barrier stage (``sparkxml._core.barrier``): every task turns its rows into CSR and checks
   its labels, weights and vectors, the tasks agree on the feature count, the classes and any
   error (the first offending value is named: null, negative, non-integer or non-finite
   labels, null, negative or non-finite weights, null vectors, non-finite values, mixed
   vector sizes; reported as one error, without a Spark retry), then train by CoCoA+
   (``sparkxml_kernels.linear.solver``) over the socket collective; rank 0 returns the model.

Determinism: every row gets a content key, ``xxhash64`` of (features, label, weight) computed
in the JVM, and a block ``pmod(key, numBlocks)``; a task holds whole blocks, ordered by key.
The model is a function of (data, seed, numBlocks, params): bit-identical for any numWorkers and
any partitioning of the input. Exact duplicate rows share a key (their order among themselves
cannot matter); the same vector stored dense in one row and sparse in another hashes
differently.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from pyspark import keyword_only
from pyspark.ml.linalg import DenseMatrix, DenseVector, Vectors, VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.base import SparkXMLEstimator, SparkXMLPredictorModel
from sparkxml._core.constraints import finite, finite_positive, ge, one_of
from sparkxml._core.native_export import NativeExportMixin
from sparkxml._core.params import (
    HasFeaturesCol,
    HasFitIntercept,
    HasLabelCol,
    HasMaxIter,
    HasNumWorkers,
    HasPredictionCol,
    HasRawPredictionCol,
    HasSeed,
    HasStandardization,
    HasTimeoutSeconds,
    HasTol,
    HasVerbose,
    HasWeightCol,
    add_setters,
)
from sparkxml._core.partitioning import partition_keys
from sparkxml._core.progress import FitProgress
from sparkxml._core.summary import TrainingSummary
from sparkxml._core.validation import (
    aggregate_once,
    check_output_columns,
    check_vector_column,
)
from sparkxml._core.workers import check_slots
from sparkxml.linear.params import (
    HasC,
    HasLoss,
    HasMarginThreshold,
    HasMultiClass,
    HasNumBlocks,
    HasSchedule,
    HasSolver,
)
from sparkxml.linear.tasks import (
    B_COL,
    F_COL,
    K_COL,
    W_COL,
    Y_COL,
    make_load_fn,
    make_predict_fn,
    make_train_fn,
)
from sparkxml.session import default_parallelism
from sparkxml_kernels.linear.predictor import LinearSVCPredictor

__all__ = ["ConvergenceWarning", "LinearSVC", "LinearSVCModel", "LinearSVCTrainingSummary"]

# numBlocks = 0: one block below MIN_ROWS_TWO_BLOCKS rows, else max(2, ceil(rows / 1M)).
# A block is CoCoA+'s unit of parallelism (numWorkers <= numBlocks), and blocks cost work:
# CoCoA+ charges each block's change of w at sigma' = numBlocks, so rounds and total passes
# grow with blocks (a9a, 2 / 4 / 8 blocks: 4 / 5 / 9 rounds for hinge; a generated 200k x 100k
# problem, squared hinge: 70 passes in one block, 124 / 322 / 648 passes over 2 / 4 / 8
# blocks; README). So data of a moderate size gets two blocks (two workers really train,
# about as fast as one block), and more only where a block holds a million rows. The count
# never depends on numWorkers: the model stays the same for any numWorkers and partitioning.
MIN_ROWS_TWO_BLOCKS = 16_384
ROWS_PER_BLOCK = 1_000_000


def default_num_blocks(n_rows: int) -> int:
    """Blocks used when numBlocks = 0: 1 below 16384 rows, else max(2, ceil(rows / 1e6))."""
    if n_rows < MIN_ROWS_TWO_BLOCKS:
        return 1
    return int(max(2, math.ceil(n_rows / ROWS_PER_BLOCK)))


class _LinearSVCParams(HasFeaturesCol, HasLabelCol, HasWeightCol, HasPredictionCol,
                       HasRawPredictionCol, HasMaxIter, HasTol, HasFitIntercept,
                       HasMarginThreshold, HasSeed, HasNumWorkers, HasTimeoutSeconds, HasC,
                       HasLoss, HasMultiClass, HasSchedule, HasNumBlocks, HasSolver,
                       HasStandardization):
    # LinearSVC's own meanings and ranges of these names (a probability threshold, say,
    # would lie in [0, 1])
    _constraints = {
        "C": finite_positive(),
        "loss": one_of("hinge", "squared_hinge"),
        "multiClass": one_of("ovr", "crammer_singer"),
        "schedule": one_of("shark", "permutation"),
        "solver": one_of("auto", "newton", "dcd"),
        "numBlocks": ge(0),
        "threshold": finite(),
    }

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", predictionCol="prediction",
                         rawPredictionCol="rawPrediction", maxIter=100, tol=1e-3,
                         fitIntercept=True, threshold=0.0, seed=0, timeoutSeconds=600.0,
                         C=1.0, loss="hinge", multiClass="ovr", schedule="shark", numBlocks=0,
                         solver="auto", standardization=True)


_PARAMS = ("featuresCol", "labelCol", "weightCol", "predictionCol", "rawPredictionCol",
           "maxIter", "tol", "fitIntercept", "threshold", "seed", "numWorkers",
           "timeoutSeconds", "C", "loss", "multiClass", "schedule", "numBlocks", "solver",
           "standardization", "verbose")


class LinearSVCTrainingSummary(TrainingSummary):
    """What a fit reports (the common fields: ``sparkxml._core.summary.TrainingSummary``).

    Attributes
    ----------
    objectiveHistory : list of float
        Primal objective before each round (summed over the OVR problems).
    primalHistory, dualHistory, gapHistory : list of list of float
        Per round, one value per problem (1 for binary and Crammer-Singer, K for OVR).
    totalIterations : int
        CoCoA+ rounds run.
    converged : bool
        Every problem reached gap <= tol * primal.
    numFreeSV, numBoundedSV : list of int
        Support vectors per problem: 0 < alpha < C, and alpha = C (squared hinge has no bound).
    trainingSeconds : float
        Wall time of the barrier stage; ``checksSeconds`` of the row count before it (0 when
        ``numBlocks`` is set: no job before training).
    numWorkers : int
    workerInfo : list of dict
        Per rank: rows, blocks, CSR bytes, peak RSS, rounds, local passes, timings.
    """

    def __init__(self, arrays: dict, training_seconds: float = 0.0, worker_info=None,
                 checks_seconds: float | None = None):
        super().__init__(training_seconds, worker_info, checks_seconds)
        self.primalHistory = np.asarray(arrays["summary.primal"]).tolist()
        self.dualHistory = np.asarray(arrays["summary.dual"]).tolist()
        self.gapHistory = np.asarray(arrays["summary.gap"]).tolist()
        self.objectiveHistory = [float(sum(r)) for r in self.primalHistory]
        sv = np.asarray(arrays["summary.sv"])
        self.numFreeSV, self.numBoundedSV = sv[0].tolist(), sv[1].tolist()
        rounds = np.asarray(arrays["summary.rounds"])
        self.totalIterations, self.converged = int(rounds[0]), bool(rounds[1])

    _marker_keys = ("summary.primal", "summary.dual", "summary.gap", "summary.sv",
                    "summary.rounds")

    def _family_arrays(self) -> dict:
        return {"summary.primal": np.asarray(self.primalHistory, np.float64),
                "summary.dual": np.asarray(self.dualHistory, np.float64),
                "summary.gap": np.asarray(self.gapHistory, np.float64),
                "summary.sv": np.asarray([self.numFreeSV, self.numBoundedSV], np.int64),
                "summary.rounds": np.asarray([self.totalIterations, int(self.converged)],
                                             np.int64)}

    @classmethod
    def _from_family_arrays(cls, arrays: dict):
        return cls(arrays)

    def _rows(self) -> list:
        """Round r (1-based): the primal objective and the duality gap after it (summed over
        the problems)."""
        return [(r, {"primal": self.objectiveHistory[r], "gap": float(sum(self.gapHistory[r]))})
                for r in range(1, min(self.totalIterations, len(self.gapHistory) - 1) + 1)]

    def __repr__(self):
        return (f"LinearSVCTrainingSummary(rounds={self.totalIterations}, converged="
                f"{self.converged}, objective={self.objectiveHistory[-1]:.6g})")


class LinearSVC(SparkXMLEstimator, _LinearSVCParams, HasVerbose):
    """Linear support vector machine by primal Newton (few features) or dual coordinate
    descent distributed by CoCoA+.

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (sparse or dense), all of one size, finite values.
    labelCol : str, default "label"
        0/1 for two classes; 0..K-1 for K classes (K = largest label + 1).
    weightCol : str, optional
        Row weights >= 0: row i's loss is scaled by C * weight_i (liblinear's instance
        weights); rows of weight 0 are left out.
    predictionCol, rawPredictionCol : str
        Outputs: the class (double) and the margins (vector; binary [-m, m] as MLlib).
    C : float, default 1.0
        Loss penalty (> 0). MLlib's ``regParam`` = 1 / (C * sum of weights).
    loss : {"hinge", "squared_hinge"}, default "hinge"
    fitIntercept : bool, default True
        Append a constant feature 1.0; its weight is the intercept and IS regularised
        (liblinear's ``-B 1``), unlike MLlib's.
    tol : float, default 1e-3
        (>= 0) Stop when the duality gap <= tol * primal objective (each problem; 0 runs
        maxIter rounds); also the local solvers' KKT tolerance (Shark's accuracy;
        liblinear's eps).
    maxIter : int, default 100
        Maximum rounds: Newton steps, or CoCoA+ rounds (one block: rounds of 10 DCD passes,
        the gap checked after each; Crammer-Singer: one round to liblinear's stopping rule).
        Stopping here before ``tol`` warns with ``ConvergenceWarning`` (relative gap named).
    solver : {"auto", "newton", "dcd"}, default "auto"
        Binary and one-vs-rest: "newton" (primal Newton, exact d x d Hessian; indifferent to
        the features' scales), "dcd" (dual coordinate descent, CoCoA+ over blocks), "auto" =
        "newton" when a problem has at most 512 weights (features + bias), else "dcd".
        Crammer-Singer always uses "dcd".
    standardization : bool, default True
        Fit on features divided by their (weighted, unbiased) standard deviation, as Spark
        MLlib does; coefficients are returned in the original scale. The penalty then applies
        to the standardised weights (see Differences below).
    multiClass : {"ovr", "crammer_singer"}, default "ovr"
        Used when there are more than two classes. Crammer-Singer always uses liblinear's
        sequential dual method schedule (random permutation with shrinking).
    schedule : {"shark", "permutation"}, default "shark"
        Binary and OVR coordinate order: Shark QpBoxLinear's gain-based preferences, or
        liblinear's random permutation with shrinking.
    numBlocks : int, default 0
        CoCoA+ blocks (sigma' = numBlocks); 0 = one block below 16384 rows, else
        max(2, ceil(rows / 1,000,000)). The model depends on numBlocks and seed, never on
        numWorkers or the input's partitioning. More blocks allow more parallel workers but
        need more rounds and more work in all.
    numWorkers : int, optional
        Barrier tasks (default: the session's parallelism, at most numBlocks); each runs
        whole blocks. Asking for more workers than blocks warns and uses numBlocks tasks.
    seed : int, default 0
        Drives every block's coordinate order in every round.
    threshold : float, default 0.0
        Binary prediction is 1 when the margin > threshold.
    timeoutSeconds : float, default 600
        Bound on every wait for a peer task.
    verbose : int, default 0
        Log one line every ``verbose`` rounds (primal objective, duality gap) through the
        Python logger ``sparkxml`` (``sparkxml._core.progress``); 0 = silent.

    Notes
    -----
    Differences from liblinear / scikit-learn's LinearSVC:

    - ``standardization=True`` (the default, Spark MLlib's) solves liblinear's problem on
      standardised features, so the model differs from liblinear's on the raw features; set
      ``standardization=False`` for liblinear's objective.
    - The intercept is regularised as liblinear's ``-B 1``; MLlib's is not.
    - Non-convergence warns with ``sparkxml.linear.ConvergenceWarning`` (scikit-learn's
      ``ConvergenceWarning`` is a different class; both are ``UserWarning``).

    Examples
    --------
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(float)
    >>> train = from_dense(spark, X, columns={"label": y})
    >>> model = LinearSVC(C=1.0, seed=0).fit(train)
    >>> model.summary.converged, model.numFeatures
    (True, 3)
    >>> out = model.transform(train)
    >>> out.columns
    ['features', 'label', 'rawPrediction', 'prediction']
    >>> out.filter("prediction = label").count() >= 36   # of 40
    True
    """

    _model_kind = "linear_svm"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", rawPredictionCol="rawPrediction", C=1.0,
                 loss="hinge", fitIntercept=True, tol=1e-3, maxIter=100, multiClass="ovr",
                 schedule="shark", numBlocks=0, numWorkers=None, seed=0, threshold=0.0,
                 timeoutSeconds=600.0, verbose=0, solver="auto", standardization=True):
        super().__init__()
        self._setDefault(verbose=0)
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", rawPredictionCol="rawPrediction", C=1.0,
                  loss="hinge", fitIntercept=True, tol=1e-3, maxIter=100, multiClass="ovr",
                  schedule="shark", numBlocks=0, numWorkers=None, seed=0, threshold=0.0,
                  timeoutSeconds=600.0, verbose=0, solver="auto", standardization=True):
        return self._set_params(**self._input_kwargs)

    def _fit_validated(self, dataset):
        spark = dataset.sparkSession
        fcol, lcol = self.getFeaturesCol(), self.getLabelCol()
        wcol = self._opt(self.weightCol) or None
        check_vector_column(dataset, fcol)
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        for name, param in ((lcol, "labelCol"), (wcol, "weightCol")):
            if name is None:
                continue
            if name not in fields:
                raise ValueError(f"{param}: column '{name}' is not in the DataFrame (columns: "
                                 f"{list(fields)})")
            if not isinstance(fields[name], T.NumericType):
                raise TypeError(f"{param}: column '{name}' must be numeric, got "
                                f"{fields[name].simpleString()}")
        with FitProgress(spark, self, self.getVerbose()) as progress:
            return self._fit_labelled(dataset, progress, fcol, lcol, wcol)

    def _fit_labelled(self, dataset, progress, fcol, lcol, wcol):
        import time

        spark = dataset.sparkSession
        n_workers = self._opt(self.numWorkers)
        t0 = time.perf_counter()
        blocks = self.getNumBlocks()
        if not blocks:
            # the one job before training, and only for the default blocks: the row count.
            # Labels, weights and vectors are checked by the training tasks, before any
            # training, which saves a separate aggregate job (~1-2 s of Spark scheduling).
            with progress.phase("checks"):
                n_rows = aggregate_once(dataset, [F.count(F.lit(1)).alias("n")])["n"]
            if n_rows == 0:
                raise ValueError("the training DataFrame is empty")
            blocks = default_num_blocks(n_rows)
        checks_seconds = time.perf_counter() - t0
        if n_workers is None:
            n_workers = min(default_parallelism(spark), blocks)
        elif int(n_workers) > blocks:
            warnings.warn(f"LinearSVC: numWorkers={n_workers} but the data has {blocks} "
                          f"CoCoA+ block(s) (numBlocks={self.getNumBlocks()}; 0 = 1 below "
                          f"{MIN_ROWS_TWO_BLOCKS} rows, else max(2, ceil(rows / "
                          f"{ROWS_PER_BLOCK}))): training runs on {blocks} task(s); set "
                          f"numBlocks to use more", stacklevel=2)
        n_workers = max(1, min(int(n_workers), blocks))
        check_slots(spark, n_workers)
        # multi_class: used when the tasks find more than two classes
        cfg = dict(loss=self.getLoss(), multi_class=self.getMultiClass(),
                   schedule=self.getSchedule(), tol=float(self.getTol()),
                   max_iter=int(self.getMaxIter()), num_blocks=int(blocks),
                   seed=int(self.getSeed()), C=float(self.getC()),
                   fit_intercept=bool(self.getFitIntercept()), solver=self.getSolver(),
                   standardization=bool(self.getStandardization()))
        df = _block_frame(dataset, fcol, lcol, wcol, blocks, n_workers)
        with progress.phase("train"):
            result = run_barrier_training(
                df, n_workers,
                make_load_fn(fcol, lcol, wcol, cfg["C"], cfg["fit_intercept"],
                             cfg["multi_class"] == "crammer_singer"),
                make_train_fn(cfg, fcol, lcol, progress=progress.task_spec()),
                timeout_s=self.getTimeoutSeconds(), repartition=False, coalesce_single=True)
        errors = [i["error"] for i in result.infos if i.get("error")]
        if errors:
            raise ValueError(errors[0])
        if not result.infos:  # (Spark ran no task: an empty input may plan no partitions)
            raise ValueError("the training DataFrame is empty")
        if "coefficient_matrix" not in result.arrays:
            raise RuntimeError("LinearSVC: the training stage returned no model")
        a = result.arrays
        predictor = LinearSVCPredictor(a["coefficient_matrix"], a["intercepts"],
                                       int(a["num_classes"]), float(self.getThreshold()))
        summary = LinearSVCTrainingSummary(a, result.seconds, result.infos, checks_seconds)
        if progress.verbose > 0 and not progress.live_lines:
            progress.log_rounds(summary._rows(), int(self.getMaxIter()))
        if not summary.converged:
            _warn_not_converged(summary, self.getMaxIter(), self.getTol(),
                                self.getStandardization())
        mode = "binary" if predictor.num_classes == 2 else cfg["multi_class"]
        return LinearSVCModel(predictor, summary, mode)


class ConvergenceWarning(UserWarning):
    """A fit stopped at ``maxIter`` before its duality gap reached ``tol`` (as
    scikit-learn's ``sklearn.exceptions.ConvergenceWarning``; filter it with
    ``warnings.simplefilter("ignore", ConvergenceWarning)``)."""


def _warn_not_converged(summary, max_iter, tol, standardized):
    """Warn (``ConvergenceWarning``) with the largest relative duality gap reached."""
    gaps = np.asarray(summary.gapHistory[-1], np.float64)
    prim = np.maximum(np.abs(np.asarray(summary.primalHistory[-1], np.float64)), 1e-300)
    rel = float(np.max(gaps / prim))
    solver = (summary.workerInfo[0].get("solver") if summary.workerInfo else None) or "dcd"
    hint = ""
    if solver != "newton":
        hint = ("; on dense features of large or uneven scale, "
                + ("" if standardized else "standardization=True or ")
                + "solver='newton' (at most a few hundred features) converges far faster")
    warnings.warn(f"LinearSVC did not converge: maxIter={max_iter} rounds ({solver}) left a "
                  f"relative duality gap of {rel:.3g} > tol={tol:g}; increase maxIter or "
                  f"tol{hint}", ConvergenceWarning, stacklevel=3)


def _block_frame(dataset, fcol, lcol, wcol, blocks, n_workers):
    """The training columns plus content key and block, hash-partitioned so that task r
    holds the blocks b with b mod n_workers == r (``partition_keys`` gives keys that Spark's
    hash partitioning sends to a chosen partition), each partition sorted by key alone (one
    long: Spark's prefix sort, where (block, key) compared whole rows on the tie of the
    block). A task writes each row at its place in (block, key) order
    (``tasks.make_load_fn``): key order within a block, so each block's rows are written
    front to back as they arrive."""
    cols = [F.col(fcol).alias(F_COL), F.col(lcol).cast("double").alias(Y_COL)]
    hashed = [F.col(fcol), F.col(lcol).cast("double")]
    if wcol is not None:
        cols.append(F.col(wcol).cast("double").alias(W_COL))
        hashed.append(F.col(wcol).cast("double"))
    df = dataset.select(*cols, F.xxhash64(*hashed).alias(K_COL))
    df = df.withColumn(B_COL, F.pmod(F.col(K_COL), F.lit(int(blocks))))
    if n_workers == 1:  # every block in one task: the input's partitions, no shuffle
        return df.coalesce(1).sortWithinPartitions(K_COL)
    pkeys = partition_keys(n_workers)
    owner = F.element_at(F.array(*[F.lit(int(k)) for k in pkeys]),
                         (F.col(B_COL) % F.lit(n_workers)).cast("int") + F.lit(1))
    return (df.withColumn("__owner", owner).repartition(n_workers, "__owner").drop("__owner")
            .sortWithinPartitions(K_COL))


add_setters(LinearSVC, _PARAMS)


class LinearSVCModel(NativeExportMixin, SparkXMLPredictorModel, _LinearSVCParams):
    """A trained linear SVM.

    ``transform`` adds ``rawPredictionCol`` (vector: [-m, m] for two classes as Spark ML's
    LinearSVCModel, the K margins otherwise) and ``predictionCol`` (double: 1.0 when the
    margin > threshold for two classes; the class of the largest margin otherwise).

    Save format
    -----------
    ``path/metadata/part-*``: Spark ML metadata JSON with ``formatVersion`` 2 and
    ``modelKind`` "linear_svm"; ``path/data/``: the arrays as parquet chunk rows
    (``sparkxml_kernels.persist``): ``coefficient_matrix`` float64
    (K, d) (K = 1 for two classes: the weights of class 1), ``intercepts`` float64 (K,),
    ``num_classes`` int64 (), ``threshold`` float64 () (the threshold when saved), and the
    summary: ``summary.primal``, ``summary.dual``, ``summary.gap`` float64 (rounds + 1,
    problems), ``summary.sv`` int64 (2, problems) [free, bounded], ``summary.rounds`` int64
    [rounds, converged]. ``sparkxml_kernels.load_model(path)`` serves it without Spark.
    """

    _model_kind = "linear_svm"
    _required_arrays = ("coefficient_matrix", "intercepts", "num_classes")
    _predictor_class = LinearSVCPredictor
    _summary_class = LinearSVCTrainingSummary
    _state_attrs = ("_mode",)

    def __init__(self, predictor: LinearSVCPredictor | None = None,
                 summary: LinearSVCTrainingSummary | None = None, mode: str | None = None):
        super().__init__(predictor, summary)
        self._mode = mode

    # ------------------------------------------------------------------ attributes
    def _p(self) -> LinearSVCPredictor:
        if self._predictor is None:
            raise RuntimeError("this model has no coefficients (was it constructed directly?)")
        return self._predictor

    @property
    def predictor(self) -> LinearSVCPredictor:
        """The JVM-free predictor, with this model's current threshold."""
        p = self._p()
        p.threshold = float(self.getThreshold())
        return p

    @property
    def numClasses(self) -> int:
        return int(self._p().num_classes)

    @property
    def coefficients(self) -> DenseVector:
        """Weights of class 1 (two classes only; see ``coefficientMatrix``)."""
        if self.numClasses != 2:
            raise ValueError(f"coefficients is for two classes; this model has "
                             f"{self.numClasses}: use coefficientMatrix")
        return DenseVector(self._p().W[0])

    @property
    def intercept(self) -> float:
        if self.numClasses != 2:
            raise ValueError("intercept is for two classes; use interceptVector")
        return float(self._p().b[0])

    @property
    def coefficientMatrix(self) -> DenseMatrix:
        """(K, d) weights (K = 1 for two classes), one row per class."""
        W = self._p().W
        return DenseMatrix(W.shape[0], W.shape[1], W.ravel(order="F").tolist())

    @property
    def interceptVector(self) -> DenseVector:
        return DenseVector(self._p().b)

    def predictRaw(self, features) -> DenseVector:
        """rawPrediction of one vector."""
        return DenseVector(self.predictor.predict_raw(_one_row(features, self.numFeatures))[0])

    def predict(self, features) -> float:
        """Prediction of one vector."""
        return float(self.predictor.predict(_one_row(features, self.numFeatures))[0])

    # ------------------------------------------------------------------ persistence
    def _predictor_arrays(self) -> dict:
        return self.predictor.to_arrays()  # with the threshold the model has now

    @classmethod
    def _predictor_from_arrays(cls, arrays: dict) -> LinearSVCPredictor:
        return LinearSVCPredictor(arrays["coefficient_matrix"], arrays["intercepts"],
                                  int(arrays["num_classes"]))

    # ------------------------------------------------------------------ transform
    def _transform_validated(self, dataset):
        fcol = self.getFeaturesCol()
        check_vector_column(dataset, fcol)
        raw_col, pred_col = self.getRawPredictionCol(), self.getPredictionCol()
        check_output_columns(dataset.columns, (raw_col, pred_col))
        threshold = float(self.getThreshold())
        handle = self._task_model(dataset)  # see sparkxml._core.serving
        schema = T.StructType(list(dataset.schema.fields)
                              + [T.StructField(raw_col, VectorUDT()),
                                 T.StructField(pred_col, T.DoubleType())])
        return dataset.mapInArrow(make_predict_fn(handle, fcol, raw_col, pred_col, threshold),
                                  schema)


def _one_row(features, d):
    v = Vectors.dense(features) if not hasattr(features, "toArray") else features
    if v.size != d:
        raise ValueError(f"the vector has {v.size} features, the model expects {d}")
    return np.asarray(v.toArray(), np.float64).reshape(1, -1)


add_setters(LinearSVCModel, ("featuresCol", "predictionCol", "rawPredictionCol", "threshold"))
