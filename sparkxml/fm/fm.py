"""Factorization machines on Spark: ``FMRegressor`` and ``FMClassifier``.

ŷ(x) = w0 + Σ_j w_j x_j + Σ_{j<l} ⟨v_j, v_l⟩ x_j x_l (Rendle, ICDM 2010), learned by

* ``solver="mcmc"`` (default): Gibbs sampling with Gaussian/Gamma hyper-priors as libFM and
  myFM run it, so there is no regularisation to tune; binary classification by probit
  regression with latent targets; the prediction averages the posterior samples kept after
  ``burnIn`` (every ``thinning``-th sweep);
* ``solver="als"``: coordinate descent (libFM's ALS; squared loss, or logistic loss by
  GLMNET-style re-expansion each sweep) with L2 ``regParam``;
* ``solver="adamw"``: mini-batch AdamW (Spark MLlib's FM solver) with decoupled weight decay
  ``regParam``, learning rate ``stepSize`` and ``miniBatchFraction``.

Training is ONE barrier stage (``sparkxml.fm.base``). The coordinate solvers update all
parameters of an exclusive feature block (features that never share a row, such as a one-hot
encoded column; found from the data, see ``sparkxml_kernels.fm.layout``) at once, with one
all-reduce of per-feature sums: exactly the sequential update. Same seed, same data: the same
model whatever ``numWorkers`` and input partitioning, up to the rounding of those sums.
"""
from __future__ import annotations

import numpy as np
from pyspark import keyword_only

from sparkxml._core.base import keywords_of
from sparkxml._core.params import (
    HasEarlyStoppingRounds,
    HasFitIntercept,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasTol,
    HasValidationIndicatorCol,
)
from sparkxml.fm.base import FMEstimatorBase, SampledFMModel, add_setters, check_field_starts
from sparkxml.fm.params import (
    CLASSIFIER_OUTPUTS,
    FM_CORE_PARAMS,
    FMCoreParams,
    HasFitLinear,
    HasFMInitModel,
    HasFMLoss,
    HasFMSolver,
    HasMiniBatchFraction,
    HasRelationBlocks,
    HasRelationCols,
    HasThinning,
)
from sparkxml_kernels.fm.predictor import FMPredictor

__all__ = ["FMRegressor", "FMRegressionModel", "FMClassifier", "FMClassificationModel"]

_PARAMS = FM_CORE_PARAMS + ("solver", "thinning", "miniBatchFraction", "tol", "fitIntercept",
                            "fitLinear", "validationIndicatorCol", "earlyStoppingRounds",
                            "initModel", "relationCols", "relationBlocks")
_REGRESSOR_PARAMS = ("loss", "probabilityCol")
_RAW_PREDICTION = {"rawPredictionCol": CLASSIFIER_OUTPUTS["rawPredictionCol"]}
# ordinal labels: more classes than this are refused (the cutpoint step is O(K^3))
MAX_ORDINAL_CLASSES = 100


class _FMParams(FMCoreParams, HasFMSolver, HasThinning, HasMiniBatchFraction, HasTol,
                HasFitIntercept, HasFitLinear):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(solver="mcmc", maxIter=200, regParam=0.001, initStd=0.1, thinning=1,
                         stepSize=0.003, miniBatchFraction=0.01, tol=1e-6, fitIntercept=True,
                         fitLinear=True)


class _FMRegressorParams(_FMParams, HasFMLoss, HasProbabilityCol):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(loss="squared", probabilityCol="probability")


def ordinal_classes(dataset, label: str) -> list:
    """The sorted distinct values of ``label`` (one small Spark job), checked to be at least
    two consecutive integers (the classes of ``loss="ordinal"``); raises ValueError naming
    labelCol and the values."""
    from pyspark.sql import functions as F

    rows = (dataset.select(F.col(label).cast("double").alias("y")).distinct().orderBy("y")
            .limit(MAX_ORDINAL_CLASSES + 1).collect())
    vals = [float(r["y"]) for r in rows]
    if len(vals) > MAX_ORDINAL_CLASSES:
        raise ValueError(f"labelCol: column '{label}' holds more than {MAX_ORDINAL_CLASSES} "
                         f"distinct labels; loss='ordinal' supports at most "
                         f"{MAX_ORDINAL_CLASSES} classes")
    if len(vals) < 2:
        raise ValueError(f"labelCol: column '{label}' holds the single label {vals!r}; "
                         f"loss='ordinal' needs at least two classes")
    frac = [v for v in vals if v != round(v)]
    if frac:
        raise ValueError(f"labelCol: column '{label}' holds the label {frac[0]!r}; "
                         f"loss='ordinal' needs integer labels")
    if vals[-1] - vals[0] != len(vals) - 1:
        missing = sorted(set(range(int(vals[0]), int(vals[-1]) + 1)) - {int(v) for v in vals})
        raise ValueError(f"labelCol: column '{label}' holds the labels "
                         f"{[int(v) for v in vals]}, not consecutive integers (missing "
                         f"{missing[:10]}); loss='ordinal' needs every class from "
                         f"{int(vals[0])} to {int(vals[-1])} present")
    return vals


class _FMClassifierParams(_FMParams, HasRawPredictionCol, HasProbabilityCol):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(**CLASSIFIER_OUTPUTS)


class _FMEstimator(FMEstimatorBase, HasValidationIndicatorCol, HasEarlyStoppingRounds,
                   HasFMInitModel, HasRelationCols, HasRelationBlocks):
    """The fit of FMRegressor / FMClassifier: the training conveniences (validation rows,
    early stopping, warm start, relation blocks) live on the estimators only, not on their
    models."""

    _kind = "fm"

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(earlyStoppingRounds=0)

    def _init_arrays(self, d: int, k: int):
        """The starting point ``initModel`` names: its (posterior mean) parameters, checked
        against this fit's vector size, factorSize and task."""
        pred = self._init_model_predictor(
            FMPredictor, "{path} is not a saved FM model (an FMRegressionModel or "
            "FMClassificationModel)", "a {kind} is not a fitted FM model")
        if pred is None:
            return None
        if pred.link_name == "ordinal":
            raise ValueError("initModel: the model is an ordinal model (loss='ordinal'); a "
                             "warm start needs a squared-loss or classification FM model")
        regression = pred.link_name == "identity"
        if regression != (self._task == "regression"):
            kind = "regression" if regression else "classification"
            raise ValueError(f"initModel: the model is a {kind} model (link "
                             f"{pred.link_name!r}); {type(self).__name__} needs a "
                             f"{self._task} model")
        if (pred.n_features, pred.factor_size) != (d, k):
            raise ValueError(f"initModel: the model has {pred.n_features} features and "
                             f"factorSize {pred.factor_size}; this fit has {d} features and "
                             f"factorSize {k}")
        return {"w0": float(np.mean(pred.w0)), "w": pred.w.astype(np.float64).mean(axis=0),
                "V": pred.V.astype(np.float64).mean(axis=0)}

    def _relation_cols(self) -> list:
        if bool(self._opt(self.relationBlocks)) != bool(self._opt(self.relationCols)):
            raise ValueError("relationCols and relationBlocks go together: one index column "
                             "per block")
        return list(self._opt(self.relationCols) or [])

    def _relation_spec(self, dataset):
        from sparkxml.fm.relations import relation_spec

        return relation_spec(dataset, self._opt(self.relationCols),
                             self._opt(self.relationBlocks), self.getSolver())

    def write(self):
        """A writer, refused while relationBlocks holds blocks (matrices and DataFrames have
        no place in the params metadata)."""
        if self._opt(self.relationBlocks):
            raise TypeError(f"{type(self).__name__}: param relationBlocks holds blocks, which "
                            f"cannot be saved with the estimator; save the estimator without "
                            f"them (clear relationBlocks) and set them again after loading")
        return super().write()

    def _check_params(self, weight, valid):
        if self.getEarlyStoppingRounds() > 0 and not valid:
            raise ValueError(f"earlyStoppingRounds={self.getEarlyStoppingRounds()} needs "
                             f"validationIndicatorCol (the rows early stopping watches)")
        if self.getSolver() == "mcmc":
            self._check_mcmc(weight, "solver 'als' or 'adamw'")
        if self._ordinal():
            if self.getSolver() != "mcmc":
                raise ValueError(f"loss='ordinal' is trained by solver 'mcmc' only, not "
                                 f"solver={self.getSolver()!r}")
            for name, value in (("weightCol", weight), ("validationIndicatorCol", valid),
                                ("initModel", self._opt(self.initModel))):
                if value:
                    raise ValueError(f"{name} is not supported with loss='ordinal' (the "
                                     f"ordered probit likelihood has no row weights, "
                                     f"validation metric or warm start)")

    def _ordinal(self) -> bool:
        return self.hasParam("loss") and self.getOrDefault("loss") == "ordinal"

    def _label_checks(self, dataset, label: str) -> dict:
        return {"classes": ordinal_classes(dataset, label)} if self._ordinal() else {}

    def _train_params(self, stats: dict) -> dict:
        solver = self.getSolver()
        fs = self._opt(self.fieldStarts)
        if fs is not None:
            fs = check_field_starts(fs, stats["d"])
        return {"solver": solver, "factorSize": self.getFactorSize(),
                "maxIter": self.getMaxIter(), "regParam": self.getRegParam(),
                "initStd": self.getInitStd(), "seed": int(self.getSeed()),
                "burnIn": self.getBurnIn(), "thinning": self.getThinning(),
                "stepSize": self.getStepSize(), "miniBatchFraction": self.getMiniBatchFraction(),
                "tol": self.getTol(), "fitIntercept": self.getFitIntercept(),
                "fitLinear": self.getFitLinear(), "fieldStarts": fs,
                "earlyStoppingRounds": self.getEarlyStoppingRounds(),
                "init": self._init_arrays(stats["d"], int(self.getFactorSize())),
                "loss": "ordinal" if self._ordinal() else "squared",
                "classes": stats.get("classes")}


class FMRegressor(_FMEstimator, _FMRegressorParams):
    """Factorization machine regression (squared loss; MCMC: Gaussian likelihood with a
    Gamma prior on its precision).

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (sparse or dense; finite values), all of one size.
    labelCol : str, default "label"
    weightCol : str, optional
        Non-negative row weights: a row of weight w counts as w copies of the row (in MCMC
        regression it scales the row's noise precision). Not available for MCMC
        classification.
    factorSize : int, default 8
        Rank k of the pairwise interactions.
    solver : {"mcmc", "als", "adamw"}, default "mcmc"
        The most accurate, and free of regularisation to tune, is "mcmc" (on a9a it matched
        myFM's AUC; see the README). "als" needs ``regParam``; "adamw" ``stepSize``,
        ``miniBatchFraction`` and ``regParam``.
    maxIter : int, default 200
        Sweeps over the parameters (mcmc, als) or epochs (adamw).
    regParam : float, default 0.001
        L2 regularisation of w and V on the mean loss (als), decoupled weight decay (adamw);
        unused by mcmc.
    initStd : float, default 0.1
        Standard deviation of the initial factors.
    seed : int, default 0
    burnIn : int, default 5
        MCMC: sweeps discarded before samples are kept (as myFM's default of keeping all but
        the first 5).
    thinning : int, default 1
        MCMC: keep every thinning-th sweep after burn-in. The model stores every kept sample
        (see the model's save format): raise it to bound the model size.
    stepSize : float, default 0.003
        adamw learning rate, in (0, 1].
    miniBatchFraction : float, default 0.01
        adamw: fraction of the rows in a mini-batch, in (0, 1].
    tol : float, default 1e-6
        als / adamw: stop when the objective (mean loss) changed by less than this fraction
        over one sweep / epoch.
    fitIntercept, fitLinear : bool, default True
        Learn w0 / the linear weights w.
    fieldStarts : list of int, optional
        Start index of each field (a contiguous range of the vector, e.g. one encoded
        categorical column). MCMC gives each field its own hyper-priors (myFM's
        ``group_shapes``); without it all features share one. The coordinate updates find
        their blocks from the data either way.
    numWorkers : int, optional
        Barrier tasks; all run at once. Default: the session's parallelism, capped at one
        worker per 50,000 rows.
    timeoutSeconds : float, default 600
        Bound on every wait for a peer task.
    verbose : int, default 0
        Log the phase times and one line every ``verbose`` iterations (sweeps, epochs) with
        the solver's training curve (and the validation metric) through the Python logger
        ``sparkxml`` (``sparkxml._core.progress``); 0 = silent.
    validationIndicatorCol : str, optional
        Boolean column: true rows are held out of training and scored after every sweep /
        epoch (``summary.history["valid_metric"]``): RMSE for regression, log loss for
        classification, of the model as it predicts (MCMC: the mean over the samples kept so
        far).
    earlyStoppingRounds : int, default 0
        With ``validationIndicatorCol``: stop once the validation metric has not improved for
        this many sweeps / epochs and keep the model of the best one (MCMC: the samples kept
        up to it; ``summary.history["best_iteration"]``, 0-based). 0 = off.
    initModel : FMRegressionModel, FMClassificationModel or str, optional
        Warm start: training starts from this fitted (or saved) model's w0, w and V (an MCMC
        model's posterior mean). It must have the same vector size and factorSize, and be a
        model of the same task. MCMC starts its chain there (the hyper-parameters start
        afresh); ALS and AdamW continue from it (AdamW's moments start at zero).
    relationCols : list of str, optional
        Relation blocks (myFM's ``RelationBlock``, libFM's BS): integer columns, one per
        block, each row's block row (0-based). With them the row's features are
        [featuresCol, relationBlocks[0][row's index], relationBlocks[1][...], ...]; featuresCol
        may then be absent from the DataFrame (no flat features). MCMC only; not with
        validationIndicatorCol. The sampler uses the block structure (per-block-row caches and
        sums), so the blocks' features cost per distinct user / item, not per row; the model
        is the one the flat encoding gives (the same predictions to float rounding).
    relationBlocks : list, optional
        One block per relationCols entry, stored once: a DataFrame with an integer ``index``
        and a vector ``features`` column (collected to the driver once; block rows no index
        names are all zero), or a numpy 2-D array / scipy.sparse matrix (row b = block row
        b). The blocks travel to the training tasks with the params; an estimator holding
        them cannot be saved. The fitted model is an ordinary FM over the concatenated
        features: it scores full vectors (e.g. the blocks' feature columns joined on the
        indices and put after featuresCol with a VectorAssembler).
    loss : {"squared", "ordinal"}, default "squared"
        "ordinal": ordered probit regression with learned cutpoints (myFM's
        ``MyFMOrderedProbit``, ``sparkxml_kernels.fm.ordinal``), solver "mcmc" only, without
        weightCol, validationIndicatorCol or initModel. The labels must be consecutive
        integers m, m+1, ..., m+K-1 (2 <= K <= 100, every value present, e.g. ratings 1..5;
        anything else is refused naming labelCol and the values): class c is label m + c.
        The model's ``predictionCol`` is the expected label Σ_c p_c (m + c) and
        ``probabilityCol`` the K class probabilities (argmax: myFM's ``predict``).
    probabilityCol : str, default "probability"
        Output of ordinal models: the class probabilities (vector of size K).

    Differences from myFM
    ---------------------
    myFM has no validation-based early stopping and no warm start (its ``fit`` always starts
    from random factors); libFM has neither. MLlib's FMRegressor has neither either. myFM's
    ordinal regression takes labels 0..K-1; here any consecutive integer range.

    Examples
    --------
    >>> from pyspark.ml.evaluation import RegressionEvaluator
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> y = X[:, 0] * X[:, 1] + X[:, 2]          # one pairwise interaction and a linear term
    >>> df = from_dense(spark, X, columns={"label": y})
    >>> model = FMRegressor(factorSize=2, maxIter=50, seed=0).fit(df)
    >>> model.transform(df).columns
    ['features', 'label', 'prediction']
    >>> RegressionEvaluator().evaluate(model.transform(df)) < 0.2 * float(y.std())   # RMSE
    True

    Ordinal labels (ratings 1, 2, 3): the expected rating and the class probabilities.

    >>> r = np.digitize(y, [-0.5, 0.5]) + 1.0
    >>> df = from_dense(spark, X, columns={"label": r})
    >>> model = FMRegressor(loss="ordinal", factorSize=2, maxIter=50, seed=0).fit(df)
    >>> model.classes, len(model.cutpoints)
    ([1.0, 2.0, 3.0], 2)
    >>> out = model.transform(df)
    >>> out.columns
    ['features', 'label', 'prediction', 'probability']
    >>> rows = out.collect()
    >>> sum(int(np.argmax(row.probability)) + 1 == row.label for row in rows) >= 30   # of 40
    True
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", factorSize=8, solver="mcmc", maxIter=200,
                 regParam=0.001, initStd=0.1, seed=0, burnIn=5, thinning=1, stepSize=0.003,
                 miniBatchFraction=0.01, tol=1e-6, fitIntercept=True, fitLinear=True,
                 fieldStarts=None, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 validationIndicatorCol=None, earlyStoppingRounds=0, initModel=None,
                 loss="squared", probabilityCol="probability", relationCols=None,
                 relationBlocks=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", factorSize=8, solver="mcmc", maxIter=200,
                  regParam=0.001, initStd=0.1, seed=0, burnIn=5, thinning=1, stepSize=0.003,
                  miniBatchFraction=0.01, tol=1e-6, fitIntercept=True, fitLinear=True,
                  fieldStarts=None, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                  validationIndicatorCol=None, earlyStoppingRounds=0, initModel=None,
                  loss="squared", probabilityCol="probability", relationCols=None,
                  relationBlocks=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FMRegressionModel


class FMClassifier(_FMEstimator, _FMClassifierParams):
    """Factorization machine binary classification (labels 0 and 1): probit with latent
    targets (mcmc, as libFM), logistic loss (als, adamw).

    Takes every parameter of :class:`FMRegressor`, plus ``rawPredictionCol`` (default
    "rawPrediction": [-m, m] with m the margin: ŷ for logistic, Φ⁻¹(p) for probit) and
    ``probabilityCol`` (default "probability": [1 - p, p]).

    Examples
    --------
    >>> from sparkxml.datasets import from_dense
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(float)
    >>> df = from_dense(spark, X, columns={"label": y})
    >>> model = FMClassifier(factorSize=2, maxIter=50, seed=0).fit(df)
    >>> out = model.transform(df)
    >>> out.columns
    ['features', 'label', 'rawPrediction', 'probability', 'prediction']
    >>> out.filter("prediction = label").count() >= 34      # of 40
    True
    """

    _task = "classification"

    # the regressor's keywords (probabilityCol among them) but its loss, and rawPredictionCol
    @keyword_only
    @keywords_of(FMRegressor.__init__, drop=("loss",), add=_RAW_PREDICTION)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(FMRegressor.setParams, drop=("loss",), add=_RAW_PREDICTION)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FMClassificationModel


add_setters(FMRegressor, _PARAMS + _REGRESSOR_PARAMS)
add_setters(FMClassifier, _PARAMS + tuple(CLASSIFIER_OUTPUTS))


class _FMModel(SampledFMModel):
    """Save format: ``path/metadata`` (Spark ML params, ``modelKind`` "fm") and ``path/data/``
    (the arrays as parquet chunk rows, ``sparkxml_kernels.persist``) with ``w0`` float64 (S,),
    ``w`` float32 (S, d), ``V`` float32 (S, d, k), ``link`` ("identity" | "probit" |
    "logistic"), ``n_features``, plus ``summary.*`` training history. S = 1 (als, adamw) or the
    number of MCMC samples kept: the prediction is the mean over the samples of link(ŷ_s)
    (``sparkxml_kernels.fm.predictor``), so an MCMC model holds S x d x (k + 1) float32
    values."""

    _model_kind = "fm"
    _predictor_class = FMPredictor
    _required_arrays = FMPredictor.keys

    @property
    def intercept(self) -> float:
        """w0 (for MCMC: the posterior mean over the kept samples)."""
        return float(np.mean(self._predictor.w0))

    @property
    def linear(self):
        """Linear weights w as a DenseVector (MCMC: posterior mean)."""
        from pyspark.ml.linalg import DenseVector

        return DenseVector(self._predictor.w.astype(np.float64).mean(axis=0))

    @property
    def factors(self):
        """Factors V as a DenseMatrix (d x k) (MCMC: posterior mean; the prediction uses the
        samples, not this mean)."""
        from pyspark.ml.linalg import DenseMatrix

        V = self._predictor.V.astype(np.float64).mean(axis=0)
        return DenseMatrix(V.shape[0], V.shape[1], V.reshape(-1, order="F").tolist())


class FMRegressionModel(_FMModel, _FMRegressorParams):
    """Fitted :class:`FMRegressor`: adds ``predictionCol`` (double); an ordinal model
    (``loss="ordinal"``) adds ``probabilityCol`` too (the K class probabilities, classes in
    ascending label order) and its prediction is the expected label.
    An ordinal model also saves ``cutpoints`` float64 (S, K-1) and ``classes`` float64 (K,)."""

    __doc__ += _FMModel.__doc__
    _task = "regression"

    @property
    def isOrdinal(self) -> bool:
        """Whether the model is an ordered probit one (``loss="ordinal"``)."""
        return getattr(self._predictor, "link_name", "") == "ordinal"

    def _ordinal_predictor(self):
        if not self.isOrdinal:
            raise ValueError("this FMRegressionModel was not trained with loss='ordinal'")
        return self._predictor

    @property
    def classes(self) -> list:
        """Ordinal models: the label value of each class, ascending."""
        return self._ordinal_predictor().classes.tolist()

    @property
    def numClasses(self) -> int:
        """Ordinal models: the number of classes K."""
        return int(self._ordinal_predictor().n_classes)

    @property
    def cutpoints(self):
        """Ordinal models: the K-1 cutpoints as a DenseVector (the posterior mean; the
        prediction uses each sample's)."""
        from pyspark.ml.linalg import DenseVector

        return DenseVector(self._ordinal_predictor().cutpoints.mean(axis=0))

    def _outputs(self):
        if self.isOrdinal:
            return [(self.getPredictionCol(), "pred"), (self.getProbabilityCol(), "prob")]
        return super()._outputs()


class FMClassificationModel(_FMModel, _FMClassifierParams):
    """Fitted :class:`FMClassifier`: adds ``rawPredictionCol``, ``probabilityCol`` (vectors)
    and ``predictionCol`` (1.0 when p > 0.5), as Spark ML's classifiers."""

    __doc__ += _FMModel.__doc__
    _task = "classification"


add_setters(FMRegressionModel, ("featuresCol", "predictionCol", "probabilityCol"))
add_setters(FMClassificationModel, ("featuresCol", "predictionCol", "rawPredictionCol",
                                    "probabilityCol"))
