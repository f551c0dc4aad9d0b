"""Field-aware factorization machines on Spark: ``FFMRegressor`` and ``FFMClassifier``.

FFM (Juan, Zhuang, Chin, Lin, RecSys 2016; the libffm library) gives every feature one
factor vector per field: with f(j) the field of feature j (``fieldStarts``, e.g. from
``sparkxml.fm.fields.FieldEncoder``) and r = 1/||x||² (``normalize``, libffm's default) or 1,

    ŷ(x) = w0 + Σ_j w_j x_j √r + Σ_{a<b} ⟨v_{j_a, f(j_b)}, v_{j_b, f(j_a)}⟩ x_a x_b r.

``solver="adagrad"``: libffm's adagrad SGD (learning rate ``stepSize`` = 0.2, L2 ``regParam``
= 2e-5, ``factorSize`` = 4, 15 epochs: libffm's defaults). Training is ONE barrier stage, as
for ``FMRegressor`` (``sparkxml.fm.base``); the pass over the rows is sequential: the model
and its adagrad sums travel from worker to worker in row-block order (see
``sparkxml_kernels.fm.ffm``), so the model is the same, bit for bit, for any ``numWorkers``
and input partitioning, and more workers do not train faster.
"""
from __future__ import annotations

import numpy as np
from pyspark import keyword_only

from sparkxml._core.params import (
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
    HasWeightCol,
)
from sparkxml.fm.base import FMEstimatorBase, FMModelBase, add_setters, check_field_starts
from sparkxml.fm.fields import field_starts_of
from sparkxml.fm.params import (
    HasFactorSize,
    HasFFMSolver,
    HasFieldStarts,
    HasFitLinear,
    HasNormalize,
)
from sparkxml_kernels.fm.ffm import FFMPredictor

__all__ = ["FFMRegressor", "FFMRegressionModel", "FFMClassifier", "FFMClassificationModel"]

_PARAMS = ("featuresCol", "labelCol", "weightCol", "predictionCol", "fieldStarts", "factorSize",
           "solver", "maxIter", "stepSize", "regParam", "normalize", "fitIntercept",
           "fitLinear", "seed", "numWorkers", "timeoutSeconds", "verbose")
_CLASSIFIER_PARAMS = ("rawPredictionCol", "probabilityCol")


class _FFMParams(HasFeaturesCol, HasLabelCol, HasWeightCol, HasPredictionCol, HasFieldStarts,
                 HasFactorSize, HasFFMSolver, HasMaxIter, HasStepSize, HasRegParam,
                 HasNormalize, HasFitIntercept, HasFitLinear, HasSeed, HasNumWorkers,
                 HasTimeoutSeconds):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(featuresCol="features", labelCol="label", predictionCol="prediction",
                         factorSize=4, solver="adagrad", maxIter=15, stepSize=0.2,
                         regParam=2e-5, normalize=True, fitIntercept=True, fitLinear=True,
                         seed=0, timeoutSeconds=600.0)


class _FFMClassifierParams(_FFMParams, HasRawPredictionCol, HasProbabilityCol):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(rawPredictionCol="rawPrediction", probabilityCol="probability")


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
        # V (d x fields x factorSize), w, and an adagrad sum for each of them
        m, k = len(self.getFieldStarts()), int(self.getFactorSize())
        n = 2 * (m * k + 1)
        return n, f"2 x (fields x factorSize + 1) = {n} values (parameters and adagrad sums)"

    def _train_params(self, stats: dict) -> dict:
        return {"solver": self.getSolver(),
                "fieldStarts": check_field_starts(self.getFieldStarts(), stats["d"]),
                "factorSize": self.getFactorSize(), "maxIter": self.getMaxIter(),
                "stepSize": self.getStepSize(), "regParam": self.getRegParam(),
                "normalize": self.getNormalize(), "fitIntercept": self.getFitIntercept(),
                "fitLinear": self.getFitLinear(), "seed": int(self.getSeed())}


class FFMRegressor(_FFMEstimator, _FFMParams):
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
    solver : {"adagrad"}, default "adagrad"
        libffm's adagrad SGD: per row, for every feature pair and factor, g = λ v + κ v' x x' r,
        G += g², v -= stepSize g / √G (G starts at 1, v ~ U(0, 1/√k)).
    maxIter : int, default 15
        Epochs (libffm's ``-t``).
    stepSize : float, default 0.2
        Adagrad learning rate η, in (0, 1] (libffm's ``-r``).
    regParam : float, default 2e-5
        L2 λ, added to the gradient of every parameter a row touches (libffm's ``-l``).
    normalize : bool, default True
        Instance-wise normalisation: each row scaled to unit L2 norm (libffm's default; its
        ``--no-norm`` is False).
    fitIntercept, fitLinear : bool, default True
        Learn w0 (started at the mean label, or its log-odds) / the linear weights w, by the
        same adagrad steps (w with λ). libffm has neither: both False is libffm's model.
    seed : int, default 0
        Seeds the initial factors and every epoch's row order.
    numWorkers : int, optional
        Barrier tasks holding the rows. The pass is sequential (the model goes from worker
        to worker), so more workers spread memory, not time. Default: the session's
        parallelism, capped at one worker per 50,000 rows.
    timeoutSeconds : float, default 600
    verbose : int, default 0
        Log one line every ``verbose`` epochs with the epoch's mean training loss.

    Differences from libffm
    -----------------------
    libffm runs with several threads Hogwild-style (updates race, the model depends on
    timing) and shuffles rows across the whole data set; here one pass visits 16 fixed row
    blocks (by a content hash of the row) in order and shuffles within each, so the model
    depends only on the data and ``seed``. The linear terms and intercept (on by default) are
    an addition. There is no validation-based early stopping (libffm's ``--auto-stop``).

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
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", fieldStarts=None, factorSize=4, solver="adagrad",
                 maxIter=15, stepSize=0.2, regParam=2e-5, normalize=True, fitIntercept=True,
                 fitLinear=True, seed=0, numWorkers=None, timeoutSeconds=600.0, verbose=0):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", fieldStarts=None, factorSize=4,
                  solver="adagrad", maxIter=15, stepSize=0.2, regParam=2e-5, normalize=True,
                  fitIntercept=True, fitLinear=True, seed=0, numWorkers=None,
                  timeoutSeconds=600.0, verbose=0):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FFMRegressionModel


class FFMClassifier(_FFMEstimator, _FFMClassifierParams):
    """Field-aware factorization machine binary classification (labels 0 and 1; logistic
    loss, as libffm).

    Takes every parameter of :class:`FFMRegressor`, plus ``rawPredictionCol`` (default
    "rawPrediction": [-ŷ, ŷ]) and ``probabilityCol`` (default "probability": [1 - p, p],
    p = σ(ŷ)).

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

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", fieldStarts=None, factorSize=4,
                 solver="adagrad", maxIter=15, stepSize=0.2, regParam=2e-5, normalize=True,
                 fitIntercept=True, fitLinear=True, seed=0, numWorkers=None,
                 timeoutSeconds=600.0, verbose=0):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", rawPredictionCol="rawPrediction",
                  probabilityCol="probability", fieldStarts=None, factorSize=4,
                  solver="adagrad", maxIter=15, stepSize=0.2, regParam=2e-5, normalize=True,
                  fitIntercept=True, fitLinear=True, seed=0, numWorkers=None,
                  timeoutSeconds=600.0, verbose=0):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return FFMClassificationModel


add_setters(FFMRegressor, _PARAMS)
add_setters(FFMClassifier, _PARAMS + _CLASSIFIER_PARAMS)


class _FFMModel(FMModelBase):
    """Save format: ``path/metadata`` (Spark ML params, ``modelKind`` "ffm") and ``path/data/``
    (the arrays as parquet chunk rows, ``sparkxml_kernels.persist``) with ``w0`` float64 (),
    ``w`` float64 (d,), ``V`` float64 (d, m, k), ``field_starts`` int64 (m + 1,),
    ``normalize``, ``link`` ("identity" | "logistic"), ``n_features`` (see
    ``sparkxml_kernels.fm.ffm``), plus ``summary.*`` training history ("loss": the mean
    training loss of each epoch)."""

    _model_kind = "ffm"
    _predictor_class = FFMPredictor
    _required_arrays = FFMPredictor.keys

    @property
    def intercept(self) -> float:
        """w0."""
        return float(self._predictor.w0)

    @property
    def linear(self):
        """Linear weights w as a DenseVector (d,)."""
        from pyspark.ml.linalg import DenseVector

        return DenseVector(self._predictor.w)

    @property
    def factors(self) -> np.ndarray:
        """float64 (d, m, k): ``factors[j, f]`` is feature j's factor vector against field f
        (a copy)."""
        return self._predictor.V.copy()

    @property
    def numFields(self) -> int:
        return int(self._predictor.n_fields)


class FFMRegressionModel(_FFMModel, _FFMParams):
    """Fitted :class:`FFMRegressor`: adds ``predictionCol`` (double)."""

    __doc__ += _FFMModel.__doc__
    _task = "regression"


class FFMClassificationModel(_FFMModel, _FFMClassifierParams):
    """Fitted :class:`FFMClassifier`: adds ``rawPredictionCol``, ``probabilityCol`` (vectors)
    and ``predictionCol`` (1.0 when p > 0.5), as Spark ML's classifiers."""

    __doc__ += _FFMModel.__doc__
    _task = "classification"


add_setters(FFMRegressionModel, ("featuresCol", "predictionCol"))
add_setters(FFMClassificationModel, ("featuresCol", "predictionCol", "rawPredictionCol",
                                     "probabilityCol"))
