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

from sparkxml._core.params import (
    HasEarlyStoppingRounds,
    HasFeaturesCol,
    HasFitIntercept,
    HasLabelCol,
    HasMaxIter,
    HasNumWorkers,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasRegParam,
    HasSeed,
    HasStepSize,
    HasTimeoutSeconds,
    HasTol,
    HasValidationIndicatorCol,
    HasWeightCol,
)
from sparkxml.fm.base import FMEstimatorBase, FMModelBase, add_setters, check_field_starts
from sparkxml.fm.params import (
    HasBurnIn,
    HasFactorSize,
    HasFieldStarts,
    HasFitLinear,
    HasFMInitModel,
    HasFMSolver,
    HasInitStd,
    HasMiniBatchFraction,
    HasRelationBlocks,
    HasRelationCols,
    HasThinning,
)
from sparkxml_kernels.fm.predictor import FMPredictor

__all__ = ["FMRegressor", "FMRegressionModel", "FMClassifier", "FMClassificationModel"]

_PARAMS = ("featuresCol", "labelCol", "weightCol", "predictionCol", "factorSize", "solver",
           "maxIter", "regParam", "initStd", "seed", "burnIn", "thinning", "stepSize",
           "miniBatchFraction", "tol", "fitIntercept", "fitLinear", "fieldStarts", "numWorkers",
           "timeoutSeconds", "verbose", "validationIndicatorCol", "earlyStoppingRounds",
           "initModel", "relationCols", "relationBlocks")
_CLASSIFIER_PARAMS = ("rawPredictionCol", "probabilityCol")


class _FMParams(HasFeaturesCol, HasLabelCol, HasWeightCol, HasPredictionCol, HasFactorSize,
                HasFMSolver, HasMaxIter, HasRegParam, HasInitStd, HasSeed, HasBurnIn,
                HasThinning, HasStepSize, HasMiniBatchFraction, HasTol, HasFitIntercept,
                HasFitLinear, HasFieldStarts, HasNumWorkers, HasTimeoutSeconds):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", predictionCol="prediction",
                         factorSize=8, solver="mcmc", maxIter=200, regParam=0.001, initStd=0.1,
                         seed=0, burnIn=5, thinning=1, stepSize=0.003, miniBatchFraction=0.01,
                         tol=1e-6, fitIntercept=True, fitLinear=True, timeoutSeconds=600.0)


class _FMClassifierParams(_FMParams, HasRawPredictionCol, HasProbabilityCol):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(rawPredictionCol="rawPrediction", probabilityCol="probability")


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
        init = self._opt(self.initModel)
        if init is None:
            return None
        if isinstance(init, str):
            import sparkxml_kernels

            pred = getattr(sparkxml_kernels.load_model(init), "predictor", None)
            if not isinstance(pred, FMPredictor):
                raise ValueError(f"initModel: {init} is not a saved FM model (an "
                                 f"FMRegressionModel or FMClassificationModel)")
        else:
            pred = init._predictor
            if not isinstance(pred, FMPredictor):
                raise ValueError(f"initModel: a {type(init).__name__} is not a fitted FM model")
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
            if self.getBurnIn() >= self.getMaxIter():
                raise ValueError(f"burnIn={self.getBurnIn()} must be below maxIter="
                                 f"{self.getMaxIter()}: no MCMC sample would be kept")
            if weight and self._task == "classification":
                raise ValueError("weightCol is not supported by solver 'mcmc' for "
                                 "classification (the probit likelihood has no row weights); "
                                 "use solver 'als' or 'adamw'")

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
                "init": self._init_arrays(stats["d"], int(self.getFactorSize()))}


class FMRegressor(_FMEstimator, _FMParams):
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
        them cannot be saved.

    The fitted model is an ordinary FM over the concatenated features: it scores full vectors
    (e.g. the blocks' feature columns joined on the indices and put after featuresCol with a
    VectorAssembler).

    Differences from myFM
    ---------------------
    myFM has no validation-based early stopping and no warm start (its ``fit`` always starts
    from random factors); libFM has neither. MLlib's FMRegressor has neither either.

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
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", factorSize=8, solver="mcmc", maxIter=200,
                 regParam=0.001, initStd=0.1, seed=0, burnIn=5, thinning=1, stepSize=0.003,
                 miniBatchFraction=0.01, tol=1e-6, fitIntercept=True, fitLinear=True,
                 fieldStarts=None, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 validationIndicatorCol=None, earlyStoppingRounds=0, initModel=None,
                 relationCols=None, relationBlocks=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", factorSize=8, solver="mcmc", maxIter=200,
                  regParam=0.001, initStd=0.1, seed=0, burnIn=5, thinning=1, stepSize=0.003,
                  miniBatchFraction=0.01, tol=1e-6, fitIntercept=True, fitLinear=True,
                  fieldStarts=None, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                  validationIndicatorCol=None, earlyStoppingRounds=0, initModel=None,
                  relationCols=None, relationBlocks=None):
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

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", factorSize=8, solver="mcmc", maxIter=200,
                 regParam=0.001, initStd=0.1, seed=0, burnIn=5, thinning=1, stepSize=0.003,
                 miniBatchFraction=0.01, tol=1e-6, fitIntercept=True, fitLinear=True,
                 fieldStarts=None, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 validationIndicatorCol=None, earlyStoppingRounds=0, initModel=None,
                 relationCols=None, relationBlocks=None):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", rawPredictionCol="rawPrediction",
                  probabilityCol="probability", factorSize=8, solver="mcmc", maxIter=200,
                  regParam=0.001, initStd=0.1, seed=0, burnIn=5, thinning=1, stepSize=0.003,
                  miniBatchFraction=0.01, tol=1e-6, fitIntercept=True, fitLinear=True,
                  fieldStarts=None, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                  validationIndicatorCol=None, earlyStoppingRounds=0, initModel=None,
                  relationCols=None, relationBlocks=None):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FMClassificationModel


add_setters(FMRegressor, _PARAMS)
add_setters(FMClassifier, _PARAMS + _CLASSIFIER_PARAMS)


class _FMModel(FMModelBase):
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
    def numSamples(self) -> int:
        """Parameter sets averaged at prediction (MCMC samples kept; 1 otherwise)."""
        return int(self._predictor.n_samples)

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


class FMRegressionModel(_FMModel, _FMParams):
    """Fitted :class:`FMRegressor`: adds ``predictionCol`` (double)."""

    __doc__ += _FMModel.__doc__
    _task = "regression"


class FMClassificationModel(_FMModel, _FMClassifierParams):
    """Fitted :class:`FMClassifier`: adds ``rawPredictionCol``, ``probabilityCol`` (vectors)
    and ``predictionCol`` (1.0 when p > 0.5), as Spark ML's classifiers."""

    __doc__ += _FMModel.__doc__
    _task = "classification"


add_setters(FMRegressionModel, ("featuresCol", "predictionCol"))
add_setters(FMClassificationModel, ("featuresCol", "predictionCol", "rawPredictionCol",
                                    "probabilityCol"))
