"""Field-aware factorization machines on Spark: ``FFMRegressor`` and ``FFMClassifier``.

FFM (Juan, Zhuang, Chin, Lin, RecSys 2016; the libffm library) gives every feature one
factor vector per field: with f(j) the field of feature j (``fieldStarts``, e.g. from
``sparkxml.fm.fields.FieldEncoder``) and r = 1/||x||² (``normalize``, libffm's default) or 1,

    ŷ(x) = w0 + Σ_j w_j x_j √r + Σ_{a<b} ⟨v_{j_a, f(j_b)}, v_{j_b, f(j_a)}⟩ x_a x_b r.

Solvers:

* ``solver="adagrad"`` (default): libffm's adagrad SGD (learning rate ``stepSize`` = 0.2, L2
  ``regParam`` = 2e-5, ``factorSize`` = 4, 15 epochs: libffm's defaults). The pass over the
  rows is sequential: the model and its adagrad sums travel from worker to worker in
  row-block order (see ``sparkxml_kernels.fm.ffm``), so more workers do not train faster;
* ``solver="als"``: coordinate descent, ``FMRegressor``'s ALS: the model is multilinear, so
  every per-parameter step is exact (squared loss; logistic loss by GLMNET-style re-expansion
  each sweep) with L2 ``regParam`` on the mean loss;
* ``solver="mcmc"``: Gibbs sampling with Gaussian / Gamma hyper-priors (libFM's, myFM's
  scheme; one prior per (feature field, target field, factor)), probit latents for
  classification; the prediction averages the samples kept after ``burnIn``.

Training is ONE barrier stage, as for ``FMRegressor`` (``sparkxml.fm.base``). ALS and MCMC
update the parameters of an exclusive feature block at once, the workers in lockstep
(``sparkxml_kernels.fm.ffm_cd``). For every solver the model is the same, bit for bit, for
any ``numWorkers`` and input partitioning.
"""
from __future__ import annotations

import numpy as np
from pyspark import keyword_only

from sparkxml._core.base import keywords_of
from sparkxml.fm.base import FMEstimatorBase, SampledFMModel, add_setters, check_field_starts
from sparkxml.fm.fields import field_starts_of
from sparkxml.fm.params import CLASSIFIER_OUTPUTS, FM_CORE_PARAMS, FFMClassifierParams, FFMParams
from sparkxml_kernels.fm.ffm import FFMPredictor

__all__ = ["FFMRegressor", "FFMRegressionModel", "FFMClassifier", "FFMClassificationModel"]

_PARAMS = FM_CORE_PARAMS + ("solver", "normalize", "fitIntercept", "fitLinear", "thinning",
                           "tol")


class _FFMEstimator(FMEstimatorBase):
    _kind = "ffm"
    _unit = "epoch"

    def _fit_validated(self, dataset):
        if self._opt(self.fieldStarts) is None:
            fcol = self.getFeaturesCol()
            fs = field_starts_of(dataset, fcol)
            if fs is None and fcol in dataset.columns:
                raise ValueError(f"fieldStarts is required: FFM learns one factor vector per "
                                 f"(feature, field); set it, or feed featuresCol '{fcol}' "
                                 f"from a FieldEncoderModel (its output carries them)")
            if fs is not None:
                return self.copy({self.fieldStarts: fs})._fit_validated(dataset)
        return super()._fit_validated(dataset)

    def _dense_per_feature(self):
        m, k = len(self.getFieldStarts()), int(self.getFactorSize())
        solver = self.getSolver()
        if solver == "adagrad":  # V (d x fields x factorSize), w, and their adagrad sums
            n = 2 * (m * k + 1)
            return n, f"2 x (fields x factorSize + 1) = {n} values (parameters and adagrad sums)"
        if solver == "als":
            n = m * k + 1
            return n, f"fields x factorSize + 1 = {n} values"
        s = len(range(self.getBurnIn(), self.getMaxIter(), self.getThinning()))
        n = s * (m * k + 1)
        return n, (f"{s} kept MCMC samples x (fields x factorSize + 1) = {n} values (raise "
                   f"thinning for fewer)")

    def _check_params(self, weight, valid):
        if self.getSolver() == "mcmc":
            self._check_mcmc(weight, "solver 'als' or 'adagrad'")

    def _train_params(self, stats: dict) -> dict:
        return {"solver": self.getSolver(),
                "fieldStarts": check_field_starts(self.getFieldStarts(), stats["d"]),
                "factorSize": self.getFactorSize(), "maxIter": self.getMaxIter(),
                "stepSize": self.getStepSize(), "regParam": self.getRegParam(),
                "normalize": self.getNormalize(), "fitIntercept": self.getFitIntercept(),
                "fitLinear": self.getFitLinear(), "seed": int(self.getSeed()),
                "initStd": self.getInitStd(), "burnIn": self.getBurnIn(),
                "thinning": self.getThinning(), "tol": self.getTol()}


class FFMRegressor(_FFMEstimator, FFMParams):
    """Field-aware factorization machine regression (squared loss ½ (ŷ - y)²).

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (sparse or dense; finite values), all of one size d.
    labelCol : str, default "label"
    weightCol : str, optional
        Non-negative row weights: a row's gradient is scaled by its weight (rows of weight 0
        are skipped).
    fieldStarts : list of int, optional
        Start index of each field: strictly ascending, the first 0, all below d; a field runs
        to the next start or the end of the vector. Unset: taken from ``featuresCol``'s
        metadata, which a ``FieldEncoderModel`` writes (so ``Pipeline([FieldEncoder(...),
        FFMRegressor()])`` works); one of the two is required.
    factorSize : int, default 4
        k: the model holds d x fields x k factors (libffm's default 4).
    solver : {"adagrad", "als", "mcmc"}, default "adagrad"
        "adagrad": libffm's adagrad SGD: per row, for every feature pair and factor,
        g = λ v + κ v' x x' r, G += g², v -= stepSize g / √G (G starts at 1,
        v ~ U(0, 1/√k)). "als": coordinate descent on (1/W) Σ w_i ℓ_i + regParam/2 (‖w‖² +
        ‖V‖²), each parameter set by its exact Newton step (the model is linear in each
        parameter), as ``FMRegressor``'s "als". "mcmc": Gibbs sampling with hyper-priors, as
        ``FMRegressor``'s "mcmc" (no regularisation to tune). ALS and MCMC keep m² k float64
        caches per row (m fields).
    maxIter : int, default 15
        Epochs (adagrad, libffm's ``-t``) or sweeps over the parameters (als, mcmc; MCMC
        usually wants 100 or more).
    stepSize : float, default 0.2
        Adagrad learning rate η, in (0, 1] (libffm's ``-r``); unused by als and mcmc.
    regParam : float, default 2e-5
        adagrad: L2 λ, added to the gradient of every parameter a row touches (libffm's
        ``-l``). als: L2 on the mean loss, as ``FMRegressor``'s (whose default is 0.001; the
        default here is libffm's, too small for als on most data). Unused by mcmc.
    normalize : bool, default True
        Instance-wise normalisation: each row scaled to unit L2 norm (libffm's default; its
        ``--no-norm`` is False).
    fitIntercept, fitLinear : bool, default True
        Learn w0 (started at the mean label, or its log-odds) / the linear weights w, by the
        same adagrad steps (w with λ). libffm has neither: both False is libffm's model.
    seed : int, default 0
        Seeds the initial factors and every epoch's row order (adagrad) or the draws (mcmc).
    initStd : float, default 0.1
        als, mcmc: standard deviation of the initial factors (adagrad starts them at
        U(0, 1/√k), as libffm).
    burnIn : int, default 5
        mcmc: sweeps discarded before samples are kept (below maxIter).
    thinning : int, default 1
        mcmc: keep every thinning-th sweep after burn-in. The model stores every kept sample
        (S x d x (m k + 1) float64): raise it to bound the model size.
    tol : float, default 1e-6
        als: stop when the objective changed by less than this fraction over one sweep.
    numWorkers : int, optional
        Barrier tasks holding the rows. The adagrad pass is sequential (the model goes from
        worker to worker), so there more workers spread memory, not time; als and mcmc run
        all workers at once. Default: the session's parallelism, capped at one worker per
        50,000 rows.
    timeoutSeconds : float, default 600
    verbose : int, default 0
        Log one line every ``verbose`` epochs (sweeps) with the training curve: the mean
        training loss (adagrad), the objective (als), the training RMSE (mcmc regression).

    Differences from libffm
    -----------------------
    libffm runs with several threads Hogwild-style (updates race, the model depends on
    timing) and shuffles rows across the whole data set; here one pass visits 16 fixed row
    blocks (by a content hash of the row) in order and shuffles within each, so the model
    depends only on the data and ``seed``. The linear terms and intercept (on by default) are
    an addition. There is no validation-based early stopping (libffm's ``--auto-stop``).
    libffm has no ALS or MCMC solver: those follow libFM / myFM for FMs, carried over to
    the field-aware model (classification by MCMC is probit, not logistic, as in libFM).

    Examples
    --------
    >>> from sparkxml.datasets import from_csr
    >>> rng = np.random.default_rng(0)
    >>> n, s = 300, 4                            # three one-hot fields of 4 categories
    >>> cat = rng.integers(s, size=(n, 3))
    >>> a, b = rng.choice([-1.0, 1.0], size=(2, s))
    >>> y = a[cat[:, 0]] * b[cat[:, 1]]          # an interaction of fields 0 and 1
    >>> cols = (cat + [0, s, 2 * s]).ravel()
    >>> df = from_csr(spark, np.arange(0, 3 * n + 1, 3), cols, np.ones(3 * n), 3 * s,
    ...               columns={"label": y})
    >>> model = FFMRegressor(fieldStarts=[0, s, 2 * s], maxIter=10, seed=0).fit(df)
    >>> model.factors.shape                      # (features, fields, factorSize)
    (12, 3, 4)
    >>> from pyspark.ml.evaluation import RegressionEvaluator
    >>> RegressionEvaluator().evaluate(model.transform(df)) < 0.3   # RMSE; y has std 1
    True

    The same model by Gibbs sampling: the prediction averages the kept samples.

    >>> mc = FFMRegressor(fieldStarts=[0, s, 2 * s], solver="mcmc", maxIter=30, seed=0).fit(df)
    >>> mc.numSamples                            # maxIter - burnIn
    25
    >>> RegressionEvaluator().evaluate(mc.transform(df)) < 0.3
    True
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", fieldStarts=None, factorSize=4, solver="adagrad",
                 maxIter=15, stepSize=0.2, regParam=2e-5, normalize=True, fitIntercept=True,
                 fitLinear=True, seed=0, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 initStd=0.1, burnIn=5, thinning=1, tol=1e-6):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", fieldStarts=None, factorSize=4,
                  solver="adagrad", maxIter=15, stepSize=0.2, regParam=2e-5, normalize=True,
                  fitIntercept=True, fitLinear=True, seed=0, numWorkers=None,
                  timeoutSeconds=600.0, verbose=0,
                  initStd=0.1, burnIn=5, thinning=1, tol=1e-6):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FFMRegressionModel


class FFMClassifier(_FFMEstimator, FFMClassifierParams):
    """Field-aware factorization machine binary classification (labels 0 and 1; logistic
    loss, as libffm).

    Takes every parameter of :class:`FFMRegressor`, plus ``rawPredictionCol`` (default
    "rawPrediction": [-ŷ, ŷ]) and ``probabilityCol`` (default "probability": [1 - p, p],
    p = σ(ŷ)). With ``solver="mcmc"`` the model is probit (latent z ~ N(ŷ, 1), label
    [z > 0], as ``FMClassifier``'s MCMC): p is the mean over the samples of Φ(ŷ_s) and the
    raw margin Φ⁻¹(p); it takes no ``weightCol``. ``solver="als"`` minimises the logistic
    loss, as ``FMClassifier``'s ALS.

    Examples
    --------
    >>> from sparkxml.datasets import from_csr
    >>> rng = np.random.default_rng(1)
    >>> n, s = 400, 4
    >>> cat = rng.integers(s, size=(n, 3))
    >>> a, b = rng.choice([-1.0, 1.0], size=(2, s))
    >>> y = (a[cat[:, 0]] * b[cat[:, 1]] > 0).astype(float)
    >>> cols = (cat + [0, s, 2 * s]).ravel()
    >>> df = from_csr(spark, np.arange(0, 3 * n + 1, 3), cols, np.ones(3 * n), 3 * s,
    ...               columns={"label": y})
    >>> model = FFMClassifier(fieldStarts=[0, s, 2 * s], maxIter=10).fit(df)
    >>> model.transform(df).filter("prediction = label").count() >= 380   # of 400
    True
    """

    _task = "classification"

    # the regressor's keywords and the classifier's two output columns
    @keyword_only
    @keywords_of(FFMRegressor.__init__, add=CLASSIFIER_OUTPUTS)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(FFMRegressor.setParams, add=CLASSIFIER_OUTPUTS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FFMClassificationModel


add_setters(FFMRegressor, _PARAMS)
add_setters(FFMClassifier, _PARAMS + tuple(CLASSIFIER_OUTPUTS))


class _FFMModel(SampledFMModel):
    """Save format: ``path/metadata`` (Spark ML params, ``modelKind`` "ffm") and ``path/data/``
    (the arrays as parquet chunk rows, ``sparkxml_kernels.persist``) with ``w0`` float64 (),
    ``w`` float64 (d,), ``V`` float64 (d, m, k), ``field_starts`` int64 (m + 1,),
    ``normalize``, ``link`` ("identity" | "logistic" | "probit"), ``n_features`` (see
    ``sparkxml_kernels.fm.ffm``), plus ``summary.*`` training history ("loss": the mean
    training loss of each epoch (adagrad); "objective" (als); "train_rmse", "alpha" (mcmc)).
    An MCMC model holds its S kept samples: ``w0`` (S,), ``w`` (S, d), ``V`` (S, d, m, k);
    the prediction is the mean over the samples of link(ŷ_s)."""

    _model_kind = "ffm"
    _predictor_class = FFMPredictor
    _required_arrays = FFMPredictor.keys

    @property
    def intercept(self) -> float:
        """w0 (MCMC: the posterior mean over the kept samples)."""
        return float(self._predictor.w0)

    @property
    def linear(self):
        """Linear weights w as a DenseVector (d,) (MCMC: posterior mean)."""
        from pyspark.ml.linalg import DenseVector

        return DenseVector(self._predictor.w)

    @property
    def factors(self) -> np.ndarray:
        """float64 (d, m, k): ``factors[j, f]`` is feature j's factor vector against field f
        (a copy; MCMC: the posterior mean, while the prediction uses the samples)."""
        return self._predictor.V.copy()

    @property
    def numFields(self) -> int:
        return int(self._predictor.n_fields)


class FFMRegressionModel(_FFMModel, FFMParams):
    """Fitted :class:`FFMRegressor`: adds ``predictionCol`` (double)."""

    __doc__ += _FFMModel.__doc__
    _task = "regression"


class FFMClassificationModel(_FFMModel, FFMClassifierParams):
    """Fitted :class:`FFMClassifier`: adds ``rawPredictionCol``, ``probabilityCol`` (vectors)
    and ``predictionCol`` (1.0 when p > 0.5), as Spark ML's classifiers."""

    __doc__ += _FFMModel.__doc__
    _task = "classification"


add_setters(FFMRegressionModel, ("featuresCol", "predictionCol"))
add_setters(FFMClassificationModel, ("featuresCol", "predictionCol", "rawPredictionCol",
                                     "probabilityCol"))
